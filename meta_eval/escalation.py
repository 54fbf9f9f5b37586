"""Trust or escalate: the confidence threshold above which a judge's verdicts can be kept with
a guaranteed agreement with people, and the risk-coverage curve that compares abstaining judges.

calibrate_threshold   Jung, Brahman, Choi 2025, "Trust or Escalate: LLM Judges with Provable
    Guarantees for Human Agreement" (ICLR), fixed-sequence testing (Learn then Test, Angelopoulos
    et al. 2021). On a calibration set of n items with the judge's confidence c_i and whether it
    agreed with people a_i, for each candidate threshold l the judge keeps the n(l) items with
    c_i >= l, and d(l) of them disagree. The null hypothesis H_l: P(disagree | c >= l) > alpha
    is tested by the exact binomial tail

        p(l) = P(Binomial(n(l), alpha) <= d(l)),

    rejected when p(l) <= delta (equivalently: the one-sided Clopper-Pearson upper 1 - delta
    bound on the disagreement rate is below alpha). Candidates are tested from the strictest
    (highest) down, and testing stops at the first that is not rejected; the threshold is the
    last rejected one. Then, with probability at least 1 - delta over the calibration set, the
    judge agrees with people on at least 1 - alpha of the items it keeps. A candidate keeping
    fewer than ceil(log delta / log(1 - alpha)) calibration items cannot be rejected whatever
    the labels say (even no disagreement has p = (1 - alpha)^n(l) > delta), so it is passed
    over instead of ending the sequence: that choice reads only the confidences, never the
    agreement (without it the strictest candidates, keeping one or two items, would stop every
    calibration at once). None when the first testable candidate is not rejected: the judge
    decides nothing, every item escalates. Candidates default to the calibration set's distinct
    confidences; tests/test_escalation.py checks the guarantee over 1,000 calibrations.

agreement_at          A threshold applied to held-out labelled items: coverage and the
    empirical agreement on the items kept.
risk_coverage_curve   For each distinct confidence t (descending), coverage = share of items
    with c >= t, selective risk = share of those the judge got wrong, generalized risk = share
    of all items that are kept and wrong (Traub et al. 2024, "Overcoming Common Flaws in the
    Evaluation of Selective Classification Systems", NeurIPS).
augrc                 The area under the generalized risk-coverage curve from (0, 0), trapezoidal
    over tied confidences (Traub et al. 2024): equal to
    sum_i wrong_i (N + 1/2 - r_i) / N^2 with r_i the average rank of c_i (1 = most confident),
    and to (1 - AUROC) acc (1 - acc) + (1 - acc)^2 / 2 with AUROC that of confidence for
    telling right from wrong (ties count 1/2). Lower is better; it weighs every working point.

Confidence NaN or agreement outside {0, 1} is refused (`EstimationError`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.estimation import EstimationError

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike, FloatArray, IntArray


@dataclass(frozen=True)
class Threshold:
    """The chosen threshold (None: escalate everything) and what it keeps on the calibration
    set; `tested` holds (threshold, kept, disagreements, p-value) for each candidate tested, in
    testing order (the last one not rejected, unless every candidate was)."""

    threshold: float | None
    alpha: float
    delta: float
    kept: int
    items: int
    agreement_kept: float
    tested: tuple[tuple[float, int, int, float], ...]

    @property
    def coverage(self) -> float:
        """The share of calibration items the judge keeps at the threshold."""
        return self.kept / self.items

    @property
    def guaranteed_agreement(self) -> float:
        """1 - alpha: the agreement guaranteed on kept items, with probability 1 - delta."""
        return 1.0 - self.alpha


@dataclass(frozen=True)
class RiskCoverage:
    """The risk-coverage curve, one point per distinct confidence (descending)."""

    thresholds: FloatArray
    coverage: FloatArray
    selective_risk: FloatArray
    generalized_risk: FloatArray


def _inputs(confidence: ArrayLike, agree: ArrayLike) -> tuple[FloatArray, IntArray]:
    c = np.asarray(confidence, dtype=float).ravel()
    a = np.asarray(agree, dtype=float).ravel()
    if c.shape != a.shape:
        raise EstimationError(
            f"confidence and agreement differ in length: {c.size} and {a.size}")
    if c.size == 0:
        raise EstimationError("the calibration set is empty")
    bad = np.flatnonzero(~np.isfinite(c))
    if bad.size:
        raise EstimationError(f"confidence of item {bad[0]} is {c[bad[0]]}, not a number")
    bad = np.flatnonzero(~np.isin(a, (0.0, 1.0)))
    if bad.size:
        raise EstimationError(f"agreement of item {bad[0]} is {a[bad[0]]}, not 0 or 1")
    return c, a.astype(np.int64)


def _kept_counts(c: FloatArray, wrong: IntArray, thresholds: FloatArray
                 ) -> tuple[IntArray, IntArray]:
    """Items with c >= t and how many of them are wrong, for each t."""
    order = np.argsort(c)
    sorted_c = c[order]
    wrong_above = np.concatenate([np.cumsum(wrong[order][::-1])[::-1], [0]])
    start = np.searchsorted(sorted_c, thresholds, side="left")
    return c.size - start, wrong_above[start]


def smallest_testable(*, alpha: float, delta: float) -> int:
    """The fewest kept items with which H_l can be rejected at all: the smallest n with
    (1 - alpha)^n <= delta."""
    n = max(1, math.ceil(math.log(delta) / math.log1p(-alpha)))
    while (1.0 - alpha) ** n > delta:  # guard the rounding of the logarithms
        n += 1
    while n > 1 and (1.0 - alpha) ** (n - 1) <= delta:
        n -= 1
    return n


def calibrate_threshold(*, confidence: ArrayLike, agree: ArrayLike, alpha: float,
                        delta: float, thresholds: ArrayLike | None = None) -> Threshold:
    """The threshold chosen by fixed-sequence testing (module docstring). `agree` is 1 where
    the judge agreed with people on the item, 0 where not; `thresholds` are the candidates
    (any order; tested from the highest), by default the distinct confidences."""
    from scipy.stats import binom

    if not (0.0 < alpha < 1.0 and 0.0 < delta < 1.0):
        raise EstimationError(f"alpha and delta must lie in (0, 1), got {alpha} and {delta}")
    c, a = _inputs(confidence, agree)
    candidates = np.unique(c if thresholds is None else np.asarray(thresholds, dtype=float))
    candidates = candidates[np.isfinite(candidates)][::-1]
    kept, wrong = _kept_counts(c, 1 - a, candidates)
    tested_here = kept >= smallest_testable(alpha=alpha, delta=delta)
    candidates, kept, wrong = candidates[tested_here], kept[tested_here], wrong[tested_here]
    p_values = np.asarray(binom.cdf(wrong, kept, alpha), dtype=float)
    failing = np.flatnonzero(p_values > delta)
    stop = int(failing[0]) if failing.size else candidates.size
    tested = tuple((float(t), int(k), int(w), float(p)) for t, k, w, p in
                   zip(candidates[:stop + 1], kept[:stop + 1], wrong[:stop + 1],
                       p_values[:stop + 1], strict=True))
    if stop == 0:
        return Threshold(threshold=None, alpha=alpha, delta=delta, kept=0, items=c.size,
                         agreement_kept=float("nan"), tested=tested)
    chosen = stop - 1
    return Threshold(threshold=float(candidates[chosen]), alpha=alpha, delta=delta,
                     kept=int(kept[chosen]), items=c.size,
                     agreement_kept=1.0 - float(wrong[chosen]) / float(kept[chosen]),
                     tested=tested)


@dataclass(frozen=True)
class HeldOut:
    """A threshold applied to other labelled items: how many it keeps and how often the judge
    agrees with people on them (NaN when it keeps none)."""

    kept: int
    items: int
    agreement: float

    @property
    def coverage(self) -> float:
        """The share of items kept."""
        return self.kept / self.items


def agreement_at(*, confidence: ArrayLike, agree: ArrayLike,
                 threshold: float | None) -> HeldOut:
    """The empirical agreement on held-out labelled items at a threshold from
    calibrate_threshold (None keeps nothing): the check the guarantee is about."""
    c, a = _inputs(confidence, agree)
    kept = c >= threshold if threshold is not None else np.zeros(c.size, dtype=bool)
    count = int(kept.sum())
    return HeldOut(kept=count, items=c.size,
                   agreement=float(a[kept].mean()) if count else float("nan"))


def risk_coverage_curve(*, confidence: ArrayLike, correct: ArrayLike) -> RiskCoverage:
    """Coverage, selective risk and generalized risk at each distinct confidence, from the most
    confident down (module docstring); `correct` is 1 where the judge was right."""
    c, right = _inputs(confidence, correct)
    thresholds = np.unique(c)[::-1]
    kept, wrong = _kept_counts(c, 1 - right, thresholds)
    return RiskCoverage(thresholds=thresholds, coverage=kept / c.size,
                        selective_risk=wrong / kept, generalized_risk=wrong / c.size)


def augrc(*, confidence: ArrayLike, correct: ArrayLike) -> float:
    """The area under the generalized risk-coverage curve (Traub et al. 2024), trapezoidal from
    (0, 0) through each distinct confidence's point."""
    curve = risk_coverage_curve(confidence=confidence, correct=correct)
    coverage = np.concatenate([[0.0], curve.coverage])
    risk = np.concatenate([[0.0], curve.generalized_risk])
    return float(np.sum(np.diff(coverage) * (risk[1:] + risk[:-1]) / 2.0))
