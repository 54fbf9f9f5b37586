"""One statistic for one metric/human pair at a level and grouping, with a bootstrap CI.

Scores are (items, systems) matrices, NaN where missing. Levels and groupings follow
DESIGN.md (and mt-metrics-eval's `average_by`):

- level `system`: each system's mean over the items where both human and metric are present,
  then one statistic across systems (grouping must be `none`).
- level `segment`, grouping `none`: one statistic over all (item, system) units;
  `item`: the statistic across systems within each item, averaged over items;
  `system`: the statistic across items within each system, averaged over systems.
  Groups where the statistic is undefined are skipped and counted.

Bootstrap CIs resample items with replacement (Deutsch et al. 2021's BOOT-INPUTS; systems
are fixed) and report the percentile interval; they are seeded. For acc-eq the epsilon
chosen on the full data is kept in every resample (the CI is conditional on it).
"""

from __future__ import annotations

import numpy as np

from meta_eval.calibration import calibrate_groups
from meta_eval.correlation import CORRELATIONS, group_values, p_value
from meta_eval.results import Result
from meta_eval.system import spa

LEVELS = ("system", "segment")
GROUPINGS = ("none", "item", "system")
STATISTICS = (*CORRELATIONS, "acc-eq", "pairwise-accuracy", "spa")
SYSTEM_ONLY = ("pairwise-accuracy", "spa")
_BLOCK = 1 << 22  # matrix cells per bootstrap block


def check_options(statistic: str, level: str, grouping: str) -> None:
    """Raise ValueError for an unknown or inconsistent statistic/level/grouping."""
    if statistic not in STATISTICS:
        raise ValueError(f"unknown statistic {statistic!r}; use one of {', '.join(STATISTICS)}")
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    if grouping not in GROUPINGS:
        raise ValueError(f"unknown grouping {grouping!r}; use one of {', '.join(GROUPINGS)}")
    if level == "system" and grouping != "none":
        raise ValueError("system level correlates system means: use grouping 'none'")
    if statistic in SYSTEM_ONLY and level != "system":
        raise ValueError(f"{statistic} is a system-level statistic: use level 'system'")


def system_means(human: np.ndarray, metric: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-system means over the items where both are present.

    (..., items, systems) -> (..., systems); NaN for a system with no such item.
    """
    ok = np.isfinite(human) & np.isfinite(metric)
    count = ok.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        h = np.where(ok, human, 0.0).sum(axis=-2) / count
        m = np.where(ok, metric, 0.0).sum(axis=-2) / count
    return np.where(count > 0, h, np.nan), np.where(count > 0, m, np.nan)


def arrange(human: np.ndarray, metric: np.ndarray, level: str,
            grouping: str) -> tuple[np.ndarray, np.ndarray]:
    """(..., items, systems) matrices -> padded (..., groups, units) arrays for the kernels."""
    human, metric = np.broadcast_arrays(np.asarray(human, float), np.asarray(metric, float))
    if level == "system":
        h, m = system_means(human, metric)
        return h[..., None, :], m[..., None, :]
    if grouping == "none":
        lead = human.shape[:-2]
        return human.reshape(*lead, 1, -1), metric.reshape(*lead, 1, -1)
    if grouping == "item":
        return human, metric
    return np.swapaxes(human, -1, -2), np.swapaxes(metric, -1, -2)


def _units(h: np.ndarray, m: np.ndarray) -> np.ndarray:
    return (np.isfinite(h) & np.isfinite(m)).sum(axis=-1)


def _summarise(values: np.ndarray, units: np.ndarray, grouped: bool) -> tuple[float, int, int]:
    """Average defined groups -> (value, n, skipped)."""
    defined = np.isfinite(values)
    skipped = int((~defined).sum())
    if not defined.any():
        return float("nan"), 0, skipped
    if grouped:
        return float(values[defined].mean()), int(defined.sum()), skipped
    return float(values[defined][0]), int(units[defined][0]), skipped


def evaluate(statistic: str, *, human: np.ndarray, metric: np.ndarray,
             level: str = "segment", grouping: str = "none", epsilon: float = 0.0,
             bootstrap: int = 0, ci: float = 0.95, seed: int = 0,
             permutations: int = 1000) -> Result:
    """`statistic` of `metric` against `human` ((items, systems) matrices) at a level.

    `epsilon` is the metric tie threshold of kendall-23/acc-23 (acc-eq chooses its own and
    reports it); `permutations` is SPA's number of resamples. With `bootstrap` > 0 the
    result carries a percentile CI at level `ci` over that many item resamples.
    """
    check_options(statistic, level, grouping)
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    if human.shape != metric.shape or human.ndim != 2:
        raise ValueError("human and metric must be (items, systems) matrices of one shape")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be in (0, 1), got {ci}")
    grouped = level == "segment" and grouping != "none"

    chosen = epsilon if statistic in ("kendall-23", "acc-23") else None
    if statistic == "spa":
        result = spa(human=human, metric=metric, permutations=permutations, seed=seed)
        value, n, skipped = result.value, result.n, result.skipped
    else:
        kernel, eps = statistic, epsilon
        if statistic == "pairwise-accuracy":
            kernel, eps = "acc-23", 0.0
        h, m = arrange(human, metric, level, grouping)
        if statistic == "acc-eq":
            calibration = calibrate_groups(human=h, metric=m)
            chosen, value = calibration.epsilon, calibration.value
            defined = calibration.groups
            skipped = h.shape[-2] - defined
            n = defined if grouped else (int(_units(h, m)[0]) if defined else 0)
        else:
            values = group_values(kernel, h, m, eps)
            value, n, skipped = _summarise(values, _units(h, m), grouped)

    low = high = None
    if bootstrap > 0 and np.isfinite(value):
        samples = bootstrap_values(statistic, human=human, metric=metric, level=level,
                                   grouping=grouping,
                                   epsilon=epsilon if chosen is None else chosen,
                                   resamples=bootstrap, seed=seed, permutations=permutations)
        samples = samples[np.isfinite(samples)]
        if samples.size:
            alpha = (1 - ci) / 2
            low, high = (float(x) for x in np.quantile(samples, [alpha, 1 - alpha]))
    p = None
    if not grouped and statistic in ("pearson", "spearman", "kendall"):
        h, m = arrange(human, metric, level, grouping)
        p = p_value(statistic, h, m)
    return Result(statistic, value, n=n, skipped=skipped, level=level, grouping=grouping,
                  ci_low=low, ci_high=high, p_value=p, epsilon=chosen)


def bootstrap_values(statistic: str, *, human: np.ndarray, metric: np.ndarray, level: str,
                     grouping: str, epsilon: float, resamples: int, seed: int = 0,
                     permutations: int = 1000) -> np.ndarray:
    """The statistic on `resamples` item resamples (with replacement), seeded."""
    rng = np.random.default_rng(seed)
    n_items = human.shape[0]
    index = rng.integers(0, n_items, size=(resamples, n_items))
    kernel, eps = statistic, epsilon
    if statistic in ("pairwise-accuracy", "acc-eq"):
        kernel = "acc-23"
        eps = 0.0 if statistic == "pairwise-accuracy" else epsilon
    if statistic == "spa":
        return np.array([spa(human=human[ix], metric=metric[ix], permutations=permutations,
                             seed=seed).value for ix in index])
    if level == "segment" and grouping == "item":
        # Items are the groups: resampling items resamples the per-item values.
        values = group_values(kernel, human, metric, eps)
        defined = np.isfinite(values)
        picked = defined[index]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(picked, values[index], 0.0).sum(axis=1) / picked.sum(axis=1)
    out = np.empty(resamples)
    block = max(1, _BLOCK // human.size)
    grouped = level == "segment" and grouping != "none"
    for start in range(0, resamples, block):
        ix = index[start:start + block]
        h, m = arrange(human[ix], metric[ix], level, grouping)
        values = group_values(kernel, h, m, eps)  # (block, groups)
        if grouped:
            defined = np.isfinite(values)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[start:start + len(ix)] = (np.where(defined, values, 0.0).sum(axis=-1)
                                              / defined.sum(axis=-1))
        else:
            out[start:start + len(ix)] = values[:, 0]
    return out
