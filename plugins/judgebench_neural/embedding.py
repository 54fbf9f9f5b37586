"""Sentence-embedding cosine similarity of an output to its references or its input.

cos(u, v) = u . v / (|u| |v|) between pooled sentence embeddings (as in Sentence-BERT,
Reimers & Gurevych 2019); with several references, the max (or mean) over them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from judgebench.plugin_api import MetricInfo, Outcome, Sample, Status
from judgebench_neural.base import EMBEDDED_EMPTY, Dtype, EncoderMetric, ModelOptions, context_texts
from judgebench_neural.pooling import PooledModel, PoolingOptions, pooling_signature, uses_pooling


def cosine_to_each(vector: np.ndarray, others: np.ndarray) -> np.ndarray:
    """Cosine of one vector to each row of `others`."""
    norms = np.linalg.norm(others, axis=1) * np.linalg.norm(vector)
    return (others @ vector) / np.where(norms == 0, np.nan, norms)


class EmbeddingCosineOptions(PoolingOptions, ModelOptions):
    dtype: Dtype = "auto"  # ModelOptions' (the engine option of the same name is a str)
    against: Literal["reference", "input"] = "reference"
    multi_ref: Literal["max", "mean"] = "max"


class EmbeddingCosine(EncoderMetric[EmbeddingCosineOptions]):
    """Cosine of the output's sentence embedding to the reference's (or the input's)."""

    info = MetricInfo(
        name="neural.embedding-cosine", version="1", kind="reference", requires=("output",),
        empty_text=EMBEDDED_EMPTY,
        value_range=(-1.0, 1.0),
        description="Cosine similarity of pooled sentence embeddings of the output and the "
                    "reference (multi_ref=max|mean) or, with against=input, the input; "
                    "backend=vllm|vllm_server embeds with vLLM's pooling runner.",
        citation="Reimers and Gurevych (2019). Sentence-BERT: Sentence Embeddings using "
                 "Siamese BERT-Networks. EMNLP.",
    )
    Options = EmbeddingCosineOptions
    batch_size = 256

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._pooled = PooledModel(self)

    def pooler(self) -> Any:
        return self._pooled.get(self.options, str(self.model_ref.path))

    def signature_fields(self) -> dict[str, str]:
        return pooling_signature(super().signature_fields(), self.options,
                                 self.pooler() if uses_pooling(self.options) else None)

    def embed(self, texts: list[str]) -> Sequence[Any]:
        if not uses_pooling(self.options):
            return list(self.encoder.sentence_embeddings(texts,
                                                         batch_size=self.options.batch_size))
        vectors: list[Any] = []
        for start in range(0, len(texts), self.options.batch_size):
            chunk = texts[start:start + self.options.batch_size]
            vectors += [np.asarray(v, dtype=np.float64) for v in self.pooler().pool("embed", chunk)]
        return vectors

    def close(self) -> None:
        self._pooled.close()

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        against = self.options.against
        contexts = [context_texts(s, against) for s in samples]
        texts = [t for s, ctx in zip(samples, contexts, strict=True)
                 if s.output and s.output.strip() and ctx for t in (s.output, *ctx)]
        vectors = dict(zip(texts, self.embed(texts), strict=True))
        results: list[float | Outcome] = []
        for sample, ctx in zip(samples, contexts, strict=True):
            if not sample.output or not sample.output.strip():
                results.append(Outcome.failed(Status.SKIPPED, "empty output"))
            elif not ctx:
                results.append(Outcome.failed(Status.SKIPPED, f"sample has no {against} text"))
            else:
                sims = cosine_to_each(vectors[sample.output], np.stack([vectors[t] for t in ctx]))
                value = sims.max() if self.options.multi_ref == "max" else sims.mean()
                results.append(float(value))
        return results
