"""The judge cache's key names the endpoint: two OpenAI-compatible servers serving the same
model name answer differently, and each run gets its own server's answers (never the other's
from the cache); the same server asked twice answers once (the server's log counts calls).
The key carries no secret: not the key variable's value, not the variable's name."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.backends.base import Request
from judgebench.plugins import build_host

SECRET = "sk-endpoint-test-NEVER-HASHED-0123456789"
ROWS = 6


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("servers")
    reply = "Feedback: fine. [RESULT] {score}"
    with FaultServer("--score-salt", "A", log=root / "a.jsonl", reply=reply) as a, \
            FaultServer("--score-salt", "B", log=root / "b.jsonl", reply=reply) as b:
        yield a, b


def spec(server: FaultServer) -> str:
    return (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "protocol=text,criterion=coherence,api_key_env=JB_ENDPOINT_KEY")


def score(tmp: Path, data: Path, server: FaultServer, cache: Path, name: str) -> list[float]:
    out = tmp / f"{name}.csv"
    run_cli("score", str(data), "-m", spec(server), "-o", str(out), "--no-progress",
            "--cache", str(cache), env={"JB_ENDPOINT_KEY": SECRET}, check=True)
    frame = pd.read_csv(out)
    column = next(c for c in frame.columns if c.startswith("judge.rubric"))
    return [float(v) for v in frame[column]]


def answered(server: FaultServer) -> list[float]:
    """The scores the server itself sent, in the order asked (its own log)."""
    return [float(e["reply"].rsplit(" ", 1)[1]) for e in server.served()]


def test_each_server_answers_its_own_run_and_a_rerun_is_cached(servers, tmp_path,
                                                               monkeypatch) -> None:
    a, b = servers
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "jbcache"))
    data = write_jsonl(tmp_path / "data.jsonl", summeval_records(ROWS))
    cache = tmp_path / "cache.sqlite"

    from_a = score(tmp_path, data, a, cache, "a")
    calls_a = len(a.served())
    assert calls_a == ROWS
    from_b = score(tmp_path, data, b, cache, "b")
    assert len(b.served()) == ROWS, "server B was answered from server A's cached answers"
    assert len(a.served()) == calls_a
    assert from_a != from_b  # the salts make the two servers disagree on these rows
    assert sorted(from_a) == sorted(answered(a)) and sorted(from_b) == sorted(answered(b))

    again_a = score(tmp_path, data, a, cache, "a2")
    again_b = score(tmp_path, data, b, cache, "b2")
    assert (again_a, again_b) == (from_a, from_b)
    assert (len(a.served()), len(b.served())) == (ROWS, ROWS)  # both reruns: cache only

    with sqlite3.connect(cache) as conn:
        rows = conn.execute("SELECT key, request, response FROM responses").fetchall()
    assert len(rows) == 2 * ROWS
    assert not any(SECRET in "".join(row) for row in rows)


def test_the_key_names_the_endpoint_never_the_key(servers, monkeypatch) -> None:
    a, b = servers
    monkeypatch.setenv("JB_ENDPOINT_KEY", SECRET)
    monkeypatch.setenv("JB_OTHER_KEY", SECRET + "-other")
    host = build_host()
    request = Request(messages=({"role": "user", "content": "hello"},), max_tokens=8)

    def key(server: FaultServer, **options: str) -> str:
        backend = host.backend("openai_compat", model="judge", api_base=server.url,
                                  tokenize=False, **options)
        identity = backend.cache_identity()
        assert SECRET not in str(identity) and "JB_" not in str(identity)
        return request.content_hash(identity)

    assert key(a) != key(b)
    assert key(a) == key(a, api_key_env="JB_ENDPOINT_KEY") == key(a, api_key_env="JB_OTHER_KEY")
    # the same endpoint written with a trailing slash is the same server
    assert key(a) == request.content_hash(
        host.backend("openai_compat", model="judge", api_base=a.url + "/",
                     tokenize=False).cache_identity())
    assert key(a) != key(a, structured="none")  # an answer not held to the schema
