"""Small result objects shared by every statistic."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


def _clean(value: Any) -> Any:
    """NaN/inf to None and numpy scalars to Python numbers, for JSON."""
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass(frozen=True)
class Result:
    """One statistic for one metric/human pair.

    `n` counts what entered `value`: units correlated (no grouping, system level) or groups
    averaged (item/system grouping). `skipped` counts groups where the statistic is undefined
    (constant input, fewer than 2 units). `value` is NaN when nothing was defined.
    `epsilon` is the metric tie threshold: the one given (kendall-23, acc-23) or the one
    chosen on the data (acc-eq).
    """

    statistic: str
    value: float
    n: int
    skipped: int = 0
    level: str | None = None
    grouping: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    epsilon: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = {k: _clean(v) for k, v in asdict(self).items() if k != "extra"}
        out.update({k: _clean(v) for k, v in self.extra.items()})
        return {k: v for k, v in out.items() if v is not None or k == "value"}


@dataclass(frozen=True)
class Comparison:
    """A paired test of H1: metric_a is better than metric_b on the same units (`delta` is
    the difference of `Statistic.goodness`: value_a - value_b where higher is better).

    `p_value` is one-sided. `resamples` is how many permutations were drawn (fewer than asked
    when early stopping decided the test; 0 for closed-form tests such as Williams').
    `p_value_early` is True when early stopping decided the test: p_value is then the
    estimate from `resamples` draws, decided on the side of alpha it lies on.
    """

    statistic: str
    method: str
    value_a: float
    value_b: float
    delta: float
    p_value: float
    n: int
    resamples: int = 0
    p_value_early: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class RankedMetric:
    """A metric's place in a significance-cluster ranking (cluster 1 is the best)."""

    metric: str
    value: float
    cluster: int


@dataclass(frozen=True)
class Ranking:
    """Metrics sorted by the statistic, best first, with their clusters and every test that
    was run.

    `p_values[(a, b)]` is the one-sided p-value for "a is better than b"; `tests[(a, b)]` is
    that whole test (its Comparison, e.g. whether early stopping decided it).
    """

    metrics: list[RankedMetric]
    p_values: dict[tuple[str, str], float]
    alpha: float
    method: str
    tests: dict[tuple[str, str], Comparison] = field(default_factory=dict)
    statistic: str | None = None  # the statistic ranked by (its direction orders `metrics`)

    def cluster_of(self, metric: str) -> int:
        return next(m.cluster for m in self.metrics if m.metric == metric)
