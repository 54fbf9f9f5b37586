"""Bootstrap confidence intervals for rating scores (arena-hard-auto's bootstrapped
Bradley-Terry; Efron 1979).

Each resample draws the compared pairs (the rows of a pairwise table, or the pairwise
comparisons of a profile's ballots) with replacement from a seeded generator and refits the
rating; a system's interval is the percentile interval of its score over the resamples in
which it has one (a system left without comparisons in a resample has none there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from meta_eval.aggregation.base import RuleResult
from meta_eval.aggregation.profile import Comparisons


def pair_resamples(data: Any, *, n: int, seed: int) -> list[Comparisons]:
    """`n` resamples of the compared pairs of `data` (a profile or comparisons)."""
    comps = data.comparisons()
    rows = Comparisons(comps.systems, comps.a, comps.b, comps.outcome, comps.weights,
                       lengths=comps.lengths)
    rng = np.random.default_rng(seed)
    m = len(rows.a)
    return [rows.take(rng.integers(0, m, size=m)) for _ in range(n)]


def score_intervals(data: Any, score: Callable[[Any], RuleResult], *, n: int, seed: int,
                    level: float = 0.95) -> dict[str, dict[str, float]]:
    """{"ci_low": {system: x}, "ci_high": {...}}: the (1 - level)/2 and (1 + level)/2
    quantiles (linear interpolation) of each system's score over `n` pair resamples."""
    if n < 2:
        raise ValueError("a bootstrap interval needs bootstrap >= 2 resamples")
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    systems = list(data.systems)
    if not len(data.comparisons().a):
        raise ValueError("no comparisons to resample")
    draws = np.full((n, len(systems)), np.nan)
    for r, sample in enumerate(pair_resamples(data, n=n, seed=seed)):
        scores = score(sample).scores or {}
        draws[r] = [scores.get(s, np.nan) for s in systems]
    low, high = {}, {}
    alpha = (1.0 - level) / 2.0
    for i, s in enumerate(systems):
        values = draws[:, i][np.isfinite(draws[:, i])]
        low[s] = float(np.quantile(values, alpha)) if len(values) else float("nan")
        high[s] = float(np.quantile(values, 1.0 - alpha)) if len(values) else float("nan")
    return {"ci_low": low, "ci_high": high}


def check_bootstrap(data: Any, bootstrap: int = 0, level: float = 0.95, **_: Any) -> None:
    """TableError for a bootstrap option that cannot give an interval (the host reports it
    as bad input before any rule runs)."""
    from meta_eval.aggregation.tables import TableError

    if int(bootstrap) == 1 or int(bootstrap) < 0:
        raise TableError(f"bootstrap must be 0 (none) or >= 2 resamples, got {bootstrap}",
                         field="bootstrap")
    if not 0 < float(level) < 1:
        raise TableError(f"level must be between 0 and 1, got {level}", field="level")


def with_intervals(result: RuleResult, data: Any, score: Callable[[Any], RuleResult], *,
                   n: int, seed: int, level: float) -> RuleResult:
    """`result` with bootstrap intervals of its scores in `extra` and a note, when n > 0."""
    if int(n) <= 0:
        return result
    extra = {**score_intervals(data, score, n=int(n), seed=int(seed), level=float(level)),
             **(result.extra or {})}
    note = (f"{float(level):.0%} percentile intervals from {int(n)} bootstrap resamples of "
            f"the compared pairs (seed {int(seed)})")
    return replace(result, extra=extra, note=f"{result.note}; {note}" if result.note else note)
