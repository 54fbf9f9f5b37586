"""The Vendi score (Friedman & Dieng, 2023, "The Vendi Score: A Diversity Evaluation Metric
for Machine Learning"), with the order-q family of Pasarkar & Dieng (2024).

For n items with a positive semi-definite similarity matrix K (K_ii = 1), here the cosine of
unit sentence embeddings, let l_1..l_n be the eigenvalues of K / n (they sum to 1). Then

    VS_1(K) = exp(-sum_i l_i ln l_i)                   (exp of the Shannon entropy)
    VS_q(K) = exp(ln(sum_i l_i^q) / (1 - q))           (q != 1; q = inf: 1 / max_i l_i)

It is the effective number of distinct items: 1 when all are the same, n when all are
orthogonal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import Field, ValidatorFunctionWrapHandler, field_validator

from judgebench.plugin_api import MetricInfo, Outcome, Sample, Status
from judgebench_neural.base import SET_EMPTY, EncoderMetric, ModelOptions


def vendi_from_similarity(similarity: np.ndarray, q: float = 1.0) -> float:
    """Vendi score of order q from an n x n similarity matrix with unit diagonal."""
    n = similarity.shape[0]
    if n == 0:
        raise ValueError("the Vendi score needs at least one item")
    eigenvalues = np.linalg.eigvalsh(similarity / n)
    eigenvalues = eigenvalues[eigenvalues > 1e-12]  # round-off below 0 carries no mass
    eigenvalues = eigenvalues / eigenvalues.sum()
    if q == 1:
        return float(np.exp(-np.sum(eigenvalues * np.log(eigenvalues))))
    if math.isinf(q):
        return float(1 / eigenvalues.max())
    # ln(sum l^q) as q ln(max l) + ln(sum (l / max l)^q): no l^q underflows to 0 at large q
    largest = eigenvalues.max()
    log_sum = q * math.log(largest) + math.log(float(np.sum((eigenvalues / largest) ** q)))
    return float(np.exp(log_sum / (1 - q)))


def vendi_from_embeddings(embeddings: np.ndarray, q: float = 1.0) -> float:
    """Vendi score with the cosine-similarity kernel over rows of `embeddings`."""
    norms = np.linalg.norm(embeddings, axis=1, keepdims=True)
    unit = embeddings / np.where(norms == 0, 1, norms)
    return vendi_from_similarity(unit.astype(np.float64) @ unit.T.astype(np.float64), q)


#: The largest finite order q an option takes; inf (1 / the largest eigenvalue) is taken too.
MAX_Q = 100.0


class VendiOptions(ModelOptions):
    q: float = Field(default=1.0, ge=0, le=MAX_Q,
                     description=f"the order (1: Shannon); at most {MAX_Q:g}, or inf")

    @field_validator("q", mode="wrap")
    @classmethod
    def _infinite_order(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> float:
        if value == math.inf or (isinstance(value, str) and value.strip().lower() == "inf"):
            return math.inf
        return float(handler(value))


class Vendi(EncoderMetric[VendiOptions]):
    """Diversity of one system's outputs: the Vendi score of their embedding similarities."""

    info = MetricInfo(
        name="neural.vendi", version="1", kind="reference", requires=("output",),
        empty_text=SET_EMPTY,
        level="corpus", value_range=(1.0, None),
        description="Vendi score (Friedman & Dieng 2023) of a system's outputs under the cosine "
                    "kernel of sentence embeddings: the effective number of distinct outputs. "
                    "Option q (order; 1 = Shannon).",
        citation="Friedman and Dieng (2023). The Vendi Score: A Diversity Evaluation Metric "
                 "for Machine Learning. TMLR.",
    )
    Options = VendiOptions

    def corpus_score(self, samples: Sequence[Sample]) -> float | Outcome:
        outputs = [s.output for s in samples if s.output and s.output.strip()]
        if not outputs:
            return Outcome.failed(Status.SKIPPED, "no non-empty outputs")
        embeddings = self.encoder.sentence_embeddings(outputs, batch_size=self.options.batch_size)
        return Outcome(value=vendi_from_embeddings(embeddings, self.options.q),
                       extra={"n": len(outputs)})
