"""Learned metrics on a vLLM pooling model instead of transformers (option ``backend``).

``learned.classifier:model=DIR,backend=vllm`` (or ``backend=vllm_server``) runs the model with
vLLM's pooling runner (``runner=pooling``), and ``neural.embedding-cosine:backend=vllm`` its
embeddings; any backend with a ``pool(task, inputs)`` method works. The engine options
(tensor_parallel_size, max_model_len, dtype, ...) go to the backend as for a judge. With the
default ``backend=transformers`` nothing changes, signatures included.

What each backend returns and how a classifier's number is read from it:

- one logit (a reward model or a regression cross-encoder, num_labels = 1): on the output
  alone, the ``reward`` task's raw score (the logit; ``transform=probability`` applies the
  sigmoid); on a pair, the ``score`` task, a cross-encoder's sigmoid probability
  (``transform=logit`` inverts it);
- several labels: the ``classify`` task's softmax probabilities; ``transform=probability``
  reads the label's. Their logits are not recoverable from probabilities, and vLLM's
  classifier takes one text, so ``transform=logit`` and pairs with several labels stay on
  transformers (an InputError says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Protocol

from judgebench.plugin_api import (
    EngineOptions,
    InputError,
    Metric,
    PluginHost,
    given_engine_options,
    unset_engine_fields,
)


class Pooler(Protocol):
    def pool(self, task: str, inputs: Sequence[Any]) -> list[list[float]]: ...

    def identity(self) -> dict[str, str]: ...

    def close(self) -> None: ...


class PoolingOptions(EngineOptions):
    """A mixin for a learned metric's options: where the model runs."""

    backend: str = "transformers"


def uses_pooling(options: PoolingOptions) -> bool:
    return options.backend != "transformers"


def pooling_backend(options: PoolingOptions, model_path: str, metric: str,
                    host: PluginHost) -> Pooler:
    """The backend named by ``options.backend`` in `host`, on `model_path` with vLLM's
    pooling runner and the engine options given."""
    kwargs: dict[str, Any] = {"model": model_path, **given_engine_options(options)}
    if "runner" in host.backend_accepts(options.backend):
        kwargs["runner"] = "pooling"
    backend = host.backend(options.backend, **kwargs)
    if not callable(getattr(backend, "pool", None)):
        backend.close()
        raise InputError(f"{metric}: backend '{options.backend}' has no pooling models; use "
                         "backend=transformers, vllm or vllm_server", field="backend")
    return backend  # type: ignore[return-value]


class PooledModel:
    """The pooling backend of one metric, built on first use and closed with the metric."""

    def __init__(self, owner: Metric) -> None:
        self.metric = owner.info.name
        self._owner = owner  # its host is known once the host has built it
        self._backend: Pooler | None = None

    def get(self, options: PoolingOptions, model_path: str) -> Pooler:
        if self._backend is None:
            self._backend = pooling_backend(options, model_path, self.metric, self._owner.host)
        return self._backend

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None


def pooling_signature(fields: dict[str, str], options: PoolingOptions,
                      backend: Pooler | None) -> dict[str, str]:
    """`fields` without the engine options left unset, and with the pooling backend's
    identity (dtype, vLLM version, quantization, ...) in place of the transformers dtype.
    Unchanged for backend=transformers (an old signature stays valid)."""
    for name in unset_engine_fields(options) | ({"backend"} if backend is None else set()):
        fields.pop(name, None)
    if backend is not None:
        fields.update({k: v for k, v in backend.identity().items()
                       if k not in ("backend", "model", "revision") and v})
    return fields


def inverse_sigmoid(p: float) -> float:
    if not 0.0 < p < 1.0:
        raise InputError(f"the backend returned probability {p}, whose logit is infinite: "
                         "use transform=probability", field="transform")
    return math.log(p / (1.0 - p))


def classifier_task(num_labels: int, pair: bool, transform: str) -> str:
    """The pooling task a classifier's number is read from (see the module)."""
    if num_labels == 1:
        return "score" if pair else "reward"
    if pair:
        raise InputError("a pair with a multi-label classifier runs on backend=transformers "
                         "only (vLLM's classifier takes one text)", field="pair")
    if transform == "logit":
        raise InputError("backend=vllm returns a multi-label classifier's probabilities, "
                         "whose logits cannot be recovered: use transform=probability or "
                         "backend=transformers", field="transform")
    return "classify"


def classifier_value(task: str, vector: list[float], label: int, transform: str) -> float:
    """The number `learned.classifier` reports from one pooled `vector`."""
    if task == "classify":
        return float(vector[label])
    value = float(vector[0])
    if task == "reward":  # a raw logit
        return 1.0 / (1.0 + math.exp(-value)) if transform == "probability" else value
    return value if transform == "probability" else inverse_sigmoid(value)  # score: sigmoid
