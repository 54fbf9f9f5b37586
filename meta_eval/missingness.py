"""Missingness bounds: what a statistic could have been had its missing cells come out
otherwise, and how many failed cells would have to go against a metric to overturn it.

Manski (1989, "Anatomy of the selection problem", J. Human Resources 24(3); 2003, "Partial
Identification of Probability Distributions") bounds an estimand under missing data by
letting the missing outcomes take every value of their support. Here the estimand is a
meta-evaluation statistic s(H, M) of a human and a metric (items, systems) matrix; the cells
that may be filled are the table's rows where the human value is missing or the metric's
score failed (or is empty). With D_h and D_m the values a human and a metric cell can take:

    [L, U] = [min_F s(H_F, M_F), max_F s(H_F, M_F)]  over every filling F in D^(missing cells)

`domain` takes a column's own values: its scale when it has at most `MAX_SCALE` distinct
values (a judge's 1-5), else its minimum, quartiles and maximum. The bounds are exact (every
filling enumerated) when there are at most `limit` fillings; otherwise coordinate search
(each cell in turn set to its best value for the side sought, from the all-lowest,
all-highest, agreeing and disagreeing fillings, from the best of them until no cell changes
or `budget` evaluations are spent) gives attained fillings, so the reported interval lies inside the
true one (`exact` False).

Tipping point: the fewest of the metric's missing cells that, filled against it (the other
missing cells left out), bring its goodness to the threshold or below (the metric ranked just
below it, the sentinel it must beat): exact over every subset and filling up to `limit`
evaluations, else greedy (cells ranked by the damage each does alone at its worst value,
then the shortest prefix of that ranking that reaches the threshold), an upper bound on the
fewest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from meta_eval.numerics import finite_or_none

MAX_SCALE = 12

Value = Callable[[np.ndarray, np.ndarray], float]


def domain(values: np.ndarray) -> tuple[float, ...]:
    """The values a missing cell of a column may take (module docstring)."""
    seen = np.unique(values[np.isfinite(values)])
    if seen.size <= MAX_SCALE:
        return tuple(float(v) for v in seen)
    return tuple(float(v) for v in np.unique(np.quantile(seen, [0, 0.25, 0.5, 0.75, 1])))


@dataclass(frozen=True)
class Bounds:
    """The interval of a statistic over fillings of its missing cells."""

    low: float
    high: float
    cells: int  # missing cells filled (human and metric)
    exact: bool
    evaluations: int

    def to_dict(self) -> dict[str, object]:
        return {"low": finite_or_none(self.low), "high": finite_or_none(self.high),
                "cells": self.cells,
                "exact": self.exact, "evaluations": self.evaluations}


@dataclass(frozen=True)
class TippingPoint:
    """The fewest failed metric cells that, against the metric, take it to `threshold`."""

    threshold: float
    cells: int | None  # None: even all of them do not
    of: int
    exact: bool

    def to_dict(self) -> dict[str, object]:
        return {"threshold": finite_or_none(self.threshold), "cells": self.cells, "of": self.of,
                "exact": self.exact}




class _Filler:
    """Evaluates the statistic with a chosen value in each fillable cell (NaN: left out)."""

    def __init__(self, value: Value, human: np.ndarray, metric: np.ndarray,
                 cells: list[tuple[int, tuple[int, int]]]) -> None:
        self.value, self.human, self.metric, self.cells = value, human, metric, cells
        self.evaluations = 0

    def __call__(self, fill: Sequence[float]) -> float:
        h, m = self.human.copy(), self.metric.copy()
        for (side, where), v in zip(self.cells, fill, strict=True):
            (h if side == 0 else m)[where] = v
        self.evaluations += 1
        out = float(self.value(h, m))
        return out if math.isfinite(out) else math.nan


def _cells(human: np.ndarray, metric: np.ndarray, present: np.ndarray,
           sides: tuple[int, ...] = (0, 1)) -> list[tuple[int, tuple[int, int]]]:
    out = []
    for side, matrix in ((0, human), (1, metric)):
        if side in sides:
            out += [(side, (int(i), int(j))) for i, j in np.argwhere(present & np.isnan(matrix))]
    return out


def manski_bounds(value: Value, *, human: np.ndarray, metric: np.ndarray,
                  present: np.ndarray, human_domain: Sequence[float],
                  metric_domain: Sequence[float], goodness: Callable[[float], float] = float,
                  limit: int = 4096, budget: int = 4_000) -> Bounds:
    """[L, U] of `value(human, metric)` over every filling of the cells of `present` (the
    table's rows) that are NaN in `human` or `metric` (module docstring)."""
    cells = _cells(human, metric, present)
    filler = _Filler(value, human, metric, cells)
    domains = [tuple(human_domain if side == 0 else metric_domain) for side, _ in cells]
    if not cells:
        v = filler([])
        return Bounds(v, v, 0, True, 1)
    if any(not d for d in domains):
        return Bounds(math.nan, math.nan, len(cells), True, 0)
    if math.prod(len(d) for d in domains) <= limit:
        values = np.array([filler(f) for f in itertools.product(*domains)])
        values = values[np.isfinite(values)]
        low, high = (float(values.min()), float(values.max())) if values.size else (
            math.nan, math.nan)
        return Bounds(low, high, len(cells), True, filler.evaluations)
    worst = _search(filler, cells, domains, human, metric, lambda v: -goodness(v),
                    budget=filler.evaluations + budget // 2)
    best = _search(filler, cells, domains, human, metric, goodness,
                   budget=filler.evaluations + budget // 2)
    found = [v for v in (worst, best) if math.isfinite(v)]
    low, high = (min(found), max(found)) if found else (math.nan, math.nan)
    return Bounds(low, high, len(cells), False, filler.evaluations)


def _starts(cells: list[tuple[int, tuple[int, int]]], domains: list[tuple[float, ...]],
            human: np.ndarray, metric: np.ndarray) -> list[list[float]]:
    """All-lowest, all-highest, and fillings that agree or disagree with the other side's
    rank (its observed value, else its column's middle)."""
    lowest = [d[0] for d in domains]
    highest = [d[-1] for d in domains]
    agree, disagree = [], []
    for (side, where), d in zip(cells, domains, strict=True):
        other = (metric if side == 0 else human)
        x = other[where]
        col = other[np.isfinite(other)]
        q = float(np.mean(col < x) + 0.5 * np.mean(col == x)) if np.isfinite(x) and col.size \
            else 0.5
        agree.append(d[min(len(d) - 1, int(q * len(d)))])
        disagree.append(d[min(len(d) - 1, int((1 - q) * len(d)))])
    return [lowest, highest, agree, disagree]


def _search(filler: _Filler, cells: list[tuple[int, tuple[int, int]]],
            domains: list[tuple[float, ...]], human: np.ndarray, metric: np.ndarray,
            score: Callable[[float], float], sweeps: int = 20,
            budget: int = 2_000) -> float:
    """The statistic at the best `score` that coordinate search reaches from the best of the
    starts, within `budget` evaluations."""
    def key(v: float) -> float:
        return score(v) if math.isfinite(v) else -math.inf

    tried = [(filler(f), f) for f in _starts(cells, domains, human, metric)]
    current, fill = max(tried, key=lambda t: key(t[0]))
    for _ in range(sweeps):
        changed = False
        for k, d in enumerate(domains):
            if filler.evaluations >= budget:
                return current
            for v in d:
                if v == fill[k]:
                    continue
                trial = [*fill[:k], v, *fill[k + 1:]]
                got = filler(trial)
                if key(got) > key(current):
                    fill, current, changed = trial, got, True
        if not changed:
            break
    return current


def tipping_point(value: Value, *, human: np.ndarray, metric: np.ndarray,
                  present: np.ndarray, metric_domain: Sequence[float], threshold: float,
                  goodness: Callable[[float], float] = float,
                  limit: int = 4096) -> TippingPoint:
    """The fewest NaN cells of `metric` within `present` that, filled from `metric_domain`
    against the metric (the others left out), bring goodness(value) to goodness(threshold)
    or below (module docstring)."""
    cells = [c for c in _cells(human, metric, present, sides=(1,))
             if np.isfinite(human[c[1]])]
    n, d = len(cells), tuple(metric_domain)
    target = goodness(threshold)
    if not math.isfinite(target) or not d:
        return TippingPoint(threshold, None, n, True)
    filler = _Filler(value, human, metric, cells)

    def low_enough(fill: Sequence[float]) -> bool:
        v = filler(fill)
        return math.isfinite(v) and goodness(v) <= target

    if low_enough([math.nan] * n):
        return TippingPoint(threshold, 0, n, True)
    cost = sum(math.comb(n, j) * len(d) ** j for j in range(1, n + 1))
    if cost <= limit:
        for j in range(1, n + 1):
            for chosen in itertools.combinations(range(n), j):
                for values in itertools.product(d, repeat=j):
                    fill = [math.nan] * n
                    for k, v in zip(chosen, values, strict=True):
                        fill[k] = v
                    if low_enough(fill):
                        return TippingPoint(threshold, j, n, True)
        return TippingPoint(threshold, None, n, True)
    # each cell's most damaging value alone, cells ranked by that damage, then the shortest
    # prefix of the ranking that reaches the threshold
    worst: list[tuple[float, int, float]] = []
    for k in range(n):
        options = [(goodness(got), k, v) for v in d
                   if math.isfinite(got := filler([*([math.nan] * k), v,
                                                   *([math.nan] * (n - k - 1))]))]
        if options:
            worst.append(min(options))
    worst.sort()
    fill = [math.nan] * n
    for j, (_, k, v) in enumerate(worst, start=1):
        fill[k] = v
        if low_enough(fill):
            return TippingPoint(threshold, j, n, False)
    return TippingPoint(threshold, None, n, False)
