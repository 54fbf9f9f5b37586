"""A judge's calibration map (``calibration=[[raw, calibrated], ...]``): a monotone map of
its score onto people's scale, as `judgebench fit --search calibration` fits it with
scikit-learn's ``IsotonicRegression(increasing=True, out_of_bounds="clip")``.

The knots are that model's ``X_thresholds_`` and ``y_thresholds_``; the map is its
``predict``: the score clipped to the first and last knot, then linear interpolation between
the knots (scipy's ``interp1d``, which hands float64 data to ``numpy.interp``), one knot a
constant. The same call on the same numbers, so the value equals sklearn's to the last bit;
numpy only, no sklearn here.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence

import numpy as np


def check_knots(knots: Sequence[tuple[float, float]]) -> None:
    """ValueError unless `knots` is one or more finite (raw, calibrated) pairs, raw strictly
    increasing and calibrated non-decreasing (a monotone map)."""
    if not knots:
        raise ValueError("calibration= holds one or more [raw, calibrated] knots")
    for k, (x, y) in enumerate(knots):
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"calibration= knot {k} [{x!r}, {y!r}] is not finite")
        if k and not x > knots[k - 1][0]:
            raise ValueError(f"calibration= knots' raw scores are strictly increasing; knot "
                             f"{k} has {x!r} after {knots[k - 1][0]!r}")
        if k and not y >= knots[k - 1][1]:
            raise ValueError(f"calibration= knots' calibrated scores do not decrease (a "
                             f"monotone map); knot {k} has {y!r} after {knots[k - 1][1]!r}")


def apply_knots(knots: Sequence[tuple[float, float]], score: float) -> float:
    """`score` through the map (as sklearn's ``IsotonicRegression.predict`` with
    ``out_of_bounds="clip"``); the knots are checked (`check_knots`)."""
    if len(knots) == 1:
        return float(knots[0][1])
    xs = np.array([x for x, _ in knots], dtype=np.float64)
    ys = np.array([y for _, y in knots], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return float(np.interp(np.clip(np.float64(score), xs[0], xs[-1]), xs, ys))


def knots_digest(knots: Sequence[tuple[float, float]]) -> str:
    """`n<knots>-<12 hex>`: how many knots, and a SHA-256 of their values (repr, in order)."""
    shown = [[repr(float(x)), repr(float(y))] for x, y in knots]
    return f"n{len(knots)}-{hashlib.sha256(json.dumps(shown).encode()).hexdigest()[:12]}"
