"""`score --workers N`: local metrics scored in worker processes give the table, sidecar,
corpus file and stored scores of `--workers 1`; failures in a worker are statuses with their
reason; a resumed run sends no work; long runs are announced with a time estimate."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli, summeval_records, write_jsonl

import judgebench.engine.pool
import judgebench.engine.runner
from judgebench.engine.pool import TimeEstimate, duration, parallel_safe
from judgebench.metric import Metric
from judgebench.models import MetricInfo

# A local plugin (`-p`): characters per word, batches of 16, and a note of which process
# scored each batch (in $MARKS, when set). Some outputs are made to fail: a sample whose item
# ends in the digit $RAISE_ON raises; the one that is $DIE_ON (ITEM/SYSTEM) kills its process.
PLUGIN = '''
import os
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo


class CharsPerWord(Metric):
    info = MetricInfo(name="local.cpw", kind="reference", requires=("output",))
    batch_size = 16

    def score(self, samples):
        marks = os.environ.get("MARKS")
        if marks:
            with open(os.path.join(marks, str(os.getpid())), "a") as f:
                f.write(f"{len(samples)}\\n")
        out = []
        for s in samples:
            if os.environ.get("DIE_ON") == f"{s.item}/{s.system}":
                os._exit(3)
            if os.environ.get("RAISE_ON") and s.item.endswith(os.environ["RAISE_ON"]):
                raise ValueError(f"no score for {s.item}")
            out.append(len(s.output) / max(1, len(s.output.split())))
        return out


@hookimpl
def register_metrics(register):
    register(CharsPerWord)
'''

TIMING = ("elapsed_s", "created_at", "run_id")


@pytest.fixture
def always_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send every parallel-safe column to the workers, however little its work."""
    monkeypatch.setattr(judgebench.engine.pool, "POOL_MIN_SECONDS", 0.0)


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "cpw_plugin.py"
    path.write_text(PLUGIN, encoding="utf-8")
    return path


def _items_renamed(records: list[dict]) -> list[dict]:
    """Item ids ending in a digit 0-9 in turn, so RAISE_ON picks every tenth document."""
    return [{**r, "item": f"{r['item']}-{n // 16 % 10}"} for n, r in enumerate(records)]


def _score(tmp: Path, data: Path, plugin: Path, workers: int, *metrics: str,
           env: dict[str, str] | None = None, resume: bool = False,
           failing: bool = False) -> tuple[str, Path]:
    """Score into `tmp`; a run with failed scores (`failing`) must exit 3, any other 0."""
    tmp.mkdir(exist_ok=True)
    marks = tmp / "marks"
    marks.mkdir(exist_ok=True)
    args = ["-p", str(plugin), "score", str(data), *(a for m in metrics for a in ("-m", m)),
            "-o", str(tmp / "scores.csv"), "--corpus", str(tmp / "corpus.csv"),
            "--store", str(tmp / "store.db"), "--workers", str(workers), "--no-progress"]
    proc = run_cli(*args, *(["--resume"] if resume else []),
                   env={"MARKS": str(marks), **(env or {})})
    assert proc.returncode == (3 if failing else 0), proc.stderr
    return proc.stderr, marks


def _store_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        columns = [row[1] for row in conn.execute("PRAGMA table_info(scores)")
                   if row[1] not in TIMING]
        rows = conn.execute(f"SELECT {', '.join(columns)} FROM scores").fetchall()
        corpus_columns = [row[1] for row in conn.execute("PRAGMA table_info(corpus_scores)")
                          if row[1] not in TIMING]
        rows += conn.execute(f"SELECT {', '.join(corpus_columns)} FROM corpus_scores").fetchall()
    return sorted(rows, key=repr)


def _scoring_pids(marks: Path) -> dict[int, int]:
    """Process id -> samples it scored (local.cpw only)."""
    return {int(p.name): sum(int(n) for n in p.read_text().split()) for p in marks.iterdir()}


@pytest.mark.slow
def test_two_workers_write_what_one_writes(tmp_path: Path, plugin: Path,
                                           always_pool: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(600))  # 3 batches of 256
    metrics = ("lexical.rouge1", "lexical.bleu", "lexical.length", "local.cpw")
    _, one_marks = _score(tmp_path / "one", data, plugin, 1, *metrics)
    _, two_marks = _score(tmp_path / "two", data, plugin, 2, *metrics)
    for name in ("scores.csv", "scores.csv.meta.json", "corpus.csv"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    assert _store_rows(tmp_path / "one" / "store.db") == _store_rows(tmp_path / "two" / "store.db")
    assert len(_store_rows(tmp_path / "one" / "store.db")) == 600 * 4 + 16  # + corpus BLEU
    assert _scoring_pids(one_marks) == {os.getpid(): 600}
    scored_by = _scoring_pids(two_marks)
    assert scored_by[os.getpid()] == 16  # the first batch, timed in process
    workers = {pid: n for pid, n in scored_by.items() if pid != os.getpid()}
    assert sum(workers.values()) == 600 - 16  # every other batch in a worker
    # Every column's batches are sent at once: the fast local.cpw batches may all go to one
    # worker while the other scores the slower columns.
    assert 1 <= len(workers) <= 2


def test_in_process_with_one_worker(tmp_path: Path, plugin: Path, always_pool: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(48))
    _, marks = _score(tmp_path / "run", data, plugin, 1, "local.cpw")
    assert _scoring_pids(marks) == {os.getpid(): 48}


def test_the_estimate_costs_no_extra_call(tmp_path: Path, plugin: Path,
                                          always_pool: None) -> None:
    """The estimate times the run's own first batch: the batches are still 16, 16, 16."""
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(48))
    _, marks = _score(tmp_path / "run", data, plugin, 1, "local.cpw")
    (pid,) = _scoring_pids(marks)
    assert (marks / str(pid)).read_text().split() == ["16", "16", "16"]


@pytest.mark.slow
def test_a_metric_raising_in_a_worker_fails_those_samples_with_the_reason(
        tmp_path: Path, plugin: Path, always_pool: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", _items_renamed(summeval_records(320)))
    env = {"RAISE_ON": "3"}
    _score(tmp_path / "one", data, plugin, 1, "local.cpw", env=env, failing=True)
    _, marks = _score(tmp_path / "two", data, plugin, 2, "local.cpw", env=env, failing=True)
    assert len(_scoring_pids(marks)) >= 2  # scored in workers
    rows = _store_rows(tmp_path / "two" / "store.db")
    assert rows == _store_rows(tmp_path / "one" / "store.db")
    with sqlite3.connect(tmp_path / "two" / "store.db") as conn:
        failed = conn.execute("SELECT item, status, reason, value FROM scores "
                              "WHERE status != 'ok'").fetchall()
    assert len(failed) == 32  # 2 documents x 16 systems
    assert all(item.endswith("-3") and status == "error" and value is None
               and reason == f"ValueError: no score for {item}"
               for item, status, reason, value in failed)
    table = (tmp_path / "two" / "scores.csv").read_text().splitlines()
    assert sum(line.split(",")[2] == "" for line in table[1:]) == 32  # empty cells, not 0


@pytest.mark.slow
def test_a_worker_that_dies_fails_only_its_samples(tmp_path: Path, plugin: Path,
                                                  always_pool: None) -> None:
    records = summeval_records(48)  # 3 batches: the first in process (timed), 2 in workers
    data = write_jsonl(tmp_path / "gen.jsonl", records)
    victim = f"{records[40]['item']}/{records[40]['system']}"
    stderr, _ = _score(tmp_path / "run", data, plugin, 2, "local.cpw", env={"DIE_ON": victim},
                       failing=True)
    with sqlite3.connect(tmp_path / "run" / "store.db") as conn:
        rows = conn.execute("SELECT system, status, reason FROM scores").fetchall()
    assert len(rows) == 48
    died = [(system, reason) for system, status, reason in rows if status != "ok"]
    assert [system for system, _ in died] == [records[40]["system"]]
    assert "worker process scoring this sample died" in died[0][1]
    assert "47 ok" in stderr and "1 error" in stderr


@pytest.mark.slow
def test_resume_with_workers_sends_no_work(tmp_path: Path, plugin: Path,
                                           always_pool: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(320))
    _score(tmp_path / "run", data, plugin, 2, "local.cpw", "lexical.rouge1")
    before = _store_rows(tmp_path / "run" / "store.db")
    for mark in (tmp_path / "run" / "marks").iterdir():
        mark.unlink()
    stderr, marks = _score(tmp_path / "run", data, plugin, 2, "local.cpw", "lexical.rouge1",
                           resume=True)
    assert "(computed 0, reused 640 " in stderr
    assert list(marks.iterdir()) == []  # no column had work
    assert _store_rows(tmp_path / "run" / "store.db") == before


def test_parallel_safe_by_kind_and_by_declaration() -> None:
    def metric(kind: str, declared: bool | None = None) -> Metric:
        attrs = {"info": MetricInfo(name=f"t.{kind}", kind=kind)}  # type: ignore[arg-type]
        if declared is not None:
            attrs["parallel_safe"] = declared
        return type("M", (Metric,), attrs)()

    assert parallel_safe(metric("reference")) and parallel_safe(metric("sentinel"))
    assert not parallel_safe(metric("judge")) and not parallel_safe(metric("learned"))
    assert not parallel_safe(metric("reference", declared=False))
    assert parallel_safe(metric("learned", declared=True))
    from judgebench_neural.base import ModelMetric

    assert ModelMetric.parallel_safe is False  # a model per worker would not fit


def test_time_estimate_text() -> None:
    estimate = TimeEstimate("lexical.ter", seconds_per_sample=8.1, rows=1600, workers=2,
                            timed=1)
    assert estimate.seconds == pytest.approx(6480.0)
    assert estimate.text() == ("lexical.ter: about 1.8 h for 1,600 rows at 2 workers "
                               "(timed on 1 sample)")
    assert [duration(s) for s in (12.4, 150, 7200)] == ["12 s", "2.5 min", "2.0 h"]


SLOW_PLUGIN = '''
import time
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo


class Slow(Metric):
    info = MetricInfo(name="local.slow", kind="reference", requires=("output",))
    batch_size = 16

    def score(self, samples):
        time.sleep(0.2 * len(samples))
        return [1.0] * len(samples)


@hookimpl
def register_metrics(register):
    register(Slow)
'''


def test_dry_run_estimates_time_of_slow_local_metrics(tmp_path: Path) -> None:
    plugin = tmp_path / "slow_plugin.py"
    plugin.write_text(SLOW_PLUGIN, encoding="utf-8")
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(320))
    proc = run_cli("-p", str(plugin), "score", str(data), "-m", "local.slow",
                   "-m", "lexical.length", "--store", str(tmp_path / "s.db"), "--dry-run",
                   "--json", "--workers", "2", check=True)
    rows = {row["column"]: row for row in json.loads(proc.stdout)}
    slow = rows["local.slow"]
    assert {"calls", "tokens_in", "tokens_out", "cost_usd", "estimated_s"} <= set(slow)
    assert slow["calls"] == 0
    assert 0.2 * 320 / 2 * 0.8 < slow["estimated_s"] < 0.2 * 320 / 2 * 2  # 32 s, measured
    assert rows["lexical.length"]["estimated_s"] < 30
    assert "local.slow: about " in proc.stderr and "for 320 rows at 2 workers" in proc.stderr
    assert "lexical.length: about" not in proc.stderr  # short: not said


@pytest.mark.slow
@pytest.mark.parametrize("victim", [40, 60, 95])
def test_a_worker_dying_with_the_next_chunk_sent_fails_only_its_sample(
        tmp_path: Path, plugin: Path, always_pool: None, monkeypatch: pytest.MonkeyPatch,
        victim: int) -> None:
    # Chunks of 48 rows (3 batches of 16): the next chunk's batches are already in the pool
    # when a batch of this one kills its worker, and the other way round.
    monkeypatch.setattr(judgebench.engine.runner, "CHUNK_ROWS", 48)
    records = summeval_records(96)
    data = write_jsonl(tmp_path / "gen.jsonl", records)
    killed = f"{records[victim]['item']}/{records[victim]['system']}"
    stderr, _ = _score(tmp_path / "run", data, plugin, 2, "local.cpw", env={"DIE_ON": killed},
                       failing=True)
    with sqlite3.connect(tmp_path / "run" / "store.db") as conn:
        rows = conn.execute("SELECT item, system, status, value FROM scores").fetchall()
    assert len(rows) == 96
    failed = [(item, system) for item, system, status, _ in rows if status != "ok"]
    assert failed == [(records[victim]["item"], records[victim]["system"])]
    _score(tmp_path / "one", data, plugin, 1, "local.cpw")
    with sqlite3.connect(tmp_path / "one" / "store.db") as conn:
        expected = conn.execute("SELECT item, system, status, value FROM scores").fetchall()
    assert sorted(r for r in rows if r[2] == "ok") == sorted(
        r for r in expected if (r[0], r[1]) != failed[0])
    assert "95 ok" in stderr and "1 error" in stderr
