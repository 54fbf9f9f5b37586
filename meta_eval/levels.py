"""One statistic for one metric/human pair at a level and grouping, with a bootstrap CI.

Scores are (items, systems) matrices, NaN where missing. Levels and groupings follow
DESIGN.md (and mt-metrics-eval's `average_by`):

- level `system`: each system's mean over the items where both human and metric are present,
  then one statistic across systems (grouping must be `none`).
- level `segment`, grouping `none`: one statistic over all (item, system) units;
  `item`: the statistic across systems within each item, averaged over items;
  `system`: the statistic across items within each system, averaged over systems.
  Groups where the statistic is undefined are skipped and counted.

Averaging over groups (mt-metrics-eval's `AverageCorrelation`): `average="macro"` (default)
is the plain mean of the defined groups' values; `"micro"` weights each group by its number
of units (both sides present), mt-metrics-eval's `macro=False`. With
`replace_nans_with_zeros` a group of two or more units whose statistic is undefined counts as
0 instead of being skipped (a group of fewer than 2 units is skipped either way, as there);
without grouping this makes an undefined value 0. `pdp` pools the groups' pair differences
into one Pearson (`meta_eval.correlation.pdp_pooled`): it has no average to choose. SPA and
acc-eq (which averages inside its epsilon search) take neither option.

Which kernel and tie threshold a statistic uses comes from `meta_eval.statistics`.

System means are exact, order-independent sums (`system_means`): each column is scaled by a
power of two and split into two 32-bit integer limbs, summed exactly (to 2**-64 of the
column's largest |value|, whatever the order of the items), then snapped so that means
differing only by rounding tie (`meta_eval.pairs.snap`, relative 1e-12 of the mean of |x|).
Bootstrap resamples of system means are the same limb sums weighted by how often each item
was drawn (one matrix product, exact).

Bootstrap CIs resample items with replacement (Deutsch et al. 2021's BOOT-INPUTS; systems
are fixed) and report the percentile interval; they are seeded. For acc-eq the epsilon
chosen on the full data is kept in every resample (the CI is conditional on it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.calibration import calibrate_groups
from meta_eval.correlation import pdp_pooled
from meta_eval.pairs import snap
from meta_eval.results import Result
from meta_eval.statistics import Statistic, get
from meta_eval.system import spa

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike, BoolArray, FloatArray, IntArray

LEVELS = ("system", "segment")
GROUPINGS = ("none", "item", "system")
AVERAGES = ("macro", "micro")
_BLOCK = 1 << 22  # matrix cells per bootstrap block
_LIMB = 2.0 ** 32  # scores are split into two 32-bit limbs for exact sums
EXACT_ITEMS = 1 << 21  # float sums of limbs are exact up to this many items


def check_options(statistic: str, level: str, grouping: str) -> Statistic:
    """The registered statistic; ValueError for an unknown or inconsistent
    statistic/level/grouping."""
    spec = get(statistic)
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {grouping!r}; use one of {', '.join(GROUPINGS)}")
    if level == "system" and grouping != "none":
        raise ValueError("system level correlates system means: use grouping 'none'")
    if level not in spec.levels:
        raise ValueError(f"{statistic} is a {'/'.join(spec.levels)}-level statistic: use level "
                         f"{' or '.join(repr(x) for x in spec.levels)}")
    return spec


def check_averaging(spec: Statistic, average: str = "macro",
                    replace_nans_with_zeros: bool = False) -> None:
    """ValueError for an averaging `spec` cannot take (module docstring)."""
    if average not in AVERAGES:
        raise ValueError(f"unknown average {average!r}; use one of {', '.join(AVERAGES)}")
    if average == "macro" and not replace_nans_with_zeros:
        return
    what = "--average micro" if average != "macro" else "replace_nans_with_zeros"
    if spec.kernel == "spa" or spec.epsilon == "calibrated":
        raise ValueError(f"{spec.name} averages on its own: it takes no {what}")
    if spec.kernel == "pdp" and average != "macro":
        raise ValueError("pdp pools the pair differences of every group into one Pearson: "
                         "it has no average (use macro)")


def column_exponents(x: FloatArray) -> IntArray:
    """e per column of (..., items, systems) x, with every |x| < 2**e (0 for all zeros)."""
    return np.frexp(np.max(np.abs(x), axis=-2, initial=0.0))[1]


def limbs(x: FloatArray, e: IntArray) -> tuple[FloatArray, FloatArray]:
    """Finite x (0 where missing) as hi 2**(e - 32) + lo 2**(e - 64) + a remainder below
    2**(e - 64), with hi, lo integer-valued floats below 2**32 in magnitude; e has one
    entry per column (broadcast over the item axis). Sums of limbs are exact in any order
    (up to EXACT_ITEMS items), and |hi|, |lo| are the limbs of |x|."""
    t = np.ldexp(x, 32 - e[..., None, :])
    hi = np.trunc(t)
    t -= hi
    t *= _LIMB
    return hi, np.trunc(t, out=t)


def limb_means(hi: FloatArray, lo: FloatArray, e: IntArray, count: FloatArray | IntArray
               ) -> FloatArray:
    """Means from sums of limbs (`limbs`) over `count` items, rounded once; NaN where no
    item counted."""
    total = np.ldexp(hi, -32) + np.ldexp(lo, -64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, np.ldexp(total / count, e), np.nan)


def _column_sum(x: FloatArray) -> FloatArray:
    if x.shape[-2] < EXACT_ITEMS:
        return x.sum(axis=-2)
    return x.astype(np.int64).sum(axis=-2).astype(float)


def means_and_scales(x: FloatArray, ok: BoolArray) -> tuple[FloatArray, FloatArray]:
    """Exact, order-independent means over axis -2 of x where ok, and the means of |x| (the
    scale of each mean's rounding, for `snap`)."""
    x = np.where(ok, x, 0.0)
    count = ok.sum(axis=-2)
    e = column_exponents(x)
    hi, lo = limbs(x, e)
    mean = limb_means(_column_sum(hi), _column_sum(lo), e, count)
    if not (x < 0).any():
        return mean, mean
    scale = limb_means(_column_sum(np.abs(hi)), _column_sum(np.abs(lo)), e, count)
    return mean, scale


def system_means(*, human: ArrayLike, metric: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Per-system means over the items where both are present.

    (..., items, systems) -> (..., systems); NaN for a system with no such item. The sums
    are exact to 2**-64 of the column's largest |value| and do not depend on the order of
    the items (see `limbs`), so two systems with the same scores in any order get the same
    mean, and huge values do not overflow.
    """
    human, metric = np.broadcast_arrays(np.asarray(human, float), np.asarray(metric, float))
    ok = np.isfinite(human) & np.isfinite(metric)
    return means_and_scales(human, ok)[0], means_and_scales(metric, ok)[0]


def snapped_system_means(*, human: FloatArray, metric: FloatArray
                         ) -> tuple[FloatArray, FloatArray]:
    """`system_means`, snapped (`meta_eval.pairs.snap`) with each mean's noise scale (the
    mean of |x| it came from): means that differ only by rounding are one value."""
    ok = np.isfinite(human) & np.isfinite(metric)
    return _snapped(*means_and_scales(human, ok)), _snapped(*means_and_scales(metric, ok))


def _snapped(means: FloatArray, scales: FloatArray) -> FloatArray:
    return snap(means) if scales is means else snap(means, scale=scales)


def resampled_system_means(*, human: FloatArray, metric: FloatArray, index: IntArray
                           ) -> tuple[FloatArray, FloatArray]:
    """Snapped system means of (items, systems) matrices on item resamples `index`
    ((resamples, items) indices): -> two (resamples, systems) arrays.

    A resample's limb sums are the full data's limbs weighted by how often each item was
    drawn, one exact matrix product (every partial sum is an integer below 2**53).
    """
    ok = np.isfinite(human) & np.isfinite(metric)
    k, n = index.shape
    flat = (index + n * np.arange(k)[:, None]).reshape(-1)
    counts = np.bincount(flat, minlength=k * n).reshape(k, n).astype(float)
    count = counts @ ok.astype(float)
    out = []
    for x in (human, metric):
        x = np.where(ok, x, 0.0)
        e = column_exponents(x)
        hi, lo = limbs(x, e)
        mean = limb_means(counts @ hi, counts @ lo, e, count)
        if (x < 0).any():
            scale = limb_means(counts @ np.abs(hi), counts @ np.abs(lo), e, count)
            out.append(snap(mean, scale=scale))
        else:
            out.append(snap(mean))
    return out[0], out[1]


def arrange(*, human: ArrayLike, metric: ArrayLike, level: str,
            grouping: str) -> tuple[FloatArray, FloatArray]:
    """(..., items, systems) matrices -> padded (..., groups, units) arrays for the kernels.

    At system level the units are the system means, snapped (`meta_eval.pairs.snap`) with
    each mean's noise scale, the mean of |x| it was computed from: means that differ only by
    rounding are one value, also for means near zero.
    """
    human, metric = np.broadcast_arrays(np.asarray(human, float), np.asarray(metric, float))
    if level == "system":
        h, m = snapped_system_means(human=human, metric=metric)
        return h[..., None, :], m[..., None, :]
    if grouping == "none":
        lead = human.shape[:-2]
        return human.reshape(*lead, 1, -1), metric.reshape(*lead, 1, -1)
    if grouping == "item":
        return human, metric
    return np.swapaxes(human, -1, -2), np.swapaxes(metric, -1, -2)


def average_groups(values: FloatArray, grouped: bool, *,
                   units: IntArray | FloatArray | None = None,
                   average: str = "macro", replace_nans_with_zeros: bool = False
                   ) -> FloatArray:
    """(..., groups) statistic values -> (...,): the mean of the defined groups when
    grouped (weighted by `units`, the units per group, for `average="micro"`), else the
    single group's value; `replace_nans_with_zeros` counts an undefined group of 2 or more
    `units` as 0 (module docstring)."""
    defined = np.isfinite(values)
    counted = defined | (units >= 2) if replace_nans_with_zeros and units is not None \
        else defined
    if not grouped:
        return np.where(counted[..., 0], np.where(defined, values, 0.0)[..., 0], np.nan)
    weights = units.astype(float) if average == "micro" and units is not None else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return ((weights * np.where(defined, values, 0.0)).sum(axis=-1)
                / (weights * counted).sum(axis=-1))


def group_statistic(spec: Statistic, *, human: FloatArray, metric: FloatArray,
                    epsilon: float, grouped: bool, average: str = "macro",
                    replace_nans_with_zeros: bool = False,
                    domain: Sequence[float] | None = None) -> FloatArray:
    """`spec`'s value per leading index of arranged (..., groups, units) arrays: its kernel
    per group, averaged (`average_groups`), or pooled for pdp."""
    units = _units(human, metric)
    if spec.kernel == "pdp":
        value = pdp_pooled(human=human, metric=metric)
        if replace_nans_with_zeros:
            pairable = (units.astype(float) ** 2).sum(axis=-1) >= 2
            value = np.where(np.isnan(value) & pairable, 0.0, value)
        return value
    values = spec.group_values(human=human, metric=metric, epsilon=epsilon, domain=domain)
    return average_groups(values, grouped, units=units, average=average,
                          replace_nans_with_zeros=replace_nans_with_zeros)


def kernel_epsilon(spec: Statistic, *, human: FloatArray, metric: FloatArray,
                   epsilon: float) -> float:
    """The tie threshold `spec`'s kernel gets on arranged (groups, units) arrays: the given
    one, 0, or the one calibrated on these arrays."""
    if spec.epsilon == "calibrated":
        return calibrate_groups(human=human, metric=metric).epsilon
    return spec.tie_threshold(epsilon)


def _units(h: FloatArray, m: FloatArray) -> IntArray:
    return (np.isfinite(h) & np.isfinite(m)).sum(axis=-1)


def _summarise(values: FloatArray, units: IntArray, grouped: bool, average: str = "macro",
               replace_nans_with_zeros: bool = False) -> tuple[float, int, int]:
    """Average defined groups -> (value, n, skipped): n counts the groups in the average
    (or the units, ungrouped), skipped the undefined groups (replaced by 0 or not)."""
    defined = np.isfinite(values)
    skipped = int((~defined).sum())
    counted = defined | (replace_nans_with_zeros & (units >= 2))
    if not counted.any():
        return float("nan"), 0, skipped
    value = float(average_groups(values, grouped, units=units, average=average,
                                 replace_nans_with_zeros=replace_nans_with_zeros))
    if grouped:
        return value, int(counted.sum()), skipped
    return value, int(units[counted][0]), skipped


def _pooled(h: FloatArray, m: FloatArray, grouped: bool,
            replace_nans_with_zeros: bool) -> tuple[float, int, int]:
    """pdp of arranged (groups, units) arrays -> (value, n, skipped): n counts the groups
    with two or more units (the units, ungrouped), skipped the others."""
    units = _units(h, m)
    spec = get("pdp")
    value = float(group_statistic(spec, human=h, metric=m, epsilon=0.0, grouped=grouped,
                                  replace_nans_with_zeros=replace_nans_with_zeros))
    pairs = units >= 2
    if not np.isfinite(value):
        return value, 0, int(units.size)
    if grouped:
        return value, int(pairs.sum()), int((~pairs).sum())
    return value, int(units.sum()), 0


def evaluate(statistic: str, *, human: ArrayLike, metric: ArrayLike,
             level: str = "segment", grouping: str = "none", epsilon: float = 0.0,
             bootstrap: int = 0, ci: float = 0.95, seed: int = 0,
             permutations: int = 1000, average: str = "macro",
             replace_nans_with_zeros: bool = False,
             domain: Sequence[float] | None = None, with_p_value: bool = True) -> Result:
    """`statistic` of `metric` against `human` ((items, systems) matrices) at a level.

    `statistic` is a name in `meta_eval.STATISTICS`; its entry decides the kernel and the
    tie threshold: `epsilon` for kendall-23/acc-23, 0 for pairwise-accuracy, calibrated
    (and reported) for acc-eq. `permutations` is SPA's number of resamples. With
    `bootstrap` > 0 the result carries a percentile CI at level `ci` over that many item
    resamples. A (1, systems) matrix at system level is one score per system, used as is.
    `average` ("macro" or "micro") and `replace_nans_with_zeros`: how groups are averaged
    (module docstring). `domain`: the declared labels (kappa family) or values
    (Krippendorff's alpha); a value outside it is a ValueError. `with_p_value=False` skips
    scipy's p-value (callers that evaluate many fillings or resamples need only the value).
    """
    spec = check_options(statistic, level, grouping)
    check_averaging(spec, average, replace_nans_with_zeros)
    if domain is not None and not spec.declared:
        raise ValueError(f"{statistic} takes no declared labels or values (the kappa family "
                         "and Krippendorff's alpha do)")
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    if human.shape != metric.shape or human.ndim != 2:
        raise ValueError("human and metric must be (items, systems) matrices of one shape")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    grouped = level == "segment" and grouping != "none"

    eps = spec.tie_threshold(epsilon)
    p = None
    if spec.kernel == "spa":
        result = spa(human=human, metric=metric, permutations=permutations, seed=seed)
        value, n, skipped = result.value, result.n, result.skipped
    else:
        h, m = arrange(human=human, metric=metric, level=level, grouping=grouping)
        if spec.epsilon == "calibrated":
            # The search already counted acc-23 at the epsilon it chose.
            calibration = calibrate_groups(human=h, metric=m)
            eps, value = calibration.epsilon, calibration.value
            skipped = h.shape[-2] - calibration.groups
            n = calibration.groups if grouped else (int(_units(h, m)[0])
                                                    if calibration.groups else 0)
        elif spec.kernel == "pdp":
            value, n, skipped = _pooled(h, m, grouped, replace_nans_with_zeros)
        else:
            values = spec.group_values(human=h, metric=m, epsilon=eps, domain=domain)
            value, n, skipped = _summarise(values, _units(h, m), grouped, average,
                                           replace_nans_with_zeros)
        if not grouped and spec.p_value is not None and with_p_value:
            p = spec.p_value(human=h, metric=m)

    low = high = None
    if bootstrap > 0 and np.isfinite(value):
        samples = bootstrap_values(statistic, human=human, metric=metric, level=level,
                                   grouping=grouping, epsilon=eps, resamples=bootstrap,
                                   seed=seed, permutations=permutations, average=average,
                                   replace_nans_with_zeros=replace_nans_with_zeros,
                                   domain=domain)
        samples = samples[np.isfinite(samples)]
        if samples.size:
            alpha = (1 - ci) / 2
            low, high = (float(x) for x in np.quantile(samples, [alpha, 1 - alpha]))
    return Result(statistic, value, n=n, skipped=skipped, level=level, grouping=grouping,
                  ci_low=low, ci_high=high, p_value=p,
                  epsilon=eps if spec.reports_epsilon() else None)


def bootstrap_values(statistic: str, *, human: ArrayLike, metric: ArrayLike, level: str,
                     grouping: str, epsilon: float | None = None, resamples: int = 1000,
                     seed: int = 0, permutations: int = 1000,
                     index: IntArray | None = None, average: str = "macro",
                     replace_nans_with_zeros: bool = False,
                     domain: Sequence[float] | None = None) -> FloatArray:
    """The statistic on `resamples` item resamples (with replacement), seeded.

    `index` ((resamples, items) item indices) replaces the seeded draw. `epsilon`: the tie
    threshold of a statistic that takes one; for acc-eq the threshold to keep (the CI is
    conditional on it), calibrated on the full data when None. `average`,
    `replace_nans_with_zeros`, `domain`: as `evaluate`.
    """
    spec = check_options(statistic, level, grouping)
    check_averaging(spec, average, replace_nans_with_zeros)
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    n_items = human.shape[0]
    if index is None:
        index = np.random.default_rng(seed).integers(0, n_items, size=(resamples, n_items))
    index = np.asarray(index)
    if spec.kernel == "spa":
        return np.array([spa(human=human[ix], metric=metric[ix], permutations=permutations,
                             seed=seed).value for ix in index])
    if epsilon is None:
        h, m = arrange(human=human, metric=metric, level=level, grouping=grouping)
        eps = kernel_epsilon(spec, human=h, metric=m, epsilon=0.0)
    else:
        eps = spec.tie_threshold(epsilon)
    grouped = level == "segment" and grouping != "none"
    options: dict[str, Any] = {"average": average,
                               "replace_nans_with_zeros": replace_nans_with_zeros}
    if level == "segment" and grouping == "item" and spec.kernel != "pdp":
        # Items are the groups: resampling items resamples the per-item values.
        values = spec.group_values(human=human, metric=metric, epsilon=eps, domain=domain)
        return average_groups(values[index], True, units=_units(human, metric)[index],
                              **options)
    out = np.empty(index.shape[0])
    block = max(1, _BLOCK // max(human.size, 1))
    for start in range(0, index.shape[0], block):
        ix = index[start:start + block]
        if level == "system" and n_items < EXACT_ITEMS:
            h, m = resampled_system_means(human=human, metric=metric, index=ix)
            h, m = h[:, None, :], m[:, None, :]
        else:
            h, m = arrange(human=human[ix], metric=metric[ix], level=level, grouping=grouping)
        out[start:start + len(ix)] = group_statistic(spec, human=h, metric=m, epsilon=eps,
                                                     grouped=grouped, domain=domain,
                                                     **options)
    return out
