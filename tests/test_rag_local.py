"""rag.* on the embedded default model (SmolLM2-135M-Instruct via transformers, on CPU):
every answer constrained to its JSON schema by llguidance, so each claim list, verdict and
question list parses; then the CLI on two rows of the ARES sample: score, meta-eval, logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import run_cli

from judgebench.engine import runtime
from judgebench.models import Outcome, Sample, Status
from judgebench.plugins import build_host

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

ARES = Path(__file__).resolve().parents[1] / "examples" / "rag-ares.jsonl"
SMALL = {"max_claims": 2, "max_tokens": 128, "verdict_tokens": 48}


def shortest(n: int) -> list[dict]:
    rows = [json.loads(line) for line in ARES.read_text().splitlines()]
    return sorted(rows, key=lambda r: len(r["context"][0]) + len(r["output"]))[:n]


def test_each_sub_call_is_constrained_and_parses(tmp_path) -> None:
    [row] = shortest(1)
    with runtime.running(runtime.RunSettings(cache_path=tmp_path)):
        faith = build_host().metric("rag.faithfulness").build(**SMALL)
        [o] = faith.score([Sample(**row)])
        assert isinstance(o, Outcome) and o.tokens_in is not None
        assert "constrained:json" in str(faith.signature())
        assert "model:SmolLM2-135M-Instruct" in str(faith.signature())
        assert o.status == Status.OK, o.reason
        claims = o.extra["claims"]
        assert 1 <= len(claims) <= 2 and o.extra["calls"] == 1 + len(claims)
        assert all(c["status"] == "ok" and c["verdict"] in ("supported", "unsupported")
                   for c in claims)
        assert o.value == sum(c["verdict"] == "supported" for c in claims) / len(claims)
        assert o.extra["constrained"] == "json" and o.tokens_in > 100
        relevance = build_host().metric("rag.answer_relevance").build(n=2, max_tokens=64)
        [r] = relevance.score([Sample(**row)])
        assert isinstance(r, Outcome)
        assert r.status == Status.OK, r.reason
        assert 1 <= len(r.extra["questions"]) <= 2
        assert isinstance(r.extra["noncommittal"], bool)
        recall = build_host().metric("rag.context_recall").build(verdict_tokens=48)
        with_reference = Sample(**{**row, "reference": f"{row['output']}. It is in the passage."})
        [c] = recall.score([with_reference])
        assert isinstance(c, Outcome)
        assert c.status == Status.OK, c.reason
        assert [s["status"] for s in c.extra["sentences"]] == ["ok", "ok"]
        assert c.value in (0.0, 0.5, 1.0)


def test_cli_score_meta_eval_logs_on_smollm2(tmp_path, model_cache) -> None:
    data = tmp_path / "rag.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in shortest(3)))
    env = {"JUDGEBENCH_CACHE_DIR": str(model_cache)}
    opts = ",".join(f"{k}={v}" for k, v in SMALL.items())
    proc = run_cli("score", str(data), "--limit", "3", "-m", f"rag.faithfulness:{opts}",
                   "-m", "rag.context_precision:verdict_tokens=48", "-o",
                   str(tmp_path / "scores.csv"), "--store", str(tmp_path / "runs.db"),
                   cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    meta = run_cli("meta-eval", str(tmp_path / "scores.csv"), "--human", "human.faithfulness",
                   "--human", "human.context_relevance", "--statistic", "kendall", "--json",
                   cwd=tmp_path, env=env)
    assert meta.returncode == 0, meta.stderr
    logs = run_cli("logs", "--store", str(tmp_path / "runs.db"), "--metric",
                   "rag.faithfulness", "-n", "1", cwd=tmp_path, env=env)
    assert logs.returncode == 0, logs.stderr
    assert "claims (" in logs.stdout and "evidence:" in logs.stdout
