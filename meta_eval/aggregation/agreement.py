"""How much two rankings agree: between rules, and between a rule and people.

For systems i < j let s_x(i, j) = sign(x_i - x_j) (1, 0 or -1), and likewise for y.

- Kendall tau-b (Kendall 1945, the tie-corrected tau):
      tau_b = sum s_x s_y / sqrt(sum s_x^2 * sum s_y^2),
  NaN when either ranking puts every system in one tier.
- Pairwise accuracy (Kocmi et al. 2021, "To ship or not to ship"): the share of system
  pairs on which the two agree, sum [s_x == s_y] / #pairs; a pair tied in both agrees.

A rule's ranking enters as its tiers: x_i = minus the tier index (tier 1 is best).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pandas as pd

from meta_eval.aggregation.base import RuleResult

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray


def _signs(x: FloatArray) -> FloatArray:
    first, second = np.triu_indices(len(x), 1)
    return np.sign(x[first] - x[second])


def kendall_tau_b(*, x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Kendall's tau-b between two score vectors over the same units (higher = better)."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    if xs.shape != ys.shape:
        raise ValueError("x and y must have the same length")
    sx, sy = _signs(xs), _signs(ys)
    denom = np.sqrt(float((sx**2).sum()) * float((sy**2).sum()))
    return float((sx * sy).sum() / denom) if denom > 0 else float("nan")


def pairwise_accuracy(*, x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Share of unit pairs ordered the same way (ties agree with ties)."""
    xs, ys = np.asarray(x, float), np.asarray(y, float)
    if xs.shape != ys.shape:
        raise ValueError("x and y must have the same length")
    if len(xs) < 2:
        return float("nan")
    return float((_signs(xs) == _signs(ys)).mean())


def tier_scores(result: RuleResult, systems: Sequence[str]) -> FloatArray:
    """The ranking as numbers for correlation: minus the tier index (NaN: not ranked)."""
    index = {s: -float(t) for t, tier in enumerate(result.tiers) for s in tier}
    return np.array([index.get(s, np.nan) for s in systems])


def rule_agreement(results: Mapping[str, RuleResult]) -> pd.DataFrame:
    """Kendall tau-b between the rankings of every pair of rules (a symmetric table)."""
    names = list(results)
    systems = sorted({s for r in results.values() for s in r.ranking})
    vectors = {n: tier_scores(results[n], systems) for n in names}
    table = pd.DataFrame(np.nan, index=names, columns=names)
    for i, a in enumerate(names):
        for b in names[i:]:
            keep = ~(np.isnan(vectors[a]) | np.isnan(vectors[b]))
            tau = kendall_tau_b(x=vectors[a][keep], y=vectors[b][keep])
            table.loc[a, b] = table.loc[b, a] = tau
    return table


@dataclass(frozen=True)
class HumanAgreement:
    rule: str
    kendall_tau: float
    pairwise_accuracy: float
    n_systems: int

    def to_dict(self) -> dict[str, float | int | None]:
        def clean(v: float) -> float | None:
            return None if np.isnan(v) else float(v)

        return {"kendall_tau": clean(self.kendall_tau),
                "pairwise_accuracy": clean(self.pairwise_accuracy),
                "n_systems": self.n_systems}


def against_human(result: RuleResult, *, human: Mapping[str, float]) -> HumanAgreement:
    """How well a rule's ranking matches human system scores (higher = better), over the
    systems both rank."""
    systems = [s for s in result.ranking if s in human and not np.isnan(human[s])]
    rule = tier_scores(result, systems)
    gold = np.array([float(human[s]) for s in systems])
    return HumanAgreement(
        rule=result.rule,
        kendall_tau=kendall_tau_b(x=rule, y=gold),
        pairwise_accuracy=pairwise_accuracy(x=rule, y=gold),
        n_systems=len(systems),
    )


def ranking_scores(ranking: Sequence[str | Sequence[str]]) -> dict[str, float]:
    """A human ranking (best first; an entry may be a list of tied systems) as scores."""
    out: dict[str, float] = {}
    for position, entry in enumerate(ranking):
        for s in [entry] if isinstance(entry, str) else entry:
            if s in out:
                raise ValueError(f"the ranking lists '{s}' twice")
            out[s] = -float(position)
    return out
