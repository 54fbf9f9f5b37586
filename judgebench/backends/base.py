"""The one model-backend interface: batched requests in, texts and token logprobs out.

Every backend (the built-ins in plugins/judgebench_backends: litellm for APIs and
OpenAI-compatible servers, openai_compat for the latter without litellm's overhead, vllm for
in-process GPU batching, transformers for the embedded CPU default; or any plugin's)
implements::

    class MyBackend(Backend):
        name = "mine"
        async def agenerate(self, requests: Sequence[Request]) -> list[Response]: ...

and is registered by a plugin with ``register_backends(register)``: ``register("mine", MyBackend)``
(or ``register("mine", LazyBackend("my_pkg.module:MyBackend"))`` to import it on first use).
A backend that calls a model over the network subclasses `judgebench.backends.remote.
RemoteBackend` instead, which brings concurrency, rate limits, retries, timeouts, the budget
and dry run, and implements only its wire protocol.
Callers get one from a plugin host, ``host.backend(name, **options)`` (a metric: from the host
that built it, ``self.host``), or with ``get_backend(name, **options)`` from the installed
plugins.
`Backend.accepts()` (its constructor's parameters unless it says otherwise) tells a caller
holding options for any backend (a judge) which of them this one takes.

Requests
    A `Request` is plain, immutable data: either chat ``messages`` (``[{"role", "content"}]``,
    the backend applies the model's chat template; a final ``assistant`` message is a prefill
    that the model continues, where the backend can) or a raw completion ``prompt``; decoding
    parameters (``max_tokens``, ``temperature``, ``top_p``, ``seed``, ``stop``); what to return
    (``logprobs`` for the generated tokens with the ``top_logprobs`` best alternatives at each
    position, ``prompt_logprobs`` for the log-probability of every prompt token); an optional
    ``constraint`` on the answer (`judgebench.backends.base.Constraint`: one of a set
    of choices, a regex, or a JSON schema; ``json_schema=S`` is short for
    ``constraint=Constraint(json_schema=S)``); and ``sample_index``, which tells apart otherwise
    identical requests (several samples at temperature > 0) and is part of the cache key.
    ``max_tokens=0`` with ``prompt_logprobs=True`` scores a text without generating (this is
    how a likelihood metric asks for log p(text)).

Responses
    `generate(requests)` (sync) / `agenerate(requests)` (async) return one `Response` per
    request, in order, and never raise for a failed call: a failure is a Response with
    ``error`` set (a `Failure` with a ``kind`` and a ``message`` that never contains a secret).
    An answer is classified by `classify_answer` (ok, refused, malformed), the same for every
    backend; `Response.redacted` scrubs secrets a server quoted back.
    A Response carries ``text`` (and ``finish_reason``), ``logprobs`` (one `TokenLogprob` per
    generated token, each with its ``top`` alternatives, most likely first), ``prompt_logprobs``
    (one per prompt token; the first token's logprob is None since nothing conditions it),
    ``constrained`` (which constraint the decoder enforced: ``"choice"``, ``"regex"``,
    ``"json"``, ``"json_object"``, or None when the answer was not constrained), for a choice
    constraint with ``logprobs`` where the backend can, ``choice_logprobs`` (each one-token
    choice's log-probability at the first generated position, before the constraint),
    ``tokens_in``/``tokens_out``, ``cost_usd`` (None when the price is unknown, never 0 for
    unknown), ``latency_s``, ``model`` (the model that answered) and ``cached``.
    A backend that cannot do what a request asks (e.g. prompt logprobs over an API) answers
    with ``Failure(kind="unsupported")``; check `Backend.capabilities` first.

Constraints
    What a judge needs to read is a `Constraint` on its Request: the whole answer is one of a
    set of ``choices`` (a score "1".."5", a verdict "A"/"B"/"C"), matches a ``regex``
    (the syntax Python's `re` and Rust's `regex` share: classes, alternation, bounded
    repetition; no look-around or back-references), or is JSON under a ``json_schema``.
    `Capabilities.constraints` lists the kinds a backend enforces while decoding and
    `Backend.enforcement(kind)` what it enforces now (a server may have been found to take
    less). A backend enforces what it can and says so in `Response.constrained` (the kind,
    ``"json_object"`` where a server enforced only "some JSON object", or None); one that
    cannot answers unconstrained and the judge's strict parser decides. A constraint is never
    a reason to fail a call.

Run settings
    Backends that spend money call ``runtime.current().budget.check(estimated_cost)`` before a
    call (None when the price is unknown: refused under a limit unless the run allows unknown
    costs) and ``.charge(cost_or_None)`` after it; `BudgetExceeded` propagates out of
    `agenerate` to stop the run (finished calls are already in the judge cache). Under
    ``runtime.current().dry_run`` a backend makes no call and answers ``kind="dry_run"``.

Identity
    `Backend.identity()` names everything about the backend that decides its outputs (backend
    name, model id, revision); judges put it in their signature. The judge cache hashes
    `Backend.cache_identity()` with the request: the identity plus what a signature leaves
    out but an answer depends on (a remote backend's endpoint, `RemoteBackend.cache_identity`).
    Neither ever contains an API key.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import inspect
import json
import math
import re
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field

from judgebench.errors import InputError, JudgebenchError
from judgebench.metric import MAX_BATCH, MAX_COUNT, MAX_SECONDS, MAX_TOKENS
from judgebench.redact import redact
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    from judgebench.registry import NamedEntry

Role = Literal["system", "user", "assistant"]

FailureKind = Literal[
    "rate_limited",  # 429 after every allowed attempt
    "timeout",  # no answer within the per-call timeout, every attempt
    "server_error",  # 5xx after every allowed attempt
    "connection",  # could not reach the server
    "malformed",  # an answer that is not the protocol (truncated or invalid body)
    "bad_request",  # 4xx other than 429: retrying cannot help
    "refused",  # the provider's content filter declined
    "unsupported",  # the backend cannot do what the request asks
    "dry_run",  # --dry-run: no call was made
    "error",  # anything else
]


#: The kinds of `Constraint`: what a judge needs to read.
ConstraintKind = Literal["choice", "regex", "json"]
#: What a backend reports it enforced (`Response.constrained`).
Enforced = Literal["choice", "regex", "json", "json_object"]
KINDS: tuple[ConstraintKind, ...] = ("choice", "regex", "json")


@dataclass(frozen=True)
class Constraint:
    """Exactly one of `choices`, `regex` and `json_schema`."""

    choices: tuple[str, ...] = ()
    regex: str | None = None
    json_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        given = sum((bool(self.choices), self.regex is not None, self.json_schema is not None))
        if given != 1:
            raise ValueError("a Constraint has exactly one of choices, regex and json_schema")
        if self.choices:
            if not isinstance(self.choices, tuple):
                object.__setattr__(self, "choices", tuple(self.choices))
            if any(not isinstance(c, str) or not c for c in self.choices):
                raise ValueError(f"choices are non-empty strings, got {self.choices!r}")
            if len(set(self.choices)) != len(self.choices):
                raise ValueError(f"choices repeat: {self.choices!r}")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"constraint regex {self.regex!r}: {exc}") from None
        if self.json_schema is not None and not isinstance(self.json_schema, dict):
            raise ValueError("a constraint's json_schema is a JSON object (a dict)")

    @classmethod
    def choice(cls, *choices: str) -> Constraint:
        return cls(choices=tuple(choices))

    @property
    def kind(self) -> ConstraintKind:
        if self.choices:
            return "choice"
        return "regex" if self.regex is not None else "json"

    def matches(self, text: str) -> bool:
        """Whether `text` satisfies the constraint (for JSON: parses to an object, or to
        whatever type the schema's top level names; the schema's details are the parser's)."""
        if self.choices:
            return text in self.choices
        if self.regex is not None:
            return re.fullmatch(self.regex, text) is not None
        try:
            value = json.loads(text)
        except ValueError:
            return False
        top = (self.json_schema or {}).get("type")
        return top != "object" or isinstance(value, dict)

    def to_dict(self) -> dict[str, Any]:
        if self.choices:
            return {"choices": list(self.choices)}
        if self.regex is not None:
            return {"regex": self.regex}
        return {"json_schema": self.json_schema}


@dataclass(frozen=True)
class TokenLogprob:
    """One token with its log-probability and, where asked for, its best alternatives."""

    token: str
    logprob: float | None
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Request:
    """One model call. Exactly one of `messages` (chat) and `prompt` (completion) is set."""

    messages: tuple[dict[str, str], ...] = ()
    prompt: str | None = None
    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    prompt_logprobs: bool = False
    json_schema: dict[str, Any] | None = None
    sample_index: int = 0
    constraint: Constraint | None = None
    #: Which of `score --repeats K` independent draws of a judgement this call is (0: the
    #: first, and every call without --repeats). In the cache key when > 0, so draw r is
    #: replayed as draw r and K draws are K distinct keys; never sent to the model.
    repeat: int = 0

    def __post_init__(self) -> None:
        if self.json_schema is not None and self.constraint is None:
            object.__setattr__(self, "constraint", Constraint(json_schema=self.json_schema))
        elif self.constraint is not None and self.constraint.json_schema is not None:
            if self.json_schema not in (None, self.constraint.json_schema):
                raise ValueError("json_schema and constraint name different schemas")
            object.__setattr__(self, "json_schema", self.constraint.json_schema)
        elif self.constraint is not None and self.json_schema is not None:
            raise ValueError("a Request has one constraint: json_schema or a choice/regex "
                             "constraint, not both")
        if bool(self.messages) == (self.prompt is not None):
            raise ValueError("a Request has either `messages` or `prompt`, not both or neither")
        for message in self.messages:
            if set(message) != {"role", "content"} or message["role"] not in (
                "system", "user", "assistant"
            ):
                raise ValueError(f"a chat message is {{'role', 'content'}}, got {message!r}")
        if self.repeat < 0:
            raise ValueError("repeat must be >= 0")
        if self.max_tokens < 0 or (self.max_tokens == 0 and not self.prompt_logprobs):
            raise ValueError("max_tokens must be > 0 (or 0 with prompt_logprobs=True)")
        if self.top_logprobs < 0 or (self.top_logprobs and not self.logprobs):
            raise ValueError("top_logprobs needs logprobs=True and must be >= 0")
        if not 0.0 <= self.temperature <= 2.0 or not 0.0 < self.top_p <= 1.0:
            raise ValueError("temperature must be in [0, 2] and top_p in (0, 1]")

    @classmethod
    def chat(cls, *messages: tuple[Role, str] | dict[str, str], **params: Any) -> Request:
        """``Request.chat(("system", "..."), ("user", "..."), max_tokens=64)``."""
        built = tuple(
            dict(m) if isinstance(m, dict) else {"role": m[0], "content": m[1]} for m in messages
        )
        return cls(messages=built, **params)

    def with_sample(self, index: int, *, seed: int | None = None) -> Request:
        return replace(self, sample_index=index, seed=self.seed if seed is None else seed)

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["messages"] = [dict(m) for m in self.messages]
        data["stop"] = list(self.stop)
        # A JSON constraint is `json_schema` (so requests made before constraints existed keep
        # their hash); the others are written only when set.
        constraint = data.pop("constraint")
        if constraint is not None and constraint.kind != "json":
            data["constraint"] = constraint.to_dict()
        if not data["repeat"]:  # the first draw keeps the key it had before repeats existed
            del data["repeat"]
        return data

    def content_hash(self, identity: dict[str, str]) -> str:
        """SHA-256 of the backend identity plus every field of the request (canonical JSON)."""
        payload = {"backend": dict(sorted(identity.items())), "request": self.to_dict()}
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    message: str
    attempts: int = 1

    def __str__(self) -> str:
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        return f"{self.kind}{tries}: {self.message}"


#: The fields of a Response that say what answered (`Response.fingerprint`).
FINGERPRINT_FIELDS = ("model", "system_fingerprint", "revision")


@dataclass(frozen=True)
class Response:
    """The answer to one Request (or why there is none: `error`)."""

    text: str = ""
    finish_reason: str | None = None
    logprobs: tuple[TokenLogprob, ...] | None = None
    prompt_logprobs: tuple[TokenLogprob, ...] | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    model: str | None = None
    cached: bool = False
    error: Failure | None = None
    constrained: Enforced | None = None
    choice_logprobs: tuple[tuple[str, float], ...] | None = None
    #: What answered, beside `model` (the model name the answer returned): the API's
    #: ``system_fingerprint`` (its backend configuration), and the served checkpoint or the
    #: weights' hash of a local or self-hosted model (`revision`). Not in any signature.
    system_fingerprint: str | None = None
    revision: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def fingerprint(self) -> dict[str, str] | None:
        """What answered: `model`, `system_fingerprint` and `revision`, those set (None when
        none is)."""
        found = {name: str(value) for name in FINGERPRINT_FIELDS
                 if (value := getattr(self, name)) not in (None, "")}
        return found or None

    @classmethod
    def failed(cls, kind: FailureKind, message: str, **kwargs: Any) -> Response:
        attempts = kwargs.pop("attempts", 1)
        return cls(error=Failure(kind, message, attempts), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def redacted(self) -> Response:
        """This response with every secret scrubbed from its text, its token strings and its
        failure message (`judgebench.redact`); itself when there is none."""
        text = redact(self.text) or ""
        error = self.error
        if error is not None and redact(error.message) != error.message:
            error = replace(error, message=redact(error.message) or "")
        if text == self.text and error is self.error:
            return self
        return replace(self, text=text, error=error, logprobs=_redacted_tokens(self.logprobs))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Response:
        def tokens(items: Any) -> tuple[TokenLogprob, ...] | None:
            if items is None:
                return None
            return tuple(
                TokenLogprob(t["token"], t["logprob"], tuple((a, b) for a, b in t["top"]))
                for t in items
            )

        data = dict(data)
        data["logprobs"] = tokens(data.get("logprobs"))
        data["prompt_logprobs"] = tokens(data.get("prompt_logprobs"))
        if data.get("choice_logprobs") is not None:
            data["choice_logprobs"] = tuple((c, lp) for c, lp in data["choice_logprobs"])
        if data.get("error") is not None:
            data["error"] = Failure(**data["error"])
        return cls(**data)


def _redacted_tokens(tokens: tuple[TokenLogprob, ...] | None) -> tuple[TokenLogprob, ...] | None:
    if tokens is None:
        return None
    return tuple(
        TokenLogprob(redact(t.token) or "", t.logprob,
                     tuple((redact(alt) or "", lp) for alt, lp in t.top))
        for t in tokens
    )


AnswerKind = Literal["ok", "refused", "malformed"]


def classify_answer(*, text: str | None, finish_reason: str | None = None,
                    refusal: str | None = None) -> tuple[AnswerKind, str]:
    """The one classification of a model's answer (a call that got a 200), for every backend:
    ``refused`` when the model or the provider's filter declined (``message.refusal`` set, or
    ``finish_reason == "content_filter"``): final, charged and cached like an answer, never
    retried; ``malformed`` when there is no text (retried); else ``ok``. Returns the kind and
    the reason (empty for ``ok``). A call that failed (HTTP error, timeout) is not an answer:
    it is a `Failure` of its own kind."""
    if refusal:
        return "refused", f"the model declined: {refusal}"
    if finish_reason == "content_filter":
        return "refused", "the provider's content filter declined (finish_reason=content_filter)"
    if text is None:
        return "malformed", "the answer has no text"
    return "ok", ""


@dataclass(frozen=True)
class Capabilities:
    """What a backend can return; judges adapt (e.g. G-Eval samples n times without logprobs)."""

    logprobs: bool = False
    max_top_logprobs: int = 0
    prompt_logprobs: bool = False
    json_schema: bool = False
    #: The constraint kinds ("choice", "regex", "json") the backend enforces while decoding.
    constraints: frozenset[str] = frozenset()
    #: A final assistant message is continued (a prefill) rather than answered.
    prefill: bool = False
    #: Calls that cost money (the budget applies) rather than local compute.
    paid: bool = False

    def enforces(self, kind: ConstraintKind) -> bool:
        """Whether a constraint of `kind` is enforced by decoding (``json_schema`` structured
        output counts as enforcing JSON)."""
        return kind in self.constraints or (kind == "json" and self.json_schema)


@dataclass(frozen=True)
class Accepts:
    """The options a backend's constructor takes: `names` (None: any keyword) and, of them,
    the `required` ones. Callers that hold options for many backends (judges) pass each one
    only what it accepts."""

    names: frozenset[str] | None
    required: frozenset[str] = frozenset()

    def __contains__(self, name: object) -> bool:
        return self.names is None or name in self.names


def accepts_of(factory: Any) -> Accepts:
    """What a registered backend (a Backend class, anything with an ``accepts()``, or a plain
    factory function) takes: its ``accepts()``, else its call signature."""
    declared = getattr(factory, "accepts", None)
    if callable(declared):
        found = declared()
        if isinstance(found, Accepts):
            return found
    return _signature_accepts(factory)


def _signature_accepts(function: Any) -> Accepts:
    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: nothing to read
        return Accepts(None)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return Accepts(None)
    named = [p for p in parameters if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                 inspect.Parameter.KEYWORD_ONLY)]
    return Accepts(frozenset(p.name for p in named),
                   frozenset(p.name for p in named if p.default is inspect.Parameter.empty))


class Backend:
    """Base class of every backend. Subclasses implement `agenerate` (or `generate_sync`)."""

    name: ClassVar[str] = ""
    capabilities: Capabilities = Capabilities()

    def __init__(self, model: str, revision: str | None = None) -> None:
        self.model = model
        self.revision = revision or ""

    @classmethod
    def accepts(cls) -> Accepts:
        """The options this backend is built with (default: its constructor's parameters)."""
        return _signature_accepts(cls)

    # -- what decides the outputs ---------------------------------------------------------
    def identity(self) -> dict[str, str]:
        return {"backend": self.name, "model": self.model, "revision": self.revision or "none"}

    def cache_identity(self) -> dict[str, str]:
        """What the judge cache's key names about this backend: `identity()` plus the settings
        that change an answer but are no part of a signature (a remote backend's endpoint and
        options); never a key, a key variable's name or a header value. Default: identity."""
        return self.identity()

    def enforcement(self, kind: ConstraintKind) -> Enforced | None:
        """What this backend enforces for a constraint of `kind` (None: nothing, the answer
        comes unconstrained); default: the kind itself where `capabilities` say so. A backend
        that learns what its server takes (a fallback) reports what it now uses."""
        return kind if self.capabilities.enforces(kind) else None

    # -- calls ----------------------------------------------------------------------------
    async def agenerate(self, requests: Sequence[Request]) -> list[Response]:
        """One Response per request, in order; failures are Responses with `error` set."""
        return await asyncio.to_thread(self.generate_sync, list(requests))

    async def aiter_generate(
        self, requests: Sequence[Request]
    ) -> AsyncIterator[tuple[int, Response]]:
        """Yield ``(index, Response)`` as each call finishes, in any order.

        The judge cache stores each answer as it arrives, so a run killed half-way keeps what
        it finished. Backends that batch or run calls concurrently override this; the default
        waits for `agenerate`.
        """
        for index, response in enumerate(await self.agenerate(requests)):
            yield index, response

    def generate_sync(self, requests: list[Request]) -> list[Response]:
        raise NotImplementedError(f"backend {self.name} implements neither agenerate nor "
                                  "generate_sync")

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Blocking form of `agenerate` (runs an event loop, or a thread if one is running)."""
        return run_sync(self.agenerate(list(requests)))

    # -- estimates for --dry-run and budgets ----------------------------------------------
    def count_tokens(self, request: Request) -> int:
        """Prompt tokens of `request`; the base estimate is ~4 characters a token."""
        text = request.prompt if request.prompt is not None else "".join(
            m["content"] for m in request.messages
        )
        return max(1, math.ceil(len(text) / 4)) + 4 * len(request.messages)

    def price(self) -> tuple[float, float] | None:
        """USD per (input token, output token); None when unknown. Local backends cost 0."""
        return None if self.capabilities.paid else (0.0, 0.0)

    def estimate_cost(self, tokens_in: int, tokens_out: int) -> float | None:
        price = self.price()
        if price is None:
            return None
        return tokens_in * price[0] + tokens_out * price[1]

    def close(self) -> None:
        """Free models, sessions or threads."""


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion from sync code, even inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:
            box["error"] = exc

    context = contextvars.copy_context()  # keep the run settings visible in the thread
    thread = threading.Thread(target=context.run, args=(target,), daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class LazyBackend:
    """A backend to register without importing it: ``LazyBackend("pkg.module:ClassName")``
    imports the module when the backend is first built or asked what it `accepts` (so the
    module must itself import its model library only inside methods)."""

    def __init__(self, target: str) -> None:
        module, _, attribute = target.partition(":")
        if not module or not attribute:
            raise ValueError(f"LazyBackend needs 'module:ClassName', got {target!r}")
        self.target = target
        self._module, self._attribute = module, attribute

    def load(self) -> type[Backend]:
        import importlib

        loaded = getattr(importlib.import_module(self._module), self._attribute)
        if not (isinstance(loaded, type) and issubclass(loaded, Backend)):
            raise TypeError(f"{self.target} is not a Backend subclass")
        return loaded

    def accepts(self) -> Accepts:
        return self.load().accepts()

    def __call__(self, **options: Any) -> Backend:
        return self.load()(**options)

    def __repr__(self) -> str:
        return f"LazyBackend({self.target!r})"


def registered_backend(backends: Mapping[str, NamedEntry], name: str) -> Any:
    """The factory registered under `name` in `backends` (InputError naming the known ones)."""
    if name not in backends:
        known = ", ".join(sorted(backends)) or "none"
        raise InputError(f"unknown backend '{name}'{did_you_mean(name, backends)} "
                         f"(registered backends: {known})")
    return backends[name].obj


def make_backend(backends: Mapping[str, NamedEntry], name: str,
                 options: dict[str, Any]) -> Backend:
    """The backend registered under `name` in `backends`, built with `options`."""
    factory = registered_backend(backends, name)
    try:
        backend: Backend = factory(**options)
        return backend
    except (TypeError, ValueError) as exc:  # unknown or bad options
        raise InputError(f"backend '{name}': {exc}") from None
    except (RuntimeError, ImportError) as exc:  # something to install
        raise JudgebenchError(f"backend '{name}': {exc}") from None


# -- engine options -------------------------------------------------------------------------
# Options of a local inference engine (vLLM in process or `vllm serve`), as metric options.
#
# A judge or model-based metric takes them next to ``backend`` and ``model``
# (``judge.rubric:backend=vllm,model=/models/qwen,tensor_parallel_size=2``, or the same keys
# in a TOML ``[metrics.<column>]`` table) and hands each one the user gave to the backend,
# which must accept it (`Backend.accepts`): transformers takes ``dtype`` but not
# ``tensor_parallel_size``, and saying so is an error, never silence. All default to None
# (the backend's own default), and only the ones given enter a signature, so adding an
# option here changes no existing signature.

#: Engine options that change how the engine is started, not what it answers: kept out of
#: signatures (the backend's identity records what it served).
ENGINE_RUNTIME_OPTIONS = frozenset({"command", "startup_timeout_s"})


class EngineOptions(BaseModel):
    """A mixin for metric Options: the engine options a user may set (see the module)."""

    tensor_parallel_size: int | None = Field(None, ge=1, le=MAX_COUNT)
    pipeline_parallel_size: int | None = Field(None, ge=1, le=MAX_COUNT)
    data_parallel_size: int | None = Field(None, ge=1, le=MAX_COUNT)
    max_model_len: int | None = Field(None, ge=1, le=MAX_TOKENS)
    gpu_memory_utilization: float | None = Field(None, gt=0.0, le=1.0)
    quantization: str | None = None
    dtype: str | None = None
    enforce_eager: bool | None = None
    max_num_seqs: int | None = Field(None, ge=1, le=MAX_BATCH)
    enable_prefix_caching: bool | None = None
    #: a LoRA adapter directory, served on the base model's shared engine
    lora: str | None = None
    #: vllm_server: the start command (default: $JUDGEBENCH_VLLM_SERVE or ``vllm serve``)
    command: str | None = None
    #: vllm_server: seconds to wait for the server to become healthy
    startup_timeout_s: float | None = Field(None, gt=0, le=MAX_SECONDS)


ENGINE_OPTIONS = tuple(EngineOptions.model_fields)


def given_engine_options(options: BaseModel) -> dict[str, Any]:
    """The engine options set on `options` (any model with the EngineOptions fields)."""
    return {name: getattr(options, name) for name in ENGINE_OPTIONS
            if getattr(options, name, None) is not None}


def unset_engine_fields(options: BaseModel) -> set[str]:
    """The engine option names to leave out of a signature: unset, or runtime-only."""
    given = given_engine_options(options)
    return {name for name in ENGINE_OPTIONS
            if name not in given or name in ENGINE_RUNTIME_OPTIONS}


__all__ = [
    "ENGINE_OPTIONS",
    "Accepts",
    "Backend",
    "Capabilities",
    "Constraint",
    "ConstraintKind",
    "Enforced",
    "EngineOptions",
    "Failure",
    "FailureKind",
    "LazyBackend",
    "Request",
    "Response",
    "TokenLogprob",
    "accepts_of",
    "classify_answer",
    "given_engine_options",
    "run_sync",
    "unset_engine_fields",
]
