"""Judges stream their results: each sample reaches the store as its request finishes, not
when the batch of 512 returns. A real loopback OpenAI-compatible server (tests/fault_server.py)
answers with latency; a real `judgebench score` process is killed with SIGKILL mid-batch."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer
from judgebench_judges.base import JudgeMetric

from judgebench.engine import runner
from judgebench.engine.runtime import RunSettings
from judgebench.engine.store import Store
from judgebench.models import Sample
from judgebench.plugins import build_host
from judgebench.spec import parse_spec

REPLY = "Feedback: The summary is adequate. [RESULT] {score}"
KEY = "sk-stream-test-0123456789"
#: The code under test: this checkout first, for a child process too.
PYTHONPATH = os.pathsep.join([str(REPO), str(REPO / "plugins")])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "served.jsonl"
    with FaultServer("--latency", "0.02", reply=REPLY, log=log) as srv:
        yield srv


def spec_for(url: str, concurrency: int = 4) -> str:
    return (f"judge.rubric:backend=openai_compat,model=judge,api_base={url},"
            f"api_key_env=JB_STREAM_KEY,protocol=text,concurrency={concurrency},max_attempts=1")


def samples(n: int, refuse: int | None = None) -> list[Sample]:
    rows = summeval_records(n)
    if refuse is not None:  # the fault server answers this one with a content-filter refusal
        rows[refuse]["output"] += " @@fault=refuse*99@@"
    return [Sample(**r) for r in rows]


class Recorder:
    """Stands in for the tqdm bar: records every update the runner makes."""

    def __init__(self) -> None:
        self.updates: list[int] = []

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def update(self, n: int = 1) -> None:
        if n:  # the runner also reports the reused samples, none here
            self.updates.append(n)


def score(data: list[Sample], spec: str, store: Path, cache: Path, **kwargs: Any
          ) -> runner.TableResult:
    with Store(store) as opened:
        return runner.run(data, [parse_spec(spec)], store=opened, progress=True,
                          settings=RunSettings(cache_path=cache), host=build_host(), **kwargs)


def stored_rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT item, system, signature, value, status, reason, raw, "
                            "rationale, tokens_in, tokens_out FROM scores "
                            "ORDER BY item, system").fetchall()


def test_the_progress_bar_moves_per_sample_and_streaming_changes_no_result(
        server, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("JB_STREAM_KEY", KEY)
    data = samples(24, refuse=5)
    spec = spec_for(server.url)
    bars: list[Recorder] = []

    def progress(*args: object) -> Recorder:
        bars.append(Recorder())
        return bars[-1]

    monkeypatch.setattr(runner, "_progress", progress)
    monkeypatch.setattr(JudgeMetric, "batch_size", 10)  # three batches, each its own loop
    streamed = score(data, spec, tmp_path / "a.db", tmp_path / "a.sqlite")
    assert bars[-1].updates == [1] * len(data)  # the bar moved inside every batch

    monkeypatch.setattr(JudgeMetric, "streams", property(lambda self: False))
    whole = score(data, spec, tmp_path / "b.db", tmp_path / "b.sqlite")
    assert bars[-1].updates == [10, 10, 4]  # the batch path: one jump per batch

    assert streamed.table.equals(whole.table)
    assert streamed.table["item"].tolist() == [s.item for s in data]  # input order
    assert stored_rows(tmp_path / "a.db") == stored_rows(tmp_path / "b.db")
    statuses = [row[4] for row in stored_rows(tmp_path / "a.db")]
    assert statuses.count("refused") == 1 and statuses.count("ok") == len(data) - 1


BREAKING_PLUGIN = '''
import os
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo, Outcome, Status


class HalfThenFails(Metric):
    """Streams two results, then raises: the runner scores the rest one by one."""

    info = MetricInfo(name="test.half", kind="judge", requires=("output",))

    def score(self, samples):
        with open(os.environ["HALF_LOG"], "a") as log:
            log.write(f"{len(samples)}\\n")
        return [float(len(s.output)) for s in samples]

    def score_stream(self, samples):
        yield 1, float(len(samples[1].output))
        yield 0, Outcome.failed(Status.REFUSED, "policy")
        raise ValueError("connection lost")


@hookimpl
def register_metrics(register):
    register(HalfThenFails)
'''


def test_a_stream_that_breaks_keeps_what_it_yielded_and_scores_the_rest_alone(
        tmp_path, monkeypatch) -> None:
    from judgebench.plugins import build_host

    plugin = tmp_path / "half_plugin.py"
    plugin.write_text(BREAKING_PLUGIN, encoding="utf-8")
    log = tmp_path / "calls.log"
    monkeypatch.setenv("HALF_LOG", str(log))
    data = samples(5)
    with Store(tmp_path / "runs.db") as store:
        result = runner.run(data, [parse_spec("test.half")], store=store,
                            host=build_host([str(plugin)]))
    values = result.table["test.half"].tolist()
    assert values[0] != values[0]  # the refusal yielded first is kept (no value, not 0)
    assert values[1:] == [float(len(str(s.output))) for s in data[1:]]
    assert log.read_text().split() == ["1", "1", "1"]  # the three never yielded, one by one
    assert result.statuses["test.half"] == {"refused": 1, "ok": 4}


@pytest.mark.slow  # a judge run paced by the server, killed and resumed in real processes
def test_sigkill_mid_batch_keeps_every_finished_request_and_resume_pays_none_again(
        tmp_path) -> None:
    n, concurrency = 40, 4
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(n))
    store, cache, out = tmp_path / "runs.db", tmp_path / "cache.sqlite", tmp_path / "s.csv"
    with FaultServer("--latency", "0.25", reply=REPLY, log=tmp_path / "served.jsonl") as srv:
        args = ["score", str(data), "-m", spec_for(srv.url, concurrency), "--store", str(store),
                "--resume", "--cache", str(cache), "-o", str(out)]
        env = {**os.environ, "JB_STREAM_KEY": KEY, "PYTHONPATH": PYTHONPATH}
        proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args], env=env,
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 90
        while time.time() < deadline and len(srv.served()) < 16 and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        # the server finishes (and logs) the requests that were in flight: wait until it has
        while not srv.idle():
            time.sleep(0.02)
        served_before = len(srv.served())
        with sqlite3.connect(store) as conn:
            stored = conn.execute("SELECT COUNT(*) FROM scores WHERE status='ok'").fetchone()[0]
        with sqlite3.connect(cache) as conn:
            cached = conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        # One batch of 40 (batch_size 512), killed inside it: the batch path stores nothing.
        assert 16 <= served_before < n
        assert 0 < stored < n
        # What finished is stored: only answers still on their way to the store at the kill
        # are not (they are in the judge cache), and only requests in flight (at most
        # `concurrency`) were answered by the server without reaching the cache.
        assert stored >= cached - concurrency, (stored, cached)
        assert served_before <= cached + concurrency, (served_before, cached)
        assert not out.exists()

        resumed = run_cli(*args, cwd=tmp_path, env={"JB_STREAM_KEY": KEY})
        assert resumed.returncode == 0, resumed.stderr
        new_calls = len(srv.served()) - served_before
        assert new_calls == n - cached  # every answer that arrived is reused, none paid twice
        assert new_calls <= n - stored
        assert f"reused {stored}" in resumed.stderr
        with sqlite3.connect(store) as conn:
            assert conn.execute("SELECT COUNT(*) FROM scores WHERE status='ok'").fetchone()[0] == n


def test_a_caller_that_stops_early_cancels_the_judges_event_loop() -> None:
    import asyncio
    import threading

    from judgebench_judges.base import iterate_in_thread

    cancelled = threading.Event()

    async def forever():
        try:
            yield 1
            await asyncio.sleep(3600)
            yield 2
        except asyncio.CancelledError:
            cancelled.set()
            raise

    stream = iterate_in_thread(forever)
    assert next(stream) == 1
    began = time.monotonic()
    stream.close()  # e.g. the runner's commit failed
    assert cancelled.wait(5) and time.monotonic() - began < 5

    async def broken():
        yield 1
        raise ConnectionError("gone")

    with pytest.raises(ConnectionError, match="gone"):
        list(iterate_in_thread(broken))
