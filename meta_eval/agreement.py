"""Agreement between raters, or between a judge and raters, and the human ceiling.

cohen_kappa (Cohen 1960; weighted: Cohen 1968): with observed joint proportions o_ij and
    chance proportions e_ij = o_i. o_.j over the k categories (sorted union of both sides),

        kappa = 1 - sum w_ij o_ij / sum w_ij e_ij,

    w_ij = [i != j] (unweighted), |i - j| / (k - 1) (linear) or (i - j)^2 / (k - 1)^2
    (quadratic), i and j being category positions (as scikit-learn's cohen_kappa_score).

krippendorff_alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"): from
    the coincidence matrix o_ck = sum over units u with m_u >= 2 values of
    (number of c-k pairs of values from different raters in u) / (m_u - 1), n_c = sum_k o_ck,
    n = sum_c n_c,

        alpha = 1 - (n - 1) sum_ck o_ck d2(c, k) / sum_ck n_c n_k d2(c, k)

    with d2 = [c != k] (nominal), (c - k)^2 (interval), or for ordinal
    (sum_{g=c..k} n_g - (n_c + n_k)/2)^2. Missing ratings are NaN; units with one rating
    are not pairable and do not count.

human_ceiling: with several raters of one criterion, each rater's scores are correlated
    with the mean of the others under the same statistic, level and grouping, and these
    leave-one-rater-out values are averaged; a metric is scored against the same
    leave-one-out references, so `fraction` = metric / ceiling compares like with like.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from meta_eval.levels import evaluate
from meta_eval.results import Result

KAPPA_WEIGHTS = (None, "linear", "quadratic")
ALPHA_LEVELS = ("nominal", "ordinal", "interval")


def _present(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "fc":
        return np.isfinite(x)
    return np.array([v is not None and v == v and v != "" for v in x], dtype=bool)


def cohen_kappa(*, human: Sequence, metric: Sequence, weights: str | None = None,
                labels: Sequence | None = None) -> Result:
    """Cohen's kappa between `human` and `metric` labels (the metric may be a second rater).

    Pairs with a missing label are dropped. `labels` fixes the ordered category list
    (default: sorted union of observed labels). Undefined (NaN) when chance agreement is
    complete, e.g. a single category.
    """
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"unknown weights {weights!r}; use None, 'linear' or 'quadratic'")
    a = np.asarray(human, dtype=object if not _numeric(human) else float)
    b = np.asarray(metric, dtype=object if not _numeric(metric) else float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("human and metric must be 1-D sequences of one length")
    ok = _present(a) & _present(b)
    a, b = a[ok], b[ok]
    cats = list(labels) if labels is not None else sorted(set(a.tolist()) | set(b.tolist()))
    index = {c: i for i, c in enumerate(cats)}
    unknown = [v for v in set(a.tolist()) | set(b.tolist()) if v not in index]
    if unknown:
        raise ValueError(f"labels {sorted(map(str, unknown))} are not in `labels`")
    k = len(cats)
    name = "cohen-kappa" if weights is None else f"cohen-kappa-{weights}"
    if a.size == 0 or k < 2:
        return Result(name, float("nan"), n=int(a.size), skipped=1)
    ia = np.array([index[v] for v in a.tolist()])
    ib = np.array([index[v] for v in b.tolist()])
    observed = np.zeros((k, k))
    np.add.at(observed, (ia, ib), 1.0)
    observed /= a.size
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j) / (k - 1)
    else:
        w = (i - j) ** 2 / (k - 1) ** 2
    chance = float((w * expected).sum())
    value = 1.0 - float((w * observed).sum()) / chance if chance > 0 else float("nan")
    return Result(name, value, n=int(a.size), skipped=0 if np.isfinite(value) else 1)


def _numeric(x: Sequence) -> bool:
    try:
        np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return False
    return True


def krippendorff_alpha(*, ratings: np.ndarray, level: str = "interval") -> Result:
    """Krippendorff's alpha of a (raters, units) matrix of numeric ratings, NaN = missing.

    For a judge against people, stack the judge as one more rater. n is the number of
    pairable values.
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {ALPHA_LEVELS}")
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise ValueError("ratings must be a (raters, units) matrix")
    values, inverse = np.unique(data[np.isfinite(data)], return_inverse=True)
    counts = np.zeros((data.shape[1], values.size))  # units x values
    units = np.nonzero(np.isfinite(data))[1]
    np.add.at(counts, (units, inverse.reshape(-1)), 1.0)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    name = f"krippendorff-{level}"
    if counts.size == 0:
        return Result(name, float("nan"), n=0, skipped=1)
    scaled = counts / (m - 1)[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if level == "nominal":
        d2 = 1.0 - np.eye(values.size)
    elif level == "interval":
        d2 = (values[:, None] - values[None, :]) ** 2
    else:
        cum = np.cumsum(n_c)
        lo, hi = np.minimum.outer(np.arange(values.size), np.arange(values.size)), \
            np.maximum.outer(np.arange(values.size), np.arange(values.size))
        between = cum[hi] - np.where(lo > 0, cum[np.maximum(lo - 1, 0)], 0.0)
        d2 = (between - (n_c[lo] + n_c[hi]) / 2) ** 2
    expected = float((np.outer(n_c, n_c) * d2).sum())
    if expected == 0:
        return Result(name, float("nan"), n=int(n), skipped=1)
    value = 1.0 - (n - 1) * float((coincidence * d2).sum()) / expected
    return Result(name, value, n=round(n))


@dataclass(frozen=True)
class Ceiling:
    """Leave-one-rater-out human agreement and, optionally, a metric on the same footing."""

    statistic: str
    value: float  # mean over raters of stat(rater, mean of the other raters)
    per_rater: list[float]
    metric_value: float | None = None  # mean over raters of stat(metric, mean of the others)
    fraction: float | None = None  # metric_value / value
    extra: dict = field(default_factory=dict)


def human_ceiling(statistic: str, *, raters: Sequence[np.ndarray],
                  metric: np.ndarray | None = None, level: str = "segment",
                  grouping: str = "none", **options) -> Ceiling:
    """Leave-one-rater-out ceiling of `statistic` over (items, systems) rater matrices.

    `options` go to `evaluate` (epsilon, seed, permutations).
    """
    mats = [np.asarray(r, dtype=float) for r in raters]
    if len(mats) < 2:
        raise ValueError("the human ceiling needs at least two raters")
    if any(m.shape != mats[0].shape for m in mats):
        raise ValueError("every rater matrix must have the same (items, systems) shape")
    stack = np.stack(mats)
    per_rater, metric_values = [], []
    for r in range(len(mats)):
        others = np.delete(stack, r, axis=0)
        present = np.isfinite(others).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            reference = np.where(present > 0, np.nansum(others, axis=0) / present, np.nan)
        per_rater.append(evaluate(statistic, human=reference, metric=mats[r], level=level,
                                  grouping=grouping, **options).value)
        if metric is not None:
            metric_values.append(evaluate(statistic, human=reference, metric=metric,
                                          level=level, grouping=grouping, **options).value)
    value = float(np.nanmean(per_rater)) if np.isfinite(per_rater).any() else float("nan")
    metric_value = fraction = None
    if metric is not None and np.isfinite(metric_values).any():
        metric_value = float(np.nanmean(metric_values))
        fraction = metric_value / value if np.isfinite(value) and value != 0 else None
    return Ceiling(statistic, value, per_rater, metric_value, fraction)
