"""The litellm and openai_compat backends against a real OpenAI-compatible server on
loopback with faults."""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("litellm", reason="the [api] extra is not installed")

sys.path.insert(0, str(Path(__file__).parent))
from fault_server import FaultServer
from judgebench_backends.litellm_backend import LiteLLMBackend
from judgebench_backends.openai_compat import OpenAICompatBackend

from judgebench.backends import Request, get_backend
from judgebench.backends.remote import RateLimiter, RemoteBackend
from judgebench.engine import runtime
from judgebench.engine.judge_cache import CachedBackend, JudgeCache

SECRET = "sk-test-DO-NOT-LEAK-9f8e7d6c5b4a"
PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "served.jsonl"
    with FaultServer("--hang", "3", "--retry-after", "1", "--require-key-env", "JB_TEST_KEY",
                     log=log, env={"JB_TEST_KEY": SECRET}) as srv:
        yield srv


@pytest.fixture(autouse=True)
def key_env(monkeypatch):
    monkeypatch.setenv("JB_TEST_KEY", SECRET)


BACKENDS = ["litellm", "openai_compat"]
CLASSES = {"litellm": LiteLLMBackend, "openai_compat": OpenAICompatBackend}


def backend(server: FaultServer, name: str = "litellm", **options) -> RemoteBackend:
    opts = {"model": "openai/judge", "api_base": server.url, "api_key_env": "JB_TEST_KEY",
            "timeout_s": 1.0, "max_attempts": 4, "backoff_base_s": 0.05, "backoff_max_s": 0.2,
            **options}
    b = get_backend(name, **opts)
    assert isinstance(b, CLASSES[name]) and isinstance(b, RemoteBackend)
    return b


def ask(text: str, **params) -> Request:
    return Request.chat(("user", text), max_tokens=16, **params)


@pytest.mark.parametrize("name", BACKENDS)
def test_answers_with_text_tokens_logprobs_and_price(server, name) -> None:
    b = backend(server, name, **PRICE)
    r = b.generate([ask("hello", logprobs=True, top_logprobs=3)])[0]
    assert r.ok and "[RESULT]" in r.text and r.finish_reason == "stop"
    assert r.tokens_in and r.tokens_out
    assert r.cost_usd == pytest.approx(r.tokens_in * 1e-6 + r.tokens_out * 2e-6)
    assert r.logprobs and r.logprobs[0].top and r.latency_s > 0
    digit = next(t for t in r.logprobs if t.token.isdigit())
    assert {tok for tok, _ in digit.top} <= {"1", "2", "3", "4", "5"}


def test_unknown_price_is_none_and_counted_as_unknown(server) -> None:
    settings = runtime.RunSettings()
    with runtime.running(settings):
        r = backend(server).generate([ask("price?")])[0]
    assert r.ok and r.cost_usd is None
    assert settings.budget.unknown_cost_calls == 1 and settings.budget.spent_usd == 0.0


def test_price_table_is_used_for_known_models(server) -> None:
    b = backend(server, model="openai/gpt-4o-mini")
    assert b.price() is not None and b.price()[0] > 0
    r = b.generate([ask("known model")])[0]
    assert r.ok and r.cost_usd is not None and r.cost_usd > 0


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("fault", ["429", "500", "503", "timeout", "truncated", "malformed",
                                   "nochoices"])
def test_transient_faults_are_retried_until_the_answer_comes(server, fault, name) -> None:
    r = backend(server, name).generate([ask(f"transient @@fault={fault}*2@@")])[0]
    assert r.ok, r.error
    assert "[RESULT]" in r.text


@pytest.mark.parametrize(("fault", "kind"), [("500", "server_error"), ("malformed", "malformed"),
                                             ("truncated", "malformed"), ("timeout", "timeout"),
                                             ("429", "rate_limited")])
@pytest.mark.parametrize("name", BACKENDS)
def test_persistent_faults_end_in_a_failure_with_kind_and_reason(server, fault, kind,
                                                                 name) -> None:
    started = time.monotonic()
    r = backend(server, name, max_attempts=2, max_retry_after_s=0.2).generate(
        [ask(f"persistent {kind} @@fault={fault}*9@@")]
    )[0]
    assert r.error is not None and r.error.kind == kind and r.error.attempts == 2
    assert r.error.message and r.text == ""
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("name", BACKENDS)
def test_retry_after_is_honoured(server, name) -> None:
    started = time.monotonic()
    r = backend(server, name).generate([ask(f"wait for me {name} @@fault=429*1@@")])[0]
    assert r.ok and time.monotonic() - started >= 0.95


@pytest.mark.parametrize("name", BACKENDS)
def test_refusals_and_bad_requests_are_not_retried(server, name) -> None:
    b = backend(server, name)
    refused, unauthorised = b.generate([ask("refuse @@fault=refuse*9@@"),
                                        ask("echo @@fault=echo401*9@@")])
    assert refused.error is not None and refused.error.kind == "refused"
    assert unauthorised.error is not None and unauthorised.error.kind == "bad_request"
    assert refused.error.attempts == 1 and unauthorised.error.attempts == 1


@pytest.mark.parametrize("name", BACKENDS)
def test_dry_run_makes_no_call(server, name) -> None:
    before = len(server.served())
    with runtime.running(runtime.RunSettings(dry_run=True)):
        r = backend(server, name).generate([ask("dry")])[0]
    assert r.error is not None and r.error.kind == "dry_run"
    assert len(server.served()) == before


@pytest.mark.parametrize("name", BACKENDS)
def test_budget_stops_before_spending_more_and_keeps_finished_calls(server, tmp_path, name) -> None:
    # Each call is estimated at <= (chars/4 + 4) * 1e-6 + 16 * 2e-6 ~ 4.5e-5 USD.
    settings = runtime.RunSettings(budget=runtime.Budget(limit_usd=2e-4))
    cache = JudgeCache(tmp_path / "c.sqlite")
    b = CachedBackend(backend(server, name, concurrency=1, **PRICE), cache)
    with runtime.running(settings), pytest.raises(runtime.BudgetExceeded):
        b.generate([ask(f"budget {i}") for i in range(20)])
    assert 0 < len(cache) < 20
    assert settings.budget.spent_usd <= 2e-4
    # every finished call was charged exactly once, and is in the cache
    rows = cache._db.execute("SELECT SUM(cost_usd) FROM responses").fetchone()[0]
    assert settings.budget.spent_usd == pytest.approx(rows)


def test_rate_limiter_spaces_tokens() -> None:
    import asyncio

    limiter = RateLimiter(rpm=None, tpm=6000)  # 100 tokens a second, bucket of 6000

    async def go() -> float:
        await limiter.acquire(6000)
        started = time.monotonic()
        await limiter.acquire(50)
        return time.monotonic() - started

    assert 0.4 <= asyncio.run(go()) < 1.5


@pytest.mark.parametrize("name", BACKENDS)
def test_server_killed_mid_run_loses_nothing_and_charges_once(tmp_path, name) -> None:
    log = tmp_path / "served.jsonl"
    srv = FaultServer("--latency", "0.05", log=log).start()
    try:
        settings = runtime.RunSettings()
        cache = JudgeCache(tmp_path / "c.sqlite")
        b = CachedBackend(backend(srv, name, concurrency=4, max_attempts=30,
                                  backoff_base_s=0.1, backoff_max_s=0.3, **PRICE), cache)
        reqs = [ask(f"kill test {i}") for i in range(60)]

        killed = []

        def chaos() -> None:
            deadline = time.monotonic() + 30
            while len(srv.served()) < 15 and time.monotonic() < deadline:
                time.sleep(0.01)
            srv.kill()
            killed.append(len(srv.served()))
            time.sleep(1.0)
            srv.start()

        killer = threading.Thread(target=chaos)
        killer.start()
        with runtime.running(settings):
            out = b.generate(reqs)
        killer.join()
        assert killed and 15 <= killed[0] < 60  # the server died mid-run
        assert all(r.ok for r in out), [str(r.error) for r in out if not r.ok]
        assert len(cache) == 60
        assert settings.budget.spent_usd == pytest.approx(sum(r.cost_usd for r in out))
        served = len(srv.served())
        again = runtime.RunSettings()
        with runtime.running(again):
            rerun = CachedBackend(backend(srv, name, **PRICE), cache).generate(reqs)
        assert all(r.cached for r in rerun) and [r.text for r in rerun] == [r.text for r in out]
        assert len(srv.served()) == served and again.budget.spent_usd == 0.0
    finally:
        srv.stop()


@pytest.mark.parametrize("name", BACKENDS)
def test_no_api_key_in_cache_logs_or_errors(server, tmp_path, caplog, capsys, name) -> None:
    caplog.set_level(logging.DEBUG)
    cache_path = tmp_path / "c.sqlite"
    b = CachedBackend(backend(server, name, max_attempts=2), JudgeCache(cache_path))
    out = b.generate([ask("secret ok"), ask("secret 401 @@fault=echo401*9@@"),
                      ask("secret 500 @@fault=500*9@@"), ask("secret 429 @@fault=429*1@@")])
    assert out[0].ok and out[3].ok
    errors = " ".join(str(r.error) for r in out if r.error)
    assert "authentication failed" in errors
    captured = capsys.readouterr()
    texts = {
        "errors": errors,
        "logs": caplog.text,
        "stdout": captured.out,
        "stderr": captured.err,
        "identity": repr(b.identity()),
    }
    for where, text in texts.items():
        assert SECRET not in text, where
    for file in tmp_path.iterdir():
        assert SECRET.encode() not in file.read_bytes(), file.name
