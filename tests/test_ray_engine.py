"""`score --engine ray`: batches scored by Ray actors on a real local Ray instance give the
table, sidecar, corpus file and stored scores of a local run; a resumed run (also after a
SIGKILL of the driver) recomputes nothing committed; a dying actor fails only its sample;
judges against a faulty loopback server end with a local run's statuses; one budget and one
rate limiter hold across actors."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    REPO,
    SUMMEVAL,
    column,
    run_cli,
    run_cli_process,
    summeval_records,
    write_jsonl,
)
from fault_server import FaultServer

ray = pytest.importorskip("ray")

from judgebench.engine import ray_engine  # noqa: E402

# A local plugin (`-p`): characters per word in batches of 16; each batch notes the process
# that scored it (in $JUDGEBENCH_TEST_MARKS), a sample that is $JUDGEBENCH_TEST_DIE_ON
# (ITEM/SYSTEM) kills its process, and $JUDGEBENCH_TEST_SLEEP seconds pass per sample.
PLUGIN = '''
import os, time
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo


class CharsPerWord(Metric):
    info = MetricInfo(name="local.cpw", kind="reference", requires=("output",))
    batch_size = 16

    def score(self, samples):
        marks = os.environ.get("JUDGEBENCH_TEST_MARKS")
        if marks:
            with open(os.path.join(marks, str(os.getpid())), "a") as f:
                f.write(f"{len(samples)}\\n")
        out = []
        for s in samples:
            time.sleep(float(os.environ.get("JUDGEBENCH_TEST_SLEEP", "0")))
            if os.environ.get("JUDGEBENCH_TEST_DIE_ON") == f"{s.item}/{s.system}":
                os._exit(3)
            out.append(len(s.output) / max(1, len(s.output.split())))
        return out


@hookimpl
def register_metrics(register):
    register(CharsPerWord)
'''

LEXICAL = ("lexical.rouge1", "lexical.bleu", "lexical.length")
TIMING = ("elapsed_s", "created_at", "run_id", "latency_s")
ENV = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "plugins")]),
       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance of 2 CPUs for the module (the runs join it, as `--address`
    would); its actors inherit this process's PYTHONPATH."""
    assert ray_engine.connect(ray_engine.RayConfig(num_cpus=2))
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "cpw_plugin.py"
    path.write_text(PLUGIN, encoding="utf-8")
    return path


def score_args(tmp: Path, data: Path | str, *metrics: str, engine: str = "local"
               ) -> list[str]:
    tmp.mkdir(exist_ok=True)
    return ["score", str(data), *(a for m in metrics for a in ("-m", m)),
            "-o", str(tmp / "scores.csv"), "--corpus", str(tmp / "corpus.csv"),
            "--store", str(tmp / "store.db"), "--no-progress",
            *(["--engine", "ray"] if engine == "ray" else ["--workers", "1"])]


def marks_of(tmp: Path) -> tuple[Path, dict[str, str]]:
    marks = tmp / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    return marks, {"JUDGEBENCH_TEST_MARKS": str(marks)}


def scoring_pids(marks: Path) -> dict[int, int]:
    """Process id -> samples it scored (local.cpw only)."""
    return {int(p.name): sum(int(n) for n in p.read_text().split()) for p in marks.iterdir()}


def store_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        rows = []
        for table in ("scores", "corpus_scores"):
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")
                       if row[1] not in TIMING]
            rows += conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
    return sorted(rows, key=repr)


def same_outputs(one: Path, two: Path) -> None:
    for name in ("scores.csv", "scores.csv.meta.json", "corpus.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert store_rows(one / "store.db") == store_rows(two / "store.db")


def test_actors_run_this_checkouts_code_with_the_clusters_limits(local_ray: None) -> None:
    limits = ray.remote(num_cpus=0)(ray_engine.SharedLimitsState).remote()
    actor = ray.remote(ray_engine.ScoringActor).remote((), {}, {}, None, limits)
    where = ray.get(actor.where.remote())
    ray.kill(actor)
    ray.kill(limits)
    assert Path(where["judgebench"]).resolve().is_relative_to(REPO)
    assert where["pid"] != os.getpid()
    # what a backend in the actor gets from remote.limiter_for, and sees as its budget
    assert where["shared_limiter"] == "SharedRateLimiter"
    assert where["shared_budget"] == "SharedBudget"


@pytest.mark.slow
def test_a_ray_run_writes_what_a_local_run_writes(tmp_path: Path, plugin: Path,
                                                  local_ray: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(96))
    metrics = (*LEXICAL, "local.cpw")
    run_cli("-p", str(plugin), *score_args(tmp_path / "local", data, *metrics), check=True)
    marks, env = marks_of(tmp_path / "ray")
    done = run_cli("-p", str(plugin), *score_args(tmp_path / "ray", data, *metrics,
                                                  engine="ray"), env=env, check=True)
    same_outputs(tmp_path / "local", tmp_path / "ray")
    assert len(store_rows(tmp_path / "ray" / "store.db")) == 96 * 4 + 16  # + corpus BLEU
    scored_by = scoring_pids(marks)
    assert os.getpid() not in scored_by and sum(scored_by.values()) == 96
    assert len(scored_by) == 2  # 6 batches round-robin over 2 actors
    assert "(computed 384, reused 0 " in done.stderr
    assert "Ray" not in done.stderr and "INFO" not in done.stderr  # Ray's logs stay quiet

    # --resume sends nothing: no actor scores, the store is unchanged
    for mark in marks.iterdir():
        mark.unlink()
    before = store_rows(tmp_path / "ray" / "store.db")
    again = run_cli("-p", str(plugin), *score_args(tmp_path / "ray", data, *metrics,
                                                   engine="ray"), "--resume", env=env,
                    check=True)
    assert "(computed 0, reused 384 " in again.stderr
    assert list(marks.iterdir()) == []
    assert store_rows(tmp_path / "ray" / "store.db") == before


@pytest.mark.slow
def test_an_actor_that_dies_fails_only_its_sample(tmp_path: Path, plugin: Path,
                                                  local_ray: None) -> None:
    records = summeval_records(48)
    data = write_jsonl(tmp_path / "gen.jsonl", records)
    victim = records[20]
    done = run_cli("-p", str(plugin), *score_args(tmp_path / "run", data, "local.cpw",
                                                  engine="ray"),
                   env={"JUDGEBENCH_TEST_DIE_ON": f"{victim['item']}/{victim['system']}"})
    assert done.returncode == 3, done.stderr
    with sqlite3.connect(tmp_path / "run" / "store.db") as conn:
        rows = conn.execute("SELECT item, system, status, reason FROM scores").fetchall()
    assert len(rows) == 48
    failed = [(item, system, reason) for item, system, status, reason in rows
              if status != "ok"]
    assert [(i, s) for i, s, _ in failed] == [(victim["item"], victim["system"])]
    assert "Ray actor scoring this sample died" in failed[0][2]
    assert "47 ok" in done.stderr and "1 error" in done.stderr


def test_engine_options_need_engine_ray(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(2))
    done = run_cli("score", str(data), "-m", "lexical.length", "--replicas", "2",
                   "--store", str(tmp_path / "s.db"))
    assert done.returncode == 2 and "--replicas go with --engine ray" in done.stderr


def test_the_limiter_is_one_for_the_cluster(local_ray: None) -> None:
    """Two actors take from one bucket: what one takes, the other cannot."""
    state = ray.remote(num_cpus=0)(ray_engine.SharedLimitsState).remote()

    @ray.remote(num_cpus=0)
    def take(state: object, times: int) -> list[float]:
        limiter = ray_engine.shared_limiter(state, ("judge", "http://x"), 3, None)
        return [limiter.try_acquire(1) for _ in range(times)]

    assert ray.get(take.remote(state, 3)) == [0.0, 0.0, 0.0]  # a full bucket of 3 per minute
    (wait,) = ray.get(take.remote(state, 1))
    assert 15 < wait <= 20  # one request refills in 20 s
    ray.kill(state)


def test_the_budget_is_one_for_the_cluster(local_ray: None) -> None:
    state = ray.remote(num_cpus=0)(ray_engine.SharedBudgetState).remote(1.0, False)
    budgets = [ray_engine.SharedBudget(state=state) for _ in range(2)]
    held = budgets[0].reserve(0.6, model="m")
    with pytest.raises(ray_engine.BudgetExceeded, match="budget of"):
        budgets[1].reserve(0.6, model="m")  # the other's call in flight counts
    budgets[0].charge(0.5)
    budgets[0].release(held)
    budgets[1].reserve(0.4, model="m")
    with pytest.raises(ray_engine.BudgetExceeded):
        budgets[0].reserve(0.2, model="m")  # 0.5 spent + 0.4 in flight + 0.2 > 1.0
    assert ray.get(state.totals.remote()) == (0.5, 0)
    ray.kill(state)


# -- judges on a faulty loopback server -----------------------------------------------------
KEY_ENV = "JB_RAY_KEY"
PRICE = {"price_in": "1", "price_out": "2"}


def judge_spec(server: FaultServer, **options: str) -> str:
    opts = {"backend": "openai_compat", "model": "judge", "api_base": server.url,
            "api_key_env": KEY_ENV, "protocol": "text", "timeout_s": "1", **options}
    return "judge.rubric:" + ",".join(f"{k}={v}" for k, v in opts.items())


def faulty_records(n: int) -> list[dict]:
    faults = ["429*1", "500*2", "503*1", "timeout*1", "malformed*1", "refuse*99", "echo401*99"]
    records = summeval_records(n)
    for i, r in enumerate(records):
        if i % 4 == 0:
            r["output"] += f" @@fault={faults[(i // 4) % len(faults)]}@@"
    return records


def judge_run(tmp: Path, data: Path, engine: str, *, kill_after: int | None = None,
              extra: tuple[str, ...] = (), **options: str) -> tuple[subprocess.CompletedProcess,
                                                                   int]:
    """One run against its own fault server (killed after `kill_after` answers and started
    again a second later); returns the run and the answers the server gave."""
    tmp.mkdir()
    log = tmp / "served.jsonl"
    srv = FaultServer("--hang", "3", "--retry-after", "0.2", "--latency", "0.02", log=log,
                      reply="Feedback: ok. [RESULT] {score}").start()

    def chaos() -> None:
        deadline = time.monotonic() + 60
        while len(srv.served()) < (kill_after or 0) and time.monotonic() < deadline:
            time.sleep(0.01)
        srv.kill()
        time.sleep(1.0)
        srv.start()

    killer = threading.Thread(target=chaos) if kill_after is not None else None
    try:
        if killer is not None:
            killer.start()
        done = run_cli(*score_args(tmp, data, judge_spec(srv, **options), engine=engine),
                       "--cache", str(tmp / "cache.sqlite"), *extra,
                       env={KEY_ENV: "jbRayKey5Tq8", "JUDGEBENCH_CACHE_DIR": str(tmp)})
        if killer is not None:
            killer.join()
        return done, len(srv.served())
    finally:
        srv.stop()


@pytest.mark.slow
def test_a_judge_on_ray_ends_with_the_statuses_of_a_local_run(tmp_path: Path,
                                                               local_ray: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", faulty_records(40))
    # Both servers are killed after 12 answers and back a second later; a fault's count
    # starts again with the server, so there are attempts enough for both.
    options = {"max_attempts": "8", "concurrency": "4", **PRICE}
    local, _ = judge_run(tmp_path / "local", data, "local", kill_after=12, **options)
    on_ray, served = judge_run(tmp_path / "ray", data, "ray", kill_after=12, **options)
    assert local.returncode == on_ray.returncode == 3, on_ray.stderr

    def outcomes(tmp: Path) -> list[tuple]:
        with sqlite3.connect(tmp / "store.db") as conn:
            return sorted(conn.execute(
                "SELECT item, system, status, value, reason, tokens_in, tokens_out, cost_usd "
                "FROM scores").fetchall())

    assert outcomes(tmp_path / "local") == outcomes(tmp_path / "ray")
    rows = outcomes(tmp_path / "ray")
    statuses = [row[2] for row in rows]
    assert statuses.count("refused") == 1 and statuses.count("error") == 1  # refuse, echo401
    assert statuses.count("ok") == 38
    assert not any("jbRayKey5Tq8" in (row[4] or "") for row in rows)  # the key is scrubbed
    # every answer is stored once; at most the calls in flight at the kill (2 actors x 4)
    # were answered without their answer arriving
    assert 39 <= served <= 39 + 8
    # the same cells (the headers name each run's own server)
    assert (tmp_path / "local" / "scores.csv").read_text().splitlines()[1:] == (
        tmp_path / "ray" / "scores.csv").read_text().splitlines()[1:]


@pytest.mark.slow
def test_the_budget_stop_holds_across_two_actors(tmp_path: Path, local_ray: None) -> None:
    records = summeval_records(40)
    data = write_jsonl(tmp_path / "gen.jsonl", records)
    # What each call costs, from a run without a limit.
    free, _ = judge_run(tmp_path / "free", data, "local", concurrency="1", **PRICE)
    assert free.returncode == 0, free.stderr
    with sqlite3.connect(tmp_path / "free" / "store.db") as conn:
        costs = sorted(cost for (cost,) in conn.execute("SELECT cost_usd FROM scores"))
    limit = sum(costs[:6])  # at most 6 calls fit; one budget per actor would pay up to 12
    done, paid = judge_run(tmp_path / "ray", data, "ray", concurrency="1",
                           extra=("--budget-usd", repr(limit), "--replicas", "2"), **PRICE)
    assert done.returncode == 1 and "budget" in done.stderr, done.stderr
    with sqlite3.connect(tmp_path / "ray" / "store.db") as conn:
        spent, stored = conn.execute("SELECT SUM(cost_usd), COUNT(*) FROM scores").fetchone()
        (outcome, cost) = conn.execute("SELECT outcome, cost_usd FROM runs").fetchone()
    assert 0 < paid <= 6
    assert stored == paid and spent <= limit  # every paid call stored, none past the limit
    assert outcome == "budget_stop" and cost == pytest.approx(spent)


@pytest.mark.slow
def test_with_exact_estimates_actors_never_spend_past_the_budget(tmp_path: Path,
                                                                 local_ray: None) -> None:
    from budget_runs import judge_spec as budget_spec
    from budget_runs import score_args as budget_args
    from budget_runs import spent

    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(48))
    with FaultServer("--usage-scale", "1", "--latency", "0.02", log=tmp_path / "served.jsonl",
                     reply="Feedback: ok. [RESULT] {score}") as srv:
        spec = budget_spec(srv, "judge", 16)
        done = run_cli(*budget_args(tmp_path / "ray", data, spec, 20.0, "--engine", "ray",
                                    "--replicas", "2"),
                       env={"OPENAI_API_KEY": "unused", "JUDGEBENCH_CACHE_DIR": str(tmp_path)})
        assert done.returncode == 1, done.stderr
        assert "budget" in done.stderr, done.stderr
        run = spent(tmp_path / "ray", srv, "judge", 20.0)
    assert 0 < run.calls < 48 and run.billed <= 20.0 + 1e-9, run
    assert run.stored_scores == run.calls and run.stored_cost == pytest.approx(run.billed)
    assert run.outcome == "budget_stop" and run.statuses == {column(spec): {"ok": run.calls}}
    assert run.run_cost == pytest.approx(run.billed)
    assert f"spent ${run.billed:.4f}, {48 - run.calls} scores not attempted" in done.stderr


# -- the whole file, and a killed driver ----------------------------------------------------
@pytest.mark.slow
def test_the_whole_summeval_file_on_ray_is_the_local_table(tmp_path: Path,
                                                           local_ray: None) -> None:
    assert SUMMEVAL.exists()
    run_cli(*score_args(tmp_path / "local", SUMMEVAL, *LEXICAL), check=True)
    run_cli(*score_args(tmp_path / "ray", SUMMEVAL, *LEXICAL, engine="ray"), check=True)
    same_outputs(tmp_path / "local", tmp_path / "ray")
    assert len(store_rows(tmp_path / "ray" / "store.db")) == 1600 * 3 + 16


def descendants(pid: int) -> list[int]:
    import psutil

    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


def end_processes(pids: list[int], timeout: float = 15.0) -> None:
    """Wait for the Ray processes a killed driver started to go; kill those that stay."""
    import psutil

    alive = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            alive.append(psutil.Process(pid))
    _, left = psutil.wait_procs(alive, timeout=timeout)
    for proc in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    psutil.wait_procs(left, timeout=5)


@pytest.mark.slow
def test_a_killed_driver_resumes_with_nothing_committed_recomputed(tmp_path: Path,
                                                                    plugin: Path) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(160))  # 10 batches of 16
    run = tmp_path / "run"
    marks, env = marks_of(run)
    args = ["-p", str(plugin), *score_args(run, data, "local.cpw", "lexical.length",
                                           engine="ray")]
    full_env = {**os.environ, **ENV, **env, "JUDGEBENCH_TEST_SLEEP": "0.2"}
    driver = subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args], env=full_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    store = run / "store.db"
    started = []
    try:
        deadline = time.monotonic() + 120
        committed = 0
        while time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.2)
            if store.exists():
                with sqlite3.connect(store) as conn, contextlib.suppress(
                        sqlite3.OperationalError):
                    (committed,) = conn.execute(
                        "SELECT COUNT(*) FROM scores WHERE metric = 'local.cpw'").fetchone()
            if committed >= 48:
                break
        started = descendants(driver.pid)
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    finally:
        end_processes(started)
    assert driver.returncode == -signal.SIGKILL
    before = store_rows(store)
    with sqlite3.connect(store) as conn:
        kept = conn.execute("SELECT metric, item, system, created_at FROM scores").fetchall()
    assert 48 <= sum(m == "local.cpw" for m, *_ in kept) < 160, "killed mid-run"
    for mark in marks.iterdir():
        mark.unlink()
    resumed = run_cli_process(*args, "--resume", env={**ENV, **env})
    assert resumed.returncode == 0, resumed.stderr
    assert "WARNING" not in resumed.stderr and "INFO" not in resumed.stderr  # Ray is quiet
    assert f"(computed {320 - len(kept)}, reused {len(kept)} " in resumed.stderr
    assert sum(scoring_pids(marks).values()) == 160 - sum(m == "local.cpw" for m, *_ in kept)
    with sqlite3.connect(store) as conn:
        after = set(conn.execute("SELECT metric, item, system, created_at FROM scores"))
    assert set(kept) <= after  # committed rows untouched (same created_at)
    assert set(before) <= set(store_rows(store))
    run_cli("-p", str(plugin), *score_args(tmp_path / "local", data, "local.cpw",
                                           "lexical.length"), check=True)
    local = tmp_path / "local"
    assert (local / "scores.csv").read_bytes() == (run / "scores.csv").read_bytes()
    assert json.loads((local / "scores.csv.meta.json").read_text())["columns"] == json.loads(
        (run / "scores.csv.meta.json").read_text())["columns"]


TAGGED_PLUGIN = '''
import os
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo


class Tagged(Metric):
    """Its version comes from $TAG_OF_THIS_RUN, which the actors are not given."""

    info = MetricInfo(name="local.tagged", kind="reference", requires=("output",),
                      version=os.environ.get("TAG_OF_THIS_RUN", "none"))
    batch_size = 4

    def score(self, samples):
        marks = os.environ.get("JUDGEBENCH_TEST_MARKS")
        with open(os.path.join(marks, str(os.getpid())), "a") as f:
            f.write(f"{len(samples)}\\n")
        return [float(len(s.output)) for s in samples]


@hookimpl
def register_metrics(register):
    register(Tagged)
'''


def test_a_column_actors_build_otherwise_is_scored_on_the_driver(tmp_path: Path,
                                                                 local_ray: None) -> None:
    plugin = tmp_path / "tagged_plugin.py"
    plugin.write_text(TAGGED_PLUGIN, encoding="utf-8")
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(8))
    marks, env = marks_of(tmp_path / "run")
    done = run_cli("-p", str(plugin), *score_args(tmp_path / "run", data, "local.tagged",
                                                  engine="ray"),
                   env={**env, "TAG_OF_THIS_RUN": "7"}, check=True)
    assert "local.tagged: a Ray actor builds it as 'local.tagged@none" in done.stderr
    assert "scored on the driver" in done.stderr
    assert scoring_pids(marks) == {os.getpid(): 8}
    assert "local.tagged@7" in (tmp_path / "run" / "scores.csv.meta.json").read_text()


def test_the_gpu_check_explains_itself_without_vllm(tmp_path: Path) -> None:
    script = REPO / "benchmarks" / "gpu_ray_check.py"
    helped = subprocess.run([sys.executable, str(script), "--help"], capture_output=True,
                            text=True, env={**os.environ, **ENV})
    assert helped.returncode == 0 and "--model" in helped.stdout and "--rows" in helped.stdout
    tried = subprocess.run([sys.executable, str(script), "--model", "x"], capture_output=True,
                           text=True, env={**os.environ, **ENV})
    assert tried.returncode == 2 and "vllm is not importable here" in tried.stdout


def test_the_gpu_checks_backend_plugin_registers(tmp_path: Path) -> None:
    """The -p plugin the GPU check gives every run loads here (vllm is imported only when
    an engine starts)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import gpu_ray_check
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    plugin = tmp_path / "vllm_fraction_plugin.py"
    plugin.write_text(gpu_ray_check.PLUGIN, encoding="utf-8")
    from judgebench.plugins import build_host

    host = build_host((str(plugin),))
    os.environ["JUDGEBENCH_GPU_FRACTION"] = "0.4"
    try:
        backend = host.backend("vllm_fraction", model="/models/judge")
        assert backend.engine_args["gpu_memory_utilization"] == 0.4
        assert backend.engine_args["max_model_len"] == 4096
    finally:
        del os.environ["JUDGEBENCH_GPU_FRACTION"]


# -- inputs at a URI, read through Ray Data -------------------------------------------------
@pytest.mark.slow
def test_a_file_uri_read_through_ray_data_gives_the_local_table(tmp_path: Path,
                                                                local_ray: None) -> None:
    import pandas as pd

    records = summeval_records(48)
    data = write_jsonl(tmp_path / "gen.jsonl", records)
    run_cli(*score_args(tmp_path / "local", data, *LEXICAL), check=True)
    run_cli(*score_args(tmp_path / "uri", f"file://{data}", *LEXICAL, engine="ray"),
            check=True)
    same_outputs(tmp_path / "local", tmp_path / "uri")
    parquet = tmp_path / "gen.parquet"
    pd.DataFrame(records).to_parquet(parquet)
    run_cli(*score_args(tmp_path / "pq-local", parquet, "lexical.length"), check=True)
    run_cli(*score_args(tmp_path / "pq-uri", f"file://{parquet}", "lexical.length",
                        engine="ray"), check=True)
    same_outputs(tmp_path / "pq-local", tmp_path / "pq-uri")


def test_a_bad_line_at_a_uri_is_named_as_in_a_local_file(tmp_path: Path,
                                                         local_ray: None) -> None:
    data = write_jsonl(tmp_path / "gen.jsonl", summeval_records(3))
    with data.open("a", encoding="utf-8") as handle:
        handle.write('{"item": "x", "system": \n')
    local = run_cli("score", str(data), "-m", "lexical.length", "--store",
                    str(tmp_path / "a.db"))
    uri = run_cli("score", f"file://{data}", "-m", "lexical.length", "--store",
                  str(tmp_path / "b.db"), "--engine", "ray")
    assert local.returncode == uri.returncode == 2
    assert f"{data}, line 4: malformed JSON" in local.stderr
    assert f"file://{data}, line 4: malformed JSON" in uri.stderr
    assert not (tmp_path / "b.db").exists()  # checked before any work
    plain = run_cli("score", f"file://{data}", "-m", "lexical.length", "--store",
                    str(tmp_path / "c.db"))
    assert plain.returncode == 2 and "add --engine ray" in plain.stderr
