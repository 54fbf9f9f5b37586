"""`judgebench runs` and `judgebench logs`: what each run was and how it ended, and per score
its status, reason and, for judges, the prompt and answer from the judge cache; the store's
documented SQL (docs/design/store-schema.md) against a real store."""

from __future__ import annotations

import hashlib
import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, column, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.services.runs import CALL_FIELDS, LOG_FIELDS, RUN_FIELDS

REPLY = "Feedback: Clear and faithful. [RESULT] {score}"
SECRET = "sk-runs-test-NEVER-STORED-0123456789"
REASON_500 = 'server_error: HTTP 500: {"error": {"message": "server error"}}'
REASON_REFUSED = ("refused: the provider's content filter declined "
                  "(finish_reason=content_filter)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with FaultServer(reply=REPLY, log=tmp_path_factory.mktemp("srv") / "served.jsonl") as srv:
        yield srv


def _judge(server: FaultServer) -> str:
    return (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "protocol=text,max_attempts=1,price_in=1,price_out=2")


@pytest.fixture
def judged(server: FaultServer, tmp_path: Path) -> dict:
    """A finished run of a judge and a lexical metric over 4 rows: 2 ok, 1 refused by the
    provider, 1 failed call (HTTP 500)."""
    records = summeval_records(4)
    records[1]["output"] += " @@fault=refuse*9@@"
    records[2]["output"] += " @@fault=500*9@@"
    data = write_jsonl(tmp_path / "in.jsonl", records)
    store = tmp_path / "runs.db"
    spec = _judge(server)
    proc = run_cli("score", str(data), "-m", spec, "-m", "lexical.length", "-o",
                   str(tmp_path / "out.csv"), "--store", str(store), "--cache",
                   str(tmp_path / "cache.sqlite"), "--workers", "1", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    # "spec" as its column names it (the runtime options left out)
    return {"records": records, "data": data, "store": store, "spec": column(spec), "score": proc}


def _logs(store: Path, *args: str) -> list[dict]:
    proc = run_cli("logs", "--store", str(store), "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_runs_shows_each_run_on_one_line_and_as_json(judged: dict, tmp_path: Path) -> None:
    store, spec = judged["store"], judged["spec"]
    proc = run_cli("runs", "--store", str(store))
    assert proc.returncode == 0, proc.stderr
    header, line = proc.stdout.splitlines()
    assert header.split()[:3] == ["ID", "STARTED", "(UTC)"]
    fields = line.split()
    assert fields[0] == "1" and re.fullmatch(r"\d+\.\ds", fields[3])
    assert fields[4:7] == ["ok", "6", "2"]  # how it ended; ok scores; failed scores
    assert fields[7].startswith("$") and float(fields[7][1:]) > 0
    assert f"{spec}, lexical.length | judgebench score {judged['data']}" in line

    (run,) = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)
    assert tuple(run) == RUN_FIELDS
    assert run["outcome"] == "ok" and run["error"] is None and run["failed"] == 2
    assert run["statuses"] == {spec: {"ok": 2, "refused": 1, "error": 1},
                               "lexical.length": {"ok": 4}}
    assert run["rows"] == 4 and run["computed"] == 8 and run["reused"] == 0
    assert run["input_path"] == str(judged["data"])
    digest = hashlib.sha256(judged["data"].read_bytes()).hexdigest()
    assert run["input_hash"] == f"sha256:{digest}"
    assert run["metrics"][spec].startswith("judge.rubric@1|")
    assert run["tokens_in"] > 0 and run["tokens_out"] > 0
    assert run["cost_usd"] == pytest.approx((run["tokens_in"] * 1 + run["tokens_out"] * 2) / 1e6,
                                            rel=0.2)
    assert run["started"] < run["ended"] and run["started"].endswith("Z")
    assert run["wall_s"] > 0 and run["command"].startswith("judgebench score ")
    assert run["cache"] == str(tmp_path / "cache.sqlite")

    assert not list(tmp_path.glob("runs.db-*")), "runs leaves no -wal/-shm files behind"
    again = run_cli("score", str(judged["data"]), "-m", "lexical.length", "--store",
                    str(store), "--resume", "-o", str(tmp_path / "b.csv"))
    assert again.returncode == 0, again.stderr
    latest = json.loads(run_cli("runs", "--store", str(store), "--json", "-n", "1").stdout)
    assert [r["id"] for r in latest] == [2] and latest[0]["reused"] == 4
    assert latest[0]["computed"] == 0 and latest[0]["failed"] == 0


def test_logs_shows_the_judge_prompt_answer_and_verdict(judged: dict) -> None:
    store, spec, records = judged["store"], judged["spec"], judged["records"]
    entries = _logs(store, "--metric", spec, "-n", "0")
    assert [tuple(e) for e in entries] == [LOG_FIELDS] * 4
    by_item = {(e["item"], e["system"]): e for e in entries}
    key = [(r["item"], r["system"]) for r in records]
    ok = by_item[key[0]]
    assert ok["status"] == "ok" and ok["column"] == spec and ok["level"] == "segment"
    assert ok["run_id"] == 1 and ok["system"] == records[0]["system"]
    (call,) = ok["calls"]
    assert tuple(call) == CALL_FIELDS and call["found"]
    assert any(records[0]["output"] in m["content"] for m in call["messages"])
    assert re.fullmatch(r"Feedback: Clear and faithful\. \[RESULT\] [1-5]", call["answer"])
    assert ok["value"] == float(call["answer"][-1])
    assert ok["rationale"] == "Clear and faithful."
    assert ok["tokens_in"] == call["tokens_in"] > 0 and ok["cost_usd"] > 0
    assert ok["latency_s"] is not None

    refused = by_item[key[1]]
    assert refused["status"] == "refused" and refused["reason"] == REASON_REFUSED
    assert refused["calls"][0]["found"] and refused["calls"][0]["error"] == REASON_REFUSED
    failed = by_item[key[2]]
    assert failed["status"] == "error" and failed["reason"] == REASON_500
    (call,) = failed["calls"]  # a failed call is not an answer, but its prompt is kept
    assert call["found"] and call["answer"] is None and call["error"] == REASON_500
    assert any(records[2]["output"] in m["content"] for m in call["messages"])


def test_a_panel_score_shows_every_members_call(server: FaultServer, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(1))
    spec = (f"judge.panel:judge=judge.rubric,models=alpha;beta,backend=openai_compat,"
            f"api_base={server.url},protocol=text")
    proc = run_cli("score", str(data), "-m", spec, "--store", str(tmp_path / "runs.db"),
                   "--cache", str(tmp_path / "cache.sqlite"))
    assert proc.returncode == 0, proc.stderr
    (entry,) = _logs(tmp_path / "runs.db")
    assert [c["found"] for c in entry["calls"]] == [True, True]
    assert all(c["answer"].startswith("Feedback: Clear and faithful.") for c in entry["calls"])


def test_logs_cache_takes_a_directory_as_score_does(server: FaultServer,
                                                   tmp_path: Path) -> None:
    """`--cache DIR` names DIR/judge_cache.sqlite for `logs` as for `score`; a --cache with
    no judge cache there is an error naming it, not every call shown as missing."""
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    store = tmp_path / "runs.db"
    run_cli("score", str(data), "-m", _judge(server), "-o", str(tmp_path / "out.csv"),
            "--store", str(store), "--cache", str(tmp_path / "cachedir"), check=True)
    assert (tmp_path / "cachedir" / "judge_cache.sqlite").is_file()
    for cache in ("cachedir", "cachedir/judge_cache.sqlite"):
        entries = _logs(store, "--cache", str(tmp_path / cache))
        assert [call["found"] for e in entries for call in e["calls"]] == [True, True]
    proc = run_cli("logs", "--store", str(store), "--cache", str(tmp_path / "nowhere"))
    assert proc.returncode == 2
    assert "nowhere: no judge cache there" in proc.stderr


def test_logs_filters_and_limits(judged: dict) -> None:
    store, records = judged["store"], judged["records"]
    assert {e["status"] for e in _logs(store, "--failed")} == {"error", "refused"}
    assert [e["status"] for e in _logs(store, "--status", "error")] == ["error"]
    one = _logs(store, "--item", records[3]["item"], "--system", records[3]["system"])
    assert sorted(e["metric"] for e in one) == ["judge.rubric", "lexical.length"]
    lexical = _logs(store, "1", "--metric", "lexical.length", "-n", "0")
    assert len(lexical) == 4 and all(e["calls"] == [] for e in lexical)
    proc = run_cli("logs", "--store", str(store), "-n", "3")
    assert proc.stdout.count("\nrun 1 | ") + proc.stdout.startswith("run 1 | ") == 3
    assert "showing 3 of 8 scores of run 1" in proc.stderr
    bad = run_cli("logs", "--store", str(store), "--metric", "lexical.bleu")
    assert bad.returncode == 2 and "has no metric 'lexical.bleu'" in bad.stderr
    missing = run_cli("logs", "7", "--store", str(store))
    assert missing.returncode == 2 and "no run 7 (runs 1 to 1" in missing.stderr


def test_logs_text_shows_the_prompt_and_the_answer(judged: dict) -> None:
    records = judged["records"]
    proc = run_cli("logs", "--store", str(judged["store"]), "--item", records[0]["item"],
                   "--system", records[0]["system"], "--metric", "judge.rubric")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.startswith(f"run 1 | {judged['spec']} | item {records[0]['item']!r} system "
                           f"{records[0]['system']!r} | ok\n  value ")
    assert "    [user]\n" in text and records[0]["output"][:60] in text
    assert "    [answer]\n      Feedback: Clear and faithful. [RESULT] " in text
    assert "  rationale:\n    Clear and faithful.\n" in text


def test_the_command_line_is_scrubbed_of_secrets(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    out = tmp_path / f"out-{SECRET}.csv"
    proc = run_cli("score", str(data), "-m", "lexical.length", "-o", str(out), "--store",
                   str(tmp_path / "runs.db"), env={"JB_API_KEY": SECRET})
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(run_cli("runs", "--store", str(tmp_path / "runs.db"), "--json").stdout)
    assert SECRET not in run["command"] and "out-[REDACTED].csv" in run["command"]
    for path in tmp_path.glob("runs.db*"):
        assert SECRET.encode() not in path.read_bytes(), path.name


def test_a_budget_stop_is_recorded_as_such(server: FaultServer, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    store = tmp_path / "runs.db"
    assert run_cli("score", str(data), "-m", "lexical.length", "--store", str(store)
                   ).returncode == 0
    proc = run_cli("score", str(data), "-m", _judge(server), "--store", str(store),
                   "--budget-usd", "0.0000001", "--cache", str(tmp_path / "cache.sqlite"))
    assert proc.returncode == 1 and "budget" in proc.stderr
    latest = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)[0]
    assert latest["id"] == 2 and latest["outcome"] == "budget_stop"
    assert latest["error"].startswith("budget of $0.0000 reached") and latest["ended"]


# A metric that scores one batch of 2, then waits (writing $PAUSED) until it is stopped.
SLOW_PLUGIN = '''
import os, time
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo

DONE = [0]


class Slow(Metric):
    info = MetricInfo(name="slow.len", kind="reference", requires=("output",))
    batch_size = 2
    parallel_safe = False

    def score(self, samples):
        if DONE[0] >= 2:
            open(os.environ["PAUSED"], "w").close()
            time.sleep(120)
        DONE[0] += len(samples)
        return [float(len(s.output)) for s in samples]


@hookimpl
def register_metrics(register):
    register(Slow)
'''


def _stopped_run(tmp_path: Path, sig: signal.Signals) -> tuple[subprocess.Popen[str], Path]:
    plugin = tmp_path / "slow.py"
    plugin.write_text(SLOW_PLUGIN, encoding="utf-8")
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(6))
    store, paused = tmp_path / "runs.db", tmp_path / "paused"
    proc = subprocess.Popen(
        [sys.executable, "-m", "judgebench.cli", "-p", str(plugin), "score", str(data), "-m",
         "slow.len", "--store", str(store), "-o", str(tmp_path / "out.csv"), "--workers", "1"],
        env={**__import__("os").environ, "PAUSED": str(paused)}, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not paused.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert paused.exists(), proc.stderr.read() if proc.stderr else ""
        proc.send_signal(sig)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, store


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_run_says_interrupted_and_keeps_its_scores(tmp_path: Path,
                                                              sig: signal.Signals) -> None:
    proc, store = _stopped_run(tmp_path, sig)
    assert proc.returncode != 0
    (run,) = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)
    assert run["outcome"] == "interrupted" and run["ended"] is not None
    assert run["computed"] == 2 and run["command"].startswith("judgebench -p ")
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM scores").fetchone() == (2,)
    assert not (tmp_path / "out.csv").exists(), "no half-written table"


def test_a_killed_run_shows_as_killed(tmp_path: Path) -> None:
    proc, store = _stopped_run(tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    (run,) = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)
    assert run["outcome"] == "killed" and run["ended"] is None
    stored = sqlite3.connect(store).execute("SELECT outcome FROM runs").fetchone()
    assert stored == ("running",), "the store keeps what it knew; `runs` sees the pid is gone"


# A metric that ends the process in its second batch, as a plugin calling sys.exit would.
EXITING_PLUGIN = '''
import sys
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo

DONE = [0]


class Quit(Metric):
    info = MetricInfo(name="quit.len", kind="reference", requires=("output",))
    batch_size = 2
    parallel_safe = False

    def score(self, samples):
        if DONE[0] >= 2:
            sys.exit("the plugin gave up")
        DONE[0] += len(samples)
        return [float(len(s.output)) for s in samples]


@hookimpl
def register_metrics(register):
    register(Quit)
'''


def test_a_run_that_errors_says_error_and_why(tmp_path: Path) -> None:
    plugin = tmp_path / "quit.py"
    plugin.write_text(EXITING_PLUGIN, encoding="utf-8")
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(6))
    store = tmp_path / "runs.db"
    proc = run_cli("-p", str(plugin), "score", str(data), "-m", "quit.len", "--store",
                   str(store), "-o", str(tmp_path / "out.csv"), "--workers", "1")
    assert proc.returncode == 1 and "the plugin gave up" in proc.stderr
    (run,) = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)
    assert run["outcome"] == "error" and run["ended"] is not None
    assert run["error"] == "SystemExit: the plugin gave up"
    assert run["computed"] == 2 and not (tmp_path / "out.csv").exists()


def test_runs_and_logs_read_a_store_of_main_1710a54(tmp_path: Path) -> None:
    import shutil

    store = tmp_path / "old.db"
    shutil.copyfile(Path(__file__).parent / "data" / "stores" / "main-1710a54.db", store)
    (run,) = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)
    assert run["id"] == 1 and run["outcome"] is None and run["command"] is None
    assert "unrecorded" in run_cli("runs", "--store", str(store)).stdout
    failed = _logs(store, "--metric", "judge.rubric", "-n", "0")
    assert len(failed) == 64 and {e["status"] for e in failed} == {"parse_error"}
    assert failed[0]["raw"] == "I would say it is pretty good overall."
    assert failed[0]["column"] is None and failed[0]["calls"] == []


# -- the README's SQL, against a real store ---------------------------------------------------
def _readme_section() -> str:
    """The two pages the README's "Runs, logs and the store" became."""
    return "\n".join((REPO / "docs" / page).read_text(encoding="utf-8")
                     for page in ("guides/runs-and-logs.md", "design/store-schema.md"))


def test_every_documented_sql_query_runs_on_a_real_store(judged: dict) -> None:
    section = _readme_section()
    queries = re.findall(r"```sql\n(.*?)```", section, flags=re.S)
    assert len(queries) >= 3
    conn = sqlite3.connect(judged["store"])
    results = {q.splitlines()[0]: conn.execute(q).fetchall() for q in queries}
    assert results["-- failures per metric, with their reasons"] == [
        ("judge.rubric", "error", REASON_500, 1), ("judge.rubric", "refused", REASON_REFUSED, 1)]
    assert results["-- the runs, newest first"][0][:3] == (1, "ok", 2)
    per_run = results["-- each run's scores by status"]  # metric names, not columns
    assert sorted(per_run) == [(1, "judge.rubric", "error", 1), (1, "judge.rubric", "ok", 2),
                               (1, "judge.rubric", "refused", 1),
                               (1, "lexical.length", "ok", 4)]

    canned = json.loads(re.search(r"```json\n(.*?)```", section, flags=re.S).group(1))
    (query,) = canned["databases"]["runs"]["queries"].values()
    assert conn.execute(query["sql"]).fetchall() \
        == results["-- failures per metric, with their reasons"]
    conn.close()


def test_the_readme_documents_every_table_and_column() -> None:
    from judgebench.engine.store import _TABLES

    section = _readme_section()
    for table, columns in _TABLES.items():
        assert f"`{table}`" in section, table
        for name in columns:
            assert f"`{name}`" in section, f"{table}.{name}"
    for name in (*RUN_FIELDS, *LOG_FIELDS, *CALL_FIELDS):
        assert f"`{name}`" in section, name


def test_the_scoring_quick_start_ends_with_runs_and_logs() -> None:
    text = (REPO / "docs" / "guides" / "scoring.md").read_text(encoding="utf-8")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    last = [line.split("#")[0].strip() for line in block.strip().splitlines()[-2:]]
    assert last[0].startswith("judgebench runs") and last[1].startswith("judgebench logs")


def test_datasette_opens_the_store_as_it_is_and_runs_the_canned_query(judged: dict) -> None:
    datasette_app = pytest.importorskip("datasette.app", reason="the dev extra is not installed")
    import asyncio

    canned = json.loads(re.search(r"```json\n(.*?)```", _readme_section(), flags=re.S).group(1))
    store = judged["store"]
    assert store.stem == "runs", "the README's metadata names the database `runs`"

    async def get(ds, path: str) -> list[dict]:
        response = await ds.client.get(path)
        assert response.status_code == 200, response.text
        return response.json()

    async def browse() -> tuple[list[dict], list[dict], list[dict]]:
        ds = datasette_app.Datasette([str(store)], metadata=canned)
        return (await get(ds, "/runs/failures.json?_shape=array"),
                await get(ds, "/runs/runs.json?_shape=array"),
                await get(ds, "/runs/scores.json?_shape=array&status=error"))

    failures, runs, errors = asyncio.run(browse())
    assert [(r["metric"], r["status"], r["reason"], r["n"]) for r in failures] == [
        ("judge.rubric", "error", REASON_500, 1), ("judge.rubric", "refused", REASON_REFUSED, 1)]
    assert [(r["id"], r["outcome"], r["failed"]) for r in runs] == [(1, "ok", 2)]
    assert [r["reason"] for r in errors] == [REASON_500]
