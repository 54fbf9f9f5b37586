"""A pairwise table read once for an analysis: `PreparedPairs.read` does the steps every
reader of a table of compared pairs needs (one row per pair: item, system_a, system_b,
optional category, human.* preferences and per judge `<spec>`, `<spec>.ab`, `<spec>.ba`
verdicts; DESIGN.md), in one order, and the pairwise meta-eval and transitivity take the
result.

1. the frame (a path, its keys checked, or a DataFrame, copied and checked) and 2. its
   sidecar (`judgebench.tables.scores_table`);
3. the columns that may hold verdicts, and each judge with order columns -> its columns;
4. the failed verdicts, told by the sidecar's counts (`judgebench.tables.failed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.tables.columns import _where
from judgebench.tables.failed import FailedCells, find_failed, store_statuses

if TYPE_CHECKING:
    import pandas as pd

PAIR_KEY = ("item", "system_a", "system_b")
ORDERS = (".ab", ".ba")
NOT_JUDGES = frozenset({*PAIR_KEY, "system", "category", "input", "output_a", "output_b",
                        "reference", "source", "context", "metadata"})
DATAFRAME = "<DataFrame>"


def read_pairs(path: str | Path) -> pd.DataFrame:
    """A pairwise table, keyed by (item, system_a, system_b); a wide scores table is refused."""
    from judgebench.tables.io import read_table

    frame = read_table(path, key=None, text_columns=(*PAIR_KEY, "category"))
    check_pairs(frame, str(path))
    return frame


def check_pairs(frame: pd.DataFrame, where: str) -> None:
    if "system" in frame.columns and not {"system_a", "system_b"} & set(frame.columns):
        raise InputError("this is a wide scores table (item, system); --pairwise reads a "
                         "pairwise table with item, system_a and system_b columns",
                         path=where, field="system_a")
    for column in PAIR_KEY:
        if column not in frame.columns:
            raise InputError(f"a pairwise table needs columns {', '.join(PAIR_KEY)}; columns "
                             f"are {list(frame.columns)}", path=where, field=column)
        empty = frame[column].isna() | (frame[column].astype("str").str.strip() == "")
        if empty.any():
            raise InputError("empty cell in a key column", path=where, field=column,
                             **_where(frame, where, int(empty.to_numpy().argmax())))
        frame[column] = frame[column].astype(str)


def verdict_columns(frame: pd.DataFrame, exclude: Sequence[str]) -> tuple[
        list[str], dict[str, list[str]]]:
    """The columns that may hold verdicts (not keys, human.* or `exclude`), and each judge
    with order columns -> its columns (combined, .ab, .ba)."""
    skip = {*NOT_JUDGES, *exclude}
    columns = [str(c) for c in frame.columns
               if c not in skip and not str(c).startswith("human.")]
    judges = {c[:-3]: [c[:-3], f"{c[:-3]}.ab", f"{c[:-3]}.ba"] for c in columns
              if c.endswith(ORDERS)}
    return columns, judges


@dataclass
class PreparedPairs:
    """A pairwise table ready for the statistics: its rows, its sidecar and its failed
    verdicts (masks in the rows of `frame`)."""

    frame: pd.DataFrame
    #: the file read, or "<DataFrame>"
    where: str
    sidecar: dict[str, Any] | None
    failed: FailedCells

    @classmethod
    def read(cls, source: str | Path | pd.DataFrame, exclude: Sequence[str] = (), *,
             store: str | Path | None = None) -> PreparedPairs:
        """Read `source` (see the module); `exclude`: columns that hold no verdicts (the
        human columns, a category; a `store:CRITERION` one is read from `store` or the
        store the sidecar names, `judgebench.tables.store_humans`). Bad input raises
        InputError naming the file and field."""
        from judgebench.tables.scores_table import read_sidecar
        from judgebench.tables.store_humans import add_store_columns

        if isinstance(source, (str, Path)):
            where, frame = str(source), read_pairs(source)
            sidecar = read_sidecar(Path(source))
        else:
            where, frame, sidecar = DATAFRAME, source.copy(), None
            check_pairs(frame, where)
        add_store_columns(frame, exclude, store=store, sidecar=sidecar, where=where)
        candidates, with_orders = verdict_columns(frame, exclude)
        failed = find_failed(frame, candidates, sidecar=sidecar, judges=with_orders)
        return cls(frame, where, sidecar, failed)


def read_judged(source: str | Path | pd.DataFrame, *, humans: Sequence[str] = (),
                store: str | Path | None = None
                ) -> tuple[pd.DataFrame, str, dict[str, Any] | None]:
    """A table of judges' scores (wide: item, system) or verdicts (pairwise: item, system_a,
    system_b), keys read as text and judged turns each a unit of their own
    (`judgebench.tables.turn_table`); where it was read from; and its sidecar. A
    `store:CRITERION` column of `humans` is read from `store` or the store the sidecar names
    (`judgebench.tables.store_humans`)."""
    import pandas as pd

    from judgebench.tables.io import read_table
    from judgebench.tables.scores_table import read_sidecar
    from judgebench.tables.store_humans import add_store_columns, store_columns
    from judgebench.tables.turn_table import turn_units

    if isinstance(source, pd.DataFrame):
        frame, where, sidecar = turn_units(source, "unit", path=DATAFRAME), DATAFRAME, None
        if frame is source and store_columns(humans):
            frame = frame.copy()  # the caller's frame gains no column
    else:
        frame = read_table(source, key=None,
                           text_columns=("item", "system", "system_a", "system_b", "category"))
        frame, where = turn_units(frame, "unit", path=str(source)), str(source)
        sidecar = read_sidecar(Path(source))
    add_store_columns(frame, humans, store=store, sidecar=sidecar, where=where)
    return frame, where, sidecar


def store_keys(frame: pd.DataFrame, shape: str) -> list[tuple[str, str]]:
    """(item, system as the store names it) per row of a "wide" or "pairwise" table: a
    pair's system is "A vs B"."""
    items = frame["item"].astype("str").tolist()
    if shape == "wide":
        return list(zip(items, frame["system"].astype("str").tolist(), strict=True))
    return [(item, f"{sa} vs {sb}") for item, sa, sb in
            zip(items, frame["system_a"].astype(str), frame["system_b"].astype(str),
                strict=True)]


def judges_failed(frame: pd.DataFrame, judges: Sequence[str], sidecar: dict[str, Any] | None,
                  store: str | Path | None, shape: str) -> FailedCells:
    """The failed cells of the `judges` columns of a table read by `read_judged`
    (judgebench.tables.failed: by the store's status of each row with `store`, else the
    sidecar's counts); an order column (`<spec>.ab`) is told by its judge's combined column
    where the table has it."""
    orders: dict[str, list[str]] = {}
    for column in judges:
        base = column[:-3]
        if column.endswith(ORDERS) and base in frame.columns:
            orders[base] = [base, f"{base}.ab", f"{base}.ba"]
    wanted = [*judges, *(c for cs in orders.values() for c in cs)]
    statuses = (store_statuses(store, sidecar, wanted, store_keys(frame, shape))
                if store is not None else None)
    found = find_failed(frame, wanted, sidecar=sidecar, judges=orders, statuses=statuses)
    found.masks = {c: m for c, m in found.masks.items() if c in judges}
    return found


__all__ = ["NOT_JUDGES", "ORDERS", "PAIR_KEY", "PreparedPairs", "check_pairs", "judges_failed",
           "read_judged", "read_pairs", "store_keys", "verdict_columns"]
