"""What every LLM judge shares: backend options, the judge cache, templates, the protocol
(structured JSON, plain text, or two-stage prefill), concurrent scoring and dry-run estimates.

A judge subclass implements ``async judge(sample) -> Outcome`` using ``await self.ask(...)``
(one request, answered through the cache, batched with every other request made in the same
event-loop tick) and ``planned_requests(sample)`` for `estimate`. `score(samples)` runs all
samples of a batch concurrently in one event loop and returns one Outcome per sample;
`score_stream(samples)` runs them the same way and yields each sample's Outcome as it
finishes (the event loop runs in a thread, so calls go on while the runner commits).

Protocols (option ``protocol``, recorded in the signature):

- ``json``: the backend's structured output with a JSON schema; strict JSON parser.
- ``text``: one call; the answer must contain the format marker (``[RESULT] n``, ``[[A]]``).
- ``two_stage``: for backends that continue a prefill (local models): the model writes its
  feedback (stopping at a newline), then continues ``<feedback> [RESULT]`` (or
  ``Verdict: [[``) and must begin its continuation with the score. Small local models rarely
  keep a free-text format; this keeps their score their own greedy output.
- ``auto`` (default): json where the backend has structured output, else two_stage where it
  can prefill, else text.

What the judge reads is stated to the backend as a `Constraint`: the JSON schema (json), the
score's or verdict's choices on the second stage (two_stage). A backend that enforces it
while decoding (`Backend.enforcement`) makes the answer parse by construction; the kind it
enforces is in the signature (``constrained:``) and in each score's ``extra["constrained"]``
(what the backend reported for that call).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import hashlib
import math
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from judgebench.plugin_api import (
    ENGINE_OPTIONS,
    FINGERPRINT,
    MAX_BATCH,
    MAX_COUNT,
    MAX_MAGNITUDE,
    MAX_SECONDS,
    MAX_SEED64,
    MAX_TOKENS,
    MIN_SEED64,
    REQUEST_KEYS,
    Backend,
    CachedBackend,
    Constraint,
    EmptyText,
    EngineOptions,
    InputError,
    JudgeCache,
    Metric,
    Outcome,
    Request,
    Response,
    Sample,
    Status,
    default_cache_path,
    redact,
    run_sync,
    runtime,
    unset_engine_fields,
)
from judgebench_judges import parsing
from judgebench_judges.templates import Template, load_template

Protocol = Literal["auto", "json", "text", "two_stage"]

#: Options that change how calls are made but not what they answer: kept out of signatures.
RUNTIME_OPTIONS = {"api_key_env", "api_base", "concurrency", "timeout_s", "max_attempts", "rpm",
                   "tpm", "cache", "input_cost_per_token", "output_cost_per_token", "price_in",
                   "price_out", "template", "batch", "logprobs", "server"}


#: Judge options that configure the backend, by the name the backend takes each under. Each
#: goes to whichever backend accepts it (`Backend.accepts`), whatever the backend's name.
BACKEND_OPTIONS = {"model": "model", "revision": "revision", "api_base": "api_base",
                   "api_key_env": "api_key_env", "concurrency": "concurrency",
                   "timeout_s": "timeout_s", "max_attempts": "max_attempts", "rpm": "rpm",
                   "tpm": "tpm", "input_cost_per_token": "input_cost_per_token",
                   "output_cost_per_token": "output_cost_per_token", "price_in": "price_in",
                   "price_out": "price_out", "logprobs": "logprobs", "batch": "batch_size",
                   "server": "server", **{name: name for name in ENGINE_OPTIONS}}


class _JudgeCoreOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    backend: str = "transformers"
    model: str | None = None
    revision: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    template: str | None = None
    protocol: Protocol = "auto"
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(256, ge=1, le=MAX_TOKENS)
    feedback_tokens: int = Field(128, ge=1, le=MAX_TOKENS)
    seed: int | None = Field(None, ge=MIN_SEED64, le=MAX_SEED64)
    concurrency: int = Field(16, ge=1, le=MAX_BATCH)
    timeout_s: float = Field(60.0, gt=0, le=MAX_SECONDS)
    max_attempts: int = Field(6, ge=1, le=MAX_COUNT)
    #: requests and tokens per minute (0: no limit)
    rpm: float | None = Field(None, ge=0, le=MAX_MAGNITUDE)
    tpm: float | None = Field(None, ge=0, le=MAX_MAGNITUDE)
    input_cost_per_token: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    output_cost_per_token: float | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    #: USD per million input / output tokens (the same price as *_cost_per_token, scaled).
    price_in: float | None = Field(None, ge=0, le=1e6, allow_inf_nan=False)
    price_out: float | None = Field(None, ge=0, le=1e6, allow_inf_nan=False)
    cache: bool = True
    #: backends taking batch_size (transformers): samples per forward pass (1 measured
    #: fastest on 2 CPU cores).
    batch: int = Field(1, ge=1, le=MAX_BATCH)
    #: remote backends: whether the server returns token logprobs (default: the backend's).
    logprobs: bool | None = None
    #: openai_compat: what the server is (auto | openai | vllm | vllm-guided), i.e. whether
    #: it enforces choices and regexes; what it enforced is in the signature (constrained:).
    server: str | None = None


class JudgeOptions(EngineOptions, _JudgeCoreOptions):
    """A judge's options, then the engine options (listed in this order)."""

    model_config = ConfigDict(extra="forbid")


JudgeOptionsT = TypeVar("JudgeOptionsT", bound=JudgeOptions)

#: The judge-cache keys of the requests made for the sample being judged (in this task).
_request_keys: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "judge_request_keys", default=None)


class JudgeMetric(Metric[JudgeOptionsT]):
    Options: type[JudgeOptionsT] = JudgeOptions  # type: ignore[assignment]
    batch_size: ClassVar[int] = 512
    template_name: ClassVar[str] = ""
    placeholders: ClassVar[set[str]] = set()
    parser_name: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        name, allowed = self.chosen_template()
        self.template: Template = load_template(name, self.options.template).check(allowed)
        self._backend: CachedBackend | None = None

    def chosen_template(self) -> tuple[str, set[str]]:
        """The built-in template this judge uses with its options (a mode may choose
        another) and the placeholders it fills."""
        return self.template_name, self.placeholders

    # -- backend ------------------------------------------------------------------------------
    def backend_options(self) -> dict[str, Any]:
        """The judge's backend options that the chosen backend takes (`host.backend_accepts`), by
        the backend's names for them (`BACKEND_OPTIONS`), for any registered backend. An
        option the backend does not take is dropped if it is a default and an InputError
        (naming the metric, the option and the backend) if the user gave it; a backend that
        takes any keyword gets only the options the user gave."""
        o = self.options
        accepts = self.host.backend_accepts(o.backend)
        given = o.model_fields_set
        if "model" in accepts.required and not o.model:
            raise InputError(f"metric {self.info.name}: backend={o.backend} needs model=... "
                             "(e.g. openai/gpt-4o-mini, or hosted_vllm/NAME with api_base, "
                             "for litellm)")
        opts: dict[str, Any] = {}
        for field, param in BACKEND_OPTIONS.items():
            value = getattr(o, field)
            if value is None or (value == "" and field in ("model", "revision")):
                continue
            if param in accepts and (accepts.names is not None or field in given):
                opts[param] = value
            elif field in given:
                takes = ", ".join(sorted(accepts.names or ())) or "no options"
                raise InputError(f"metric {self.info.name}: backend '{o.backend}' does not "
                                 f"take the option {field}= (it takes: {takes})", field=field)
        return opts

    @property
    def backend(self) -> CachedBackend:
        if self._backend is None:
            inner: Backend = self.host.backend(self.options.backend, **self.backend_options())
            self._backend = CachedBackend(inner, None)
        return self._backend

    def use_cache(self) -> CachedBackend:
        """The backend with the judge cache of the run in progress (its path may come from
        the run settings, which are known only once the run has started)."""
        backend = self.backend
        if self.options.cache:
            path = default_cache_path()
            if backend.cache is None or backend.cache.path != path:
                if backend.cache is not None:
                    backend.cache.close()
                backend.cache = JudgeCache(path)
        return backend

    def unpriced_models(self) -> list[str]:
        """The paid model this judge calls, if its price is unknown (`Budget.preflight`)."""
        inner = self.backend.inner
        if inner.capabilities.paid and inner.price() is None:
            return [f"{inner.name}:{inner.model}"]
        return []

    @property
    def protocol(self) -> str:
        chosen = self.options.protocol
        if chosen != "auto":
            return chosen
        caps = self.backend.capabilities
        if caps.json_schema:
            return "json"
        return "two_stage" if caps.prefill else "text"

    # -- signature ------------------------------------------------------------------------------
    def signature_fields(self) -> dict[str, str]:
        skip = RUNTIME_OPTIONS | unset_engine_fields(self.options)
        fields = {k: v for k, v in super().signature_fields().items() if k not in skip}
        ident = self.backend.identity()
        fields.update({
            "model": ident.get("model", ""),
            "revision": ident.get("revision", "none"),
            "template": f"{self.template.name}:{self.template.hash}",
            "parser": f"{self.parser_name}-{self.protocol}-{parsing.VERSION}",
            "protocol": self.protocol,
        })
        # what else the backend says decides its numbers (dtype; for vllm its version,
        # quantization, adapter hash, batch invariance; for a server the served checkpoint)
        fields.update({k: v for k, v in ident.items()
                       if k not in ("backend", "model", "revision") and v})
        if self.constrained is not None:
            fields["constrained"] = self.constrained
        return fields

    # -- constraints ----------------------------------------------------------------------------
    #: The constraint kind on the answer each protocol reads its score from.
    protocol_constraint: ClassVar[dict[str, str]] = {"json": "json", "two_stage": "choice"}

    @property
    def constrained(self) -> str | None:
        """What the backend enforces on the answer the score is read from (None: nothing;
        the strict parser alone decides)."""
        kind = self.protocol_constraint.get(self.protocol)
        if kind is None:
            return None
        return self.backend.inner.enforcement(kind)  # type: ignore[arg-type]

    @staticmethod
    def choices_after(values: Sequence[str], prefix: str) -> tuple[str, ...]:
        """The answers a model may write right after `prefix` (the marker it continues):
        each value, with a leading space unless the prefix ends in whitespace or an opening
        bracket (``[RESULT]`` -> " 4", ``Verdict: [[`` -> "A")."""
        space = "" if not prefix or prefix[-1].isspace() or prefix[-1] in "[({" else " "
        return tuple(space + v for v in values)

    # -- requests -------------------------------------------------------------------------------
    def messages(self, values: dict[str, str]) -> tuple[dict[str, str], ...]:
        return self.template.render(values, prefill=self.backend.capabilities.prefill)

    def request(self, messages: tuple[dict[str, str], ...], **params: Any) -> Request:
        params.setdefault("temperature", self.options.temperature)
        params.setdefault("max_tokens", self.options.max_tokens)
        if self.options.seed is not None:
            params.setdefault("seed", self.options.seed)
        return Request(messages=messages, **params)

    def protocol_request(self, messages: tuple[dict[str, str], ...], schema: dict[str, Any],
                         stop: tuple[str, ...] = ("\n\n",)) -> Request:
        """The first call of a judgement under the protocol: structured output with `schema`
        (json), feedback up to `stop` (two_stage), or one plain answer (text)."""
        if self.protocol == "json":
            return self.request(messages, json_schema=schema)
        if self.protocol == "two_stage":
            return self.request(messages, max_tokens=self.options.feedback_tokens, stop=stop)
        return self.request(messages)

    def follow_request(self, messages: tuple[dict[str, str], ...], max_tokens: int,
                       choices: Sequence[str] = (), top_logprobs: int = 0) -> Request:
        """The second-stage request: the answer constrained to `choices` (when given), with
        the top `top_logprobs` alternatives per token when > 0."""
        params: dict[str, Any] = {"max_tokens": max_tokens}
        if choices:
            params["constraint"] = Constraint(choices=tuple(choices))
        if top_logprobs:
            params.update(logprobs=True, top_logprobs=top_logprobs)
        return self.request(messages, **params)

    def planned_two_stage(self, first: Request, marker: str, max_tokens: int,
                          choices: Sequence[str] = (), top_logprobs: int = 0) -> list[Request]:
        """`first`, and under two_stage the continuation after `marker` (feedback approximated
        by `feedback_tokens` filler tokens)."""
        if self.protocol != "two_stage":
            return [first]
        filler = " x" * self.options.feedback_tokens
        return [first, self.follow_request(self.extend(first.messages, filler + marker),
                                           max_tokens, choices, top_logprobs)]

    async def second_stage(self, first: Request, answer: Response, marker: str,
                           max_tokens: int, choices: Sequence[str] = (),
                           top_logprobs: int = 0) -> tuple[Response, str]:
        """Two-stage protocol: the model's continuation of its feedback `answer` after
        `marker` (one of `choices`, where the backend enforces them), and the raw text of the
        whole judgement."""
        follow = await self.ask(self.follow_request(
            self.extend(first.messages, answer.text.rstrip() + marker), max_tokens, choices,
            top_logprobs))
        raw = f"{self.prefilled(first.messages)}{answer.text.rstrip()}{marker}{follow.text}"
        return follow, raw

    async def ask(self, request: Request) -> Response:
        if self.repeat and request.repeat != self.repeat:  # draw r of `score --repeats K`
            seed = request.seed
            if seed is not None:  # a seeded judge's draw r: a seed of its own, from (seed, r)
                digest = hashlib.sha256(f"{seed}:{self.repeat}".encode()).digest()
                span = MAX_SEED64 - MIN_SEED64 + 1
                seed = MIN_SEED64 + int.from_bytes(digest[:8], "big") % span
            request = dataclasses.replace(request, repeat=self.repeat, seed=seed)
        keys = _request_keys.get()
        if keys is not None:  # the sample's score links to its cached requests (`logs`)
            keys.append(request.content_hash(self._dispatcher.backend.cache_identity()))
        return await self._dispatcher.submit(request)

    @staticmethod
    def prefilled(messages: tuple[dict[str, str], ...]) -> str:
        return messages[-1]["content"] if messages and messages[-1]["role"] == "assistant" else ""

    @staticmethod
    def extend(messages: tuple[dict[str, str], ...], text: str) -> tuple[dict[str, str], ...]:
        """The same conversation with `text` appended to the assistant prefill."""
        if messages and messages[-1]["role"] == "assistant":
            last = {"role": "assistant", "content": messages[-1]["content"] + text}
            return (*messages[:-1], last)
        return (*messages, {"role": "assistant", "content": text})

    # -- scoring --------------------------------------------------------------------------------
    async def judge(self, sample: Sample) -> Outcome:
        raise NotImplementedError

    def planned_requests(self, sample: Sample) -> list[Request]:
        """The requests `judge` would send for `sample` (second stages approximated)."""
        raise NotImplementedError

    def score(self, samples: Sequence[Sample]) -> list[Outcome]:
        return run_sync(self.ascore(samples))

    def score_stream(self, samples: Sequence[Sample]) -> Iterator[tuple[int, Outcome]]:
        return iterate_in_thread(lambda: self.astream(samples))

    async def ascore(self, samples: Sequence[Sample]) -> list[Outcome]:
        results: list[Outcome | None] = [None] * len(samples)
        async for index, outcome in self.astream(samples):
            results[index] = outcome
        return results  # type: ignore[return-value]  # astream yields every index or raises

    async def astream(self, samples: Sequence[Sample]) -> AsyncIterator[tuple[int, Outcome]]:
        """Every sample judged concurrently; `(index, Outcome)` as each finishes. A sample
        that raised (a budget stop first) is raised once every other sample has finished,
        so what finished is yielded and its calls are in the cache: a resumed run does not
        repeat them."""
        self._dispatcher = Dispatcher(self.use_cache())
        await self.prepare()

        async def indexed(index: int, sample: Sample) -> tuple[int, Outcome | Exception]:
            try:
                return index, await self._judge_safely(sample)
            except Exception as exc:
                return index, exc

        # Tasks made in input order, so requests go out in input order (as_completed alone
        # would start them in a set's order).
        tasks = [asyncio.ensure_future(indexed(i, s)) for i, s in enumerate(samples)]
        stop: Exception | None = None
        for finished in asyncio.as_completed(tasks):
            index, result = await finished
            if isinstance(result, Exception):
                if stop is None or (isinstance(result, runtime.BudgetExceeded)
                                    and not isinstance(stop, runtime.BudgetExceeded)):
                    stop = result
                continue
            yield index, redacted(result)
        await self._dispatcher.drain()
        if stop is not None:
            raise stop

    async def prepare(self) -> None:
        """Work done once per batch before the samples (e.g. G-Eval's generated steps)."""

    async def _judge_safely(self, sample: Sample) -> Outcome:
        """The sample's Outcome, with the judge-cache keys of its requests in
        ``extra[REQUEST_KEYS]`` (a judge inside another, as in a panel, adds to its list)."""
        keys: list[str] = []
        outer = _request_keys.get()
        token = _request_keys.set(keys)
        try:
            outcome = await self.judge(sample)
        except parsing.ParseError as exc:  # a judge that forgot to catch its own parse error
            outcome = Outcome.failed(Status.PARSE_ERROR, str(exc))
        except MissingField as exc:
            outcome = Outcome.failed(Status.ERROR, str(exc))
        finally:
            _request_keys.reset(token)
            if outer is not None:
                outer.extend(keys)
        if not keys:
            return outcome
        return outcome.model_copy(update={"extra": {**outcome.extra, REQUEST_KEYS: keys}})

    # -- estimates ------------------------------------------------------------------------------
    def estimate(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """Calls, tokens and cost a run would make (cache hits excluded); cost None if unknown."""
        backend = self.use_cache()
        calls = tokens_in = tokens_out = 0
        cost: float | None = 0.0
        identity = backend.cache_identity()
        seen: set[str] = set()
        for sample in samples:
            try:
                requests = self.planned_requests(sample)
            except MissingField:
                continue
            for req in requests:
                key = req.content_hash(identity)
                if key in seen or (backend.cache is not None and backend.cache.get(key)):
                    continue
                seen.add(key)
                n_in = backend.count_tokens(req)
                calls += 1
                tokens_in += n_in
                tokens_out += req.max_tokens
                one = backend.inner.estimate_cost(n_in, req.max_tokens)
                cost = None if cost is None or one is None else cost + one
        return {"calls": calls, "tokens_in": tokens_in, "tokens_out": tokens_out,
                "cost_usd": cost}

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            if self._backend.cache is not None:
                self._backend.cache.close()
            self._backend = None


_T = TypeVar("_T")


def iterate_in_thread(make: Callable[[], AsyncIterator[_T]]) -> Iterator[_T]:
    """The items of the async iterator `make()` as a plain iterator. Its event loop runs in a
    thread of its own (with this context's run settings), so its calls go on while the caller
    works on an item, and it works inside a running event loop too. An error it raises is
    raised here; a caller that stops early cancels it."""
    items: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    running: dict[str, Any] = {}
    stopped = threading.Event()  # the caller stopped before the loop started: do nothing

    async def pump() -> None:
        running["loop"], running["task"] = asyncio.get_running_loop(), asyncio.current_task()
        if stopped.is_set():
            return
        try:
            async for item in make():
                items.put(("item", item))
        except BaseException as exc:
            items.put(("error", exc))
            if not isinstance(exc, Exception | asyncio.CancelledError):
                raise
        else:
            items.put(("end", None))

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(asyncio.run, pump()), daemon=True)
    thread.start()
    ended = False
    try:
        while True:
            kind, value = items.get()
            if kind == "item":
                yield value
                continue
            ended = True
            if kind == "error":
                raise value
            return
    finally:
        stopped.set()
        if not ended and "loop" in running:
            with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
                running["loop"].call_soon_threadsafe(running["task"].cancel)
        thread.join(timeout=None if ended else 5.0)


class MissingField(ValueError):
    pass


def need(sample: Sample, value: str | None, field: str) -> str:
    """`value`, or MissingField when the sample lacks it (None). An empty text is a value: the
    judge judges it, its prompt showing nothing between the text's tags (`JUDGED_EMPTY`)."""
    if value is None:
        raise MissingField(f"sample {sample.item}/{sample.system} has no '{field}'")
    return value


#: What every built-in judge does with an empty text.
JUDGED_EMPTY = EmptyText(
    output="scored", reference="scored", input="scored",
    note="judged like any other text: the prompt shows an empty output or reference as "
         "nothing between its tags; an empty input as no input given ('(no question given)'; "
         "Prometheus: an empty instruction)")


class Dispatcher:
    """Collects the requests made in one event-loop tick and sends them as one batch, so a
    local backend batches them and an API backend runs them concurrently."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._pending: list[tuple[Request, asyncio.Future[Response]]] = []
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, request: Request) -> asyncio.Future[Response]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Response] = loop.create_future()
        self._pending.append((request, future))
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    async def drain(self) -> None:
        """Wait for batches still streaming (their answers are all delivered already)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _flush(self) -> None:
        batch, self._pending, self._scheduled = self._pending, [], False
        task = asyncio.get_running_loop().create_task(self._send(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[tuple[Request, asyncio.Future[Response]]]) -> None:
        try:
            async for index, response in self.backend.aiter_generate([r for r, _ in batch]):
                future = batch[index][1]
                if not future.done():
                    future.set_result(response)
        except BaseException as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        for _, future in batch:
            if not future.done():
                future.set_result(Response.failed("error", "the backend gave no answer"))


# -- turning responses into outcomes ----------------------------------------------------------
def failure_outcome(responses: Sequence[Response], **extra: Any) -> Outcome | None:
    """The Outcome for the first failed call, or None when every call succeeded."""
    for response in responses:
        if response.error is None:
            continue
        kind = response.error.kind
        status = {"refused": Status.REFUSED, "dry_run": Status.SKIPPED}.get(kind, Status.ERROR)
        return Outcome.failed(status, str(response.error), extra=extra,
                              **accounting(responses))
    return None


def redacted(outcome: Outcome) -> Outcome:
    """`outcome` with its raw text, rationale, reason and every text in `extra` scrubbed of
    secrets: a judge's texts are persisted (store) and printed."""
    update: dict[str, Any] = {name: redact(getattr(outcome, name))
                              for name in ("raw", "rationale", "reason")}
    update["extra"] = _redacted_values(outcome.extra)
    if all(update[name] == getattr(outcome, name) for name in update):
        return outcome
    return outcome.model_copy(update=update)


def _redacted_values(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: _redacted_values(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_redacted_values(item) for item in value)
    return value


def accounting(responses: Sequence[Response]) -> dict[str, Any]:
    """Summed tokens, cost (None if any call's cost is unknown) and call latency."""
    def total(values: list[Any]) -> Any:
        return None if not values or any(v is None for v in values) else sum(values)

    costs = [r.cost_usd for r in responses]
    latency = total([r.latency_s for r in responses])
    return {
        "tokens_in": total([r.tokens_in for r in responses]),
        "tokens_out": total([r.tokens_out for r in responses]),
        "cost_usd": None if not costs or any(c is None for c in costs)
        else math.fsum(c for c in costs if c is not None),
        "latency_s": latency,
    }


def call_extra(responses: Sequence[Response]) -> dict[str, Any]:
    """Calls, whether all were cached, what the backend enforced on the last answer (the
    one the score is read from) when it enforced anything, and what answered it
    (`FINGERPRINT`: `Response.fingerprint`, the store keeps it in a column of its own)."""
    extra: dict[str, Any] = {"calls": len(responses),
                             "cached": all(r.cached for r in responses)}
    if responses and responses[-1].constrained is not None:
        extra["constrained"] = responses[-1].constrained
    if responses and (fingerprint := responses[-1].fingerprint()) is not None:
        extra[FINGERPRINT] = fingerprint
    return extra


def joined_raw(responses: Sequence[Response]) -> str:
    """Every call's answer text, in order, for an Outcome's `raw`."""
    return "\n---\n".join(r.text for r in responses)


def parse_failure(responses: Sequence[Response], exc: Exception) -> Outcome:
    """The Outcome for answers that could not be parsed: every raw answer is kept."""
    return Outcome.failed(Status.PARSE_ERROR, str(exc), raw=joined_raw(responses),
                          extra=call_extra(responses), **accounting(responses))


def judged(responses: Sequence[Response], value: float, raw: str, rationale: str | None
           ) -> Outcome:
    """The Outcome for a parsed judgement made of `responses`."""
    return Outcome(value=value, raw=raw, rationale=rationale or None,
                   extra=call_extra(responses), **accounting(responses))
