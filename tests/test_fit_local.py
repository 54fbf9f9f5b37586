"""`judgebench fit --limit 20 --search few-shot` end to end on the embedded default model
(SmolLM2-135M-Instruct on CPU): every candidate scored, the report's numbers present, the
fitted judge written and read back by `score -m @FILE` from the judge cache.

The rows are the example's first 20, each article cut to its first sentences (~300
characters): the fit pays 80 calls (40 judged rows, feedback then score), each a forward
pass over the whole prompt, and a full article plus another as the example made ~1,300-token
prompts (500 s on one loaded core; ~600 tokens and ~220 s cut). The fit's plumbing is the
same on short rows."""

from __future__ import annotations

import json
import math
import sqlite3
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import EXAMPLE, run_cli

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge


def short_rows(path: Path, rows: int, chars: int = 300) -> Path:
    """The example's first `rows` rows, each article cut at the last full stop before `chars`
    characters (the summaries, references and human scores as they are)."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()[:rows]
    records = [json.loads(line) for line in lines]
    for record in records:
        text = record["input"]
        record["input"] = text[: text.rfind(".", 0, chars) + 1] or text[:chars]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def answers(cache: Path) -> int:
    with sqlite3.connect(cache / "judge_cache.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM responses").fetchone()[0])


def test_fit_runs_end_to_end_on_the_default_model(tmp_path: Path, model_cache: Path) -> None:
    env = {"JUDGEBENCH_CACHE_DIR": str(model_cache)}
    spec = tmp_path / "judge.toml"
    rows = short_rows(tmp_path / "rows.jsonl", 20)
    proc = run_cli("fit", str(rows), "judge.rubric:criterion=coherence,feedback_tokens=4",
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
    paid = answers(model_cache)
    again = run_cli("score", str(rows), "-m", f"@{spec}", "--limit", "20",
                    "--store", str(tmp_path / "other.db"), "-o", str(tmp_path / "s.csv"),
                    "--allow-failures", env=env)
    assert again.returncode == 0, again.stderr
    assert answers(model_cache) == paid  # every row's answer came from the judge cache
