"""Agreement between raters, or between a judge and raters.

cohen_kappa (Cohen 1960; weighted: Cohen 1968): with observed joint proportions o_ij and
    chance proportions e_ij = o_i. o_.j over the k categories (sorted union of both sides),

        kappa = 1 - sum w_ij o_ij / sum w_ij e_ij,

    w_ij = [i != j] (unweighted), |i - j| / (k - 1) (linear) or (i - j)^2 / (k - 1)^2
    (quadratic), i and j being category positions (as scikit-learn's cohen_kappa_score),
    or a given matrix of disagreement weights (0 on the diagonal). Its standard error,
    interval and test are `meta_eval.kappa_inference`.

krippendorff_alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"): from
    the coincidence matrix o_ck = sum over units u with m_u >= 2 values of
    (number of c-k pairs of values from different raters in u) / (m_u - 1), n_c = sum_k o_ck,
    n = sum_c n_c,

        alpha = 1 - (n - 1) sum_ck o_ck d2(c, k) / sum_ck n_c n_k d2(c, k)

    with d2 = [c != k] (nominal), (c - k)^2 (interval), ((c - k)/(c + k))^2 (ratio: values
    >= 0 on a scale with an absolute zero, 0/0 = 0 where c = k = 0), or for ordinal
    (sum_{g=c..k} n_g - (n_c + n_k)/2)^2. Missing ratings are NaN; units with one rating
    are not pairable and do not count.

    A declared value `domain` (the scale's values, e.g. 1..5) makes a value outside it an
    error (the `krippendorff` package drops such a value silently). Declared values that
    nobody used enter the formula with n_g = 0: as the values between c and k of the
    ordinal distance they add nothing, so they change no alpha (Krippendorff 2011, section
    on ordinal metric: n_g counts the pairable values g).

Judge against people, per group (the `--statistic` kernels; padded (..., G, U) arrays, NaN
missing, a unit missing either side dropped, fewer than 2 units undefined):

    kappa, kappa-linear, qwk: Cohen's kappa of the two sides as categories (`categories`:
        rounded half up to integers). The categories are the integers, so the weights are
        score differences |c - d| / (k - 1) and (c - d)^2 / (k - 1)^2 over the scale's k
        integers from the lowest to the highest value seen (an empty category in between
        changes neither sum, and (k - 1) cancels): scikit-learn's cohen_kappa_score with
        labels=range(lo, hi + 1), and the ASAP (Kaggle essay scoring) quadratic weighted
        kappa, Williamson et al. 2012. qwk = 1 - mean (h - m)^2 / (var h + var m +
        (mean h - mean m)^2) (population moments).
    krippendorff-interval, -ordinal, -nominal: Krippendorff's alpha with the judge and the
        human column as two coders of each (item, system) unit (n = 2N values over N
        units): interval alpha = 1 - (n - 1) sum_u (h_u - m_u)^2 / (n sum_v (x_v - x_bar)^2)
        over the n pooled values x_v; ordinal alpha is interval alpha on the pooled average
        ranks (Krippendorff's ordinal distance between c and k is the difference of their
        mid-ranks, sum_{g<c} n_g + n_c/2); nominal alpha = 1 - 2(n - 1) #{h_u != m_u} /
        (n^2 - sum_c n_c^2); ratio alpha = 1 - 2(n - 1) sum_u d2(h_u, m_u) /
        sum_{v, w} d2(x_v, x_w) over ordered pairs of pooled values, d2(c, k) = ((c - k) /
        (c + k))^2 (each pair scaled by a power of two first, so no sum overflows). Ordinal
        and nominal use categories; interval and ratio the values.
    `domain` (kappa: labels, as scikit-learn's `labels=`; alpha: the value domain): every
        present category (kappa, ordinal and nominal alpha) or value (interval and ratio)
        must be one of it, else ValueError. Kappa's weights are then positions in the sorted
        labels (scikit-learn's cohen_kappa_score(labels=...)): with the consecutive integers
        lo..hi this is the default; with labels 1, 2, 4, 8 a 4 against an 8 is one step.

categories(x): the rounding rule, in one place: floor(x) + [x - floor(x) >= 1/2], half up
    (toward +inf), with halves computed in float within 1e-9 counted as halves: 3.5 -> 4,
    3.667 -> 4, 3.333 -> 3, 2.5 -> 3, -2.5 -> -2 (not Python's round-half-even). Integers are
    unchanged; NaN stays NaN.

confusion_table(*, human, metric): counts of (metric category, human category).

fleiss_kappa (Fleiss 1971, "Measuring nominal scale agreement among many raters"): over the
    N units that all m raters coded, with n_uj the raters who put unit u in category j,

        P_u = (sum_j n_uj^2 - m) / (m (m - 1)),  p_j = sum_u n_uj / (N m),
        kappa = (mean_u P_u - sum_j p_j^2) / (1 - sum_j p_j^2)

    (statsmodels' fleiss_kappa of the units x categories count table); undefined (NaN)
    with fewer than 2 raters, no complete unit, or one category only.

The human ceiling (raters against each other) is `meta_eval.ceiling`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.numerics import paired, power_of_two_scale
from meta_eval.results import Result

if TYPE_CHECKING:
    from meta_eval.arrays import AnyArray, ArrayLike, BoolArray, FloatArray, IntArray

KAPPA_WEIGHTS = (None, "linear", "quadratic")
ALPHA_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _present(x: AnyArray) -> BoolArray:
    if x.dtype.kind in "fc":
        return np.isfinite(x)
    return np.array([v is not None and v == v and v != "" for v in x], dtype=bool)


def kappa_weights(weights: str | ArrayLike | None, k: int) -> FloatArray:
    """The (k, k) disagreement weights w_ij of Cohen's kappa over k ordered categories:
    [i != j] (None), |i - j| / (k - 1) ("linear"), (i - j)^2 / (k - 1)^2 ("quadratic"), or a
    given matrix (rows: the first side's category, columns: the second's): finite, >= 0,
    0 on the diagonal, not all 0; only its ratios matter."""
    i, j = np.indices((k, k))
    if weights is None:
        return (i != j).astype(float)
    if isinstance(weights, str):
        if weights not in KAPPA_WEIGHTS:
            raise ValueError(f"unknown weights {weights!r}; use None, 'linear', 'quadratic' "
                             f"or a (k, k) matrix")
        if k < 2:
            return np.zeros((k, k))
        if weights == "linear":
            return np.abs(i - j) / (k - 1)
        return (i - j) ** 2 / (k - 1) ** 2
    w = np.asarray(weights, dtype=float)
    if w.shape != (k, k):
        raise ValueError(f"a weight matrix for {k} categories must be ({k}, {k}), got "
                         f"shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or (np.diag(w) != 0).any() or \
            not (w > 0).any():
        raise ValueError("a weight matrix needs finite weights >= 0, 0 on the diagonal "
                         "(agreement costs nothing) and some weight > 0")
    return w


def cohen_kappa(*, human: Sequence, metric: Sequence,
                weights: str | ArrayLike | None = None,
                labels: Sequence | None = None) -> Result:
    """Cohen's kappa between `human` and `metric` labels (the metric may be a second rater).

    `weights`: None, "linear", "quadratic" or a (k, k) disagreement matrix over the
    categories in order (`kappa_weights`).

    Pairs with a missing label are dropped. `labels` fixes the ordered category list
    (default: sorted union of observed labels). Undefined (NaN) when chance agreement is
    complete, e.g. a single category.
    """
    cats, counts = kappa_table(human=human, metric=metric, labels=labels)
    k, n = len(cats), int(counts.sum())
    kappa_weights(weights, k)  # a bad name or matrix is an error before any data check
    name = "cohen-kappa" if weights is None else \
        f"cohen-kappa-{weights if isinstance(weights, str) else 'custom'}"
    if n == 0 or k < 2:
        return Result(name, float("nan"), n=n, skipped=1)
    observed = counts / n
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    w = kappa_weights(weights, k)
    chance = float((w * expected).sum())
    value = 1.0 - float((w * observed).sum()) / chance if chance > 0 else float("nan")
    return Result(name, value, n=n, skipped=0 if np.isfinite(value) else 1)


def kappa_table(*, human: Sequence, metric: Sequence, labels: Sequence | None = None
                ) -> tuple[list[Any], FloatArray]:
    """The ordered categories and the (k, k) counts of (human, metric) category pairs over
    the pairs with both labels present (`cohen_kappa`'s table)."""
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
    counts = np.zeros((len(cats), len(cats)))
    np.add.at(counts, ([index[v] for v in a.tolist()], [index[v] for v in b.tolist()]), 1.0)
    return cats, counts


def _numeric(x: Sequence) -> bool:
    try:
        np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        return False
    return True


def krippendorff_alpha(*, ratings: ArrayLike, level: str = "interval",
                       domain: Sequence[float] | None = None) -> Result:
    """Krippendorff's alpha of a (raters, units) matrix of numeric ratings, NaN = missing.

    For a judge against people, stack the judge as one more rater. n is the number of
    pairable values. `domain`: the declared values (module docstring); a rating outside it
    is a ValueError. The ratio level needs ratings >= 0.
    """
    if level not in ALPHA_LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {ALPHA_LEVELS}")
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise ValueError("ratings must be a (raters, units) matrix")
    present = data[np.isfinite(data)]
    if level == "ratio":
        _check_ratio(present)
    if domain is None:
        values, inverse = np.unique(present, return_inverse=True)
    else:
        values = _domain(domain)
        _check_domain(present, values, "rating")
        inverse = np.searchsorted(values, present)
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
    elif level == "ratio":
        d2 = ratio_distance(values[:, None], values[None, :])
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


def ratio_distance(c: FloatArray, k: FloatArray) -> FloatArray:
    """Krippendorff's ratio distance ((c - k) / (c + k))^2 elementwise, 0 where c = k = 0;
    each pair is scaled by a power of two above max(|c|, |k|) first (exact), so c + k
    cannot overflow."""
    c, k = np.broadcast_arrays(np.asarray(c, dtype=float), np.asarray(k, dtype=float))
    e = np.frexp(np.maximum(np.abs(c), np.abs(k)))[1]
    c, k = np.ldexp(c, -e), np.ldexp(k, -e)
    total = c + k
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total != 0, ((c - k) / np.where(total != 0, total, 1.0)) ** 2, 0.0)


def _check_ratio(values: FloatArray) -> None:
    negative = values[values < 0]
    if negative.size:
        raise ValueError(f"the ratio level needs values >= 0 (a scale with an absolute "
                         f"zero), got {float(negative[0])!r}")


def _domain(domain: Sequence[float]) -> FloatArray:
    values = np.unique(np.asarray(list(domain), dtype=float))
    if values.size == 0 or not np.isfinite(values).all():
        raise ValueError("a declared domain needs one or more finite values")
    return values


def _check_domain(present: FloatArray, values: FloatArray, what: str) -> None:
    outside = present[~np.isin(present, values)]
    if outside.size:
        shown = ", ".join(_label_text(v) for v in values[:12]) + (", ..." if values.size > 12
                                                                   else "")
        raise ValueError(f"{what} {_label_text(float(outside[0]))} is not in the declared "
                         f"values ({shown})")


def _label_text(v: float) -> str:
    return str(_label(v))


# -- judge against people, per group (kernels of meta_eval.statistics) ---------------------
ALPHAS = {"krippendorff": "interval", "krippendorff-ordinal": "ordinal",
          "krippendorff-nominal": "nominal", "krippendorff-ratio": "ratio"}
HALF_TOL = 1e-9  # a fraction within this of 1/2 rounds up (means of raters in float)
_CELLS = 1 << 22  # (rows x categories) cells per chunk
_PAIRED_UNITS = 128  # up to this many pooled values per row, ratio pairs by broadcasting


def categories(x: FloatArray) -> FloatArray:
    """`x` rounded half up to integers (see the module docstring); NaN stays NaN."""
    x = np.asarray(x, dtype=float)
    low = np.floor(x)
    with np.errstate(invalid="ignore"):
        return low + (x - low >= 0.5 - HALF_TOL)


def _rows(x: FloatArray) -> FloatArray:
    return x.reshape(-1, x.shape[-1]) if x.shape[-1] else x.reshape(-1, 0)


def kappa_groups(*, human: FloatArray, metric: FloatArray, weights: str | None = None,
                 domain: Sequence[float] | None = None) -> FloatArray:
    """Per-group Cohen's kappa of the two sides' categories (see the module docstring);
    `domain`: the declared labels (weights by position among them)."""
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"unknown weights {weights!r}; use None, 'linear' or 'quadratic'")
    h, m = paired(human=categories(human), metric=categories(metric))
    if domain is not None:
        h, m = _positions(h, domain), _positions(m, domain)
    lead = h.shape[:-1]
    rows_h, rows_m = _rows(h), _rows(m)
    ok = np.isfinite(rows_h)
    n = ok.sum(axis=-1)
    out = np.full(rows_h.shape[0], np.nan)
    present = np.concatenate([rows_h[ok], rows_m[ok]])
    if present.size == 0:
        return out.reshape(lead)
    cats = np.unique(present)
    # Score differences in units of a power of two above the largest |category| (exact).
    e = int(np.frexp(np.max(np.abs(cats)))[1])
    scaled = np.ldexp(cats, -e)
    step = max(1, _CELLS // cats.size)
    for start in range(0, rows_h.shape[0], step):
        sl = slice(start, start + step)
        out[sl] = _kappa_rows(rows_h[sl], rows_m[sl], ok[sl], n[sl], cats, scaled, weights)
    return out.reshape(lead)


def _kappa_rows(h: FloatArray, m: FloatArray, ok: BoolArray, n: IntArray,
                cats: FloatArray, scaled: FloatArray, weights: str | None) -> FloatArray:
    rows, k = h.shape[0], cats.size
    ih = np.searchsorted(cats, np.where(ok, h, cats[0]))
    im = np.searchsorted(cats, np.where(ok, m, cats[0]))
    row = np.broadcast_to(np.arange(rows)[:, None], h.shape)
    count = np.maximum(n, 1)[:, None].astype(float)
    p_h = np.bincount((row * k + ih)[ok], minlength=rows * k).reshape(rows, k) / count
    p_m = np.bincount((row * k + im)[ok], minlength=rows * k).reshape(rows, k) / count
    if weights is None:
        observed = np.where(ok, ih != im, False).sum(axis=-1) / count[:, 0]
        expected = 1.0 - (p_h * p_m).sum(axis=-1)
    else:
        dh, dm = scaled[ih], scaled[im]
        gap = np.where(ok, np.abs(dh - dm), 0.0)
        if weights == "linear":
            observed = gap.sum(axis=-1) / count[:, 0]
            # E|X - Y| for independent X ~ p_h, Y ~ p_m, from cumulative sums over p_m.
            below = np.cumsum(p_m, axis=-1)
            below_v = np.cumsum(p_m * scaled, axis=-1)
            total_v = below_v[:, -1:]
            per_c = scaled * below - below_v + (total_v - below_v) - scaled * (1.0 - below)
            expected = (p_h * per_c).sum(axis=-1)
        else:
            observed = (gap * gap).sum(axis=-1) / count[:, 0]
            mean_h = (p_h * scaled).sum(axis=-1, keepdims=True)
            mean_m = (p_m * scaled).sum(axis=-1, keepdims=True)
            var_h = (p_h * (scaled - mean_h) ** 2).sum(axis=-1)
            var_m = (p_m * (scaled - mean_m) ** 2).sum(axis=-1)
            expected = var_h + var_m + (mean_h - mean_m)[:, 0] ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 1.0 - observed / expected
    return np.where((n >= 2) & (expected > 0), value, np.nan)


def _positions(x: FloatArray, labels: Sequence[float]) -> FloatArray:
    """Categories as their positions among the declared `labels` (NaN stays NaN)."""
    values = _domain(labels)
    ok = np.isfinite(x)
    _check_domain(x[ok], values, "category")
    return np.where(ok, np.searchsorted(values, np.where(ok, x, values[0])), np.nan)


def alpha_groups(*, human: FloatArray, metric: FloatArray, level: str = "interval",
                 domain: Sequence[float] | None = None) -> FloatArray:
    """Per-group Krippendorff's alpha with human and metric as two coders of each unit
    (see the module docstring); ordinal and nominal on `categories`; `domain`: the
    declared values (a value outside it is a ValueError)."""
    import scipy.stats

    if level not in ALPHA_LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {ALPHA_LEVELS}")
    if level in ("ordinal", "nominal"):
        human, metric = categories(human), categories(metric)
    h, m = paired(human=human, metric=metric)
    ok = np.isfinite(h)
    if domain is not None:
        values = _domain(domain)
        _check_domain(h[ok], values, "value")
        _check_domain(m[ok], values, "value")
    units = ok.sum(axis=-1)
    n = 2.0 * units
    if level == "ratio":
        _check_ratio(h[ok])
        _check_ratio(m[ok])
        observed = 2.0 * np.where(ok, ratio_distance(np.where(ok, h, 0.0),
                                                     np.where(ok, m, 0.0)), 0.0).sum(axis=-1)
        expected = _ratio_pair_sums(np.concatenate([h, m], axis=-1))
        with np.errstate(invalid="ignore", divide="ignore"):
            value = 1.0 - (n - 1.0) * observed / expected
        return np.where((units >= 2) & (expected > 0), value, np.nan)
    if level == "nominal":
        disagree = (ok & (h != m)).sum(axis=-1)
        pooled = np.concatenate([h, m], axis=-1)
        same = _same_pairs(pooled)
        expected = n * n - same
        with np.errstate(invalid="ignore", divide="ignore"):
            value = 1.0 - 2.0 * (n - 1.0) * disagree / expected
        return np.where((units >= 2) & (expected > 0), value, np.nan)
    if level == "ordinal":
        pooled = np.concatenate([h, m], axis=-1)
        if pooled.shape[-1]:
            ranks = scipy.stats.rankdata(pooled, axis=-1, nan_policy="omit")
        else:
            ranks = pooled
        size = h.shape[-1]
        h, m = ranks[..., :size], ranks[..., size:]
    h0, m0 = np.where(ok, h, 0.0), np.where(ok, m, 0.0)
    e = power_of_two_scale(np.maximum(np.abs(h0), np.abs(m0)))
    h0, m0 = np.ldexp(h0, -e), np.ldexp(m0, -e)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (h0.sum(axis=-1) + m0.sum(axis=-1)) / np.maximum(n, 1)
        spread = (np.where(ok, (h0 - mean[..., None]) ** 2 + (m0 - mean[..., None]) ** 2, 0.0)
                  .sum(axis=-1))
        d2 = (np.where(ok, h0 - m0, 0.0) ** 2).sum(axis=-1)
        value = 1.0 - (n - 1.0) * d2 / (n * spread)
    return np.where((units >= 2) & (spread > 0), value, np.nan)


def _ratio_pair_sums(x: FloatArray) -> FloatArray:
    """sum over ordered pairs of finite values v, w in each row of the last axis of
    ratio_distance(v, w): by broadcasting for short rows, else over each row's distinct
    values weighted by their counts (n_c n_k d2(c, k)), in chunks."""
    lead, size = x.shape[:-1], x.shape[-1]
    rows = x.reshape(-1, size) if size else x.reshape(-1, 0)
    out = np.zeros(rows.shape[0])
    if size <= _PAIRED_UNITS:
        step = max(1, _CELLS // max(size * size, 1))
        for start in range(0, rows.shape[0], step):
            r = rows[start:start + step]
            ok = np.isfinite(r)
            v = np.where(ok, r, 0.0)
            d = ratio_distance(v[:, :, None], v[:, None, :])
            out[start:start + step] = np.where(ok[:, :, None] & ok[:, None, :], d, 0.0
                                               ).sum(axis=(-2, -1))
        return out.reshape(lead)
    for i, r in enumerate(rows):
        values, counts = np.unique(r[np.isfinite(r)], return_counts=True)
        step = max(1, _CELLS // max(values.size, 1))
        total = 0.0
        for start in range(0, values.size, step):
            d = ratio_distance(values[start:start + step, None], values[None, :])
            total += float(counts[start:start + step] @ d @ counts)
        out[i] = total
    return out.reshape(lead)


def _same_pairs(x: FloatArray) -> FloatArray:
    """sum over values c of n_c^2 per row of the last axis (NaN ignored): each value counts
    the length of its run of equal values in the sorted row."""
    s = np.sort(x, axis=-1)  # NaN last
    size = s.shape[-1]
    if size == 0:
        return np.zeros(s.shape[:-1])
    ok = np.isfinite(s)
    index = np.broadcast_to(np.arange(size), s.shape)
    starts = np.ones(s.shape, dtype=bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    ends = np.ones(s.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    first = np.maximum.accumulate(np.where(starts, index, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, index, size), -1), axis=-1), -1)
    return np.where(ok, last - first + 1, 0).sum(axis=-1).astype(float)


@dataclass(frozen=True)
class Confusion:
    """Counts of (metric category, human category): `counts[i][j]` units with metric
    category `metric_labels[i]` and human category `human_labels[j]`."""

    metric_labels: list[float]
    human_labels: list[float]
    counts: list[list[int]]
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"metric_labels": [_label(v) for v in self.metric_labels],
                "human_labels": [_label(v) for v in self.human_labels],
                "counts": self.counts, "n": self.n, "rounding": "half up"}


def _label(v: float) -> float | int:
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def confusion_table(*, human: FloatArray, metric: FloatArray) -> Confusion:
    """The judge x human table of `categories` over the units where both are present; each
    side's labels are every integer from the lowest to the highest category on either side
    (at most 101 of them; beyond that, only the categories seen)."""
    h, m = paired(human=categories(np.ravel(human)),
                  metric=categories(np.ravel(metric)))
    ok = np.isfinite(h)
    h, m = h[ok], m[ok]
    seen = np.unique(np.concatenate([h, m]))
    few = seen.size and seen[-1] - seen[0] <= 100
    labels = np.arange(seen[0], seen[-1] + 1.0) if few else seen
    k = labels.size
    counts = np.zeros((k, k), dtype=np.int64)
    np.add.at(counts, (np.searchsorted(labels, m), np.searchsorted(labels, h)), 1)
    return Confusion([float(v) for v in labels], [float(v) for v in labels],
                     counts.tolist(), int(h.size))


def unit_counts(*, ratings: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """The sorted categories of a (raters, units) matrix (NaN = missing) and the (units,
    categories) counts n_uj over the units every rater coded."""
    data = np.asarray(ratings, dtype=float)
    if data.ndim != 2:
        raise ValueError("ratings must be a (raters, units) matrix")
    m = data.shape[0]
    complete = data[:, np.isfinite(data).all(axis=0)] if data.size else data
    n_units = complete.shape[1] if m else 0
    values, inverse = np.unique(complete, return_inverse=True)
    counts = np.zeros((n_units, values.size))
    np.add.at(counts, (np.tile(np.arange(n_units), m), inverse.reshape(-1)), 1.0)
    return values, counts


def fleiss_kappa(*, ratings: ArrayLike) -> Result:
    """Fleiss' kappa of a (raters, units) matrix of category codes, NaN = missing, over the
    units every rater coded (module docstring); `n` is that number of units."""
    _, counts = unit_counts(ratings=ratings)
    n_units, m = counts.shape[0], round(counts[0].sum()) if counts.size else 0
    if m < 2 or n_units == 0:
        return Result("fleiss-kappa", float("nan"), n=n_units, skipped=1)
    per_unit = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1))
    shares = counts.sum(axis=0) / (n_units * m)
    chance = float((shares ** 2).sum())
    if chance >= 1.0:
        return Result("fleiss-kappa", float("nan"), n=n_units, skipped=1)
    value = (float(per_unit.mean()) - chance) / (1.0 - chance)
    return Result("fleiss-kappa", value, n=n_units)
