"""From a long table (one row per item x system) to (items, systems) score matrices."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray



@dataclass(frozen=True)
class ScoreMatrices:
    """Score matrices of several columns over the same items and systems (NaN = missing)."""

    items: list[str]
    systems: list[str]
    columns: dict[str, FloatArray]

    def __getitem__(self, name: str) -> FloatArray:
        return self.columns[name]


def score_matrices(frame: pd.DataFrame, columns: Sequence[str], *, item: str = "item",
                   system: str = "system") -> ScoreMatrices:
    """Pivot `columns` of a wide scores table into (items, systems) matrices.

    Items and systems keep their order of first appearance. Raises ValueError for a missing
    or non-numeric column or a repeated (item, system) pair.
    """
    for col in (item, system, *columns):
        if col not in frame.columns:
            raise ValueError(f"column {col!r} not in table")
    keys = frame[[item, system]].astype(str)
    if keys.duplicated().any():
        first = keys[keys.duplicated()].iloc[0]
        raise ValueError(f"repeated (item, system) = ({first[item]!r}, {first[system]!r})")
    item_idx, items = pd.factorize(keys[item])
    sys_idx, systems = pd.factorize(keys[system])
    out = {}
    for col in columns:
        values = frame[col]
        if not (pd.api.types.is_numeric_dtype(values) or values.isna().all()):
            raise ValueError(f"column {col!r} is not numeric")
        matrix = np.full((len(items), len(systems)), np.nan)
        matrix[item_idx, sys_idx] = values.to_numpy(dtype=float, na_value=np.nan)
        out[col] = matrix
    return ScoreMatrices(list(items), list(systems), out)
