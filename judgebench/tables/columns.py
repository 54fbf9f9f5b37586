"""Checking and choosing the columns of a scores table (meta-eval, audit, aggregate)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from judgebench.errors import InputError
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd

KEY = ("item", "system")
#: Not metric columns either: a conversation's judged turn (judgebench.tables.turn_table).
KEY_COLUMNS = (*KEY, "turn")


def numeric_columns(frame: pd.DataFrame, columns: Iterable[str], path: str) -> None:
    """Coerce `columns` to float in place; raise InputError naming the file, the line (row for
    Parquet, from `read_table`'s `attrs["lines"]`) and the column of the first value that is
    not a finite number: text, a boolean, inf or -inf. Empty cells and NaN stay missing."""
    import pandas as pd

    for column in columns:
        if column not in frame.columns:
            raise InputError(f"no such column{did_you_mean(column, frame.columns)} (columns: "
                             f"{', '.join(map(str, frame.columns))})", path=path, field=column)
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):
            raise InputError("column holds booleans, not scores", path=path, field=column)
        coerced = pd.to_numeric(values, errors="coerce")
        bad = values.notna() & coerced.isna()
        if not pd.api.types.is_numeric_dtype(values):  # only a column of objects holds a bool
            bad |= values.map(lambda v: isinstance(v, bool) or type(v).__name__ == "bool_"
                              ).astype(bool)
        if bad.any():
            position = int(bad.to_numpy().argmax())
            raise InputError(f"column is not numeric: value {values.iloc[position]!r}",
                             path=path, field=column, **_where(frame, path, position))
        coerced = coerced.astype(float)
        _check_finite(frame, column, coerced, path)
        frame[column] = coerced


def _where(frame: pd.DataFrame, path: str | None, position: int) -> dict[str, int]:
    """The line (CSV, JSONL) or row (Parquet, a frame without line numbers) of a 0-based
    row position."""
    lines = frame.attrs.get("lines")
    if lines is None or str(path).endswith(".parquet"):
        return {"row": lines[position] if lines is not None else position + 1}
    return {"line": lines[position]}


def _check_finite(frame: pd.DataFrame, column: str, values: pd.Series, path: str | None
                  ) -> None:
    """An InputError at the first inf or -inf of `values` (a float column of `frame`)."""
    import numpy as np

    infinite = np.isinf(values.to_numpy(dtype=float))
    if infinite.any():
        position = int(infinite.argmax())
        raise InputError(f"value {float(values.iloc[position])!r} is not finite: a score or human "
                         "judgment must be a finite number (leave the cell empty when it is "
                         "missing)", path=path, field=column, **_where(frame, path, position))


def metric_columns(
    frame: pd.DataFrame, exclude: Iterable[str] = (), prefixes: Sequence[str] = ("human.",),
    *, warn: Callable[[str], None] | None = None, path: str | None = None,
) -> list[str]:
    """The default metric set: numeric, non-boolean columns that are not keys, not excluded
    and not named with one of `prefixes` (human columns, and for the audit sentinels).

    A column left out because some of its cells are not numbers is reported through `warn`,
    with its first bad cell, and so are boolean and text columns: nothing is dropped without
    a word."""
    import pandas as pd

    skip = {*KEY_COLUMNS, *exclude}
    lines = frame.attrs.get("lines")
    where = "row" if str(path).endswith(".parquet") or lines is None else "line"
    chosen: list[str] = []
    text: list[str] = []
    for column in frame.columns:
        name = str(column)
        if column in skip or name.startswith(tuple(prefixes)):
            continue
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):
            text.append(name)
            continue
        if pd.api.types.is_numeric_dtype(values):
            _check_finite(frame, name, values, path)
            chosen.append(name)
            continue
        coerced = pd.to_numeric(values, errors="coerce")
        bad = values.notna() & coerced.isna()
        if coerced.notna().any() and bad.any():
            position = int(bad.to_numpy().argmax())
            at = lines[position] if lines is not None else position + 1
            if warn is not None:
                warn(f"column {name!r} is not a metric: {where} {at} holds "
                     f"{values.iloc[position]!r}, not a number (fix the cell, or name the "
                     "column with --metric to stop at it)")
        elif values.notna().any():
            text.append(name)
    if text and warn is not None:
        warn(f"not metric columns (text or booleans): {', '.join(text)}")
    return chosen
