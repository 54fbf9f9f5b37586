"""In-process offline batching on a GPU with `vllm.LLM`.

``VLLMBackend(model="/models/Qwen2.5-7B-Instruct")`` loads the model once (prefix caching on,
so a judge prompt shared by many samples is computed once) and sends each batch of requests
to ``LLM.generate`` in one call, each request with its own sampling parameters: temperature,
top-p, seed, stop strings, token logprobs with top-k alternatives, prompt logprobs, and
structured output from a JSON schema. vllm is imported only when the engine starts.

Everything up to the engine is plain data so it is tested without vllm (or a GPU):
`sampling_params_dict` builds the parameters as a dict, `to_sampling_params` turns that dict
into vllm objects at the last step, and `parse_output` reads a vLLM ``RequestOutput`` (or
anything shaped like one) into a `Response`. benchmarks/gpu_vllm_check.py runs the real
engine on a GPU machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from judgebench.backends.base import (
    KINDS,
    Backend,
    Capabilities,
    Request,
    Response,
    TokenLogprob,
)
from judgebench.errors import JudgebenchError


def sampling_params_dict(request: Request) -> dict[str, Any]:
    """vLLM SamplingParams fields for one request, as plain data."""
    params: dict[str, Any] = {
        "n": 1,
        # vLLM generates at least one token; a scoring-only request discards it.
        "max_tokens": max(1, request.max_tokens),
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": request.seed,
        "stop": list(request.stop) or None,
        "logprobs": (request.top_logprobs or 1) if request.logprobs else None,
        "prompt_logprobs": 1 if request.prompt_logprobs else None,
        "skip_special_tokens": True,
    }
    structured = structured_outputs(request)
    if structured is not None:
        params["structured_outputs"] = structured
    return params


def structured_outputs(request: Request) -> dict[str, Any] | None:
    """The request's constraint as vLLM structured-output fields (``choice``, ``regex`` or
    ``json``: the keyword arguments of ``StructuredOutputsParams``, and of the
    ``GuidedDecodingParams`` of vLLM before 0.10.2); None without a constraint."""
    constraint = request.constraint
    if constraint is None:
        return None
    if constraint.choices:
        return {"choice": list(constraint.choices)}
    if constraint.regex is not None:
        return {"regex": constraint.regex}
    return {"json": constraint.json_schema}


def to_sampling_params(params: dict[str, Any], vllm: Any) -> Any:
    """The last step: the dict from `sampling_params_dict` as a ``vllm.SamplingParams``."""
    params = dict(params)
    structured = params.pop("structured_outputs", None)
    if structured is not None:
        sampling_module = vllm.sampling_params
        if hasattr(sampling_module, "StructuredOutputsParams"):  # vLLM >= 0.10.2
            params["structured_outputs"] = sampling_module.StructuredOutputsParams(**structured)
        else:
            params["guided_decoding"] = sampling_module.GuidedDecodingParams(**structured)
    return vllm.SamplingParams(**params)


def _top(entry: dict[int, Any], k: int) -> tuple[tuple[str, float], ...]:
    ranked = sorted(entry.values(), key=lambda lp: -lp.logprob)[:k]
    return tuple((str(lp.decoded_token), float(lp.logprob)) for lp in ranked)


def parse_output(output: Any, request: Request, latency_s: float, model: str,
                 decode: Any = None) -> Response:
    """A vLLM RequestOutput (``prompt_token_ids``, ``prompt_logprobs``, ``outputs[0]`` with
    ``text``, ``token_ids``, ``logprobs``, ``finish_reason``) -> Response.

    vLLM's logprob entries map token id -> Logprob(logprob, rank, decoded_token) and hold the
    chosen token plus the top-k alternatives. `decode` (token ids -> text) names the first
    prompt token, which vLLM leaves unscored and undecoded.
    """
    prompt_ids = list(output.prompt_token_ids or [])
    prompt_logprobs = None
    if request.prompt_logprobs:
        entries = output.prompt_logprobs or []
        if len(entries) != len(prompt_ids):
            return Response.failed("malformed", f"vLLM returned {len(entries)} prompt logprobs "
                                   f"for {len(prompt_ids)} prompt tokens")
        scored = []
        for token_id, entry in zip(prompt_ids, entries, strict=True):
            if entry is None:  # the first token: nothing conditions it
                scored.append(TokenLogprob(decode([token_id]) if decode else "", None))
                continue
            chosen = entry[token_id]
            scored.append(TokenLogprob(str(chosen.decoded_token), float(chosen.logprob)))
        prompt_logprobs = tuple(scored)
    if not output.outputs:
        return Response.failed("malformed", "vLLM returned no completion")
    completion = output.outputs[0]
    token_ids = list(completion.token_ids or [])
    logprobs = None
    if request.logprobs:
        entries = completion.logprobs or []
        if len(entries) != len(token_ids):
            return Response.failed("malformed", f"vLLM returned {len(entries)} logprob entries "
                                   f"for {len(token_ids)} tokens")
        logprobs = tuple(
            TokenLogprob(str(entry[tid].decoded_token), float(entry[tid].logprob),
                         _top(entry, request.top_logprobs) if request.top_logprobs else ())
            for tid, entry in zip(token_ids, entries, strict=True)
        )
    if request.max_tokens == 0:  # scoring only: drop the one token vLLM had to generate
        return Response(text="", finish_reason="prompt_only", prompt_logprobs=prompt_logprobs,
                        tokens_in=len(prompt_ids), tokens_out=0, cost_usd=0.0,
                        latency_s=latency_s, model=model)
    return Response(
        text=completion.text,
        constrained=None if request.constraint is None else request.constraint.kind,
        finish_reason=completion.finish_reason,
        logprobs=logprobs,
        prompt_logprobs=prompt_logprobs,
        tokens_in=len(prompt_ids),
        tokens_out=len(token_ids),
        cost_usd=0.0,
        latency_s=latency_s,
        model=model,
    )


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise JudgebenchError(
            f"the vllm backend needs vllm and a GPU ({exc}); install it with `pip install vllm`, "
            "or judge with backend=transformers (CPU) or backend=litellm (API/server)"
        ) from None
    return vllm


class VLLMBackend(Backend):
    name = "vllm"
    capabilities = Capabilities(logprobs=True, max_top_logprobs=20, prompt_logprobs=True,
                                json_schema=True, prefill=True, constraints=frozenset(KINDS))

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.85,
        tensor_parallel_size: int = 1,
        enable_prefix_caching: bool = True,
        seed: int = 0,
    ) -> None:
        if not model:
            raise ValueError("the vllm backend needs a model (a local path or a model id)")
        super().__init__(str(model), revision)
        self.engine_args: dict[str, Any] = {
            "model": str(model),
            "revision": revision,
            "dtype": dtype,
            "gpu_memory_utilization": float(gpu_memory_utilization),
            "tensor_parallel_size": int(tensor_parallel_size),
            "enable_prefix_caching": bool(enable_prefix_caching),
            "seed": int(seed),
        }
        if max_model_len:
            self.engine_args["max_model_len"] = int(max_model_len)
        self._llm: Any = None
        self._lock = threading.Lock()

    def identity(self) -> dict[str, str]:
        return {**super().identity(), "dtype": str(self.engine_args["dtype"])}

    def engine(self) -> Any:
        if self._llm is None:
            vllm = _import_vllm()

            self._llm = vllm.LLM(**{k: v for k, v in self.engine_args.items() if v is not None})
        return self._llm

    def prompt_ids(self, request: Request, tokenizer: Any) -> list[int]:
        if request.prompt is not None:
            return list(tokenizer.encode(request.prompt, add_special_tokens=False))
        prefill = request.messages[-1]["role"] == "assistant"
        ids = tokenizer.apply_chat_template(
            [dict(m) for m in request.messages], tokenize=True,
            add_generation_prompt=not prefill, continue_final_message=prefill,
        )
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def generate_sync(self, requests: list[Request]) -> list[Response]:
        from judgebench import runtime

        if runtime.current().dry_run:
            return [Response.failed("dry_run", "dry run: no model call was made")
                    for _ in requests]
        vllm = _import_vllm()
        with self._lock:
            llm = self.engine()
            tokenizer = llm.get_tokenizer()
            prompts = [{"prompt_token_ids": self.prompt_ids(r, tokenizer)} for r in requests]
            params = [to_sampling_params(sampling_params_dict(r), vllm) for r in requests]
            started = time.perf_counter()
            outputs = llm.generate(prompts, params, use_tqdm=False)
            latency = time.perf_counter() - started
        return [parse_output(out, req, latency, self.model, tokenizer.decode)
                for out, req in zip(outputs, requests, strict=True)]

    def close(self) -> None:
        self._llm = None

    def batch(self, requests: Sequence[Request]) -> list[dict[str, Any]]:
        """The sampling parameters a batch would be sent with (for --dry-run and tests)."""
        return [sampling_params_dict(r) for r in requests]
