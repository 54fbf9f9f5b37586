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
    winner_share: dict[str, float]  # metric -> share of resamples it wins
    cluster_changed: dict[str, float] = field(default_factory=dict)
    flips: list[list[str]] = field(default_factory=list)  # left-out sets that change the winner
    k: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "resamples": self.resamples,
                               "winner_changed": self.winner_changed,
                               "order_changed": self.order_changed,
                               "mean_kendall_tau": finite_or_none(self.mean_kendall_tau),
                               "winner_share": self.winner_share}
        if self.cluster_changed:
            out["cluster_changed"] = self.cluster_changed
        if self.kind == "leave-k-out":
            out |= {"k": self.k, "flips": self.flips}
        return out




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


def _summarise(kind: str, base_order: list[str], base_clusters: dict[str, int] | None,
               runs: list[tuple[list[str], dict[str, int] | None]], k: int | None = None,
               subsets: list[list[str]] | None = None) -> Sensitivity:
    n = len(runs)
    winners = [order[0] if order else None for order, _ in runs]
    changed = [w != base_order[0] for w in winners]
    share = {m: sum(w == m for w in winners) / n for m in base_order}
    cluster_changed = {}
    if base_clusters is not None:
        cluster_changed = {m: sum(c is not None and c.get(m) != base_clusters[m]
                                  for _, c in runs) / n for m in base_order}
    flips = [s for s, c in zip(subsets or [], changed, strict=False) if c]
    taus = [kendall_tau_orders(base_order, order) for order, _ in runs]
    return Sensitivity(kind, n, sum(changed) / n,
                       sum(order != base_order for order, _ in runs) / n,
                       float(np.nanmean(taus)) if any(math.isfinite(t) for t in taus)
                       else math.nan, share, cluster_changed, flips, k)


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
    base_order = order_of(base, goodness)
    base_clusters = clusters(human, metrics, base) if clusters else None
    rng = np.random.default_rng(seed)

    def run(columns: np.ndarray) -> tuple[list[str], dict[str, int] | None]:
        h = human[:, columns]
        ms = {m: x[:, columns] for m, x in metrics.items()}
        v = values(h, ms)
        return order_of(v, goodness), (clusters(h, ms, v) if clusters else None)

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
        out.append(_summarise("leave-k-out", base_order, base_clusters, runs, leave_out,
                              [[systems[j] for j in s] for s in subsets]))
    if bootstrap:
        runs = [run(np.asarray(rng.integers(0, n, size=n))) for _ in range(bootstrap)]
        out.append(_summarise("system-bootstrap", base_order, base_clusters, runs))
    return out
