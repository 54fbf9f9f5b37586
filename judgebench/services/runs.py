"""The runs and logs services: what a store says about its runs (`judgebench runs`) and about
each score a run wrote (`judgebench logs`), a judge's prompt and answer included.

Both read the store read-only; a store of an older schema is first migrated in place (as
`score` would). A judge's prompt and answer come from the judge cache the run used (its `runs`
row names it; `cache=` reads another): a score row lists the cache keys of its requests
(`scores.request_keys`), answers are in the cache's `responses`, failed calls in `failures`.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judgebench.engine.store import RUN_COLUMNS, Store
from judgebench.errors import InputError
from judgebench.models import Status
from judgebench.results import Result
from judgebench.tables.io import process_alive

#: The fields of one `runs --json` object, in order (docs/guides/runs-and-logs.md).
RUN_FIELDS = (
    "id", "started", "ended", "wall_s", "outcome", "error", "command", "input_path",
    "input_hash", "selection", "metrics", "statuses", "rows", "computed", "reused", "ok",
    "failed", "tokens_in", "tokens_out", "cost_usd", "version", "pid", "cache",
    "fingerprints", "warnings",
)
#: The fields of one `logs --json` object, in order (docs/guides/runs-and-logs.md).
LOG_FIELDS = (
    "run_id", "level", "column", "metric", "signature", "item", "system", "status", "reason",
    "value", "raw", "rationale", "extra", "tokens_in", "tokens_out", "cost_usd", "latency_s",
    "calls",
)
#: The fields of one entry of a log's `calls`: one judge request and what came of it.
CALL_FIELDS = ("key", "found", "messages", "prompt", "answer", "error", "tokens_in",
               "tokens_out", "cost_usd", "latency_s")


@dataclass(frozen=True)
class RunRow:
    """One row of the `runs` table, with `ok` (ok scores over every column) added and a
    `running` run whose process is gone on this machine shown as `killed`."""

    id: int
    started: str
    ended: str | None
    wall_s: float | None
    outcome: str | None
    error: str | None
    command: str | None
    input_path: str | None
    input_hash: str | None
    selection: dict[str, Any] | None
    metrics: dict[str, str] | None
    statuses: dict[str, dict[str, int]] | None
    rows: int | None
    computed: int | None
    reused: int | None
    ok: int | None
    failed: int | None
    tokens_in: int | None
    tokens_out: int | None
    cost_usd: float | None
    version: str
    pid: int
    cache: str | None
    #: Per column, what answered its scores of this run ({fingerprint text: scores}).
    fingerprints: dict[str, dict[str, int]] = field(default_factory=dict)
    #: What answered changed during this run, or since the latest earlier run of a signature
    #: (`judgebench.engine.fingerprints`).
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {name: data[name] for name in RUN_FIELDS}


@dataclass(frozen=True)
class RunsResult(Result):
    """The recent runs of a store, newest first."""

    store: str
    runs: list[RunRow]

    def to_dict(self) -> list[dict[str, Any]]:
        return [run.to_dict() for run in self.runs]


@dataclass(frozen=True)
class Call:
    """One judge request of a score: its cache key, the prompt (chat `messages` or a
    completion `prompt`) and the answer or the error, as the judge cache holds them (`found`
    is False when it holds nothing under the key: another cache, or caching off)."""

    key: str
    found: bool = False
    messages: list[dict[str, str]] | None = None
    prompt: str | None = None
    answer: str | None = None
    error: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {name: data[name] for name in CALL_FIELDS}


@dataclass(frozen=True)
class LogEntry:
    """One score a run wrote: a segment score (`item` set) or a corpus score (`level`
    corpus, per system). `column` is the table column of its signature in that run."""

    run_id: int | None
    level: str
    column: str | None
    metric: str
    signature: str
    item: str | None
    system: str
    status: str
    reason: str | None
    value: float | None
    raw: str | None = None
    rationale: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    calls: list[Call] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in LOG_FIELDS}
        data["calls"] = [call.to_dict() for call in self.calls]
        return data


@dataclass(frozen=True)
class LogsResult(Result):
    """The scores of one run that match the filters: `entries` (at most the limit asked
    for) of `matched`."""

    store: str
    run: RunRow
    entries: list[LogEntry]
    matched: int

    def to_dict(self) -> list[dict[str, Any]]:
        return [entry.to_dict() for entry in self.entries]


#: Set while a caller wants the store's reads in this context stopped when an event is set
#: (`interrupting`).
_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "judgebench_store_stop", default=None)
#: SQLite virtual machine steps between two looks at the stop event.
_STOP_STEPS = 10_000


@contextlib.contextmanager
def interrupting(stop: threading.Event) -> Iterator[None]:
    """Within this block (in this thread), a store query of these services ends with
    `sqlite3.OperationalError` ("interrupted") soon after `stop` is set: what `judgebench
    view` does when a browser goes away or the server stops."""
    token = _STOP.set(stop)
    try:
        yield
    finally:
        _STOP.reset(token)


@contextlib.contextmanager
def _reading(path: str | Path, *, readonly: bool = False, checked: bool = False
             ) -> Iterator[sqlite3.Connection]:
    """A connection that only reads the store at `path`, after it is checked (and, if it is
    of an older schema, migrated in place) as `Store` does. A store this user may write is
    opened as `score` opens it, so closing it leaves no -wal/-shm files behind; another, or
    any store when `readonly` (`judgebench view`: never write), is opened read-only and must
    be of this schema. `checked`: the file was checked already (`Store`'s `checked`)."""
    path = Path(path)
    writable = (not readonly and path.is_file() and path.stat().st_size > 0
                and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))
    store = Store(path, readonly=not writable, untouched=readonly, checked=checked)
    # a version 3 or 4 store has its scores tables (no labels, v3 no index): read as is
    if store.kind not in ("current", "empty", "v4", "v3") and not writable:
        store.close()
        if readonly:
            raise InputError("store of an older schema, read here without writing: run "
                             f"`judgebench runs --store {path}` once to upgrade it in place",
                             path=str(path))
        raise InputError("store of an older schema that this user cannot upgrade in place "
                         "(not writable): copy it somewhere writable", path=str(path))
    try:
        store.conn.execute("PRAGMA query_only = ON")
        stop = _STOP.get()
        if stop is not None:
            store.conn.set_progress_handler(lambda: int(stop.is_set()), _STOP_STEPS)
        yield store.conn
    finally:
        store.close()


#: The JSON columns of the store and the shape each holds (None: the column is empty).
_JSON_SHAPES: dict[str, Any] = {
    "runs.selection": dict[str, Any], "runs.metrics": dict[str, str],
    "runs.statuses": dict[str, dict[str, int]], "scores.extra": dict[str, Any],
    "scores.request_keys": list[str], "scores.fingerprint": dict[str, str],
}


def _json(text: str | None, *, store: str | Path, row: int, field: str) -> Any:
    """A JSON column of the store, read and checked against its shape (`_JSON_SHAPES`); a
    damaged cell is an InputError naming the store, the row (`id`, or `rowid` of `scores`)
    and the column."""
    if not text:
        return None
    from pydantic import TypeAdapter, ValidationError

    def damaged(what: str) -> InputError:
        return InputError(f"{what}: the store is damaged; restore it from a copy",
                          path=str(store), row=row, field=field)

    try:
        value = json.loads(text)
    except (ValueError, RecursionError, TypeError) as exc:
        raise damaged(f"not valid JSON ({_reason(exc)})") from None
    try:
        return TypeAdapter(_JSON_SHAPES[field]).validate_python(value, strict=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise damaged(f"not {_shape_name(field)} ({error['msg']}{' at ' + where if where else ''})"
                      ) from None


def _reason(exc: Exception) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__


def _shape_name(field: str) -> str:
    shape = _JSON_SHAPES[field]
    return "a JSON array of text" if shape == list[str] else "a JSON object of the right kind"


def _run_row(row: sqlite3.Row, store: str | Path) -> RunRow:
    data = {name: row[name] for name in RUN_COLUMNS}
    for name in ("selection", "metrics", "statuses"):
        data[name] = _json(data[name], store=store, row=data["id"], field=f"runs.{name}")
    if (data["outcome"] == "running" and data["pid"] != os.getpid()
            and not process_alive(data["pid"])):
        data["outcome"] = "killed"
    statuses = data["statuses"]
    data["ok"] = (None if statuses is None
                  else sum(counts.get(str(Status.OK), 0) for counts in statuses.values()))
    return RunRow(**data)


def runs(store: str | Path, *, limit: int = 20, readonly: bool = False,
         checked: bool = False) -> RunsResult:
    """The `limit` most recent runs of `store` (0: all), newest first, each with what
    answered its judges and the fingerprint warnings (`judgebench.engine.fingerprints`).
    `readonly`: never write the store (an older schema is refused, not migrated); `checked`:
    it was checked already (`Store`)."""
    from judgebench.engine import fingerprints
    from judgebench.engine.store import fingerprint_counts

    with _reading(store, readonly=readonly, checked=checked) as conn:
        conn.row_factory = sqlite3.Row
        query = "SELECT * FROM runs ORDER BY id DESC" + (" LIMIT ?" if limit else "")
        rows = [_run_row(r, store) for r in conn.execute(query, (limit,) if limit else ())]
        found = fingerprint_counts(conn, {sig for run in rows
                                          for sig in (run.metrics or {}).values()})
    return RunsResult(store=str(store), runs=[dataclasses.replace(
        run, fingerprints={column: found[sig][run.id]
                           for column, sig in (run.metrics or {}).items()
                           if run.id in found.get(sig, {})},
        warnings=fingerprints.warnings(found, run.id, run.metrics or {})) for run in rows])


def logs(store: str | Path, run: int | None = None, *, metric: str | None = None,
         statuses: Sequence[str] = (), item: str | None = None, system: str | None = None,
         limit: int = 50, cache: str | Path | None = None,
         readonly: bool = False, checked: bool = False) -> LogsResult:
    """The scores run `run` (default: the latest) wrote to `store`, in the order it wrote
    them, segment scores then corpus scores; at most `limit` (0: all).

    `metric` matches a column as written on the command line, a metric name or a signature;
    `statuses` keeps those statuses; `item`/`system` keep one item or system (corpus scores
    have no item). Judge calls are read from `cache` (default: the run's judge cache).
    `readonly`: never write the store (an older schema is refused, not migrated); `checked`:
    it was checked already (`Store`)."""
    _check_statuses(statuses)
    with _reading(store, readonly=readonly, checked=checked) as conn:
        conn.row_factory = sqlite3.Row
        q = _Query.of(conn, store, run, metric=metric, statuses=statuses, item=item,
                      system=system)
        about, columns, matched, corpus_matched = q.about, q.columns, q.matched, q.corpus_matched
        where, params, segment_where, segment_params = (q.where, q.params, q.segment_where,
                                                        q.segment_params)
        bound = " LIMIT ?" if limit else ""
        rows = conn.execute(
            f"SELECT {_SEGMENT_FIELDS} FROM scores WHERE {' AND '.join(segment_where)}"
            f" ORDER BY rowid{bound}",
            [*segment_params, *([limit] if limit else [])]).fetchall()
        entries = [_segment_entry(about.id, r, columns, store) for r in rows]
        room = limit - len(entries) if limit else 0
        if corpus_matched and (not limit or room > 0):
            corpus_rows = conn.execute(
                "SELECT system, metric, signature, status, reason, value FROM corpus_scores"
                f" WHERE {' AND '.join(where)} ORDER BY rowid" + bound,
                [*params, *([room] if limit else [])]).fetchall()
            entries += [_corpus_entry(about.id, r, columns) for r in corpus_rows]
    cache_path = about.cache if cache is None else str(_named_cache(Path(cache)))
    if cache_path is not None and any(e.calls for e in entries):
        entries = _with_calls(entries, Path(cache_path), untouched=readonly)
    return LogsResult(store=str(store), run=about, entries=entries,
                      matched=matched + corpus_matched)


#: The largest run id SQLite can hold; a larger one names no run.
MAX_RUN_ID = 2**63 - 1


def _check_statuses(statuses: Sequence[str]) -> None:
    for status in statuses:
        if status not in {str(s) for s in Status}:
            known = ", ".join(str(s) for s in Status)
            raise InputError(f"unknown status '{status}' (statuses: {known})",
                             field="--status")


def _the_run(conn: sqlite3.Connection, store: str | Path, run: int | None) -> RunRow:
    """Run `run` of the store (default: the latest), or an InputError saying which it has."""
    found = None if run is not None and not 0 <= run <= MAX_RUN_ID else conn.execute(
        "SELECT * FROM runs WHERE id = " + ("?" if run is not None else "(SELECT MAX(id)"
                                            " FROM runs)"),
        (run,) if run is not None else ()).fetchone()
    if found is None:
        have = conn.execute("SELECT MIN(id), MAX(id) FROM runs").fetchone()
        raise InputError("no runs in this store yet" if have[0] is None else
                         f"no run {run} (runs {have[0]} to {have[1]}: see `judgebench "
                         f"runs --store {store}`)", path=str(store))
    return _run_row(found, store)


@dataclasses.dataclass(frozen=True)
class _Query:
    """A run's filtered scores as `logs` and `log_page` select them: the run, its columns by
    signature, the WHERE terms (both score tables; `segment_*`: `scores` alone) and the
    number of rows each matches."""

    about: RunRow
    columns: dict[str, str]
    where: list[str]
    params: list[int | str]
    segment_where: list[str]
    segment_params: list[int | str]
    matched: int
    corpus_matched: int

    @classmethod
    def of(cls, conn: sqlite3.Connection, store: str | Path, run: int | None, *,
           metric: str | None, statuses: Sequence[str], item: str | None,
           system: str | None) -> _Query:
        about = _the_run(conn, store, run)
        columns = {sig: column for column, sig in (about.metrics or {}).items()}
        where, params, segment_where, segment_params = _filters(
            conn, about, columns, metric=metric, statuses=statuses, item=item, system=system)
        matched, corpus_matched = _counts(conn, where, params, segment_where, segment_params,
                                          item is not None)
        return cls(about, columns, where, params, segment_where, segment_params, matched,
                   corpus_matched)


def _filters(conn: sqlite3.Connection, about: RunRow, columns: dict[str, str], *,
             metric: str | None, statuses: Sequence[str], item: str | None,
             system: str | None) -> tuple[list[str], list[int | str], list[str],
                                          list[int | str]]:
    """The WHERE terms and parameters of the filters: for both score tables, then for
    `scores` alone (the item filter: corpus scores have no item)."""
    signatures = _signatures(conn, about, metric, columns)
    where: list[str] = ["run_id = ?"]
    params: list[int | str] = [about.id]
    if signatures is not None:
        where.append(f"signature IN ({','.join('?' * len(signatures))})")
        params += signatures
    if statuses:
        where.append(f"status IN ({','.join('?' * len(statuses))})")
        params += list(statuses)
    if system is not None:
        where.append("system = ?")
        params.append(system)
    segment_where = [*where, *(["item = ?"] if item is not None else [])]
    segment_params = [*params, *([item] if item is not None else [])]
    return where, params, segment_where, segment_params


def _counts(conn: sqlite3.Connection, where: list[str], params: list[int | str],
            segment_where: list[str], segment_params: list[int | str],
            by_item: bool) -> tuple[int, int]:
    matched = conn.execute(f"SELECT COUNT(*) FROM scores WHERE {' AND '.join(segment_where)}",
                           segment_params).fetchone()[0]
    corpus_matched = 0 if by_item else conn.execute(
        f"SELECT COUNT(*) FROM corpus_scores WHERE {' AND '.join(where)}", params
    ).fetchone()[0]
    return int(matched), int(corpus_matched)


#: What `log_page` can sort by: a score's field and the SQL of it in each score table.
PAGE_SORTS = {
    "item": ("item", "NULL"), "system": ("system", "system"), "column": ("", ""),
    "status": ("status", "status"), "value": ("value", "value"),
    "tokens_in": ("tokens_in", "NULL"), "tokens_out": ("tokens_out", "NULL"),
    "cost_usd": ("cost_usd", "NULL"), "latency_s": ("latency_s", "NULL"),
}
_SEGMENT_FIELDS = ("rowid, item, system, metric, signature, status, reason, value, raw,"
                   " rationale, extra, tokens_in, tokens_out, cost_usd, latency_s,"
                   " request_keys, fingerprint")


def log_page(store: str | Path, run: int, *, metric: str | None = None,
             statuses: Sequence[str] = (), item: str | None = None,
             system: str | None = None, sort: str | None = None, descending: bool = False,
             offset: int = 0, limit: int = 100, readonly: bool = False,
             checked: bool = False) -> LogsResult:
    """One page of what `logs` lists (the same filters and `matched`), ordered in SQL: by
    `sort` (one of PAGE_SORTS; a missing value last either way, ties in the order written)
    or in the order written (segment scores, then corpus scores). Only the page's rows are
    read (the index `scores_by_run`); judge calls are left as their keys."""
    if sort is not None and sort not in PAGE_SORTS:
        raise InputError(f"unknown sort {sort!r} (sorts: {', '.join(PAGE_SORTS)})",
                         field="sort")
    _check_statuses(statuses)
    with _reading(store, readonly=readonly, checked=checked) as conn:
        conn.row_factory = sqlite3.Row
        q = _Query.of(conn, store, run, metric=metric, statuses=statuses, item=item,
                      system=system)
        about, columns, matched, corpus_matched = q.about, q.columns, q.matched, q.corpus_matched
        where, params, segment_where, segment_params = (q.where, q.params, q.segment_where,
                                                        q.segment_params)
        if sort is None:
            seg_ids = [("s", r[0]) for r in conn.execute(
                f"SELECT rowid FROM scores WHERE {' AND '.join(segment_where)}"
                " ORDER BY rowid LIMIT ? OFFSET ?", [*segment_params, limit, offset])]
            room = limit - len(seg_ids)
            keys = seg_ids + ([("c", r[0]) for r in conn.execute(
                f"SELECT rowid FROM corpus_scores WHERE {' AND '.join(where)}"
                " ORDER BY rowid LIMIT ? OFFSET ?",
                [*params, room, max(0, offset - matched)])]
                if room > 0 and corpus_matched else [])
        else:
            keys = _sorted_keys(conn, sort, descending, columns, where, params, segment_where,
                                segment_params, corpus=corpus_matched > 0, offset=offset,
                                limit=limit)
        entries = _entries(conn, about, columns, keys, store)
    return LogsResult(store=str(store), run=about, entries=entries,
                      matched=matched + corpus_matched)


def _sorted_keys(conn: sqlite3.Connection, sort: str, descending: bool,
                 columns: dict[str, str], where: list[str], params: list[int | str],
                 segment_where: list[str], segment_params: list[int | str], *, corpus: bool,
                 offset: int, limit: int) -> list[tuple[str, int]]:
    """The (table, rowid) of one page of the scores sorted by `sort`; only the keys are
    sorted (SQLite keeps offset + limit of them), the rows are read afterwards."""
    mapping: list[str] = []
    if sort == "column":
        whens = " ".join("WHEN ? THEN ?" for _ in columns)
        mapping = [text for pair in columns.items() for text in pair]
        segment_key = corpus_key = f"CASE signature {whens} ELSE NULL END" if columns \
            else "NULL"
    else:
        segment_key, corpus_key = PAGE_SORTS[sort]
    parts = [f"SELECT 0 AS kind, rowid AS id, {segment_key} AS key FROM scores"
             f" WHERE {' AND '.join(segment_where)}"]
    values: list[int | str] = [*mapping, *segment_params]
    if corpus:
        parts.append(f"SELECT 1, rowid, {corpus_key} FROM corpus_scores"
                     f" WHERE {' AND '.join(where)}")
        values += [*(mapping if corpus_key != "NULL" else []), *params]
    direction = "DESC" if descending else "ASC"
    rows = conn.execute(f"SELECT kind, id FROM ({' UNION ALL '.join(parts)})"
                        f" ORDER BY key IS NULL, key {direction}, kind, id LIMIT ? OFFSET ?",
                        [*values, limit, offset]).fetchall()
    return [("c" if kind else "s", rowid) for kind, rowid in rows]


def _entries(conn: sqlite3.Connection, about: RunRow, columns: dict[str, str],
             keys: list[tuple[str, int]], store: str | Path) -> list[LogEntry]:
    """The scores at `keys` ((table, rowid)), in that order."""
    segment = [rowid for table, rowid in keys if table == "s"]
    corpus = [rowid for table, rowid in keys if table == "c"]
    found: dict[tuple[str, int], LogEntry] = {}
    if segment:
        for r in conn.execute(f"SELECT {_SEGMENT_FIELDS} FROM scores WHERE rowid IN"
                              f" ({','.join('?' * len(segment))})", segment):
            found["s", r["rowid"]] = _segment_entry(about.id, r, columns, store)
    if corpus:
        for r in conn.execute("SELECT rowid, system, metric, signature, status, reason, value"
                              f" FROM corpus_scores WHERE rowid IN ({','.join('?' * len(corpus))})",
                              corpus):
            found["c", r["rowid"]] = _corpus_entry(about.id, r, columns)
    return [found[key] for key in keys]


def _corpus_entry(run_id: int, r: sqlite3.Row, columns: dict[str, str]) -> LogEntry:
    return LogEntry(run_id=run_id, level="corpus", column=columns.get(r["signature"]),
                    metric=r["metric"], signature=r["signature"], item=None,
                    system=r["system"], status=r["status"], reason=r["reason"],
                    value=r["value"])


def _signatures(conn: sqlite3.Connection, about: RunRow, metric: str | None,
                columns: dict[str, str]) -> list[str] | None:
    """The signatures `--metric` names in this run (None: no filter)."""
    if metric is None:
        return None
    written = [r[0] for r in conn.execute(
        "SELECT DISTINCT signature FROM scores WHERE run_id = ? UNION SELECT DISTINCT"
        " signature FROM corpus_scores WHERE run_id = ?", (about.id, about.id))]
    chosen = sorted({sig for sig in [*written, *columns]
                     if metric in (sig, columns.get(sig), sig.split("@", 1)[0])})
    if not chosen:
        names = sorted({*(about.metrics or {}),
                        *(sig.split("@", 1)[0] for sig in [*written, *columns])})
        raise InputError(f"run {about.id} has no metric '{metric}' (it has: "
                         f"{', '.join(names) or 'none'})", field="--metric")
    return chosen


def _segment_entry(run_id: int, r: sqlite3.Row, columns: dict[str, str],
                   store: str | Path) -> LogEntry:
    def cell(name: str) -> Any:
        return _json(r[name], store=store, row=r["rowid"], field=f"scores.{name}")

    return LogEntry(
        run_id=run_id, level="segment", column=columns.get(r["signature"]), metric=r["metric"],
        signature=r["signature"], item=r["item"], system=r["system"], status=r["status"],
        reason=r["reason"], value=r["value"], raw=r["raw"], rationale=r["rationale"],
        extra={**(cell("extra") or {}),
               **({"fingerprint": fp} if (fp := cell("fingerprint")) else {})},
        tokens_in=r["tokens_in"], tokens_out=r["tokens_out"],
        cost_usd=r["cost_usd"], latency_s=r["latency_s"],
        calls=[Call(key=key) for key in cell("request_keys") or []])


def _named_cache(path: Path) -> Path:
    """The judge cache a `cache=` argument names (a file, or a directory as `score --cache`
    takes it); an InputError when there is none, rather than every call shown as missing."""
    from judgebench.engine.judge_cache import cache_file

    found = cache_file(path)
    if not found.is_file():
        raise InputError(f"{path}: no judge cache there (looked for {found})")
    return found


def _with_calls(entries: list[LogEntry], cache: Path, *, untouched: bool = False
                ) -> list[LogEntry]:
    """`entries` with each call filled from the judge cache at `cache` (left as not found
    when there is no such cache); `untouched`: leaving no -wal/-shm files beside it."""
    from judgebench.engine.store import untouched_uri

    if not cache.is_file():
        return entries
    uri = untouched_uri(cache) if untouched else f"{cache.absolute().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error:
        return entries
    with contextlib.closing(conn):
        tables = {name for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        filled = []
        for entry in entries:
            calls = [_call(conn, cache, call.key, "failures" in tables)
                     for call in entry.calls]
            filled.append(LogEntry(**{**{f: getattr(entry, f) for f in LOG_FIELDS},
                                      "calls": calls}))
    return filled


def _call(conn: sqlite3.Connection, cache: Path, key: str, has_failures: bool) -> Call:
    row = conn.execute("SELECT request, response, tokens_in, tokens_out, cost_usd, latency_s"
                       " FROM responses WHERE key = ?", (key,)).fetchone()
    if row is not None:
        request = _cache_json(row[0], cache, key, "responses.request")
        response = _cache_json(row[1], cache, key, "responses.response")
        failure = response.get("error")
        return Call(key=key, found=True, messages=request.get("messages") or None,
                    prompt=request.get("prompt"), answer=response.get("text"),
                    error=None if not failure else f"{failure['kind']}: {failure['message']}",
                    tokens_in=row[2], tokens_out=row[3], cost_usd=row[4], latency_s=row[5])
    if has_failures:
        failed = conn.execute("SELECT request, error FROM failures WHERE key = ?",
                              (key,)).fetchone()
        if failed is not None:
            request = _cache_json(failed[0], cache, key, "failures.request")
            return Call(key=key, found=True, messages=request.get("messages") or None,
                        prompt=request.get("prompt"), error=failed[1])
    return Call(key=key)


def _cache_json(text: str | None, cache: Path, key: str, field: str) -> dict[str, Any]:
    """A request or answer of the judge cache: a JSON object, else an InputError naming the
    cache, the key and the column."""
    try:
        value = json.loads(text or "")
    except (ValueError, RecursionError, TypeError) as exc:
        value = exc
    if not isinstance(value, dict):
        raise InputError(f"key {key[:12]}: not a JSON object; the judge cache is damaged: "
                         "remove it or give --cache another", path=str(cache), field=field)
    return value
