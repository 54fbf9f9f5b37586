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

Constraints (`judgebench.backends.base`): a JSON schema goes as ``response_format``
``json_schema``; a server that rejects it (HTTP 400/422 naming the response format) is asked
again with ``json_object``, and one that rejects that too with the plain prompt. The step
reached is remembered per server and model (`structured_mode`), reported on each Response
(``constrained``: ``json``, ``json_object`` or None) and in the judge's signature
(`enforcement`). Choices and regexes are enforced only by a vLLM server (``server=vllm``, or
``server=auto`` and ``GET {api_base}/models`` says ``owned_by: vllm``), through its
``structured_outputs`` extra body field (``server=vllm-guided``: the ``guided_choice`` /
``guided_regex`` fields of vLLM before 0.10.2); elsewhere they are left to the prompt.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from judgebench.backends.base import (
    Capabilities,
    ConstraintKind,
    Enforced,
    Request,
    Response,
)
from judgebench.backends.remote import RemoteBackend, RemoteOptions, Retryable, http_failure
from judgebench_backends.openai_format import (
    STRUCTURED_MODES,
    namespace,
    optional_fields,
    parse_answer,
    rejects_response_format,
    vllm_structured_fields,
)

SERVERS = ("auto", "openai", "vllm", "vllm-guided")
#: (api_base, model) -> the response_format step a server was found to take.
_MODES: dict[tuple[str, str], str] = {}
#: api_base -> what GET /models said the server is ("vllm" or "openai").
_SERVERS: dict[str, str] = {}
_LOCK = threading.Lock()


@dataclass(kw_only=True)
class OpenAICompatOptions(RemoteOptions):
    """`RemoteOptions` plus ``server`` (auto | openai | vllm | vllm-guided: what enforces
    choices and regexes) and ``structured`` (the response_format to start from:
    json_schema | json_object | none)."""

    server: str = "auto"
    structured: str = "json_schema"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.server not in SERVERS:
            raise ValueError(f"server must be one of {', '.join(SERVERS)}, got {self.server!r}")
        if self.structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be one of {', '.join(STRUCTURED_MODES)}, "
                             f"got {self.structured!r}")
        if not self.json_schema:
            self.structured = "none"


class OpenAICompatBackend(RemoteBackend):
    name = "openai_compat"
    Options: ClassVar[type[RemoteOptions]] = OpenAICompatOptions

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        if not options.get("api_base"):
            raise ValueError("the openai_compat backend needs api_base, e.g. "
                             "http://127.0.0.1:8000/v1")
        super().__init__(model, revision, **options)
        assert isinstance(self.options, OpenAICompatOptions)
        self.server_option = self.options.server
        self.url = str(self.api_base).rstrip("/") + "/chat/completions"
        self._mode_key = (str(self.api_base).rstrip("/"), self.model)
        with _LOCK:
            _MODES.setdefault(self._mode_key, self.options.structured)
        if self.server_option in ("vllm", "vllm-guided"):
            self._mark_vllm()

    # -- constraints ------------------------------------------------------------------------
    @property
    def structured_mode(self) -> str:
        """The response_format step this server takes: json_schema, json_object or none."""
        with _LOCK:
            return _MODES[self._mode_key]

    def _downgrade(self, sent: str) -> str | None:
        """The next step after `sent` was rejected (None: nothing left to drop)."""
        following = STRUCTURED_MODES[STRUCTURED_MODES.index(sent) + 1:]
        if not following:
            return None
        with _LOCK:
            if STRUCTURED_MODES.index(_MODES[self._mode_key]) <= STRUCTURED_MODES.index(sent):
                _MODES[self._mode_key] = following[0]
            return _MODES[self._mode_key]

    def server_kind(self) -> str:
        """openai, vllm or vllm-guided: the option, else what ``GET /models`` said (looked
        up once per server; a server that does not answer is taken for a plain one)."""
        if self.server_option != "auto":
            return self.server_option
        base = str(self.api_base).rstrip("/")
        with _LOCK:
            known = _SERVERS.get(base)
        if known is None:
            known = detect_server(base, self.api_key(), timeout_s=min(5.0, self.timeout_s))
            with _LOCK:
                _SERVERS[base] = known
        if known == "vllm" and "choice" not in self.capabilities.constraints:
            self._mark_vllm()
        return known

    def _mark_vllm(self) -> None:
        caps = self.capabilities
        self.capabilities = Capabilities(
            logprobs=caps.logprobs, max_top_logprobs=caps.max_top_logprobs,
            prompt_logprobs=caps.prompt_logprobs, json_schema=caps.json_schema,
            constraints=caps.constraints | {"choice", "regex"}, prefill=caps.prefill,
            paid=caps.paid)

    def enforcement(self, kind: ConstraintKind) -> Enforced | None:
        if kind == "json":
            mode = self.structured_mode
            return "json" if mode == "json_schema" else (
                "json_object" if mode == "json_object" else None)
        return kind if self.server_kind() != "openai" else None

    async def open_client(self) -> Any:
        import aiohttp

        if self.server_option == "auto":
            await asyncio.to_thread(self.server_kind)
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        return aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    def default_logprobs(self) -> bool:
        return True

    def unsupported(self, request: Request) -> str | None:
        if request.prompt is not None:
            return "the openai_compat backend sends chat requests only"
        return super().unsupported(request)

    # -- the wire protocol ------------------------------------------------------------------
    async def close_client(self, client: Any) -> None:
        await client.close()

    def body(self, request: Request, structured: str | None = None) -> tuple[dict[str, Any],
                                                                             Enforced | None]:
        """The JSON body of one chat request with the response_format step `structured`
        (default: the server's current one), and what it asks the server to enforce."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "top_p": request.top_p,
        }
        mode = structured or self.structured_mode
        body.update(optional_fields(request, structured=mode))
        enforced: Enforced | None = None
        constraint = request.constraint
        if constraint is not None and constraint.kind == "json" and "response_format" in body:
            enforced = "json" if mode == "json_schema" else "json_object"
        elif constraint is not None and constraint.kind != "json":
            server = self.server_kind()
            if server != "openai":
                body.update(vllm_structured_fields(constraint, legacy=server == "vllm-guided"))
                enforced = constraint.kind
        return body, enforced

    async def send(self, client: Any, request: Request) -> Any:
        mode = self.structured_mode
        while True:
            body, enforced = self.body(request, mode)
            status, content, reply_headers = await self._post(client, body)
            if status < 400:
                break
            message = f"HTTP {status}: {content[:300].decode('utf-8', 'replace')}"
            rejected = "response_format" in body and rejects_response_format(status, content)
            following = self._downgrade(mode) if rejected else None
            if following is None:
                raise http_failure(status, message, reply_headers)
            mode = following
        try:
            data = json.loads(content)
        except ValueError as exc:
            raise Retryable("malformed", f"the body is not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise Retryable("malformed", "the body is not a JSON object")
        return namespace(data), enforced

    async def _post(self, client: Any, body: dict[str, Any]) -> tuple[int, bytes, Any]:
        import aiohttp

        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            async with client.post(self.url, data=json.dumps(body), headers=headers) as reply:
                return reply.status, await reply.read(), reply.headers
        except TimeoutError:
            raise Retryable("timeout", f"no answer within {self.timeout_s:g}s") from None
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            raise Retryable("malformed", f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise Retryable("connection", f"{type(exc).__name__}: {exc}") from None

    def parse(self, raw: Any, latency_s: float) -> Response:
        answer, enforced = raw
        response = parse_answer(self, answer, latency_s)
        return replace(response, constrained=enforced) if response.ok else response


def detect_server(api_base: str, key: str | None, timeout_s: float) -> str:
    """``vllm`` when ``GET {api_base}/models`` lists a model ``owned_by`` vllm, else
    ``openai`` (also when the server does not answer it)."""
    import urllib.request

    request = urllib.request.Request(api_base + "/models")
    if key:
        request.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            data = json.loads(reply.read())
    except (OSError, ValueError):
        return "openai"
    models = data.get("data") if isinstance(data, dict) else None
    owners = {m.get("owned_by") for m in models or [] if isinstance(m, dict)}
    return "vllm" if "vllm" in owners else "openai"
