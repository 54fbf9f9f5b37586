"""System-set sensitivity: would the conclusion hold with other systems in the study?

A meta-evaluation's conclusions (which metric wins, the metrics' order, their significance
clusters) are drawn from one set of systems. Two resamplings of the systems (the columns of
the (items, systems) matrices; the items stay) re-run the analysis:

- leave-k-out: every subset without k systems (a seeded sample of `limit` of them when there
  are more), the jackknife over systems (Quenouille 1949; Tukey 1958);
- system bootstrap: `bootstrap` resamples of the systems with replacement (Efron 1979;
  Deutsch, Dror and Roth 2021, "A Statistical Analysis of Summarization Evaluation
  Metrics using Resampling Methods", who resample systems as well as inputs).

For each: the share of resamples in which the winning metric changes, the metrics' order
changes (any pair swaps), and, when `clusters` is given (a function from values and
matrices to clusters), each metric's cluster changes; the mean Kendall tau between the
resampled and the study's order; and per left-out subset (k = 1: per system) whether the
winner changes: `flips` names the systems whose leaving changes it.

Ties: values within relative 1e-12 of each other (`meta_eval.pairs.TIE_RTOL`, as every rank
statistic here) are one value. The lead of a resample is the set of metrics tied for the
best value; each of its w members is credited 1/w of that resample in `winner_share` (so
the shares sum to the share of resamples with a defined lead), `tied_share` says how often a
metric shared the lead, and the winner changes when the set differs from the study's. The
order compares every pair's sign (better, tied, worse; undefined values below every defined
one and tied with each other): it changes when a sign does, and the Kendall tau between two
orders is tau-b over those signs (tau-a where neither order has a tie).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from meta_eval.numerics import finite_or_none

Values = Callable[[np.ndarray, Mapping[str, np.ndarray]], dict[str, float]]
Clusters = Callable[[np.ndarray, Mapping[str, np.ndarray], dict[str, float]], dict[str, int]]


@dataclass(frozen=True)
class Sensitivity:
    """How often a conclusion changes over one kind of resample."""

    kind: str  # "leave-k-out" or "system-bootstrap"
    resamples: int
    winner_changed: float
    order_changed: float
    mean_kendall_tau: float
    winner_share: dict[str, float]  # metric -> share of resamples it wins (ties split)
    cluster_changed: dict[str, float] = field(default_factory=dict)
    flips: list[list[str]] = field(default_factory=list)  # left-out sets that change the winner
    k: int | None = None
    #: metric -> share of resamples in which it shares the lead with another
    tied_share: dict[str, float] = field(default_factory=dict)
    #: the study's lead: the metrics tied for its best value
    leaders: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "resamples": self.resamples,
                               "winner_changed": self.winner_changed,
                               "order_changed": self.order_changed,
                               "mean_kendall_tau": finite_or_none(self.mean_kendall_tau),
                               "winner_share": self.winner_share,
                               "tied_share": self.tied_share, "study_leaders": self.leaders}
        if self.cluster_changed:
            out["cluster_changed"] = self.cluster_changed
        if self.kind == "leave-k-out":
            out |= {"k": self.k, "flips": self.flips}
        return out




def _standing(values: Mapping[str, float], goodness: Callable[[float], float]
              ) -> dict[str, float]:
    """Each metric's goodness with near-ties snapped to one value (NaN: undefined)."""
    from meta_eval.pairs import snap

    names = list(values)
    good = np.array([goodness(values[m]) if math.isfinite(values[m]) else math.nan
                     for m in names], dtype=float)
    return dict(zip(names, snap(good).tolist(), strict=True))


def leaders(values: Mapping[str, float], goodness: Callable[[float], float] = float
            ) -> list[str]:
    """The metrics tied for the best defined value (empty: none is defined)."""
    good = _standing(values, goodness)
    defined = [g for g in good.values() if math.isfinite(g)]
    return [m for m, g in good.items() if defined and g == max(defined)]


def _signs(good: Mapping[str, float], names: list[str]) -> np.ndarray:
    """Per pair of `names` (i < j): +1 when i is better, -1 when worse, 0 when tied (two
    undefined values tie; an undefined one is below every defined one)."""
    g = np.array([good[m] if math.isfinite(good[m]) else -math.inf for m in names])
    i, j = np.triu_indices(len(names), k=1)
    return np.sign(g[i] - np.where(np.isneginf(g[i]) & np.isneginf(g[j]), g[i], g[j]))


def tau_b(a: np.ndarray, b: np.ndarray) -> float:
    """Kendall's tau-b of two orders given as pair signs (`_signs`)."""
    untied_a, untied_b = np.count_nonzero(a), np.count_nonzero(b)
    if untied_a == 0 or untied_b == 0:
        return math.nan
    return float(np.dot(a, b) / math.sqrt(untied_a * untied_b))


def order_of(values: Mapping[str, float], goodness: Callable[[float], float] = float
             ) -> list[str]:
    """Metrics best first (undefined last, then by name: a stable order)."""
    return sorted(values, key=lambda m: (not math.isfinite(values[m]),
                                         -goodness(values[m]) if math.isfinite(values[m])
                                         else 0.0, m))


def kendall_tau_orders(a: list[str], b: list[str]) -> float:
    """Kendall's tau between two orders of the same names (tau-a: no ties in an order)."""
    pos = {m: k for k, m in enumerate(b)}
    n = len(a)
    if n < 2:
        return math.nan
    concordant = sum(1 if pos[a[i]] < pos[a[j]] else -1
                     for i, j in itertools.combinations(range(n), 2))
    return concordant / (n * (n - 1) / 2)


def system_sensitivity(*, human: np.ndarray, metrics: Mapping[str, np.ndarray],
                       values: Values, systems: list[str], leave_out: int = 1,
                       bootstrap: int = 0, limit: int = 1000, seed: int = 0,
                       goodness: Callable[[float], float] = float,
                       clusters: Clusters | None = None) -> list[Sensitivity]:
    """Leave-`leave_out`-out and (with `bootstrap` > 0) system-bootstrap sensitivity of the
    conclusions from `values(human, metrics)` (module docstring)."""
    n = human.shape[1]
    if len(systems) != n:
        raise ValueError("one name per system column")
    base = values(human, metrics)
    base_clusters = clusters(human, metrics, base) if clusters else None
    rng = np.random.default_rng(seed)

    def run(columns: np.ndarray) -> tuple[dict[str, float], dict[str, int] | None]:
        h = human[:, columns]
        ms = {m: x[:, columns] for m, x in metrics.items()}
        v = values(h, ms)
        return v, (clusters(h, ms, v) if clusters else None)

    study = _Study(base, base_clusters, goodness)
    out = []
    if leave_out:
        if not 0 < leave_out <= n - 2:
            raise ValueError(f"leave-k-out needs 0 < k <= systems - 2 = {n - 2}")
        total = math.comb(n, leave_out)
        if total <= limit:
            subsets = [list(s) for s in itertools.combinations(range(n), leave_out)]
        else:
            subsets = [sorted(rng.choice(n, leave_out, replace=False).tolist())
                       for _ in range(limit)]
        runs = [run(np.array([j for j in range(n) if j not in s])) for s in subsets]
        out.append(study.summarise("leave-k-out", runs, leave_out,
                                   [[systems[j] for j in s] for s in subsets]))
    if bootstrap:
        runs = [run(np.asarray(rng.integers(0, n, size=n))) for _ in range(bootstrap)]
        out.append(study.summarise("system-bootstrap", runs))
    return out


class _Study:
    """The study's conclusions, and how a list of resamples' conclusions differ from them."""

    def __init__(self, base: dict[str, float], base_clusters: dict[str, int] | None,
                 goodness: Callable[[float], float]) -> None:
        self.names = list(base)
        self.goodness = goodness
        self.leaders = leaders(base, goodness)
        self.signs = _signs(_standing(base, goodness), self.names)
        self.clusters = base_clusters

    def summarise(self, kind: str, runs: list[tuple[dict[str, float], dict[str, int] | None]],
                  k: int | None = None, subsets: list[list[str]] | None = None
                  ) -> Sensitivity:
        n = len(runs)
        leads = [leaders(v, self.goodness) for v, _ in runs]
        changed = [set(lead) != set(self.leaders) for lead in leads]
        share = {m: sum(1 / len(lead) for lead in leads if m in lead) / n for m in self.names}
        tied = {m: sum(len(lead) > 1 and m in lead for lead in leads) / n for m in self.names}
        cluster_changed = {}
        if self.clusters is not None:
            base = self.clusters
            cluster_changed = {m: sum(c is not None and c.get(m) != base[m]
                                      for _, c in runs) / n for m in self.names}
        flips = [s for s, c in zip(subsets or [], changed, strict=False) if c]
        signs = [_signs(_standing(v, self.goodness), self.names) for v, _ in runs]
        taus = [tau_b(self.signs, s) for s in signs]
        return Sensitivity(kind, n, sum(changed) / n,
                           sum(bool(np.any(s != self.signs)) for s in signs) / n,
                           float(np.nanmean(taus)) if any(math.isfinite(t) for t in taus)
                           else math.nan, share, cluster_changed, flips, k, tied,
                           list(self.leaders))
