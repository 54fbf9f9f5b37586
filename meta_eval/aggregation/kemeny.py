"""Kemeny-Young: the ordering that agrees with the most pairwise preferences.

Kemeny (1959), Young & Levenglick (1978). With support[i, j] = strict[i, j] + ties[i, j]/2
(the voting weight preferring i to j, ties half), the Kemeny ordering maximises

    A(order) = sum over pairs with i placed before j of support[i, j],

which is the same as minimising the weighted Kendall tau distance to the ballots.

Exact: a dynamic programme over subsets (Held-Karp style). With f(S) the best agreement of
an ordering of the set S placed at the top,

    f(S) = max over k in S of f(S minus k) + sum over j outside S of support[k, j],

O(2^n n) time and memory, used up to DP_SYSTEMS = 16 systems (tens of milliseconds).

Beyond, exact by the linear-ordering integer programme (Grötschel, Jünger & Reinelt 1984),
solved by scipy.optimize.milp (HiGHS) with no optimality gap: y_ij in {0, 1} for i < j
(1: i placed before j), maximise sum over i < j of support[i, j] y_ij + support[j, i]
(1 - y_ij), subject to transitivity, 0 <= y_ij + y_jk - y_ik <= 1 for every i < j < k.
Exact up to `max_exact` systems (default 64) when HiGHS proves optimality within
MILP_SECONDS; otherwise, or past `max_exact`, a stated approximation: starting from the
Borda order, single systems move to their best position until no move improves the
agreement (a local optimum).

Ties: the ordering is strict, but adjacent systems with equal support both ways
(support[i, j] == support[j, i]) that are all mutually so share a tier, since any order
among them is equally optimal. The note gives the number of optimal orderings, and the
winners are every system that comes first in some optimal ordering (exact case). The
integer programme finds the same winners (system k heads an optimal ordering when the
programme with k fixed first reaches the optimum; k is skipped when even the bound
"k first, every other pair its better way" falls short) and tells one optimal ordering from
several (a second solve excluding the first), not how many.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse

from meta_eval.aggregation.base import RuleResult
from meta_eval.aggregation.majority import _absent_last, _counts, _sub

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray, IntArray

DP_SYSTEMS = 16  # the dynamic programme up to this many systems, the integer programme beyond:
# the faster of the two for the whole rule, with winners and uniqueness, at 4..15 and at 17+
# systems; at 16 they are within 1.3x either way (`bench_speed.py kemeny-sizes`)
MAX_EXACT = 64
HARD_LIMIT = 20  # most systems the dynamic programme accepts
MILP_SECONDS = 10.0  # time limit of each integer programme solve


def agreement(support: FloatArray, order: IntArray | list[int]) -> float:
    """A(order): the support the ordering agrees with."""
    order = np.asarray(order)
    placed = support[np.ix_(order, order)]
    return float(np.triu(placed, 1).sum())


def kemeny_dp(support: FloatArray, *, rtol: float = 1e-9
              ) -> tuple[list[int], float, int, list[int]]:
    """Exact Kemeny ordering by dynamic programming over subsets.

    Returns (one optimal order best first, its agreement, the number of optimal orderings,
    the systems that come first in some optimal ordering)."""
    n = support.shape[0]
    if n == 0:
        return [], 0.0, 1, []
    if n > HARD_LIMIT:
        raise ValueError(f"exact Kemeny over {n} systems needs 2^{n} states; at most "
                         f"{HARD_LIMIT}")
    size = 1 << n
    rowsum = support.sum(axis=1)
    # inside[mask, k] = sum of support[k, j] over j in mask, built one bit at a time
    inside = np.zeros((size, n))
    for bit in range(n):
        half = 1 << bit
        inside[half:2 * half] = inside[:half] + support[:, bit]
    popcount = np.zeros(size, dtype=np.int64)
    for bit in range(n):
        popcount[1 << bit:2 << bit] = popcount[:1 << bit] + 1
    best = np.full(size, -np.inf)
    best[0] = 0.0
    ways = np.zeros(size)
    ways[0] = 1.0
    choice = np.full(size, -1, dtype=np.int64)
    scale = max(1.0, float(np.abs(support).sum()))
    layers = [np.flatnonzero(popcount == c) for c in range(n + 1)]
    for c in range(1, n + 1):
        masks = layers[c]
        layer_best = np.full(len(masks), -np.inf)
        layer_ways = np.zeros(len(masks))
        layer_choice = np.full(len(masks), -1, dtype=np.int64)
        # f(S) takes k as the last of S placed (the one just above everything outside S)
        for k in range(n):
            has = (masks >> k) & 1 == 1
            rows = np.flatnonzero(has)
            before = masks[rows] ^ (1 << k)
            value = best[before] + rowsum[k] - inside[before, k] - support[k, k]
            current = layer_best[rows]
            better = value > current + rtol * scale
            same = np.abs(value - current) <= rtol * scale
            layer_ways[rows] = np.where(better, ways[before],
                                        np.where(same, layer_ways[rows] + ways[before],
                                                 layer_ways[rows]))
            layer_choice[rows] = np.where(better, k, layer_choice[rows])
            layer_best[rows] = np.where(better, value, current)
        best[masks] = layer_best
        ways[masks] = layer_ways
        choice[masks] = layer_choice
    order: list[int] = []
    mask = size - 1
    while mask:
        k = int(choice[mask])
        order.append(k)
        mask ^= 1 << k
    order.reverse()
    # k first, then the best order of the rest: rowsum[k] + f(rest) - sum_i support[i, k]
    full = size - 1
    optimum = best[full]
    heads = [k for k in range(n)
             if rowsum[k] + best[full ^ (1 << k)] - (support[:, k].sum() - support[k, k])
             >= optimum - rtol * scale]
    return order, agreement(support, order), round(float(ways[full])), heads


def kemeny_local_search(support: FloatArray, start: list[int], *, max_passes: int = 1000
                        ) -> tuple[list[int], float]:
    """Improve an ordering by moving one system at a time to its best position, until no
    move increases the agreement (a local optimum of the insertion neighbourhood)."""
    order = list(start)
    net = support - support.T  # net[x, y]: gain of putting x above y instead of below
    for _ in range(max_passes):
        improved = False
        for x in list(order):
            p = order.index(x)
            rest = order[:p] + order[p + 1:]
            d = net[x, rest]
            # placing x at position q of `rest`: x is above rest[q:], below rest[:q]
            values = -np.concatenate(([0.0], np.cumsum(d)))  # up to a constant
            q = int(np.argmax(values))
            if values[q] > values[p] + 1e-12 * max(1.0, float(np.abs(d).sum())):
                rest.insert(q, x)
                order = rest
                improved = True
        if not improved:
            break
    return order, agreement(support, order)


class _LinearOrdering:
    """The linear-ordering integer programme of a support matrix (module docstring)."""

    def __init__(self, support: FloatArray, seconds: float):
        from scipy.optimize import LinearConstraint

        n = support.shape[0]
        self.n, self.support, self.seconds = n, support, seconds
        self.iu, self.ju = np.triu_indices(n, 1)
        index = np.full((n, n), -1)
        index[self.iu, self.ju] = np.arange(self.iu.size)
        self.index = index
        # Maximise sum (support[i, j] - support[j, i]) y_ij, i.e. minimise its negative.
        self.cost = -(support[self.iu, self.ju] - support[self.ju, self.iu])
        self.base = float(support[self.ju, self.iu].sum())
        i, j, k = (a.ravel() for a in np.meshgrid(*(np.arange(n),) * 3, indexing="ij"))
        keep = (i < j) & (j < k)
        i, j, k = i[keep], j[keep], k[keep]
        rows = np.repeat(np.arange(i.size), 3)
        cols = np.stack([index[i, j], index[j, k], index[i, k]], axis=1).ravel()
        vals = np.tile([1.0, 1.0, -1.0], i.size)
        matrix = scipy.sparse.csr_array((vals, (rows, cols)), shape=(i.size, self.iu.size))
        self.constraints = [LinearConstraint(matrix, 0.0, 1.0)] if i.size else []

    def solve(self, lower: FloatArray, upper: FloatArray,
              extra: list | None = None) -> tuple[FloatArray, float] | None:
        """The best y within the bounds (and extra constraints), with its agreement;
        None when HiGHS does not prove optimality in time (or nothing is feasible)."""
        from scipy.optimize import Bounds, milp

        if self.iu.size == 0:
            return np.zeros(0), self.base
        result = milp(self.cost, integrality=np.ones(self.iu.size, dtype=np.int64),
                      bounds=Bounds(lower, upper), constraints=self.constraints + (extra or []),
                      options={"time_limit": self.seconds, "mip_rel_gap": 0.0})
        if result.status != 0:
            return None
        y = np.round(result.x)
        return y, self.base - float(self.cost @ y)

    def order(self, y: FloatArray) -> list[int]:
        """The ordering of a transitive y: a system's place is the number placed above it."""
        above = np.zeros((self.n, self.n))
        above[self.iu, self.ju] = y
        above[self.ju, self.iu] = 1 - y
        return [int(k) for k in np.argsort(above.sum(axis=0), kind="stable")]

    def first(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Bounds that put system k above every other."""
        lower, upper = np.zeros(self.iu.size), np.ones(self.iu.size)
        for j in range(self.n):
            if j != k:
                value = 1.0 if k < j else 0.0
                lower[self.index[min(k, j), max(k, j)]] = upper[
                    self.index[min(k, j), max(k, j)]] = value
        return lower, upper


def kemeny_milp(support: FloatArray, *, seconds: float = MILP_SECONDS, rtol: float = 1e-9
                ) -> tuple[list[int], float, bool, bool, list[int]] | None:
    """Exact Kemeny ordering by the linear-ordering integer programme (module docstring).

    Returns (one optimal order best first, its agreement, whether it is the only optimal
    ordering, whether that was decided, the systems that come first in some optimal
    ordering), or None when HiGHS does not prove the optimum within `seconds`."""
    from scipy.optimize import LinearConstraint

    n = support.shape[0]
    program = _LinearOrdering(support, seconds)
    free = (np.zeros(program.iu.size), np.ones(program.iu.size))
    solved = program.solve(*free)
    if solved is None:
        return None
    y, value = solved
    order = program.order(y)
    value = agreement(support, order)
    scale = max(1.0, float(np.abs(support).sum()))
    tol = rtol * scale
    # Orderings one move away from this one that are also optimal: their heads are heads,
    # and any of them shows the optimum is not unique.
    moved_top = [agreement(support, [k, *(j for j in order if j != k)]) for k in range(n)]
    heads = [k for k in range(n) if moved_top[k] >= value - tol]
    several = len(heads) > 1 or any(
        support[a, b] == support[b, a] for a, b in itertools.pairwise(order))
    # Bounds on an ordering headed by k: every other pair its better way; and (inserting k
    # back into the best ordering of the rest at the top or bottom) opt - max(0, in - out).
    best_way = np.maximum(support, support.T)
    pairs_best = float(np.triu(best_way, 1).sum())
    out_k = support.sum(axis=1) - np.diag(support)
    in_k = support.sum(axis=0) - np.diag(support)
    for k in range(n):
        if k in heads:
            continue
        bound = min(pairs_best - float((best_way[k] - support[k]).sum()),
                    value - max(0.0, float(in_k[k] - out_k[k])))
        if bound < value - tol:
            continue
        headed = program.solve(*program.first(k))
        if headed is None:
            return None
        if headed[1] >= value - tol:
            heads.append(k)
            several = True
    if several or n < 2:
        return order, value, not several, True, sorted(heads)
    # Another optimal ordering? The best y differing from this one in at least one pair.
    differs = LinearConstraint(np.where(y == 1, -1.0, 1.0)[None], 1 - float(y.sum()), np.inf)
    other = program.solve(*free, extra=[differs])  # n >= 2: another ordering exists
    if other is None:
        return order, value, False, False, sorted(heads)
    return order, value, other[1] < value - tol, True, sorted(heads)


def kemeny(data: object, max_exact: int = MAX_EXACT) -> RuleResult:
    """Kemeny-Young ranking: exact by dynamic programme up to DP_SYSTEMS systems and by the
    integer programme up to `max_exact`, else an approximation (Borda start + insertion
    local search), flagged exact=False."""
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    support = c.support
    n = support.shape[0]
    solved = None
    if n <= min(int(max_exact), DP_SYSTEMS, HARD_LIMIT):
        order, value, optimal, heads = kemeny_dp(support)
        exact = True
        note = (f"exact (dynamic programme over subsets); agreement {value:g}; "
                f"{optimal} optimal ordering{'s' if optimal != 1 else ''}")
    elif n <= max_exact and (solved := kemeny_milp(support, seconds=MILP_SECONDS)) is not None:
        order, value, unique, decided, heads = solved
        exact = True
        how = ("1 optimal ordering" if unique else "several optimal orderings") if decided \
            else "number of optimal orderings not decided in time"
        note = (f"exact (linear-ordering integer programme, HiGHS); agreement {value:g}; "
                f"{how}")
    else:
        start = list(np.argsort(-support.sum(axis=1), kind="stable"))
        order, value = kemeny_local_search(support, start)
        heads = []
        exact = False
        why = (f"{n} systems > max_exact={max_exact}" if n > max_exact else
               f"the integer programme over {n} systems did not finish in {MILP_SECONDS:g} s")
        note = (f"approximate: {why}; Borda start + insertion "
                f"local search; agreement {value:g} (a local optimum, may not be the best)")
    tiers: list[list[str]] = []
    group: list[int] = []
    for k in order:
        if group and all(support[k, g] == support[g, k] for g in group):
            group.append(k)
        else:
            if group:
                tiers.append(sorted(c.systems[g] for g in group))
            group = [k]
    if group:
        tiers.append(sorted(c.systems[g] for g in group))
    tier_tuple = tuple(tuple(t) for t in tiers)
    winners = tuple(sorted(c.systems[k] for k in heads)) if heads else (
        tier_tuple[0] if tier_tuple else ())
    if tier_tuple and len(winners) > len(tier_tuple[0]):
        note += f"; winners: every system first in some optimal ordering ({list(winners)})"
    result = RuleResult("kemeny", tier_tuple, None, winners, exact=exact, note=note)
    return _absent_last(result, counts.systems, present)
