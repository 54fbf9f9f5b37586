"""A persistent cache of judge responses, and a backend wrapper that uses it.

The key is `Request.content_hash(backend.cache_identity())`: SHA-256 over the backend name,
model id and revision, what else decides the backend's answers (a remote backend's endpoint,
``api_base``, and its options other than their defaults; never a key or its variable's name),
and every field of the request (messages or prompt, decoding parameters, logprob settings,
JSON schema, sample index), serialised as canonical JSON. Two servers serving one model name
therefore never share answers. (Entries written before the endpoint was in the key are not
found by it: harmless, those requests are asked again.) Only answers are
stored (successes, and refusals, which are final and paid for); a failure is never cached, so
a rerun tries it again. Each response is committed as soon as it arrives, so a killed run keeps
every call it finished, and a rerun of a finished run makes no model call. A failed call's
request and error go to a `failures` table, never read as an answer, so `judgebench logs` can
show what a failed score asked. Identical requests in flight at the same time (within one
batch or across concurrent batches on one event loop) are sent once.

The database is SQLite in WAL mode (standard library). It holds requests and responses, never
an API key: backend identities carry no secrets, every response is scrubbed
(`Response.redacted`) before it is handed on, and the stored request and response JSON are
scrubbed (`judgebench.redact`).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from judgebench.backends.base import Backend, Request, Response
from judgebench.engine.cache_path import cache_file as cache_file  # re-exported
from judgebench.engine.cache_path import default_cache_path as default_cache_path
from judgebench.redact import redact

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    revision TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    tokens_in INTEGER,
    tokens_out INTEGER,
    cost_usd REAL,
    latency_s REAL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    error TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


class Replays:
    """What the judge caches of this process answered and sent during one run, and the keys
    whose stored answers they do not replay (the answers behind scores that `--retry` asks
    again: a parse error's answer, a refusal); a key is replayed again once a new answer
    for it is stored."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.not_replayed: set[str] = set()
        self.hits = 0
        self.sent = 0

    def reset(self) -> None:
        with self.lock:
            self.not_replayed.clear()
            self.hits = self.sent = 0

    def skip(self, keys: Iterable[str]) -> None:
        with self.lock:
            self.not_replayed.update(keys)


#: The one `Replays` of this process (the runner resets it at the start of each run).
REPLAYS = Replays()


def cacheable(response: Response) -> bool:
    """An answer (a success, or a refusal: final and paid for), not a failed call."""
    return response.error is None or response.error.kind == "refused"


class JudgeCache:
    """Answers (successes and refusals) by request hash. Thread-safe; every write is
    committed."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._db.commit()

    def get(self, key: str) -> Response | None:
        with REPLAYS.lock:
            if key in REPLAYS.not_replayed:
                return None
        with self._lock:
            row = self._db.execute(
                "SELECT response FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else Response.from_dict(json.loads(row[0])).redacted()

    def put(self, key: str, identity: dict[str, str], request: Request, response: Response) -> bool:
        """Store an answer (`cacheable`); a failed call is not stored (returns False)."""
        if not cacheable(response):
            return False
        stored = replace(response, cached=False)
        with REPLAYS.lock:
            REPLAYS.not_replayed.discard(key)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    key,
                    identity.get("backend", ""),
                    identity.get("model", ""),
                    identity.get("revision", ""),
                    redact(json.dumps(request.to_dict(), ensure_ascii=False, sort_keys=True)),
                    redact(json.dumps(stored.to_dict(), ensure_ascii=False)),
                    response.tokens_in,
                    response.tokens_out,
                    response.cost_usd,
                    response.latency_s,
                    time.time(),
                ),
            )
            self._db.commit()
        return True

    def note_failure(self, key: str, identity: dict[str, str], request: Request,
                     response: Response) -> None:
        """Keep a failed call's request and error, so `judgebench logs` can show the prompt
        of a score that failed. Never read as an answer: the call is made again next time."""
        if response.error is None or response.error.kind == "dry_run":
            return
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO failures VALUES (?,?,?,?,?,?)",
                (key, identity.get("backend", ""), identity.get("model", ""),
                 redact(json.dumps(request.to_dict(), ensure_ascii=False, sort_keys=True)),
                 redact(str(response.error)), time.time()))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedBackend(Backend):
    """Wraps a backend: answers from the cache, sends each distinct missing request once, and
    stores each success as it arrives. `stats` counts hits, misses and calls sent."""

    def __init__(self, inner: Backend, cache: JudgeCache | None) -> None:
        super().__init__(inner.model, inner.revision)
        self.inner = inner
        self.cache = cache
        self.name = inner.name  # type: ignore[misc]
        self.capabilities = inner.capabilities
        self.stats = {"hits": 0, "sent": 0, "shared": 0}
        self._inflight: weakref.WeakKeyDictionary[Any, dict[str, asyncio.Future[Response]]] = (
            weakref.WeakKeyDictionary()
        )

    def identity(self) -> dict[str, str]:
        return self.inner.identity()

    def cache_identity(self) -> dict[str, str]:
        return self.inner.cache_identity()

    def count_tokens(self, request: Request) -> int:
        return self.inner.count_tokens(request)

    def price(self) -> tuple[float, float] | None:
        return self.inner.price()

    async def agenerate(self, requests: Sequence[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        async for index, response in self.aiter_generate(requests):
            out[index] = response
        return [r for r in out if r is not None]

    async def aiter_generate(
        self, requests: Sequence[Request]
    ) -> AsyncIterator[tuple[int, Response]]:
        identity = self.inner.cache_identity()
        keys = [r.content_hash(identity) for r in requests]
        inflight = self._inflight.setdefault(asyncio.get_running_loop(), {})
        owned: dict[str, list[int]] = {}
        waiting: dict[str, tuple[asyncio.Future[Response], list[int]]] = {}
        for index, key in enumerate(keys):
            if key in owned:
                owned[key].append(index)
                self.stats["shared"] += 1
                continue
            if key in waiting:
                waiting[key][1].append(index)
                continue
            hit = self.cache.get(key) if self.cache is not None else None
            if hit is not None:
                self.stats["hits"] += 1
                with REPLAYS.lock:
                    REPLAYS.hits += 1
                yield index, replace(hit, cached=True)
            elif key in inflight:
                waiting[key] = (inflight[key], [index])
                self.stats["shared"] += 1
            else:
                owned[key] = [index]
                inflight[key] = asyncio.get_running_loop().create_future()

        order = list(owned)
        try:
            if order:
                self.stats["sent"] += len(order)
                with REPLAYS.lock:
                    REPLAYS.sent += len(order)
                sent = [requests[owned[key][0]] for key in order]
                async for position, answer in self.inner.aiter_generate(sent):
                    key = order[position]
                    response = answer.redacted()
                    if self.cache is not None and not self.cache.put(
                            key, identity, sent[position], response):
                        self.cache.note_failure(key, identity, sent[position], response)
                    future = inflight.pop(key, None)
                    if future is not None and not future.done():
                        future.set_result(response)
                    for index in owned[key]:
                        yield index, response
        finally:
            # Whatever was not answered (an exception, a budget stop): release the waiters.
            for key in order:
                future = inflight.pop(key, None)
                if future is not None and not future.done():
                    future.set_result(Response.failed("error", "the call sharing this request "
                                                      "did not finish"))
        for future, indices in waiting.values():
            response = await asyncio.shield(future)
            for index in indices:
                yield index, response

    def close(self) -> None:
        self.inner.close()
