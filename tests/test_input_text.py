"""One rule for what a sample was asked (`Sample.input_text`): its `input`, or else its
`source`; an empty `input` is a text (`MetricInfo.empty_text`), so it wins over a source as any
input does. Every metric reads it by that rule (the judges' prompts, the neural metrics'
contexts, sentinel.src), and a metric that requires `input` is satisfied by a source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import REPO, run_cli, write_jsonl
from judgebench_audit.regressors import SrcSentinel
from judgebench_neural.base import context_texts
from scripted_judge import ScriptedJudge, any_judges_form

from judgebench.engine.runner import survey
from judgebench.engine.scoring import PreparedMetric, lacks, needed
from judgebench.errors import InputError
from judgebench.metric import Metric
from judgebench.models import MetricInfo, Sample
from judgebench.spec import MetricSpec

#: (input, source) -> what was asked, written out case by case.
RULE = {
    (None, None): None, (None, ""): "", (None, "src"): "src",
    ("", None): "", ("", ""): "", ("", "src"): "",
    ("in", None): "in", ("in", ""): "in", ("in", "src"): "in",
}


@pytest.mark.parametrize(("given", "asked"), RULE.items())
def test_the_input_wins_and_an_empty_input_is_a_text(given: tuple, asked: str | None) -> None:
    sample = Sample(item="1", system="s", input=given[0], source=given[1])
    assert sample.input_text == asked
    assert needed(sample, "input") == asked
    assert lacks(sample, "input") is (asked is None)


@pytest.mark.parametrize(("given", "asked"), RULE.items())
def test_the_neural_context_and_sentinel_src_read_the_same_text(given: tuple,
                                                                 asked: str | None) -> None:
    sample = Sample(item="1", system="s", output="o", input=given[0], source=given[1])
    assert context_texts(sample, "input") == ([asked] if asked else [])
    assert SrcSentinel().text_of(sample) == asked


class _NeedsInput(Metric):
    info = MetricInfo(name="test.needs-input", kind="reference", requires=("output", "input"))


def test_a_metric_that_requires_input_is_satisfied_by_a_source() -> None:
    prepared = [PreparedMetric(MetricSpec("test.needs-input"), _NeedsInput(), "sig")]
    given = [Sample(item="1", system="s", output="o", source="src"),
             Sample(item="2", system="s", output="o", input="")]
    survey(given).check_requirements(prepared)  # a source, an empty input: both are there
    bare = [*given, Sample(item="3", system="s", output="o")]
    with pytest.raises(InputError, match=r"needs field 'input', missing in 1 of 3 rows "
                                         r"\(first: item='3'"):
        survey(bare).check_requirements(prepared)


JUDGES = {
    "judge.rubric": "protocol=text",
    "judge.reference": "protocol=text",
    "judge.geval": "logprobs=false,steps=1. Read it.",
    "judge.prometheus": "",
    "judge.pairwise": "protocol=text",
    "judge.prometheus_relative": "",
}


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_every_judge_asks_the_input_else_the_source(tmp_path: Path, name: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Item 1 has both (the input is shown), item 2 a source only (shown), item 3 an empty
    # input and a source (the empty input is what was asked: the source is not shown).
    asked = [{"input": "IN-1", "source": "SRC-1"}, {"source": "SRC-2"},
             {"input": "", "source": "SRC-3"}]
    pairwise = name in ("judge.pairwise", "judge.prometheus_relative")
    records = [{"item": str(k), **fields,
                **({"system_a": "x", "system_b": "y", "output_a": "a", "output_b": "b"}
                   if pairwise else {"system": "s", "output": "hi", "reference": "hey"})}
               for k, fields in enumerate(asked, start=1)]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    monkeypatch.setenv("JB_INPUT_KEY", "sk-input-test")
    with ScriptedJudge(reply=any_judges_form) as server:
        spec = (f"{name}:backend=openai_compat,model=m,api_base={server.url},"
                "api_key_env=JB_INPUT_KEY" + (f",{JUDGES[name]}" if JUDGES[name] else ""))
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                       "--store", str(tmp_path / "s.db"), cwd=tmp_path,
                       env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr
        sent = "\n".join(m["content"] for prompt in server.prompts for m in prompt)
    assert "IN-1" in sent and "SRC-2" in sent, sent
    assert "SRC-1" not in sent and "SRC-3" not in sent, sent


#: Reads of an `input` or `source` attribute that are not a sample's text being asked:
#: the rule itself, copies of a whole sample's fields, other objects' `source`.
NOT_THE_RULE = {
    ("judgebench/models.py", "self.input"), ("judgebench/models.py", "self.source"),
    ("judgebench/services/score.py", "self.source"),
    ("judgebench/services/aggregate.py", "self.source"),
    ("judgebench/auditing/bias.py", "a.input"), ("judgebench/auditing/bias.py", "a.source"),
    ("plugins/judgebench_judges/rubric.py", "dist.source"),
    ("plugins/judgebench_judges/templates.py", "self.source"),
    ("judgebench/render/bench.py", "info.source"),  # a suite's provenance
    # where a label, a price or a sample came from, and the table a sample was drawn from
    ("judgebench/engine/labels.py", "new.source"), ("judgebench/engine/labels.py", "row.source"),
    ("judgebench/services/escalate_cost.py", "self.source"),
    ("judgebench/render/text.py", "j.source"),
    ("judgebench/services/label_sample.py", "self.source"),
    ("judgebench/services/label_session.py", "self.source"),
    # where a reliability analysis read its draws or ratings (a table, the store)
    ("judgebench/services/reliability.py", "self.source"),
    ("judgebench/render/reliability.py", "result.source"),
    # a fitted judge's few-shot example (rubric.Example: its own input, not a sample's)
    ("plugins/judgebench_judges/rubric.py", "e.input"),
}


def test_the_input_or_source_is_read_by_the_one_rule_only() -> None:
    found = set()
    for root in ("judgebench", "plugins"):
        for path in sorted((REPO / root).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ("input", "source"):
                    found.add((path.relative_to(REPO).as_posix(), ast.unparse(node)))
    assert found - NOT_THE_RULE == set(), "read Sample.input_text instead"
    models = (REPO / "judgebench" / "models.py").read_text(encoding="utf-8")
    assert "return self.input if self.input is not None else self.source" in models
