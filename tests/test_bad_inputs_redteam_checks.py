"""The order of checks (issue 36): inputs that got through or were judged by the wrong rule,
each refused with one line naming the file, line and field (exit 2) before any work; and a
run stopped by the budget only when something was left out.

- a NUL character in a CSV cell (a samples file, a scores table) is refused, never kept as
  part of an item id;
- `"turn": true` and `"turn": "1"` in JSON are refused (a CSV cell is text: `1` is 1);
- metric spec spellings that would end up in the column's name: `NAME:` with no option, a
  trailing comma, an empty option, a `key=` without a value, a space around a name, a key,
  '=', ',' or ':' (`judgebench.spec`);
- a scores table's sidecar (`OUT.meta.json`) with a value of the wrong type;
- a run whose calls were refused together (their estimates in flight) but whose every row
  then finished under the budget ends `ok`, exit 0, not `budget_stop`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import EXAMPLE, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.errors import InputError

REPO = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "user", "content": "Is it clear?"}, {"role": "assistant", "content": "Yes."}]


def refused(proc: Any, *fragments: str) -> str:
    """The one error line of a run that exited 2; each of `fragments` is in it."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if line.startswith("Error: ")]
    assert lines, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, proc.stderr)
    return str(lines[0])


def score(tmp_path: Path, source: Path, *specs: str) -> tuple[Any, Path, Path]:
    out, store = tmp_path / "out.csv", tmp_path / "s.db"
    proc = run_cli("score", str(source), *(a for s in specs for a in ("-m", s)), "-o",
                   str(out), "--store", str(store))
    return proc, out, store


def nothing_written(out: Path, store: Path) -> None:
    assert not out.exists() and not Path(f"{out}.meta.json").exists()
    assert not store.exists() or sqlite3.connect(store).execute(
        "SELECT COUNT(*) FROM scores").fetchone() == (0,)


# -- NUL in a CSV cell ------------------------------------------------------------------------
@pytest.mark.parametrize(("cell", "field"), [("item", "item"), ("system", "system"),
                                             ("output", "output")])
def test_a_nul_in_a_csv_cell_of_samples_is_refused(tmp_path: Path, cell: str,
                                                   field: str) -> None:
    row = {"item": "d1", "system": "s1", "output": "a cat", "reference": "the cat"}
    row[cell] = row[cell][:1] + "\x00" + row[cell][1:]
    source = tmp_path / "in.csv"
    source.write_text("item,system,output,reference\nd0,s1,a dog,the dog\n"
                      + ",".join(row.values()) + "\n", encoding="utf-8")
    proc, out, store = score(tmp_path, source, "lexical.length")
    refused(proc, f"{source}, line 3, field '{field}'", "NUL character (U+0000)")
    nothing_written(out, store)


def test_a_nul_in_a_csv_cell_of_a_scores_table_is_refused(tmp_path: Path) -> None:
    table = tmp_path / "scores.csv"
    lines = (REPO / "examples" / "summeval-scores.csv").read_text(encoding="utf-8").splitlines()
    lines[5] = "x\x00" + lines[5]
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_cli("meta-eval", str(table), "--human", "human.relevance", "--bootstrap", "0")
    refused(proc, f"{table}, line 6, field 'item'", "NUL character (U+0000)")
    from judgebench.tables.io import read_table

    with pytest.raises(InputError, match="line 6, field 'item': a NUL character"):
        read_table(table)


# -- a turn that is not a message index -------------------------------------------------------
@pytest.mark.parametrize(("turn", "shown"), [(True, "true"), ("1", '"1"'), (False, "false")])
def test_a_turn_given_as_true_or_text_in_json_is_refused(tmp_path: Path, turn: Any,
                                                         shown: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "c0", "system": "s", "messages": MESSAGES, "turn": 1},
        {"item": "c1", "system": "s", "messages": MESSAGES, "turn": turn}])
    proc, out, store = score(tmp_path, source, "lexical.length")
    refused(proc, f"{source}, line 2, field 'turn'", f"not {shown}")
    nothing_written(out, store)


def test_a_turn_in_a_csv_cell_is_text_and_1_is_turn_1(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text('item,system,messages,turn\nc0,s,"' + json.dumps(MESSAGES).replace(
        '"', '""') + '",1\n', encoding="utf-8")
    proc, out, _ = score(tmp_path, source, "lexical.length")
    assert proc.returncode == 0, proc.stderr
    assert "1" in out.read_text(encoding="utf-8").splitlines()[1].split(",")


@pytest.mark.parametrize(("turn", "shown"), [(True, "true"), ("1", "'1'")])
def test_a_turn_given_as_true_or_text_in_a_json_scores_table_is_refused(
        tmp_path: Path, turn: Any, shown: str) -> None:
    from judgebench.tables.io import read_table

    table = write_jsonl(tmp_path / "scores.jsonl", [
        {"item": "c0", "system": "s", "lexical.length": 1.0, "turn": 1},
        {"item": "c1", "system": "s", "lexical.length": 2.0, "turn": turn}])
    with pytest.raises(InputError, match=f"line 2, field 'turn': a turn is a message index "
                                         rf"\(an integer >= 0, or empty\), got {shown}"):
        read_table(table)
    csv_true = tmp_path / "scores.csv"
    csv_true.write_text("item,system,lexical.length,turn\nc0,s,1,1\nc1,s,2,True\n",
                        encoding="utf-8")
    with pytest.raises(InputError, match=r"line 3, field 'turn': a turn is a message index"):
        read_table(csv_true)


# -- metric spec spellings ------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "problem", "position"), [
    ("lexical.rouge2:", "ends with ':' and no option", 15),
    ("lexical.rouge2:multi_ref=mean,", "ends with a comma", 30),
    ("lexical.rouge2:multi_ref=mean,,stemmer=false", "has an empty option", 31),
    ("lexical.rouge2:,multi_ref=mean", "has an empty option", 16),
    ("lexical.rouge2:multi_ref=", "has option 'multi_ref' with no value", 25),
    ("lexical.rouge2: multi_ref=mean", "has a space around", 16),
    ("lexical.rouge2 :multi_ref=mean", "has a space around", 15),
    ("lexical.rouge2:multi_ref =mean", "has a space around", 25),
    ("lexical.rouge2:multi_ref= mean", "has a space around", 26),
    ("lexical.rouge2:multi_ref=mean ,stemmer=false", "has a space around", 30),
    ("lexical.rouge2:multi_ref=mean, stemmer=false", "has a space around", 31),
    ("judge.rubric:definition=\"a, b\" ,model=m", "has a space around", 31),
])
def test_loose_spec_spellings_are_refused_at_their_place(tmp_path: Path, spec: str,
                                                         problem: str, position: int) -> None:
    from judgebench.spec import SpecError, parse_spec

    with pytest.raises(SpecError) as raised:
        parse_spec(spec)
    text = str(raised.value)
    assert problem in text and f"(at position {position})" in text, text
    marker = text.splitlines()[2]
    assert marker.index("^") - 2 == position - 1  # the caret under the place
    proc, out, store = score(tmp_path, EXAMPLE, spec)
    refused(proc, problem)
    nothing_written(out, store)


@pytest.mark.parametrize(("spec", "column", "options"), [
    ("  lexical.rouge2:multi_ref=mean  ", "lexical.rouge2:multi_ref=mean",
     {"multi_ref": "mean"}),  # blanks around the whole spec (a shell's) are dropped
    ("judge.rubric:criterion=short and clear,model=m", None,
     {"criterion": "short and clear", "model": "m"}),  # a space inside a value is text
    ('judge.rubric:definition=" a, b ",model=m', None, {"definition": " a, b ", "model": "m"}),
    ('judge.rubric:definition="",model=m', None, {"definition": "", "model": "m"}),
])
def test_tight_spellings_still_read(spec: str, column: str | None,
                                    options: dict[str, str]) -> None:
    from judgebench.spec import parse_spec

    parsed = parse_spec(spec)
    assert parsed.options == options
    assert parsed.column == (column or spec)


# -- a sidecar of the wrong types -------------------------------------------------------------
SIDECAR_DAMAGE = [
    (lambda m: m["columns"]["lexical.bleu"].__setitem__("higher_is_better", "no"),
     "columns.lexical.bleu.higher_is_better", "valid boolean", '"no"'),
    (lambda m: m["columns"]["lexical.bleu"].__setitem__("higher_is_better", 0),
     "columns.lexical.bleu.higher_is_better", "valid boolean", "0"),
    (lambda m: m.__setitem__("columns", ["lexical.bleu"]), "columns", "valid dictionary",
     '["lexical.bleu"]'),
    (lambda m: m["corpus"][0].__setitem__("value", "18.1"), "corpus.0.value", "valid number",
     '"18.1"'),
    (lambda m: m["corpus"][0].__setitem__("system", 7), "corpus.0.system", "valid string",
     "7"),
    (lambda m: m.__setitem__("rows", "64"), "rows", "valid integer", '"64"'),
    (lambda m: m["columns"]["lexical.bleu"].__setitem__("statuses", {"ok": "64"}),
     "columns.lexical.bleu.statuses.ok", "valid integer", '"64"'),
    (lambda m: m.__setitem__("table", ["pairwise"]), "table", "valid string", '["pairwise"]'),
]


@pytest.mark.parametrize(("damage", "field", "problem", "got"), SIDECAR_DAMAGE)
def test_a_sidecar_of_the_wrong_types_is_refused(tmp_path: Path, damage: Any, field: str,
                                                 problem: str, got: str) -> None:
    from judgebench.tables.scores_table import read_sidecar

    table = tmp_path / "scores.csv"
    shutil.copy(REPO / "examples" / "summeval-scores.csv", table)
    meta = json.loads((REPO / "examples" / "summeval-scores.csv.meta.json").read_text())
    assert read_sidecar(REPO / "examples" / "summeval-scores.csv") == meta  # as written
    damage(meta)
    Path(f"{table}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_sidecar(table)
    text = str(raised.value)
    assert text.startswith(f"{table}.meta.json, field '{field}': not a judgebench sidecar")
    assert problem in text and f"(got {got})" in text, text
    proc = run_cli("meta-eval", str(table), "--human", "human.relevance", "--bootstrap", "0")
    refused(proc, f"{table}.meta.json, field '{field}'")


def test_a_sidecar_with_more_keys_than_these_is_read(tmp_path: Path) -> None:
    from judgebench.tables.scores_table import read_sidecar

    table = tmp_path / "scores.csv"
    meta = json.loads((REPO / "examples" / "summeval-scores.csv.meta.json").read_text())
    meta["written_by"] = {"a": [1]}
    meta["columns"]["lexical.bleu"]["combination"] = {"model": "ridge"}
    Path(f"{table}.meta.json").write_text(json.dumps(meta), encoding="utf-8")
    assert read_sidecar(table) == meta


# -- every row scored under the budget --------------------------------------------------------
def test_a_run_that_scored_every_row_under_its_budget_is_ok(tmp_path: Path) -> None:
    """Four calls are sent together; each is estimated at $0.10 (100 tokens out at $1,000
    per million), so the second is refused beside the first under a $0.15 budget, but each
    answer costs about $0.01: one at a time, every row finishes, $0.04 spent. Nothing was
    left out, so the run is `ok` (exit 0), not `budget_stop` with "0 scores not attempted"."""
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(4))
    with FaultServer(reply="Feedback: fine. [RESULT] 4") as server:
        spec = (f"judge.rubric:backend=openai_compat,model=m,api_base={server.url},"
                "protocol=text,price_in=0,price_out=1000,concurrency=4,max_tokens=100,"
                "timeout_s=30")
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                       "--store", str(tmp_path / "s.db"), "--budget-usd", "0.15",
                       "--cache", str(tmp_path / "cache.sqlite"), "--no-progress",
                       env={"OPENAI_API_KEY": "unused"})
    assert proc.returncode == 0, proc.stderr
    assert "not attempted" not in proc.stderr
    conn = sqlite3.connect(tmp_path / "s.db")
    outcome, error, cost = conn.execute("SELECT outcome, error, cost_usd FROM runs").fetchone()
    assert (outcome, error) == ("ok", None)
    assert 0 < cost <= 0.15
    assert conn.execute("SELECT status, COUNT(*) FROM scores GROUP BY status").fetchall() == [
        ("ok", 4)]
