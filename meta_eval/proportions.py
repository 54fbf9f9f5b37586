"""A proportion's confidence interval.

wilson_interval (Wilson 1927, "Probable inference, the law of succession, and statistical
    inference"): for k successes of n and z the standard normal quantile of (1 + c) / 2,

        centre = (k + z^2 / 2) / (n + z^2),
        half = z sqrt(k (n - k) / n + z^2 / 4) / (n + z^2),

    the interval [centre - half, centre + half] (statsmodels' proportion_confint with
    method="wilson", but exactly 0 at k = 0 and 1 at k = n, where rounding would leave the
    point estimate outside); it stays inside [0, 1]. Undefined
    (None) for n = 0.
"""

from __future__ import annotations

import math

from scipy.special import ndtri


def wilson_interval(*, successes: int, n: int, confidence: float = 0.95
                    ) -> tuple[float, float] | None:
    """The Wilson score interval of `successes` of `n` at `confidence` (module docstring)."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    if n == 0:
        return None
    z = float(ndtri((1.0 + confidence) / 2.0))
    z2 = z * z
    centre = (successes + z2 / 2.0) / (n + z2)
    half = z * math.sqrt(successes * (n - successes) / n + z2 / 4.0) / (n + z2)
    # at k = 0 (k = n) the low (high) end is 0 (1) exactly; float rounding would miss it
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high
