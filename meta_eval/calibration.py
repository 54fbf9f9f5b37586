"""Tie calibration: the metric tie threshold epsilon that maximises acc-23 (acc-eq).

Deutsch et al. 2023 ("Ties Matter: Meta-Evaluating Modern Metrics with Pairwise Accuracy and
Tie Calibration", Sec. 4) choose, per metric, the epsilon that maximises

    acc_23(eps) = (C(eps) + T_both(eps)) / P

averaged over groups when there is a grouping (one epsilon per metric for all groups, as
WMT23 does with mt-metrics-eval `KendallWithTiesOpt`). Candidates are 0 and every pairwise
metric difference |m_i - m_j|; the smallest maximiser is returned (mt-metrics-eval takes the
first `nanargmax`). tau_23 = 2 acc_23 - 1, so the same epsilon maximises both.

mt-metrics-eval sorts all pairs (and by default samples 10% of them). Here the search is
exact and never holds more than `budget` pairs: A(eps), the weighted count of correct pairs,
is evaluated at any epsilon in O(n log^2 n) with `SortedUnits`, and since raising epsilon
only turns pairs into metric ties, on an interval (a, b]

    A(eps) <= A(a) + T_both(b) - T_both(a)

(concordant pairs can only be lost, tied-in-both pairs only gained). Branch and bound
over intervals of epsilon, split at sampled pair differences, prunes every interval whose
bound cannot beat the best value found; an interval with at most `budget` pairs is swept
exactly by sorting its pairs. With untied human scores the bound equals A(0) everywhere and
the search ends after one evaluation; the worst case is a quadratic-time exact sweep, still
in memory O(budget + n log n). When every group's pairs fit in the budget (e.g. WMT's
item groups of 15-20 systems) and all pairs in 16 budgets, the pairs of whole groups are
enumerated a budget at a time, only the differences of the ones that gain (human ties) and
lose (concordant) are kept (8 bytes a pair, 16 with unequal group weights), and those are
sorted apart: a smallest maximiser is always where a gaining pair enters. That path is
O(P log P) in the number of pairs P at every size.

Both sides are snapped within each group first (`meta_eval.pairs.snap`): values within
relative 1e-12 of each other are ties, as in every rank statistic.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.pairs import SortedUnits, snap

if TYPE_CHECKING:
    from meta_eval.arrays import AnyArray, ArrayLike, FloatArray, IntArray

DEFAULT_BUDGET = 1 << 20  # pairs enumerated at once
_SPLITS = 32  # breakpoints per split of an interval
_RETAINED = 16  # budgets of pairs whose differences the small-group sweep keeps


@dataclass(frozen=True)
class Calibration:
    """Chosen epsilon and the (group-averaged) acc-23 it reaches."""

    epsilon: float
    value: float
    groups: int  # groups with at least one pair
    pairs: int
    evaluations: int = 0  # epsilons evaluated with the sorted index (for benchmarks)


def calibrate_epsilon(*, human: ArrayLike, metric: ArrayLike,
                      groups: ArrayLike | None = None, budget: int = DEFAULT_BUDGET,
                      seed: int = 0) -> Calibration:
    """Epsilon maximising acc-23 of `metric` against `human` (group-averaged if `groups`).

    Units with a missing human or metric score are dropped; groups with fewer than two
    units are left out of the average (they have no pairs).
    """
    human = np.asarray(human, dtype=float).reshape(-1)
    metric = np.asarray(metric, dtype=float).reshape(-1)
    ok = np.isfinite(human) & np.isfinite(metric)
    gid = None
    if groups is not None:
        gid = np.unique(np.asarray(groups).reshape(-1), return_inverse=True)[1].reshape(-1)[ok]
    human, metric = snap(human[ok], groups=gid), snap(metric[ok], groups=gid)
    sizes = np.bincount(gid) if gid is not None and gid.size else np.array([human.size])
    # A difference of two huge scores may overflow to inf: still the right comparison.
    with np.errstate(over="ignore"):
        group_pairs = sizes * (sizes - 1) // 2
        if (int(group_pairs.max(initial=0)) <= budget
                and int(group_pairs.sum()) <= _RETAINED * budget):
            return _exhaustive(human, metric, gid, budget)
        units = SortedUnits(human=human, metric=metric, groups=gid)
        return _Search(units, budget, seed).run()


def calibrate_groups(*, human: FloatArray, metric: FloatArray,
                     budget: int = DEFAULT_BUDGET, seed: int = 0) -> Calibration:
    """`calibrate_epsilon` for padded (groups, units) arrays (NaN = missing unit).

    Small groups are swept in one broadcast pass over their pairs; otherwise the units are
    flattened into `calibrate_epsilon`.
    """
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    ok = np.isfinite(human) & np.isfinite(metric)
    human = snap(np.where(ok, human, np.nan))
    metric = snap(np.where(ok, metric, np.nan))
    n_groups, units = human.shape
    n_pairs = n_groups * units * (units - 1) // 2
    if units > 64 or n_pairs > budget:
        groups = np.broadcast_to(np.arange(n_groups)[:, None], human.shape)
        return calibrate_epsilon(human=human.reshape(-1), metric=metric.reshape(-1),
                                 groups=groups.reshape(-1), budget=budget, seed=seed)
    iu, ju = np.triu_indices(units, 1)
    with np.errstate(over="ignore", invalid="ignore"):
        dh = human[:, ju] - human[:, iu]
        dm = metric[:, ju] - metric[:, iu]
    valid = ~(np.isnan(dh) | np.isnan(dm))  # a difference of huge values may be inf
    return _sweep_pairs(dh, dm, valid, valid.sum(axis=1))


def _exhaustive(human: np.ndarray, metric: np.ndarray, groups: np.ndarray | None,
                budget: int = DEFAULT_BUDGET) -> Calibration:
    """Every group fits in the budget: enumerate the pairs of whole groups, at most `budget`
    at a time, keep the differences of the pairs that move with epsilon, and sweep."""
    n = human.size
    order = np.argsort(groups, kind="stable") if groups is not None else np.arange(n)
    h, m = human[order], metric[order]
    gid = groups[order] if groups is not None else np.zeros(n, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]]) if n else np.zeros(0, int)
    sizes = np.diff(np.r_[starts, n])
    group_pairs = sizes * (sizes - 1) // 2
    live = group_pairs[group_pairs > 0]
    if live.size == 0:
        return Calibration(0.0, float("nan"), 0, 0)
    equal = bool(np.all(live == live[0]))
    weight = np.where(group_pairs > 0, 1.0 / np.maximum(group_pairs, 1), 0.0)
    start_value: float = 0
    plus, minus, plus_w, minus_w = [], [], [], []
    cum = np.cumsum(group_pairs)
    first = 0
    while first < sizes.size:
        stop = max(int(np.searchsorted(cum, cum[first] - group_pairs[first] + budget,
                                       side="right")), first + 1)
        lo, hi = int(starts[first]), int(starts[stop - 1] + sizes[stop - 1])
        chunk_sizes = sizes[first:stop]
        end = np.repeat(np.cumsum(chunk_sizes), chunk_sizes)
        counts = end - np.arange(hi - lo) - 1
        i = np.repeat(np.arange(hi - lo), counts)
        j = i + 1 + (np.arange(i.size) - np.repeat(np.cumsum(counts) - counts, counts))
        dh, dm = h[lo:hi][j] - h[lo:hi][i], m[lo:hi][j] - m[lo:hi][i]
        right, gaining, concordant = _moving(dh, dm)
        if equal:
            start_value += int(right.sum())
        else:
            pair_weight = weight[first:stop][np.repeat(np.arange(stop - first),
                                                       chunk_sizes)[i]]
            start_value += float(pair_weight[right].sum())
            plus_w.append(pair_weight[gaining])
            minus_w.append(pair_weight[concordant])
        plus.append(np.abs(dm[gaining]))
        minus.append(np.abs(dm[concordant]))
        first = stop
    return _best(start_value, np.concatenate(plus), np.concatenate(minus),
                 (np.concatenate(plus_w), np.concatenate(minus_w)) if not equal else None,
                 live)


def _moving(dh: np.ndarray, dm: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Masks of the pairs right at epsilon 0, and of those that gain (human ties) and lose
    (concordant pairs) when epsilon passes |dm| and they become metric ties (exact metric
    ties, dm == 0, are ties at every epsilon)."""
    human_tie = dh == 0
    concordant = ~human_tie & (dm != 0) & ((dh > 0) == (dm > 0))
    return concordant | (human_tie & (dm == 0)), human_tie & (dm != 0), concordant


def _sweep_pairs(dh: np.ndarray, dm: np.ndarray, valid: np.ndarray,
                 group_pairs: np.ndarray) -> Calibration:
    """Exact search over pair differences: pairs are rows of (groups, pairs) arrays with a
    `valid` mask."""
    live = group_pairs[group_pairs > 0]
    if live.size == 0:
        return Calibration(0.0, float("nan"), 0, 0)
    right, gaining, concordant = (x & valid for x in _moving(dh, dm))
    if np.all(live == live[0]):
        return _best(int(right.sum()), np.abs(dm[gaining]), np.abs(dm[concordant]), None,
                     live)
    group_weight = np.where(group_pairs > 0, 1.0 / np.maximum(group_pairs, 1), 0.0)
    weight = np.broadcast_to(group_weight[:, None], dh.shape)
    return _best(float(weight[right].sum()), np.abs(dm[gaining]), np.abs(dm[concordant]),
                 (weight[gaining], weight[concordant]), live)


def _best(start_value: float, plus: np.ndarray, minus: np.ndarray,
          weights: tuple[np.ndarray, np.ndarray] | None, live: np.ndarray) -> Calibration:
    """The smallest epsilon maximising A: A(0) = `start_value`, and A gains (loses) a pair's
    weight (1 with `weights` None) once epsilon reaches its difference in `plus` (`minus`)."""
    if weights is None:
        norm = float(live[0] * live.size)
        # A smallest maximiser sits where a gaining pair enters: sort the two kinds apart.
        plus, minus = np.sort(plus), np.sort(minus)
        last = np.ones(plus.size, dtype=bool)  # the last of each run of equal differences
        np.not_equal(plus[1:], plus[:-1], out=last[:-1])
        ends = np.flatnonzero(last)
        candidates = plus[ends]  # gaining pairs up to a candidate: the run's end + 1
        values = start_value + (ends + 1) - np.searchsorted(minus, candidates, side="right")
        tol = 0.0
    else:
        norm = float(live.size)
        diffs = np.r_[plus, minus]
        gain = np.r_[weights[0], -weights[1]]
        sort = np.argsort(diffs, kind="stable")
        diffs, values = diffs[sort], start_value + np.cumsum(gain[sort])
        ends = np.r_[diffs[1:] != diffs[:-1], True] if diffs.size else np.zeros(0, bool)
        candidates, values = diffs[ends], values[ends]
        tol = 1e-9 * max(1.0, norm)
    candidates = np.r_[0.0, candidates]
    values = np.r_[start_value, values]
    k = int(np.flatnonzero(values >= values.max() - tol)[0])
    return Calibration(float(candidates[k]), float(values[k] / norm), int(live.size),
                       int(live.sum()))


class _Search:
    def __init__(self, units: SortedUnits, budget: int, seed: int) -> None:
        self.u = units
        self.budget = max(int(budget), 1)
        self.rng = np.random.default_rng(seed)
        sizes = units.group_units
        group_pairs = sizes * (sizes - 1) // 2
        self.n_groups = int((group_pairs > 0).sum())
        self.pairs = int(group_pairs.sum())
        live = group_pairs[group_pairs > 0]
        if live.size and np.all(live == live[0]):
            # Equal weights: integer counts keep the search exact.
            self.weights = np.ones(units.n, dtype=np.int64)
            self.norm = float(live[0] * live.size)
            self.tol = 0.0
        else:
            per_group = np.where(group_pairs > 0, 1.0 / np.maximum(group_pairs, 1), 0.0)
            self.weights = per_group[units.group_of]
            self.norm = float(self.n_groups)
            self.tol = 1e-9 * max(1.0, self.n_groups)
        self.evaluations = 0

    def evaluate(self, eps: FloatArray) -> tuple[AnyArray, AnyArray, IntArray]:
        """A(eps), T_both(eps) (weighted) and the number of metric-tied pairs, per epsilon."""
        eps = np.asarray(eps, dtype=float)
        self.evaluations += eps.size
        return self.u.correct_pairs(eps, self.weights)

    def better(self, value: float, eps: float) -> bool:
        return value > self.best + self.tol or (abs(value - self.best) <= self.tol
                                                and eps < self.best_eps)

    def run(self) -> Calibration:
        if self.pairs == 0:
            return Calibration(0.0, float("nan"), 0, 0)
        a0, b0, n0 = (x[0] for x in self.evaluate(np.zeros(1)))
        self.best, self.best_eps = a0, 0.0
        m, end = self.u.m, self.u.end
        has_next = end > self.u.pos + 1
        t_max = float((m[end[has_next] - 1] - m[has_next]).max()) if has_next.any() else 0.0
        if t_max > 0:
            a1, b1, n1 = (x[0] for x in self.evaluate(np.array([t_max])))
            if self.better(a1, t_max):
                self.best, self.best_eps = a1, t_max
            heap: list = []
            self._push(heap, (0.0, a0, b0, n0), (t_max, a1, b1, n1))
            while heap:
                _, _, lo, hi = heapq.heappop(heap)
                if self._prunable(lo, hi):
                    continue
                if hi[3] - lo[3] <= self.budget or not self._split(heap, lo, hi):
                    self._sweep(lo, hi)
        return Calibration(float(self.best_eps), float(self.best / self.norm), self.n_groups,
                           self.pairs, self.evaluations)

    # An interval is (lo, hi] with lo/hi = (eps, A, T_both, tied pairs) at its ends.
    def _bound(self, lo: tuple, hi: tuple) -> float:
        return lo[1] + hi[2] - lo[2]

    def _prunable(self, lo: tuple, hi: tuple) -> bool:
        bound = self._bound(lo, hi)
        return bound < self.best - self.tol or (bound <= self.best + self.tol
                                                and lo[0] >= self.best_eps)

    def _push(self, heap: list, lo: tuple, hi: tuple) -> None:
        if hi[3] > lo[3] and not self._prunable(lo, hi):
            heapq.heappush(heap, (-float(self._bound(lo, hi)), lo[0], lo, hi))

    def _split(self, heap: list, lo: tuple, hi: tuple) -> bool:
        """Evaluate sampled pair differences inside (lo, hi) and queue the sub-intervals."""
        ua, ub = self.u.upper(lo[0]), self.u.upper(hi[0])
        counts = ub - ua
        cum = np.cumsum(counts)
        draws = self.rng.integers(0, int(cum[-1]), size=8 * _SPLITS)
        i = np.searchsorted(cum, draws, side="right")
        j = ua[i] + (draws - (cum[i] - counts[i]))
        diffs = np.unique(self.u.m[j] - self.u.m[i])
        diffs = diffs[(diffs > lo[0]) & (diffs < hi[0])]
        if diffs.size == 0:
            return False
        picks = np.unique(diffs[np.linspace(0, diffs.size - 1, min(_SPLITS, diffs.size))
                                .astype(int)])
        a, b, t = self.evaluate(picks)
        points = [lo]
        for k, eps in enumerate(picks):
            if self.better(a[k], eps):
                self.best, self.best_eps = a[k], float(eps)
            points.append((float(eps), a[k], b[k], t[k]))
        points.append(hi)
        for left, right in itertools.pairwise(points):
            self._push(heap, left, right)
        return True

    def _sweep(self, lo: tuple, hi: tuple) -> None:
        """Exact pass over the pairs with difference in (lo, hi], in chunks of units."""
        u = self.u
        ua, ub = u.upper(lo[0]), u.upper(hi[0])
        counts = ub - ua
        cum = np.cumsum(counts)
        diffs_acc = np.zeros(0)
        gain_acc = np.zeros(0, dtype=self.weights.dtype)
        start = 0
        while start < u.n:
            stop = int(np.searchsorted(cum, cum[start] - counts[start] + self.budget,
                                       side="right"))
            stop = max(stop, start + 1)
            lo_idx = np.zeros(u.n, dtype=np.int64)
            hi_idx = np.zeros(u.n, dtype=np.int64)
            lo_idx[start:stop], hi_idx[start:stop] = ua[start:stop], ub[start:stop]
            i, j = u.pairs_between(lo_idx, hi_idx)
            diffs = u.m[j] - u.m[i]
            # A pair that becomes a metric tie gains its weight if tied in the human scores
            # and loses it if it was concordant.
            sign = (u.hr[j] == u.hr[i]).astype(np.int64) - (u.hr[j] > u.hr[i])
            gain = sign * self.weights[i]
            diffs_acc, inverse = np.unique(np.r_[diffs_acc, diffs], return_inverse=True)
            gain_acc = np.bincount(inverse, weights=np.r_[gain_acc, gain],
                                   minlength=diffs_acc.size)
            if self.weights.dtype.kind == "i":
                gain_acc = np.rint(gain_acc).astype(np.int64)
            start = stop
        if diffs_acc.size == 0:
            return
        values = lo[1] + np.cumsum(gain_acc)
        top = values.max()
        k = int(np.flatnonzero(values >= top - self.tol)[0])
        if self.better(values[k], float(diffs_acc[k])):
            self.best, self.best_eps = values[k], float(diffs_acc[k])
