"""A lean client for OpenAI-compatible chat servers (``vllm serve``, llama.cpp's server, TGI,
a gateway), without litellm.

It runs on the shared remote-call engine (`judgebench.backends.remote`: concurrency limit,
rate limits, retries with backoff and Retry-After, timeouts, budget, dry run and key
scrubbing, the same as the litellm backend's), and each call is one
``POST {api_base}/chat/completions`` with aiohttp, so a call costs ~0.5 ms of CPU instead of
litellm's ~3 ms: with many concurrent calls to a fast local server, litellm's own overhead is
the bottleneck (benchmarks/README.md, "judges"). There is no price table: the cost is from
``input_cost_per_token``/``output_cost_per_token`` (or ``price_in``/``price_out``) when
given, else unknown (None). The model name is sent as given (no provider prefix). Token
logprobs are assumed available unless ``logprobs=false``. aiohttp is imported on first use.
"""

from __future__ import annotations

import json
from typing import Any

from judgebench.backends.base import Request, Response
from judgebench.backends.remote import RemoteBackend, Retryable, http_failure
from judgebench_backends.openai_format import namespace, optional_fields, parse_answer


class OpenAICompatBackend(RemoteBackend):
    name = "openai_compat"

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        if not options.get("api_base"):
            raise ValueError("the openai_compat backend needs api_base, e.g. "
                             "http://127.0.0.1:8000/v1")
        super().__init__(model, revision, **options)
        self.url = str(self.api_base).rstrip("/") + "/chat/completions"

    def default_logprobs(self) -> bool:
        return True

    def unsupported(self, request: Request) -> str | None:
        if request.prompt is not None:
            return "the openai_compat backend sends chat requests only"
        return super().unsupported(request)

    # -- the wire protocol ------------------------------------------------------------------
    async def open_client(self) -> Any:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self.concurrency)
        return aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    async def close_client(self, client: Any) -> None:
        await client.close()

    def body(self, request: Request) -> dict[str, Any]:
        """The JSON body of one chat request."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        body.update(optional_fields(request, json_schema=self.capabilities.json_schema))
        return body

    async def send(self, client: Any, request: Request) -> Any:
        import aiohttp

        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            async with client.post(self.url, data=json.dumps(self.body(request)),
                                   headers=headers) as reply:
                content = await reply.read()
                status, reply_headers = reply.status, reply.headers
        except TimeoutError:
            raise Retryable("timeout", f"no answer within {self.timeout_s:g}s") from None
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            raise Retryable("malformed", f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise Retryable("connection", f"{type(exc).__name__}: {exc}") from None
        if status >= 400:
            message = f"HTTP {status}: {content[:300].decode('utf-8', 'replace')}"
            raise http_failure(status, message, reply_headers)
        try:
            data = json.loads(content)
        except ValueError as exc:
            raise Retryable("malformed", f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise Retryable("malformed", "the body is not a JSON object")
        return namespace(data)

    def parse(self, raw: Any, latency_s: float) -> Response:
        return parse_answer(self, raw, latency_s)
