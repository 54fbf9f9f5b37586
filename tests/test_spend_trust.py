"""Spending and trust through `judgebench score` against the loopback OpenAI-compatible server:
a budget never fails open (bad limits and unknown prices are refused before any request), a
key the server quotes back inside a successful answer is stored, cached and printed nowhere,
and a refusal is one paid, cached answer for every backend."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

pytest.importorskip("litellm", reason="the [api] extra is not installed")

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.backends import get_backend
from judgebench.engine import runtime
from judgebench.errors import InputError
from judgebench.plugins import build_host
from judgebench.redact import redact

#: Read through api_key_env only: the variable's name does not look like a key, nor does the
#: value, so only "the secrets in use" can catch it.
KEY_ENV = "JB_SPEND_ACCESS"
SECRET = "jbAccess7Hq2Lx9Wm4Rt8Yp3Zc6"
BACKEND_MODEL = {"litellm": "openai/judge", "openai_compat": "judge"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "served.jsonl"
    with FaultServer("--retry-after", "0.2", log=log) as srv:
        yield srv


def spec(server: FaultServer, backend: str = "openai_compat", judge: str = "judge.rubric",
         **options: str) -> str:
    opts = {"backend": backend, "model": BACKEND_MODEL[backend], "api_base": server.url,
            "api_key_env": KEY_ENV, "timeout_s": "2", "max_attempts": "3", **options}
    return f"{judge}:" + ",".join(f"{k}={v}" for k, v in opts.items())


def score(tmp_path: Path, data: Path, metric: str, *extra: str, store: str = "runs.db",
          cache: str = "cache.sqlite"):
    return run_cli("score", str(data), "-m", metric, "--store", str(tmp_path / store),
                   "--cache", str(tmp_path / cache), *extra, cwd=tmp_path,
                   env={KEY_ENV: SECRET, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "default")})


def summaries(tmp_path: Path, n: int) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", summeval_records(n))


def store_rows(path: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql).fetchall()


# -- 4. the budget fails closed -------------------------------------------------------------
@pytest.mark.parametrize("limit", ["nan", "inf", "-1", "-inf"])
def test_a_budget_that_is_not_a_finite_amount_at_least_zero_is_bad_usage(server, tmp_path,
                                                                        limit) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    before = len(server.served())
    done = score(tmp_path, summaries(tmp_path, 3), spec(server, protocol="text"),
                 "--budget-usd", limit, "-o", str(tmp_path / "t.csv"))
    assert done.returncode == 2, done.stderr
    assert "--budget-usd" in done.stderr and "finite" in done.stderr
    assert len(server.served()) == before, "a bad budget must be refused before any request"
    assert not (tmp_path / "t.csv").exists()


def test_a_budget_is_checked_in_the_api_too() -> None:
    for bad in (float("nan"), float("inf"), -0.01):
        with pytest.raises(InputError, match="--budget-usd"):
            runtime.Budget(limit_usd=bad)
    assert runtime.Budget(limit_usd=0.0).limit_usd == 0.0


@pytest.mark.parametrize("backend", ["litellm", "openai_compat"])
def test_a_budget_over_calls_of_unknown_price_refuses_to_start(server, tmp_path,
                                                               backend) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    metric = spec(server, backend, protocol="text")
    before = len(server.served())
    done = score(tmp_path, summaries(tmp_path, 8), metric, "--budget-usd", "0.0001",
                 "-o", str(tmp_path / "t.csv"))
    assert done.returncode == 2, done.stderr
    assert len(server.served()) == before, "no request may be sent before the price is known"
    assert f"column '{column(metric)}'" in done.stderr
    assert "price_in" in done.stderr and "price_out" in done.stderr
    assert "--allow-unknown-cost" in done.stderr
    if (tmp_path / "runs.db").exists():
        assert not store_rows(tmp_path / "runs.db", "SELECT * FROM scores")


def test_with_prices_the_budget_stops_spending(server, tmp_path) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    limit = 0.003  # USD; a call here costs about 0.6 ms of a cent at these prices
    metric = spec(server, protocol="text", concurrency="1", price_in="1", price_out="2")
    before = len(server.served())
    done = score(tmp_path, summaries(tmp_path, 12), metric, "--budget-usd", str(limit),
                 "-o", str(tmp_path / "t.csv"))
    assert done.returncode == 1 and "budget" in done.stderr, done.stderr
    paid = len(server.served()) - before
    assert 0 < paid < 12
    ((spent, calls),) = store_rows(tmp_path / "runs.db",
                                   "SELECT SUM(cost_usd), COUNT(*) FROM scores")
    assert calls == paid and 0 < spent <= limit
    # price_in/price_out are USD per million tokens: a call is tokens_in * 1e-6 + out * 2e-6
    rows = store_rows(tmp_path / "runs.db", "SELECT tokens_in, tokens_out, cost_usd FROM scores")
    assert all(cost == pytest.approx(t_in * 1e-6 + t_out * 2e-6) for t_in, t_out, cost in rows)


def test_allow_unknown_cost_runs_with_a_warning(server, tmp_path) -> None:
    server.post("/_reply", {"reply": "Feedback: ok. [RESULT] {score}"})
    metric = spec(server, protocol="text")
    before = len(server.served())
    done = score(tmp_path, summaries(tmp_path, 6), metric, "--budget-usd", "0.0001",
                 "--allow-unknown-cost", "-o", str(tmp_path / "t.csv"))
    assert done.returncode == 0, done.stderr
    assert len(server.served()) - before == 6
    assert "warning" in done.stderr and f"column '{column(metric)}'" in done.stderr
    assert "unknown price" in done.stderr


def test_a_judge_called_directly_under_a_budget_refuses_an_unknown_price(server,
                                                                         monkeypatch) -> None:
    from judgebench.models import Sample

    monkeypatch.setenv(KEY_ENV, SECRET)
    judge = build_host().metric("judge.rubric").build(
        backend="openai_compat", model="judge", api_base=server.url, api_key_env=KEY_ENV,
        protocol="text", cache=False)
    before = len(server.served())
    settings = runtime.RunSettings(budget=runtime.Budget(limit_usd=1.0))
    sample = Sample(**summeval_records(1)[0])
    with runtime.running(settings), pytest.raises(runtime.BudgetExceeded, match="unknown"):
        judge.score([sample])
    assert len(server.served()) == before
    judge.close()


@pytest.mark.parametrize("option", ["price_in=-1", "price_out=nan", "input_cost_per_token=-1"])
def test_a_price_that_is_not_a_finite_amount_at_least_zero_is_bad_usage(server, tmp_path,
                                                                       option) -> None:
    done = score(tmp_path, summaries(tmp_path, 2), spec(server, protocol="text") + "," + option)
    assert done.returncode == 2, done.stderr
    assert f"option '{option.split('=')[0]}'" in done.stderr
    assert "greater than or equal to 0" in done.stderr or "finite number" in done.stderr


def test_prices_are_given_once() -> None:
    with pytest.raises(InputError, match="once"):
        get_backend("openai_compat", model="judge", api_base="http://127.0.0.1:9/v1",
                    price_in=1.0, input_cost_per_token=1e-6)


# -- 5. a key quoted back inside a successful answer -------------------------------------
PAIRWISE = "Having read both, {key} prefers one. [[{choice}]]"
SETUPS = {
    "litellm-rubric-json": ("litellm", "judge.rubric", {},
                            '{{"feedback": "Good; my key is {key}.", "score": {score}}}'),
    "openai_compat-rubric-text": ("openai_compat", "judge.rubric", {"protocol": "text"},
                                  "Feedback: signed {key}. [RESULT] {score}"),
    "litellm-geval-generated-steps": ("litellm", "judge.geval", {}, "{score} (key {key})"),
    "openai_compat-pairwise": ("openai_compat", "judge.pairwise", {"protocol": "text"},
                               PAIRWISE),
    "litellm-reference": ("litellm", "judge.reference", {"protocol": "text"},
                          "Bearer {key} says [[CORRECT]]"),
}


@pytest.mark.parametrize("setup", list(SETUPS))
def test_a_key_quoted_back_in_an_answer_is_stored_cached_and_printed_nowhere(
        server, tmp_path, setup) -> None:
    backend, judge, options, reply = SETUPS[setup]
    server.post("/_reply", {"reply": reply})
    records = summeval_records(4)
    if judge == "judge.pairwise":
        records = [{"item": r["item"], "input": r["input"], "output_a": r["output"],
                    "output_b": records[(i + 1) % 4]["output"], "system_a": r["system"],
                    "system_b": records[(i + 1) % 4]["system"]} for i, r in enumerate(records)]
    if judge == "judge.reference":
        records = [{**r, "reference": r["reference"][0] if isinstance(r["reference"], list)
                    else r["reference"]} for r in records]
    data = write_jsonl(tmp_path / "in.jsonl", records)
    metric = spec(server, backend, judge, **options)
    done = score(tmp_path, data, metric, "-o", str(tmp_path / "t.csv"), "--json")
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout and SECRET not in done.stderr
    raws = store_rows(tmp_path / "runs.db", "SELECT status, raw FROM scores")
    assert raws and all(status == "ok" for status, _ in raws), (raws, done.stderr)
    assert all("[REDACTED]" in raw for _, raw in raws), "the server did not quote the key"
    with sqlite3.connect(tmp_path / "runs.db") as conn:
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            for row in conn.execute(f"SELECT * FROM {table}"):
                assert SECRET not in json.dumps(row, default=str), (table, row)
    with sqlite3.connect(tmp_path / "cache.sqlite") as conn:
        cached = conn.execute("SELECT request, response FROM responses").fetchall()
    assert cached and all(SECRET not in request + response for request, response in cached)
    for path in tmp_path.rglob("*"):  # store, cache, their journals, the table, its sidecar
        if path.is_file() and path.name != "in.jsonl":
            assert SECRET.encode() not in path.read_bytes(), path
    # a rerun answered from the cache is as clean
    again = score(tmp_path, data, metric, "-o", str(tmp_path / "t2.csv"), store="b.db")
    assert again.returncode == 0 and SECRET not in again.stdout + again.stderr
    assert all(SECRET not in str(raw) for (raw,) in
               store_rows(tmp_path / "b.db", "SELECT raw FROM scores"))


@pytest.mark.parametrize("backend", ["litellm", "openai_compat"])
@pytest.mark.parametrize("where", ["userinfo", "query"])
def test_a_key_inside_api_base_is_refused_before_any_work(server, tmp_path, backend,
                                                          where) -> None:
    """A spec is a column's name: in the table's header, the sidecar, the store. A key in
    api_base would be in all of them, so it is refused, pointing to api_key_env."""
    host = server.url.removeprefix("http://")
    api_base = {"userinfo": f"http://judge:{SECRET}@{host}",
                "query": f"{server.url}?api_key={SECRET}"}[where]
    metric = spec(server, backend, protocol="text", api_base=api_base).replace(
        f"api_key_env={KEY_ENV},", "")
    before = len(server.served())
    done = score(tmp_path, summaries(tmp_path, 3), metric, "-o", str(tmp_path / "t.csv"))
    assert done.returncode == 2, done.stderr
    assert "api_base carries a credential" in done.stderr and "api_key_env" in done.stderr
    assert done.stderr.count("\n") == 1  # one line
    assert SECRET not in done.stdout + done.stderr
    assert len(server.served()) == before
    assert {p.name for p in tmp_path.iterdir()} <= {"in.jsonl", "default"}


def test_one_scrubber_knows_the_keys_in_use_and_the_shapes_of_keys(monkeypatch) -> None:
    from judgebench.redact import register_secret_env

    monkeypatch.setenv("JB_SCRUB_PLAIN", "plainvalue12345")
    assert redact("x plainvalue12345 y") == "x plainvalue12345 y"  # not named as a secret
    register_secret_env("JB_SCRUB_PLAIN")
    assert redact("x plainvalue12345 y") == "x [REDACTED] y"
    monkeypatch.setenv("SOME_PROVIDER_API_KEY", "zz-provider-000111222")
    assert redact("k=zz-provider-000111222") == "k=[REDACTED]"
    assert redact("Authorization: Bearer abcDEF123456789xyz") == "Authorization: Bearer [REDACTED]"
    assert redact("use sk-proj-AbCdEf0123456789xyz now") == "use [REDACTED] now"
    prose = "The bearer of key-points, risk-free and sk-ills is fine."
    assert redact(prose) == prose


# -- 9. a refusal is one paid, cached answer, for every backend -----------------------------
FINISHED = (0, 3)  # 3: finished with failed (here refused) scores


@pytest.mark.parametrize("backend", ["litellm", "openai_compat"])
def test_a_refusal_is_refused_once_and_never_paid_again(server, tmp_path, backend) -> None:
    server.post("/_reply", {"reply": '{{"feedback": "ok", "score": {score}}}'})
    n = 4
    data = summaries(tmp_path, n)
    metric = spec(server, backend)  # json protocol: one call per sample
    server.post("/_faults", {"next": ["refusal"] * n})
    before = len(server.served())
    first = score(tmp_path, data, metric, "-o", str(tmp_path / "t.csv"), "--resume")
    assert first.returncode in FINISHED, first.stderr
    assert len(server.served()) - before == n, "a refusal was retried"
    rows = store_rows(tmp_path / "runs.db", "SELECT status, reason FROM scores")
    assert len(rows) == n and all(status == "refused" for status, _ in rows), rows
    assert all("I'm sorry" in reason for _, reason in rows)
    resumed = score(tmp_path, data, metric, "-o", str(tmp_path / "t.csv"), "--resume")
    assert resumed.returncode in FINISHED, resumed.stderr
    assert len(server.served()) - before == n, "--resume paid for a refusal again"
    fresh = score(tmp_path, data, metric, "-o", str(tmp_path / "t3.csv"), store="other.db")
    assert fresh.returncode in FINISHED, fresh.stderr
    assert len(server.served()) - before == n, "a refusal was not cached"
    assert all(status == "refused" for (status,) in
               store_rows(tmp_path / "other.db", "SELECT status FROM scores"))
