"""An openai_compat judge's signature names the checkpoint ``GET /models`` lists (``served``),
whether or not that call failed at first: a server that fails it on the first run only (503,
still loading) is asked again, so `--resume` finds every score and pays for nothing twice; a
server that never answers it stops the run before any call."""

from __future__ import annotations

import json
import sqlite3
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

ROWS = 16
REPLY = "Feedback: ok. [RESULT] {score}"


def spec(server: FaultServer) -> str:
    return (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "protocol=text,price_in=1000,price_out=1000,max_attempts=3")


def score(tmp_path: Path, metric: str, *extra: str):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(ROWS))
    return run_cli("score", str(data), "-m", metric, "--store", str(tmp_path / "runs.db"),
                   "--cache", str(tmp_path / "cache.sqlite"), "-o", str(tmp_path / "t.csv"),
                   "--no-progress", *extra,
                   env={"OPENAI_API_KEY": "unused", "JUDGEBENCH_CACHE_DIR": str(tmp_path)})


def test_a_model_list_failing_on_the_first_run_only_costs_the_resume_nothing(tmp_path):
    log = tmp_path / "served.jsonl"
    with FaultServer("--models-fail", "2", log=log, reply=REPLY) as first:
        metric = spec(first)
        # stopped by its budget after about half the calls
        stopped = score(tmp_path, metric, "--budget-usd", "8")
        assert stopped.returncode == 1 and "budget" in stopped.stderr, stopped.stderr
        port = first.port
    paid = len(first.served())
    assert 0 < paid < ROWS
    with FaultServer(port=port, log=log, reply=REPLY) as again:  # /models answers now
        resumed = score(tmp_path, metric, "--resume")
        assert resumed.returncode == 0, resumed.stderr
        assert f"(computed {ROWS - paid}, reused {paid} " in resumed.stderr
        assert len(again.served()) == ROWS  # every call paid once, over both runs
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        signatures = [s for (s,) in conn.execute("SELECT DISTINCT signature FROM scores")]
    assert len(signatures) == 1 and "served:judge" in signatures[0]


def test_a_server_that_never_answers_its_model_list_sends_no_call(tmp_path):
    with FaultServer("--models-fail", "1000", log=tmp_path / "served.jsonl",
                     reply=REPLY) as srv:
        done = score(tmp_path, spec(srv))
        assert done.returncode == 1, done.stderr
        assert f"GET {srv.url}/models did not answer in 3 attempts (HTTP 503)" in done.stderr
        assert srv.served() == []
    assert not (tmp_path / "t.csv").exists()


def test_a_dry_run_estimates_when_the_model_list_never_answers(tmp_path):
    """A dry run makes no call, so it needs no `served`: one attempt, then the estimate."""
    with FaultServer("--models-fail", "1000", log=tmp_path / "served.jsonl",
                     reply=REPLY) as srv:
        done = score(tmp_path, spec(srv), "--dry-run")
        assert done.returncode == 0, done.stderr
        assert f"{ROWS} calls" in done.stdout + done.stderr
        assert srv.served() == []
        with urllib.request.urlopen(f"{srv.url.removesuffix('/v1')}/_models_asked") as reply:
            # no retry: max_attempts=3 would ask three times for `served` alone
            assert json.load(reply)["models_asked"] < 3
    assert not (tmp_path / "t.csv").exists()


def test_a_dry_run_finds_the_answers_a_run_stored_under_its_served_checkpoint(tmp_path):
    with FaultServer(reply=REPLY) as srv:
        metric = spec(srv)
        assert score(tmp_path, metric).returncode == 0
        dry = score(tmp_path, metric, "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert "0 calls" in dry.stdout + dry.stderr, dry.stdout + dry.stderr
