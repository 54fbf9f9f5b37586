"""MAUVE (Pillutla et al., 2021, "MAUVE: Measuring the Gap Between Neural Text and Human Text
using Divergence Frontiers"; smoothed MAUVE* from Pillutla et al., JMLR 2023).

P (human text) and Q (model text) are embedded, the pooled embeddings L2-normalised, reduced
by PCA to the fewest components that explain `explained_variance` of the variance, and
quantised jointly by k-means (faiss, as the reference code) into k buckets, giving histograms
p and q (MAUVE*: add 1/2 to every count first). With R_l = l P + (1 - l) Q for l in a grid of
`points` values in (0, 1), the divergence curve is

    C(P, Q) = { (exp(-c KL(Q | R_l)), exp(-c KL(P | R_l))) } plus the points (0, 1) and (1, 0),

and MAUVE is the area under it (mean of the areas with x and y swapped, as the reference code
computes it). The frontier integral is 2 sum_i [(p_i + q_i)/4 - p_i q_i (ln p_i - ln q_i) /
(2 (p_i - q_i))] (terms with p_i = q_i are 0; with one of them 0, the other / 4).

This follows the `mauve-text` package step for step (same PCA call, same faiss k-means with
seed + 2, same curve) and gives its numbers on the same features; features here come from our
encoder rather than GPT-2 large.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field

from judgebench.plugin_api import (
    MAX_BATCH,
    MAX_COUNT,
    MAX_MAGNITUDE,
    MAX_SEED,
    MetricInfo,
    Outcome,
    Sample,
    Status,
)
from judgebench_neural.base import SET_EMPTY, EncoderMetric, ModelOptions, context_texts


@dataclass(frozen=True)
class MauveResult:
    mauve: float
    mauve_star: float
    frontier_integral: float
    frontier_integral_star: float
    p_hist: np.ndarray
    q_hist: np.ndarray
    num_buckets: int


def auto_buckets(n_p: int, n_q: int) -> int:
    """The reference heuristic: one bucket per ten texts of the smaller side, at least 2."""
    return max(2, round(min(n_p, n_q) / 10))


def quantize(p_features: np.ndarray, q_features: np.ndarray, *, num_buckets: int,
             explained_variance: float = 0.9, num_redo: int = 5, max_iter: int = 500,
             seed: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Bucket counts of P and Q after joint L2 normalisation, PCA and k-means."""
    import faiss
    from sklearn.decomposition import PCA

    if not 0 < explained_variance < 1:
        raise ValueError("explained_variance must be in (0, 1)")
    data = np.vstack([q_features, p_features]).astype(np.float64)
    norms = np.linalg.norm(data, axis=1, keepdims=True)
    data = data / np.where(norms == 0, 1, norms)
    pca = PCA(n_components=None, whiten=False, random_state=seed + 1).fit(data)
    keep = int(np.argmax(np.cumsum(pca.explained_variance_ratio_) >= explained_variance)) + 1
    reduced = np.ascontiguousarray(pca.transform(data)[:, :keep], dtype=np.float32)
    # min_points_per_centroid only silences faiss's small-sample warning; results are unchanged.
    kmeans = faiss.Kmeans(reduced.shape[1], num_buckets, niter=max_iter, verbose=False,
                          nredo=num_redo, update_index=True, seed=seed + 2,
                          min_points_per_centroid=1)
    kmeans.train(reduced)
    _, labels = kmeans.index.search(reduced, 1)
    labels = labels.reshape(-1)
    n_q = len(q_features)
    return (np.bincount(labels[n_q:], minlength=num_buckets),
            np.bincount(labels[:n_q], minlength=num_buckets))


def kl(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p | q) of two histograms; inf where p has mass and q has none."""
    if np.any((p != 0) & (q == 0)):
        return math.inf
    both = (p != 0) & (q != 0)
    return float(np.sum(p[both] * np.log(p[both] / q[both])))


def divergence_curve(p: np.ndarray, q: np.ndarray, *, scaling: float = 5.0,
                     points: int = 25) -> np.ndarray:
    """(points + 2, 2) array of (exp(-c KL(q|r)), exp(-c KL(p|r))), r = l p + (1 - l) q."""
    rows = [(0.0, math.inf)]
    for weight in np.linspace(1e-6, 1 - 1e-6, points):
        mix = weight * p + (1 - weight) * q
        rows.append((kl(q, mix), kl(p, mix)))
    rows.append((math.inf, 0.0))
    return np.exp(-scaling * np.asarray(rows))


def trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    """The trapezoid rule on every numpy the package allows: `np.trapezoid` from numpy 2,
    the same function named `np.trapz` before it."""
    # by name: the type stubs of each numpy know only one of the two
    rule = getattr(np, "trapezoid", None) or getattr(np, "trapz")  # noqa: B009
    return float(rule(y, x))


def area(curve: np.ndarray) -> float:
    """Mean of the trapezoid areas under the curve read along x and along y."""
    x, y = curve.T
    by_x, by_y = np.argsort(x), np.argsort(y)
    return 0.5 * (trapezoid(y[by_x], x[by_x]) + trapezoid(x[by_y], y[by_y]))


def frontier_integral(p: np.ndarray, q: np.ndarray, scaling: float = 2.0) -> float:
    total = 0.0
    for a, b in zip(p.tolist(), q.tolist(), strict=True):
        if a == 0 and b == 0:
            continue
        if a == 0 or b == 0:
            total += (a + b) / 4
        elif abs(a - b) > 1e-8:
            total += 0.25 * (a + b) - 0.5 * a * b * (math.log(a) - math.log(b)) / (a - b)
    return total * scaling


def mauve(p_features: np.ndarray, q_features: np.ndarray, *, num_buckets: int | None = None,
          explained_variance: float = 0.9, num_redo: int = 5, max_iter: int = 500,
          scaling: float = 5.0, points: int = 25, seed: int = 25) -> MauveResult:
    """MAUVE and MAUVE* of P (rows of `p_features`) against Q, from their embeddings."""
    if len(p_features) == 0 or len(q_features) == 0:
        raise ValueError("MAUVE needs at least one text on each side")
    buckets = num_buckets or auto_buckets(len(p_features), len(q_features))
    p_counts, q_counts = quantize(p_features, q_features, num_buckets=buckets,
                                  explained_variance=explained_variance, num_redo=num_redo,
                                  max_iter=max_iter, seed=seed)
    p_hist, q_hist = p_counts / p_counts.sum(), q_counts / q_counts.sum()
    p_star = (p_counts + 0.5) / (p_counts + 0.5).sum()
    q_star = (q_counts + 0.5) / (q_counts + 0.5).sum()
    return MauveResult(
        mauve=area(divergence_curve(p_hist, q_hist, scaling=scaling, points=points)),
        mauve_star=area(divergence_curve(p_star, q_star, scaling=scaling, points=points)),
        frontier_integral=frontier_integral(p_hist, q_hist),
        frontier_integral_star=frontier_integral(p_star, q_star),
        p_hist=p_hist, q_hist=q_hist, num_buckets=buckets,
    )


class MauveOptions(ModelOptions):
    against: Literal["reference", "input"] = "reference"
    num_buckets: int | Literal["auto"] = Field(default="auto", ge=2, le=MAX_BATCH)
    explained_variance: float = Field(default=0.9, gt=0, lt=1)
    kmeans_num_redo: int = Field(default=5, ge=1, le=MAX_COUNT)
    kmeans_max_iter: int = Field(default=500, ge=1, le=MAX_BATCH)
    scaling: float = Field(default=5.0, gt=0, le=MAX_MAGNITUDE)
    points: int = Field(default=25, ge=2, le=MAX_BATCH)
    seed: int = Field(default=25, ge=0, le=MAX_SEED)
    star: bool = False


class Mauve(EncoderMetric[MauveOptions]):
    """MAUVE between one system's outputs (Q) and the human texts of the same items (P)."""

    info = MetricInfo(
        name="neural.mauve", version="1", kind="reference", requires=("output",),
        empty_text=SET_EMPTY,
        level="corpus", value_range=(0.0, 1.0),
        description="MAUVE (Pillutla et al. 2021) of a system's outputs against the distinct "
                    "references (or inputs) of its items, on encoder embeddings; star=true "
                    "gives the smoothed MAUVE*. One number per system.",
        citation="Pillutla, Swayamdipta, Zellers, Thickstun, Welleck, Choi and Harchaoui "
                 "(2021). MAUVE: Measuring the Gap Between Neural Text and Human Text using "
                 "Divergence Frontiers. NeurIPS.",
    )
    Options = MauveOptions
    modules = ("torch", "transformers", "faiss", "sklearn")  # k-means and PCA

    def corpus_score(self, samples: Sequence[Sample]) -> float | Outcome:
        outputs = [s.output for s in samples if s.output and s.output.strip()]
        against = self.options.against
        human = list(dict.fromkeys(t for s in samples for t in context_texts(s, against)))
        if len(outputs) < 2 or len(human) < 2:
            return Outcome.failed(Status.SKIPPED, f"MAUVE needs at least 2 outputs and 2 "
                                  f"{self.options.against} texts; got {len(outputs)} and "
                                  f"{len(human)}")
        buckets = (auto_buckets(len(human), len(outputs)) if self.options.num_buckets == "auto"
                   else self.options.num_buckets)
        if buckets > min(len(human), len(outputs)):
            return Outcome.failed(Status.SKIPPED, f"num_buckets={buckets} exceeds the "
                                  f"{min(len(human), len(outputs))} texts of the smaller side")
        batch = self.options.batch_size
        result = mauve(
            self.encoder.sentence_embeddings(human, batch_size=batch),
            self.encoder.sentence_embeddings(outputs, batch_size=batch),
            num_buckets=buckets, explained_variance=self.options.explained_variance,
            num_redo=self.options.kmeans_num_redo, max_iter=self.options.kmeans_max_iter,
            scaling=self.options.scaling, points=self.options.points, seed=self.options.seed,
        )
        return Outcome(value=result.mauve_star if self.options.star else result.mauve,
                       extra={"num_buckets": result.num_buckets,
                              "frontier_integral": result.frontier_integral,
                              "n_human": len(human), "n_output": len(outputs)})
