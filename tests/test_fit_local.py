"""`judgebench fit --limit 20 --search few-shot` end to end on the embedded default model
(SmolLM2-135M-Instruct on CPU): every candidate scored, the report's numbers present, the
fitted judge written and read back by `score -m @FILE` from the judge cache."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import EXAMPLE, run_cli

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge


def test_fit_runs_end_to_end_on_the_default_model(tmp_path: Path, model_cache: Path) -> None:
    env = {"JUDGEBENCH_CACHE_DIR": str(model_cache)}
    spec = tmp_path / "judge.toml"
    proc = run_cli("fit", str(EXAMPLE), "judge.rubric:criterion=coherence,feedback_tokens=4",
                   "--human", "coherence", "--limit", "20", "--search", "few-shot",
                   "--folds-over", "rows", "--folds", "3", "--shots", "1", "--draws", "1",
                   "--bootstrap", "100", "--store", str(tmp_path / "runs.db"), "-o", str(spec),
                   "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert len(result["candidates"]) == 2  # no example, and one example
    assert result["units"] == 20 and result["search_units"] + result["held_out_units"] == 20
    assert "model:SmolLM2-135M-Instruct" in result["fitted_signature"]
    for number in ("held_out", "held_out_start", "in_search", "cross_fitted"):
        value = result[number]["value"]
        assert value is None or math.isfinite(value)
    fitted = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
    assert fitted["metric"] == "judge.rubric" and "folds-over=rows" in fitted["fitted"]
    again = run_cli("score", str(EXAMPLE), "-m", f"@{spec}", "--limit", "20",
                    "--store", str(tmp_path / "other.db"), "-o", str(tmp_path / "s.csv"),
                    "--allow-failures", env=env)
    assert again.returncode == 0, again.stderr
