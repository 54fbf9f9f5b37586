"""Metric specs: a quoted option value may hold commas and escaped quotes; the column is the
spec exactly as written; a bad spec names the spec and the position and points to --config."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, write_jsonl

from judgebench.errors import InputError
from judgebench.spec import parse_spec

PLUGIN = '''
from pydantic import BaseModel, ConfigDict

from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo


class TextOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    other: str = ""


class TextLength(Metric[TextOptions]):
    """Scores every sample with the length of its `text` option: what the spec handed it."""

    info = MetricInfo(name="quoting.length", kind="reference", description="len(text)",
                      citation="none")
    Options = TextOptions

    def score(self, samples):
        return [float(len(self.options.text))] * len(samples)


@hookimpl
def register_metrics(register):
    register(TextLength)
'''


@pytest.mark.parametrize(("spec", "options"), [
    ('judge.rubric:definition="short, clear",model=x',
     {"definition": "short, clear", "model": "x"}),
    ("judge.rubric:definition='short, clear',model=x",
     {"definition": "short, clear", "model": "x"}),
    (r'a.b:x="say \"hi\", then go"', {"x": 'say "hi", then go'}),
    (r"a.b:x='don\'t, stop'", {"x": "don't, stop"}),
    (r"a.b:x='C:\\models\\',y=2", {"x": "C:\\models\\", "y": "2"}),
    (r"a.b:x='C:\models'", {"x": "C:\\models"}),  # a lone backslash is kept as it is
    ("a.b:x=it's,y=\"\"", {"x": "it's", "y": ""}),  # a quote inside an unquoted value
    ("a.b:x=\"a,b\",y=c ", {"x": "a,b", "y": "c"}),  # a space around the grammar: refused
    # (tests/test_bad_inputs_redteam_checks.py); around the whole spec: dropped
    ("a.b:api_base=http://host:8000/v1", {"api_base": "http://host:8000/v1"}),
    ("lexical.rouge2:multi_ref=mean,stemmer=false", {"multi_ref": "mean", "stemmer": "false"}),
])
def test_quoted_values(spec: str, options: dict[str, str]) -> None:
    parsed = parse_spec(spec)
    assert parsed.options == options
    # a runtime option (api_base) says how to reach a model: it does not name the column
    assert parsed.column == ("a.b" if "api_base" in spec else spec.strip())


@pytest.mark.parametrize(("spec", "problem", "position"), [
    ('judge.rubric:definition="short, clear', "unbalanced quote", 25),
    ("a.b:x='abc,y=2", "unbalanced quote", 7),
    (r'a.b:x="abc\"', "unbalanced quote", 7),
    ("a.b:x=1,flag", "'flag' that is not key=value", 9),
    ('a.b:x="a"b', "text after a closing quote", 10),
    ("a.b:x=1,x=2", "gives option 'x' twice", 9),
    ("a.b:=1", "no name before '='", 5),
    (":x=1", "has no name", 1),
])
def test_bad_spec_names_spec_and_position(spec: str, problem: str, position: int) -> None:
    with pytest.raises(InputError) as raised:
        parse_spec(spec)
    message = str(raised.value)
    assert f"metric spec '{spec}'" in message and problem in message
    assert f"(at position {position})" in message
    assert "--config" in message
    lines = message.splitlines()
    caret = next(line for line in lines if line.strip() == "^")
    assert caret.index("^") == lines[1].index(spec) + position - 1


def test_quoted_option_reaches_the_metric_and_names_the_column(tmp_path: Path) -> None:
    plugin = tmp_path / "quoting_plugin.py"
    plugin.write_text(PLUGIN, encoding="utf-8")
    samples = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "d1", "system": "s1", "output": "x"}, {"item": "d1", "system": "s2",
                                                       "output": "y"}])
    quoted = 'quoting.length:text="short, clear",other=1'
    escaped = r"quoting.length:text='it\'s, \\ fine'"
    out = tmp_path / "scores.csv"
    proc = run_cli("-p", str(plugin), "score", str(samples), "-m", quoted, "-m", escaped,
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out)
    assert list(table.columns[-2:]) == [quoted, escaped]  # the spec exactly as written
    assert (table[quoted] == len("short, clear")).all()
    assert (table[escaped] == len("it's, \\ fine")).all()


def test_bad_spec_on_the_command_line_is_exit_2_before_any_work(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "in.jsonl", [{"item": "d", "system": "s", "output": "x"}])
    out = tmp_path / "scores.csv"
    proc = run_cli("score", str(samples), "-m", 'judge.rubric:definition="short, clear',
                   "-o", str(out))
    assert proc.returncode == 2
    assert "unbalanced quote" in proc.stderr and "position 25" in proc.stderr
    assert "--config" in proc.stderr
    assert not out.exists()


def test_rule_specs_are_read_the_same_way(tmp_path: Path) -> None:
    board = tmp_path / "board.csv"
    board.write_text("system,t1,t2,t3\nA,3,1,2\nB,1,3,3\nC,2,2,1\n", encoding="utf-8")
    quoted = 'minimax:variant="winning_votes"'
    proc = run_cli("aggregate", str(board), "-r", quoted, "-r", "minimax:variant=margins",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert [r["rule"] for r in results] == [quoted, "minimax:variant=margins"]
    proc = run_cli("aggregate", str(board), "-r", "minimax:variant='margins")
    assert proc.returncode == 2
    assert "rule spec 'minimax:variant='margins' has an unbalanced quote" in proc.stderr
