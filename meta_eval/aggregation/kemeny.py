"""Kemeny-Young: the ordering that agrees with the most pairwise preferences.

Kemeny (1959), Young & Levenglick (1978). With support[i, j] = strict[i, j] + ties[i, j]/2
(the voting weight preferring i to j, ties half), the Kemeny ordering maximises

    A(order) = sum over pairs with i placed before j of support[i, j],

which is the same as minimising the weighted Kendall tau distance to the ballots.

Exact: a dynamic programme over subsets (Held-Karp style). With f(S) the best agreement of
an ordering of the set S placed at the top,

    f(S) = max over k in S of f(S minus k) + sum over j outside S of support[k, j],

O(2^n n) time and memory, exact up to `max_exact` systems (default 16; about a second).
Larger sets: a stated approximation, starting from the Borda order and moving single systems
to their best position until no move improves the agreement (a local optimum).

Ties: the ordering is strict, but adjacent systems with equal support both ways
(support[i, j] == support[j, i]) that are all mutually so share a tier, since any order
among them is equally optimal. The note gives the number of optimal orderings, and the
winners are every system that comes first in some optimal ordering (exact case).
"""

from __future__ import annotations

import numpy as np

from meta_eval.aggregation.base import RuleResult
from meta_eval.aggregation.majority import _absent_last, _counts, _sub

MAX_EXACT = 16
HARD_LIMIT = 20


def agreement(support: np.ndarray, order: np.ndarray | list[int]) -> float:
    """A(order): the support the ordering agrees with."""
    order = np.asarray(order)
    placed = support[np.ix_(order, order)]
    return float(np.triu(placed, 1).sum())


def kemeny_dp(support: np.ndarray, *, rtol: float = 1e-9
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


def kemeny_local_search(support: np.ndarray, start: list[int], *, max_passes: int = 1000
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


def kemeny(data: object, max_exact: int = MAX_EXACT) -> RuleResult:
    """Kemeny-Young ranking: exact by dynamic programme up to `max_exact` systems, else an
    approximation (Borda start + insertion local search), flagged exact=False."""
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    support = c.support
    n = support.shape[0]
    if n <= min(int(max_exact), HARD_LIMIT):
        order, value, optimal, heads = kemeny_dp(support)
        exact = True
        note = (f"exact (dynamic programme over subsets); agreement {value:g}; "
                f"{optimal} optimal ordering{'s' if optimal != 1 else ''}")
    else:
        start = list(np.argsort(-support.sum(axis=1), kind="stable"))
        order, value = kemeny_local_search(support, start)
        heads = []
        exact = False
        note = (f"approximate: {n} systems > max_exact={max_exact}; Borda start + insertion "
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
