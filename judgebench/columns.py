"""Checking and choosing the columns of a scores table (meta-eval, audit, aggregate)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

KEY = ("item", "system")


def numeric_columns(frame: pd.DataFrame, columns: Iterable[str], path: str) -> None:
    """Coerce `columns` to float in place; raise InputError naming the file, the line (row for
    Parquet, from `read_table`'s `attrs["lines"]`) and the column of the first value that is
    not a number. Empty cells stay missing."""
    import pandas as pd

    lines = frame.attrs.get("lines")
    where = "row" if str(path).endswith(".parquet") or lines is None else "line"
    for column in columns:
        if column not in frame.columns:
            raise InputError(f"no such column; columns are {list(frame.columns)}", path=path,
                             field=column)
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):
            raise InputError("column holds booleans, not scores", path=path, field=column)
        coerced = pd.to_numeric(values, errors="coerce")
        bad = values.notna() & coerced.isna()
        if bad.any():
            position = int(bad.to_numpy().argmax())
            at = lines[position] if lines is not None else position + 1
            raise InputError(f"column is not numeric: value {values.iloc[position]!r}",
                             path=path, field=column, **{where: at})
        frame[column] = coerced.astype(float)


def metric_columns(
    frame: pd.DataFrame, exclude: Iterable[str] = (), prefixes: Sequence[str] = ("human.",)
) -> list[str]:
    """The default metric set: numeric, non-boolean columns that are not keys, not excluded
    and not named with one of `prefixes` (human columns, and for the audit sentinels)."""
    import pandas as pd

    skip = {*KEY, *exclude}
    return [str(c) for c in frame.columns
            if c not in skip and not str(c).startswith(tuple(prefixes))
            and pd.api.types.is_numeric_dtype(frame[c])
            and not pd.api.types.is_bool_dtype(frame[c])]
