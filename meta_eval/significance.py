"""Is metric A significantly better than metric B? Paired tests and significance clusters.

permutation (PERM-BOTH, Deutsch et al. 2021, "A Statistical Analysis of Summarization
    Evaluation Metrics using Resampling Methods", Sec. 5): on the units scored by the human
    and by both metrics, each metric is z-scored, then every (item, system) unit swaps its A
    and B scores with probability 1/2, independently (as mt-metrics-eval `PermutationSigDiff`
    does), and the statistic is recomputed at the same level and grouping:

        p = #{resamples: stat(A') - stat(B') >= stat(A) - stat(B)} / resamples.

    Which statistics swap units and which swap pair outcomes is the `swaps` field of
    `meta_eval.statistics`. For the tie-aware statistics (kendall-23, acc-23, acc-eq) a
    unit swap would mix two metrics' tie thresholds, so pair outcomes are swapped instead
    (mt-metrics-eval `PairwisePermutationSigDiff`), each metric keeping its own epsilon
    (acc-eq: calibrated per metric). Only pairs where A and B disagree move the
    difference, and each moves it by the same amount within a group, so the null
    distribution is a weighted sum of one centred binomial per group: with equal group
    weights (no grouping, or groups of equal size) the p-value is the exact binomial tail;
    otherwise the binomials are sampled.

    Early stopping follows the test's level `alpha`: after every `block` resamples, with
    `hits` of `done` resamples at least as extreme, stop when the Clopper-Pearson interval
    for p at confidence 0.99 (EARLY_CONFIDENCE),

        [Beta^-1(0.005; hits, done - hits + 1), Beta^-1(0.995; hits + 1, done - hits)],

    lies entirely below or entirely above `alpha`: p <= alpha is then decided, and
    Comparison.p_value_early says the reported p = hits / done came from fewer resamples.

    Pearson's unit swaps are computed from sufficient statistics, on each group's centred
    scores (see `_PearsonSwaps`), so the variance of a hybrid is not a difference of two
    large sums.

williams (Williams 1959; Steiger 1980; recommended for MT by Graham and Baldwin 2014): for
    dependent Pearson correlations r_ha, r_hb sharing the human side, with r_ab between the
    metrics and n units,

        K = 1 - r_ha^2 - r_hb^2 - r_ab^2 + 2 r_ha r_hb r_ab
        t = (r_ha - r_hb) sqrt((n - 1)(1 + r_ab))
            / sqrt(2 K (n - 1)/(n - 3) + ((r_ha + r_hb)/2)^2 (1 - r_ab)^3)

    with n - 3 degrees of freedom, one-sided by default. Only for one ungrouped correlation
    (segment level without grouping, or system level), pearson or, as psych::r.test takes
    any r, spearman. steiger: Steiger's (1980) pooled Z1* on Fisher's z, the same
    conventions. `alternative="two-sided"` doubles the smaller tail (psych::r.test's
    default); `absolute=True` compares |r| (each negatively correlated metric negated
    first, as psych::r.test compares the r it is given): formulas and assumptions in
    `meta_eval.analytic`. The default stays one-sided on the signed r: for metric
    evaluation a negative correlation with people is worse, not as good.

Direction: every test is of H1: goodness(A) > goodness(B) (`Statistic.goodness`: the value,
or -value for a lower-is-better error such as mae, or -|value| for bias), and Comparison.delta
is that difference of goodness; agreement and error statistics (`on_scale`) swap raw scores,
not z-scores, since they compare values with the human scale.

significance_clusters: sort metrics by the statistic, best first (by goodness); walk down
the list and open a new cluster whenever a metric is significantly worse (p <= alpha) than
any member of the current cluster (mt-metrics-eval `AssignRanks`, as WMT tables report
ranks). Tests are run lazily, only those the walk needs; `every_pair=True` then runs the
others too, so that `Ranking.tests` holds every (better, worse) pair of the sorted list (the
upper triangle of mt-metrics-eval's `ComputeSigMatrix`), each test seeded as in the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from meta_eval.levels import (
    EXACT_ITEMS,
    arrange,
    average_groups,
    check_averaging,
    check_options,
    column_exponents,
    evaluate,
    group_statistic,
    kernel_epsilon,
    limb_means,
    limbs,
    snapped_system_means,
)
from meta_eval.numerics import power_of_two_scale
from meta_eval.pairs import snap
from meta_eval.results import Comparison, RankedMetric, Ranking
from meta_eval.statistics import Statistic, group_values
from meta_eval.system import spa

if TYPE_CHECKING:
    from meta_eval.arrays import AnyArray, ArrayLike, BoolArray, FloatArray, IntArray

EARLY_CONFIDENCE = 0.99  # confidence of the interval for p that early stopping uses
_CELLS = 1 << 22  # matrix cells per permutation block
_PAIRS = 1 << 21  # pairs per outcome chunk
_SWAP_CELLS = 1 << 19  # swap cells per float copy in the Pearson fast path


class _Options(TypedDict):
    level: str
    grouping: str
    epsilon: float
    permutations: int
    seed: int
    average: str
    replace_nans_with_zeros: bool
    domain: Sequence[float] | None


def _common(human: FloatArray, a: FloatArray, b: FloatArray
            ) -> tuple[FloatArray, FloatArray, FloatArray]:
    ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
    nan = np.nan
    return np.where(ok, human, nan), np.where(ok, a, nan), np.where(ok, b, nan)


def _zscore(x: FloatArray) -> FloatArray:
    """(x - mean) / sd over the finite entries, scaled exactly by a power of two first so
    that huge or tiny scores neither overflow nor underflow."""
    ok = np.isfinite(x)
    if ok.sum() < 2:
        return x
    x = np.ldexp(x, -power_of_two_scale(np.where(ok, x, 0.0), axis=None))
    sd = x[ok].std()
    return (x - x[ok].mean()) / sd if sd > 0 else x - x[ok].mean()


def early_decision(hits: int, done: int, alpha: float,
                   confidence: float = EARLY_CONFIDENCE) -> bool:
    """Whether the Clopper-Pearson interval at `confidence` for p = hits / done excludes
    `alpha` (so more resamples would not change whether p <= alpha)."""
    import scipy.stats

    tail = (1 - confidence) / 2
    lower = float(scipy.stats.beta.ppf(tail, hits, done - hits + 1)) if hits > 0 else 0.0
    upper = float(scipy.stats.beta.ppf(1 - tail, hits + 1, done - hits)) if hits < done else 1.0
    return upper < alpha or lower > alpha


def _batch(statistic: str, *, human: FloatArray, metric: FloatArray, level: str,
           grouping: str, epsilon: float, permutations: int, seed: int,
           average: str = "macro", replace_nans_with_zeros: bool = False,
           domain: Sequence[float] | None = None) -> FloatArray:
    """Statistic per leading index of metric (k, items, systems) -> (k,)."""
    spec = check_options(statistic, level, grouping)
    if spec.kernel == "spa":
        return np.array([spa(human=human, metric=m, permutations=permutations,
                             seed=seed).value for m in metric])
    h, m = arrange(human=human, metric=metric, level=level, grouping=grouping)
    return group_statistic(spec, human=h, metric=m, epsilon=spec.tie_threshold(epsilon),
                           grouped=level == "segment" and grouping != "none",
                           average=average, replace_nans_with_zeros=replace_nans_with_zeros,
                           domain=domain)


def permutation_test(statistic: str, *, human: ArrayLike, metric_a: ArrayLike,
                     metric_b: ArrayLike, level: str = "segment", grouping: str = "none",
                     epsilon: float = 0.0, resamples: int = 1000, seed: int = 0,
                     block: int = 200, early_stop: bool = True, alpha: float = 0.05,
                     permutations: int = 1000, average: str = "macro",
                     replace_nans_with_zeros: bool = False,
                     domain: Sequence[float] | None = None) -> Comparison:
    """Paired permutation test of H1: statistic(metric_a) > statistic(metric_b).

    Matrices are (items, systems); only units scored by all three are used. `alpha` is the
    level the p-value will be compared with; early stopping stops only once that comparison
    is decided. See the module docstring for the resampling scheme and early stopping.
    `average`, `replace_nans_with_zeros`, `domain`: as `meta_eval.evaluate` (pair swaps,
    for kendall-23/acc-23/acc-eq, take the default averaging only).
    """
    spec = check_options(statistic, level, grouping)
    check_averaging(spec, average, replace_nans_with_zeros)
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    plain = average == "macro" and not replace_nans_with_zeros
    human, a, b = _common(*(np.asarray(x, dtype=float) for x in (human, metric_a, metric_b)))
    if spec.swaps == "pairs":
        if not plain:
            raise ValueError(f"the pair-swap test of {statistic} weights the groups itself: "
                             "it takes the macro average without replace_nans_with_zeros")
        return _pair_test(spec, human, a, b, level, grouping, epsilon, resamples, seed)
    # Agreement and error statistics compare raw values with the human scale.
    za, zb = (a, b) if spec.on_scale else (_zscore(a), _zscore(b))
    common: _Options = {"level": level, "grouping": grouping, "epsilon": epsilon,
                        "permutations": permutations, "seed": seed, "average": average,
                        "replace_nans_with_zeros": replace_nans_with_zeros,
                        "domain": domain}
    value_a = evaluate(statistic, human=human, metric=a, **common).value
    value_b = evaluate(statistic, human=human, metric=b, **common).value
    observed = spec.goodness(value_a) - spec.goodness(value_b)
    n_units = int(np.isfinite(human).sum())
    if not np.isfinite(observed):
        return Comparison(statistic, "permutation", value_a, value_b, observed, float("nan"),
                          n_units, 0)
    rng = np.random.default_rng(seed)
    step = max(1, min(block, _CELLS // max(human.size, 1)))
    done = hits = 0
    next_look = block
    early = False
    tol = 1e-9 * max(1.0, abs(observed))
    fast = system = None
    if spec.kernel == "pearson" and level == "segment" and plain:
        h, ma = arrange(human=human, metric=za, level=level, grouping=grouping)
        _, mb = arrange(human=human, metric=zb, level=level, grouping=grouping)
        fast = _PearsonSwaps(h, ma, mb, grouping != "none")
    elif (level == "system" and spec.kernel != "spa" and human.shape[0] < EXACT_ITEMS // 2
          and plain):
        system = _SystemSwaps(human, za, zb)
        eps = spec.tie_threshold(epsilon)
    while done < resamples:
        k = min(step, resamples - done)
        swap = random_swaps(rng, (k, *human.shape))
        if fast is not None:
            ra, rb = fast(_group_layout(swap, grouping))
        elif system is not None:
            h, ma, mb = system(swap)
            ra = group_values(spec.kernel, human=h, metric=ma, epsilon=eps,
                              domain=domain)[:, 0]
            rb = group_values(spec.kernel, human=h, metric=mb, epsilon=eps,
                              domain=domain)[:, 0]
        else:
            ra = _batch(statistic, human=human, metric=np.where(swap, zb, za), **common)
            rb = _batch(statistic, human=human, metric=np.where(swap, za, zb), **common)
        hits += int((spec.goodness(ra) - spec.goodness(rb) >= observed - tol).sum())
        done += k
        if early_stop and done >= next_look and done < resamples:
            next_look += block
            if early_decision(hits, done, alpha):
                early = True
                break
    return Comparison(statistic, "permutation", value_a, value_b, observed, hits / done,
                      n_units, done, p_value_early=early)


def _group_layout(x: AnyArray, grouping: str) -> AnyArray:
    """(k, items, systems) -> (k, groups, units), as `arrange` lays out segment scores."""
    if grouping == "none":
        return x.reshape(x.shape[0], 1, -1)
    return x if grouping == "item" else np.swapaxes(x, -1, -2)


def random_swaps(rng: np.random.Generator, shape: tuple[int, ...]) -> BoolArray:
    """Independent fair coin flips (bool array of `shape`), eight per random byte."""
    size = int(np.prod(shape))
    bits = np.unpackbits(rng.integers(0, 256, size=(size + 7) // 8, dtype=np.uint8))
    return bits[:size].reshape(shape).view(bool)


def swap_dots(swaps: BoolArray, vectors: FloatArray) -> FloatArray:
    """(V, k, groups) dot products of k swap patterns (k, groups, units) with per-group
    vectors (groups, units, V): batched matrix products over a float copy of a few patterns
    at a time (exact where every partial sum is an integer below 2**53)."""
    n_swaps, n_groups, units = swaps.shape
    out = np.empty((vectors.shape[-1], n_swaps, n_groups))
    step = max(1, _SWAP_CELLS // max(n_groups * units, 1))
    buffer = np.empty((min(step, n_swaps), n_groups, units))
    for start in range(0, n_swaps, step):
        part = swaps[start:start + step]
        chunk = buffer[:part.shape[0]]
        np.copyto(chunk, part)
        # A fresh (contiguous) product, then copied: numpy 1.x multiplies into a strided
        # `out` without BLAS, at twice the time.
        out[:, start:start + step] = np.matmul(chunk.transpose(1, 0, 2),
                                               vectors).transpose(2, 1, 0)
    return out


class _SystemSwaps:
    """System means of both hybrids for many unit-swap patterns at once, exactly.

    With one power-of-two exponent per system for both metrics, each score is two integer
    limbs (`meta_eval.levels.limbs`); a hybrid's limb sums are A's plus s.(limbs of B - limbs
    of A), so its mean is exactly what `system_means` gives the hybrid itself (up to the
    shared exponent), at the cost of dot products. Means are snapped with their scales.
    """

    def __init__(self, human: FloatArray, a: FloatArray, b: FloatArray):
        ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
        self.count = ok.sum(axis=0).astype(float)
        self.human = snapped_system_means(human=human, metric=a)[0]
        a, b = np.where(ok, a, 0.0), np.where(ok, b, 0.0)
        self.e = column_exponents(np.maximum(np.abs(a), np.abs(b)))
        hi_a, lo_a = limbs(a, self.e)
        hi_b, lo_b = limbs(b, self.e)
        parts_a = (hi_a, lo_a, np.abs(hi_a), np.abs(lo_a))
        parts_b = (hi_b, lo_b, np.abs(hi_b), np.abs(lo_b))
        self.sums_a = np.stack([x.sum(axis=0) for x in parts_a])[:, None, :]  # (4, 1, systems)
        self.sums_b = np.stack([x.sum(axis=0) for x in parts_b])[:, None, :]
        diff = np.stack([y - x for x, y in zip(parts_a, parts_b, strict=True)], axis=-1)
        self.vectors = np.ascontiguousarray(diff.transpose(1, 0, 2))  # (systems, items, 4)

    def _means(self, sums: FloatArray) -> FloatArray:
        mean = limb_means(sums[0], sums[1], self.e, self.count)
        scale = limb_means(sums[2], sums[3], self.e, self.count)
        return snap(mean, scale=scale)[:, None, :]

    def __call__(self, swaps: BoolArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(k, items, systems) swaps -> human, hybrid A', hybrid B' as (k, 1, systems)."""
        moved = swap_dots(swaps.transpose(0, 2, 1), self.vectors)  # (4, k, systems)
        human = np.broadcast_to(self.human, (swaps.shape[0], 1, self.human.size))
        return human, self._means(self.sums_a + moved), self._means(self.sums_b - moved)


class _PearsonSwaps:
    """Pearson r of both hybrids for many swap patterns at once, by sufficient statistics.

    Per group (n units), with a, b centred by their own means (a_c, b_c), D = mean b - mean a,
    e = b_c - a_c, and a swap pattern s in {0, 1} (k = sum s): the hybrid a' takes b where
    s = 1, and its sum of squared deviations is

        S(a') = S(a) + s.(b_c^2 - a_c^2) - (s.e)^2/n + 2 D (s.b_c - k (s.e)/n) + D^2 k(n - k)/n

    and S(b') = S(b) - s.(b_c^2 - a_c^2) - (s.e)^2/n - 2 D (s.a_c + k (s.e)/n)
    + D^2 k(n - k)/n; with h_c the centred human scores, h_c.a' = h_c.a_c + s.(h_c (b - a)) and
    h_c.b' = h_c.b_c - s.(h_c (b - a)). Five dot products per group and resample replace
    recomputing the correlation, and nothing large is subtracted from anything large (a
    group swapped whole is the other metric, taken as such). A hybrid whose S is below
    1e-12 (S(a) + S(b) + n D^2), a bound on its terms, is taken as constant, except where
    S is exact (nothing or everything swapped in the group).
    """

    def __init__(self, human: FloatArray, a: FloatArray, b: FloatArray, grouped: bool):
        ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
        self.grouped = grouped
        self.n = ok.sum(axis=-1).astype(float)
        count = np.maximum(self.n, 1)[:, None]

        def centred(x: FloatArray) -> tuple[FloatArray, FloatArray]:
            # Two passes: the second removes the rounding error of the first mean, so that
            # the centred scores sum to zero to their own precision, not to that of x.
            mean = x.sum(axis=-1, keepdims=True) / count
            c = np.where(ok, x - mean, 0.0)
            shift = c.sum(axis=-1, keepdims=True) / count
            return np.where(ok, c - shift, 0.0), (mean + shift)[:, 0]

        h = np.where(ok, human, 0.0)
        h = np.ldexp(h, -power_of_two_scale(h))
        hc, _ = centred(h)
        a, b = np.where(ok, a, 0.0), np.where(ok, b, 0.0)
        e = power_of_two_scale(np.maximum(np.abs(a), np.abs(b)))  # one exact scale for both
        a, b = np.ldexp(a, -e), np.ldexp(b, -e)
        ac, mean_a = centred(a)
        bc, mean_b = centred(b)
        ec = bc - ac
        d = mean_b - mean_a
        self.count = count[:, 0]
        self.two_d = 2 * d
        self.d_sq_n = d * d / self.count
        self.sd_h = np.sqrt((hc * hc).sum(axis=-1))
        self.pairs_only = self.n == 2
        self.base = ((ac * ac).sum(-1), (bc * bc).sum(-1), (hc * ac).sum(-1),
                     (hc * bc).sum(-1))
        # Every term of S(a'), S(b') is at most a small multiple of this; an S below 1e-12
        # of it is rounding noise.
        self.noise = 1e-12 * (self.base[0] + self.base[1] + self.n * d * d)
        self.vectors = np.stack([ok.astype(float), ec, bc * bc - ac * ac, ac,
                                 hc * (b - a)], axis=-1)  # (groups, units, 5)
        with np.errstate(invalid="ignore"):
            self.live = (self.n >= 2) & ~(np.fmax.reduce(np.where(ok, human, np.nan), -1)
                                          <= np.fmin.reduce(np.where(ok, human, np.nan), -1))

    def _r(self, spread: FloatArray, cov: FloatArray, exact: FloatArray) -> FloatArray:
        with np.errstate(invalid="ignore", divide="ignore"):
            r = cov / (self.sd_h * np.sqrt(spread))
        np.clip(r, -1.0, 1.0, out=r)
        if self.pairs_only.any():
            r = np.where(self.pairs_only, np.round(r), r)
        defined = self.live & (spread > np.where(exact, 0.0, self.noise))
        return np.where(defined, r, np.nan)

    def __call__(self, swaps: BoolArray) -> tuple[FloatArray, FloatArray]:
        k, s_e, s_q, s_a, s_h = swap_dots(swaps, self.vectors)
        sq_a, sq_b, cov_a, cov_b = self.base
        shift = s_e / self.count  # (s.e)/n
        common = s_e * shift - self.d_sq_n * k * (self.n - k)
        ks = k * shift
        spread_a = sq_a + s_q - common + self.two_d * (s_a + s_e - ks)
        spread_b = sq_b - s_q - common - self.two_d * (s_a + ks)
        # A group swapped whole is the other metric exactly (D h_c.1 would not cancel);
        # swapped whole or not at all, S is exact and only 0 means constant.
        whole = k == self.n
        exact = whole | (k == 0)
        ra = self._r(np.where(whole, sq_b, spread_a), np.where(whole, cov_b, cov_a + s_h),
                     exact)
        rb = self._r(np.where(whole, sq_a, spread_b), np.where(whole, cov_a, cov_b - s_h),
                     exact)
        return average_groups(ra, self.grouped), average_groups(rb, self.grouped)


def _correct(dh: FloatArray, dm: FloatArray, eps: float) -> BoolArray:
    """acc-23 outcome per pair: concordant, or tied in both (metric tie: |dm| <= eps)."""
    ht = dh == 0
    mt = np.abs(dm) <= eps
    return (ht & mt) | (~ht & ~mt & ((dh > 0) == (dm > 0)))


def pair_disagreements(*, human: FloatArray, metric_a: FloatArray, metric_b: FloatArray,
                       eps_a: float, eps_b: float) -> tuple[IntArray, IntArray, IntArray]:
    """Per group of padded (G, U) arrays: pairs where only A is right (acc-23 outcome with
    A's tie threshold `eps_a`), only B is right, and all pairs. Values are snapped first
    (`meta_eval.pairs.snap`), as the statistics snap them. Pairs are enumerated in chunks
    (memory O(chunk), time O(pairs))."""
    human, metric_a, metric_b = (snap(np.asarray(x, dtype=float))
                                 for x in (human, metric_a, metric_b))
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
            with np.errstate(over="ignore", invalid="ignore"):
                dh, da, db = (x[:, iu] - x[:, ju] for x in (h, ma, mb))
            ok = ~(np.isnan(dh) | np.isnan(da) | np.isnan(db))
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
            with np.errstate(over="ignore"):
                dh = h[ii] - h[jj]
                ca = _correct(dh, ma[ii] - ma[jj], eps_a)
                cb = _correct(dh, mb[ii] - mb[jj], eps_b)
            only_a[g] += int((ca & ~cb).sum())
            only_b[g] += int((cb & ~ca).sum())
    return only_a, only_b, total


def _pair_test(spec: Statistic, human: FloatArray, a: FloatArray, b: FloatArray, level: str,
               grouping: str, epsilon: float, resamples: int, seed: int) -> Comparison:
    import scipy.stats

    h, ma = arrange(human=human, metric=a, level=level, grouping=grouping)
    _, mb = arrange(human=human, metric=b, level=level, grouping=grouping)
    eps_a = kernel_epsilon(spec, human=h, metric=ma, epsilon=epsilon)
    eps_b = kernel_epsilon(spec, human=h, metric=mb, epsilon=epsilon)
    grouped = level == "segment" and grouping != "none"

    def value(m: FloatArray, eps: float) -> float:
        return float(average_groups(group_values(spec.kernel, human=h, metric=m, epsilon=eps),
                                    grouped))

    statistic = spec.name
    value_a, value_b = value(ma, eps_a), value(mb, eps_b)
    only_a, only_b, pairs = pair_disagreements(human=h, metric_a=ma, metric_b=mb,
                                               eps_a=eps_a, eps_b=eps_b)
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
    """One-sided p-value of Williams' test for H1: r_ha > r_hb (see the module docstring;
    `meta_eval.analytic.williams_test` has the two-sided and |r| forms)."""
    from meta_eval import analytic

    return analytic.williams_test(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n)


#: the closed-form tests of two dependent correlations sharing the human side, and the
#: correlations they take (psych::r.test takes any r; Kendall's tau has no Fisher-z law)
CLOSED_FORM = ("williams", "steiger")
CLOSED_FORM_STATISTICS = ("pearson", "spearman")
TEST_NAMES = {"williams": "Williams'", "steiger": "Steiger's"}


def williams(*, human: ArrayLike, metric_a: ArrayLike, metric_b: ArrayLike,
             level: str = "segment", grouping: str = "none", statistic: str = "pearson",
             alternative: str = "greater", absolute: bool = False,
             method: str = "williams") -> Comparison:
    """Williams' (or, `method="steiger"`, Steiger's) test on the pearson or spearman
    correlations of (items, systems) matrices over the units all three score
    (`meta_eval.analytic`: `alternative`, `absolute`)."""
    from meta_eval import analytic

    if method not in CLOSED_FORM:
        raise ValueError(f"unknown closed-form test {method!r}; use williams or steiger")
    if statistic not in CLOSED_FORM_STATISTICS:
        raise ValueError(f"{TEST_NAMES[method]} test compares pearson or spearman "
                         "correlations; use the permutation test for other statistics")
    check_options(statistic, level, grouping)
    if level == "segment" and grouping != "none":
        raise ValueError(f"{TEST_NAMES[method]} test needs one correlation: use grouping "
                         "'none' (or the permutation test for grouped statistics)")
    human, a, b = _common(*(np.asarray(x, dtype=float) for x in (human, metric_a, metric_b)))
    h, ma = arrange(human=human, metric=a, level=level, grouping=grouping)
    _, mb = arrange(human=human, metric=b, level=level, grouping=grouping)
    r_ha = float(group_values(statistic, human=h, metric=ma)[0])
    r_hb = float(group_values(statistic, human=h, metric=mb)[0])
    r_ab = float(group_values(statistic, human=ma, metric=mb)[0])
    n = int((np.isfinite(h) & np.isfinite(ma) & np.isfinite(mb)).sum())
    test = analytic.williams_test if method == "williams" else analytic.steiger_test
    p = test(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n, alternative=alternative, absolute=absolute)
    delta = abs(r_ha) - abs(r_hb) if absolute else r_ha - r_hb
    return Comparison(statistic, method, r_ha, r_hb, delta, p, n, 0)


def compare(statistic: str, *, human: ArrayLike, metric_a: ArrayLike,
            metric_b: ArrayLike, level: str = "segment", grouping: str = "none",
            method: str = "permutation", alternative: str = "greater",
            absolute: bool = False, **options) -> Comparison:
    """Test H1: metric_a is better than metric_b; `method` is permutation, williams or
    steiger (`alternative` and `absolute`: the closed-form tests' conventions)."""
    if method in CLOSED_FORM:
        return williams(human=human, metric_a=metric_a, metric_b=metric_b, level=level,
                        grouping=grouping, statistic=statistic, alternative=alternative,
                        absolute=absolute, method=method)
    if method != "permutation":
        raise ValueError(f"unknown method {method!r}; use permutation, williams or steiger")
    if alternative != "greater" or absolute:
        raise ValueError("the permutation test is one-sided on the signed statistic")
    return permutation_test(statistic, human=human, metric_a=metric_a, metric_b=metric_b,
                            level=level, grouping=grouping, **options)


def significance_clusters(statistic: str, *, human: ArrayLike,
                          metrics: Mapping[str, ArrayLike], level: str = "segment",
                          grouping: str = "none", method: str = "permutation",
                          alpha: float = 0.05, seed: int = 0,
                          values: Mapping[str, float] | None = None,
                          progress: Callable[[str, str], None] | None = None,
                          every_pair: bool = False, alternative: str = "greater",
                          absolute: bool = False, **options) -> Ranking:
    """Rank `metrics` ({name: (items, systems) matrix}) into significance clusters.

    `values` (optional) are the statistics already computed per metric; `options` go to
    the test (resamples, seed, epsilon, block, early_stop, permutations); a permutation
    test also gets `alpha`, so that its early stopping decides p <= alpha. Metrics whose
    statistic is undefined are ranked last, in a cluster of their own. `every_pair`: test
    every better-ranked metric against every worse-ranked one, not only the walk's tests.
    `alternative` and `absolute` (williams and steiger only): the closed-form test's sides
    and whether it compares |r|; with `absolute` the walk also ranks by |r|.
    """
    names = list(metrics)
    if values is None:
        values = {name: evaluate(statistic, human=human, metric=metrics[name], level=level,
                                 grouping=grouping,
                                 **{k: v for k, v in options.items()
                                    if k in ("epsilon", "permutations", "average",
                                             "replace_nans_with_zeros", "domain")}).value
                  for name in names}

    def test(better: str, worse: str) -> Comparison:
        test_seed = int(np.random.SeedSequence([seed, names.index(better),
                                                names.index(worse)]).generate_state(1)[0])
        return compare(statistic, human=human, metric_a=metrics[better],
                       metric_b=metrics[worse], level=level, grouping=grouping,
                       method=method, **({"seed": test_seed, "alpha": alpha} | options
                                         if method == "permutation" else
                                         {"alternative": alternative, "absolute": absolute}))

    spec = check_options(statistic, level, grouping)
    return assign_clusters({name: values[name] for name in names}, test, alpha=alpha,
                           method=method, progress=progress,
                           goodness=abs if absolute else spec.goodness,
                           statistic=statistic, every_pair=every_pair)


def assign_clusters(values: Mapping[str, float], test: Callable[[str, str], Comparison], *,
                    alpha: float = 0.05, method: str = "permutation",
                    progress: Callable[[str, str], None] | None = None,
                    goodness: Callable[[float], float] = float,
                    statistic: str | None = None, every_pair: bool = False) -> Ranking:
    """The WMT cluster walk over `values` ({name: statistic}; `goodness` of a value is
    higher for a better one, the value itself by default): sorted best first, a new cluster
    opens when `test(better, name)` (H1: better is better than name) gives p <= alpha for a
    member of the current cluster. Undefined values are ranked last. `every_pair`: after
    the walk, also run `test(better, worse)` for every other pair of defined values with
    `better` ranked above `worse` (the clusters do not change)."""
    names = list(values)
    order = sorted(names, key=lambda n: (not np.isfinite(values[n]),
                                         -goodness(float(np.nan_to_num(values[n])))))
    p_values: dict[tuple[str, str], float] = {}
    tests: dict[tuple[str, str], Comparison] = {}
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
            result = test(better, name)
            p_values[(better, name)] = result.p_value
            tests[(better, name)] = result
            if result.p_value <= alpha:
                cluster += 1
                start = i
                break
        ranked.append(RankedMetric(name, values[name], cluster))
    if every_pair:
        defined = [n for n in order if np.isfinite(values[n])]
        for i, better in enumerate(defined):
            for worse in defined[i + 1:]:
                if (better, worse) not in tests:
                    if progress is not None:
                        progress(better, worse)
                    tests[(better, worse)] = test(better, worse)
                    p_values[(better, worse)] = tests[(better, worse)].p_value
    return Ranking(ranked, p_values, alpha, method, tests, statistic=statistic)
