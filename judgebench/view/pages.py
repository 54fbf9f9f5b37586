"""What each page of `judgebench view` shows, as plain data: the services' results (runs,
logs, diff) filtered and sorted as a page's query string asks, and the audit reports found
beside the store. Nothing here knows HTTP or HTML (app.py serves it); the store is only read
(`readonly=True`: an older schema is refused, never migrated) and is not checked again on each
request (`checked=True`: `judgebench view` checks it once before serving).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.services.runs import (
    PAGE_SORTS,
    LogEntry,
    LogsResult,
    RunRow,
    log_page,
    logs,
    runs,
)

if TYPE_CHECKING:
    import pandas as pd

#: A run's outcome as `judgebench runs` shows it (`killed`: a running run whose process is gone).
OUTCOMES = ("running", "ok", "interrupted", "budget_stop", "error", "killed")
#: The columns a run's scores can be sorted by (default: the order the run wrote them).
SCORE_SORTS = tuple(PAGE_SORTS)
#: Scores per page of a run's table.
PAGE_SIZE = 100
#: The audit report a file must be (`judgebench audit --report x.json`) to be listed.
AUDIT_FORMAT = "judgebench-audit"
#: JSON files larger than this beside a store are not read as audit reports.
MAX_REPORT_BYTES = 64 << 20

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def date_filter(text: str | None, name: str) -> str | None:
    """A `since`/`until` filter: a YYYY-MM-DD date (UTC, as the runs table's times), or None."""
    if not text:
        return None
    if not _DATE.fullmatch(text):
        raise InputError(f"a date is YYYY-MM-DD, not {text!r}", field=name)
    return text


def run_metrics(run: RunRow) -> set[str]:
    """What a metric filter may name in `run`: its columns, their metric names and signatures
    (the rule `logs --metric` applies)."""
    names: set[str] = set()
    for column, signature in (run.metrics or {}).items():
        names |= {column, signature, signature.split("@", 1)[0]}
    return names


def filter_runs(rows: Sequence[RunRow], *, outcome: str | None = None,
                metric: str | None = None, since: str | None = None,
                until: str | None = None) -> list[RunRow]:
    """The runs with this outcome, that ran this metric, started in [since, until] (dates,
    both included)."""
    return [run for run in rows
            if (not outcome or run.outcome == outcome)
            and (not metric or metric in run_metrics(run))
            and (since is None or run.started[:10] >= since)
            and (until is None or run.started[:10] <= until)]


@dataclass(frozen=True)
class RunsPage:
    store: str
    runs: list[RunRow]
    total: int
    outcomes: list[str]
    metrics: list[str]
    filters: dict[str, str | None]


def runs_page(store: Path, *, outcome: str | None = None, metric: str | None = None,
              since: str | None = None, until: str | None = None) -> RunsPage:
    if outcome and outcome not in OUTCOMES:
        raise InputError(f"unknown outcome {outcome!r} (outcomes: {', '.join(OUTCOMES)})",
                         field="status")
    every = runs(store, limit=0, readonly=True, checked=True).runs
    since, until = date_filter(since, "since"), date_filter(until, "until")
    shown = filter_runs(every, outcome=outcome, metric=metric, since=since, until=until)
    metrics = sorted({name for run in every for name in (run.metrics or {})}
                     | {sig.split("@", 1)[0] for run in every
                        for sig in (run.metrics or {}).values()})
    return RunsPage(store=str(store), runs=shown, total=len(every), outcomes=list(OUTCOMES),
                    metrics=metrics, filters={"status": outcome, "metric": metric,
                                              "since": since, "until": until})


@dataclass(frozen=True)
class RunPage:
    result: LogsResult
    entries: list[LogEntry]
    page: int
    pages: int
    columns: list[str]
    near: list[int | None]
    filters: dict[str, Any]


def run_page(store: Path, run: int, *, metric: str | None = None,
             statuses: Sequence[str] = (), item: str | None = None,
             system: str | None = None, sort: str | None = None, descending: bool = False,
             page: int = 1) -> RunPage:
    """One run's scores (as `judgebench logs` reads them: the scores that run wrote) with the
    filters, sorted, one page of PAGE_SIZE: paged, filtered and sorted in SQL
    (`judgebench.services.runs.log_page`), so a page reads its rows, not the run's."""
    first = log_page(store, run, metric=metric, statuses=statuses, item=item, system=system,
                     sort=sort, descending=descending, offset=(max(page, 1) - 1) * PAGE_SIZE,
                     limit=PAGE_SIZE, readonly=True, checked=True)
    pages = max(1, math.ceil(first.matched / PAGE_SIZE))
    result = first if page <= pages else log_page(
        store, run, metric=metric, statuses=statuses, item=item, system=system, sort=sort,
        descending=descending, offset=(pages - 1) * PAGE_SIZE, limit=PAGE_SIZE, readonly=True,
        checked=True)
    page = min(max(page, 1), pages)
    return RunPage(result=result, entries=result.entries, page=page, pages=pages,
                   columns=sorted(result.run.metrics or {}), near=near_pages(page, pages),
                   filters={"metric": metric, "status": list(statuses), "item": item,
                            "system": system, "sort": sort,
                            "order": "desc" if descending else "asc"})


def near_pages(page: int, pages: int) -> list[int | None]:
    """The page numbers a run page links to: the first, the last and those within 3 of
    `page`, None where numbers are left out."""
    shown = sorted({1, pages, *range(max(1, page - 3), min(pages, page + 3) + 1)})
    out: list[int | None] = []
    for n in shown:
        if out and out[-1] is not None and n - (out[-1] or 0) > 1:
            out.append(None)
        out.append(n)
    return out


@dataclass(frozen=True)
class Order:
    """One order a pairwise judge was asked in: which output it was shown first, its verdict
    (in terms of the original A and B) and raw answer, and the judge call."""

    name: str
    label: str
    verdict: str | None
    raw: str | None
    call: Any


def pair_orders(entry: LogEntry) -> list[Order] | None:
    """The orders of a pairwise judge's score (None for any other score). The judge asks A
    first, then B first (`judge.pairwise`), so its calls are taken in that order."""
    extra = entry.extra
    if "verdict_ab" not in extra and "verdict_ba" not in extra:
        return None
    names = [name for name in ("ab", "ba") if f"verdict_{name}" in extra]
    per_order = max(1, len(entry.calls) // len(names)) if entry.calls else 0
    labels = {"ab": "A shown first", "ba": "B shown first"}
    return [Order(name=name, label=labels[name], verdict=extra.get(f"verdict_{name}"),
                  raw=extra.get(f"raw_{name}"),
                  call=entry.calls[i * per_order:(i + 1) * per_order] if per_order else [])
            for i, name in enumerate(names)]


@dataclass(frozen=True)
class ScorePage:
    run: RunRow
    entries: list[LogEntry]
    orders: list[list[Order] | None]


def score_page(store: Path, run: int, *, signature: str, item: str, system: str) -> ScorePage:
    """Every draw of one score (a signature's score of one item and system) that `run` wrote,
    with its judge calls from the run's judge cache."""
    result = logs(store, run, metric=signature, item=item, system=system, limit=0,
                  readonly=True, checked=True)
    entries = [e for e in result.entries if e.level == "segment" and e.signature == signature]
    if not entries:
        raise InputError(f"run {result.run.id} wrote no score of {signature!r} for item "
                         f"{item!r}, system {system!r}", field="item")
    return ScorePage(run=result.run, entries=entries, orders=[pair_orders(e) for e in entries])


@dataclass(frozen=True)
class CompareRow:
    item: str
    system: str
    a: float | None
    b: float | None
    flip: bool


@dataclass(frozen=True)
class ComparePage:
    signatures: list[tuple[str, str]]
    a: str | None
    b: str | None
    result: Any = None
    rows: list[CompareRow] = field(default_factory=list)
    shown: list[CompareRow] = field(default_factory=list)
    flips: int = 0
    #: Rows both sides scored (a flip is one of them where the scores differ).
    scored: int = 0
    filters: dict[str, Any] = field(default_factory=dict)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def store_signatures(store: Path) -> list[tuple[str, str]]:
    """(signature, "column (runs …)") for each signature the store's runs name, newest run
    first."""
    seen: dict[str, tuple[str, list[int]]] = {}
    for run in runs(store, limit=0, readonly=True, checked=True).runs:
        for column, signature in (run.metrics or {}).items():
            seen.setdefault(signature, (column, []))[1].append(run.id)
    return [(sig, f"{column} (run{'s' if len(ids) > 1 else ''} "
                  f"{', '.join(map(str, sorted(ids)))})")
            for sig, (column, ids) in seen.items()]


def run_signature(store: Path, run: int, column: str | None) -> str:
    """The signature of `column` in `run` (default: its first column)."""
    found = [r for r in runs(store, limit=0, readonly=True, checked=True).runs if r.id == run]
    if not found:
        raise InputError(f"no run {run}", field="run_a")
    metrics = found[0].metrics or {}
    if not metrics:
        raise InputError(f"run {run} names no metric", field="run_a")
    if column is None:
        return next(iter(metrics.values()))
    if column not in metrics:
        raise InputError(f"run {run} has no column {column!r} (it has: "
                         f"{', '.join(metrics)})", field="column")
    return metrics[column]


def compare_page(store: Path, *, a: str | None = None, b: str | None = None,
                 run_a: int | None = None, run_b: int | None = None,
                 column: str | None = None, flips_only: bool = False,
                 sort: str | None = None, descending: bool = False) -> ComparePage:
    """Two judges (two signatures of the store), or the same column of two runs, item by
    item: `judgebench diff STORE STORE --column-a A --column-b B` (flip rate, kappa, KL/JS
    with item-bootstrap CIs) and the matched scores, a flip where they differ."""
    signatures = store_signatures(store)
    if run_a is not None and run_b is not None:
        a, b = run_signature(store, run_a, column), run_signature(store, run_b, column)
    if not a or not b:
        return ComparePage(signatures=signatures, a=a, b=b)
    from judgebench.services.diff import _load, diff

    if a == b:
        raise InputError("A and B are the same signature: compare two judges or two runs "
                         "that scored with different ones", field="b")
    result = diff(store, store, column_a=a, column_b=b, untouched=True)
    rows = _compare_rows(_load(store, untouched=True).frame, a, b)
    shown = [r for r in rows if r.flip] if flips_only else rows
    if sort is not None:
        shown = _sorted_rows(shown, sort, descending)
    return ComparePage(signatures=signatures, a=a, b=b, result=result, rows=rows, shown=shown,
                       flips=sum(r.flip for r in rows),
                       scored=sum(r.a is not None and r.b is not None for r in rows),
                       filters={"flips": flips_only, "sort": sort,
                                "order": "desc" if descending else "asc"})


def _compare_rows(frame: pd.DataFrame, a: str, b: str) -> list[CompareRow]:
    """The (item, system) rows that either signature scored, a flip where both did and
    they differ."""
    rows = []
    for record in frame[["item", "system", a, b]].to_dict("records"):
        va, vb = record[a], record[b]
        if _missing(va) and _missing(vb):
            continue
        va = None if _missing(va) else float(va)
        vb = None if _missing(vb) else float(vb)
        rows.append(CompareRow(item=str(record["item"]), system=str(record["system"]), a=va,
                               b=vb, flip=va is not None and vb is not None and va != vb))
    return rows


def _sorted_rows(rows: list[CompareRow], sort: str, descending: bool) -> list[CompareRow]:
    """`rows` by `sort` (item, system, a or b), the rows without that value last."""
    if sort not in ("item", "system", "a", "b"):
        raise InputError(f"unknown sort {sort!r} (sorts: item, system, a, b)", field="sort")
    present = sorted((r for r in rows if getattr(r, sort) is not None),
                     key=lambda r: getattr(r, sort), reverse=descending)
    return present + [r for r in rows if getattr(r, sort) is None]


@dataclass(frozen=True)
class AuditFile:
    """An audit report (`judgebench audit --report x.json`) found beside the store or in a
    --reports folder: `of_store` when its `inputs.store` names this store."""

    key: str
    path: Path
    title: str
    created: str
    scores: str
    of_store: bool
    data: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


def _names_store(named: Any, report: Path, store: Path) -> bool:
    if not isinstance(named, str) or not named:
        return False
    target = store.resolve()
    given = Path(named)
    candidates = [given] if given.is_absolute() else [given, report.parent / given]
    return any(c.resolve() == target for c in candidates)


def audit_reports(store: Path, folders: Sequence[Path] = ()) -> list[AuditFile]:
    """The JSON audit reports in the store's folder and in `folders` (not their subfolders),
    those that name this store first, then by file name. Other JSON files are passed over."""
    found: dict[Path, AuditFile] = {}
    for folder in [store.resolve().parent, *folders]:
        if not folder.is_dir():
            raise InputError("not a folder", path=str(folder), field="--reports")
        for path in sorted(folder.glob("*.json")):
            resolved = path.resolve()
            if resolved in found or not path.is_file() \
                    or path.stat().st_size > MAX_REPORT_BYTES:
                continue
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError):
                continue
            if not isinstance(data, dict) or data.get("format") != AUDIT_FORMAT:
                continue
            given = data.get("inputs")
            inputs: dict[str, Any] = given if isinstance(given, dict) else {}
            found[resolved] = AuditFile(
                key=hashlib.sha256(str(resolved).encode()).hexdigest()[:16], path=path,
                title=str(data.get("title") or path.name), created=str(data.get("created", "")),
                scores=str(inputs.get("scores") or ""),
                of_store=_names_store(inputs.get("store"), path, store), data=data)
    return sorted(found.values(), key=lambda r: (not r.of_store, r.path.name))
