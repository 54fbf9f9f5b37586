"""System-level pairwise statistics: pairwise accuracy and soft pairwise accuracy (SPA).

pairwise-accuracy (Kocmi et al. 2021, "To Ship or Not to Ship", Sec. 3): over all pairs of
systems (i, j), the share with sign(h_i - h_j) == sign(m_i - m_j), where h and m are
system-level scores. Equal to acc-23 with epsilon = 0 on system scores.

spa (Thompson et al. 2024, "Improving Statistical Significance in Human Evaluation of
Automatic Metrics via Soft Pairwise Accuracy"; WMT24): for every pair of systems, a paired
permutation test on segment scores gives p_h(i, j) (human) and p_m(i, j) (metric), the
p-value for "system i is better than system j"; then

    SPA = 1 - mean over pairs i < j of |p_h(i, j) - p_m(i, j)|.

The test flips the sign of each segment's score difference at random (the same random
signs for every pair and for human and metric, as mt-metrics-eval `pce.py` does) and
p = share of resamples whose summed difference is >= the observed one. Per pair only items
scored for both systems by both human and metric are used. The p-values do not change when
a side is scaled, so each side is first scaled exactly by a power of two near its largest
|value| (huge scores cannot overflow the sums).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from meta_eval.correlation import kendall_groups
from meta_eval.numerics import power_of_two_scale
from meta_eval.results import Result

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike, BoolArray, FloatArray


def random_signs(permutations: int, n: int, seed: int) -> FloatArray:
    """(permutations, n) matrix of +-1, drawn as mt-metrics-eval `pce.py` draws them."""
    rng = np.random.default_rng(seed)
    return np.where(rng.random((permutations, n), dtype=np.float32) > 0.5, 1.0, -1.0)


def pairwise_p_values(scores: FloatArray, *, signs: FloatArray,
                      valid: BoolArray | None = None) -> FloatArray:
    """p[i, j] (i < j) of a paired permutation test that system i beats system j.

    `scores` is (items, systems); `signs` is (permutations, items) of +-1; `valid` masks
    items usable for each pair (systems x systems x items), default: both scores present.
    Entries of pairs with no usable item, and the lower triangle, are NaN.
    """
    scores = np.asarray(scores, dtype=float)
    scores = np.ldexp(scores, -power_of_two_scale(np.where(np.isfinite(scores), scores, 0.0),
                                                  axis=None))
    n_sys = scores.shape[1]
    iu, ju = np.triu_indices(n_sys, 1)
    diff = scores[:, iu] - scores[:, ju]  # (items, pairs)
    ok = np.isfinite(diff) if valid is None else valid[iu, ju].T
    diff = np.where(ok, diff, 0.0)
    observed = diff.sum(axis=0)
    null = signs @ diff  # (permutations, pairs)
    tol = 1e-9 * np.abs(diff).sum(axis=0)
    p = (null >= observed - tol).mean(axis=0)
    out = np.full((n_sys, n_sys), np.nan)
    out[iu, ju] = np.where(ok.any(axis=0), p, np.nan)
    return out


def spa(*, human: ArrayLike, metric: ArrayLike, permutations: int = 1000,
        seed: int = 0) -> Result:
    """Soft pairwise accuracy of `metric` against `human`, both (items, systems) matrices.

    n is the number of system pairs compared; pairs with no commonly scored item are
    skipped and counted.
    """
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    if human.shape != metric.shape or human.ndim != 2:
        raise ValueError("human and metric must be (items, systems) matrices of one shape")
    ok = np.isfinite(human) & np.isfinite(metric)
    valid = ok.T[:, None, :] & ok.T[None, :, :]  # (systems, systems, items)
    signs = random_signs(permutations, human.shape[0], seed)
    p_h = pairwise_p_values(human, signs=signs, valid=valid)
    p_m = pairwise_p_values(metric, signs=signs, valid=valid)
    iu, ju = np.triu_indices(human.shape[1], 1)
    gaps = np.abs(p_h[iu, ju] - p_m[iu, ju])
    defined = np.isfinite(gaps)
    value = 1.0 - float(gaps[defined].mean()) if defined.any() else float("nan")
    return Result("spa", value, n=int(defined.sum()), skipped=int((~defined).sum()),
                  level="system", grouping="none")


def pairwise_accuracy(*, human: ArrayLike, metric: ArrayLike) -> Result:
    """Kocmi et al. 2021 pairwise accuracy of system-level scores (1-D, one per system)."""
    human = np.asarray(human, dtype=float).reshape(-1)
    metric = np.asarray(metric, dtype=float).reshape(-1)
    n = int((np.isfinite(human) & np.isfinite(metric)).sum())
    value = float(kendall_groups(human=human, metric=metric, variant="acc-23", epsilon=0.0))
    return Result("pairwise-accuracy", value, n=n if np.isfinite(value) else 0,
                  skipped=0 if np.isfinite(value) else 1, level="system", grouping="none")
