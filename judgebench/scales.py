"""What agreement, error and calibration statistics ask of a scores table's columns.

These statistics (`meta_eval.statistics`: `on_scale`) compare a metric's values with the
human scores themselves, so `meta-eval` and `audit` check the columns before any work:

- categorical (kappa, kappa-linear, qwk, krippendorff-ordinal, krippendorff-nominal): every
  metric value must be an integer (a judge's 1-5 score); human scores are rounded half up to
  integers (`meta_eval.agreement.categories`: 3.667 -> 4, 3.5 -> 4), so a mean of raters needs
  no preparation. A metric off an integer scale (G-Eval's probability-weighted mean, BLEU) is
  an InputError naming the file, line or row, and column; round it yourself, or use
  krippendorff (interval), mae or rmse, which take any values.
- probabilities (brier, ece, ece-mass): every metric value in [0, 1] and every human value 0
  or 1, else an InputError naming the file, line or row, and column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from judgebench.columns import _where
from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd


def check_scales(frame: pd.DataFrame, *, statistics: Sequence[str], humans: Sequence[str],
                 metrics: Sequence[str], path: str) -> None:
    """InputError at the first value a requested statistic cannot take (module docstring).
    `frame`'s columns are numeric already (`judgebench.columns.numeric_columns`)."""
    import numpy as np

    from meta_eval.statistics import get

    specs = [get(name) for name in statistics]
    categorical = [s.name for s in specs if s.categorical]
    probabilities = [s.name for s in specs if s.probabilities]
    present = [c for c in metrics if c in frame.columns]
    if categorical:
        for column in present:
            values = frame[column].to_numpy(dtype=float)
            bad = np.isfinite(values) & (values != np.floor(values))
            _raise_at(frame, path, column, bad, values,
                      f"{categorical[0]} needs integer categories (a judge's 1-5 score), got "
                      "{value!r}; round the column first, or use krippendorff, mae or rmse")
    if probabilities:
        for column in present:
            values = frame[column].to_numpy(dtype=float)
            bad = np.isfinite(values) & ((values < 0) | (values > 1))
            _raise_at(frame, path, column, bad, values,
                      f"{probabilities[0]} needs a probability in [0, 1], got {{value!r}}")
        for column in humans:
            values = frame[column].to_numpy(dtype=float)
            bad = np.isfinite(values) & (values != 0) & (values != 1)
            _raise_at(frame, path, column, bad, values,
                      f"{probabilities[0]} needs a binary human label (0 or 1), got "
                      "{value!r}")


def _raise_at(frame: pd.DataFrame, path: str, column: str, bad: object, values: object,
              message: str) -> None:
    import numpy as np

    where = np.flatnonzero(np.asarray(bad))
    if where.size:
        position = int(where[0])
        value = float(np.asarray(values)[position])
        raise InputError(message.format(value=value), path=path, field=column,
                         **_where(frame, path, position))
