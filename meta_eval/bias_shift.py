"""A judge's shift under a bias probe's edit, and its confidence interval.

preference_shift: each probed unit (a sample for a pointwise judge, an answer judged against
    its edited copy in both orders for a pairwise judge) gives a move m_i in [-1, 1]: +1 the
    judge prefers the edited text, -1 the original, 0 no change (pointwise: the sign of the
    oriented score change; pairwise: the mean of the two orders' verdicts for the edited
    copy). Units without a move (NaN: a failed judge call) are left out. For the n moves,

        shift = mean(m),
        interval = shift -+ t_{(1 + c) / 2, n - 1} * s / sqrt(n),  s = sd(m, ddof=1),

    the one-sample Student-t interval (scipy.stats.ttest_1samp(m, 0).confidence_interval(c)),
    clipped to [L, U] = [-1, 1], where every move lies; with n < 2 it is undefined (NaN).
    With s = 0 (every unit moved alike, by v) the t interval would be the point v, which
    claims more than n units show: the share q of units that would move otherwise is bounded
    as Clopper-Pearson bounds a proportion seen 0 times in n, q <= b = 1 - ((1 - c) / 2)^(1/n),
    and the mean by where those units could lie in [L, U]:

        interval = [v - b (v - L), v + b (U - v)]

    (10 units that all stayed put: [-0.31, 0.31] at c = 0.95; 36 are needed to bound the
    shift within +-0.1). A statistic that is a share (moves 0 or 1, `bounds` = (0, 1): the
    label-scheme probe's share of changed verdicts) gets [L, U] = [0, 1], and then the
    interval of 0 or n alike is exactly the two-sided Clopper-Pearson interval of 0 or n
    successes in n ([0, b] or [1 - b, 1]). The moves follow CALM's
    robustness rate (Ye et al. 2024, "Justice or Prejudice? Quantifying Biases in
    LLM-as-a-Judge"), signed, so a judge that penalises an edit shows a negative shift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import stdtrit


@dataclass(frozen=True)
class Shift:
    value: float
    low: float
    high: float
    n: int
    confidence: float


def preference_shift(*, moves: ArrayLike, confidence: float = 0.95,
                     bounds: tuple[float, float] = (-1.0, 1.0)) -> Shift:
    """The mean move and its Student-t interval at `confidence` (module docstring); `bounds`
    is where every move lies ([-1, 1]; [0, 1] for a share), the interval's range."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    lo, hi = (float(b) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"bounds must be two finite numbers, low < high, got {bounds}")
    values = np.asarray(moves, dtype=float).ravel()
    values = values[~np.isnan(values)]
    if np.isinf(values).any() or (values < lo).any() or (values > hi).any():
        raise ValueError(f"a move lies in [{lo:g}, {hi:g}]")
    n = int(values.size)
    if n == 0:
        return Shift(math.nan, math.nan, math.nan, 0, confidence)
    mean = math.fsum(values.tolist()) / n
    if n < 2:
        return Shift(mean, math.nan, math.nan, n, confidence)
    sd = float(np.sqrt(math.fsum(((values - mean) ** 2).tolist()) / (n - 1)))
    if sd == 0:
        unseen = 1.0 - ((1.0 - confidence) / 2.0) ** (1.0 / n)
        return Shift(mean, max(lo, mean - unseen * (mean - lo)),
                     min(hi, mean + unseen * (hi - mean)), n, confidence)
    half = float(stdtrit(n - 1, (1.0 + confidence) / 2.0)) * sd / math.sqrt(n)
    return Shift(mean, max(lo, mean - half), min(hi, mean + half), n, confidence)
