"""A ranking of systems with its uncertainty, from each system's estimate and the paired
differences between systems (their point and standard error, e.g. PPI++ on the per-item
differences: `meta_eval.estimation.paired_difference`).

rank_intervals    Simultaneous confidence intervals for ranks (Klein, Wright, Wieczorek 2020,
    "A joint confidence region for an overall ranking of populations", JRSS C 69(3)): for K
    systems and the m = K(K-1)/2 differences D_jk = theta_j - theta_k with estimates d_jk and
    standard errors s_jk, each pair's two-sided interval d_jk +- z s_jk is taken at the
    Bonferroni level, z = Phi^-1(1 - (1 - confidence) / (2 m)); then system k's rank
    (1 = best, higher theta better) lies in

        [1 + #{j : the interval of theta_j - theta_k lies above 0},
         K - #{j : it lies below 0}],

    for every k at once with probability at least `confidence` (asymptotically, as the
    intervals are CLT intervals). A pair without a difference (no common items) is
    undecided: it widens both intervals. `rank` is the competition rank of the point
    estimates, 1 + #{j : theta_j > theta_k}, estimates within relative 1e-12 of each other
    tied (`meta_eval.pairs.snap`, the project's rule for ranks).
corrected_clusters  The WMT significance-cluster walk (`meta_eval.significance.
    assign_clusters`) with, as its test of "j is better than k", the one-sided normal
    p-value of the paired difference, p = 1 - Phi(d_jk / s_jk) (p = 0 or 1 when s_jk = 0
    and d_jk != 0, 1/2 when both are 0): systems sorted by their estimates, a new cluster
    opens when a system is significantly worse (p <= alpha) than a member of the current
    one. The tests are not corrected for multiplicity (as in WMT); the rank intervals are.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from meta_eval.pairs import snap
from meta_eval.results import Comparison, Ranking


@dataclass(frozen=True)
class RankInterval:
    """One system's place: its estimate, its competition rank among the estimates, and the
    simultaneous interval of its true rank (1 = best)."""

    system: str
    point: float
    rank: int
    rank_low: int
    rank_high: int


def _difference(differences: Mapping[tuple[str, str], tuple[float, float]], a: str, b: str
                ) -> tuple[float, float] | None:
    """(estimate, standard error) of theta_a - theta_b, from either orientation."""
    if (a, b) in differences:
        return differences[(a, b)]
    if (b, a) in differences:
        point, se = differences[(b, a)]
        return -point, se
    return None


def _check(points: Mapping[str, float],
           differences: Mapping[tuple[str, str], tuple[float, float]]) -> None:
    for name, value in points.items():
        if not math.isfinite(value):
            raise ValueError(f"the estimate of {name!r} is {value}, not a number")
    for (a, b), (point, se) in differences.items():
        if a not in points or b not in points:
            raise ValueError(f"the difference {a!r} - {b!r} names a system without an "
                             "estimate")
        if not (math.isfinite(point) and math.isfinite(se) and se >= 0):
            raise ValueError(f"the difference {a!r} - {b!r} is {point} with standard error "
                             f"{se}: both must be finite, the error >= 0")


def rank_intervals(*, points: Mapping[str, float],
                   differences: Mapping[tuple[str, str], tuple[float, float]],
                   confidence: float = 0.95) -> list[RankInterval]:
    """Each system's simultaneous rank interval (module docstring), best estimate first.
    `points`: system -> estimate (higher is better); `differences`: (a, b) -> (estimate,
    standard error) of a minus b, one orientation per pair."""
    from scipy.stats import norm

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    _check(points, differences)
    names = list(points)
    k = len(names)
    pairs = k * (k - 1) // 2
    z = float(norm.isf((1.0 - confidence) / (2.0 * pairs))) if pairs else 0.0
    snapped = dict(zip(names, snap(np.asarray([points[n] for n in names], dtype=float)).tolist(),
                       strict=True))
    out = []
    for name in names:
        above = below = 0
        for other in names:
            found = None if other == name else _difference(differences, other, name)
            if found is None:
                continue
            d, se = found
            if d - z * se > 0:
                above += 1
            elif d + z * se < 0:
                below += 1
        rank = 1 + sum(snapped[o] > snapped[name] for o in names)
        out.append(RankInterval(name, float(points[name]), rank, 1 + above, k - below))
    return sorted(out, key=lambda r: (r.rank, r.system))


def one_sided_p(difference: float, standard_error: float) -> float:
    """P(Z >= d / s) under H0: no difference, Z standard normal; the limits where s = 0."""
    from scipy.stats import norm

    if standard_error == 0:
        return 0.0 if difference > 0 else 1.0 if difference < 0 else 0.5
    return float(norm.sf(difference / standard_error))


def corrected_clusters(*, points: Mapping[str, float],
                       differences: Mapping[tuple[str, str], tuple[float, float]],
                       items: Mapping[tuple[str, str], int] | None = None,
                       alpha: float = 0.05, statistic: str = "mean") -> Ranking:
    """The significance clusters of the systems (module docstring): `assign_clusters` over
    `points` with the paired differences' one-sided normal test. `items`: the number of
    common items of each pair (the Comparison's n). A pair without a difference is never
    significant."""
    from meta_eval.significance import assign_clusters

    _check(points, differences)
    counts = items or {}

    def test(better: str, worse: str) -> Comparison:
        found = _difference(differences, better, worse)
        n = counts.get((better, worse), counts.get((worse, better), 0))
        if found is None:
            return Comparison(statistic, "paired-normal", points[better], points[worse],
                              points[better] - points[worse], 1.0, n)
        d, se = found
        return Comparison(statistic, "paired-normal", points[better], points[worse], d,
                          one_sided_p(d, se), n)

    return assign_clusters(dict(points), test, alpha=alpha, method="paired-normal",
                           statistic=None)


def ranks_cover(intervals: Sequence[RankInterval], truth: Mapping[str, float]) -> bool:
    """Whether every true rank (competition rank of `truth`, higher better) lies in its
    interval: the event whose probability the intervals bound."""
    values = snap(np.asarray([truth[r.system] for r in intervals], dtype=float))
    true_ranks = [1 + int(np.sum(values > v)) for v in values]
    return all(r.rank_low <= t <= r.rank_high
               for r, t in zip(intervals, true_ranks, strict=True))
