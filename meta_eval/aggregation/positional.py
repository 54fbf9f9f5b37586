"""Score-averaging and positional rules over a profile (voters scoring systems).

With weights w_v (a voter of weight w casts w votes, Rofin et al. 2023, Vote'n'Rank) and
oriented scores x_vi (higher is better):

- mean:            sum_v w_v x_vi / sum_v w_v
- geometric mean:  exp(sum_v w_v log x'_vi / sum_v w_v), x' = x for higher-is-better
                   voters and 1/x for lower-is-better ones (scores must be positive)
- median:          the weighted median of x_vi over v
- plurality:       sum_v w_v [i is v's top system] / (number of systems tied at v's top)
- Borda:           sum_v w_v (#systems v ranks below i + #systems tied with i / 2)
                   (de Borda 1781; ties get the average of the tied positions' points)
- Dowdall:         sum_v w_v / position_v(i)  (Reilly 2002, the Nauru rule); tied systems
                   share the mean of 1/p over the positions they occupy

Missing scores: a voter ranks only the systems it scored. mean, geometric mean and median
average a system over the voters that scored it; plurality, Borda and Dowdall give a system
no points from a voter that did not score it (so a partial ballot gives fewer Borda points:
#beaten among the systems it scored).
"""

from __future__ import annotations

import numpy as np

from meta_eval.aggregation.base import NotApplicable, RuleResult, data_kind, scored_result
from meta_eval.aggregation.profile import Profile


def _profile(data: object, rule: str) -> Profile:
    if not isinstance(data, Profile):
        raise NotApplicable(
            f"rule '{rule}' needs voters that score systems (a leaderboard or a scores "
            f"table), got {data_kind(data)} data"
        )
    return data


def _weighted_mean(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    present = ~np.isnan(values)
    w = np.where(present, weights[:, None], 0.0)
    total = w.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (np.nan_to_num(values) * w).sum(axis=0) / total, np.nan)


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


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
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


def voter_points(p: Profile, rule: str) -> np.ndarray:
    """Points each voter gives each system under a positional rule (voters x systems):
    'plurality', 'borda' or 'dowdall'. Linear in the voter weights, which lets
    `weights_to_win` solve for them."""
    better, tied = p.positions
    scored = p.scored
    n_scored = scored.sum(axis=1, keepdims=True)
    if rule == "plurality":
        points = (better == 0) / (tied + 1.0)
    elif rule == "borda":
        points = (n_scored - 1 - better - tied) + 0.5 * tied
    elif rule == "dowdall":
        harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, p.n_systems + 1))))
        first = better + 1  # best position the tie group occupies
        points = (harmonic[first + tied] - harmonic[first - 1]) / (tied + 1.0)
    else:
        raise ValueError(f"no positional rule '{rule}'")
    return np.where(scored, points, 0.0)


def _positional(data: object, rule: str) -> RuleResult:
    p = _profile(data, rule)
    points = p.weights @ voter_points(p, rule)
    points = np.where(p.present, points, np.nan)
    return scored_result(rule, p.systems, points)


def plurality(data: Profile) -> RuleResult:
    """Weighted count of first places; a tie at the top splits the vote."""
    return _positional(data, "plurality")


def borda(data: Profile) -> RuleResult:
    """Weighted Borda count (#systems ranked below, ties counted half)."""
    return _positional(data, "borda")


def dowdall(data: Profile) -> RuleResult:
    """Weighted Dowdall (harmonic Borda) count: 1/position."""
    return _positional(data, "dowdall")
