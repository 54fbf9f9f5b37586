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

What vLLM's server adds, used where the server has it (``vllm serve`` does; others may not):

- a completion request (``Request(prompt=...)``) is ``POST {api_base}/completions``; prompt
  logprobs (a likelihood metric) are asked with ``echo`` and ``logprobs``, and the first
  ``usage.prompt_tokens`` echoed tokens are the prompt's (``prompt_logprobs=false`` for a
  server without them);
- a chat ending in an assistant message is continued (``continue_final_message``) when
  ``prefill=true``;
- ``GET {api_base}/models`` names the checkpoint behind the model id (its ``root``): the
  identity, and so the signature, records it as ``served`` (absent when the server has no
  model list); a server that does not answer it is asked again, as a call is, and one that
  never does stops the run before it starts, so a signature never depends on one GET; a
  ``--dry-run`` (which makes no call) asks once, and where the server does not answer it
  estimates without ``served`` (its cache look-ups then find no answer stored under one);
- ``POST {root}/tokenize`` gives exact prompt token counts for ``--dry-run`` and budgets
  (``tokenize=false``, or a server without it: the ~4 characters a token estimate);
- `pool` runs a pooling model (``vllm serve --runner pooling``) for learned metrics:
  ``/classify`` (class probabilities), ``/pooling`` (a reward model's score), ``/score``
  (a cross-encoder on text pairs) and ``/v1/embeddings``.

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
import dataclasses
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from judgebench.plugin_api import (
    Backend,
    Capabilities,
    ConstraintKind,
    Enforced,
    JudgebenchError,
    RemoteBackend,
    RemoteOptions,
    Request,
    Response,
    Retryable,
    http_failure,
    require,
)
from judgebench_backends.openai_format import (
    STRUCTURED_MODES,
    completion_logprobs,
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


@dataclasses.dataclass(kw_only=True)
class OpenAICompatOptions(RemoteOptions):
    """`RemoteOptions`; whether the server does prompt logprobs (echo) and /tokenize;
    ``server`` (auto | openai | vllm | vllm-guided: what enforces choices and regexes) and
    ``structured`` (the response_format to start from: json_schema | json_object | none)."""

    prompt_logprobs: bool = True
    tokenize: bool = True
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


#: pooling task -> (route, the field of each result holding its numbers)
POOLING_ROUTES = {"classify": ("/classify", "probs"), "reward": ("/pooling", "data"),
                  "embed": ("/embeddings", "embedding")}


def flat_floats(value: Any) -> list[float]:
    """Numbers from a (possibly nested) list, a scalar, or a tensor, flattened."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list | tuple):
        return [x for item in value for x in flat_floats(item)]
    if value is None:
        raise JudgebenchError("a pooling result has no value")
    return [float(value)]


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def completion_response(response: Response, answer: Any, request: Request) -> Response:
    """A completion answer with its token logprobs read, and its echoed prompt split off: the
    first ``usage.prompt_tokens`` echoed tokens are the prompt's logprobs (the first None),
    the rest the generated ones."""
    choice = answer.choices[0]
    if not request.prompt_logprobs:  # completions put token logprobs in their own shape
        if request.logprobs:
            _, generated = completion_logprobs(choice, 0)
            return dataclasses.replace(response, logprobs=generated)
        return response
    usage = getattr(answer, "usage", None)
    count = getattr(usage, "prompt_tokens", None)
    if not isinstance(count, int):
        raise Retryable("malformed", "a completion with echo has no usage.prompt_tokens")
    prompt, generated = completion_logprobs(choice, count)
    text = response.text
    prompt_text = request.prompt or ""
    if text.startswith(prompt_text):
        text = text[len(prompt_text):]
    if request.max_tokens == 0:  # scoring only: drop the token the server had to generate
        return dataclasses.replace(response, text="", finish_reason="prompt_only",
                                   logprobs=None, prompt_logprobs=prompt, tokens_out=0)
    return dataclasses.replace(response, text=text, prompt_logprobs=prompt,
                               logprobs=generated if request.logprobs else None)


class OpenAICompatBackend(RemoteBackend):
    name = "openai_compat"
    Options = OpenAICompatOptions
    options: OpenAICompatOptions

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        require(f"backend={self.name}", "api", "aiohttp")
        if not options.get("api_base"):
            raise ValueError("the openai_compat backend needs api_base, e.g. "
                             "http://127.0.0.1:8000/v1")
        super().__init__(model, revision, **options)
        self.base = str(self.api_base).rstrip("/")
        self.url = self.base + "/chat/completions"
        self.capabilities = dataclasses.replace(
            self.capabilities, prompt_logprobs=self.options.prompt_logprobs)
        self._served: str | None = None
        self._served_known = False
        self._can_tokenize = self.options.tokenize
        self.server_option = self.options.server
        self._mode_key = (self.base, self.model)
        with _LOCK:
            _MODES.setdefault(self._mode_key, self.options.structured)
        if self.server_option in ("vllm", "vllm-guided"):
            self._mark_vllm()

    def default_logprobs(self) -> bool:
        return True

    def unsupported(self, request: Request) -> str | None:
        if request.prompt_logprobs and request.messages:
            return "prompt logprobs are asked with a completion request (prompt=...)"
        if request.prompt_logprobs and not self.capabilities.prompt_logprobs:
            return super().unsupported(request)
        return None

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
            known = server_of(self._get_json(base + "/models"))
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

    # -- what the server says about itself ---------------------------------------------------
    def _get_json(self, url: str, body: dict[str, Any] | None = None) -> Any:
        """One small synchronous call (model list, tokenizer): JSON, or None on any failure."""
        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        data = None if body is None else json.dumps(body).encode()
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers),
                                        timeout=min(self.timeout_s, 10.0)) as reply:
                return json.loads(reply.read())
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def served_model(self) -> str | None:
        """The checkpoint behind the model id (``root`` in ``GET /models``), asked once."""
        if not self._served_known:
            listing = self._model_listing()
            entries = listing.get("data") if isinstance(listing, dict) else None
            for entry in entries or []:
                if isinstance(entry, dict) and entry.get("id") == self.model:
                    self._served = str(entry.get("root") or entry["id"])
            # asked once: an identity that changed mid-run would split its cache keys
            self._served_known = True
        return self._served

    def _model_listing(self) -> Any:
        """``GET /models`` until the server answers (`until_answered`): its listing, or None
        from a server that has none (an HTTP error other than 408, 429, 500 and 502-504, or a
        body that is not JSON). `served` is in the signature, so a server that does not
        answer (down, starting, failing) stops the run before it starts, rather than giving
        it a signature its resume would not find."""
        from judgebench.plugin_api import retry_after_seconds

        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        url = self.base + "/models"

        def ask() -> Any:
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                            timeout=min(self.timeout_s, 10.0)) as reply:
                    return json.loads(reply.read())
            except urllib.error.HTTPError as exc:
                if exc.code in (408, 429, 500, 502, 503, 504):
                    raise Retryable("server_error", f"HTTP {exc.code}",
                                    retry_after_seconds(exc.headers)) from None
                return None
            except ValueError:
                return None
            except OSError as exc:  # refused, reset, timed out
                raise Retryable("connection", f"{type(exc).__name__}: "
                                f"{getattr(exc, 'reason', exc)}") from None

        return self.until_answered(
            ask, f"GET {url}", "the judge's signature names the checkpoint it lists, so the "
            "run does not start without it: start the server, or give more max_attempts")

    #: /tokenize only counts tokens for estimates and budgets
    not_in_cache_key = RemoteBackend.not_in_cache_key | {"tokenize"}

    def identity(self) -> dict[str, str]:
        served = self.served_model()
        return {**super().identity(), **({"served": served} if served else {})}

    def request_model(self) -> str:
        """The model name requests carry (a managed server may serve an adapter's name)."""
        return self.model

    def pool(self, task: str, inputs: Sequence[Any]) -> list[list[float]]:
        """One vector per input from the server's pooling endpoints (see the module): task
        ``classify``, ``reward`` or ``embed`` on texts, ``score`` on (text, text) pairs."""
        root = self.base[:-3] if self.base.endswith("/v1") else self.base
        model = self.request_model()
        if task == "score":
            url, body = root + "/score", {"model": model, "text_1": [a for a, _ in inputs],
                                          "text_2": [b for _, b in inputs]}
        elif task in POOLING_ROUTES:
            url = (self.base if task == "embed" else root) + POOLING_ROUTES[task][0]
            body = {"model": model, "input": list(inputs)}
        else:
            raise ValueError(f"unknown pooling task {task!r}")
        found = self._get_json(url, body)
        data = found.get("data") if isinstance(found, dict) else None
        if not isinstance(data, list) or len(data) != len(inputs):
            raise JudgebenchError(f"{self.name}: POST {url} did not answer one result per "
                                  f"input (is the model served with --runner pooling?)")
        field = "score" if task == "score" else POOLING_ROUTES[task][1]
        ordered = sorted(data, key=lambda d: int(d.get("index", 0)))
        return [flat_floats(entry.get(field)) for entry in ordered]

    def count_tokens(self, request: Request) -> int:
        """The server's own count (``POST /tokenize``) for estimates made outside the call
        loop (``--dry-run``, the budget preflight), else the base estimate: inside the loop
        a blocking round trip per call would cost more than the reservation it sizes."""
        if self._can_tokenize and not _in_event_loop():
            root = self.base[:-3] if self.base.endswith("/v1") else self.base
            body: dict[str, Any] = {"model": self.model}
            if request.prompt is not None:
                body["prompt"] = request.prompt
            else:
                body.update(messages=[dict(m) for m in request.messages],
                            **self.chat_template_fields(request))
            found = self._get_json(root + "/tokenize", body)
            if isinstance(found, dict) and isinstance(found.get("count"), int):
                return int(found["count"])
            self._can_tokenize = False  # no tokenizer endpoint: estimate from here on
        return Backend.count_tokens(self, request)

    # -- the wire protocol ------------------------------------------------------------------
    async def open_client(self) -> Any:
        import aiohttp

        if self.server_option == "auto":
            await asyncio.to_thread(self.server_kind)
        connector = aiohttp.TCPConnector(limit=self.concurrency)
        return aiohttp.ClientSession(connector=connector,
                                     timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    async def close_client(self, client: Any) -> None:
        await client.close()

    def chat_template_fields(self, request: Request) -> dict[str, Any]:
        """vLLM's fields for a prefill: continue the final assistant message."""
        if self.capabilities.prefill and request.messages[-1]["role"] == "assistant":
            return {"add_generation_prompt": False, "continue_final_message": True}
        return {}

    def endpoint(self, request: Request) -> str:
        return self.url if request.prompt is None else self.base + "/completions"

    def body(self, request: Request, structured: str | None = None
             ) -> tuple[dict[str, Any], Enforced | None]:
        """The JSON body of one chat (or completion) request with the response_format step
        `structured` (default: the server's current one), and what it asks the server to
        enforce."""
        body: dict[str, Any] = {
            "model": self.request_model(),
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
        if request.prompt is None:
            body["messages"] = [dict(m) for m in request.messages]
            body.update(self.chat_template_fields(request))
            return body, enforced
        body["prompt"] = request.prompt
        body["max_tokens"] = max(1, request.max_tokens)  # a server generates at least one
        body.pop("top_logprobs", None)
        if request.logprobs or request.prompt_logprobs:  # completions: an int, not a flag
            body["logprobs"] = max(1, min(request.top_logprobs, 20))
        if request.prompt_logprobs:
            body["echo"] = True
        return body, enforced

    async def send(self, client: Any, request: Request) -> Any:
        mode = self.structured_mode
        while True:
            body, enforced = self.body(request, mode)
            status, content, reply_headers = await self._post(client, self.endpoint(request),
                                                              body)
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
        return request, namespace(data), enforced

    async def _post(self, client: Any, url: str, body: dict[str, Any]
                    ) -> tuple[int, bytes, Any]:
        import aiohttp

        headers = {"Content-Type": "application/json"}
        key = self.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            async with client.post(url, data=json.dumps(body), headers=headers) as reply:
                return reply.status, await reply.read(), reply.headers
        except TimeoutError:
            raise Retryable("timeout", f"no answer within {self.timeout_s:g}s") from None
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError) as exc:
            raise Retryable("malformed", f"{type(exc).__name__}: {exc}") from None
        except aiohttp.ClientError as exc:
            raise Retryable("connection", f"{type(exc).__name__}: {exc}") from None

    def parse(self, raw: Any, latency_s: float) -> Response:
        request, answer, enforced = raw
        # the checkpoint GET /models named when the identity was built (never asked here)
        served = self._served if self._served_known else None
        response = parse_answer(self, answer, latency_s, revision=served)
        if not response.ok:
            return response
        if request.prompt is None:
            return dataclasses.replace(response, constrained=enforced)
        return completion_response(response, answer, request)


def server_of(listing: Any) -> str:
    """``vllm`` when a ``GET /models`` listing has a model ``owned_by`` vllm, else ``openai``
    (also for no listing: a server that does not answer it)."""
    models = listing.get("data") if isinstance(listing, dict) else None
    owners = {m.get("owned_by") for m in models or [] if isinstance(m, dict)}
    return "vllm" if "vllm" in owners else "openai"
