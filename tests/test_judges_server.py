"""Judges through the litellm backend against the loopback OpenAI-compatible fault server:
protocols, G-Eval modes, pairwise orders, panels, estimates, dry runs, budgets, faults and a
server killed mid-run, and no API key anywhere."""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("litellm", reason="the [api] extra is not installed")

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.engine import runtime
from judgebench.models import Sample, Status
from judgebench.plugins import build_host

SECRET = "sk-judge-test-NEVER-STORED-0123456789"
PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "served.jsonl"
    with FaultServer("--hang", "3", "--retry-after", "0.3", log=log) as srv:
        yield srv


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JB_JUDGE_KEY", SECRET)


def judge(name: str, server: FaultServer, **options):
    opts = {"backend": "litellm", "model": "openai/judge", "api_base": server.url,
            "api_key_env": "JB_JUDGE_KEY", "timeout_s": 1.0, "max_attempts": 4, **options}
    return build_host().metric(name).build(**opts)


def summeval(n: int) -> list[Sample]:
    return [Sample(**r) for r in summeval_records(n)]


def test_rubric_json_protocol_uses_the_schema(server) -> None:
    server.post("/_reply", {"reply": '{{"feedback": "Clear and faithful.", "score": {score}}}'})
    metric = judge("judge.rubric", server, criterion="coherence")
    before = len(server.served())
    outcomes = metric.score(summeval(3))
    assert all(o.status == Status.OK for o in outcomes), [o.reason for o in outcomes]
    assert all(o.value in {1.0, 2.0, 3.0, 4.0, 5.0} for o in outcomes)
    assert outcomes[0].rationale == "Clear and faithful."
    assert all(o.tokens_in and o.tokens_out and o.latency_s for o in outcomes)
    assert all(o.cost_usd is None for o in outcomes)  # unknown model: unknown price, not 0
    assert all(entry["schema"] for entry in server.served()[before:])
    sig = str(metric.signature())
    assert "parser:rubric-json-1" in sig and "model:openai/judge" in sig
    assert "template:rubric:" in sig
    assert "JB_JUDGE_KEY" not in sig and "api_base" not in sig


def test_rubric_text_protocol_and_parse_errors_keep_the_raw_answer(server) -> None:
    server.post("/_reply", {"reply": "Feedback: fine. [RESULT] {score}"})
    ok = judge("judge.rubric", server, protocol="text").score(summeval(2))
    assert [o.status for o in ok] == [Status.OK, Status.OK]
    server.post("/_reply", {"reply": "I would say it is pretty good overall."})
    # another model: the same prompts to the same model would be answered from the cache
    bad = judge("judge.rubric", server, protocol="text", model="openai/other").score(summeval(2))
    assert all(o.status == Status.PARSE_ERROR and o.value is None for o in bad)
    assert bad[0].raw == "I would say it is pretty good overall."
    assert "no '[RESULT] <score>'" in (bad[0].reason or "")


def test_geval_logprobs_mode_is_the_weighted_mean(server) -> None:
    server.post("/_reply", {"reply": "{score}"})
    metric = judge("judge.geval", server, criterion="fluency",
                   steps="1. Read the summary.\\n2. Rate fluency.")
    outcomes = metric.score(summeval(3))
    for o in outcomes:
        assert o.status == Status.OK, o.reason
        s = int(o.raw)  # the server puts p=0.6 on its score and 0.1 on each other one
        assert o.value == pytest.approx(0.6 * s + 0.1 * (15 - s))
        assert o.extra["mode"] == "logprobs" and o.extra["score_mass"] == pytest.approx(1.0)
    sig = str(metric.signature())
    assert "mode:logprobs" in sig and "steps:given:" in sig


def test_geval_sampling_mode_without_logprobs(server) -> None:
    server.post("/_reply", {"reply": "{score}"})
    metric = judge("judge.geval", server, criterion="relevance", logprobs=False, n=5,
                   steps="1. Rate relevance.")
    # `logprobs` is a backend option; without it the judge samples n answers
    assert metric.mode == "sampling"
    outcome = metric.score(summeval(1))[0]
    assert outcome.status == Status.OK, outcome.reason
    samples = outcome.extra["samples"]
    assert len(samples) == 5 and outcome.value == pytest.approx(sum(samples) / 5)
    assert "mode:sampling-n5-t1" in str(metric.signature())


def test_geval_generates_its_steps_once(server) -> None:
    server.post("/_reply", {"reply": "{score}"})
    metric = judge("judge.geval", server, criterion="coherence")
    before = len(server.served())
    metric.score(summeval(2))
    metric.score(summeval(2))
    calls = server.served()[before:]
    assert len(calls) == 3  # steps once, then one form per sample; the rerun is cached
    assert "steps:generated:" in str(metric.signature())


def test_pairwise_both_orders_flip_and_combined_verdict(server) -> None:
    server.post("/_reply", {"reply": "Because of reasons. [[{choice}]]"})
    recs = summeval_records(8)
    pairs = [Sample(item=r["item"], input=r["input"], output_a=r["output"],
                    output_b=recs[i + 1]["output"], system_a=r["system"],
                    system_b=recs[i + 1]["system"]) for i, r in enumerate(recs[:-1])]
    outcomes = judge("judge.pairwise", server, protocol="text").score(pairs)
    flips = 0
    for o in outcomes:
        assert o.status == Status.OK, o.reason
        ab, ba = o.extra["verdict_ab"], o.extra["verdict_ba"]
        assert ab in {"a", "b", "tie"} and ba in {"a", "b", "tie"}
        assert o.extra["flip"] == (ab != ba)
        assert o.extra["winner"] == (ab if ab == ba else "tie")
        assert o.value == {"a": 1.0, "b": 0.0, "tie": 0.5}[o.extra["winner"]]
        assert o.extra["calls"] == 2
        flips += o.extra["flip"]
    assert 0 < flips < len(outcomes)  # the server's verdicts depend on the order


def test_reference_judge_binary(server) -> None:
    server.post("/_reply", {"reply": "Same answer. [[CORRECT]]"})
    sample = Sample(item="q1", system="s", input="2+2?", output="4", reference="four")
    outcome = judge("judge.reference", server, protocol="text").score([sample])[0]
    assert outcome.status == Status.OK and outcome.value == 1.0
    missing = Sample(item="q2", system="s", input="2+2?", output="4")
    assert judge("judge.reference", server, protocol="text").score([missing])[0].status == \
        Status.ERROR


def test_panel_keeps_each_member_and_combines(server, tmp_path) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    panel = build_host().metric("judge.panel").build(
        judge="judge.rubric", models="openai/judge-a;openai/judge-b;openai/judge-c",
        backend="litellm", api_base=server.url, api_key_env="JB_JUDGE_KEY", protocol="text",
        combine="majority",
    )
    for o in panel.score(summeval(3)):
        assert o.status == Status.OK
        values = [m["value"] for m in o.extra["members"]]
        assert len(values) == 3 and o.extra["answered"] == 3
        counts = {v: values.count(v) for v in values}
        top = max(counts.values())
        tied = [v for v, c in counts.items() if c == top]
        assert o.value == pytest.approx(sum(tied) / len(tied))
    mean_panel = build_host().metric("judge.panel").build(
        judge="judge.rubric", models="openai/judge-a;openai/judge-b", backend="litellm",
        api_base=server.url, api_key_env="JB_JUDGE_KEY", protocol="text", combine="mean")
    o = mean_panel.score(summeval(1))[0]
    assert o.value == pytest.approx(sum(m["value"] for m in o.extra["members"]) / 2)
    assert "members:2:" in str(mean_panel.signature())
    toml = tmp_path / "panel.toml"
    toml.write_text(
        "[metrics.jury]\nmetric = \"judge.panel\"\ncombine = \"mean\"\nmembers = [\n"
        + "".join(f'  "judge.rubric:backend=litellm,model=openai/{m},api_base={server.url},'
                  'api_key_env=JB_JUDGE_KEY,protocol=text",\n' for m in ("m1", "m2"))
        + "]\n")
    from judgebench.spec import load_config

    [spec] = load_config(toml)
    jury = build_host().metric(spec.name).build(**spec.options)
    o = jury.score(summeval(1))[0]
    assert o.status == Status.OK and len(o.extra["members"]) == 2


def test_estimate_counts_uncached_calls_and_prices(server) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    metric = judge("judge.rubric", server, protocol="text", max_tokens=50, **PRICE)
    samples = summeval(4)
    est = metric.estimate(samples)
    assert est["calls"] == 4 and est["tokens_out"] == 200 and est["tokens_in"] > 400
    assert est["cost_usd"] == pytest.approx(est["tokens_in"] * 1e-6 + 200 * 2e-6)
    metric.score(samples[:3])
    assert metric.estimate(samples)["calls"] == 1
    unknown = judge("judge.rubric", server, protocol="text", model="openai/unpriced")
    assert unknown.estimate(samples)["cost_usd"] is None


def test_dry_run_makes_no_call_and_skips(server) -> None:
    before = len(server.served())
    with runtime.running(runtime.RunSettings(dry_run=True)):
        outcomes = judge("judge.rubric", server, protocol="text").score(summeval(2))
    assert all(o.status == Status.SKIPPED for o in outcomes)
    assert len(server.served()) == before


def test_budget_stop_then_resume_spends_only_the_rest(server) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    samples = summeval(12)
    first = runtime.RunSettings(budget=runtime.Budget(limit_usd=2e-3))
    with runtime.running(first), pytest.raises(runtime.BudgetExceeded):
        judge("judge.rubric", server, protocol="text", concurrency=2, **PRICE).score(samples)
    assert 0 < first.budget.spent_usd <= 2e-3
    before = len(server.served())
    second = runtime.RunSettings(budget=runtime.Budget(limit_usd=1.0))
    with runtime.running(second):
        outcomes = judge("judge.rubric", server, protocol="text", **PRICE).score(samples)
    assert all(o.status == Status.OK for o in outcomes)
    new_calls = len(server.served()) - before
    assert new_calls < 12
    assert first.budget.spent_usd + second.budget.spent_usd == pytest.approx(
        sum(o.cost_usd for o in outcomes))  # every call charged exactly once across both runs


def test_faults_and_a_killed_server_lose_nothing(tmp_path) -> None:
    log = tmp_path / "served.jsonl"
    srv = FaultServer("--latency", "0.03", "--hang", "3", "--retry-after", "0.3", log=log,
                      reply="Feedback: ok. [RESULT] {score}").start()
    faults = ["500*2", "429*1", "timeout*1", "truncated*1", "malformed*2", "503*1"]
    records = summeval_records(40)
    samples = []
    for i, r in enumerate(records):
        output = r["output"]
        if i % 5 == 0:
            output += f" @@fault={faults[(i // 5) % len(faults)]}@@"
        samples.append(Sample(**{**r, "output": output}))
    killed: list[int] = []

    def chaos() -> None:
        deadline = time.monotonic() + 60
        while len(srv.served()) < 12 and time.monotonic() < deadline:
            time.sleep(0.01)
        srv.kill()
        killed.append(len(srv.served()))
        time.sleep(1.0)
        srv.start()

    try:
        metric = judge("judge.rubric", srv, protocol="text", concurrency=4, max_attempts=30,
                       **PRICE)
        metric.backend.inner.backoff_base_s = 0.05
        metric.backend.inner.backoff_max_s = 0.3
        settings = runtime.RunSettings()
        killer = threading.Thread(target=chaos)
        killer.start()
        with runtime.running(settings):
            outcomes = metric.score(samples)
        killer.join()
        assert killed and 12 <= killed[0] < 40
        assert all(o.status == Status.OK for o in outcomes), [o.reason for o in outcomes]
        assert settings.budget.spent_usd == pytest.approx(sum(o.cost_usd for o in outcomes))
        served = len(srv.served())
        rerun_settings = runtime.RunSettings()
        with runtime.running(rerun_settings):
            again = judge("judge.rubric", srv, protocol="text", **PRICE).score(samples)
        assert len(srv.served()) == served and rerun_settings.budget.spent_usd == 0.0
        assert [o.value for o in again] == [o.value for o in outcomes]
        assert all(o.extra["cached"] for o in again)
    finally:
        srv.stop()


def test_persistent_failures_have_status_and_reason(server) -> None:
    samples = [Sample(item="x", system=f"s{i}", input="q", output=f"a @@fault={f}*99@@")
               for i, f in enumerate(["500", "refuse", "malformed"])]
    outcomes = judge("judge.rubric", server, protocol="text", max_attempts=2).score(samples)
    assert [o.status for o in outcomes] == [Status.ERROR, Status.REFUSED, Status.ERROR]
    assert all(o.reason and o.value is None for o in outcomes)
    assert "server_error" in outcomes[0].reason and "malformed" in outcomes[2].reason


def test_cli_run_keeps_the_key_out_of_store_cache_logs_and_output(tmp_path) -> None:
    log = tmp_path / "served.jsonl"
    with FaultServer("--require-key-env", "JB_JUDGE_KEY", "--retry-after", "0.2", log=log,
                     reply="Feedback: ok. [RESULT] {score}",
                     env={"JB_JUDGE_KEY": SECRET}) as srv:
        records = summeval_records(3)
        records[1]["output"] += " @@fault=echo401*9@@"  # the server quotes the key back
        records[2]["output"] += " @@fault=429*1@@"
        data = write_jsonl(tmp_path / "in.jsonl", records)
        spec = (f"judge.rubric:backend=litellm,model=openai/judge,api_base={srv.url},"
                "api_key_env=JB_JUDGE_KEY,protocol=text,max_attempts=3")
        env = {"JB_JUDGE_KEY": SECRET, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache"),
               "LITELLM_LOG": "DEBUG"}
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                       "--store", str(tmp_path / "runs.db"), cwd=tmp_path, env=env)
        assert proc.returncode == 3, proc.stderr  # finished, with a failed score
        assert len(srv.served()) == 2
    store = sqlite3.connect(tmp_path / "runs.db")
    statuses = sorted(row[0] for row in store.execute("SELECT status FROM scores"))
    assert statuses == ["error", "ok", "ok"]
    reason = store.execute("SELECT reason FROM scores WHERE status='error'").fetchone()[0]
    assert "authentication failed" in reason
    for text, where in [(proc.stdout, "stdout"), (proc.stderr, "stderr")]:
        assert SECRET not in text, where
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "served.jsonl"]
    assert any(p.name == "judge_cache.sqlite" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path.name
    assert json.loads(log.read_text().splitlines()[0])["digest"]


def test_cli_dry_run_estimates_without_calling(server, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(5))
    spec = (f"judge.rubric:backend=litellm,model=openai/judge,api_base={server.url},"
            "api_key_env=JB_JUDGE_KEY,protocol=text,max_tokens=100,"
            "input_cost_per_token=1e-6,output_cost_per_token=2e-6")
    before = len(server.served())
    proc = run_cli("score", str(data), "-m", spec, "--dry-run", "--json",
                   "--store", str(tmp_path / "runs.db"), cwd=tmp_path,
                   env={"JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache"), "JB_JUDGE_KEY": SECRET})
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)
    assert row["calls"] == 5 and row["tokens_out"] == 500
    assert row["cost_usd"] == pytest.approx(row["tokens_in"] * 1e-6 + 500 * 2e-6)
    assert len(server.served()) == before


def test_cli_cache_option_decides_where_answers_are_kept(server, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "api_key_env=JB_JUDGE_KEY,protocol=text")
    cache = tmp_path / "answers.sqlite"
    args = ["score", str(data), "-m", spec, "--cache", str(cache), "--store"]
    env = {"JUDGEBENCH_CACHE_DIR": str(tmp_path / "elsewhere"), "JB_JUDGE_KEY": SECRET}
    first = run_cli(*args, str(tmp_path / "a.db"), cwd=tmp_path, env=env)
    assert first.returncode == 0, first.stderr
    served = len(server.served())
    assert cache.exists() and not (tmp_path / "elsewhere").exists()
    again = run_cli(*args, str(tmp_path / "b.db"), cwd=tmp_path, env=env)  # a new store
    assert again.returncode == 0, again.stderr
    assert len(server.served()) == served, "a rerun with the same cache called the model"


def test_cli_budget_stop_keeps_every_finished_answer_in_the_store(server, tmp_path) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(12))
    spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "api_key_env=JB_JUDGE_KEY,protocol=text,concurrency=2,"
            "input_cost_per_token=1e-6,output_cost_per_token=2e-6")
    store = tmp_path / "runs.db"
    args = ["score", str(data), "-m", spec, "--store", str(store), "--resume",
            "--cache", str(tmp_path / "cache.sqlite")]
    env = {"JB_JUDGE_KEY": SECRET}
    before = len(server.served())
    stopped = run_cli(*args, "--budget-usd", "0.004", cwd=tmp_path, env=env)
    assert stopped.returncode == 1 and "budget" in stopped.stderr
    paid = len(server.served()) - before
    assert 0 < paid < 12
    kept = sqlite3.connect(store).execute(
        "SELECT COUNT(*) FROM scores WHERE status = 'ok'").fetchone()[0]
    assert kept == paid, "answers paid for before the budget stop must be in the store"
    finished = run_cli(*args, "--budget-usd", "1", cwd=tmp_path, env=env)
    assert finished.returncode == 0, finished.stderr
    assert len(server.served()) - before == 12, "every sample was paid for exactly once"
    assert f"computed {12 - kept}, reused {kept}" in finished.stderr
