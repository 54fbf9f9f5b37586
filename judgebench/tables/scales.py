"""What agreement, error and calibration statistics ask of a scores table's columns.

These statistics (`meta_eval.statistics`: `on_scale`) compare a metric's values with the
human scores themselves, so `meta-eval` and `audit` check the columns before any work:

- categorical (kappa, kappa-linear, qwk, krippendorff-ordinal, krippendorff-nominal, ckld,
  ckld-uniform, wasserstein): every metric value must be an integer (a judge's 1-5 score);
  human scores are rounded half up to integers (`meta_eval.agreement.categories`: 3.667 ->
  4, 3.5 -> 4), so a mean of raters needs no preparation. A metric off an integer scale
  (G-Eval's probability-weighted mean, BLEU) is an InputError naming the file, line or row,
  and column; round it yourself, or use krippendorff (interval), mae or rmse, which take
  any values.
- probabilities (brier, ece, ece-mass): every metric value in [0, 1] and every human value 0
  or 1, else an InputError naming the file, line or row, and column.
- non-negative (krippendorff-ratio): every metric and human value >= 0 (a ratio scale has an
  absolute zero), else an InputError as above.
- declared labels (`--labels`, for the kappa family and Krippendorff's alpha): every metric
  value, and every human score (rounded half up for the categorical statistics), must be
  one of them, else an InputError naming the file, line or row, column and the labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from judgebench.errors import InputError
from judgebench.tables.columns import _where

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.statistics import Statistic


def check_scales(frame: pd.DataFrame, *, statistics: Sequence[str], humans: Sequence[str],
                 metrics: Sequence[str], path: str,
                 labels: Sequence[float] | None = None) -> None:
    """InputError at the first value a requested statistic cannot take (module docstring).
    `frame`'s columns are numeric already (`judgebench.tables.columns.numeric_columns`)."""
    import numpy as np

    from meta_eval.statistics import get

    specs = [get(name) for name in statistics]
    present = [c for c in metrics if c in frame.columns]
    nonnegative = [s.name for s in specs if s.nonnegative]
    if nonnegative:
        for column in [*present, *humans]:
            values = frame[column].to_numpy(dtype=float)
            _raise_at(frame, path, column, np.isfinite(values) & (values < 0), values,
                      f"{nonnegative[0]} needs values >= 0 (a ratio scale), got {{value!r}}")
    if labels is not None:
        _check_labels(frame, path, specs, humans, present, labels)
    categorical = [s.name for s in specs if s.categorical]
    probabilities = [s.name for s in specs if s.probabilities]
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


def _check_labels(frame: pd.DataFrame, path: str, specs: Sequence[Statistic],
                  humans: Sequence[str], metrics: Sequence[str], labels: Sequence[float]
                  ) -> None:
    import numpy as np

    from meta_eval.agreement import categories

    declared = np.asarray(list(labels), dtype=float)
    shown = ", ".join(f"{v:g}" for v in declared[:12]) + (", ..." if declared.size > 12 else "")
    for spec in (s for s in specs if s.declared):
        for column in [*metrics, *humans]:
            values = frame[column].to_numpy(dtype=float)
            rounded = categories(values) if spec.categorical and column in humans else values
            bad = np.isfinite(values) & ~np.isin(rounded, declared)
            how = " (rounded half up)" if spec.categorical and column in humans else ""
            _raise_at(frame, path, column, bad, values,
                      f"{spec.name}: {{value!r}}{how} is not one of --labels {shown}")


def _raise_at(frame: pd.DataFrame, path: str, column: str, bad: object, values: object,
              message: str) -> None:
    import numpy as np

    where = np.flatnonzero(np.asarray(bad))
    if where.size:
        position = int(where[0])
        value = float(np.asarray(values)[position])
        raise InputError(message.format(value=value), path=path, field=column,
                         **_where(frame, path, position))
