"""Is metric A significantly better than metric B? Paired tests and significance clusters.

permutation (PERM-BOTH, Deutsch et al. 2021, "A Statistical Analysis of Summarization
    Evaluation Metrics using Resampling Methods", Sec. 5): on the units scored by the human
    and by both metrics, each metric is z-scored, then every (item, system) unit swaps its A
    and B scores with probability 1/2, independently (as mt-metrics-eval `PermutationSigDiff`
    does), and the statistic is recomputed at the same level and grouping:

        p = #{resamples: stat(A') - stat(B') >= stat(A) - stat(B)} / resamples.

    For the tie-aware statistics (kendall-23, acc-23, acc-eq) a unit swap would mix two
    metrics' tie thresholds, so pair outcomes are swapped instead (mt-metrics-eval
    `PairwisePermutationSigDiff`), each metric keeping its own epsilon (acc-eq: calibrated
    per metric). Only pairs where A and B disagree move the difference, and each moves it by
    the same amount within a group, so the null distribution is a weighted sum of one
    centred binomial per group: with equal group weights (no grouping, or groups of equal
    size) the p-value is the exact binomial tail; otherwise the binomials are sampled.

    Early stopping (as WMT): after every `block` resamples, stop if p < 0.02 or p > 0.5.

williams (Williams 1959; Steiger 1980; recommended for MT by Graham and Baldwin 2014): for
    dependent Pearson correlations r_ha, r_hb sharing the human side, with r_ab between the
    metrics and n units,

        K = 1 - r_ha^2 - r_hb^2 - r_ab^2 + 2 r_ha r_hb r_ab
        t = (r_ha - r_hb) sqrt((n - 1)(1 + r_ab))
            / sqrt(2 K (n - 1)/(n - 3) + ((r_ha + r_hb)/2)^2 (1 - r_ab)^3)

    with n - 3 degrees of freedom, one-sided. Only for ungrouped pearson (segment level
    without grouping, or system level).

significance_clusters: sort metrics by the statistic; walk down the list and open a new
cluster whenever a metric is significantly worse (p <= alpha) than any member of the current
cluster (mt-metrics-eval `AssignRanks`, as WMT tables report ranks). Tests are run lazily,
only those the walk needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import scipy.stats

from meta_eval.calibration import calibrate_groups
from meta_eval.correlation import group_values
from meta_eval.levels import arrange, check_options, evaluate
from meta_eval.results import Comparison, RankedMetric, Ranking
from meta_eval.system import spa

PAIR_STATISTICS = ("kendall-23", "acc-23", "acc-eq")
EARLY_MIN, EARLY_MAX = 0.02, 0.5
_CELLS = 1 << 22  # matrix cells per permutation block
_PAIRS = 1 << 21  # pairs per outcome chunk


def _common(human: np.ndarray, a: np.ndarray, b: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
    nan = np.nan
    return np.where(ok, human, nan), np.where(ok, a, nan), np.where(ok, b, nan)


def _zscore(x: np.ndarray) -> np.ndarray:
    ok = np.isfinite(x)
    if ok.sum() < 2:
        return x
    sd = x[ok].std()
    return (x - x[ok].mean()) / sd if sd > 0 else x - x[ok].mean()


def _batch(statistic: str, human: np.ndarray, metric: np.ndarray, level: str, grouping: str,
           epsilon: float, permutations: int, seed: int) -> np.ndarray:
    """Statistic per leading index of metric (k, items, systems) -> (k,)."""
    if statistic == "spa":
        return np.array([spa(human=human, metric=m, permutations=permutations,
                             seed=seed).value for m in metric])
    kernel = "acc-23" if statistic == "pairwise-accuracy" else statistic
    h, m = arrange(human, metric, level, grouping)
    values = group_values(kernel, h, m, epsilon)
    if level == "segment" and grouping != "none":
        defined = np.isfinite(values)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(defined, values, 0.0).sum(axis=-1) / defined.sum(axis=-1)
    return values[..., 0]


def permutation_test(statistic: str, *, human: np.ndarray, metric_a: np.ndarray,
                     metric_b: np.ndarray, level: str = "segment", grouping: str = "none",
                     epsilon: float = 0.0, resamples: int = 1000, seed: int = 0,
                     block: int = 200, early_stop: bool = True,
                     permutations: int = 1000) -> Comparison:
    """Paired permutation test of H1: statistic(metric_a) > statistic(metric_b).

    Matrices are (items, systems); only units scored by all three are used. See the module
    docstring for the resampling scheme and early stopping.
    """
    check_options(statistic, level, grouping)
    human, a, b = _common(*(np.asarray(x, dtype=float) for x in (human, metric_a, metric_b)))
    if statistic in PAIR_STATISTICS:
        return _pair_test(statistic, human, a, b, level, grouping, epsilon, resamples, seed)
    za, zb = _zscore(a), _zscore(b)
    value_a = evaluate(statistic, human=human, metric=a, level=level, grouping=grouping,
                       permutations=permutations, seed=seed).value
    value_b = evaluate(statistic, human=human, metric=b, level=level, grouping=grouping,
                       permutations=permutations, seed=seed).value
    observed = value_a - value_b
    n_units = int(np.isfinite(human).sum())
    if not np.isfinite(observed):
        return Comparison(statistic, "permutation", value_a, value_b, observed, float("nan"),
                          n_units, 0)
    rng = np.random.default_rng(seed)
    step = max(1, min(block, _CELLS // max(human.size, 1)))
    done = hits = 0
    tol = 1e-9 * max(1.0, abs(observed))
    fast = None
    if statistic == "pearson" and level == "segment":
        fast = _PearsonSwaps(*arrange(human, za, level, grouping),
                             arrange(human, zb, level, grouping)[1], grouping != "none")
    while done < resamples:
        k = min(step, resamples - done)
        swap = random_swaps(rng, (k, *human.shape))
        if fast is not None:
            ra, rb = fast(_group_layout(swap, grouping))
        else:
            ra = _batch(statistic, human, np.where(swap, zb, za), level, grouping, epsilon,
                        permutations, seed)
            rb = _batch(statistic, human, np.where(swap, za, zb), level, grouping, epsilon,
                        permutations, seed)
        hits += int((ra - rb >= observed - tol).sum())
        done += k
        if early_stop and done % block == 0 and done < resamples:
            p = hits / done
            if p < EARLY_MIN or p > EARLY_MAX:
                break
    return Comparison(statistic, "permutation", value_a, value_b, observed, hits / done,
                      n_units, done)


def _group_layout(x: np.ndarray, grouping: str) -> np.ndarray:
    """(k, items, systems) -> (k, groups, units), as `arrange` lays out segment scores."""
    if grouping == "none":
        return x.reshape(x.shape[0], 1, -1)
    return x if grouping == "item" else np.swapaxes(x, -1, -2)


def random_swaps(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Independent fair coin flips (bool array of `shape`), eight per random byte."""
    size = int(np.prod(shape))
    bits = np.unpackbits(rng.integers(0, 256, size=(size + 7) // 8, dtype=np.uint8))
    return bits[:size].reshape(shape).view(bool)


class _PearsonSwaps:
    """Pearson r of both hybrids for many swap patterns at once, by sufficient statistics.

    With d = b - a, the hybrid a' = a + s d (s in {0, 1} per unit) has
    sum a' = sum a + s.d, sum a'^2 = sum a^2 + s.(b^2 - a^2), sum h_c a' = sum h_c a + s.(h_c d)
    (h_c: human centred per group), and b' = a + b - a'; three dot products per group and
    resample replace recomputing the correlation.
    """

    def __init__(self, human: np.ndarray, a: np.ndarray, b: np.ndarray, grouped: bool):
        ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
        self.grouped = grouped
        self.n = ok.sum(axis=-1)
        h = np.where(ok, human, 0.0)
        hc = np.where(ok, human - h.sum(axis=-1, keepdims=True) / np.maximum(self.n, 1)[:, None],
                      0.0)
        a, b = np.where(ok, a, 0.0), np.where(ok, b, 0.0)
        self.var_h = (hc * hc).sum(axis=-1)
        self.sums = (a.sum(-1), b.sum(-1), (a * a).sum(-1), (b * b).sum(-1),
                     (hc * a).sum(-1), (hc * b).sum(-1))
        d = b - a
        self.vectors = (d, b * b - a * a, hc * d)
        with np.errstate(invalid="ignore"):
            self.live = (self.n >= 2) & ~(np.fmax.reduce(np.where(ok, human, np.nan), -1)
                                          <= np.fmin.reduce(np.where(ok, human, np.nan), -1))

    def _r(self, total: np.ndarray, squares: np.ndarray, cov: np.ndarray) -> np.ndarray:
        var = squares - total * total / np.maximum(self.n, 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = cov / np.sqrt(self.var_h * var)
        defined = self.live & (var > 1e-12 * np.maximum(squares, 1e-300))
        return np.where(defined, np.clip(r, -1.0, 1.0), np.nan)

    def _reduce(self, r: np.ndarray) -> np.ndarray:
        if not self.grouped:
            return r[..., 0]
        defined = np.isfinite(r)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(defined, r, 0.0).sum(axis=-1) / defined.sum(axis=-1)

    def __call__(self, swaps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s_d, s_sq, s_cov = (np.einsum("kgu,gu->kg", swaps, v) for v in self.vectors)
        sum_a, sum_b, sq_a, sq_b, cov_a, cov_b = self.sums
        ra = self._r(sum_a + s_d, sq_a + s_sq, cov_a + s_cov)
        rb = self._r(sum_b - s_d, sq_b - s_sq, cov_b - s_cov)
        return self._reduce(ra), self._reduce(rb)


def _correct(dh: np.ndarray, dm: np.ndarray, eps: float) -> np.ndarray:
    """acc-23 outcome per pair: concordant, or tied in both (metric tie: |dm| <= eps)."""
    ht = dh == 0
    mt = np.abs(dm) <= eps
    return (ht & mt) | (~ht & ~mt & ((dh > 0) == (dm > 0)))


def pair_disagreements(human: np.ndarray, metric_a: np.ndarray, metric_b: np.ndarray,
                       eps_a: float, eps_b: float) -> tuple[np.ndarray, np.ndarray,
                                                            np.ndarray]:
    """Per group of padded (G, U) arrays: pairs where only A is right, only B is right, and
    all pairs. Pairs are enumerated in chunks (memory O(chunk), time O(pairs))."""
    n_groups, units = human.shape
    only_a = np.zeros(n_groups, dtype=np.int64)
    only_b = np.zeros(n_groups, dtype=np.int64)
    total = np.zeros(n_groups, dtype=np.int64)
    if units <= 64:
        iu, ju = np.triu_indices(units, 1)
        step = max(1, _PAIRS // max(iu.size, 1))
        for start in range(0, n_groups, step):
            sl = slice(start, start + step)
            h, ma, mb = human[sl], metric_a[sl], metric_b[sl]
            dh, da, db = (x[:, iu] - x[:, ju] for x in (h, ma, mb))
            ok = np.isfinite(dh) & np.isfinite(da) & np.isfinite(db)
            ca, cb = _correct(dh, da, eps_a) & ok, _correct(dh, db, eps_b) & ok
            only_a[sl] = (ca & ~cb).sum(axis=1)
            only_b[sl] = (cb & ~ca).sum(axis=1)
            total[sl] = ok.sum(axis=1)
        return only_a, only_b, total
    for g in range(n_groups):
        ok = np.isfinite(human[g]) & np.isfinite(metric_a[g]) & np.isfinite(metric_b[g])
        h, ma, mb = human[g][ok], metric_a[g][ok], metric_b[g][ok]
        n = h.size
        total[g] = n * (n - 1) // 2
        rows = max(1, _PAIRS // max(n, 1))
        for start in range(0, n - 1, rows):
            i = np.arange(start, min(start + rows, n - 1))
            # Pairs (i, j > i) of these rows, as one flat array.
            counts = n - 1 - i
            ii = np.repeat(i, counts)
            jj = ii + 1 + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts,
                                                               counts))
            dh = h[ii] - h[jj]
            ca = _correct(dh, ma[ii] - ma[jj], eps_a)
            cb = _correct(dh, mb[ii] - mb[jj], eps_b)
            only_a[g] += int((ca & ~cb).sum())
            only_b[g] += int((cb & ~ca).sum())
    return only_a, only_b, total


def _pair_test(statistic: str, human: np.ndarray, a: np.ndarray, b: np.ndarray, level: str,
               grouping: str, epsilon: float, resamples: int, seed: int) -> Comparison:
    h, ma = arrange(human, a, level, grouping)
    _, mb = arrange(human, b, level, grouping)
    eps_a = eps_b = epsilon
    if statistic == "acc-eq":
        eps_a = calibrate_groups(human=h, metric=ma).epsilon
        eps_b = calibrate_groups(human=h, metric=mb).epsilon
    kernel = "kendall-23" if statistic == "kendall-23" else "acc-23"
    grouped = level == "segment" and grouping != "none"

    def value(m: np.ndarray, eps: float) -> float:
        v = group_values(kernel, h, m, eps)
        return float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")

    value_a, value_b = value(ma, eps_a), value(mb, eps_b)
    only_a, only_b, pairs = pair_disagreements(h, ma, mb, eps_a, eps_b)
    live = pairs > 0
    n = int(live.sum()) if grouped else int(np.isfinite(h).sum())
    observed = value_a - value_b
    if not live.any():
        return Comparison(statistic, "permutation-pairs", value_a, value_b, observed,
                          float("nan"), n, 0)
    weights = np.where(live, 1.0 / np.maximum(pairs, 1), 0.0)
    disagree = only_a + only_b
    if np.all(pairs[live] == pairs[live][0]):
        # Equal weights: the swap distribution of sum(only_a - only_b) is exactly
        # 2 Binomial(D, 1/2) - D, D = number of disagreeing pairs.
        p = float(scipy.stats.binom.sf(only_a.sum() - 1, disagree.sum(), 0.5))
        return Comparison(statistic, "permutation-pairs", value_a, value_b, observed, p, n, 0)
    rng = np.random.default_rng(seed)
    observed_w = float((weights * (only_a - only_b)).sum())
    draws = 2 * rng.binomial(disagree[live], 0.5, size=(resamples, int(live.sum())))
    null = (draws - disagree[live]) @ weights[live]
    p = float((null >= observed_w - 1e-12 * max(1.0, abs(observed_w))).mean())
    return Comparison(statistic, "permutation-pairs", value_a, value_b, observed, p, n,
                      resamples)


def williams_test(*, r_ha: float, r_hb: float, r_ab: float, n: int) -> float:
    """One-sided p-value of Williams' test for H1: r_ha > r_hb (see the module docstring)."""
    if n <= 3:
        return float("nan")
    k = 1 - r_ha**2 - r_hb**2 - r_ab**2 + 2 * r_ha * r_hb * r_ab
    rbar = (r_ha + r_hb) / 2
    num = (r_ha - r_hb) * np.sqrt((n - 1) * (1 + r_ab))
    den = np.sqrt(2 * (n - 1) / (n - 3) * k + rbar**2 * (1 - r_ab) ** 3)
    if den == 0:
        return float("nan")
    return float(scipy.stats.t.sf(num / den, n - 3))


def williams(*, human: np.ndarray, metric_a: np.ndarray, metric_b: np.ndarray,
             level: str = "segment", grouping: str = "none") -> Comparison:
    """Williams' test on Pearson correlations of (items, systems) matrices."""
    check_options("pearson", level, grouping)
    if level == "segment" and grouping != "none":
        raise ValueError("Williams' test needs one correlation: use grouping 'none' "
                         "(or the permutation test for grouped statistics)")
    human, a, b = _common(*(np.asarray(x, dtype=float) for x in (human, metric_a, metric_b)))
    h, ma = arrange(human, a, level, grouping)
    _, mb = arrange(human, b, level, grouping)
    r_ha = float(group_values("pearson", h, ma)[0])
    r_hb = float(group_values("pearson", h, mb)[0])
    r_ab = float(group_values("pearson", ma, mb)[0])
    n = int((np.isfinite(h) & np.isfinite(ma) & np.isfinite(mb)).sum())
    p = williams_test(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n)
    return Comparison("pearson", "williams", r_ha, r_hb, r_ha - r_hb, p, n, 0)


def compare(statistic: str, *, human: np.ndarray, metric_a: np.ndarray,
            metric_b: np.ndarray, level: str = "segment", grouping: str = "none",
            method: str = "permutation", **options) -> Comparison:
    """Test H1: metric_a is better than metric_b; `method` is permutation or williams."""
    if method == "williams":
        if statistic != "pearson":
            raise ValueError("Williams' test compares Pearson correlations; "
                             "use the permutation test for other statistics")
        return williams(human=human, metric_a=metric_a, metric_b=metric_b, level=level,
                        grouping=grouping)
    if method != "permutation":
        raise ValueError(f"unknown method {method!r}; use permutation or williams")
    return permutation_test(statistic, human=human, metric_a=metric_a, metric_b=metric_b,
                            level=level, grouping=grouping, **options)


def significance_clusters(statistic: str, *, human: np.ndarray,
                          metrics: Mapping[str, np.ndarray], level: str = "segment",
                          grouping: str = "none", method: str = "permutation",
                          alpha: float = 0.05, seed: int = 0,
                          values: Mapping[str, float] | None = None,
                          progress: Callable[[str, str], None] | None = None,
                          **options) -> Ranking:
    """Rank `metrics` ({name: (items, systems) matrix}) into significance clusters.

    `values` (optional) are the statistics already computed per metric; `options` go to
    the test (resamples, seed, epsilon, block, early_stop, permutations). Metrics whose
    statistic is undefined are ranked last, in a cluster of their own.
    """
    names = list(metrics)
    if values is None:
        values = {name: evaluate(statistic, human=human, metric=metrics[name], level=level,
                                 grouping=grouping,
                                 **{k: v for k, v in options.items()
                                    if k in ("epsilon", "permutations")}).value
                  for name in names}
    order = sorted(names, key=lambda n: (not np.isfinite(values[n]), -np.nan_to_num(values[n])))
    p_values: dict[tuple[str, str], float] = {}
    ranked: list[RankedMetric] = []
    cluster, start = 1, 0
    for i, name in enumerate(order):
        if not np.isfinite(values[name]):
            if ranked and np.isfinite(ranked[-1].value):
                cluster += 1
            ranked.append(RankedMetric(name, values[name], cluster))
            continue
        for better in order[start:i]:
            if progress is not None:
                progress(better, name)
            test_seed = int(np.random.SeedSequence([seed, names.index(better),
                                                    names.index(name)]).generate_state(1)[0])
            result = compare(statistic, human=human, metric_a=metrics[better],
                             metric_b=metrics[name], level=level, grouping=grouping,
                             method=method, **({"seed": test_seed} | options
                                               if method == "permutation" else {}))
            p_values[(better, name)] = result.p_value
            if result.p_value <= alpha:
                cluster += 1
                start = i
                break
        ranked.append(RankedMetric(name, values[name], cluster))
    return Ranking(ranked, p_values, alpha, method)
