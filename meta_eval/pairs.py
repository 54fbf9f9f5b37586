"""Counting concordant, discordant and tied pairs with a metric tie threshold, sort-based.

For units i < j of one group, with human scores h and metric scores m, a pair is

    tied in the metric   if |m_i - m_j| <= epsilon   (epsilon = 0: exact ties only)
    tied in the human    if h_i == h_j
    concordant           if not tied in either and sign(h_i - h_j) == sign(m_i - m_j)
    discordant           if not tied in either and the signs differ

which are the sufficient statistics of every Kendall variant (Deutsch et al. 2023, "Ties
Matter", Sec. 3; mt-metrics-eval `tau_optimization.TauSufficientStats`). The tie rule
`|m_i - m_j| <= epsilon` is mt-metrics-eval's (`PairwiseDiffs`, `tau_optimization`).
`pair_counts` and `SortedUnits` count the values exactly as given.

Ties after arithmetic (`snap`): values that differ only by floating-point noise are one
value. A system mean is a sum of many scores, and two means that are equal in exact
arithmetic (231.33/96 from two different multisets of thirds) come out a few ulps apart, so
a rank statistic would see no tie. Every rank statistic (spearman, the Kendall family,
acc-eq's epsilon search, the pair-outcome permutation test) therefore snaps its inputs
first: along each group's sorted values, neighbours a < b with

    b - a <= rtol * max(s_a, s_b),    rtol = TIE_RTOL = 1e-12,

are joined (s: the magnitude that bounds a value's rounding error, |value| unless given,
e.g. the mean of |x| for a mean of x), and every chain of joined values takes the value of
its member of largest magnitude. The result depends only on each group's multiset of
values, never on their order, and snapping twice changes nothing.

Nothing here enumerates pairs. Units are sorted by (group, m); then for unit i the units
j > i tied with it in the metric form one run (i, U_i) of positions, found by bisection on
the computed differences m_j - m_i (so the rule is applied to exactly the floating-point
difference a pair loop would compute), and the untied ones the run [U_i, end of group).
Counts over a run come from two static indexes over the sorted units: one of
(human rank, position) keys for "how many equal to h_i", and a merge-sort tree (one sorted
key array per level, queried with `np.searchsorted`) for "how many greater than h_i".
One evaluation costs O(n log^2 n) time and O(n log n) memory for n units, for any number
of groups; several epsilons are evaluated in one vectorised pass.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from meta_eval.arrays import AnyArray, FloatArray, IntArray


TIE_RTOL = 1e-12  # values closer than this (relative) are one value: see `snap`
_TABLE_LIMIT = 1 << 23  # entries of the prefix-count tables (int32)
_COMPILED_DISCORDANT = 1 << 17  # units from which `_discordant` imports scipy.stats
_FEW_VALUES = 64  # distinct values up to which `few_value_inversions` counts (int8 blocks)
_BLOCK = 16
_UPPER = np.triu(np.ones((_BLOCK, _BLOCK), dtype=bool), 1)  # i < j within a block


def snap(values: FloatArray, *, scale: FloatArray | None = None,
         groups: IntArray | None = None, rtol: float = TIE_RTOL) -> FloatArray:
    """`values` with floating-point near-ties made exact ties (see the module docstring).

    Each row along the last axis is one group; with `groups` (1-D `values` only) the groups
    are its labels. `scale` (same shape as `values`, >= |value|) bounds each value's rounding
    error; default |value|. NaN stays NaN and joins nothing.
    """
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return x
    sc = np.abs(x) if scale is None else np.broadcast_to(np.asarray(scale, dtype=float),
                                                         x.shape)
    if groups is not None:
        if x.ndim != 1:
            raise ValueError("snap with groups takes 1-D values")
        gid = np.asarray(groups).reshape(-1)
        keys = (x, gid) if scale is None else (sc, x, gid)
        order = np.lexsort(keys)
        same = gid[order][1:] == gid[order][:-1]
    else:
        units = x.shape[-1]
        rows = x.reshape(-1, units)
        if scale is None:
            order = np.argsort(rows, axis=-1)  # equal values snap alike: any order will do
        else:
            order = np.lexsort((sc.reshape(-1, units), rows), axis=-1)
        order = (order + units * np.arange(rows.shape[0])[:, None]).reshape(-1)
        same = (np.arange(1, order.size) % units) != 0
    flat, flat_scale = x.reshape(-1), sc.reshape(-1)
    rep = _snap_sorted(flat[order], flat_scale[order], same, rtol)
    if rep is None:
        return x  # exact ties only: nothing to change
    out = np.empty(rep.size)
    out[order] = rep
    return out.reshape(x.shape)


def _snap_sorted(s: np.ndarray, s_scale: np.ndarray, same: np.ndarray | bool,
                 rtol: float = TIE_RTOL) -> np.ndarray | None:
    """`snap` of sorted values `s` whose neighbours may join where `same`; None when only
    exact ties join (nothing changes). The result is sorted too."""
    with np.errstate(invalid="ignore", over="ignore"):
        gap = s[1:] - s[:-1]
        join = same & (gap <= rtol * np.maximum(s_scale[1:], s_scale[:-1]))
    if not (join & (gap != 0)).any():
        return None
    n = s.size
    index = np.arange(n)
    starts = np.ones(n, dtype=bool)  # a chain starts (ends) where no join is before (after)
    np.logical_not(join, out=starts[1:])
    ends = np.ones(n, dtype=bool)
    np.logical_not(join, out=ends[:-1])
    first = np.maximum.accumulate(np.where(starts, index, 0))
    last = np.minimum.accumulate(np.where(ends, index, n)[::-1])[::-1]
    # The end of the chain farthest from zero (its negative end if the chain crosses zero,
    # which only scales larger than |value| allow).
    return np.where(s[first] < 0, s[first], s[last])


@dataclass(frozen=True)
class PairCounts:
    """Pair counts for one group (or arrays of them, one entry per group)."""

    concordant: IntArray
    discordant: IntArray
    ties_human: IntArray  # tied in the human scores only
    ties_metric: IntArray  # tied in the metric scores only
    ties_both: IntArray
    units: IntArray  # units per group

    @property
    def pairs(self) -> IntArray:
        return (self.concordant + self.discordant + self.ties_human + self.ties_metric
                + self.ties_both)


class SortedUnits:
    """Units sorted by (group, metric score) with the indexes that count pairs fast.

    `human`, `metric`: finite 1-D arrays of equal length; `groups`: optional integer group id
    per unit (pairs are only formed within a group).
    """

    def __init__(self, *, human: FloatArray, metric: FloatArray,
                 groups: IntArray | None = None) -> None:
        human = np.asarray(human, dtype=float)
        metric = np.asarray(metric, dtype=float)
        n = human.size
        if groups is None:
            groups = np.zeros(n, dtype=np.int64)
        groups = np.asarray(groups)
        order = np.lexsort((human, metric, groups))
        self.n = n
        self.m = metric[order]
        h = human[order]
        g = groups[order]
        _, self.hr = np.unique(h, return_inverse=True)
        self.hr = self.hr.astype(np.int64).reshape(-1)
        self.n_ranks = int(self.hr.max()) + 1 if n else 1
        self.pos = np.arange(n, dtype=np.int64)

        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if n else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], n].astype(np.int64) if n else np.zeros(0, np.int64)
        self.group_start = starts.astype(np.int64)
        self.group_end = ends
        sizes = ends - starts
        self.group_of = np.repeat(np.arange(starts.size), sizes)
        self.end = np.repeat(ends, sizes)  # end of each unit's group
        self.group_units = sizes

        # (group, global rank of m) keys, sorted: locate "m_j <= t" within a group at once.
        self._m_sorted = np.sort(self.m)
        grank = np.searchsorted(self._m_sorted, self.m, side="right")
        self._group_keys = self.group_of * (n + 1) + grank
        if self.n_ranks * (n + 1) <= _TABLE_LIMIT:
            # Few distinct human scores: prefix-count tables answer each query by lookup.
            onehot = np.zeros((self.n_ranks, n + 1), dtype=np.int32)
            onehot[self.hr, self.pos + 1] = 1
            self._equal_table: IntArray | None = np.cumsum(onehot, axis=1, dtype=np.int32)
            self._greater_table: IntArray | None = np.zeros_like(self._equal_table)
            self._greater_table[:-1] = np.cumsum(self._equal_table[::-1], axis=0)[::-1][1:]
        else:
            self._equal_table = self._greater_table = None
            # (human rank, position) keys: counts of "equal to h_i" over a position range.
            self._eq_keys = np.sort(self.hr * (n + 1) + self.pos)
            # Merge-sort tree: at level l, blocks of 2**l positions, each sorted by rank.
            self._levels = [np.sort((self.pos >> level) * self.n_ranks + self.hr)
                            for level in range(max(n.bit_length(), 1))]
        # First position after i with a strictly larger metric score: the end of i's ties.
        self.first_greater: IntArray | None = None
        self.first_greater = self.upper(0.0)
        self._gt_to_end = self.count_greater_before(self.end, self.hr)

    # -- index queries ------------------------------------------------------------------
    def count_equal(self, lo: IntArray, hi: IntArray, rank: IntArray) -> IntArray:
        """Units at positions [lo, hi) whose human rank equals `rank` (element-wise)."""
        hi = np.maximum(hi, lo)
        if self._equal_table is not None:
            return (self._equal_table[rank, hi] - self._equal_table[rank, lo]).astype(np.int64)
        base = rank * (self.n + 1)
        return (np.searchsorted(self._eq_keys, base + hi)
                - np.searchsorted(self._eq_keys, base + lo))

    def count_greater_before(self, p: IntArray, rank: IntArray) -> IntArray:
        """Units at positions [0, p) whose human rank is greater than `rank`."""
        p = np.asarray(p, dtype=np.int64)
        rank = np.broadcast_to(np.asarray(rank, dtype=np.int64), p.shape)
        if self._greater_table is not None:
            return self._greater_table[rank, p].astype(np.int64)
        total = np.zeros(p.shape, dtype=np.int64)
        for level, keys in enumerate(self._levels):
            sel = ((p >> level) & 1).astype(bool)
            if not sel.any():
                continue
            block = (p[sel] >> level) - 1
            found = np.searchsorted(keys, block * self.n_ranks + rank[sel], side="right")
            total[sel] += ((block + 1) << level) - found
        return total

    def upper(self, epsilon: float | FloatArray) -> IntArray:
        """U[i] = first position p in (i, end of group] with m[p] - m[i] > epsilon.

        With an array of k epsilons the result has shape (k, n). A searchsorted on
        m_j <= m_i + epsilon finds the boundary; the few places where rounding of that sum
        disagrees with the computed difference m_j - m_i are settled by bisection.
        """
        with np.errstate(over="ignore"):  # huge scores: an inf difference still compares
            return self._upper(epsilon)

    def _upper(self, epsilon: float | FloatArray) -> IntArray:
        eps = np.asarray(epsilon, dtype=float)
        shape = (*eps.shape, self.n)
        start = self.pos + 1 if self.first_greater is None else self.first_greater
        lo = np.broadcast_to(start, shape)
        hi = np.broadcast_to(self.end, shape)
        target = self.m + eps[..., None]
        grank = np.searchsorted(self._m_sorted, target, side="right")
        guess = np.searchsorted(self._group_keys, self.group_of * (self.n + 1) + grank,
                                side="right")
        guess = np.clip(guess, lo, hi)
        last = self.n - 1
        before_ok = (guess == lo) | (self.m[np.maximum(guess - 1, 0)] - self.m <= eps[..., None])
        at_ok = (guess == hi) | (self.m[np.minimum(guess, last)] - self.m > eps[..., None])
        bad = np.flatnonzero(~(before_ok & at_ok))
        out = guess.reshape(-1).copy()
        if bad.size:
            lo_f = np.array(lo.reshape(-1)[bad])
            hi_f = np.array(hi.reshape(-1)[bad])
            base = np.broadcast_to(self.m, shape).reshape(-1)[bad]
            eps_f = np.broadcast_to(eps[..., None], shape).reshape(-1)[bad]
            idx = np.flatnonzero(lo_f < hi_f)
            while idx.size:
                a, b = lo_f[idx], hi_f[idx]
                mid = (a + b) >> 1
                beyond = self.m[mid] - base[idx] > eps_f[idx]
                hi_f[idx] = np.where(beyond, mid, b)
                lo_f[idx] = np.where(beyond, a, mid + 1)
                idx = idx[lo_f[idx] < hi_f[idx]]
            out[bad] = lo_f
        return out.reshape(shape)

    # -- pair statistics -----------------------------------------------------------------
    def counts(self, epsilon: float = 0.0) -> PairCounts:
        """Per-group pair counts with metric tie threshold `epsilon`."""
        u = self.upper(epsilon)
        rank = self.hr
        tied_m = u - self.pos - 1
        both = self.count_equal(self.pos + 1, u, rank)
        untied = self.end - u
        con = self._gt_to_end - self.count_greater_before(u, rank)
        human_only = self.count_equal(u, self.end, rank)
        dis = untied - con - human_only
        concordant, discordant, ties_human, ties_metric, ties_both = (
            np.bincount(self.group_of, weights=x, minlength=self.group_units.size)
            .astype(np.int64) for x in (con, dis, human_only, tied_m - both, both))
        return PairCounts(concordant, discordant, ties_human, ties_metric, ties_both,
                          units=self.group_units.copy())

    def correct_pairs(self, epsilon: FloatArray, weights: FloatArray | IntArray
                      ) -> tuple[AnyArray, AnyArray, IntArray]:
        """For each epsilon: the weighted number of pairs acc-23 counts as correct
        (concordant or tied in both), the weighted number tied in both, and the number of
        pairs tied in the metric. `weights` has one weight per unit (its group's pair weight).
        """
        u = self.upper(epsilon)  # (k, n)
        rank = np.broadcast_to(self.hr, u.shape)
        both = self.count_equal(np.broadcast_to(self.pos + 1, u.shape), u, rank)
        con = self._gt_to_end - self.count_greater_before(u, rank)
        tied = (u - self.pos - 1).sum(axis=-1)
        if weights.dtype.kind != "i":
            both, con = both.astype(float), con.astype(float)
        return (both + con) @ weights, both @ weights, tied

    def pairs_between(self, lo: IntArray, hi: IntArray) -> tuple[IntArray, IntArray]:
        """All pairs (i, j) with j in [lo[i], hi[i]), as two index arrays (sorted positions)."""
        counts = np.maximum(hi - lo, 0)
        i = np.repeat(self.pos, counts)
        offsets = np.cumsum(counts) - counts
        j = lo[i] + (np.arange(i.size, dtype=np.int64) - offsets[i])
        return i, j


def inversions(values: IntArray, group: IntArray | None = None,
               n_groups: int = 1) -> IntArray:
    """Per group: pairs of positions i < j with values[i] > values[j] (strictly), for
    non-negative integer `values` that are group-major (every value of a group below every
    value of a later group, so no pair across groups counts); `group[v]` is the group of
    value v (None: one group). O(n log K) time for K distinct values, O(n + K) memory.

    Radix from the top bit: with the values ordered stably by their bits above b, a value
    whose bit b is 0 is below every earlier value of the same run (same bits above b)
    whose bit b is 1. Counting those, then partitioning each run by bit b (stably), visits
    each of the log2 K levels once; where each run starts comes from a histogram.
    """
    n = values.size
    out = np.zeros(n_groups, dtype=np.int64)
    if n < 2:
        return out
    seq = values.astype(np.int64)
    top = int(seq.max())
    index = np.arange(n, dtype=np.int64)
    zeros_before = np.zeros(n + 1, dtype=np.int64)
    prefix, first, zero, zeros_here, ones_here, target, placed = (
        np.empty(n, dtype=np.int64) for _ in range(7))
    for b in range(top.bit_length() - 1, -1, -1):
        np.right_shift(seq, b + 1, out=prefix)
        runs = np.bincount(prefix, minlength=(top >> (b + 1)) + 1)
        start = np.cumsum(runs) - runs
        np.take(start, prefix, out=first)
        np.right_shift(seq, b, out=zero)
        halves = np.bincount(zero, minlength=2 * runs.size)  # per (run, bit b)
        np.bitwise_xor(np.bitwise_and(zero, 1, out=zero), 1, out=zero)
        np.cumsum(zero, out=zeros_before[1:])
        np.subtract(zeros_before[:-1], np.take(zeros_before, first, out=zeros_here),
                    out=zeros_here)  # zeros before, same run
        np.subtract(np.subtract(index, first, out=ones_here), zeros_here,
                    out=ones_here)  # ones before, same run
        if group is None:
            out[0] += int(np.dot(ones_here, zero))
        else:
            out += np.bincount(group[seq], weights=ones_here * zero,
                               minlength=n_groups).astype(np.int64)
        # A zero goes to first + zeros_here; a one to first + (zeros of its run) + ones_here.
        np.take(halves, 2 * prefix, out=target)
        target += ones_here
        target -= zeros_here
        target *= np.subtract(1, zero, out=placed)
        target += first
        target += zeros_here
        placed[target] = seq
        seq, placed = placed, seq
    return out


def _dense_rank(x: AnyArray) -> tuple[IntArray, int]:
    values, rank = np.unique(x, return_inverse=True)
    return rank.reshape(-1).astype(np.int64), values.size


def _class_pairs(rank: IntArray, size: int, group_of: IntArray | None,
                 n_groups: int) -> IntArray:
    """Per group: pairs of units of equal (dense, group-major) rank."""
    counts = np.bincount(rank, minlength=size).astype(np.int64)
    pairs = counts * (counts - 1) // 2
    if group_of is None:
        return np.array([pairs.sum()], dtype=np.int64)
    return np.bincount(group_of, weights=pairs, minlength=n_groups).astype(np.int64)


def exact_pair_counts(*, human: FloatArray, metric: FloatArray,
                      groups: IntArray | None = None) -> PairCounts:
    """`pair_counts` at epsilon 0 (exact ties only) in O(n log n), for finite scores;
    `groups`, if given, are labels 0..G-1.

    The discordant pairs are counted as scipy.stats.kendalltau counts them (Knight 1966),
    as inversions: with units in (group, m, h) order, a pair i < j is discordant exactly when
    h_i > h_j (a pair tied in m comes in h order). The two sides are symmetric, so the side
    with fewer distinct values gives the ranks (log2 of their number levels of radix). Ties
    are pairs of equal h, of equal m (from histograms of ranks) and of equal (h, m) (runs of
    the sorted units); concordant = all pairs - discordant - tied in either. At epsilon 0
    the tie rule |m_i - m_j| <= 0 is m_i == m_j (a difference of distinct finite floats is
    never 0), so the counts equal those of `SortedUnits.counts(0.0)`.
    """
    human = np.asarray(human, dtype=float).reshape(-1)
    metric = np.asarray(metric, dtype=float).reshape(-1)
    n = human.size
    gid = (np.zeros(n, dtype=np.int64) if groups is None
           else np.asarray(groups, dtype=np.int64).reshape(-1))
    n_groups = int(gid.max()) + 1 if groups is not None and n else 1
    rh, n_h = _dense_rank(human)
    rm, n_m = _dense_rank(metric)
    group_h = group_m = None
    if groups is not None:  # ranks of (group, value): group-major, every key below n^2
        key_h, key_m = gid * n_h + rh, gid * n_m + rm
        rh, n_h = _dense_rank(key_h)
        rm, n_m = _dense_rank(key_m)
        group_h = np.zeros(n_h, dtype=np.int64)
        group_h[rh] = gid
        group_m = np.zeros(n_m, dtype=np.int64)
        group_m[rm] = gid
    # Order by the side with more values, count inversions of the other's ranks.
    outer, (inner, n_inner, group_inner) = (
        (rm, (rh, n_h, group_h)) if n_h <= n_m else (rh, (rm, n_m, group_m)))
    order = np.argsort(outer * n_inner + inner)
    outer, inner = outer[order], inner[order]
    discordant = inversions(inner, group_inner, n_groups)
    tied_h = _class_pairs(rh, n_h, group_h, n_groups)
    tied_m = _class_pairs(rm, n_m, group_m, n_groups)
    both = np.ones(n, dtype=bool)
    both[1:] = (outer[1:] != outer[:-1]) | (inner[1:] != inner[:-1])
    starts = np.flatnonzero(both)
    sizes = np.diff(np.r_[starts, n]).astype(np.int64)
    tied_both = np.bincount(gid[order][starts], weights=sizes * (sizes - 1) // 2,
                            minlength=n_groups).astype(np.int64)
    units = np.bincount(gid, minlength=n_groups).astype(np.int64)
    concordant = units * (units - 1) // 2 - discordant - tied_h - tied_m + tied_both
    return PairCounts(concordant, discordant, tied_h - tied_both, tied_m - tied_both,
                      tied_both, units=units)


def snapped_exact_counts(*, human: np.ndarray, metric: np.ndarray
                         ) -> tuple[PairCounts, int, int]:
    """`exact_pair_counts` of one group of finite scores after `snap`ping both sides, and
    the number of distinct values of each side.

    Each side is sorted once (which `snap` needs anyway) and dense-ranked from 1. With the
    units in the order of the side with more distinct values (x), a pair is discordant
    exactly when x_i < x_j and y_i > y_j, which scipy.stats.kendalltau's compiled Fenwick
    tree over the y ranks counts (Knight 1966; `inversions` after a stable sort where scipy
    lacks it), without ordering the units within ties of x. Pairs tied in both come from a
    histogram of (x, y) when it is small, else from sorting the units in tied runs of x.
    """
    counts, runs_h, runs_m = snapped_counts_and_ties(human=human, metric=metric)
    return counts, runs_h.size, runs_m.size


_LAST_ROW: list[tuple[np.ndarray, np.ndarray, tuple[PairCounts, np.ndarray, np.ndarray]]] = []


def snapped_counts_and_ties(*, human: np.ndarray, metric: np.ndarray
                            ) -> tuple[PairCounts, np.ndarray, np.ndarray]:
    """`snapped_exact_counts`' counts and the sizes of each side's runs of equal snapped
    values (in value order). The last row's are kept: an ungrouped Kendall value and its
    p-value count the same row."""
    human = np.asarray(human, dtype=float).reshape(-1)
    metric = np.asarray(metric, dtype=float).reshape(-1)
    for h, m, kept in _LAST_ROW:
        if np.array_equal(h, human) and np.array_equal(m, metric):
            return kept
    result = _snapped_counts(human, metric)
    _LAST_ROW[:] = [(human.copy(), metric.copy(), result)]
    return result


def _run_sizes(new: np.ndarray) -> np.ndarray:
    """Sizes of the runs of a sorted sequence, given where each run starts."""
    return np.diff(np.flatnonzero(new), append=new.size).astype(np.int64)


def _snapped_counts(human: np.ndarray, metric: np.ndarray
                    ) -> tuple[PairCounts, np.ndarray, np.ndarray]:
    n = human.size
    if n < 2:
        zero, units = np.zeros(1, dtype=np.int64), np.array([n], dtype=np.int64)
        ones = np.ones(n, dtype=np.int64)
        return PairCounts(zero, zero, zero, zero, zero, units), ones, ones
    sides = [_sorted_human(human), _sorted_ranks(metric)]
    (order, x, x_new, n_x), (order_y, y_sorted, y_new, n_y) = (
        sides if sides[0][3] >= sides[1][3] else sides[::-1])
    y = np.empty(n, dtype=np.intp)
    y[order_y] = y_sorted
    y = y[order]
    discordant = _discordant(x, y)
    runs_x, runs_y = _run_sizes(x_new), _run_sizes(y_new)
    tied_x, tied_y = _pairs_in(runs_x), _pairs_in(runs_y)
    if n_x * (n_y + 1) <= 4 * n + 1024:
        cells = np.bincount(x * (n_y + 1) + y).astype(np.int64)
        tied_both = int((cells * (cells - 1) // 2).sum())
    else:  # only units in a tied run of x can be tied in both
        in_run = x_new.copy()
        in_run[:-1] &= x_new[1:]
        np.logical_not(in_run, out=in_run)
        keys = np.sort(x[in_run].astype(np.int64) * (n_y + 1) + y[in_run])
        tied_both = _run_pairs(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else 0
    tied_h, tied_m = (tied_x, tied_y) if sides[0][3] >= sides[1][3] else (tied_y, tied_x)
    total = n * (n - 1) // 2
    counts = PairCounts(*(np.array([v], dtype=np.int64) for v in (
        total - discordant - tied_h - tied_m + tied_both, discordant, tied_h - tied_both,
        tied_m - tied_both, tied_both, n)))
    return counts, *((runs_x, runs_y) if sides[0][3] >= sides[1][3] else (runs_y, runs_x))


_SORTED_HUMAN: OrderedDict[bytes, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = (
    OrderedDict())
_SORTED_ROWS = 16  # human rows whose sort is kept: at system grouping one row per system
_SORTED_UNITS = 1 << 15  # kept for rows up to this many units (at most 13 MB in all)


def _sorted_human(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """`_sorted_ranks` of a human row, kept for the last `_SORTED_ROWS` rows: every metric
    is counted against the same human rows, which need sorting once."""
    if x.size > _SORTED_UNITS:
        return _sorted_ranks(x)
    key = x.tobytes()
    kept = _SORTED_HUMAN.get(key)
    if kept is not None:
        _SORTED_HUMAN.move_to_end(key)
        return kept
    kept = _sorted_ranks(x)
    for array in kept[:3]:
        array.flags.writeable = False  # shared by every later caller
    _SORTED_HUMAN[key] = kept
    if len(_SORTED_HUMAN) > _SORTED_ROWS:
        _SORTED_HUMAN.popitem(last=False)
    return kept


def _sorted_ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The sorting order of `x`, its snapped values' dense ranks (from 1) in that order,
    the mask of where a new value starts, and the number of distinct values."""
    order = np.argsort(x)
    s = x[order]
    snapped = _snap_sorted(s, np.abs(s), True)
    if snapped is not None:
        s = snapped
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    np.not_equal(s[1:], s[:-1], out=new[1:])
    ranks = np.cumsum(new, dtype=np.intp)
    return order, ranks, new, int(ranks[-1])


def _run_pairs(new: np.ndarray) -> int:
    """Pairs within runs of a sorted sequence, given where each run starts."""
    return _pairs_in(_run_sizes(new))


def _pairs_in(sizes: np.ndarray) -> int:
    """Pairs within runs of these sizes."""
    return int((sizes * (sizes - 1)).sum()) // 2


def _discordant(x: np.ndarray, y: np.ndarray) -> int:
    """Pairs with x_i < x_j and y_i > y_j, for units in nondecreasing x (ranks from 1).

    scipy's compiled count where scipy.stats is loaded already or the row is long enough
    to repay importing it (0.4 s: the radix count costs 10 ms more on 30,000 units, 170 ms
    on 262,144); else, after ordering ties of x by y, `few_value_inversions` where y has
    at most `_FEW_VALUES` values (human ratings, MQM scores) and the radix `inversions`
    otherwise."""
    if "scipy.stats" in sys.modules or x.size >= _COMPILED_DISCORDANT:
        try:
            from scipy.stats._stats import _kendall_dis
        except ImportError:  # a private kernel: where it is gone, the radix count serves
            pass
        else:
            return int(_kendall_dis(np.require(x, requirements="W"), y))  # a kept row: read-only
    # ties of x in y order; x is sorted already, so the sort of the joint key is nearly free
    top = int(y.max())
    order = np.argsort(x.astype(np.int64) * (top + 1) + y, kind="stable")
    if top <= _FEW_VALUES:
        return few_value_inversions(y[order] - 1, top)
    return int(inversions(y[order] - 1)[0])


def few_value_inversions(values: IntArray, n_values: int) -> int:
    """Pairs of positions i < j with values[i] > values[j], for integer `values` in
    [0, n_values) with few distinct values (up to `_FEW_VALUES`): O(n (s + K / s)) for
    blocks of s = 16 positions and K values, 2-4x fewer numpy passes than the radix
    `inversions` at K <= 64.

    A pair within a block of s consecutive positions is compared directly (one s x s
    comparison per block); a pair across blocks counts from per-block histograms: a value v
    of block b is below every value above v in blocks before b.
    """
    n, s = values.size, _BLOCK
    b = -(-n // s)
    padded = np.full(b * s, n_values, dtype=np.int8)  # above every value: no pair counts
    padded[:n] = values
    blocks = padded.reshape(b, s)
    greater = blocks[:, :, None] > blocks[:, None, :]
    greater &= _UPPER
    width = n_values + 1
    hist = np.bincount((np.arange(0, b * width, width)[:, None] + blocks).reshape(-1),
                       minlength=b * width).reshape(b, width)
    above = np.cumsum(hist[:, :0:-1], axis=1)[:, ::-1]  # [b, v]: values above v in block b
    before = np.cumsum(above[:-1], axis=0)  # [b, v]: values above v in blocks up to b
    return int(np.count_nonzero(greater)) + int(np.vdot(hist[1:, :-1], before))


def pair_counts(*, human: np.ndarray, metric: np.ndarray, epsilon: float = 0.0,
                groups: np.ndarray | None = None) -> PairCounts:
    """Concordant/discordant/tied pair counts per group (one group when `groups` is None).

    Units with a missing (NaN) human or metric score are dropped first. At epsilon 0 the
    counts come from `exact_pair_counts` (O(n log n)), otherwise from `SortedUnits`.
    """
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    if epsilon < 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon}")
    ok = np.isfinite(human) & np.isfinite(metric)
    gid = None
    n_groups = 1
    if groups is not None:
        labels, gid = np.unique(np.asarray(groups), return_inverse=True)
        n_groups = labels.size
        gid = gid.reshape(-1)[ok]
    if epsilon == 0:
        exact = exact_pair_counts(human=human[ok], metric=metric[ok], groups=gid)
        if gid is None:
            return exact
        fields = []
        for arr in (exact.concordant, exact.discordant, exact.ties_human,
                    exact.ties_metric, exact.ties_both, exact.units):
            out = np.zeros(n_groups, dtype=np.int64)
            out[:arr.size] = arr  # groups after the last one with a unit get zero counts
            fields.append(out)
        return PairCounts(*fields)
    units = SortedUnits(human=human[ok], metric=metric[ok], groups=gid)
    counts = units.counts(epsilon)
    if groups is None and units.n == 0:
        zero = np.zeros(1, dtype=np.int64)
        return PairCounts(zero, zero, zero, zero, zero, zero)
    if gid is not None and n_groups != counts.units.size:
        # Groups that lost all their units to missing values get zero counts.
        present = np.unique(gid)
        full = []
        for arr in (counts.concordant, counts.discordant, counts.ties_human,
                    counts.ties_metric, counts.ties_both, counts.units):
            out = np.zeros(n_groups, dtype=np.int64)
            out[present] = arr
            full.append(out)
        return PairCounts(*full)
    return counts
