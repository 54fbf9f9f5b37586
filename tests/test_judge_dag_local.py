"""judge.dag on the CPU default model (SmolLM2-135M-Instruct via transformers): a compound
judge of five nodes (two rubric judges, an ensemble of two, a verifier that sees the
ensemble's verdict, a last judge) on a SummEval sample, every node's answer kept, and a second
run answered from the judge cache."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")

from conftest import summeval_records

from judgebench.engine import runtime
from judgebench.models import Outcome, Sample, Status
from judgebench.plugins import build_host

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

SHORTEST = "dm-test-f5fead94ee884800e84a212cc0edc78b11c4ba9f"  # a 632-character article
NODES = ["consistent", "relevant", "readable", "check", "overall"]
DAG = """\
[defaults]
feedback_tokens = 8

[nodes.consistent]
judge = "judge.rubric"
criterion = "consistency"
routes = [{ when = "else", goto = "relevant" }]

[nodes.relevant]
judge = "judge.rubric"
criterion = "relevance"
routes = [{ when = "else", goto = "readable" }]

[nodes.readable]
members = ["judge.rubric:criterion=coherence", "judge.rubric:criterion=fluency"]
combine = "mean"
routes = [{ when = "else", goto = "check" }]

[nodes.check]
judge = "judge.rubric"
criterion = "verdict check"
definition = "the verdict shown after the summary rates it fairly"
sees = "readable"
routes = [{ when = "else", goto = "overall" }]

[nodes.overall]
judge = "judge.rubric"
criterion = "coherence"
"""


def test_five_nodes_run_on_the_default_model(tmp_path: Path, model_cache: Path) -> None:
    rows = [r for r in summeval_records() if r["item"] == SHORTEST][:1]
    sample = Sample(**rows[0])
    path = tmp_path / "dag.toml"
    path.write_text(DAG, encoding="utf-8")
    with runtime.running(runtime.RunSettings(cache_path=model_cache)):
        metric = build_host().metric("judge.dag").build(path=str(path))
        [outcome] = metric.score([sample])
        assert isinstance(outcome, Outcome)
        nodes = outcome.extra["nodes"]
        # the backend constrains each score to the rubric's choices: every node answers
        assert outcome.status == Status.OK, outcome.reason
        assert outcome.extra["path"] == NODES and [n["node"] for n in nodes] == NODES
        assert all(n["status"] == "ok" for n in nodes)
        assert all(n["value"] in {1, 2, 3, 4, 5} for n in nodes if n["node"] != "readable")
        assert outcome.value == nodes[-1]["value"]
        readable = nodes[2]
        assert readable["value"] == sum(m["value"] for m in readable["members"]) / 2
        for node in nodes:
            assert "model:SmolLM2-135M-Instruct" in node["signature"]
            assert "template:rubric:" in node["signature"]
        assert len(outcome.extra["request_keys"]) == 2 * 6  # six judges, two stages each
        [again] = metric.score([sample])
        assert isinstance(again, Outcome)
    assert again.value == outcome.value and again.extra["nodes"] == nodes
