"""The one remote-call engine: what every HTTP/API backend shares.

A provider (litellm, an OpenAI-compatible server, any plugin's API) subclasses `RemoteBackend`
and implements only its wire protocol::

    class MyAPI(RemoteBackend):
        name = "myapi"
        async def open_client(self) -> Any: ...              # e.g. an HTTP session
        async def close_client(self, client: Any) -> None: ...
        async def send(self, client: Any, request: Request) -> Any: ...   # one call, raw answer
        def classify(self, exc: BaseException) -> Retryable | Final: ...  # an exception -> kind
        def parse(self, raw: Any, latency_s: float) -> Response: ...     # raw answer -> Response

`send` and `parse` may raise `Retryable` (the call may succeed if repeated: 429, 5xx, a
timeout, a broken body) or `Final` (it cannot: other 4xx, no key); any other exception is
handed to `classify`. `parse` builds its Response with `answer`, which classifies the answer
(`classify_answer`, the same for every backend), prices it and scrubs it.

The engine, here and only here, does the rest, the same for every provider:

- ``concurrency`` calls at once (one semaphore per event loop);
- request and token rate limits (``rpm``, ``tpm``): token buckets (`RateLimiter`) shared by
  every backend instance on the same model and endpoint (`limiter_for`);
- up to ``max_attempts`` attempts, with exponential backoff and full jitter,
  ``delay = U(0.5, 1) * min(backoff_max_s, backoff_base_s * 2**k)``, waiting at least the
  server's Retry-After (capped at ``max_retry_after_s``), which also pauses the model's bucket;
- a ``timeout_s`` per attempt (the client's own, with a 5 s guard on top);
- the run's budget (``runtime.current().budget``): before each call an upper-bound estimate
  (prompt characters / 4 at the input price, ``max_tokens`` at the output price, plus every
  call in flight) is checked; after it the real cost is charged once; failed calls are not
  charged (providers do not bill them); `BudgetExceeded` stops the batch, finished calls
  having been yielded;
- ``--dry-run``: no call, every answer ``kind="dry_run"``;
- secret scrubbing (`judgebench.redact`) of every failure message and log line; the key
  (read from ``api_key_env``) is never in an identity, a log line or an error.

The options every remote backend shares are one `RemoteOptions`; a provider with more
declares a subclass of it as its ``Options``. Nothing here imports a model or HTTP library.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import re
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeVar, final

from judgebench.backends.base import (
    Accepts,
    Backend,
    Capabilities,
    FailureKind,
    Request,
    Response,
    TokenLogprob,
    classify_answer,
)
from judgebench.redact import redact, register_secret_env

log = logging.getLogger("judgebench.backends.remote")
T = TypeVar("T")


class Retryable(Exception):
    """A failed attempt that may succeed if repeated (429, 5xx, timeout, broken body).
    ``retry_after``: the server's Retry-After in seconds, when it sent one."""

    def __init__(self, kind: FailureKind, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.message, self.retry_after = kind, message, retry_after


class Final(Exception):
    """A failed call that repeating cannot fix (a 4xx other than 429, no key, refused)."""

    def __init__(self, kind: FailureKind, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


def retry_after_seconds(headers: Any) -> float | None:
    """The Retry-After of a response's `headers` (seconds or an HTTP date) in seconds, >= 0;
    None when absent or unreadable."""
    if not headers:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def http_failure(status: int, message: str, headers: Any = None) -> Retryable | Final:
    """What an HTTP error status means for a call: 429 and 5xx are retried (with the server's
    Retry-After from `headers`), 401/403 are an authentication failure whose message names no
    key, any other status is a final bad request carrying `message`."""
    if status == 429:
        return Retryable("rate_limited", message, retry_after_seconds(headers))
    if status >= 500:
        return Retryable("server_error", message, retry_after_seconds(headers))
    if status in (401, 403):
        return Final("bad_request", f"authentication failed (HTTP {status}); check the key "
                     "variable's value (the key is not shown)")
    return Final("bad_request", message)


def scrub(text: str) -> str:
    """`text` with every secret removed (`judgebench.redact`)."""
    return redact(text) or ""


class RateLimiter:
    """Token buckets for requests per minute and tokens per minute, usable from any loop."""

    def __init__(self, rpm: float | None, tpm: float | None) -> None:
        self.rpm, self.tpm = rpm, tpm
        self._lock = threading.Lock()
        self._requests = float(rpm or 0)
        self._tokens = float(tpm or 0)
        self._stamp = time.monotonic()
        self._paused_until = 0.0

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)

    def _refill(self, now: float) -> None:
        elapsed = now - self._stamp
        self._stamp = now
        if self.rpm:
            self._requests = min(self.rpm, self._requests + elapsed * self.rpm / 60.0)
        if self.tpm:
            self._tokens = min(self.tpm, self._tokens + elapsed * self.tpm / 60.0)

    def try_acquire(self, tokens: int) -> float:
        """Take one request and `tokens` tokens if the buckets hold them (0.0), else the
        seconds to wait before trying again."""
        with self._lock:
            now = time.monotonic()
            self._refill(now)
            wait = self._paused_until - now
            need = min(float(tokens), float(self.tpm or 0))
            if wait <= 0:
                if self.rpm and self._requests < 1:
                    wait = (1 - self._requests) * 60.0 / self.rpm
                elif self.tpm and self._tokens < need:
                    wait = (need - self._tokens) * 60.0 / self.tpm
                else:
                    if self.rpm:
                        self._requests -= 1
                    if self.tpm:
                        self._tokens -= need
                    return 0.0
            return max(wait, 0.001)

    async def acquire(self, tokens: int) -> None:
        while (wait := self.try_acquire(tokens)) > 0:
            await asyncio.sleep(min(wait, 60.0))


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()
#: Where limiters come from when they are shared beyond this process (set by
#: `judgebench.engine.ray_engine` in its actors: one limiter per endpoint for the whole cluster).
shared_limiters: Callable[[tuple[str, str], float | None, float | None], RateLimiter] | None = None


def limiter_for(model: str, api_base: str | None, rpm: float | None,
                tpm: float | None) -> RateLimiter:
    """The one RateLimiter of (model, endpoint) in this process (made with the first caller's
    limits), or of the cluster when `shared_limiters` is set."""
    with _LIMITERS_LOCK:
        key = (model, api_base or "")
        if shared_limiters is not None:
            return shared_limiters(key, rpm, tpm)
        if key not in _LIMITERS:
            _LIMITERS[key] = RateLimiter(rpm, tpm)
        return _LIMITERS[key]


def per_token_price(side: str, per_token: float | None,
                    per_million: float | None) -> float | None:
    """A price in USD per token from either option: ``{side}_cost_per_token`` (USD per token)
    or ``price_in``/``price_out`` (USD per million tokens); ValueError if both or not a
    finite number >= 0."""
    names = f"{side}_cost_per_token or price_{'in' if side == 'input' else 'out'}"
    if per_token is not None and per_million is not None:
        raise ValueError(f"give the {side} price once: {names}")
    value = per_token if per_million is None else float(per_million) / 1e6
    if value is not None and not (math.isfinite(float(value)) and float(value) >= 0):
        raise ValueError(f"{names}: a price is a finite number >= 0, got {value}")
    return None if value is None else float(value)


#: Query parameters that carry a credential (``?api_key=``, ``?access_token=``, ``?sig=``).
_CREDENTIAL_PARAMETER = re.compile(r"key|token|secret|pass|auth|sig|credential", re.IGNORECASE)


def refuse_credentials(api_base: str) -> None:
    """ValueError if `api_base` carries a credential (``user:KEY@host``, ``?api_key=KEY``):
    a spec is a column's name and is written to tables, sidecars and the store; a key comes
    from the environment (``api_key_env``). The message does not repeat the URL."""
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(api_base)
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)
             if _CREDENTIAL_PARAMETER.search(name)]
    if "@" in parts.netloc or names:
        where = "user:password@ before the host" if "@" in parts.netloc else (
            f"the query parameter {names[0]!r}")
        raise ValueError(f"api_base carries a credential ({where}); a spec is written to "
                         "every table and the store, so give the key in an environment "
                         "variable named by api_key_env=VAR instead")


@dataclass(kw_only=True)
class RemoteOptions:
    """The options every remote backend takes (besides ``model`` and ``revision``).

    Numbers are normalised as they always were: ``concurrency`` and ``max_attempts`` at
    least 1, ``rpm``/``tpm`` None when 0 or absent. Prices are USD per token
    (``*_cost_per_token``) or per million tokens (``price_in``/``price_out``), one of each
    side at most. ``logprobs`` None: the provider's default; ``json_schema``/``prefill``:
    whether the server does structured output / continues a final assistant message.
    """

    api_base: str | None = None
    api_key_env: str | None = None
    concurrency: int = 16
    rpm: float | None = None
    tpm: float | None = None
    timeout_s: float = 60.0
    max_attempts: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    max_retry_after_s: float = 120.0
    input_cost_per_token: float | None = None
    output_cost_per_token: float | None = None
    price_in: float | None = None
    price_out: float | None = None
    logprobs: bool | None = None
    json_schema: bool = True
    prefill: bool = False

    def __post_init__(self) -> None:
        self.api_base = self.api_base or None
        if self.api_base is not None:
            refuse_credentials(self.api_base)
        self.api_key_env = self.api_key_env or None
        self.concurrency = max(1, int(self.concurrency))
        self.rpm = float(self.rpm) if self.rpm else None
        self.tpm = float(self.tpm) if self.tpm else None
        self.timeout_s = float(self.timeout_s)
        self.max_attempts = max(1, int(self.max_attempts))
        self.backoff_base_s = float(self.backoff_base_s)
        self.backoff_max_s = float(self.backoff_max_s)
        self.max_retry_after_s = float(self.max_retry_after_s)
        self.logprobs = None if self.logprobs is None else bool(self.logprobs)
        self.json_schema = bool(self.json_schema)
        self.prefill = bool(self.prefill)
        self.price_override()  # a bad price is an error now, not at the first call

    def price_override(self) -> tuple[float | None, float | None]:
        """USD per (input, output) token given in the options; None for a side not given."""
        return (per_token_price("input", self.input_cost_per_token, self.price_in),
                per_token_price("output", self.output_cost_per_token, self.price_out))


class RemoteBackend(Backend):
    """Base class of every backend that calls a model over the network (see the module).

    Subclasses implement `open_client`, `close_client`, `send`, `classify` and `parse`, and
    may override `lookup_price` (default: the prices given in the options, else unknown),
    `default_logprobs` and `unsupported`. The attempt loop, limits, budget and dry run are
    final: a provider does not redefine them.
    """

    Options: ClassVar[type[RemoteOptions]] = RemoteOptions

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        if not model:
            raise ValueError(f"the {self.name} backend needs a model")
        super().__init__(str(model), revision)
        self.options = self.Options(**options)
        env = self.options.api_key_env
        if env and env not in os.environ:
            raise ValueError(f"api_key_env names ${env}, which is not set")
        if env:
            register_secret_env(env)
        self.api_base = self.options.api_base
        self.concurrency = self.options.concurrency
        self.timeout_s = self.options.timeout_s
        self.max_attempts = self.options.max_attempts
        has_logprobs = (self.default_logprobs() if self.options.logprobs is None
                        else self.options.logprobs)
        self.capabilities = Capabilities(
            logprobs=has_logprobs, max_top_logprobs=20 if has_logprobs else 0,
            prompt_logprobs=False, json_schema=self.options.json_schema,
            prefill=self.options.prefill, paid=True,
        )
        self._limiter = limiter_for(self.model, self.api_base, self.options.rpm,
                                    self.options.tpm)
        self._semaphores: weakref.WeakKeyDictionary[Any, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._price: tuple[float, float] | None = None
        self._price_known = False
        self._refuse_without_credential()

    @final
    def _refuse_without_credential(self) -> None:
        """What the backend can know before its first call, checked then: a credential its
        provider needs and the environment lacks stops the run (ValueError, exit 2) before
        any work, as a missing extra does, instead of failing every call. A dry run, which
        makes no call, needs none."""
        from judgebench.engine import runtime

        if runtime.current().dry_run:
            return
        reason = self.missing_credential()
        if reason is not None:
            raise ValueError(reason)

    #: Options that change no answer (how calls are made, priced, limited, authenticated):
    #: left out of the judge cache's key. A provider adds its own (`cache_identity`).
    not_in_cache_key: ClassVar[frozenset[str]] = frozenset({
        "api_base", "api_key_env", "concurrency", "rpm", "tpm", "timeout_s", "max_attempts",
        "backoff_base_s", "backoff_max_s", "max_retry_after_s", "input_cost_per_token",
        "output_cost_per_token", "price_in", "price_out"})

    def cache_identity(self) -> dict[str, str]:
        """`identity()` plus the endpoint (``api_base`` as given, less a trailing ``/``) and
        every other option set to other than its default that is not in `not_in_cache_key`:
        two servers serving one model name never share cached answers. An option a provider
        adds is in the key unless the provider says it changes no answer. The key variable
        (``api_key_env``) and its value are never in it, and the endpoint is scrubbed
        (`refuse_credentials` already refuses one that carries a key)."""
        found = dict(self.identity())
        endpoint = self.cache_endpoint()
        if endpoint:
            found["api_base"] = scrub(endpoint.rstrip("/"))
        for option in fields(self.options):
            value = getattr(self.options, option.name)
            if option.name not in self.not_in_cache_key and value != option.default:
                found[f"option.{option.name}"] = scrub(str(value))
        return found

    def cache_endpoint(self) -> str | None:
        """The endpoint the cache key names: ``api_base`` as given (None: the provider's own).
        A backend that starts its own server names none (its options say what it serves)."""
        return self.options.api_base

    def missing_credential(self) -> str | None:
        """Why a call could not authenticate, known before any call (the variable a key
        should be in is not set), or None; the message names variables, never a value.
        Default: nothing known (``api_key_env`` itself is checked above)."""
        return None

    @classmethod
    def accepts(cls) -> Accepts:
        return Accepts(names=frozenset({"model", "revision"}
                                       | {f.name for f in fields(cls.Options)}),
                       required=frozenset({"model"}))

    # -- what providers implement -----------------------------------------------------------
    async def open_client(self) -> Any:
        """What `send` calls through (an HTTP session, a module); made once per batch."""
        return None

    async def close_client(self, client: Any) -> None:
        """Release what `open_client` made."""

    async def send(self, client: Any, request: Request) -> Any:
        """Make one call; return the raw answer for `parse`, or raise `Retryable`/`Final`
        (or anything else, which `classify` turns into one of them)."""
        raise NotImplementedError(f"backend {self.name} does not implement send")

    def classify(self, exc: BaseException) -> Retryable | Final:
        """What an exception from `send` or `parse` (other than `Retryable`, `Final` and a
        timeout, which the engine handles) means; default: a connection failure for an
        OSError, else a final error."""
        message = scrub(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, OSError):
            return Retryable("connection", message)
        return Final("error", message)

    def parse(self, raw: Any, latency_s: float) -> Response:
        """The raw answer from `send` as a Response (built with `answer`); raise `Retryable`
        for a body that is not the protocol."""
        raise NotImplementedError(f"backend {self.name} does not implement parse")

    def default_logprobs(self) -> bool:
        """Whether the server returns token logprobs when the options do not say."""
        return False

    def unsupported(self, request: Request) -> str | None:
        """Why this backend cannot make `request` (answered ``kind="unsupported"`` with no
        call and no charge), or None."""
        if request.prompt_logprobs:
            return (f"the {self.name} backend cannot return prompt logprobs; use the "
                    "transformers or vllm backend")
        return None

    def lookup_price(self) -> tuple[float, float] | None:
        """USD per (input, output) token; default: the options' prices, else unknown."""
        given_in, given_out = self.options.price_override()
        if given_in is None or given_out is None:
            return None
        return float(given_in), float(given_out)

    # -- helpers for providers --------------------------------------------------------------
    def api_key(self) -> str | None:
        """The key from ``api_key_env`` (None: the provider's own variable or none). Never
        log, return or quote it."""
        env = self.options.api_key_env
        return os.environ.get(env) if env else None

    def answer(self, *, text: str | None, finish_reason: str | None = None,
               refusal: str | None = None, logprobs: tuple[TokenLogprob, ...] | None = None,
               tokens_in: int | None = None, tokens_out: int | None = None,
               model: str | None = None, latency_s: float | None = None,
               system_fingerprint: str | None = None, revision: str | None = None) -> Response:
        """A parsed answer as a scrubbed, priced Response: refused answers are final (and
        charged), an answer with no text raises `Retryable("malformed")`. `model` (the name
        the answer returned, default the one asked for), `system_fingerprint` and `revision`
        say what answered (`Response.fingerprint`)."""
        cost = None
        price = self.price()
        if price is not None and tokens_in is not None and tokens_out is not None:
            cost = tokens_in * price[0] + tokens_out * price[1]
        common: dict[str, Any] = {"tokens_in": tokens_in, "tokens_out": tokens_out,
                                  "cost_usd": cost, "latency_s": latency_s,
                                  "model": model or self.model,
                                  "system_fingerprint": system_fingerprint,
                                  "revision": revision}
        kind, reason = classify_answer(text=text, finish_reason=finish_reason, refusal=refusal)
        if kind == "refused":
            return Response.failed("refused", reason, finish_reason=finish_reason,
                                   **common).redacted()
        if kind == "malformed":
            raise Retryable("malformed", reason)
        return Response(text=text or "", finish_reason=finish_reason, logprobs=logprobs,
                        **common).redacted()

    # -- price ------------------------------------------------------------------------------
    def price(self) -> tuple[float, float] | None:
        if not self._price_known:
            self._price = self.lookup_price()
            self._price_known = True
        return self._price

    # -- the engine -------------------------------------------------------------------------
    @final
    def until_answered(self, ask: Callable[[], T], what: str, why: str, *,
                       dry_default: T | None = None) -> T | None:
        """`ask()`, a small synchronous call made before any work (a server's model list),
        again while it raises `Retryable`, with the attempts, backoff and Retry-After of a
        call; JudgebenchError (the run does not start) when it never answers, saying `why`
        it was needed. A dry run, which makes no call, asks once and takes `dry_default`
        when the server does not answer: `--dry-run` works offline."""
        from judgebench.engine import runtime
        from judgebench.errors import JudgebenchError

        o = self.options
        if runtime.current().dry_run:
            try:
                return ask()
            except Retryable:
                return dry_default
        for attempt in range(1, o.max_attempts + 1):
            try:
                return ask()
            except Retryable as exc:
                failure = exc
            if attempt < o.max_attempts:
                delay = random.uniform(0.5, 1.0) * min(
                    o.backoff_max_s, o.backoff_base_s * 2 ** (attempt - 1))
                if failure.retry_after is not None:
                    delay = max(delay, min(failure.retry_after, o.max_retry_after_s))
                time.sleep(delay)
        raise JudgebenchError(f"{self.name}: {what} did not answer in {o.max_attempts} "
                              f"attempts ({scrub(failure.message)[:200]}); {why}")

    @final
    async def agenerate(self, requests: Sequence[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        async for index, response in self.aiter_generate(requests):
            out[index] = response
        return [r if r is not None else Response.failed("error", "no answer") for r in out]

    @final
    async def aiter_generate(
        self, requests: Sequence[Request]
    ) -> AsyncIterator[tuple[int, Response]]:
        from judgebench.engine import runtime

        settings = runtime.current()
        if settings.dry_run:
            for i in range(len(requests)):
                yield i, Response.failed("dry_run", "dry run: no model call was made")
            return
        client = await self.open_client()
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        budget_stop: list[BaseException] = []

        async def one(index: int, request: Request) -> tuple[int, Response | None]:
            async with semaphore:
                if budget_stop:
                    return index, None
                try:
                    return index, await self._call(client, request, settings)
                except runtime.BudgetExceeded as exc:
                    budget_stop.append(exc)
                    return index, None

        tasks = [asyncio.ensure_future(one(i, r)) for i, r in enumerate(requests)]
        try:
            for next_done in asyncio.as_completed(tasks):
                index, response = await next_done
                if response is not None:
                    yield index, response
        finally:
            for task in tasks:
                task.cancel()
            await self.close_client(client)
        if budget_stop:
            raise budget_stop[0]

    @final
    async def _call(self, client: Any, request: Request, settings: Any) -> Response:
        reason = self.unsupported(request)
        if reason is not None:
            return Response.failed("unsupported", reason)
        estimate_in = self.count_tokens(request)
        priced = self.estimate_cost(estimate_in, request.max_tokens)
        held = settings.budget.reserve(priced, model=f"{self.name}:{self.model}")
        try:
            return await self._attempts(client, request, estimate_in, settings)
        finally:
            settings.budget.release(held)

    @final
    async def _attempts(self, client: Any, request: Request, estimate_in: int,
                        settings: Any) -> Response:
        o = self.options
        last: Retryable | None = None
        failure: Retryable | Final
        for attempt in range(1, o.max_attempts + 1):
            await self._limiter.acquire(estimate_in + request.max_tokens)
            started = time.perf_counter()
            try:
                raw = await asyncio.wait_for(self.send(client, request),
                                             timeout=o.timeout_s + 5.0)
                response = self.parse(raw, latency_s=time.perf_counter() - started)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                failure = Retryable("timeout", f"no answer within {o.timeout_s:g}s")
            except (Retryable, Final) as exc:
                failure = exc
            except Exception as exc:
                failure = self.classify(exc)
            else:
                if response.error is None or response.error.kind == "refused":
                    settings.budget.charge(response.cost_usd)
                return response
            if isinstance(failure, Final):
                return Response.failed(failure.kind, scrub(failure.message), attempts=attempt)
            last = failure
            if attempt == o.max_attempts:
                break
            delay = random.uniform(0.5, 1.0) * min(
                o.backoff_max_s, o.backoff_base_s * 2 ** (attempt - 1)
            )
            if last.retry_after is not None:
                wait = min(last.retry_after, o.max_retry_after_s)
                self._limiter.pause(wait)
                delay = max(delay, wait)
            log.info("%s: attempt %d/%d failed (%s: %s); retrying in %.2fs", self.model,
                     attempt, o.max_attempts, last.kind, scrub(last.message)[:200], delay)
            await asyncio.sleep(delay)
        assert last is not None
        return Response.failed(last.kind, scrub(last.message), attempts=o.max_attempts)


__all__ = [
    "Final",
    "RateLimiter",
    "RemoteBackend",
    "RemoteOptions",
    "Retryable",
    "http_failure",
    "limiter_for",
    "per_token_price",
    "retry_after_seconds",
    "scrub",
]
