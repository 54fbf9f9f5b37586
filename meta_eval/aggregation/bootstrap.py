"""Bootstrap uncertainty of rule rankings (Efron 1979), resampling voters.

Each resample draws the voters (leaderboard columns or items; for pairwise data, the items
the comparisons came from) with replacement, from a seeded generator, and reruns every rule.
Per system: the rank interval (percentiles of the competition rank, 1 + #systems strictly
ahead) and the probability of winning (a tie for first with k systems counts 1/k each, so
the probabilities sum to the share of resamples that have a winner). Per rule:

- top-1 stability: share of resamples whose winner set equals the full-data winner set;
- top-k stability: mean Jaccard overlap between the resample's and the full data's top-k
  sets (the systems of competition rank <= k);
- mean Kendall tau-b between the resample's ranking and the full-data ranking, over the
  systems both rank (win-rate leaves its baseline out).

A resample on which a rule fails (e.g. a system left with no comparisons) is counted in
`n_failed` and left out of that rule's figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from meta_eval.aggregation.agreement import kendall_tau_b, tier_scores
from meta_eval.aggregation.base import AggregationRule, RuleResult


@dataclass(frozen=True)
class SystemUncertainty:
    system: str
    rank_low: float
    rank_high: float
    rank_median: float
    p_win: float


@dataclass(frozen=True)
class BootstrapResult:
    rule: str
    n: int
    n_failed: int
    seed: int
    level: float
    k: int
    top1_stability: float
    topk_stability: float
    mean_tau: float
    systems: tuple[SystemUncertainty, ...]

    def to_dict(self) -> dict[str, Any]:
        def clean(v: float) -> float | None:
            return None if v is None or np.isnan(v) else float(v)

        return {
            "n": self.n, "n_failed": self.n_failed, "seed": self.seed, "level": self.level,
            "k": self.k,
            "top1_stability": clean(self.top1_stability),
            "topk_stability": clean(self.topk_stability),
            "mean_tau": clean(self.mean_tau),
            "systems": {
                s.system: {"rank_low": clean(s.rank_low), "rank_high": clean(s.rank_high),
                           "rank_median": clean(s.rank_median), "p_win": clean(s.p_win)}
                for s in self.systems
            },
        }


def _top_k(result: RuleResult, k: int) -> frozenset[str]:
    return frozenset(s for s, r in result.ranks.items() if r <= k)


def bootstrap(
    data: Any,
    rules: Sequence[AggregationRule],
    *,
    n: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    k: int = 3,
    names: Sequence[str] | None = None,
    full: Sequence[RuleResult] | None = None,
) -> list[BootstrapResult]:
    """Resample the voters `n` times and summarise each rule's ranking uncertainty.

    `names` labels the rules (default: each rule's name); `full` is each rule's result on
    the full data if already computed."""
    if n < 1:
        raise ValueError("bootstrap needs n >= 1 resamples")
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    names = list(names) if names is not None else [r.name for r in rules]
    systems = list(data.systems)
    index = {s: i for i, s in enumerate(systems)}
    full = list(full) if full is not None else [r.rank(data) for r in rules]
    units = data.n_units
    if units < 1:
        raise ValueError("nothing to resample: no voters")
    rng = np.random.default_rng(seed)
    n_rules, n_sys = len(rules), len(systems)
    ranks = np.full((n_rules, n, n_sys), np.nan)
    wins = np.zeros((n_rules, n_sys))
    top1 = np.zeros(n_rules)
    topk = np.zeros(n_rules)
    taus = np.full((n_rules, n), np.nan)
    ok = np.zeros((n_rules, n), dtype=bool)
    full_winners = [frozenset(f.winners) for f in full]
    full_topk = [_top_k(f, k) for f in full]
    full_vectors = [tier_scores(f, systems) for f in full]
    for b in range(n):
        sample = data.take(rng.integers(0, units, size=units))
        for r, rule in enumerate(rules):
            try:
                result = rule.rank(sample)
            except Exception:  # counted in n_failed; one bad resample must not end the run
                continue
            ok[r, b] = True
            for s, rank in result.ranks.items():
                ranks[r, b, index[s]] = rank
            if result.winners:
                share = 1.0 / len(result.winners)
                for s in result.winners:
                    wins[r, index[s]] += share
            top1[r] += frozenset(result.winners) == full_winners[r]
            top = _top_k(result, k)
            union = top | full_topk[r]
            topk[r] += len(top & full_topk[r]) / len(union) if union else 1.0
            vector = tier_scores(result, systems)
            both = ~(np.isnan(vector) | np.isnan(full_vectors[r]))  # a rule may leave one out
            taus[r, b] = kendall_tau_b(x=vector[both], y=full_vectors[r][both])
    alpha = (1.0 - level) / 2.0
    out = []
    for r in range(n_rules):
        done = int(ok[r].sum())
        per_system = []
        for i, s in enumerate(systems):
            values = ranks[r, ok[r], i]
            values = values[~np.isnan(values)]
            if len(values):
                low = float(np.quantile(values, alpha, method="inverted_cdf"))
                high = float(np.quantile(values, 1 - alpha, method="inverted_cdf"))
                mid = float(np.median(values))
            else:
                low = high = mid = float("nan")
            per_system.append(SystemUncertainty(s, low, high, mid,
                                                wins[r, i] / done if done else float("nan")))
        per_system.sort(key=lambda u: (np.nan_to_num(u.rank_median, nan=np.inf), u.system))
        out.append(BootstrapResult(
            rule=names[r], n=n, n_failed=n - done, seed=seed, level=level, k=k,
            top1_stability=top1[r] / done if done else float("nan"),
            topk_stability=topk[r] / done if done else float("nan"),
            mean_tau=float(np.nanmean(taus[r])) if np.isfinite(taus[r]).any() else float("nan"),
            systems=tuple(per_system),
        ))
    return out
