"""Failed verdicts: which cells of a table failed, and how `--failed-as` counts them.

One rule for every command that reads a table of scores or verdicts (`meta-eval`, `meta-eval
--pairwise`, `compare-judges`, `audit`, `aggregate`):

- A cell reading `failed` (any case) is a failed verdict: how a table made by hand (a
  paper's released verdicts) says so. It is read as empty, then counted as below.
- With the store the table was scored into (`--store`, where a command takes one): an empty
  cell is failed when the store's score of that row (the column's signature from the
  sidecar, keyed by item and system, "A vs B" for a pair) has a failed status; the order
  cells of a pairwise judge follow its combined cell, as below.
- Written by `judgebench score` (its `.meta.json` sidecar counts each column's statuses): a
  column's empty cells are failed when the sidecar counts as many failed scores
  (parse_error, refused, error) as the column has empty cells; a pairwise judge's order cell
  (`<spec>.ab`, `<spec>.ba`) is failed when it is empty on a row whose combined verdict
  failed and the order was run: the column holds some verdict, or the sidecar names it among
  the judge's `table_columns` (every answer failed); an order that was never run is empty
  throughout and not named. Where the counts differ (skipped scores, rows left out) empty cells stay
  missing and a note says so.
- Otherwise an empty cell is missing (never judged), and the note says so.

How a failed cell is counted (`FailedAs`), default `missing` (dropped, as an empty cell):
pairwise verdicts `wrong` or `tie` (`meta_eval.pairwise_eval.FAILED_AS`); numeric scores
`min` or `max` (the least or greatest score of the column over the rows read, in the
column's own direction, before a lower-is-better column is negated) or a number.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import BoolArray

FAILED_TEXT = "failed"
FAILED_STATUSES = ("parse_error", "refused", "error")
PAIRWISE = ("missing", "wrong", "tie")
NUMERIC = ("missing", "min", "max")
OPTION = "--failed-as"
Kind = Literal["missing", "wrong", "tie", "min", "max", "value"]
ToldBy = Literal["cells", "sidecar", "store", "status"]  # status: a corpus table's column


@dataclass(frozen=True)
class FailedAs:
    """A convention for failed cells: `kind`, and for `value` the number itself."""

    kind: Kind = "missing"
    value: float | None = None

    @property
    def name(self) -> str:
        """As the user wrote it (a number as its shortest text)."""
        return repr(self.value) if self.kind == "value" else self.kind

    @property
    def pairwise(self) -> bool:
        return self.kind in PAIRWISE


MISSING = FailedAs()


def parse_failed_as(text: str | FailedAs | None, *, pairwise: bool) -> FailedAs:
    """`--failed-as`: missing|wrong|tie for pairwise verdicts, missing|min|max|VALUE (a
    finite number) for numeric scores; an InputError otherwise."""
    if text is None:
        return MISSING
    if isinstance(text, FailedAs):
        text = text.name
    word = str(text).strip().lower()
    if pairwise:
        if word not in PAIRWISE:
            raise InputError(f"{text!r}: a failed pairwise verdict counts as one of "
                             f"{', '.join(PAIRWISE)}", field=OPTION)
        return FailedAs(word)  # type: ignore[arg-type]
    if word in NUMERIC:
        return FailedAs(word)  # type: ignore[arg-type]
    try:
        number = float(word)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        hint = " (wrong and tie are for pairwise verdicts)" if word in PAIRWISE else ""
        raise InputError(f"{text!r}: a failed score counts as missing, min, max or a finite "
                         f"number{hint}", field=OPTION)
    return FailedAs("value", number)


@dataclass
class FailedCells:
    """The failed cells of a table's columns (a boolean mask per column, row order of the
    frame), how they were told (`told_by`), and notes on the empty cells left missing."""

    masks: dict[str, BoolArray] = field(default_factory=dict)
    told_by: dict[str, ToldBy] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def mask(self, column: str, rows: int) -> BoolArray:
        import numpy as np

        return self.masks.get(column, np.zeros(rows, dtype=bool))

    def count(self, column: str) -> int:
        found = self.masks.get(column)
        return 0 if found is None else int(found.sum())

    def info(self, column: str, failed_as: FailedAs, counted_as: str | None = None,
             rows: int | None = None) -> dict[str, Any]:
        """The `failed` field of a result: rows failed, how counted, how told."""
        return {"rows": self.count(column) if rows is None else rows,
                "counted_as": counted_as or numeric_counted_as(failed_as),
                "told_by": self.told_by.get(column, "cells")}


def _statuses(sidecar: Mapping[str, Any] | None, column: str) -> dict[str, int] | None:
    columns = (sidecar or {}).get("columns")
    entry = columns.get(column) if isinstance(columns, dict) else None
    statuses = entry.get("statuses") if isinstance(entry, dict) else None
    return ({str(k): int(v) for k, v in statuses.items()} if isinstance(statuses, dict)
            else None)


def failed_text(values: pd.Series) -> BoolArray:
    """The cells reading `failed` (any case, surrounding space ignored)."""
    import numpy as np
    import pandas as pd

    if values.dtype.kind in "biufc":
        return np.zeros(len(values), dtype=bool)
    try:
        codes, uniques = pd.factorize(values)  # a verdict column has a handful of values
    except TypeError:  # a JSON list in a cell: not a verdict, never `failed`
        return np.array([isinstance(v, str) and v.strip().lower() == FAILED_TEXT
                         for v in values], dtype=bool)
    hits = [k for k, v in enumerate(uniques)
            if isinstance(v, str) and v.strip().lower() == FAILED_TEXT]
    return np.isin(codes, hits) if hits else np.zeros(len(values), dtype=bool)


def _numbers_if_all(values: pd.Series) -> pd.Series:
    """`values` as floats when every present cell is a number or a number's text (a column
    of scores once its `failed` cells are empty); otherwise as they are."""
    import pandas as pd

    def number(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise ValueError(v)
        return float(v)

    try:
        return pd.Series([math.nan if pd.isna(v) else number(v) for v in values],
                         index=values.index, dtype="float64")
    except (TypeError, ValueError):
        return values


def store_statuses(store: str | Path, sidecar: Mapping[str, Any] | None,
                   columns: Iterable[str], keys: Sequence[tuple[str, str]]
                   ) -> dict[str, list[str | None]]:
    """Per column with a signature in the sidecar and scores in the store: the stored status
    of each row's score (keys: (item, system as the store names it)), None where the store
    holds none or several different ones (two sample contents under one id)."""
    from judgebench.engine.store import Store

    signatures = {}
    for column in columns:
        entry = ((sidecar or {}).get("columns") or {}).get(column)
        if isinstance(entry, dict) and entry.get("signature"):
            signatures[column] = str(entry["signature"])
    if not signatures:
        return {}
    out = {}
    with Store(store, readonly=True) as db:
        for column, signature in signatures.items():
            found: dict[tuple[str, str], set[str]] = {}
            for score in db.scores(signature):
                found.setdefault((score.item, score.system), set()).add(str(score.status))
            if found:  # a store without the column's scores leaves it to the sidecar
                out[column] = [next(iter(found[k])) if len(found.get(k, ())) == 1 else None
                               for k in keys]
    return out


def find_failed(frame: pd.DataFrame, columns: Iterable[str], *,
                sidecar: Mapping[str, Any] | None,
                judges: Mapping[str, Sequence[str]] | None = None,
                statuses: Mapping[str, Sequence[str | None]] | None = None) -> FailedCells:
    """The failed cells of `columns` (see the module docstring); every cell reading `failed`
    is set empty in `frame`. `judges`: a pairwise judge -> its columns (combined first, then
    `.ab`, `.ba`) for the order rule; other columns are told by their own statuses: per row
    from the store (`statuses`, from `store_statuses`), else the sidecar's counts."""
    out = FailedCells()
    wanted = [c for c in dict.fromkeys(columns) if c in frame.columns]
    texts = _failed_texts(frame, wanted)
    order_of = {c: judge for judge, cs in (judges or {}).items() for c in cs[1:]}
    combined_of = {judge: cs[0] for judge, cs in (judges or {}).items()}
    from_sidecar: dict[str, BoolArray] = {}
    told: dict[str, ToldBy] = {}
    for column in wanted:
        if column not in order_of:
            _tell_column(frame, column, texts[column], sidecar, (statuses or {}).get(column),
                         from_sidecar, told, out.notes)
    for column in wanted:
        mask = texts[column].copy()
        judge = order_of.get(column)
        if judge is not None and combined_of[judge] in from_sidecar:
            empty = frame[column].isna().to_numpy() & ~mask
            if frame[column].notna().any() or _listed(sidecar, combined_of[judge], column):
                from_sidecar[column] = empty & from_sidecar[combined_of[judge]]
                told[column] = told[combined_of[judge]]
        if column in from_sidecar:
            mask |= from_sidecar[column]
            out.told_by[column] = told[column]
        if mask.any():
            out.masks[column] = mask
    if sidecar is None:
        out.notes += _no_sidecar_notes(frame, wanted, texts)
    return out


def _listed(sidecar: Mapping[str, Any] | None, judge: str, column: str) -> bool:
    """The sidecar names `column` as one of the judge's order columns (`table_columns`): the
    order was run, though no cell of it holds a verdict (every answer failed)."""
    columns = (sidecar or {}).get("columns")
    entry = columns.get(judge) if isinstance(columns, dict) else None
    listed = entry.get("table_columns") if isinstance(entry, dict) else None
    return isinstance(listed, dict) and column in (listed.get("ab"), listed.get("ba"))


def _failed_texts(frame: pd.DataFrame, wanted: Sequence[str]) -> dict[str, BoolArray]:
    """Each column's cells reading `failed`, set empty in `frame`."""
    texts = {}
    for column in wanted:
        text = failed_text(frame[column])
        if text.any():
            frame[column] = _numbers_if_all(frame[column].mask(text))
        texts[column] = text
    return texts


def _tell_column(frame: pd.DataFrame, column: str, text: BoolArray,
                 sidecar: Mapping[str, Any] | None, stored: Sequence[str | None] | None,
                 from_sidecar: dict[str, BoolArray], told: dict[str, ToldBy],
                 notes: list[str]) -> None:
    """Which empty cells of `column` failed, by the store's status of each row, else by the
    sidecar's counts where they match the empty cells (a note where they do not)."""
    import numpy as np

    empty = frame[column].isna().to_numpy() & ~text
    if stored is not None:
        from_sidecar[column] = empty & np.isin(np.asarray(stored, dtype=object),
                                               FAILED_STATUSES)
        told[column] = "store"
        return
    statuses_of = _statuses(sidecar, column)
    if statuses_of is None or not empty.any():
        return
    failed = sum(statuses_of.get(s, 0) for s in FAILED_STATUSES)
    if failed == int(empty.sum()):
        from_sidecar[column] = empty
        told[column] = "sidecar"
    elif failed:
        notes.append(f"column {column!r}: the sidecar counts {failed} failed scores "
                     f"but {int(empty.sum())} cells are empty, so they cannot be told "
                     "apart: its empty cells are missing")


def _no_sidecar_notes(frame: pd.DataFrame, wanted: Sequence[str],
                      texts: Mapping[str, BoolArray]) -> list[str]:
    """Without a sidecar: a note that empty cells are missing, where there are some."""
    with_empty = [c for c in wanted if (frame[c].isna().to_numpy() & ~texts[c]).any()]
    if not with_empty:
        return []
    return [f"no sidecar: empty cells are missing (never judged), and a "
            f"cell reading {FAILED_TEXT!r} is a failed verdict "
            f"(empty cells in {', '.join(map(repr, with_empty[:5]))}"
            f"{' ...' if len(with_empty) > 5 else ''})"]


def numeric_counted_as(failed_as: FailedAs, value: float | None = None) -> str:
    """How a numeric statistic counted a failed score under `failed_as`."""
    if failed_as.kind == "missing":
        return "dropped"
    if failed_as.kind in ("min", "max"):
        return (f"the column's {failed_as.kind}imum" if value is None
                else f"the column's {failed_as.kind}imum ({value!r})")
    return f"the value {failed_as.value!r}"


def apply_numeric(frame: pd.DataFrame, failed: FailedCells, columns: Iterable[str],
                  failed_as: FailedAs) -> dict[str, dict[str, Any]]:
    """Put each failed cell of `columns` (numeric already) to the value `failed_as` gives
    (in place; missing leaves it empty), and return per column the `failed` field of its
    results: rows failed, how counted, how told. The minimum and maximum are over the
    column's other scores in `frame`."""
    import numpy as np

    out = {}
    for column in columns:
        mask = failed.masks.get(column)
        fill = None
        if mask is not None and mask.any() and failed_as.kind != "missing":
            values = frame[column].to_numpy(dtype=float)
            others = values[~mask & np.isfinite(values)]
            if failed_as.kind == "value":
                fill = failed_as.value
            elif others.size:
                fill = float(others.min() if failed_as.kind == "min" else others.max())
            if fill is not None:
                frame[column] = np.where(mask, fill, values)
        out[column] = failed.info(column, failed_as, numeric_counted_as(failed_as, fill))
        if mask is not None and mask.any() and failed_as.kind in ("min", "max") \
                and fill is None:
            out[column]["counted_as"] = "dropped (the column has no other score)"
    return out


def apply_corpus(corpus: dict[str, dict[str, float]], failed: Mapping[str, set[str]],
                 columns: Iterable[str], failed_as: FailedAs) -> dict[str, dict[str, Any]]:
    """Put each failed corpus score of `columns` (`failed`: column -> systems) to the value
    `failed_as` gives (in place in `corpus`, column -> system -> score; the minimum and
    maximum over the column's other corpus scores), and return per column the `failed`
    field of its system-level results (`unit`: system)."""
    out = {}
    for column in columns:
        if column not in corpus:
            continue
        systems = failed.get(column, set()) & set(corpus[column])
        others = [v for s, v in corpus[column].items() if s not in systems and math.isfinite(v)]
        fill = None
        if systems and failed_as.kind == "value":
            fill = failed_as.value
        elif systems and others and failed_as.kind in ("min", "max"):
            fill = min(others) if failed_as.kind == "min" else max(others)
        if fill is not None:
            corpus[column] |= dict.fromkeys(systems, fill)
        counted = numeric_counted_as(failed_as, fill)
        if systems and failed_as.kind in ("min", "max") and fill is None:
            counted = "dropped (the column has no other corpus score)"
        out[column] = {"rows": len(systems), "counted_as": counted, "told_by": "sidecar",
                       "unit": "system"}
    return out


def header(failed_as: FailedAs, *, failed: bool) -> str:
    """What a text output's table titles say of the convention: `failed as X` where a
    failed cell was counted (`failed`) or the convention is not the default; nothing
    otherwise (a title that names a convention says something failed)."""
    return f"failed as {failed_as.name}" if failed or failed_as.kind != "missing" else ""


def any_failed(cells: Iterable[Mapping[str, Any] | None]) -> bool:
    """Whether any of these `failed` fields (`{"rows": N, ...}`) counts a failed cell."""
    return any(cell and cell.get("rows") for cell in cells)
