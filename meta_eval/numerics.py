"""Numerics the kernels share: exact power-of-two scaling and the masks of missing values.

power_of_two_scale(x): the exponent e per slice with max |x| < 2**e, so that
    `np.ldexp(x, -e)` lies in (-1, 1) exactly (a power of two changes no digit); kernels
    scale by it before any product or sum that could overflow or underflow (as
    scipy.stats.pearsonr does).
paired(*, human, metric): both sides as float arrays of one shape, NaN where either is
    missing (a unit missing either score is dropped for that pair of columns only).
constant(x): whether each slice's finite values along the last axis are all equal (or
    absent).
shown(value): a table cell as an error message quotes it (a numpy scalar as its Python
    value: -1, not np.int64(-1)).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, SupportsFloat

import numpy as np

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike, BoolArray, FloatArray, IntArray


def power_of_two_scale(x: ArrayLike, axis: int | None = -1) -> IntArray:
    """Exponent e per slice with max |x| < 2**e (0 for an all-zero or empty slice);
    `np.ldexp(x, -e)` then scales exactly into (-1, 1)."""
    with np.errstate(invalid="ignore"):
        top = np.max(np.abs(x), axis=axis, keepdims=True, initial=0.0)
    exponent: IntArray = np.frexp(top)[1]
    return exponent


def paired(*, human: ArrayLike, metric: ArrayLike
           ) -> tuple[FloatArray, FloatArray]:
    """`human` and `metric` as float arrays of one (broadcast) shape, NaN where either side
    is missing."""
    h, m = np.broadcast_arrays(np.asarray(human, dtype=float), np.asarray(metric, dtype=float))
    ok = np.isfinite(h) & np.isfinite(m)
    return np.where(ok, h, np.nan), np.where(ok, m, np.nan)


def constant(x: FloatArray) -> BoolArray:
    """True where the finite values of a slice along the last axis are all equal or absent."""
    with np.errstate(invalid="ignore"):
        lo = np.fmin.reduce(x, axis=-1)
        hi = np.fmax.reduce(x, axis=-1)
    same: BoolArray = ~(hi > lo)
    return same


def finite_or_none(value: SupportsFloat | None) -> float | None:
    """`value` as a float, or None where it is missing, NaN or infinite (how a result's
    undefined number is written: JSON has no NaN)."""
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def shown(value: object) -> str:
    """`value` as an error message quotes a cell: repr of its Python value (numpy 2's repr
    of a scalar, np.int64(-1), is not what the user wrote)."""
    return repr(value.item() if isinstance(value, np.generic) else value)
