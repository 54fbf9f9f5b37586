"""Two bias probes of the battery end to end through the default CPU judge: `audit --judge
judge.rubric` (SmolLM2-135M-Instruct via transformers) with authority and verbosity on three
SummEval samples of the shortest article."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")

from conftest import run_cli, summeval_records, write_jsonl

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

SHORTEST = "dm-test-f5fead94ee884800e84a212cc0edc78b11c4ba9f"  # a 632-character article
COUNT = 3


def test_the_default_judge_runs_two_bias_probes_end_to_end(model_cache: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(model_cache))
    records = [r for r in summeval_records() if r["item"] == SHORTEST]
    samples = write_jsonl(tmp_path / "gen.jsonl", [
        {k: r[k] for k in ("item", "system", "input", "output")} for r in records])
    scores = tmp_path / "scores.csv"
    pd.DataFrame([{"item": r["item"], "system": r["system"],
                   "human.relevance": r["human"]["relevance"], "m": float(len(r["output"]))}
                  for r in records]).to_csv(scores, index=False)
    proc = run_cli("audit", str(scores), "--human", "human.relevance", "--samples",
                   str(samples), "--level", "segment", "--grouping", "none", "--bootstrap",
                   "0", "--resamples", "50", "--sentinel", "sentinel.random", "--judge",
                   "judge.rubric:feedback_tokens=16", "--bias-probe", "authority",
                   "--bias-probe", "verbosity", "--bias-pairs", str(COUNT), "--json")
    assert proc.returncode == 0, proc.stderr
    bias = [r for r in json.loads(proc.stdout) if r["type"] == "bias"]
    assert {r["probe"] for r in bias} == {"authority", "verbosity"}
    rows = {r["probe"]: r for r in bias if r["measure"] == "shift"}
    assert set(rows) == {"authority", "verbosity"}
    for probe, row in rows.items():
        extra = row["extra"]
        assert extra["mode"] == "pointwise" and extra["skipped"] == 0
        assert row["n"] + extra["failed"] == COUNT, probe
        assert extra["signature"].startswith(f"bias.{probe}@")
        if row["n"]:
            assert -1.0 <= row["value"] <= 1.0
            assert row["value"] * row["n"] == pytest.approx(round(row["value"] * row["n"]))
        if row["n"] >= 2 and math.isfinite(extra["ci_low"]):
            assert extra["ci_low"] <= row["value"] <= extra["ci_high"]
            assert extra["verdict"] in ("biased", "unbiased", "inconclusive")
    # The model answered: its answers are in this test's judge cache.
    assert any(entry.name != "models" for entry in model_cache.iterdir())
