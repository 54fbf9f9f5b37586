"""Sequential, budget-aware meta-evaluation with anytime-valid confidence sequences.

At segment level grouped by item, a statistic is the mean over items of a per-item value
v_i(M) in [-1, 1] (a correlation across the item's systems). For two metrics A and B the
per-item difference d_i = v_i(A) - v_i(B) lies in [-2, 2]; with items taken in random order
the d_i are i.i.d. draws whose mean is the population difference mu_AB. Rescaled to
x_i = (d_i + 2) / 4 in [0, 1], each pair gets the hedged betting confidence sequence with
predictable plug-in bets of Waudby-Smith and Ramdas (2024, "Estimating means of bounded
random variables by betting", JRSS-B 86(1), Theorem 3 and Sec. 5.2, "PrPl-Hedged"):

    mu_t = (1/2 + sum_{i<=t} x_i) / (t + 1),  s2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)
    l_t = sqrt(2 log(2/a) / (s2_{t-1} t log(1 + t)))
    K_t^+(m) = prod_{i<=t} (1 + min(l_i, c/m) (x_i - m))
    K_t^-(m) = prod_{i<=t} (1 - min(l_i, c/(1 - m)) (x_i - m))
    C_t = {m in [0, 1] : max(theta K_t^+(m), (1 - theta) K_t^-(m)) < 1/a}

with c = 1/2 and theta = 1/2, intersected over time; P(mu is outside C_t for some t) <= a
(Ville's inequality: the maximum is at most theta K^+(mu) + (1 - theta) K^-(mu), a
nonnegative martingale of mean 1 at the true mean). K^+ falls and K^- rises with m, so C_t
is an interval; it is found on a grid of m (`GRID` points over [0, 1]), each bound widened
to the next grid point outside it, so the grid only makes it wider. Where the d_i vary far
less than their range (per-item correlations of two metrics usually differ by a few
tenths), a bet may grow to c / m, about 1, where the empirical-Bernstein sequence of the
same paper (Theorem 2, `eb_confidence_sequence`, the form before) caps it at c = 1/2 for
every m; on SummEval's 100 items (ROUGE-1 against a random judge) the hedged sequence is
about half as wide.
`form="eb"` keeps the empirical-Bernstein one. With k metrics every pair's sequence is at
a = alpha / (k (k - 1) / 2) (Bonferroni), so with probability >= 1 - alpha every decision
made at any stopping time is right, however the stopping time was chosen.

Decisions, checked after each batch: A > B once the lower bound of mu_AB exceeds 0;
"equivalent" once the sequence lies inside [-margin, margin]; otherwise undecided. The study
stops when every pair is decided (clusters settled: the WMT walk on the decided pairs), or,
with `top_k`, when each of the k best is decided better than every other metric, or when the
items run out. Items with an undefined value for a pair are skipped for that pair.

Order: `random` (seeded; the guarantee above holds), `given` (the caller's order, which it
drew at random: `score --until-settled`) or `greedy` (items whose metrics disagree
most about the order of the systems first: it needs only the metrics' scores, not the people's,
and usually stops sooner, but the items are then not an i.i.d. sample: no guarantee,
`anytime_valid` False).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


def eb_confidence_sequence(x: np.ndarray, alpha: float, *, cap: float = 0.5
                           ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of the running-intersection PrPl-EB confidence sequence for the mean of
    x in [0, 1] after each observation (module docstring)."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n == 0:
        return np.zeros(0), np.zeros(0)
    t = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(x)) / (t + 1)
    mu_prev = np.concatenate([[0.5], mu[:-1]])
    s2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    s2_prev = np.concatenate([[0.25], s2[:-1]])
    log_term = math.log(2 / alpha)
    lam = np.minimum(np.sqrt(2 * log_term / (s2_prev * t * np.log1p(t))), cap)
    psi = (-np.log1p(-lam) - lam) / 4
    v = 4 * (x - mu_prev) ** 2
    weight = np.cumsum(lam)
    centre = np.cumsum(lam * x) / weight
    width = (log_term + np.cumsum(v * psi)) / weight
    lower = np.maximum.accumulate(np.maximum(centre - width, 0.0))
    upper = np.minimum.accumulate(np.minimum(centre + width, 1.0))
    return lower, upper


#: Points of the grid of candidate means m in [0, 1] the betting sequence is computed on.
GRID = 2001
FORMS = ("betting", "eb")
def betting_confidence_sequence(x: np.ndarray, alpha: float, *, c: float = 0.5,
                                theta: float = 0.5, grid: int = GRID
                                ) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of the running-intersection hedged betting confidence sequence
    (PrPl-Hedged) for the mean of x in [0, 1] after each observation (module docstring).

    The capital is carried only for the grid points still inside the running intersection
    (and the one just outside each end, the widened bound): a point outside it stays
    outside, so the bounds are those of the whole grid, at a cost that shrinks with the
    interval."""
    x = np.asarray(x, dtype=float)
    n = x.size
    if n == 0:
        return np.zeros(0), np.zeros(0)
    t = np.arange(1, n + 1)
    mu = (0.5 + np.cumsum(x)) / (t + 1)
    s2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    s2_prev = np.concatenate([[0.25], s2[:-1]])
    bet = np.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * np.log1p(t)))
    m = np.linspace(0.0, 1.0, grid)
    with np.errstate(divide="ignore"):
        cap_up, cap_down = c / m, c / (1 - m)
    threshold, log_theta, log_rest = math.log(1 / alpha), math.log(theta), math.log(1 - theta)
    log_up, log_down = np.zeros(grid), np.zeros(grid)
    lows, highs = np.zeros(n), np.ones(n)
    first, last = 0, grid - 1  # the grid points still carried
    state = (0.0, 1.0)
    start, size = 0, 8
    while start < n:
        rows, cols = slice(start, min(n, start + size)), slice(first, last + 1)
        gap = x[rows, None] - m[None, cols]
        up = log_up[cols] + np.cumsum(
            np.log1p(np.minimum(bet[rows, None], cap_up[None, cols]) * gap), axis=0)
        down = log_down[cols] + np.cumsum(
            np.log1p(-np.minimum(bet[rows, None], cap_down[None, cols]) * gap), axis=0)
        log_up[cols], log_down[cols] = up[-1], down[-1]
        kept = np.maximum(log_theta + up, log_rest + down) < threshold
        some = kept.any(axis=1)  # no point kept (only where coverage failed): says nothing
        below = np.maximum(first + kept.argmax(axis=1) - 1, 0)  # widened to the point outside
        above = np.minimum(last - kept[:, ::-1].argmax(axis=1) + 1, grid - 1)
        low, high, state = _intersected(np.where(some, m[below], 0.0),
                                        np.where(some, m[above], 1.0), state)
        lows[rows], highs[rows] = low, high
        first = max(first, round(state[0] * (grid - 1)))
        last = min(last, round(state[1] * (grid - 1)))
        start, size = rows.stop, min(2 * size, 512)
    return lows, highs


def _intersected(lows: np.ndarray, highs: np.ndarray, state: tuple[float, float] = (0.0, 1.0)
                 ) -> tuple[np.ndarray, np.ndarray, tuple[float, float]]:
    """The running intersection of the intervals [lows_t, highs_t], starting from `state`,
    and the last one; a time whose interval would empty it (possible only where the
    sequence already missed the mean) is passed over."""
    low = np.maximum.accumulate(np.maximum(lows, state[0]))
    high = np.minimum.accumulate(np.minimum(highs, state[1]))
    if not np.all(low <= high):
        low, high = lows.copy(), highs.copy()
        a, b = state
        for t in range(lows.size):
            if max(a, lows[t]) <= min(b, highs[t]):
                a, b = max(a, lows[t]), min(b, highs[t])
            low[t], high[t] = a, b
    return low, high, (float(low[-1]), float(high[-1]))


@dataclass(frozen=True)
class PairDecision:
    better: str
    worse: str
    decision: str  # "better", "equivalent" or "undecided"
    low: float  # bounds of mean(v(better) - v(worse)) when it was decided (or at the end)
    high: float
    at: int | None  # items seen when it was decided

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.better, "against": self.worse, "decision": self.decision,
                "low": self.low, "high": self.high, "decided_at": self.at}


CS_NAMES = {"betting": "hedged betting, predictable plug-in (Waudby-Smith & Ramdas 2024, "
                        "Theorem 3; c=1/2, theta=1/2)",
            "eb": "predictable plug-in empirical Bernstein (Waudby-Smith & Ramdas 2024, "
                  "Theorem 2)"}


@dataclass(frozen=True)
class SequentialResult:
    names: list[str]
    order: str
    items_total: int
    items_used: int
    settled: bool
    means: dict[str, float]
    decisions: list[PairDecision]
    clusters: dict[str, int] = field(default_factory=dict)
    alpha: float = 0.05
    margin: float = 0.0
    top_k: int | None = None
    #: the items in the order they were taken (positions in the input)
    item_order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    form: str = "betting"

    @property
    def exhausted(self) -> bool:
        """Every item was used and the answer is still not settled."""
        return not self.settled and self.items_used == self.items_total

    @property
    def items_saved(self) -> int:
        return self.items_total - self.items_used

    def to_dict(self) -> dict[str, Any]:
        return {"order": self.order, "anytime_valid": self.order != "greedy",
                "items_total": self.items_total, "items_used": self.items_used,
                "items_saved": self.items_saved, "settled": self.settled,
                "exhausted": self.exhausted, "confidence_sequence": CS_NAMES[self.form],
                "alpha": self.alpha, "margin": self.margin, "top_k": self.top_k,
                "decisions": [d.to_dict() for d in self.decisions]}


def greedy_order(metrics: np.ndarray) -> np.ndarray:
    """Items most disagreed about first: per item, the mean over metric pairs of 1 - the
    Spearman correlation of their scores across the item's systems (metrics only)."""
    from meta_eval.statistics import group_values

    k, items = metrics.shape[0], metrics.shape[1]
    disagreement = np.zeros(items)
    pairs = 0
    for a, b in itertools.combinations(range(k), 2):
        r = group_values("spearman", human=metrics[a], metric=metrics[b])
        disagreement += np.nan_to_num(1 - r, nan=0.0)
        pairs += 1
    return np.argsort(-disagreement / max(pairs, 1), kind="stable")


class _Pair:
    """One pair's confidence sequence for mean(v_a - v_b), by items seen."""

    def __init__(self, d: np.ndarray, alpha: float, form: str = "betting") -> None:
        seen = np.isfinite(d)
        sequence = betting_confidence_sequence if form == "betting" else eb_confidence_sequence
        self.lower, self.upper = sequence((d[seen] + 2) / 4, alpha)
        self.counted = np.cumsum(seen)

    def bounds(self, at: int) -> tuple[float, float]:
        m = int(self.counted[at - 1]) if at else 0
        if m == 0:
            return -2.0, 2.0
        return 4 * float(self.lower[m - 1]) - 2, 4 * float(self.upper[m - 1]) - 2

    def state(self, at: int, margin: float) -> str:
        low, high = self.bounds(at)
        if low > 0:
            return "better"
        if high < 0:
            return "worse"
        if margin > 0 and -margin <= low and high <= margin:
            return "equivalent"
        return "undecided"


def sequential_clusters(values: np.ndarray, names: list[str], *, alpha: float = 0.05,
                        margin: float = 0.0, batch: int = 10, top_k: int | None = None,
                        order: str = "random", seed: int = 0,
                        metric_scores: np.ndarray | None = None, form: str = "betting"
                        ) -> SequentialResult:
    """Run the sequential procedure on per-item values (items x metrics, in [-1, 1]; NaN
    undefined) and return when it would have stopped (module docstring). `metric_scores`
    (metrics x items x systems) orders the items for `greedy`; `form`: the confidence
    sequence, "betting" (hedged, the default) or "eb" (empirical Bernstein)."""
    v = np.asarray(values, dtype=float)
    n, k = v.shape
    if k < 2:
        raise ValueError("the sequential procedure compares two or more metrics")
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, not {form!r}")
    if order == "random":
        permutation = np.random.default_rng(seed).permutation(n)
    elif order == "given":  # already random: `score --until-settled` draws it
        permutation = np.arange(n)
    elif order == "greedy":
        if metric_scores is None:
            raise ValueError("greedy order needs the metrics' scores")
        permutation = greedy_order(metric_scores)
    else:
        raise ValueError(f"order must be random, given or greedy, not {order!r}")
    v = v[permutation]
    per_pair = alpha / (k * (k - 1) / 2)
    checks = np.unique(np.append(np.arange(batch, n + 1, batch), n))
    pairs = {(a, b): _Pair(v[:, a] - v[:, b], per_pair, form)
             for a, b in itertools.combinations(range(k), 2)}
    finite = np.isfinite(v)
    sums, counts = np.cumsum(np.where(finite, v, 0.0), axis=0), np.cumsum(finite, axis=0)

    def ranked_at(at: int) -> list[int]:
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums[at - 1] / counts[at - 1]
        return sorted(range(k), key=lambda j: (-np.nan_to_num(means[j], nan=-9.0), j))

    def beats(at: int, a: int, b: int) -> bool:
        pair, sign = ((a, b), "better") if a < b else ((b, a), "worse")
        return pairs[pair].state(at, margin) == sign

    stop, settled = n, False
    for at in checks:
        if top_k is not None:
            ranked = ranked_at(int(at))
            done = all(beats(int(at), a, b) for a in ranked[:top_k] for b in ranked[top_k:])
        else:
            done = all(p.state(int(at), margin) != "undecided" for p in pairs.values())
        if done:
            stop, settled = int(at), True
            break
    decisions = []
    for (a, b), pair in pairs.items():
        state = pair.state(stop, margin)
        when = next((int(at) for at in checks if at <= stop
                     and pair.state(int(at), margin) == state), None) \
            if state != "undecided" else None
        low, high = pair.bounds(stop)
        if state == "worse":
            decisions.append(PairDecision(names[b], names[a], "better", -high, -low, when))
        else:
            decisions.append(PairDecision(names[a], names[b], state, low, high, when))
    ranked = ranked_at(stop)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = {names[j]: float(sums[stop - 1, j] / counts[stop - 1, j]) for j in range(k)}
    clusters, cluster, first = {}, 1, 0
    for i, j in enumerate(ranked):
        if any(beats(stop, better, j) for better in ranked[first:i]):
            cluster, first = cluster + 1, i
        clusters[names[j]] = cluster
    return SequentialResult(names, order, n, stop, settled, means, decisions, clusters,
                            alpha, margin, top_k, permutation, form)
