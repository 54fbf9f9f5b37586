"""System-level statistics for metrics whose system score is given, not averaged.

A corpus metric scores each system once over all its outputs (corpus BLEU from pooled n-gram
counts, MAUVE from two distributions), which is not the mean of segment scores. As
mt-metrics-eval does with its system-level score files, such a metric enters system-level
meta-evaluation with those scores as they are: the human side is each system's mean human
score over the items people judged, the metric side is the given vector, and the statistic is
the one `evaluate` computes at level "system".

What needs segment scores is not available for a given vector: an item bootstrap (resampling
items would need the corpus score recomputed on every resample), SPA (its permutation test
flips segment-score differences) and the permutation tests of `compare`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from meta_eval.levels import evaluate, system_means
from meta_eval.results import Result
from meta_eval.statistics import STATISTICS

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike, FloatArray

NEEDS_SEGMENTS = tuple(name for name, s in STATISTICS.items() if s.needs_segments)


def human_system_means(*, human: ArrayLike) -> FloatArray:
    """Each system's mean human score over the items it was judged on ((items, systems) ->
    (systems,)); NaN for a system nobody judged."""
    human = np.asarray(human, dtype=float)
    means, _ = system_means(human=human, metric=np.zeros_like(human))
    return np.where(np.isfinite(human).any(axis=0), means, np.nan)


def evaluate_given(statistic: str, *, human: ArrayLike, metric: ArrayLike,
                   epsilon: float = 0.0, replace_nans_with_zeros: bool = False) -> Result:
    """`statistic` between the systems' mean human scores (`human`: (items, systems)) and
    given system scores (`metric`: (systems,)), at level "system"; an undefined value is 0
    with `replace_nans_with_zeros` (as `meta_eval.evaluate`).

    Raises ValueError for a statistic that needs segment scores (see the module docstring).
    """
    if statistic in NEEDS_SEGMENTS:
        raise ValueError(f"{statistic} needs segment scores; a corpus score has none")
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float).reshape(-1)
    if human.ndim != 2 or human.shape[1] != metric.size:
        raise ValueError("human must be (items, systems) and metric one score per system")
    h = human_system_means(human=human)
    return evaluate(statistic, human=h[None, :], metric=metric[None, :], level="system",
                    epsilon=epsilon, replace_nans_with_zeros=replace_nans_with_zeros)
