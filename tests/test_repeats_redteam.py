"""`score --repeats K` (issue 36): K is bounded, as a metric's counts are, and refused past the
bound before any work; a run is recorded in the store before its draws are built, so a run
that fails building them still says so in `runs`."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.engine import scoring
from judgebench.errors import InputError


def test_repeats_of_a_trillion_is_refused_before_any_work(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    store, out = tmp_path / "runs.db", tmp_path / "out.csv"
    proc = run_cli("score", str(data), "-m", "lexical.length", "--repeats", "1000000000000",
                   "-o", str(out), "--store", str(store))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "--repeats" in proc.stderr, proc.stderr
    assert not store.exists() and not out.exists()


@pytest.mark.parametrize("past", [-1001, 1, 10**12])
def test_plan_repeats_refuses_k_past_its_bounds_naming_the_option(past: int) -> None:
    """0 and below, one past the bound, a trillion."""
    repeats = past if past <= 0 else scoring.MAX_REPEATS + past
    with pytest.raises(InputError) as refused:
        scoring.plan_repeats([], repeats)
    assert refused.value.field == "--repeats" and str(repeats) in str(refused.value)


def test_the_run_is_recorded_before_its_draws_are_built(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Building draw 1 fails: the run is in `runs` already, ended as an error. (Before, the
    draws were built before the run was recorded, so a K that never finished building left
    no trace.) The store exists beforehand, as a store with earlier runs does."""
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    store = tmp_path / "runs.db"
    run_cli("score", str(data), "-m", "lexical.length", "-o", str(tmp_path / "first.csv"),
            "--store", str(store), check=True)
    built = scoring.build

    def build(spec: Any, host: Any, entry: Any = None) -> Any:
        if spec.name == "judge.rubric" and build.calls:  # type: ignore[attr-defined]
            raise RuntimeError("draw 1 could not be built")
        build.calls += 1  # type: ignore[attr-defined]
        return built(spec, host, entry)

    build.calls = 0  # type: ignore[attr-defined]
    monkeypatch.setattr(scoring, "build", build)
    pytest.importorskip("aiohttp", reason="the [api] extra is not installed (openai_compat)")
    with FaultServer("--random-scores", "7") as server:
        judge = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
                 "temperature=1,protocol=text")
        proc = run_cli("score", str(data), "-m", judge, "--repeats", "3", "-o",
                       str(tmp_path / "out.csv"), "--store", str(store),
                       "--cache", str(tmp_path / "cache.sqlite"))
    assert proc.returncode == 1, proc.stderr
    with sqlite3.connect(store) as db:
        runs = db.execute("SELECT outcome, error FROM runs ORDER BY id").fetchall()
    assert len(runs) == 2 and runs[0][0] == "ok", (runs, proc.stderr)
    assert runs[1][0] == "error" and "draw 1 could not be built" in runs[1][1], runs
