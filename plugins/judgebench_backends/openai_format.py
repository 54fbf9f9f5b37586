"""Reading OpenAI-shaped chat/completion answers (litellm's ModelResponse, or the JSON body
of an OpenAI-compatible server turned into attributes by `namespace`), for the backends of
this package."""

from __future__ import annotations

import types
from typing import Any

from judgebench.plugin_api import (
    Constraint,
    RemoteBackend,
    Request,
    Response,
    Retryable,
    TokenLogprob,
)


def namespace(value: Any) -> Any:
    """A decoded JSON value with every object turned into attribute access."""
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [namespace(v) for v in value]
    return value


#: The response_format steps for a JSON constraint, most enforcing first: the schema itself,
#: "some JSON object", nothing (the prompt alone asks for JSON).
STRUCTURED_MODES = ("json_schema", "json_object", "none")


def optional_fields(request: Request, *, structured: str = "json_schema") -> dict[str, Any]:
    """The OpenAI request fields a request sets only when asked: ``seed``, ``stop``,
    ``logprobs``/``top_logprobs`` (at most 20, the API's limit) and, for a JSON constraint,
    ``response_format`` at the step `structured` (`STRUCTURED_MODES`: the request's JSON
    schema, strict; or ``json_object``; or none)."""
    fields: dict[str, Any] = {}
    if request.seed is not None:
        fields["seed"] = request.seed
    if request.stop:
        fields["stop"] = list(request.stop)
    if request.logprobs:
        fields["logprobs"] = True
        if request.top_logprobs:
            fields["top_logprobs"] = min(request.top_logprobs, 20)
    schema = request.json_schema
    if schema is not None and structured == "json_schema":
        fields["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "judgement", "schema": schema, "strict": True},
        }
    elif schema is not None and structured == "json_object":
        fields["response_format"] = {"type": "json_object"}
    return fields


def vllm_structured_fields(constraint: Constraint, *, legacy: bool = False) -> dict[str, Any]:
    """The extra body fields with which a vLLM OpenAI-compatible server enforces a choice or
    regex constraint: ``structured_outputs`` (vLLM >= 0.10.2), or with `legacy` the
    ``guided_choice``/``guided_regex`` fields of earlier versions."""
    if constraint.choices:
        return ({"guided_choice": list(constraint.choices)} if legacy
                else {"structured_outputs": {"choice": list(constraint.choices)}})
    if constraint.regex is not None:
        return ({"guided_regex": constraint.regex} if legacy
                else {"structured_outputs": {"regex": constraint.regex}})
    return ({"guided_json": constraint.json_schema} if legacy
            else {"structured_outputs": {"json": constraint.json_schema}})


def rejects_response_format(status: int, body: bytes) -> bool:
    """Whether an error answer says the server does not take the response_format sent (a 400
    or 422 naming it), as opposed to any other bad request."""
    if status not in (400, 422):
        return False
    text = body[:2000].decode("utf-8", "replace").lower()
    return any(word in text for word in ("response_format", "json_schema", "json_object",
                                         "response format", "structured output"))


def parse_answer(backend: RemoteBackend, raw: Any, latency_s: float,
                 revision: str | None = None) -> Response:
    """``choices[0]`` (its ``message.content`` or ``text``, ``finish_reason`` and token
    logprobs), ``usage``, and what answered (``model``, ``system_fingerprint``) of an
    OpenAI-shaped answer, through `RemoteBackend.answer`; raises `Retryable("malformed")`
    when there is no choice. `revision`: the checkpoint a server says it serves."""
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
        model=_text(getattr(raw, "model", None)),
        latency_s=latency_s,
        system_fingerprint=_text(getattr(raw, "system_fingerprint", None)),
        revision=revision,
    )


def _text(value: Any) -> str | None:
    """A string field of an answer, None when absent or not a string."""
    return value if isinstance(value, str) and value else None


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
