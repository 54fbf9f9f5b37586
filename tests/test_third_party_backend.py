"""A backend from an installed third-party distribution (tests/distributions/
judgebench-echo-backend) works exactly like a built-in: registered through the entry point,
it gets retries, Retry-After, timeouts, the budget and dry run from the host's remote-call
engine, and a judge runs through it with its concurrency and timeout forwarded."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import summeval_records
from fault_server import FaultServer
from installed import install, on_path

from judgebench.backends import Request, backend_accepts, get_backend
from judgebench.backends.remote import RemoteBackend
from judgebench.engine import runtime
from judgebench.errors import InputError
from judgebench.models import Sample, Status
from judgebench.plugins import build_host

PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return install("judgebench-echo-backend", tmp_path_factory.mktemp("site"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "served.jsonl"
    with FaultServer("--retry-after", "0.6", "--hang", "3", log=log) as srv:
        yield srv


@pytest.fixture
def echo_host(site, monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with on_path(site):
        yield build_host()


def echo(server: FaultServer, **options) -> RemoteBackend:
    opts = {"model": "judge", "api_base": server.url, "timeout_s": 1.0, "max_attempts": 4,
            "backoff_base_s": 0.05, "backoff_max_s": 0.2, **options}
    backend = get_backend("echo", **opts)
    assert isinstance(backend, RemoteBackend) and type(backend).__name__ == "EchoBackend"
    return backend


def ask(text: str) -> Request:
    return Request.chat(("user", text), max_tokens=16)


def test_it_registers_through_the_entry_point_like_the_built_ins(echo_host) -> None:
    entry = echo_host.backends()["echo"]
    assert entry.plugin == "echo"
    assert {"litellm", "openai_compat", "vllm", "transformers"} <= set(echo_host.backends())
    accepts = backend_accepts("echo")
    assert {"concurrency", "timeout_s", "max_attempts", "rpm", "price_in"} <= accepts.names
    assert accepts.required == {"model"}


def test_a_429_then_an_answer_waits_for_retry_after(echo_host, server) -> None:
    before = len(server.served())
    backend = echo(server)
    started = time.monotonic()
    r = backend.generate([ask("third party @@fault=429*1@@")])[0]
    assert r.ok, r.error
    assert "[RESULT]" in r.text and r.tokens_in and r.tokens_out
    assert time.monotonic() - started >= 0.55  # the server's Retry-After, not the 0.2 s backoff
    assert backend.calls == 2 and len(server.served()) == before + 1


def test_persistent_faults_and_timeouts_end_after_max_attempts(echo_host, server) -> None:
    backend = echo(server, max_attempts=2, max_retry_after_s=0.1)
    failed, slow = backend.generate([ask("third party down @@fault=500*9@@"),
                                     ask("third party slow @@fault=timeout*9@@")])
    assert failed.error is not None and failed.error.kind == "server_error"
    assert failed.error.attempts == 2
    assert slow.error is not None and slow.error.kind == "timeout" and slow.error.attempts == 2
    assert backend.calls == 4


def test_the_budget_and_dry_run_apply(echo_host, server) -> None:
    settings = runtime.RunSettings(budget=runtime.Budget(limit_usd=1.5e-4))
    with runtime.running(settings), pytest.raises(runtime.BudgetExceeded):
        echo(server, concurrency=1, **PRICE).generate([ask(f"spend {i}") for i in range(20)])
    assert 0 < settings.budget.spent_usd <= 1.5e-4
    unknown = runtime.RunSettings(budget=runtime.Budget(limit_usd=1.0))
    with runtime.running(unknown), pytest.raises(runtime.BudgetExceeded):
        echo(server).generate([ask("no price")])  # unknown price under a limit: refused
    before = len(server.served())
    dry = echo(server)
    with runtime.running(runtime.RunSettings(dry_run=True)):
        r = dry.generate([ask("dry")])[0]
    assert r.error is not None and r.error.kind == "dry_run"
    assert dry.calls == 0 and len(server.served()) == before


def test_a_judge_runs_through_it_with_its_options_forwarded(echo_host, server) -> None:
    server.post("/_reply", {"reply": "Feedback: fine. [RESULT] {score}"})
    metric = echo_host.metric("judge.rubric").build(
        backend="echo", model="judge", api_base=server.url, protocol="text", concurrency=3,
        timeout_s=2.5, max_attempts=3, **PRICE)
    inner = metric.backend.inner
    assert isinstance(inner, RemoteBackend)
    assert (inner.concurrency, inner.timeout_s, inner.max_attempts) == (3, 2.5, 3)
    assert inner.price() == (1e-6, 2e-6)
    with runtime.running(runtime.RunSettings()):
        outcomes = metric.score([Sample(**r) for r in summeval_records(3)])
    assert all(o.status == Status.OK for o in outcomes), [o.reason for o in outcomes]
    assert all(o.value in {1.0, 2.0, 3.0, 4.0, 5.0} and o.cost_usd for o in outcomes)
    sig = str(metric.signature())
    assert "model:judge" in sig and "concurrency" not in sig and "api_base" not in sig


def test_an_option_it_cannot_take_names_the_metric_option_and_backend(echo_host, server) -> None:
    metric = echo_host.metric("judge.rubric").build(
        backend="echo", model="judge", api_base=server.url, batch=4)
    with pytest.raises(InputError, match=r"metric judge.rubric: backend 'echo' does not take "
                                         r"the option batch="):
        metric.backend_options()
    with pytest.raises(InputError, match=r"backend 'echo': .*unexpected keyword.*nonsense"):
        get_backend("echo", model="judge", api_base=server.url, nonsense=1)
