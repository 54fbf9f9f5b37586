"""API providers and OpenAI-compatible servers through litellm.

``LiteLLMBackend(model="openai/gpt-4o-mini")`` reaches any provider litellm knows;
``LiteLLMBackend(model="hosted_vllm/my-judge", api_base="http://host:8000/v1")`` any
OpenAI-compatible server (e.g. ``vllm serve``). API keys come only from the environment:
litellm reads the provider's usual variable (OPENAI_API_KEY, ...), or ``api_key_env`` names
the variable to read. The key is never put in an identity, a log line or an error message,
and an answer that quotes it back is scrubbed of it (`judgebench.redact`, the one scrubber).

Concurrency, rate limits, retries with backoff and Retry-After, timeouts, the budget, dry run
and scrubbing are the shared remote-call engine's (`judgebench.backends.remote`, options
`RemoteOptions` plus ``drop_params``); this module is only litellm's wire protocol: the call's
keyword arguments, which litellm/OpenAI exceptions are retried (429, 5xx, timeouts,
connection errors, truncated or malformed bodies) and which are final (other 4xx, a content
policy refusal), and the answer's parsing.

Cost per call is ``tokens_in * input_cost_per_token + tokens_out * output_cost_per_token``
from the options when given (or ``price_in``/``price_out`` in USD per million tokens), else
from litellm's bundled price table; a model with no known price costs None (unknown), never 0.

Constraints: a JSON schema goes as ``response_format`` (strict ``json_schema``) where the
provider takes one (`litellm.supports_response_schema`, or a vLLM server: ``hosted_vllm/``);
choices and regexes are enforced only on a vLLM server (``hosted_vllm/``), through its
``structured_outputs`` extra body field. Each Response says what was enforced
(``constrained``); elsewhere the prompt alone asks for the form.

litellm is imported on first use, with its remote price-map fetch disabled, and used without
global side effects: retries, timeouts, ``drop_params`` and the key are passed per call. The
one module attribute set is ``suppress_debug_info``, which only stops litellm printing a
"Give Feedback" banner to stdout (that would corrupt ``--json`` output).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from judgebench.plugin_api import (
    ConstraintKind,
    Enforced,
    Final,
    MissingExtra,
    RemoteBackend,
    RemoteOptions,
    Request,
    Response,
    Retryable,
    http_failure,
    retry_after_seconds,
    scrub,
)
from judgebench_backends.openai_format import (
    optional_fields,
    parse_answer,
    vllm_structured_fields,
)

#: Providers that are a vLLM server: they take response_format json_schema and enforce
#: choices and regexes through vLLM's extra body fields.
VLLM_PROVIDERS = {"hosted_vllm", "vllm"}
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


@dataclass(kw_only=True)
class LiteLLMOptions(RemoteOptions):
    """`RemoteOptions` plus ``drop_params`` (litellm drops parameters a provider rejects)."""

    drop_params: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.drop_params = bool(self.drop_params)


class LiteLLMBackend(RemoteBackend):
    name = "litellm"
    Options: ClassVar[type[RemoteOptions]] = LiteLLMOptions

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        if not model:
            raise ValueError("the litellm backend needs a model, e.g. openai/gpt-4o-mini")
        try:  # now, not at the first request (import_litellm, not require: no price fetch)
            import_litellm()
        except ImportError as exc:
            raise MissingExtra("backend=litellm", "litellm", "api", exc) from None
        super().__init__(model, revision, **options)
        assert isinstance(self.options, LiteLLMOptions)
        self.drop_params = self.options.drop_params

    def missing_credential(self) -> str | None:
        """The provider's key variable(s) that litellm says it needs and the environment
        lacks (`litellm.validate_environment`, which reads no network): e.g. OPENAI_API_KEY
        for ``openai/...``, with or without ``api_base`` (the OpenAI client refuses to call
        without a key). Only ``*_API_KEY`` variables: other credentials (cloud profiles) may
        come from files litellm reads at call time. ``api_key_env`` replaces the check."""
        if self.options.api_key_env:
            return None
        try:
            found = import_litellm().validate_environment(model=self.model,
                                                          api_base=self.api_base)
        except Exception:  # litellm cannot tell before a call
            return None
        keys = [k for k in found.get("missing_keys") or [] if str(k).endswith("_API_KEY")]
        if not keys:
            return None
        names = " or ".join(f"${k}" for k in keys)
        return (f"model {self.model} needs {names}, which is not set: set it, or name the "
                "variable that holds the key with api_key_env=VAR")

    @property
    def provider(self) -> str:
        return self.model.split("/", 1)[0] if "/" in self.model else "openai"

    def default_logprobs(self) -> bool:
        return self.provider in LOGPROB_PROVIDERS

    def takes_response_schema(self) -> bool:
        """Whether the provider enforces a JSON schema given as response_format: a vLLM
        server does; a model in litellm's table as `litellm.supports_response_schema` says;
        a model litellm does not know (e.g. ``openai/NAME`` on your own server) as the
        ``json_schema`` option says (default true; ``json_schema=false`` where it rejects
        it)."""
        if not self.options.json_schema:
            return False
        if self.provider in VLLM_PROVIDERS:
            return True
        litellm = import_litellm()
        try:
            litellm.get_model_info(self.model)
        except Exception:  # not in litellm's table
            return True
        try:
            return bool(litellm.supports_response_schema(model=self.model))
        except Exception:
            return False

    def enforcement(self, kind: ConstraintKind) -> Enforced | None:
        if kind == "json":
            return "json" if self.takes_response_schema() else None
        return kind if self.provider in VLLM_PROVIDERS else None

    def lookup_price(self) -> tuple[float, float] | None:
        given_in, given_out = self.options.price_override()
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

    # -- the wire protocol ------------------------------------------------------------------
    async def open_client(self) -> Any:
        """The litellm module (it keeps its own client pool)."""
        return import_litellm()

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
        constraint = request.constraint
        enforced = None if constraint is None else self.enforcement(constraint.kind)
        structured = "json_schema" if enforced == "json" else "none"
        kwargs.update(optional_fields(request, structured=structured))
        if constraint is not None and constraint.kind != "json" and enforced is not None:
            kwargs["extra_body"] = vllm_structured_fields(constraint)
        return kwargs

    def enforced(self, request: Request) -> Enforced | None:
        """What a call with `request` asks the provider to enforce."""
        return None if request.constraint is None else self.enforcement(request.constraint.kind)

    async def send(self, client: Any, request: Request) -> Any:
        kwargs = self.call_kwargs(request)
        key = self.api_key()
        if key:
            kwargs["api_key"] = key
        if request.prompt is not None:
            return await client.atext_completion(**kwargs), self.enforced(request)
        return await client.acompletion(**kwargs), self.enforced(request)

    def classify(self, exc: BaseException) -> Retryable | Final:
        """A litellm/OpenAI exception: retryable or final, with its kind."""
        status = getattr(exc, "status_code", None)
        message = scrub(f"{type(exc).__name__}: {exc}")
        name = type(exc).__name__
        headers = getattr(exc, "litellm_response_headers", None) or getattr(
            getattr(exc, "response", None), "headers", None
        )
        if "Timeout" in name or status == 408:
            return Retryable("timeout", f"no answer within {self.timeout_s:g}s")
        if status == 429 or "RateLimit" in name:
            return Retryable("rate_limited", message, retry_after_seconds(headers))
        malformed = ("Expecting value", "Unterminated string", "Invalid response object",
                     "JSONDecodeError", "Extra data", "peer closed", "incomplete",
                     "RemoteProtocolError")
        if ("APIConnectionError" in name or "Connect" in name or status is None
                or "Connection error" in str(exc)):
            return Retryable("connection", message)
        if any(marker in str(exc) for marker in malformed):
            return Retryable("malformed", message)
        if "Missing credentials" in str(exc):
            return Final("bad_request", "no API key: set the provider's key variable or name "
                         "one with api_key_env")
        if "ContentPolicy" in name:
            return Final("refused", message)
        return http_failure(status, message, headers)

    def parse(self, raw: Any, latency_s: float) -> Response:
        """A litellm ModelResponse/TextCompletionResponse (with what the call asked to be
        enforced) -> Response."""
        answer, enforced = raw
        response = parse_answer(self, answer, latency_s)
        return replace(response, constrained=enforced) if response.ok else response
