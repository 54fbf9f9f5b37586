"""A plain table of repeated judgements, read for `meta-eval reliability`: each unit's
judgements as a (units, K) array per score column, K draws of one judge or K raters.

Three layouts:

- long draws (`--draw COL`): one row per (unit, draw), the unit named by the `--item`
  columns, the draw index in COL, the judgements in the score columns;
- long raters (`--rater-column COL`): the same with COL naming the rater;
- raters as columns (`--rater COL`, repeatable): one row per unit, one column per rater.

Every table is read by `judgebench.tables.io.read_table` (the key read as text, non-empty
and unique, an error naming the line of a repeated one) and its score columns by
`judgebench.tables.columns.numeric_columns` (an error naming the line of a cell that is not
a finite number); an empty cell is a missing judgement (NaN). A `turn` column (a
conversation's judged turn) is part of the unit, as it is of a scores table's key. Units
keep the order of their first row; draws and raters are ordered by their index (as numbers
when every index is one, else as text).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_ITEMS = ("item", "system")


@dataclass(frozen=True)
class Judgements:
    """One score column's judgements: `values[u, j]` is unit u's judgement by draw (or
    rater) `labels[j]`, NaN where missing."""

    column: str
    units: list[tuple[str, ...]]
    labels: list[str]
    values: np.ndarray


@dataclass(frozen=True)
class DrawTable:
    """A table's judgements, per score column, and what they are (`draws` or `raters`)."""

    path: Path
    kind: str  # "draws" or "raters"
    items: tuple[str, ...]
    columns: list[Judgements]
    #: people's score of each unit (a long table's `humans` columns), NaN where none
    humans: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def read_long(cls, path: str | Path, *, index: str, kind: str,
                  items: Sequence[str] = (), scores: Sequence[str] = (),
                  humans: Sequence[str] = (),
                  log: Callable[[str], None] | None = None) -> DrawTable:
        """A long table: one row per (unit, `index`) (module docstring). `scores` default:
        every numeric column that is not a key, not `humans` and not named human.* (a
        column left out is told to `log`). `humans`: columns of people's score of the unit,
        the same on each of its rows (empty on some is allowed)."""
        from judgebench.tables.columns import numeric_columns
        from judgebench.tables.io import read_table

        path = Path(path)
        chosen = _items(path, items, extra=index)
        frame = read_table(path, key=[*chosen, index])
        chosen = _with_turn(frame, chosen)
        columns = _score_columns(frame, path, [*chosen, index, *humans], scores, log)
        units, unit_of = _units(frame, chosen)
        numeric_columns(frame, humans, str(path))
        people = {h: _per_unit(frame, h, unit_of, len(units), path) for h in humans}
        labels = _ordered(frame[index].astype(str).unique().tolist())
        at = {label: j for j, label in enumerate(labels)}
        draw_of = frame[index].astype(str).map(at).to_numpy(dtype=int)
        out = []
        for column in columns:
            values = np.full((len(units), len(labels)), np.nan)
            values[unit_of, draw_of] = frame[column].to_numpy(dtype=float)
            out.append(Judgements(column, units, labels, values))
        return cls(path, kind, tuple(chosen), out, people)

    @classmethod
    def read_wide(cls, path: str | Path, *, raters: Sequence[str],
                  items: Sequence[str] = ()) -> DrawTable:
        """Raters as columns: one row per unit, each of `raters` a column of judgements."""
        from judgebench.tables.columns import numeric_columns
        from judgebench.tables.io import read_table

        path = Path(path)
        if len(raters) < 2:
            raise InputError("--rater names one rater column each; give at least two",
                             path=str(path), field="--rater")
        if len(set(raters)) < len(raters):
            raise InputError("a rater column named twice", path=str(path), field="--rater")
        chosen = _items(path, items)
        frame = read_table(path, key=chosen)
        chosen = _with_turn(frame, chosen)
        numeric_columns(frame, raters, str(path))
        units, _ = _units(frame, chosen)
        values = frame[list(raters)].to_numpy(dtype=float)
        return cls(path, "raters", tuple(chosen),
                   [Judgements("raters", units, list(raters), values)])


def _items(path: Path, items: Sequence[str], extra: str | None = None) -> list[str]:
    """The unit's key columns: `items`, else those of item and system the table has (read
    from its header: an InputError when it has neither)."""
    if items:
        if extra is not None and extra in items:
            raise InputError("the draw (or rater) column cannot also be a --item column",
                             path=str(path), field=extra)
        return list(dict.fromkeys(items))
    from judgebench.tables.io import read_table

    header = read_table(path, key=None).columns
    found = [c for c in DEFAULT_ITEMS if c in header and c != extra]
    if not found:
        raise InputError(f"no item column: name the columns that identify a unit with --item "
                         f"(columns: {', '.join(map(str, header))})", path=str(path),
                         field="--item")
    return found


def _with_turn(frame: pd.DataFrame, items: list[str]) -> list[str]:
    """A conversation's judged turn is part of the unit (read_table keys on it too)."""
    return [*items, "turn"] if "turn" in frame.columns and "turn" not in items else items


def _score_columns(frame: pd.DataFrame, path: Path, keys: list[str], scores: Sequence[str],
                   log: Callable[[str], None] | None) -> list[str]:
    from judgebench.tables.columns import metric_columns, numeric_columns

    if scores:
        chosen = list(dict.fromkeys(scores))
        clash = [c for c in chosen if c in keys]
        if clash:
            raise InputError("a key column is not a score column", path=str(path),
                             field=clash[0])
    else:
        chosen = metric_columns(frame, exclude=keys, warn=log, path=str(path))
        if not chosen:
            raise InputError("no numeric score column besides the keys: name it with "
                             "--score", path=str(path), field="--score")
    numeric_columns(frame, chosen, str(path))
    return chosen


def _per_unit(frame: pd.DataFrame, column: str, unit_of: np.ndarray, units: int,
              path: Path) -> np.ndarray:
    """Each unit's value of `column` (NaN where its rows have none); an InputError naming
    the line of a row whose value differs from an earlier row's of the same unit."""
    from judgebench.tables.columns import _where

    out = np.full(units, np.nan)
    for position, (unit, value) in enumerate(zip(unit_of, frame[column].to_numpy(dtype=float),
                                                 strict=True)):
        if np.isnan(value):
            continue
        if np.isnan(out[unit]):
            out[unit] = value
        elif out[unit] != value:
            raise InputError(f"people's score of a unit is one number: {value!r} here, "
                             f"{out[unit]!r} on an earlier row of the unit", path=str(path),
                             field=column, **_where(frame, str(path), position))
    return out


def _units(frame: pd.DataFrame, items: list[str]) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """The units in the order of their first row, and each row's unit."""
    keys = list(zip(*(frame[c].astype(str) for c in items), strict=True))
    index: dict[tuple[str, ...], int] = {}
    unit_of = np.array([index.setdefault(k, len(index)) for k in keys], dtype=int)
    return list(index), unit_of


def _ordered(labels: list[str]) -> list[str]:
    """As numbers when every label is one, else as text."""
    try:
        numbers = [float(label) for label in labels]
    except ValueError:
        return sorted(labels)
    return [label for _, label in sorted(zip(numbers, labels, strict=True))]
