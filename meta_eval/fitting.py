"""Fitting a judge to people's labels and reporting it honestly (`judgebench fit`).

The labelled units are split by item into K folds (`combination.item_folds`); the last fold is
held out and never seen by the search. The search scores each candidate (a judge spec: few-shot
examples drawn from the search folds, a decision threshold) on the search folds, leaving out
its own examples (a unit is never judged by a prompt that shows it as an example), and keeps
the best by `Statistic.goodness`.

Three numbers come out, each on units the judge's examples do not include:

- in search: the chosen candidate's value on the search folds. It is the maximum over the
  candidates, so it is biased upward by the selection (the more candidates, the more);
- cross-fitted: for each search fold j, the candidate best on the other search folds is
  evaluated on fold j; the pooled out-of-fold values give one statistic (the selection is
  inside each fold's training: Chernozhukov et al. 2018's cross-fitting, as `combine` does);
- held out: the chosen candidate and the starting judge on the held-out fold, which neither the
  search nor the examples saw: the number to report (Varma and Simon 2006: the error of a
  model selected by cross-validation must be estimated on data outside the selection).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.levels import evaluate
from meta_eval.statistics import get

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray, IntArray
    from meta_eval.results import Result


def example_draws(*, pool: Sequence[int], shots: Sequence[int], draws: int, seed: int
                  ) -> list[tuple[int, ...]]:
    """Sets of few-shot examples: for each k in `shots` (0: no example), `draws` distinct
    k-subsets of `pool` drawn with `seed` (all of them where there are fewer), each sorted;
    in the order of `shots`, then of drawing."""
    rng = np.random.default_rng(seed)
    units = sorted(set(pool))
    chosen: list[tuple[int, ...]] = []
    for k in shots:
        if k < 0:
            raise ValueError(f"a number of shots is >= 0, got {k}")
        if k == 0:
            chosen.append(())
            continue
        if k > len(units):
            raise ValueError(f"{k} examples asked for, {len(units)} labelled units to draw from")
        if math.comb(len(units), k) <= draws:
            chosen.extend(combinations(units, k))
            continue
        found: list[tuple[int, ...]] = []
        while len(found) < draws:
            pick = tuple(sorted(int(units[i]) for i in rng.choice(len(units), k,
                                                                     replace=False)))
            if pick not in found:
                found.append(pick)
        chosen.extend(found)
    return list(dict.fromkeys(chosen))


def thresholded(scores: FloatArray, threshold: float | None) -> FloatArray:
    """1.0 where a score is >= `threshold`, 0.0 below it, NaN kept (None: the scores)."""
    if threshold is None:
        return scores
    return np.where(np.isnan(scores), np.nan, (scores >= threshold).astype(float))


def value(statistic: str, *, human: FloatArray, metric: FloatArray,
          bootstrap: int = 0, seed: int = 0, ci: float = 0.95) -> Result:
    """`statistic` between `human` and `metric` over the units where both are finite (one
    pooled segment-level value, `meta_eval.evaluate`), with a bootstrap CI over units when
    `bootstrap` > 0."""
    return evaluate(statistic, human=np.asarray(human, float)[:, None],
                    metric=np.asarray(metric, float)[:, None], level="segment",
                    grouping="none", bootstrap=bootstrap, seed=seed, ci=ci,
                    with_p_value=False)


def best(statistic: str, *, human: FloatArray, candidates: Mapping[str, FloatArray],
         use: BoolArray) -> tuple[str, float]:
    """The candidate with the best `statistic` (by `Statistic.goodness`) on the units of
    `use` where it is defined (NaN: not scored, or one of its examples), and its value; the
    first in order among equals. ValueError when no candidate has a value."""
    spec = get(statistic)
    found: tuple[str, float] | None = None
    for name, scores in candidates.items():
        v = value(statistic, human=np.where(use, human, np.nan), metric=scores).value
        if not math.isfinite(v):
            continue
        if found is None or spec.goodness(v) > spec.goodness(found[1]):
            found = (name, v)
    if found is None:
        raise ValueError(f"no candidate has a {statistic} value on the search units")
    return found


def cross_fitted(statistic: str, *, human: FloatArray, candidates: Mapping[str, FloatArray],
                 folds: IntArray, search: BoolArray,
                 allowed: Mapping[int, Collection[str]] | None = None,
                 per_fold: Mapping[int, Mapping[str, FloatArray]] | None = None
                 ) -> tuple[FloatArray, dict[int, str]]:
    """Out-of-fold scores over the search units: on each search fold j, the scores of the
    candidate `best` on the other search folds (NaN where it does not score, e.g. its own
    examples; a whole fold NaN where no candidate has a value on the others). With
    `allowed`, fold j chooses among `allowed[j]` only (candidates made from the other folds,
    such as a criterion rewritten from their rows). With `per_fold`, fold j's choice and its
    scores use `per_fold[j][name]` for those candidates (scores made without fold j's
    labels, such as a calibration map's). Returns the scores and the candidate chosen per
    fold."""
    pooled = np.full(human.shape, np.nan)
    chosen: dict[int, str] = {}
    for fold in np.unique(folds[search]):
        test = search & (folds == fold)
        train = search & (folds != fold)
        if not train.any():
            continue
        tried = (dict(candidates) if allowed is None else
                 {k: v for k, v in candidates.items() if k in allowed.get(int(fold), ())})
        own = {} if per_fold is None else per_fold.get(int(fold), {})
        tried.update({k: v for k, v in own.items() if k in tried})
        try:
            name, _ = best(statistic, human=human, candidates=tried, use=train)
        except ValueError:
            continue
        chosen[int(fold)] = name
        pooled[test] = tried[name][test]
    return pooled, chosen


def gain_interval(statistic: str, *, human: FloatArray, metric_a: FloatArray,
                  metric_b: FloatArray, resamples: int, seed: int = 0, ci: float = 0.95
                  ) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of goodness(a) - goodness(b) (`Statistic.goodness`)
    over units drawn with replacement, both judges on the same draw (paired); the units
    are those where `human`, `metric_a` and `metric_b` are all finite."""
    from meta_eval.judge_comparison import item_bootstrap

    spec = get(statistic)
    keep = np.isfinite(human) & np.isfinite(metric_a) & np.isfinite(metric_b)
    h, a, b = human[keep], metric_a[keep], metric_b[keep]

    def gain(weights: FloatArray) -> float:
        drawn = np.repeat(np.arange(h.size), weights.astype(int))
        va = value(statistic, human=h[drawn], metric=a[drawn]).value
        vb = value(statistic, human=h[drawn], metric=b[drawn]).value
        return float(spec.goodness(va) - spec.goodness(vb))

    return item_bootstrap(gain, items=[str(i) for i in range(h.size)], resamples=resamples,
                          seed=seed, ci=ci)
