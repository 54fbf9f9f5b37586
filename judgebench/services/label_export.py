"""`judgebench labels export`: a store's labels as the human table the other commands read.

One row per labelled key (item, system; or item, system_a, system_b for pairwise criteria),
keys in sorted order; per criterion (by name) the people's value `human.<criterion>` (every
annotator's current answers: their mean, the choice most gave for choices,
`judgebench.engine.labels.consensus`), then one column per annotator (by name),
`human.<criterion>.<annotator>`, with that annotator's current answer as people gave it: a
scale's number, 0/1, a choice's name, a pair's `a`/`b`/`tie` (what `labels import` reads
back: an export imported again gives the same labels). People's value is a scale's mean,
the share of 1s, the choice most annotators gave (none on a tie), and for a pair the answer
where every annotator gave the same one, else their mean P(A better) as a decimal (a
pairwise table's human column takes both). `cant_tell`, `skipped` and no label are all an
empty cell: statuses are never values.

Pairwise criteria and criteria of single outputs make tables of different keys: one export
holds one kind (`criteria` chooses). The file is written atomically (a temporary file
renamed into place), after `judgebench.tables.destinations` checked that it is neither the
store nor one of its journal files.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.engine.labels import Criterion, consensus, criteria, current_labels
from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class ExportResult(Result):
    """What an export wrote: its rows and columns, and how to read each criterion's values."""

    store: str
    output: str | None
    rows: int
    columns: list[str]
    criteria: list[Criterion] = field(default_factory=list)
    table: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "output": self.output, "rows": self.rows,
                "columns": self.columns,
                "criteria": [{"name": c.name, "kind": c.kind, "scale": c.describe(),
                              **({"choices": list(c.choices)} if c.choices else {})}
                             for c in self.criteria]}

    def to_frame(self) -> pd.DataFrame:
        frame: pd.DataFrame = self.table
        return frame


def human_table(store: str | Path, *, names: tuple[str, ...] = ()
                ) -> tuple[pd.DataFrame, list[Criterion]]:
    """The human table of `store`'s labels of the criteria `names` (default: every one of
    them, all of one kind); see the module."""
    chosen = _chosen(store, names)
    columns: dict[str, dict[Any, float | str | None]] = {}
    text: set[str] = set()  # columns of names: a missing cell is None, not NaN
    keys: set[Any] = set()
    for crit in chosen:
        own = _criterion_columns(store, crit, keys)
        columns.update(own)
        if crit.kind in ("choices", "pairwise"):
            text.update(own)
    return _frame(keys, columns, text, pairwise=chosen[0].pairwise), chosen


def _chosen(store: str | Path, names: tuple[str, ...]) -> list[Criterion]:
    """The criteria `names` of `store` (default: all), all of one kind (pairwise or not)."""
    known = {c.name: c for c in criteria(store)}
    if not known:
        raise InputError("no labels in this store yet (no criterion defined): import some "
                         "with `judgebench labels import`", path=str(store))
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"no criterion {unknown[0]!r} in this store (it has: "
                         f"{', '.join(sorted(known))})", path=str(store), field="--criterion")
    chosen = [known[n] for n in sorted(set(names) or known)]
    if len({c.pairwise for c in chosen}) > 1:
        named = sorted(c.name for c in chosen if c.pairwise)
        raise InputError(f"pairwise criteria ({', '.join(named)}) and criteria of single "
                         "outputs make tables of different keys: export them apart with "
                         "--criterion NAME", path=str(store), field="--criterion")
    return chosen


def _criterion_columns(store: str | Path, crit: Criterion, keys: set[Any]
                       ) -> dict[str, dict[Any, float | str | None]]:
    """One criterion's columns (people's, then one per annotator) by key; the keys it
    labels are added to `keys`."""
    by_key: dict[Any, list[float]] = {}
    per_annotator: dict[str, dict[Any, float | str | None]] = {}
    for label in current_labels(store, criterion=crit.name):
        keys.add(label.key)
        answers = by_key.setdefault(label.key, [])
        cells = per_annotator.setdefault(label.annotator, {})
        if label.value is not None:
            answers.append(label.value)
            cells[label.key] = crit.answer_of(label.value)
    columns = {f"human.{crit.name}": {k: _people(crit, v) for k, v in by_key.items() if v}}
    for annotator in sorted(per_annotator):
        columns[f"human.{crit.name}.{annotator}"] = per_annotator[annotator]
    return columns


def _frame(keys: set[Any], columns: dict[str, dict[Any, float | str | None]], text: set[str],
           *, pairwise: bool) -> pd.DataFrame:
    """The table: one row per key in order, its key columns, then `columns`."""
    import pandas as pd

    ordered = sorted(keys, key=lambda k: (k[0], k[1]) if isinstance(k[1], str)
                     else (k[0], *k[1]))
    key_names = ["item", "system_a", "system_b"] if pairwise else ["item", "system"]
    data: dict[str, list[Any]] = {name: [] for name in key_names}
    for item, system in ordered:
        data["item"].append(item)
        if pairwise:
            data["system_a"].append(system[0])
            data["system_b"].append(system[1])
        else:
            data["system"].append(system)
    for name, cells in columns.items():
        data[name] = [cells.get(k, None if name in text else math.nan) for k in ordered]
    return pd.DataFrame(data)


def _people(crit: Criterion, values: list[float]) -> float | str | None:
    """People's value of one key (see the module): a choice's name (None on a tie), a
    pair's answer where all agree, else their mean P(A better) as a decimal's text."""
    value = consensus(crit, values)
    if crit.kind == "choices":
        return None if math.isnan(value) else crit.answer_of(value)
    if crit.kind == "pairwise":
        return crit.answer_of(values[0]) if len(set(values)) == 1 else repr(value)
    return value


def export_labels(store: str | Path, output: str | Path | None, *,
                  names: tuple[str, ...] = ()) -> ExportResult:
    """Write the human table of `store` (see the module) to `output` (CSV, JSONL or Parquet
    by extension; None: write nothing, the table is in the result)."""
    from judgebench.tables import destinations
    from judgebench.tables.io import write_table

    if output is not None:
        destinations.check([destinations.database("--store", store, probe=False),
                            destinations.table("-o", output)])
    frame, chosen = human_table(store, names=names)
    if output is not None:
        write_table(frame, output)
    return ExportResult(str(store), None if output is None else str(output), len(frame),
                        [str(c) for c in frame.columns], chosen, frame)
