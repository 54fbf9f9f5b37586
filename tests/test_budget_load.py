"""`--budget-usd` under load, against the loopback server whose reported usage is below, equal
to or above the engine's estimate before a call: with estimates at or above the bill a run
never spends past its limit, above it by at most the excess of the calls in flight; every
paid call is committed, the `runs` row counts them, and the stop says what was spent and how
many scores were not attempted. At concurrency 1, 16 and 64, several runs at once, with
workers (Ray actors: tests/test_ray_engine.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from budget_runs import Spent, billed, judge_spec, score_args, spent, start_run
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.spec import parse_spec

ROWS = 48
LIMIT = 20.0  # USD; a call costs about $1 here, so about 20 of the 48 fit


@pytest.fixture(scope="module", params=[0.5, 1.0, 2.0], ids=["below", "exact", "above"])
def server(request, tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "served.jsonl"
    with FaultServer("--usage-scale", str(request.param), log=log,
                     reply="Feedback: ok. [RESULT] {score}") as srv:
        srv.scale = request.param
        yield srv


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("in") / "in.jsonl", summeval_records(ROWS))


def bound(run: Spent, bills: list[float], scale: float, concurrency: int) -> float:
    """How far past the limit a run may spend: the excess over their estimates of the calls
    that can be in flight at once (none when the server bills at most the estimate)."""
    excess = sorted((b * (1 - 1 / scale) for b in bills), reverse=True)
    return max(0.0, sum(excess[:concurrency]))


def check(run: Spent, column: str, bills: list[float], scale: float, concurrency: int) -> None:
    assert run.outcome == "budget_stop", run
    assert 0 < run.calls < ROWS
    assert run.over <= bound(run, bills, scale, concurrency) + 1e-9, run
    if scale <= 1:
        assert run.billed <= run.limit + 1e-9
    # every paid call is committed and counted, at the cost the server reported
    assert run.stored_scores == run.calls and run.stored_cost == pytest.approx(run.billed)
    assert run.statuses == {column: {"ok": run.calls}}
    assert run.run_cost == pytest.approx(run.billed)
    assert run.error is not None
    assert f"spent ${run.billed:.4f}" in run.error
    assert f"{ROWS - run.calls} scores not attempted" in run.error


@pytest.mark.parametrize("concurrency", [1, 16, 64])
def test_a_budget_holds_at_any_concurrency(server, data, tmp_path, concurrency) -> None:
    model = f"judge-c{concurrency}"
    spec = judge_spec(server, model, concurrency)
    done = run_cli(*score_args(tmp_path, data, spec, LIMIT), cwd=tmp_path,
                   env={"OPENAI_API_KEY": "unused", "JUDGEBENCH_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 1, done.stderr
    run = spent(tmp_path, server, model, LIMIT)
    assert f"Error: {run.error}" in done.stderr
    check(run, parse_spec(spec).column, billed(server, model), server.scale, concurrency)


@pytest.mark.slow
def test_several_runs_at_once_each_hold_their_budget(tmp_path) -> None:
    """Four processes on one server at concurrency 64, exact estimates, one with workers
    scoring a lexical column beside the judge."""

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(ROWS))
    with FaultServer("--usage-scale", "1", "--latency", "0.02", log=tmp_path / "served.jsonl",
                     reply="Feedback: ok. [RESULT] {score}") as srv:
        runs = {}
        for i in range(4):
            extra = ("-m", "lexical.token_f1", "--workers", "2") if i == 0 else ()
            model = f"judge-{i}"
            spec = judge_spec(srv, model, 64)
            runs[model] = (spec, tmp_path / model, start_run(
                score_args(tmp_path / model, data, spec, LIMIT, *extra), tmp_path / model))
        for model, (spec, tmp, proc) in runs.items():
            _, stderr = proc.communicate(timeout=600)
            assert proc.returncode == 1, stderr
            run = spent(tmp, srv, model, LIMIT)
            assert run.billed <= LIMIT + 1e-9, run
            assert run.stored_cost == pytest.approx(run.billed)
            assert run.outcome == "budget_stop"
            assert run.statuses[parse_spec(spec).column] == {"ok": run.calls}
            assert billed(srv, model) and f"spent ${run.billed:.4f}" in stderr


def test_a_budgeted_run_answered_from_the_judge_cache_pays_nothing_and_says_so(
        data, tmp_path) -> None:
    """Answers an earlier run paid for come from the judge cache: no call, no spend, though
    each score keeps the cost it was paid at (what one harness took for an overspend)."""
    env = {"OPENAI_API_KEY": "unused", "JUDGEBENCH_CACHE_DIR": str(tmp_path)}
    with FaultServer("--usage-scale", "0.1", log=tmp_path / "served.jsonl",
                     reply="Feedback: ok. [RESULT] {score}") as srv:
        spec = judge_spec(srv, "judge", 16).replace(",cache=false", "")
        first = score_args(tmp_path / "first", data, spec, 1000.0)
        first[first.index("--cache") + 1] = str(tmp_path / "cache.sqlite")
        assert run_cli(*first, env=env).returncode == 0
        paid = len(srv.served())
        again = score_args(tmp_path / "again", data, spec, 0.5)  # not one call would fit
        again[again.index("--cache") + 1] = str(tmp_path / "cache.sqlite")
        done = run_cli(*again, env=env)
        assert done.returncode == 0, done.stderr
        assert len(srv.served()) == paid  # no call: every request was answered before
        assert "spent $0.0000 of the $0.5000 budget" in done.stderr
        run = spent(tmp_path / "again", srv, "judge", 0.5)
        assert run.run_cost == 0.0 and run.statuses == {parse_spec(spec).column: {"ok": ROWS}}
        assert run.stored_cost > 0.5  # the cost each answer was paid at, by the first run
