"""Score-averaging and positional rules over a profile (voters scoring systems).

With weights w_v (a voter of weight w casts w votes, Rofin et al. 2023, Vote'n'Rank) and
oriented scores x_vi (higher is better):

- mean:            sum_v w_v x_vi / sum_v w_v
- geometric mean:  exp(sum_v w_v log x'_vi / sum_v w_v), x' = x for higher-is-better
                   voters and 1/x for lower-is-better ones (scores must be positive)
- median:          the weighted median of x_vi over v
- positional rules (plurality, Borda, Dowdall): a score vector s_1 >= s_2 >= ... >= s_m
  for a ballot of m systems gives the system in position p the points s_p, and the count is
  sum_v w_v points_v(i):
    plurality  s = (1, 0, ..., 0)
    Borda      s_p = m - p, i.e. #systems ranked below (de Borda 1781)
    Dowdall    s_p = 1 / p  (Reilly 2002, the Nauru rule)

Ties in a ballot (the `ties` option of every positional rule, and of Baldwin). A system with
b systems strictly above it and t others tied with it shares positions b+1 .. b+t+1; it gets

    average  (1 / (t+1)) sum_{p=b+1}^{b+t+1} s_p   (the default: the points are conserved)
    low      s_{b+t+1} = min of the tied positions' points
    high     s_{b+1}   = max of the tied positions' points

Vote'n'Rank (Rofin et al. 2023) scores Borda and plurality with `low` (pandas rank
method='max') and Dowdall with `high` (method='min'). Example, ballot A > B = C > D: Borda
gives B and C 1.5 (average), 1 (low), 2 (high); a tie A = B at the top gives each 1/2, 0, 1
plurality votes.

Missing scores: a voter ranks only the systems it scored. mean, geometric mean and median
average a system over the voters that scored it; plurality, Borda and Dowdall give a system
no points from a voter that did not score it, and use the score vector of the m systems the
voter scored (so a partial ballot gives fewer Borda points: #beaten among those m).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from meta_eval.aggregation.base import NotApplicable, RuleResult, data_kind, scored_result
from meta_eval.aggregation.profile import PairwiseCounts, Profile

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray, IntArray


def _profile(data: object, rule: str) -> Profile:
    if not isinstance(data, Profile):
        raise NotApplicable(
            f"rule '{rule}' needs voters that score systems (a leaderboard or a scores "
            f"table), got {data_kind(data)} data"
        )
    return data


def _weighted_mean(values: FloatArray, weights: FloatArray) -> FloatArray:
    """Per system (column) sum_v w_v x_v / sum_v w_v over the voters that scored it.

    Each column is divided by a power of two near its largest |x| (exact) and the weights
    are normalised first, so the sum cannot overflow even for scores near 1e308."""
    present = ~np.isnan(values)
    w = np.where(present, weights[:, None], 0.0)
    total = w.sum(axis=0)
    x = np.nan_to_num(values, nan=0.0)
    largest = np.abs(x).max(axis=0, initial=0.0)
    scale = np.exp2(np.floor(np.log2(np.where(largest > 0, largest, 1.0))))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = w / np.where(total > 0, total, 1.0)
        mean = (x / scale * share).sum(axis=0) * scale
    return np.where(total > 0, mean, np.nan)


def mean(data: Profile) -> RuleResult:
    """Weighted arithmetic mean of each system's oriented scores."""
    p = _profile(data, "mean")
    return scored_result("mean", p.systems, _weighted_mean(p.oriented, p.weights))


def geometric_mean(data: Profile) -> RuleResult:
    """Weighted geometric mean; a lower-is-better voter contributes 1/x."""
    p = _profile(data, "geometric-mean")
    if (p.scores[p.scored] <= 0).any():
        v, i = np.argwhere(p.scored & (np.nan_to_num(p.scores, nan=1.0) <= 0))[0]
        raise ValueError(
            f"geometric-mean needs positive scores; voter '{p.voters[v]}' gives system "
            f"'{p.systems[i]}' {p.scores[v, i]:g}"
        )
    with np.errstate(divide="ignore"):
        logs = np.log(p.scores)
    logs = np.where(p.higher_is_better[:, None], logs, -logs)
    return scored_result("geometric-mean", p.systems, np.exp(_weighted_mean(logs, p.weights)))


def weighted_median(values: FloatArray, weights: FloatArray) -> float:
    """The weighted median: the value where the cumulative weight reaches half the total;
    when it lands exactly on half, the mean of that value and the next (so equal weights
    give the ordinary median). NaN values are dropped; NaN if nothing is left."""
    keep = ~np.isnan(values) & (weights > 0)
    values, weights = values[keep], weights[keep]
    if len(values) == 0:
        return float("nan")
    order = np.argsort(values, kind="stable")
    values, cum = values[order], np.cumsum(weights[order])
    half = cum[-1] / 2.0
    k = int(np.searchsorted(cum, half - 1e-12 * cum[-1]))
    if abs(cum[k] - half) <= 1e-12 * cum[-1] and k + 1 < len(values):
        return float((values[k] + values[k + 1]) / 2.0)
    return float(values[k])


def median(data: Profile) -> RuleResult:
    """Weighted median of each system's oriented scores."""
    p = _profile(data, "median")
    values = np.array([weighted_median(p.oriented[:, i], p.weights) for i in range(p.n_systems)])
    return scored_result("median", p.systems, values)


TIES = ("average", "low", "high")
POSITIONAL = ("plurality", "borda", "dowdall")


def check_ties(ties: str) -> str:
    """`ties` if it is a tie convention, else a ValueError naming the allowed ones."""
    if ties not in TIES:
        raise ValueError(f"ties must be one of {', '.join(TIES)}; got {ties!r}")
    return ties


def score_vector(rule: str, m: int) -> FloatArray:
    """The points s_1..s_m of positions 1..m of a ballot of m systems under `rule`:
    plurality (1, 0, ..., 0), borda (m-1, ..., 1, 0), dowdall (1, 1/2, ..., 1/m)."""
    if rule == "plurality":
        return (np.arange(m) == 0).astype(float)
    if rule == "borda":
        return np.arange(m - 1, -1, -1, dtype=float)
    if rule == "dowdall":
        return 1.0 / np.arange(1, m + 1)
    raise ValueError(f"no positional rule '{rule}'; rules: {', '.join(POSITIONAL)}")


def tie_points(vector: FloatArray, better: IntArray | int, tied: IntArray | int,
               ties: str = "average") -> FloatArray:
    """Points of systems under the score vector s_1 >= ... >= s_m (`vector`) when a system
    has `better` systems strictly above it and `tied` others tied with it, i.e. shares
    positions better+1 .. better+tied+1: their mean (average), min (low) or max (high) of
    s_p. Element-wise over `better` and `tied` (same shape, better + tied < m)."""
    check_ties(ties)
    vector = np.asarray(vector, dtype=float)
    if (np.diff(vector) > 0).any():
        raise ValueError("a positional score vector must be non-increasing")
    better = np.asarray(better, dtype=np.int64)
    tied = np.asarray(tied, dtype=np.int64)
    if ties == "low":
        return vector[better + tied]
    if ties == "high":
        return vector[better]
    cumulative = np.concatenate(([0.0], np.cumsum(vector)))
    return (cumulative[better + tied + 1] - cumulative[better]) / (tied + 1.0)


def voter_points(p: Profile, rule: str, ties: str = "average") -> FloatArray:
    """Points each voter gives each system under a positional rule (voters x systems):
    'plurality', 'borda' or 'dowdall', the voter's ties scored by `ties` (see the module
    docstring); 0 for the systems a voter did not score. Linear in the voter weights,
    which lets `weights_to_win` solve for them."""
    check_ties(ties)
    score_vector(rule, 0)  # an unknown rule fails even on an empty profile
    better, tied = p.positions
    n_scored = p.scored.sum(axis=1)
    points = np.zeros(p.scores.shape)
    for m in np.unique(n_scored[n_scored > 0]):
        rows = n_scored == m
        points[rows] = tie_points(score_vector(rule, int(m)), better[rows], tied[rows], ties)
    return np.where(p.scored, points, 0.0)


def _positional(data: object, rule: str, ties: str) -> RuleResult:
    p = _profile(data, rule)
    points = p.weights @ voter_points(p, rule, ties)
    points = np.where(p.present, points, np.nan)
    return scored_result(rule, p.systems, points)


def plurality(data: Profile, ties: str = "average") -> RuleResult:
    """Weighted count of first places; a tie of k at the top gives each 1/k (average),
    0 (low) or 1 (high)."""
    return _positional(data, "plurality", ties)


def borda(data: Profile, ties: str = "average") -> RuleResult:
    """Weighted Borda count: #systems ranked below; a tied system gets the mean (average),
    min (low) or max (high) of its tied positions' points."""
    return _positional(data, "borda", ties)


def dowdall(data: Profile, ties: str = "average") -> RuleResult:
    """Weighted Dowdall (harmonic Borda) count: 1/position; ties as for `borda`."""
    return _positional(data, "dowdall", ties)


def borda_matrix(counts: PairwiseCounts, ties: str = "average") -> FloatArray:
    """B[i, j] = strict[i, j] + lambda ties[i, j], lambda = 1/2 (average), 0 (low), 1 (high).

    Summed over the systems j of any subset R, this is i's weighted Borda count on the
    ballots restricted to R under `ties`: with b systems of R above i and t tied with it, a
    ballot of m gives s_{b+t+1} = m-1-b-t = #below (low), s_{b+1} = #below + t (high) and
    their mean (average). Baldwin uses it to rescore the remaining systems each round."""
    share = {"average": 0.5, "low": 0.0, "high": 1.0}[check_ties(ties)]
    return counts.strict + share * counts.ties
