"""A third-party backend, written as any plugin author would: it subclasses the host's
`RemoteBackend` (so concurrency, rate limits, retries with Retry-After, timeouts, the budget
and dry run come from the engine) and implements only its wire protocol: one
``POST {api_base}/chat/completions`` with the standard library's urllib, in a thread."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

from judgebench.backends import Request, Response
from judgebench.backends.remote import Final, RemoteBackend, Retryable, retry_after_seconds
from judgebench.hookspecs import hookimpl

__version__ = "0.1.0"


class EchoBackend(RemoteBackend):
    name = "echo"

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        if not options.get("api_base"):
            raise ValueError("the echo backend needs api_base")
        super().__init__(model, revision, **options)
        self.calls = 0

    async def send(self, client: Any, request: Request) -> Any:
        if request.prompt is not None:
            raise Final("unsupported", "the echo backend sends chat requests only")
        body = {"model": self.model, "messages": [dict(m) for m in request.messages],
                "max_tokens": request.max_tokens, "temperature": request.temperature}
        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        post = urllib.request.Request(f"{self.api_base}/chat/completions", method="POST",
                                      data=json.dumps(body).encode(), headers=headers)
        self.calls += 1
        return await asyncio.to_thread(self._post, post)

    def _post(self, post: urllib.request.Request) -> Any:
        try:
            with urllib.request.urlopen(post, timeout=self.timeout_s) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 429:
                raise Retryable("rate_limited", f"HTTP 429: {exc.reason}",
                                retry_after_seconds(exc.headers)) from None
            if exc.code >= 500:
                raise Retryable("server_error", f"HTTP {exc.code}: {exc.reason}") from None
            raise Final("bad_request", f"HTTP {exc.code}: {exc.reason}") from None
        except ValueError as exc:
            raise Retryable("malformed", f"the body is not JSON: {exc}") from None

    def parse(self, raw: Any, latency_s: float) -> Response:
        choices = raw.get("choices") if isinstance(raw, dict) else None
        if not choices:
            raise Retryable("malformed", "the answer has no choices")
        usage = raw.get("usage") or {}
        return self.answer(text=choices[0].get("message", {}).get("content"),
                           finish_reason=choices[0].get("finish_reason"),
                           tokens_in=usage.get("prompt_tokens"),
                           tokens_out=usage.get("completion_tokens"),
                           model=raw.get("model"), latency_s=latency_s)


@hookimpl
def register_backends(register: Any) -> None:
    register("echo", EchoBackend)
