"""Error of a metric against human scores on the same scale: MAE, RMSE and bias.

Each kernel takes padded arrays `human`, `metric` of shape (..., G, U), NaN where missing (a
unit missing either side is dropped), and returns per-group values (..., G), NaN for a group
with no unit. With d_u = m_u - h_u over the n units of a group:

mae   MAE = (1/n) sum |d_u|                 lower is better (0: the metric reproduces people)
rmse  RMSE = sqrt((1/n) sum d_u^2)          lower is better; weighs large errors more
bias  bias = (1/n) sum d_u = mean m - mean h   positive: the metric (judge) is more lenient
                                               than people; best at 0 (the sum is exact:
                                               math.fsum, since it cancels)

These are the usual regression errors (e.g. Willmott and Matsuura 2005, "Advantages of the
mean absolute error (MAE) over the root mean square error (RMSE)"; scikit-learn's
`mean_absolute_error`, `mean_squared_error`); they only make sense when the metric is on the
human scale (a 1-5 judge against 1-5 ratings), so the values are never z-scored or negated.

Magnitudes: both sides of a group are scaled by one power of two above their largest |value|
before the difference (exact), so |d| < 2 never overflows; RMSE rescales d by a power of two
near its largest |d| before squaring, so neither 1e200^2 overflows nor 1e-200^2 underflows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from meta_eval.numerics import power_of_two_scale

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray, IntArray


def _differences(human: FloatArray, metric: FloatArray
                 ) -> tuple[FloatArray, BoolArray, IntArray]:
    """(d scaled by 2**-e, 0 where missing; ok mask; e per group with keepdims)."""
    h, m = np.broadcast_arrays(np.asarray(human, dtype=float), np.asarray(metric, dtype=float))
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = np.where(ok, h, 0.0), np.where(ok, m, 0.0)
    e = power_of_two_scale(np.maximum(np.abs(h), np.abs(m)))
    d = np.ldexp(m, -e) - np.ldexp(h, -e)  # each side in (-1, 1): |d| < 2, exact scaling
    return d, ok, e


def _mean(x: FloatArray, n: IntArray) -> FloatArray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, x.sum(axis=-1) / np.maximum(n, 1), np.nan)


def mae_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group mean absolute error over the last axis."""
    d, ok, e = _differences(human, metric)
    return np.ldexp(_mean(np.abs(d), ok.sum(axis=-1)), e[..., 0])


def bias_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group mean of metric - human over the last axis (positive: more lenient).

    The sum is exact before its one rounding (`math.fsum` of both sides' scaled values), so
    a small bias of huge, cancelling scores is right to the last digit."""
    import math

    h, m = np.broadcast_arrays(np.asarray(human, dtype=float), np.asarray(metric, dtype=float))
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = np.where(ok, h, 0.0), np.where(ok, m, 0.0)
    e = power_of_two_scale(np.maximum(np.abs(h), np.abs(m)))
    hs, ms = np.ldexp(h, -e), np.ldexp(m, -e)
    n = ok.sum(axis=-1)
    size = h.shape[-1]
    rows_h, rows_m = hs.reshape(-1, size), ms.reshape(-1, size)
    total = np.array([math.fsum(np.concatenate([rm, -rh])) for rh, rm in zip(rows_h, rows_m,
                                                                           strict=True)])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total.reshape(n.shape) / np.maximum(n, 1), np.nan)
    return np.ldexp(mean, e[..., 0])


def rmse_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group root mean squared error over the last axis."""
    d, ok, e = _differences(human, metric)
    s = power_of_two_scale(d)
    d = np.ldexp(d, -s)
    root = np.sqrt(_mean(d * d, ok.sum(axis=-1)))
    return np.ldexp(root, (e + s)[..., 0])
