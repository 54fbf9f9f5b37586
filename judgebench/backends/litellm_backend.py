"""API providers and OpenAI-compatible servers through litellm.

``LiteLLMBackend(model="openai/gpt-4o-mini")`` reaches any provider litellm knows;
``LiteLLMBackend(model="hosted_vllm/my-judge", api_base="http://host:8000/v1")`` any
OpenAI-compatible server (e.g. ``vllm serve``). API keys come only from the environment:
litellm reads the provider's usual variable (OPENAI_API_KEY, ...), or ``api_key_env`` names
the variable to read. The key is never put in an identity, a log line or an error message,
and an answer that quotes it back is scrubbed of it (`judgebench.redact`, the one scrubber).

Calls run concurrently (``concurrency`` at once) under per-model request and token rate
limits (``rpm``, ``tpm``; token buckets shared by every backend instance on the same model
and endpoint). A failed call is retried up to ``max_attempts`` in all, with exponential
backoff and full jitter, ``delay = U(0.5, 1) * min(backoff_max_s, backoff_base_s * 2**k)``,
waiting at least the server's Retry-After; a 429 pauses the whole model's bucket for that long.
Every attempt has a ``timeout_s``. Retried: 429, 5xx, timeouts, connection errors and
truncated or malformed bodies. Not retried: other 4xx, refusals (``message.refusal`` or a
content filter: `classify_answer`, shared by every backend), which are answers: charged and
cached.

Cost per call is ``tokens_in * input_cost_per_token + tokens_out * output_cost_per_token``
from the options when given (or ``price_in``/``price_out`` in USD per million tokens), else
from litellm's bundled price table; a model with no known price costs None (unknown), never 0.
Before each call the run's budget is checked against an upper-bound estimate (prompt
characters / 4 at the input price, ``max_tokens`` at the output price, plus every call already
in flight); after it, the real cost is charged once. Under a budget, a call of unknown price is
refused unless the run allows unknown costs.
Failed calls are not charged (providers do not bill them; none returns usage).

litellm is imported on first use, with its remote price-map fetch disabled, and used without
global side effects: retries, timeouts, ``drop_params`` and the key are passed per call. The
one module attribute set is ``suppress_debug_info``, which only stops litellm printing a
"Give Feedback" banner to stdout (that would corrupt ``--json`` output).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import random
import threading
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

from judgebench.backends.base import (
    Backend,
    Capabilities,
    FailureKind,
    Request,
    Response,
    TokenLogprob,
    classify_answer,
)
from judgebench.redact import redact, register_secret_env

log = logging.getLogger("judgebench.backends.litellm")

#: Providers whose chat API returns token logprobs (G-Eval uses them when present).
LOGPROB_PROVIDERS = {"openai", "hosted_vllm", "azure", "together_ai", "fireworks_ai", "deepseek",
                     "vllm", "text-completion-openai", "openrouter", "groq"}
_IMPORT_LOCK = threading.Lock()


def import_litellm() -> Any:
    """Import litellm without its network fetch of the price map at import time."""
    with _IMPORT_LOCK:
        previous = os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP")
        os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        try:
            import litellm
        finally:
            if previous is None:
                os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
            else:
                os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = previous
        litellm.suppress_debug_info = True
        return litellm


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

    async def acquire(self, tokens: int) -> None:
        while True:
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
                        return
            await asyncio.sleep(min(max(wait, 0.001), 60.0))


_LIMITERS: dict[tuple[str, str], RateLimiter] = {}
_LIMITERS_LOCK = threading.Lock()


def limiter_for(model: str, api_base: str | None, rpm: float | None,
                tpm: float | None) -> RateLimiter:
    with _LIMITERS_LOCK:
        key = (model, api_base or "")
        if key not in _LIMITERS:
            _LIMITERS[key] = RateLimiter(rpm, tpm)
        return _LIMITERS[key]


class _Retry(Exception):
    def __init__(self, kind: FailureKind, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind, self.message, self.retry_after = kind, message, retry_after


class _Final(Exception):
    def __init__(self, kind: FailureKind, message: str):
        super().__init__(message)
        self.kind, self.message = kind, message


class LiteLLMBackend(Backend):
    name = "litellm"

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key_env: str | None = None,
        revision: str | None = None,
        concurrency: int = 16,
        rpm: float | None = None,
        tpm: float | None = None,
        timeout_s: float = 60.0,
        max_attempts: int = 6,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        max_retry_after_s: float = 120.0,
        input_cost_per_token: float | None = None,
        output_cost_per_token: float | None = None,
        price_in: float | None = None,
        price_out: float | None = None,
        logprobs: bool | None = None,
        json_schema: bool = True,
        prefill: bool = False,
        drop_params: bool = False,
    ) -> None:
        if not model:
            raise ValueError("the litellm backend needs a model, e.g. openai/gpt-4o-mini")
        super().__init__(str(model), revision)
        self.api_base = api_base or None
        if api_key_env and api_key_env not in os.environ:
            raise ValueError(f"api_key_env names ${api_key_env}, which is not set")
        if api_key_env:
            register_secret_env(api_key_env)
        self._api_key_env = api_key_env or None
        self.concurrency = max(1, int(concurrency))
        self.rpm = float(rpm) if rpm else None
        self.tpm = float(tpm) if tpm else None
        self.timeout_s = float(timeout_s)
        self.max_attempts = max(1, int(max_attempts))
        self.backoff_base_s = float(backoff_base_s)
        self.backoff_max_s = float(backoff_max_s)
        self.max_retry_after_s = float(max_retry_after_s)
        self._price_override = (
            _per_token("input", input_cost_per_token, price_in),
            _per_token("output", output_cost_per_token, price_out),
        )
        self.drop_params = bool(drop_params)
        provider = self.model.split("/", 1)[0] if "/" in self.model else "openai"
        has_logprobs = provider in LOGPROB_PROVIDERS if logprobs is None else bool(logprobs)
        self.capabilities = Capabilities(
            logprobs=has_logprobs, max_top_logprobs=20 if has_logprobs else 0,
            prompt_logprobs=False, json_schema=bool(json_schema), prefill=bool(prefill),
            paid=True,
        )
        self._limiter = limiter_for(self.model, self.api_base, self.rpm, self.tpm)
        self._semaphores: weakref.WeakKeyDictionary[Any, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._reserved = 0.0
        self._reserve_lock = threading.Lock()
        self._price: tuple[float, float] | bool | None = False  # False: not looked up yet

    # -- key and price -------------------------------------------------------------------------
    @property
    def _api_key(self) -> str | None:
        return os.environ.get(self._api_key_env) if self._api_key_env else None

    def price(self) -> tuple[float, float] | None:
        if self._price is False:
            self._price = self._lookup_price()
        return self._price  # type: ignore[return-value]

    def _lookup_price(self) -> tuple[float, float] | None:
        given_in, given_out = self._price_override
        if given_in is not None and given_out is not None:
            return float(given_in), float(given_out)
        litellm = import_litellm()
        try:
            info = litellm.get_model_info(self.model)
        except Exception:
            info = {}
        p_in = given_in if given_in is not None else info.get("input_cost_per_token")
        p_out = given_out if given_out is not None else info.get("output_cost_per_token")
        if p_in is None or p_out is None:
            return None
        return float(p_in), float(p_out)

    # -- calls --------------------------------------------------------------------------------
    async def agenerate(self, requests: Sequence[Request]) -> list[Response]:
        out: list[Response | None] = [None] * len(requests)
        async for index, response in self.aiter_generate(requests):
            out[index] = response
        return [r if r is not None else Response.failed("error", "no answer") for r in out]

    async def aiter_generate(
        self, requests: Sequence[Request]
    ) -> AsyncIterator[tuple[int, Response]]:
        from judgebench import runtime

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

    async def open_client(self) -> Any:
        """What `_send` calls through: here the litellm module (subclasses: an HTTP client)."""
        return import_litellm()

    async def close_client(self, client: Any) -> None:
        """Release what `open_client` made (litellm keeps its own client pool)."""

    async def _call(self, litellm: Any, request: Request, settings: Any) -> Response:
        if request.prompt_logprobs:
            return Response.failed("unsupported", "the litellm backend cannot return prompt "
                                   "logprobs; use the transformers or vllm backend")
        estimate_in = self.count_tokens(request)
        priced = self.estimate_cost(estimate_in, request.max_tokens)
        estimate = priced or 0.0
        with self._reserve_lock:
            settings.budget.check(None if priced is None else self._reserved + estimate,
                                  model=f"{self.name}:{self.model}")
            self._reserved += estimate
        try:
            return await self._attempts(litellm, request, estimate_in, settings)
        finally:
            with self._reserve_lock:
                self._reserved -= estimate

    async def _attempts(self, litellm: Any, request: Request, estimate_in: int,
                        settings: Any) -> Response:
        kwargs = self.call_kwargs(request)
        last: _Retry | None = None
        for attempt in range(1, self.max_attempts + 1):
            await self._limiter.acquire(estimate_in + request.max_tokens)
            started = time.perf_counter()
            try:
                raw = await asyncio.wait_for(
                    self._send(litellm, request, kwargs), timeout=self.timeout_s + 5.0
                )
                response = self.parse(raw, latency_s=time.perf_counter() - started)
            except asyncio.CancelledError:
                raise
            except _Final as exc:
                return Response.failed(exc.kind, _clean(exc.message), attempts=attempt)
            except TimeoutError:
                last = _Retry("timeout", f"no answer within {self.timeout_s:g}s")
            except Exception as exc:
                try:
                    self.classify(exc)
                except _Retry as retry:
                    last = retry
                except _Final as final:
                    return Response.failed(final.kind, _clean(final.message),
                                           attempts=attempt)
            else:
                if response.error is None or response.error.kind == "refused":
                    settings.budget.charge(response.cost_usd)
                return response
            assert last is not None
            if attempt == self.max_attempts:
                break
            delay = random.uniform(0.5, 1.0) * min(
                self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1)
            )
            if last.retry_after is not None:
                wait = min(last.retry_after, self.max_retry_after_s)
                self._limiter.pause(wait)
                delay = max(delay, wait)
            log.info("%s: attempt %d/%d failed (%s: %s); retrying in %.2fs", self.model,
                     attempt, self.max_attempts, last.kind, _clean(last.message)[:200], delay)
            await asyncio.sleep(delay)
        assert last is not None
        return Response.failed(last.kind, _clean(last.message), attempts=self.max_attempts)

    def call_kwargs(self, request: Request) -> dict[str, Any]:
        """The litellm keyword arguments for one request (no key; that is added at send time)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "timeout": self.timeout_s,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": self.drop_params,
        }
        if request.prompt is not None:
            kwargs["prompt"] = request.prompt
        else:
            kwargs["messages"] = [dict(m) for m in request.messages]
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.logprobs:
            kwargs["logprobs"] = True
            if request.top_logprobs:
                kwargs["top_logprobs"] = min(request.top_logprobs, 20)
        if request.json_schema is not None and self.capabilities.json_schema:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "judgement", "schema": request.json_schema,
                                "strict": True},
            }
        return kwargs

    async def _send(self, litellm: Any, request: Request, kwargs: dict[str, Any]) -> Any:
        key = self._api_key
        call = dict(kwargs, api_key=key) if key else dict(kwargs)
        if request.prompt is not None:
            return await litellm.atext_completion(**call)
        return await litellm.acompletion(**call)

    def classify(self, exc: BaseException) -> None:
        """Raise _Retry (retryable) or _Final for a litellm/OpenAI exception."""
        if isinstance(exc, _Retry | _Final):
            raise exc
        status = getattr(exc, "status_code", None)
        message = _clean(f"{type(exc).__name__}: {exc}")
        name = type(exc).__name__
        headers = getattr(exc, "litellm_response_headers", None) or getattr(
            getattr(exc, "response", None), "headers", None
        )
        if "Timeout" in name or status == 408:
            raise _Retry("timeout", f"no answer within {self.timeout_s:g}s")
        if status == 429 or "RateLimit" in name:
            raise _Retry("rate_limited", message, _retry_after(headers))
        malformed = ("Expecting value", "Unterminated string", "Invalid response object",
                     "JSONDecodeError", "Extra data", "peer closed", "incomplete",
                     "RemoteProtocolError")
        if ("APIConnectionError" in name or "Connect" in name or status is None
                or "Connection error" in str(exc)):
            raise _Retry("connection", message)
        if any(marker in str(exc) for marker in malformed):
            raise _Retry("malformed", message)
        if "Missing credentials" in str(exc):
            raise _Final("bad_request", "no API key: set the provider's key variable or name one "
                         "with api_key_env")
        if "ContentPolicy" in name:
            raise _Final("refused", message)
        if status >= 500:
            raise _Retry("server_error", message, _retry_after(headers))
        if status in (401, 403):
            raise _Final("bad_request", f"authentication failed (HTTP {status}); check the key "
                         "variable's value (the key is not shown)")
        raise _Final("bad_request", message)

    def parse(self, raw: Any, latency_s: float) -> Response:
        """A litellm ModelResponse/TextCompletionResponse -> Response (raises _Retry if broken)."""
        choices = getattr(raw, "choices", None)
        if not choices:
            raise _Retry("malformed", "the answer has no choices")
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) if message is not None else getattr(
            choice, "text", None
        )
        finish = getattr(choice, "finish_reason", None)
        usage = getattr(raw, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", None) if usage is not None else None
        tokens_out = getattr(usage, "completion_tokens", None) if usage is not None else None
        cost = None
        price = self.price()
        if price is not None and tokens_in is not None and tokens_out is not None:
            cost = tokens_in * price[0] + tokens_out * price[1]
        common = {"tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost,
                  "latency_s": latency_s, "model": getattr(raw, "model", None) or self.model}
        kind, reason = classify_answer(text=text, finish_reason=finish,
                                       refusal=_refusal(message))
        if kind == "refused":
            return Response.failed("refused", reason, finish_reason=finish,
                                   **common).redacted()
        if kind == "malformed":
            raise _Retry("malformed", reason)
        return Response(text=text or "", finish_reason=finish, logprobs=_token_logprobs(choice),
                        **common).redacted()


def _clean(text: str) -> str:
    return redact(text) or ""


def _per_token(side: str, per_token: float | None, per_million: float | None) -> float | None:
    """A price in USD per token from either option: ``{side}_cost_per_token`` (USD per token)
    or ``price_in``/``price_out`` (USD per million tokens)."""
    names = f"{side}_cost_per_token or price_{'in' if side == 'input' else 'out'}"
    if per_token is not None and per_million is not None:
        raise ValueError(f"give the {side} price once: {names}")
    value = per_token if per_million is None else float(per_million) / 1e6
    if value is not None and not (math.isfinite(float(value)) and float(value) >= 0):
        raise ValueError(f"{names}: a price is a finite number >= 0, got {value}")
    return None if value is None else float(value)


def _refusal(message: Any) -> str | None:
    """The model's refusal text: ``message.refusal`` (OpenAI), which litellm moves into
    ``provider_specific_fields``."""
    if message is None:
        return None
    refusal = getattr(message, "refusal", None)
    if not refusal:
        extra = getattr(message, "provider_specific_fields", None)
        refusal = extra.get("refusal") if isinstance(extra, dict) else None
    return str(refusal) if refusal else None


def _retry_after(headers: Any) -> float | None:
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


def _token_logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    logprobs = getattr(choice, "logprobs", None)
    if logprobs is None:
        return None
    content = getattr(logprobs, "content", None)
    if content is None and isinstance(logprobs, dict):
        content = logprobs.get("content")
    if content is None:
        return None
    parsed = []
    for item in content:
        get = item.get if isinstance(item, dict) else lambda k, _i=item: getattr(_i, k, None)
        top = []
        for alt in get("top_logprobs") or []:
            alt_get = alt.get if isinstance(alt, dict) else lambda k, _a=alt: getattr(_a, k)
            top.append((str(alt_get("token")), float(alt_get("logprob"))))
        parsed.append(TokenLogprob(str(get("token")), float(get("logprob")), tuple(top)))
    return tuple(parsed)
