"""In-process offline batching on a GPU with `vllm.LLM`.

``VLLMBackend(model="/models/Qwen2.5-7B-Instruct")`` loads the model once (prefix caching on,
so a judge prompt shared by many samples is computed once) and sends each batch of requests
to ``LLM.generate`` in one call, each request with its own sampling parameters: temperature,
top-p, seed, stop strings, token logprobs with top-k alternatives, prompt logprobs, and
structured output from a JSON schema. vllm is imported only when the engine starts.

Engine options (``tensor_parallel_size``, ``pipeline_parallel_size``, ``max_model_len``,
``gpu_memory_utilization``, ``quantization``, ``dtype``, ``enforce_eager``, ``max_num_seqs``,
``enable_prefix_caching``, ``seed``) come from the metric spec or TOML. Backends with the same
engine arguments share one ``vllm.LLM`` in the process (`shared_engine`): the metrics of a
run that name the same model load it once. ``lora=DIR`` serves a LoRA adapter on its base
model's engine (started with ``enable_lora``), one ``LoRARequest`` per call, so several
adapters of one base share an engine. The identity (and so the signature) records what
changes numbers: the vLLM version, dtype, quantization, max_model_len, the adapter's content
hash and whether vLLM's batch invariance (``VLLM_BATCH_INVARIANT=1``) was on.

Everything up to the engine is plain data so it is tested without vllm (or a GPU):
`sampling_params_dict` builds the parameters as a dict, `to_sampling_params` turns that dict
into vllm objects at the last step, and `parse_output` reads a vLLM ``RequestOutput`` (or
anything shaped like one) into a `Response`. benchmarks/gpu_vllm_check.py runs the real
engine on a GPU machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgebench.plugin_api import (
    KINDS,
    Backend,
    Capabilities,
    InputError,
    JudgebenchError,
    Request,
    Response,
    TokenLogprob,
    require,
)


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
                 decode: Any = None, revision: str | None = None) -> Response:
    """A vLLM RequestOutput (``prompt_token_ids``, ``prompt_logprobs``, ``outputs[0]`` with
    ``text``, ``token_ids``, ``logprobs``, ``finish_reason``) -> Response.

    vLLM's logprob entries map token id -> Logprob(logprob, rank, decoded_token) and hold the
    chosen token plus the top-k alternatives. `decode` (token ids -> text) names the first
    prompt token, which vLLM leaves unscored and undecoded. `revision`: the weights' revision
    (the answer's fingerprint).
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
                        latency_s=latency_s, model=model, revision=revision)
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
        revision=revision,
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


def vllm_version() -> str:
    """The installed vLLM's version, read from its metadata (no import); "none" if absent."""
    from importlib import metadata

    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        return "none"


def batch_invariant() -> bool:
    """Whether vLLM's batch-invariant kernels are on (``VLLM_BATCH_INVARIANT=1``): then a
    request's numbers do not depend on what else is in its batch."""
    return os.environ.get("VLLM_BATCH_INVARIANT", "").strip().lower() in ("1", "true", "yes")


_adapter_hashes: dict[Path, str] = {}


def adapter_hash(path: str | Path) -> str:
    """SHA-256 (16 hex digits) of a LoRA adapter directory: every file's relative path and
    bytes, in sorted order. Cached per process (an adapter does not change mid-run)."""
    root = Path(path).expanduser().resolve()
    if root not in _adapter_hashes:
        if not (root / "adapter_config.json").is_file():
            raise InputError(f"lora={path}: not a LoRA adapter directory (no "
                             "adapter_config.json)", field="lora")
        digest = hashlib.sha256()
        for file in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(file.relative_to(root).as_posix().encode() + b"\0")
            with file.open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
            digest.update(b"\0")
        _adapter_hashes[root] = digest.hexdigest()[:16]
    return _adapter_hashes[root]


#: vLLM's allowed ``max_lora_rank`` values; an adapter's rank is rounded up to one of them.
LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)


def adapter_rank(path: str | Path) -> int:
    config = json.loads((Path(path).expanduser() / "adapter_config.json").read_text())
    rank = int(config.get("r", 8))
    return next((r for r in LORA_RANKS if r >= rank), rank)


def engine_args(model: str, revision: str | None, *, lora: str | None = None,
                **options: Any) -> dict[str, Any]:
    """The ``vllm.LLM`` keyword arguments, as plain data (options that are None left out).
    With a LoRA adapter the engine is started with ``enable_lora`` and a ``max_lora_rank``
    that fits it; the adapter itself is chosen per request."""
    if (options.get("data_parallel_size") or 1) > 1:
        raise InputError("data_parallel_size > 1 needs several engine processes, which "
                         "vllm.LLM in one process does not start: use backend=vllm_server "
                         "(vllm serve --data-parallel-size N)", field="data_parallel_size")
    options.pop("data_parallel_size", None)
    args = {"model": str(model), "revision": revision, **options}
    if lora is not None:
        args["enable_lora"] = True
        args["max_lora_rank"] = adapter_rank(lora)
    return {k: v for k, v in args.items() if v is not None}


class _Engines:
    """One ``vllm.LLM`` per distinct engine arguments in the process, counted by the backends
    holding it and dropped (freeing the GPU) when the last one closes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._engines: dict[str, Any] = {}
        self._holders: dict[str, int] = {}

    @staticmethod
    def key(args: dict[str, Any]) -> str:
        return json.dumps(args, sort_keys=True, default=str)

    def acquire(self, args: dict[str, Any]) -> Any:
        key = self.key(args)
        with self._lock:
            if key not in self._engines:
                self._engines[key] = _import_vllm().LLM(**args)
                self._holders[key] = 0
            self._holders[key] += 1
            return self._engines[key]

    def release(self, args: dict[str, Any]) -> None:
        key = self.key(args)
        with self._lock:
            if key not in self._holders:
                return
            self._holders[key] -= 1
            if self._holders[key] <= 0:
                del self._holders[key], self._engines[key]

    def __len__(self) -> int:
        return len(self._engines)


shared_engine = _Engines()

#: A LoRA adapter's integer id in this process (vLLM tells adapters apart by it).
_lora_ids: dict[Path, int] = {}
_lora_ids_lock = threading.Lock()


def lora_request(path: str) -> Any:
    """The ``vllm.lora.request.LoRARequest`` of the adapter at `path`."""
    root = Path(path).expanduser().resolve()
    with _lora_ids_lock:
        lora_id = _lora_ids.setdefault(root, len(_lora_ids) + 1)
    from vllm.lora.request import LoRARequest

    return LoRARequest(f"adapter-{adapter_hash(root)}", lora_id, str(root))


#: LLM pooling method -> the field of its output holding the numbers
POOLED_FIELD = {"classify": "probs", "reward": "data", "embed": "embedding"}


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
        pipeline_parallel_size: int = 1,
        data_parallel_size: int = 1,
        quantization: str | None = None,
        enforce_eager: bool = False,
        max_num_seqs: int | None = None,
        enable_prefix_caching: bool = True,
        seed: int = 0,
        lora: str | None = None,
        runner: str | None = None,
    ) -> None:
        if not model:
            raise ValueError("the vllm backend needs a model (a local path or a model id)")
        super().__init__(str(model), revision)
        self.lora = str(lora) if lora else None
        self.lora_hash = adapter_hash(self.lora) if self.lora else None
        self.engine_args = engine_args(
            str(model), revision, lora=self.lora, dtype=dtype,
            max_model_len=int(max_model_len) if max_model_len else None,
            gpu_memory_utilization=float(gpu_memory_utilization),
            tensor_parallel_size=int(tensor_parallel_size),
            pipeline_parallel_size=int(pipeline_parallel_size),
            data_parallel_size=int(data_parallel_size), quantization=quantization,
            enforce_eager=bool(enforce_eager),
            max_num_seqs=int(max_num_seqs) if max_num_seqs else None,
            enable_prefix_caching=bool(enable_prefix_caching), seed=int(seed), runner=runner,
        )
        self._llm: Any = None
        self._lock = threading.Lock()

    def identity(self) -> dict[str, str]:
        """What decides the numbers besides the request: see the module. Asked when a run is
        prepared, so a missing vllm stops it then, naming the extra, before any work."""
        require("backend=vllm", "vllm", "vllm")
        args = self.engine_args
        return {
            **super().identity(),
            "dtype": str(args["dtype"]),
            "vllm": vllm_version(),
            "quantization": str(args.get("quantization") or "none"),
            "max_model_len": str(args.get("max_model_len") or "auto"),
            "lora": self.lora_hash or "none",
            "batch_invariant": "on" if batch_invariant() else "off",
        }

    def engine(self) -> Any:
        if self._llm is None:
            self._llm = shared_engine.acquire(self.engine_args)
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
        from judgebench.plugin_api import runtime

        if runtime.current().dry_run:
            return [Response.failed("dry_run", "dry run: no model call was made")
                    for _ in requests]
        vllm = _import_vllm()
        with self._lock:
            llm = self.engine()
            tokenizer = llm.get_tokenizer()
            prompts = [{"prompt_token_ids": self.prompt_ids(r, tokenizer)} for r in requests]
            params = [to_sampling_params(sampling_params_dict(r), vllm) for r in requests]
            extra: dict[str, Any] = {}
            if self.lora:
                extra["lora_request"] = lora_request(self.lora)
            started = time.perf_counter()
            outputs = llm.generate(prompts, params, use_tqdm=False, **extra)
            latency = time.perf_counter() - started
        return [parse_output(out, req, latency, self.model, tokenizer.decode,
                             revision=self.revision or None)
                for out, req in zip(outputs, requests, strict=True)]

    def pool(self, task: str, inputs: Sequence[Any]) -> list[list[float]]:
        """One vector per input from vLLM's pooling runners (engine started with
        ``runner=pooling``): ``LLM.classify`` (class probabilities), ``LLM.reward`` (a reward
        model's score), ``LLM.embed`` on texts; ``LLM.score`` on (text, text) pairs."""
        from judgebench_backends.openai_compat import flat_floats

        with self._lock:
            llm = self.engine()
            extra: dict[str, Any] = {"use_tqdm": False}
            if self.lora:
                extra["lora_request"] = lora_request(self.lora)
            if task == "score":
                outputs = llm.score([a for a, _ in inputs], [b for _, b in inputs], **extra)
                return [flat_floats(out.outputs.score) for out in outputs]
            if task not in POOLED_FIELD:
                raise ValueError(f"unknown pooling task {task!r}")
            outputs = getattr(llm, task)(list(inputs), **extra)
        return [flat_floats(getattr(out.outputs, POOLED_FIELD[task])) for out in outputs]

    def close(self) -> None:
        if self._llm is not None:
            self._llm = None
            shared_engine.release(self.engine_args)

    def batch(self, requests: Sequence[Request]) -> list[dict[str, Any]]:
        """The sampling parameters a batch would be sent with (for --dry-run and tests)."""
        return [sampling_params_dict(r) for r in requests]
