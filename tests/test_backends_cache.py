"""The judge cache: content-hash keys, no cached errors, in-flight sharing, nothing lost."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence

import pytest

from judgebench.backends import Backend, Request, Response
from judgebench.engine.judge_cache import CachedBackend, JudgeCache


class Counting(Backend):
    """Answers with the reversed prompt after a short sleep; fails prompts starting with '!'."""

    name = "counting"

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__("count-model", "r1")
        self.sent: list[str] = []
        self.fail_after = fail_after

    async def aiter_generate(
        self, requests: Sequence[Request]
    ) -> AsyncIterator[tuple[int, Response]]:
        for i, req in enumerate(requests):
            if self.fail_after is not None and len(self.sent) >= self.fail_after:
                raise RuntimeError("killed")
            await asyncio.sleep(0.01)
            self.sent.append(req.prompt or "")
            if (req.prompt or "").startswith("!"):
                yield i, Response.failed("server_error", "HTTP 500")
            else:
                yield i, Response(text=(req.prompt or "")[::-1], tokens_in=3, tokens_out=3,
                                  cost_usd=0.001, latency_s=0.01)


def reqs(*prompts: str) -> list[Request]:
    return [Request(prompt=p, max_tokens=4) for p in prompts]


def test_rerun_is_answered_from_the_cache(tmp_path) -> None:
    path = tmp_path / "cache.sqlite"
    first = CachedBackend(Counting(), JudgeCache(path))
    out = first.generate(reqs("ab", "cd"))
    assert [r.text for r in out] == ["ba", "dc"] and not any(r.cached for r in out)
    inner = Counting()
    again = CachedBackend(inner, JudgeCache(path)).generate(reqs("ab", "cd"))
    assert inner.sent == []
    assert [r.text for r in again] == ["ba", "dc"] and all(r.cached for r in again)
    assert again[0].cost_usd == 0.001  # what the original call cost, kept for the record


def test_errors_are_never_cached(tmp_path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite")
    out = CachedBackend(Counting(), cache).generate(reqs("ok", "!bad"))
    assert out[0].ok and out[1].error is not None and out[1].error.kind == "server_error"
    assert len(cache) == 1
    inner = Counting()
    CachedBackend(inner, cache).generate(reqs("ok", "!bad"))
    assert inner.sent == ["!bad"]


def test_identical_requests_are_sent_once_in_a_batch_and_across_batches(tmp_path) -> None:
    inner = Counting()
    backend = CachedBackend(inner, JudgeCache(tmp_path / "c.sqlite"))

    async def two_batches() -> tuple[list[Response], list[Response]]:
        return await asyncio.gather(
            backend.agenerate(reqs("x", "y", "x")), backend.agenerate(reqs("y", "x", "z"))
        )

    a, b = asyncio.run(two_batches())
    assert sorted(inner.sent) == ["x", "y", "z"]
    assert [r.text for r in a] == ["x", "y", "x"] and [r.text for r in b] == ["y", "x", "z"]


def test_sample_index_and_decoding_params_are_part_of_the_key(tmp_path) -> None:
    inner = Counting()
    backend = CachedBackend(inner, JudgeCache(tmp_path / "c.sqlite"))
    base = Request(prompt="p", max_tokens=4)
    backend.generate([base, base.with_sample(1), Request(prompt="p", max_tokens=5)])
    assert len(inner.sent) == 3


def test_a_run_killed_half_way_keeps_what_it_finished(tmp_path) -> None:
    cache = JudgeCache(tmp_path / "c.sqlite")
    with pytest.raises(RuntimeError, match="killed"):
        CachedBackend(Counting(fail_after=2), cache).generate(reqs("a", "b", "c", "d"))
    assert len(cache) == 2
    inner = Counting()
    out = CachedBackend(inner, cache).generate(reqs("a", "b", "c", "d"))
    assert inner.sent == ["c", "d"] and [r.text for r in out] == ["a", "b", "c", "d"]


def test_cache_rows_hold_request_and_accounting(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    CachedBackend(Counting(), JudgeCache(path)).generate(reqs("hello"))
    row = sqlite3.connect(path).execute(
        "SELECT backend, model, revision, request, tokens_in, cost_usd FROM responses"
    ).fetchone()
    assert row[:3] == ("counting", "count-model", "r1")
    assert '"prompt": "hello"' in row[3] and row[4] == 3 and row[5] == 0.001
