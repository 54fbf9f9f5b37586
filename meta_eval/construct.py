"""Construct validity across criteria: does each metric measure *its* criterion?

Campbell and Fiske (1959), "Convergent and discriminant validation by the
multitrait-multimethod matrix", Psychological Bulletin 56(2). With k human criteria
H_1..H_k (traits) and metrics each meant for one criterion c(M), the matrix holds
s(M, H_c) for every metric and criterion. Convergent validity: s(M, H_c(M)) itself.
Discriminant validity: for every other criterion c', H1: s(M, H_c(M)) > s(M, H_c'), a paired
test on the same units with M shared (`meta_eval.significance.compare` with M in the human's
place: the permutation test swaps H_c and H_c' per unit, or Williams' test for Pearson,
which is Williams' T2 for two correlations sharing M, Steiger 1980). The metric is
discriminant when every one of these tests rejects at `alpha` (an intersection-union test:
no correction is needed, each test is at alpha).

A metric "measures overall quality" (`general`) when no test rejects and it agrees at least
as well with the overall human score O (the mean of the k criteria per unit, where all are
present) as with its own criterion: s(M, O) >= s(M, H_c(M)). Symmetric statistics only
(pearson, spearman, kendall): M takes the human's place in the test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SYMMETRIC = ("pearson", "spearman", "kendall")


@dataclass(frozen=True)
class ConstructResult:
    """One metric's row of the matrix and its discriminant tests."""

    metric: str
    criterion: str
    values: dict[str, float]  # criterion -> s(M, H_c)
    overall: float  # s(M, O)
    p_values: dict[str, float]  # other criterion -> one-sided p of own > other
    discriminant: bool
    general: bool
    tests: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {"metric": self.metric, "criterion": self.criterion,
                "values": {c: clean(v) for c, v in self.values.items()},
                "overall": clean(self.overall),
                "p_values": {c: clean(v) for c, v in self.p_values.items()},
                "discriminant": self.discriminant, "general": self.general}


def overall_score(criteria: Mapping[str, np.ndarray]) -> np.ndarray:
    """The mean of the criteria per unit (NaN where any is missing)."""
    stack = np.stack([np.asarray(v, dtype=float) for v in criteria.values()])
    return stack.mean(axis=0)


def construct_validity(*, criteria: Mapping[str, np.ndarray],
                       metrics: Mapping[str, np.ndarray], intended: Mapping[str, str],
                       statistic: str = "pearson", level: str = "segment",
                       grouping: str = "none", method: str = "permutation",
                       alpha: float = 0.05, resamples: int = 1000, seed: int = 0
                       ) -> list[ConstructResult]:
    """The multitrait-multimethod analysis (module docstring): `criteria` and `metrics` are
    {name: (items, systems) matrix}; `intended` maps each metric to its criterion."""
    from meta_eval.levels import evaluate
    from meta_eval.significance import compare

    if statistic not in SYMMETRIC:
        raise ValueError(f"construct validity takes a symmetric statistic {SYMMETRIC}")
    if len(criteria) < 2:
        raise ValueError("construct validity needs two or more criteria")
    overall = overall_score(criteria)
    out = []
    for k, (name, own) in enumerate(intended.items()):
        if own not in criteria:
            raise ValueError(f"{name}: unknown criterion {own!r}")
        m = np.asarray(metrics[name], dtype=float)
        values = {c: evaluate(statistic, human=h, metric=m, level=level,
                              grouping=grouping).value for c, h in criteria.items()}
        s_overall = evaluate(statistic, human=overall, metric=m, level=level,
                             grouping=grouping).value
        p_values = {}
        for j, (other, h) in enumerate(criteria.items()):
            if other == own:
                continue
            options: dict[str, Any] = ({"resamples": resamples, "alpha": alpha,
                                         "seed": int(np.random.SeedSequence(
                                             [seed, k, j]).generate_state(1)[0])}
                                        if method == "permutation" else {})
            test = compare(statistic, human=m, metric_a=criteria[own], metric_b=h,
                           level=level, grouping=grouping, method=method, **options)
            p_values[other] = float(test.p_value)
        rejected = [np.isfinite(p) and p <= alpha for p in p_values.values()]
        discriminant = bool(rejected) and all(rejected)
        general = (not any(rejected) and np.isfinite(s_overall) and np.isfinite(values[own])
                   and s_overall >= values[own])
        out.append(ConstructResult(name, own, values, float(s_overall), p_values,
                                   discriminant, bool(general)))
    return out
