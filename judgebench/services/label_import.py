"""`judgebench labels import`: people's labels from a file into a store.

The file is a human table or a file of labels (CSV, JSONL or Parquet): one row per label,
with `item`, `system` (or `system_a` and `system_b` for a pairwise criterion) and a value
column (`--column`; by default `value`, else `human.<criterion>`, else `<criterion>`), and,
optionally, `annotator` (else `--annotator` names every row's), `status` (answered,
cant_tell, skipped), `critique`, `shown_left`, `inclusion_probability`, `criterion` (which
must then be the one imported). A row without a value and without a status is no label and
is left out (counted). Every row is checked before anything is written; one bad row (an
InputError naming the file, its line or row, and the field) writes nothing, the criterion's
definition included. A row whose current label is the same answer already is not written
again (`unchanged`): importing one file twice changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.engine.labels import (
    Criterion,
    NewLabel,
    check_name,
    current_labels,
    plan_criterion,
    save_labels,
)
from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

#: How a status may be spelt in a file.
STATUS_SPELLINGS = {"answered": "answered", "cant_tell": "cant_tell", "can't tell": "cant_tell",
                    "cant tell": "cant_tell", "skipped": "skipped", "skip": "skipped"}
TEXT_COLUMNS = ("item", "system", "system_a", "system_b", "annotator", "status", "critique",
                "shown_left", "criterion")


@dataclass
class ImportResult(Result):
    """What an import wrote: `imported` new rows, `unchanged` rows equal to the current label,
    `without_value` rows left out (no value, no status)."""

    store: str
    path: str
    criterion: Criterion
    imported: int
    unchanged: int
    without_value: int
    annotators: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "file": self.path, "criterion": self.criterion.name,
                "kind": self.criterion.kind, "scale": self.criterion.describe(),
                "imported": self.imported, "unchanged": self.unchanged,
                "without_value": self.without_value, "annotators": self.annotators}


def import_labels(path: str | Path, *, store: str | Path, criterion: str,
                  annotator: str | None = None, kind: str | None = None,
                  low: float | None = None, high: float | None = None,
                  step: float | None = 1.0, choices: tuple[str, ...] = (),
                  description: str | None = None, show_reference: bool | None = None,
                  column: str | None = None) -> ImportResult:
    """Import the labels of `path` (see the module) as `criterion`, defined by `kind` and
    its scale when the store does not have it yet."""
    from judgebench.tables.io import read_table

    if annotator is not None:
        check_name(annotator, "annotator")
    crit = plan_criterion(store, criterion, kind=kind, description=description, low=low,
                          high=high, step=step, choices=choices,
                          show_reference=show_reference)
    where = str(path)
    from judgebench.tables.io import file_format

    # JSONL cells are typed already (a missing key must stay missing, not become "nan")
    frame = read_table(path, key=None, text_columns=() if file_format(path) == "jsonl"
                       else TEXT_COLUMNS)
    value_column = _value_column(frame, column, crit.name, where)
    if "annotator" in frame.columns and annotator is not None:
        raise InputError("the file has an annotator column and --annotator names one too: "
                         "give one of the two", path=where, field="--annotator")
    if "annotator" not in frame.columns and annotator is None:
        raise InputError("who gave these labels? give --annotator NAME (or an annotator "
                         "column)", path=where, field="--annotator")
    labels, without_value = _rows(frame, crit, value_column, annotator, where)
    current = {(lab.annotator, lab.key): lab
               for lab in current_labels(store, criterion=crit.name)} \
        if crit.created else {}
    new = [lab for lab in labels if not _same(current.get((lab.annotator,
                                                           (lab.item, lab.system))), lab, crit)]
    if new or not crit.created:
        save_labels(store, new, define=crit)
    return ImportResult(str(store), where, crit, len(new), len(labels) - len(new),
                        without_value, sorted({lab.annotator for lab in labels}))


def _value_column(frame: pd.DataFrame, column: str | None, criterion: str, where: str) -> str:
    columns = [str(c) for c in frame.columns]
    if column is not None:
        if column not in columns:
            raise InputError(f"no column {column!r}; columns are {columns}", path=where,
                             field="--column")
        return column
    for candidate in ("value", f"human.{criterion}", criterion):
        if candidate in columns:
            return candidate
    raise InputError(f"which column holds the labels? none is named value, "
                     f"human.{criterion} or {criterion}; columns are {columns}: give "
                     "--column", path=where, field="--column")


def _rows(frame: pd.DataFrame, crit: Criterion, value_column: str, annotator: str | None,
          where: str) -> tuple[list[NewLabel], int]:
    from judgebench.tables.columns import _where

    key_columns = ("item", "system_a", "system_b") if crit.pairwise else ("item", "system")
    for name in key_columns:
        if name not in frame.columns:
            shape = "a pairwise criterion's labels name the pair: item, system_a, system_b" \
                if crit.pairwise else "labels of single outputs name item and system"
            raise InputError(f"no {name} column ({shape}); columns are "
                             f"{[str(c) for c in frame.columns]}", path=where, field=name)
    records = frame.to_dict("records")
    out: list[NewLabel] = []
    seen: dict[tuple[Any, ...], int] = {}
    without_value = 0
    source = f"import:{Path(where).name}"
    for position, record in enumerate(records):
        at = _where(frame, where, position)
        try:
            label = _label(record, crit, value_column, annotator, source)
        except InputError as exc:
            raise InputError(exc.detail, path=where, field=exc.field, **at) from None
        if label is None:
            without_value += 1
            continue
        key = (label.annotator, label.item, label.system)
        if key in seen:
            raise InputError(f"a second label of item {label.item!r} of {label.system!r} by "
                             f"{label.annotator!r} (the first is at position "
                             f"{seen[key] + 1}): one label per annotator and item",
                             path=where, field="item", **at)
        seen[key] = position
        out.append(label)
    return out, without_value


def _text(record: dict[Any, Any], name: str) -> str | None:
    value = record.get(name)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _label(record: dict[Any, Any], crit: Criterion, value_column: str,
           annotator: str | None, source: str) -> NewLabel | None:
    """One row as a label to save, every cell checked (an InputError naming the field);
    None for a row without a value or a status."""
    named = _text(record, "criterion")
    if named is not None and named != crit.name:
        raise InputError(f"a label of criterion {named!r}, not {crit.name!r}",
                         field="criterion")
    who = annotator if annotator is not None else _text(record, "annotator")
    check_name(who, "annotator")
    item, system = _key(record, crit)
    answer = _answer(record, crit, value_column)
    if answer is None:
        return None
    status, value = answer
    shown = _text(record, "shown_left")
    if shown is not None and (not crit.pairwise or shown not in system):
        raise InputError(f"shown_left {shown!r} must name one of the pair's systems",
                         field="shown_left")
    return NewLabel(crit.name, str(who), item, system, value, status,
                    _text(record, "critique") or None, shown, None, _probability(record),
                    source)


def _key(record: dict[Any, Any], crit: Criterion) -> tuple[str, Any]:
    """(item, system or (system_a, system_b)) of a row."""
    item = _text(record, "item")
    if not item:
        raise InputError("empty item", field="item")
    if not crit.pairwise:
        system = _text(record, "system")
        if not system:
            raise InputError("empty system", field="system")
        return item, system
    a, b = _text(record, "system_a"), _text(record, "system_b")
    for name, given in (("system_a", a), ("system_b", b)):
        if not given:
            raise InputError("empty system", field=name)
    if a == b:
        raise InputError(f"a pair of one system with itself ({a!r})", field="system_b")
    return item, (a, b)


def _answer(record: dict[Any, Any], crit: Criterion, value_column: str
            ) -> tuple[str, object] | None:
    """(status, the answer as `save_labels` takes it: None unless answered), or None for a
    row without a value or a status."""
    raw = record.get(value_column)
    empty = raw is None or (isinstance(raw, float) and math.isnan(raw)) \
        or (isinstance(raw, str) and not raw.strip())
    spelt = _text(record, "status")
    if spelt is None and empty:
        return None
    status = "answered" if spelt is None else STATUS_SPELLINGS.get(spelt.strip().lower())
    if status is None:
        raise InputError(f"{spelt!r} is not a label status: answered, cant_tell or skipped",
                         field="status")
    if status != "answered":
        if not empty:
            raise InputError(f"a {status} label has no value (got {raw!r}): can't tell and "
                             "skip are statuses, never values", field=value_column)
        return status, None
    try:
        value = crit.value_of(raw)
    except InputError as exc:
        raise InputError(exc.detail, field=value_column) from None
    return status, crit.answer_of(value)


def _probability(record: dict[Any, Any]) -> float | None:
    given = record.get("inclusion_probability")
    if given is None or (isinstance(given, float) and math.isnan(given)):
        return None
    try:
        probability = float(given)
    except (TypeError, ValueError):
        raise InputError(f"{given!r} is not a number", field="inclusion_probability") from None
    if not 0 < probability <= 1:
        raise InputError(f"{given!r} is not a probability in (0, 1]",
                         field="inclusion_probability")
    return probability


def _same(current: Any, new: NewLabel, crit: Criterion) -> bool:
    """Whether `current` (a stored Label, or None) is `new`'s answer already."""
    if current is None:
        return False
    value = None if new.value is None else crit.value_of(new.value)
    return (current.status, current.value, current.critique, current.shown_left,
            current.inclusion_probability) == (new.status, value, new.critique,
                                               new.shown_left, new.inclusion_probability)
