"""Reading OpenAI-shaped chat/completion answers (litellm's ModelResponse, or the JSON body
of an OpenAI-compatible server turned into attributes by `namespace`), for the backends of
this package."""

from __future__ import annotations

import types
from typing import Any

from judgebench.backends.base import Request, Response, TokenLogprob
from judgebench.backends.remote import RemoteBackend, Retryable


def namespace(value: Any) -> Any:
    """A decoded JSON value with every object turned into attribute access."""
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [namespace(v) for v in value]
    return value


def optional_fields(request: Request, *, json_schema: bool) -> dict[str, Any]:
    """The OpenAI request fields a request sets only when asked: ``seed``, ``stop``,
    ``logprobs``/``top_logprobs`` (at most 20, the API's limit) and, where the backend has
    structured output, ``response_format`` with the request's JSON schema (strict)."""
    fields: dict[str, Any] = {}
    if request.seed is not None:
        fields["seed"] = request.seed
    if request.stop:
        fields["stop"] = list(request.stop)
    if request.logprobs:
        fields["logprobs"] = True
        if request.top_logprobs:
            fields["top_logprobs"] = min(request.top_logprobs, 20)
    if request.json_schema is not None and json_schema:
        fields["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "judgement", "schema": request.json_schema, "strict": True},
        }
    return fields


def parse_answer(backend: RemoteBackend, raw: Any, latency_s: float) -> Response:
    """``choices[0]`` (its ``message.content`` or ``text``, ``finish_reason`` and token
    logprobs) and ``usage`` of an OpenAI-shaped answer, through `RemoteBackend.answer`;
    raises `Retryable("malformed")` when there is no choice."""
    choices = getattr(raw, "choices", None)
    if not choices:
        raise Retryable("malformed", "the answer has no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    text = getattr(message, "content", None) if message is not None else getattr(
        choice, "text", None
    )
    usage = getattr(raw, "usage", None)
    return backend.answer(
        text=text,
        finish_reason=getattr(choice, "finish_reason", None),
        refusal=refusal(message),
        logprobs=token_logprobs(choice),
        tokens_in=getattr(usage, "prompt_tokens", None) if usage is not None else None,
        tokens_out=getattr(usage, "completion_tokens", None) if usage is not None else None,
        model=getattr(raw, "model", None),
        latency_s=latency_s,
    )


def refusal(message: Any) -> str | None:
    """The model's refusal text: ``message.refusal`` (OpenAI), which litellm moves into
    ``provider_specific_fields``."""
    if message is None:
        return None
    found = getattr(message, "refusal", None)
    if not found:
        extra = getattr(message, "provider_specific_fields", None)
        found = extra.get("refusal") if isinstance(extra, dict) else None
    return str(found) if found else None


def token_logprobs(choice: Any) -> tuple[TokenLogprob, ...] | None:
    """``choice.logprobs.content`` (objects or dicts) as TokenLogprobs, None when absent."""
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
            top.append((str(alt_get("token")), _logprob(alt_get("logprob"))))
        parsed.append(TokenLogprob(str(get("token")), _logprob(get("logprob")), tuple(top)))
    return tuple(parsed)


def completion_logprobs(choice: Any, prompt_tokens: int
                        ) -> tuple[tuple[TokenLogprob, ...], tuple[TokenLogprob, ...]]:
    """A completion choice's ``logprobs`` (``tokens``, ``token_logprobs``, ``top_logprobs``)
    split into the echoed prompt's first `prompt_tokens` tokens and the generated ones. The
    first prompt token's logprob is None (nothing conditions it)."""
    logprobs = getattr(choice, "logprobs", None)
    tokens = getattr(logprobs, "tokens", None)
    values = getattr(logprobs, "token_logprobs", None)
    if not isinstance(tokens, list) or not isinstance(values, list) or (
            len(tokens) != len(values) or len(tokens) < prompt_tokens):
        raise Retryable("malformed", "a completion with echo has no logprobs for its prompt")
    tops = getattr(logprobs, "top_logprobs", None) or [None] * len(tokens)
    parsed = []
    for index, (token, value, top) in enumerate(zip(tokens, values, tops, strict=False)):
        alternatives = tuple((str(t), float(lp)) for t, lp in vars(top).items()) if (
            top is not None and not isinstance(top, dict)) else tuple(
            (str(t), float(lp)) for t, lp in (top or {}).items())
        if value is None and index > 0:
            raise Retryable("malformed", f"echoed token {index} has no logprob")
        parsed.append(TokenLogprob(str(token), None if value is None else float(value),
                                   alternatives))
    return tuple(parsed[:prompt_tokens]), tuple(parsed[prompt_tokens:])


def _logprob(value: Any) -> float:
    if value is None:
        raise Retryable("malformed", "a token logprob has no value")
    return float(value)
