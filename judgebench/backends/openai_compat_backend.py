"""A lean client for OpenAI-compatible chat servers (``vllm serve``, llama.cpp's server, TGI,
a gateway), without litellm.

Same behaviour as the litellm backend (it reuses its concurrency limit, rate limits, retries
with backoff and Retry-After, timeouts, budget, dry run and key scrubbing), but each call is
one ``POST {api_base}/chat/completions`` with aiohttp, so a call costs ~0.5 ms of CPU instead of
litellm's ~3 ms: with many concurrent calls to a fast local server, litellm's own overhead is
the bottleneck (benchmarks/README.md, "judges"). There is no price table: the cost is from
``input_cost_per_token``/``output_cost_per_token`` when given, else unknown (None).
The model name is sent as given (no provider prefix).
"""

from __future__ import annotations

import json
import types
from typing import Any

from judgebench.backends.base import Request
from judgebench.backends.litellm_backend import LiteLLMBackend, _Final, _Retry, _retry_after


def _namespace(value: Any) -> Any:
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


class OpenAICompatBackend(LiteLLMBackend):
    name = "openai_compat"

    def __init__(self, model: str, api_base: str | None = None, **options: Any) -> None:
        if not api_base:
            raise ValueError("the openai_compat backend needs api_base, e.g. "
                             "http://127.0.0.1:8000/v1")
        options.setdefault("logprobs", True)
        super().__init__(model, api_base=api_base, **options)
        self.url = api_base.rstrip("/") + "/chat/completions"

    def _lookup_price(self) -> tuple[float, float] | None:
        given_in, given_out = self._price_override
        if given_in is None or given_out is None:
            return None
        return float(given_in), float(given_out)

    async def open_client(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self.concurrency)
        return aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    async def close_client(self, client: Any) -> None:
        await client.close()

    def body(self, request: Request, kwargs: dict[str, Any]) -> dict[str, Any]:
        body = {k: v for k, v in kwargs.items()
                if k in ("model", "messages", "max_tokens", "temperature", "top_p", "seed",
                         "stop", "logprobs", "top_logprobs", "response_format")}
        return body

    async def _send(self, client: Any, request: Request, kwargs: dict[str, Any]) -> Any:
        import aiohttp

        if request.prompt is not None:
            raise _Final("unsupported", "the openai_compat backend sends chat requests only")
        headers = {"Content-Type": "application/json"}
        key = self._api_key
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            async with client.post(self.url, data=json.dumps(self.body(request, kwargs)),
                                   headers=headers) as reply:
                content = await reply.read()
                status, reply_headers = reply.status, reply.headers
        except TimeoutError:
            raise _Retry("timeout", f"no answer within {self.timeout_s:g}s") from None
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            raise _Retry("malformed", f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise _Retry("connection", f"{type(exc).__name__}: {exc}") from None
        if status >= 400:
            message = f"HTTP {status}: {content[:300].decode('utf-8', 'replace')}"
            if status == 429:
                raise _Retry("rate_limited", message, _retry_after(reply_headers))
            if status >= 500:
                raise _Retry("server_error", message, _retry_after(reply_headers))
            if status in (401, 403):
                raise _Final("bad_request", f"authentication failed (HTTP {status}); check the "
                             "key variable's value (the key is not shown)")
            raise _Final("bad_request", message)
        try:
            data = json.loads(content)
        except ValueError as exc:
            raise _Retry("malformed", f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise _Retry("malformed", "the body is not a JSON object")
        return _namespace(data)
