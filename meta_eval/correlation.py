"""Correlation statistics between human and metric scores, per group, vectorised.

Every kernel takes padded arrays `human`, `metric` of shape (..., G, U): G groups of up to U
units, NaN where a unit is missing (a unit missing either score is dropped for that pair of
columns only). It returns per-group values of shape (..., G), NaN where the statistic is
undefined. The statistics (names are the CLI's `--statistic` values):

pearson      r = sum (h - h_bar)(m - m_bar) / sqrt(sum (h - h_bar)^2 sum (m - m_bar)^2);
             undefined for fewer than 2 units or a constant side (as scipy.stats.pearsonr).
spearman     Pearson's r of the average ranks (Spearman 1904); undefined as pearson.
kendall      tau-b = (C - D) / sqrt((P - T_h)(P - T_m)) (Kendall 1945), with P pairs, C/D
             concordant/discordant pairs, T_h/T_m pairs tied in human/metric (ties in both
             counted in each); undefined when every pair is tied on one side.
kendall-c    tau-c = 2 (C - D) / (n^2 (k - 1) / k), k = min(distinct human values, distinct
             metric values) (Stuart 1953); undefined when k < 2.
kendall-23   tau_23 = (C + T_hm - D - T_h' - T_m') / P and
acc-23       acc_23 = (C + T_hm) / P, Deutsch et al. 2023 ("Ties Matter"), where T_hm counts
             pairs tied in both, T_h'/T_m' pairs tied on one side only, and a metric tie is
             |m_i - m_j| <= epsilon. Defined whenever there is a pair (a constant side is a
             legitimate all-ties case, as in mt-metrics-eval).
weighted-tau scipy.stats.weightedtau with its defaults (rank=True, the hyperbolic weigher
             1/(r + 1), additive): Vigna's weighted tau, in which an exchange between
             important (top-ranked) elements costs more than one between unimportant ones,
             the ranking being the decreasing lexicographic order by (human, metric) and by
             (metric, human), averaged (Vigna 2015, "A weighted correlation index for
             rankings with ties"). Ties as tau-b. Undefined for fewer than 2 units or where
             scipy gives NaN (a constant side).
pdp          pairwise-difference Pearson (mt-metrics-eval stats.py, `Pearson(pdp=True)`):
             Pearson's r of the differences (h_i - h_j, m_i - m_j) over every ordered pair
             of units i, j of the same group, pooled over all groups (one value, not an
             average). With pair sums sum_{i,j in g} (h_i - h_j)(m_i - m_j) = 2 n_g S_hm(g),
             S_hm(g) = sum_{i in g} (h_i - h_bar_g)(m_i - m_bar_g),

                 pdp = sum_g n_g S_hm(g) / sqrt(sum_g n_g S_hh(g) sum_g n_g S_mm(g)),

             exact and O(n) (the differences are symmetric, so their mean is 0). One group
             (no grouping, system level): pdp = pearson. The per-group kernel of pdp
             (`meta_eval.statistics.group_values("pdp")`) gives each group's Pearson;
             `pdp_pooled` the pooled value that `evaluate` reports.

kendall and kendall-c use exact ties (epsilon = 0). Pair counts come from an O(U^2)
vectorised pass for small groups and from the sort-based `meta_eval.pairs` otherwise.

Ties after arithmetic: the rank statistics (spearman and the Kendall family) snap both sides
of each group first (`meta_eval.pairs.snap`), so values within relative 1e-12 of each other
are ties. Pearson does not snap (a 1e-12 move cannot change it).

Magnitudes: Pearson centres each side and scales it by a power of two near its largest
|value| before any product (as scipy.stats.pearsonr does; a power of two is exact), so values
from 1e-300 to 1e+300, or one of 1e308, neither underflow nor overflow. Pair comparisons use
signs and the tie rule on differences, which stay right when a difference overflows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.numerics import constant, paired, power_of_two_scale
from meta_eval.pairs import pair_counts, snap, snapped_exact_counts

if TYPE_CHECKING:
    from collections.abc import Callable

    from meta_eval.arrays import BoolArray, FloatArray, IntArray

KENDALL_FAMILY = ("kendall", "kendall-c", "kendall-23", "acc-23")
CORRELATIONS = ("pearson", "spearman", *KENDALL_FAMILY, "weighted-tau", "weighted-tau-human",
                "weighted-tau-metric", "weighted-tau-product", "pdp")
_SMALL_GROUP = 32  # up to this many units per group, count pairs by broadcasting
_CHUNK = 1 << 22  # pair entries per broadcast chunk
_SORTED_UNITS = 1 << 19  # units per sort-based counting call
_ROW_UNITS = 1 << 9  # kendall_groups at epsilon 0: rows of this many units snapped and
# counted one by one (two sorts each; 2.5x faster than the grouped count at 2,000 units)
_ALONE_UNITS = 1 << 12  # group_pair_counts at epsilon 0: rows counted one by one


def _centred(x: FloatArray, ok: BoolArray, n: IntArray) -> FloatArray:
    """x - mean over the last axis where ok (0 elsewhere), scaled by a power of two."""
    x = np.where(ok, x, 0.0)
    x = np.ldexp(x, -power_of_two_scale(x))
    mean = x.sum(axis=-1, keepdims=True) / np.maximum(n, 1)[..., None]
    c = np.where(ok, x - mean, 0.0)
    return np.ldexp(c, -power_of_two_scale(c))


def pearson_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group Pearson r over the last axis; NaN where undefined."""
    h, m = paired(human=human, metric=metric)
    ok = np.isfinite(h)
    n = ok.sum(axis=-1)
    hc, mc = _centred(h, ok, n), _centred(m, ok, n)
    cov = (hc * mc).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / (np.sqrt((hc * hc).sum(axis=-1)) * np.sqrt((mc * mc).sum(axis=-1)))
    r = np.clip(r, -1.0, 1.0)
    r = np.where(n == 2, np.round(r), r)  # exactly +-1 for two units, as scipy
    undefined = (n < 2) | constant(h) | constant(m)
    return np.where(undefined, np.nan, r)


def spearman_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group Spearman rho (average ranks for ties) over the last axis."""
    import scipy.stats

    h, m = paired(human=human, metric=metric)
    if h.shape[-1] == 0:
        return np.full(h.shape[:-1], np.nan)
    rh = scipy.stats.rankdata(snap(h), axis=-1, nan_policy="omit")
    rm = scipy.stats.rankdata(snap(m), axis=-1, nan_policy="omit")
    return pearson_groups(human=rh, metric=rm)


def weighted_tau_groups(*, human: FloatArray, metric: FloatArray, rank: str = "both",
                        weigher: Callable[[int], float] | None = None,
                        additive: bool = True) -> FloatArray:
    """Per-group scipy.stats.weightedtau over the last axis, on the snapped values of the
    units both sides scored; NaN where undefined. scipy's options: `rank` "both" (scipy's
    rank=True, the default: the mean of the values ranked by (human, metric) and by
    (metric, human)), "human" (importance by decreasing human score, metric breaking
    ties: scipy's rank=None with x = human) or "metric" (x = metric); `weigher` (rank ->
    weight; None: scipy's hyperbolic 1 / (r + 1)); `additive` (a pair's weight is the sum
    of its two weights, or their product with False)."""
    import scipy.stats

    if rank not in ("both", "human", "metric"):
        raise ValueError(f"unknown rank {rank!r}; use both, human or metric")
    # rank=None (lexicographic by the first argument) is scipy's documented value
    options: dict[str, Any] = {"rank": True if rank == "both" else None, "weigher": weigher,
                               "additive": additive}
    h, m = paired(human=human, metric=metric)
    if rank == "metric":
        h, m = m, h
    lead, units = h.shape[:-1], h.shape[-1]
    rows_h, rows_m = snap(h).reshape(-1, units), snap(m).reshape(-1, units)
    out = np.full(rows_h.shape[0], np.nan)
    for i, (rh, rm) in enumerate(zip(rows_h, rows_m, strict=True)):
        ok = np.isfinite(rh)
        if ok.sum() >= 2 and not (constant(rh[ok]) or constant(rm[ok])):
            out[i] = scipy.stats.weightedtau(rh[ok], rm[ok], **options).statistic
    return out.reshape(lead)


def pdp_pooled(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Pairwise-difference Pearson of padded (..., G, U) arrays, pooled over the G groups
    (module docstring) -> (...,); NaN where no group has two units or a side's differences
    are all 0."""
    h, m = paired(human=human, metric=metric)
    ok = np.isfinite(h)
    n = ok.sum(axis=-1)

    def centred(x: FloatArray) -> FloatArray:
        # One power of two for all groups of a side (the groups are pooled), then centred.
        x = np.where(ok, x, 0.0)
        x = np.ldexp(x, -power_of_two_scale(x, axis=None))
        mean = x.sum(axis=-1, keepdims=True) / np.maximum(n, 1)[..., None]
        c = np.where(ok, x - mean, 0.0)
        return np.ldexp(c, -power_of_two_scale(c, axis=None))

    hc, mc = centred(h), centred(m)
    w = n.astype(float)
    cov = (w * (hc * mc).sum(axis=-1)).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov / (np.sqrt((w * (hc * hc).sum(axis=-1)).sum(axis=-1))
                   * np.sqrt((w * (mc * mc).sum(axis=-1)).sum(axis=-1)))
    return np.clip(r, -1.0, 1.0)


def _distinct(x: FloatArray) -> IntArray:
    """Distinct finite values along the last axis."""
    s = np.sort(x, axis=-1)  # NaN sorts last
    ok = np.isfinite(s)
    new = np.ones_like(ok)
    new[..., 1:] = s[..., 1:] != s[..., :-1]
    return (new & ok).sum(axis=-1)


def group_pair_counts(*, human: FloatArray, metric: FloatArray,
                      epsilon: float = 0.0) -> dict[str, IntArray]:
    """Concordant/discordant/tie counts per group (arrays of shape (..., G)) of the values
    as given (no snapping)."""
    h, m = paired(human=human, metric=metric)
    lead, units = h.shape[:-1], h.shape[-1]
    rows_h = h.reshape(-1, units)
    rows_m = m.reshape(-1, units)
    out: dict[str, IntArray]
    if units <= _SMALL_GROUP:
        out = _broadcast_counts(rows_h, rows_m, epsilon)
    else:
        # Sort-based counts, a bounded number of units at a time (the index is O(n log n)).
        names = ("concordant", "discordant", "ties_human", "ties_metric", "ties_both")
        out = {k: np.zeros(rows_h.shape[0], dtype=np.int64) for k in names}
        # At epsilon 0 a long row is counted alone: grouping rows would add log2(rows)
        # radix levels to the count of discordant pairs.
        step = 1 if epsilon == 0 and units >= _ALONE_UNITS else max(1, _SORTED_UNITS // units)
        for start in range(0, rows_h.shape[0], step):
            sl = slice(start, start + step)
            ok = np.isfinite(rows_h[sl])
            if not ok.any():
                continue
            gid = np.broadcast_to(np.arange(start, start + ok.shape[0])[:, None], ok.shape)[ok]
            pc = pair_counts(human=rows_h[sl][ok], metric=rows_m[sl][ok], epsilon=epsilon,
                             groups=gid if ok.shape[0] > 1 else None)
            present = np.unique(gid)
            for name in names:
                out[name][present] = getattr(pc, name)
    out["units"] = np.isfinite(rows_h).sum(axis=-1)
    return {k: v.reshape(lead) for k, v in out.items()}


def _broadcast_counts(h: FloatArray, m: FloatArray, epsilon: float) -> dict[str, IntArray]:
    rows, units = h.shape
    iu, ju = np.triu_indices(units, 1)
    names = ("concordant", "discordant", "ties_human", "ties_metric", "ties_both")
    out: dict[str, IntArray] = {k: np.zeros(rows, dtype=np.int64) for k in names}
    if iu.size == 0:
        return out
    step = max(1, _CHUNK // iu.size)
    for start in range(0, rows, step):
        sl = slice(start, start + step)
        with np.errstate(over="ignore", invalid="ignore"):
            dh = h[sl][:, iu] - h[sl][:, ju]
            dm = m[sl][:, iu] - m[sl][:, ju]
        valid = ~(np.isnan(dh) | np.isnan(dm))  # a difference of huge values may be inf
        ht = valid & (dh == 0)
        mt = valid & (np.abs(dm) <= epsilon)
        untied = valid & ~ht & ~mt
        agree = (dh > 0) == (dm > 0)
        out["concordant"][sl] = (untied & agree).sum(axis=-1)
        out["discordant"][sl] = (untied & ~agree).sum(axis=-1)
        out["ties_human"][sl] = (ht & ~mt).sum(axis=-1)
        out["ties_metric"][sl] = (mt & ~ht).sum(axis=-1)
        out["ties_both"][sl] = (ht & mt).sum(axis=-1)
    return out


def _long_row_counts(human: np.ndarray, metric: np.ndarray
                     ) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Exact-tie pair counts of long rows (units scored on both sides), snapped and counted
    one row at a time (`meta_eval.pairs.snapped_exact_counts`), and min(distinct values)
    per row."""
    lead, units = human.shape[:-1], human.shape[-1]
    rows_h, rows_m = human.reshape(-1, units), metric.reshape(-1, units)
    names = ("concordant", "discordant", "ties_human", "ties_metric", "ties_both", "units")
    out = {k: np.zeros(rows_h.shape[0], dtype=np.int64) for k in names}
    distinct = np.zeros(rows_h.shape[0], dtype=np.int64)
    for r, (h, m) in enumerate(zip(rows_h, rows_m, strict=True)):
        ok = np.isfinite(h) & np.isfinite(m)
        pc, n_h, n_m = snapped_exact_counts(human=h[ok], metric=m[ok])
        for name in names:
            out[name][r] = getattr(pc, name)[0]
        distinct[r] = min(n_h, n_m)
    return {k: v.reshape(lead) for k, v in out.items()}, distinct.reshape(lead)


def kendall_groups(*, human: np.ndarray, metric: np.ndarray, variant: str = "kendall",
                   epsilon: float = 0.0) -> np.ndarray:
    """Per-group Kendall statistic: variant in kendall (tau-b), kendall-c, kendall-23,
    acc-23. `epsilon` (metric tie threshold) applies to the -23 variants only."""
    if variant not in KENDALL_FAMILY:
        raise ValueError(f"unknown Kendall variant {variant!r}; use one of {KENDALL_FAMILY}")
    if epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    eps = epsilon if variant in ("kendall-23", "acc-23") else 0.0
    distinct = None
    if eps == 0 and np.broadcast_shapes(np.shape(human), np.shape(metric))[-1] >= _ROW_UNITS:
        human, metric = np.broadcast_arrays(np.asarray(human, dtype=float),
                                            np.asarray(metric, dtype=float))
        c, distinct = _long_row_counts(human, metric)
    else:
        human, metric = paired(human=human, metric=metric)
        human, metric = snap(human), snap(metric)
        c = group_pair_counts(human=human, metric=metric, epsilon=eps)
    con, dis = c["concordant"].astype(float), c["discordant"].astype(float)
    th, tm, tb = c["ties_human"], c["ties_metric"], c["ties_both"]
    pairs = (con + dis + th + tm + tb).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        if variant == "kendall":
            denom = np.sqrt((pairs - th - tb) * (pairs - tm - tb))
            value = np.where(denom > 0, (con - dis) / np.where(denom > 0, denom, 1), np.nan)
        elif variant == "kendall-c":
            k = (distinct if distinct is not None
                 else np.minimum(_distinct(human), _distinct(metric))).astype(float)
            n = c["units"].astype(float)
            value = np.where(k >= 2, 2 * (con - dis) / (n * n * (k - 1) / np.maximum(k, 1)),
                             np.nan)
        elif variant == "kendall-23":
            value = np.where(pairs > 0, (con + tb - dis - th - tm) / pairs, np.nan)
        else:
            value = np.where(pairs > 0, (con + tb) / pairs, np.nan)
    return value


def _p_value_units(human: FloatArray, metric: FloatArray
                   ) -> tuple[FloatArray, FloatArray] | None:
    """The units both sides scored, flattened; None where scipy gives no p-value (fewer than
    3 units or a constant side)."""
    h, m = paired(human=np.ravel(human), metric=np.ravel(metric))
    ok = np.isfinite(h)
    h, m = h[ok], m[ok]
    if h.size < 3 or constant(h) or constant(m):
        return None
    return h, m


def pearson_p_value(*, human: FloatArray, metric: FloatArray) -> float | None:
    """Two-sided p-value of 'no association', scipy.stats.pearsonr's (meta_eval.p_values)."""
    from meta_eval.p_values import pearson_p

    units = _p_value_units(human, metric)
    if units is None:
        return None
    # scipy's p depends on r only; r is scale-free, so scale exactly out of overflow.
    h, m = (np.ldexp(x, -power_of_two_scale(x)) for x in units)
    return pearson_p(h, m)


def spearman_p_value(*, human: FloatArray, metric: FloatArray) -> float | None:
    """Two-sided p-value of 'no association', scipy.stats.spearmanr's on the snapped values
    (meta_eval.p_values)."""
    from meta_eval.p_values import spearman_p

    units = _p_value_units(human, metric)
    if units is None:
        return None
    return spearman_p(snap(units[0]), snap(units[1]))


def kendall_p_value(*, human: FloatArray, metric: FloatArray) -> float | None:
    """Two-sided p-value of 'no association', scipy.stats.kendalltau's on the snapped values
    (meta_eval.p_values)."""
    from meta_eval.p_values import kendall_p

    units = _p_value_units(human, metric)
    if units is None:
        return None
    return kendall_p(*units)
