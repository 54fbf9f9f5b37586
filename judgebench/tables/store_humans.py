"""Human columns read from a store's labels: wherever a command takes a human column,
`store:CRITERION` is people's value of that criterion on each row (every annotator's current
answers, averaged: `judgebench.engine.labels.consensus`), `store:CRITERION.ANNOTATOR` one
annotator's answer. A row nobody answered is missing.

The store is, in order: the one the name gives (`store:runs.db:CRITERION`), the command's
`--store` (audit, compare-judges), the one the table's sidecar names; else an InputError
saying to name it. A pairwise criterion is read for a pairwise table (item, system_a,
system_b; a pair labelled the other way round counts as 1 - P(A better)), the others for a
wide table (item, system).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

PREFIX = "store:"


def store_columns(names: Iterable[str]) -> list[str]:
    """The names of `names` that are read from a store."""
    return [n for n in dict.fromkeys(names) if isinstance(n, str) and n.startswith(PREFIX)]


def parse(name: str) -> tuple[str | None, str, str | None]:
    """(store path or None, criterion, annotator or None) of a `store:` column name."""
    rest = name[len(PREFIX):]
    path: str | None = None
    if ":" in rest:
        path, rest = rest.rsplit(":", 1)
    criterion, _, annotator = rest.partition(".")
    return path or None, criterion, annotator or None


def find_store(name: str, given: str | None, store: str | Path | None,
               sidecar: dict[str, Any] | None, where: str) -> Path:
    """The store `name` reads (see the module)."""
    named = (sidecar or {}).get("store")
    for candidate in (given, store, named):
        if isinstance(candidate, str | Path) and str(candidate) not in ("", ":memory:"):
            return Path(candidate)
    raise InputError(f"{name} reads people's labels from a store, and none is named: give "
                     "--store (audit, compare-judges) or name it in the column, "
                     f"store:runs.db:{name[len(PREFIX):]}", path=where, field=name)


def add_store_columns(frame: pd.DataFrame, names: Iterable[str], *,
                      store: str | Path | None, sidecar: dict[str, Any] | None,
                      where: str) -> None:
    """Add each `store:` column of `names` that `frame` lacks, read from its store (see the
    module); a criterion of the wrong shape for the table, or labels that match none of its
    rows, is an InputError naming the column."""
    wanted = [n for n in store_columns(names) if n not in frame.columns]
    if not wanted:
        return  # the store (and pydantic, which it imports) is loaded only when asked for
    from judgebench.engine.labels import people_values

    pairwise = "system" not in frame.columns and {"system_a", "system_b"} <= set(frame.columns)
    for name in wanted:
        given, criterion, annotator = parse(name)
        path = find_store(name, given, store, sidecar, where)
        try:
            crit, values = people_values(path, criterion, annotator=annotator)
        except InputError as exc:
            raise InputError(exc.detail, path=exc.path, field=name) from None
        if crit.pairwise != pairwise:
            shape = "pairwise (item, system_a, system_b)" if crit.pairwise else \
                "of single outputs (item, system)"
            raise InputError(f"criterion {criterion!r} is {shape}, this table is not",
                             path=where, field=name)
        items = [str(v) for v in frame["item"]]
        if pairwise:
            cells = [_pair_value(values, item, a, b) for item, a, b in zip(
                items, [str(v) for v in frame["system_a"]], [str(v) for v in frame["system_b"]],
                strict=True)]
        else:
            cells = [values.get((item, system), math.nan) for item, system in
                     zip(items, [str(v) for v in frame["system"]], strict=True)]
        if values and all(math.isnan(c) for c in cells):
            raise InputError(f"none of the {len(values)} labelled keys of criterion "
                             f"{criterion!r} in {path} is a row of this table (its items "
                             "and systems differ)", path=where, field=name)
        frame[name] = cells


def _pair_value(values: dict[Any, float], item: str, a: str, b: str) -> float:
    if (item, (a, b)) in values:
        return values[(item, (a, b))]
    if (item, (b, a)) in values:
        return 1.0 - values[(item, (b, a))]
    return math.nan
