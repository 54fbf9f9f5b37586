"""Options of a local inference engine (vLLM in process or `vllm serve`), as metric options.

A judge or model-based metric takes them next to ``backend`` and ``model``
(``judge.rubric:backend=vllm,model=/models/qwen,tensor_parallel_size=2``, or the same keys in
a TOML ``[metrics.<column>]`` table) and hands each one the user gave to the backend, which
must accept it (`Backend.accepts`): transformers takes ``dtype`` but not
``tensor_parallel_size``, and saying so is an error, never silence. All default to None
(the backend's own default), and only the ones given enter a signature, so adding an option
here changes no existing signature.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

#: Engine options that change how the engine is started, not what it answers: kept out of
#: signatures (the backend's identity records what it served).
ENGINE_RUNTIME_OPTIONS = frozenset({"command", "startup_timeout_s"})


class EngineOptions(BaseModel):
    """A mixin for metric Options: the engine options a user may set (see the module)."""

    tensor_parallel_size: int | None = Field(None, ge=1)
    pipeline_parallel_size: int | None = Field(None, ge=1)
    data_parallel_size: int | None = Field(None, ge=1)
    max_model_len: int | None = Field(None, ge=1)
    gpu_memory_utilization: float | None = Field(None, gt=0.0, le=1.0)
    quantization: str | None = None
    dtype: str | None = None
    enforce_eager: bool | None = None
    max_num_seqs: int | None = Field(None, ge=1)
    enable_prefix_caching: bool | None = None
    #: a LoRA adapter directory, served on the base model's shared engine
    lora: str | None = None
    #: vllm_server: the start command (default: $JUDGEBENCH_VLLM_SERVE or ``vllm serve``)
    command: str | None = None
    #: vllm_server: seconds to wait for the server to become healthy
    startup_timeout_s: float | None = Field(None, gt=0)


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
