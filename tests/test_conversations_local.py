"""The conversation judges on the embedded default model (SmolLM2-135M-Instruct, backend
transformers, no model option): judged turns of the bundled FED example and one whole
conversation, each in form (the score's choices enforced while decoding). Each judgement runs
the real model on CPU, so only two turns and one conversation are judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import run_cli

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fed-turns.jsonl"


@pytest.mark.parametrize(("mode", "limit"), [("turn", 2), ("conversation", 1)])
def test_rubric_on_conversations_is_in_form_on_the_default_model(tmp_path, model_cache, mode,
                                                                 limit) -> None:
    spec = f"judge.rubric:mode={mode},feedback_tokens=32"
    out = tmp_path / "scores.csv"
    proc = run_cli("score", str(EXAMPLE), "-m", spec, "--limit", str(limit), "-o", str(out),
                   "--store", str(tmp_path / "runs.db"), "--allow-failures",
                   env={"JUDGEBENCH_CACHE_DIR": str(model_cache)})
    assert proc.returncode == 0, proc.stderr
    column = json.loads(Path(f"{out}.meta.json").read_text())["columns"][spec]
    assert column["statuses"] == {"ok": limit}
    assert "constrained:choice" in column["signature"]
    assert "model:SmolLM2-135M-Instruct" in column["signature"]
    assert f"template:rubric_{mode}:" in column["signature"]


def test_pairwise_conversations_are_in_form_on_the_default_model(tmp_path,
                                                                 model_cache) -> None:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines()[:2]]
    # two continuations of one start: the judged turns 9 and 11 of fed-001 after turn 8
    start = rows[0]["messages"][:9]
    pair = {"item": "fed-001", "system_a": "turn-9", "system_b": "turn-11",
            "messages": start, "messages_a": rows[0]["messages"][9:10],
            "messages_b": rows[1]["messages"][11:12]}
    data = tmp_path / "pair.jsonl"
    data.write_text(json.dumps(pair) + "\n")
    spec = "judge.pairwise:mode=conversation,feedback_tokens=16"
    out = tmp_path / "wins.csv"
    proc = run_cli("score", str(data), "-m", spec, "-o", str(out), "--store",
                   str(tmp_path / "runs.db"), "--allow-failures",
                   env={"JUDGEBENCH_CACHE_DIR": str(model_cache)})
    assert proc.returncode == 0, proc.stderr
    column = json.loads(Path(f"{out}.meta.json").read_text())["columns"][spec]
    assert column["statuses"] == {"ok": 1}
    assert "constrained:choice" in column["signature"]
    assert "template:pairwise_conversation:" in column["signature"]
