"""The SQLite store: one row per score, keyed by (signature, item, system, sample index, sample
content hash); each row names the run that wrote it (`runs` table).

WAL mode; each batch is committed in one transaction as it finishes, so a killed run keeps
every finished batch and `--resume` recomputes nothing it holds. Reads that build a table or
count statuses ask for exact keys (content hash included), so runs with different outputs for
the same ids can share one store. Only the signature, the sample keys and the results are
written: never options that carry secrets (signatures are built from metric options, which
never hold API keys; keys come from the environment).

A store is marked as judgebench's with ``PRAGMA application_id`` (`APPLICATION_ID`, "JBST")
and its schema version with ``PRAGMA user_version``. An existing file is inspected read-only
before anything is written: another program's SQLite file is refused untouched, and a store
of an older schema is migrated in place in one transaction.

Since version 5 a store also holds people's labels (`criteria`, `labels`, `samples`,
`sample_items`; written and read by `judgebench.engine.labels`): `labels` is append-only,
each answer one row written in one transaction (`Store.writing`), so several annotators'
processes write one store at once and a killed writer loses at most the label it was saving.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from judgebench.errors import InputError, JudgebenchError
from judgebench.models import CorpusScore, Score, Status
from judgebench.redact import redact
from judgebench.tables.destinations import SQLITE_MAGIC

#: ``PRAGMA application_id`` of a judgebench store: the bytes "JBST".
APPLICATION_ID = 0x4A425354
#: ``PRAGMA user_version``: the schema version this code writes.
SCHEMA_VERSION = 5
#: The store `score`, `runs` and `logs` use without --store.
DEFAULT_STORE = "judgebench.db"
#: Seconds to wait for another process's write lock (overridable per Store or by this env var).
TIMEOUT_ENV = "JUDGEBENCH_STORE_TIMEOUT"
DEFAULT_TIMEOUT_S = 30.0

_SCORE_COLUMNS = (
    "signature", "item", "system", "sample_index", "sample_hash", "metric", "value", "status",
    "reason", "raw", "rationale", "extra", "tokens_in", "tokens_out", "cost_usd", "latency_s",
    "elapsed_s", "created_at",
)
#: Columns added by version 2: the judge-cache keys of a score's requests (a JSON list).
_SCORE_COLUMNS_V2 = ("request_keys",)
#: Columns added by version 3: what answered a score's judge (a JSON object: `FINGERPRINT`).
_SCORE_COLUMNS_V3 = ("fingerprint",)
_CORPUS_COLUMNS = (
    "signature", "system", "items_hash", "metric", "value", "status", "reason", "n", "created_at",
)

SCHEMA = (
    """CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    started     TEXT NOT NULL,
    ended       TEXT,
    pid         INTEGER NOT NULL,
    version     TEXT NOT NULL,
    command     TEXT,
    input_path  TEXT,
    input_hash  TEXT,
    selection   TEXT,
    metrics     TEXT,
    statuses    TEXT,
    rows        INTEGER,
    computed    INTEGER,
    reused      INTEGER,
    failed      INTEGER,
    tokens_in   INTEGER,
    tokens_out  INTEGER,
    cost_usd    REAL,
    wall_s      REAL,
    outcome     TEXT,
    error       TEXT,
    cache       TEXT
)""",
    """CREATE TABLE scores (
    signature   TEXT NOT NULL,
    item        TEXT NOT NULL,
    system      TEXT NOT NULL,
    sample_index INTEGER NOT NULL DEFAULT 0,
    sample_hash TEXT NOT NULL,
    metric      TEXT NOT NULL,
    value       REAL,
    status      TEXT NOT NULL,
    reason      TEXT,
    raw         TEXT,
    rationale   TEXT,
    extra       TEXT,
    tokens_in   INTEGER,
    tokens_out  INTEGER,
    cost_usd    REAL,
    latency_s   REAL,
    elapsed_s   REAL,
    created_at  REAL NOT NULL,
    run_id      INTEGER REFERENCES runs(id),
    request_keys TEXT,
    fingerprint TEXT,
    PRIMARY KEY (signature, item, system, sample_index, sample_hash)
)""",
    """CREATE TABLE corpus_scores (
    signature   TEXT NOT NULL,
    system      TEXT NOT NULL,
    items_hash  TEXT NOT NULL,
    metric      TEXT NOT NULL,
    value       REAL,
    status      TEXT NOT NULL,
    reason      TEXT,
    n           INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    run_id      INTEGER REFERENCES runs(id),
    PRIMARY KEY (signature, system, items_hash)
)""",
)

#: Version 5: people's labels. A criterion is what people judge (`kind`: scale, binary,
#: choices or pairwise; `scale`: JSON, {"low", "high", "step"} or {"choices"}); a label is one
#: answer of one annotator on one item's output (`system`) or pair of outputs (`system_a`,
#: `system_b`), never updated: a later row of the same key supersedes it. A sample is the
#: items a sampling strategy drew for labelling, each with its inclusion probability.
LABEL_SCHEMA = (
    """CREATE TABLE criteria (
    name        TEXT PRIMARY KEY,
    description TEXT NOT NULL DEFAULT '',
    kind        TEXT NOT NULL CHECK (kind IN ('scale', 'binary', 'choices', 'pairwise')),
    scale       TEXT NOT NULL,
    show_reference INTEGER NOT NULL DEFAULT 0 CHECK (show_reference IN (0, 1)),
    created     TEXT NOT NULL
)""",
    """CREATE TABLE samples (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    criterion   TEXT NOT NULL REFERENCES criteria(name),
    strategy    TEXT NOT NULL,
    seed        INTEGER,
    parameters  TEXT NOT NULL DEFAULT '{}',
    annotator   TEXT,
    source      TEXT,
    created     TEXT NOT NULL
)""",
    """CREATE TABLE sample_items (
    sample_id   INTEGER NOT NULL REFERENCES samples(id),
    position    INTEGER NOT NULL,
    item        TEXT NOT NULL,
    system      TEXT,
    system_a    TEXT,
    system_b    TEXT,
    inclusion_probability REAL NOT NULL
        CHECK (inclusion_probability > 0 AND inclusion_probability <= 1),
    PRIMARY KEY (sample_id, position),
    CHECK ((system IS NULL) = (system_a IS NOT NULL AND system_b IS NOT NULL))
)""",
    """CREATE TABLE labels (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    criterion   TEXT NOT NULL REFERENCES criteria(name),
    annotator   TEXT NOT NULL,
    item        TEXT NOT NULL,
    system      TEXT,
    system_a    TEXT,
    system_b    TEXT,
    value       REAL,
    status      TEXT NOT NULL
        CHECK (status IN ('answered', 'cant_tell', 'skipped', 'withdrawn')),
    critique    TEXT,
    shown_left  TEXT,
    sample_id   INTEGER REFERENCES samples(id),
    inclusion_probability REAL
        CHECK (inclusion_probability IS NULL
               OR (inclusion_probability > 0 AND inclusion_probability <= 1)),
    source      TEXT,
    created     TEXT NOT NULL,
    CHECK ((status = 'answered') = (value IS NOT NULL)),
    CHECK ((system IS NULL) = (system_a IS NOT NULL AND system_b IS NOT NULL)),
    CHECK (shown_left IS NULL OR shown_left IN (system_a, system_b))
)""",
)
#: Version 5's indexes: one annotator's labels of one criterion, key by key, newest last (what
#: the current label of each key and `labelled_items` read).
LABEL_INDEXES = (
    "CREATE INDEX labels_by_key ON labels(criterion, annotator, item, system, system_a,"
    " system_b, id)",
)

#: Indexes of this schema version (version 4): a run's scores in the order it wrote them, so a
#: page of one run (`judgebench view`, `logs`) reads that page, not the whole table.
INDEXES = ("CREATE INDEX scores_by_run ON scores(run_id)",)
_INDEX_NAMES_V4 = ["scores_by_run"]
_INDEX_NAMES = sorted([*_INDEX_NAMES_V4, "labels_by_key"])

#: Columns of `runs` in this schema version (what `judgebench runs` shows;
#: docs/design/store-schema.md).
RUN_COLUMNS = (
    "id", "started", "ended", "pid", "version", "command", "input_path", "input_hash",
    "selection", "metrics", "statuses", "rows", "computed", "reused", "failed", "tokens_in",
    "tokens_out", "cost_usd", "wall_s", "outcome", "error", "cache",
)
#: Columns of the label tables (version 5).
CRITERION_COLUMNS = ("name", "description", "kind", "scale", "show_reference", "created")
SAMPLE_COLUMNS = ("id", "criterion", "strategy", "seed", "parameters", "annotator", "source",
                  "created")
SAMPLE_ITEM_COLUMNS = ("sample_id", "position", "item", "system", "system_a", "system_b",
                       "inclusion_probability")
LABEL_COLUMNS = ("id", "criterion", "annotator", "item", "system", "system_a", "system_b",
                 "value", "status", "critique", "shown_left", "sample_id",
                 "inclusion_probability", "source", "created")
#: Columns of each table in versions 3 and 4 (the scores, no labels).
_TABLES_V4 = {
    "runs": RUN_COLUMNS,
    "scores": (*_SCORE_COLUMNS, "run_id", *_SCORE_COLUMNS_V2, *_SCORE_COLUMNS_V3),
    "corpus_scores": (*_CORPUS_COLUMNS, "run_id"),
}
#: Columns of each table in this schema version.
_TABLES = {**_TABLES_V4, "criteria": CRITERION_COLUMNS, "samples": SAMPLE_COLUMNS,
           "sample_items": SAMPLE_ITEM_COLUMNS, "labels": LABEL_COLUMNS}
#: Version 2 (before fingerprints): no `fingerprint` column.
_TABLES_V2 = {**_TABLES_V4, "scores": (*_SCORE_COLUMNS, "run_id", *_SCORE_COLUMNS_V2)}
#: Version 1 (judgebench 0.1.0, main at 1710a54): a bare `runs` table, no request keys.
_TABLES_V1 = {
    "runs": ("id", "started_at", "pid", "version"),
    "scores": (*_SCORE_COLUMNS, "run_id"),
    "corpus_scores": (*_CORPUS_COLUMNS, "run_id"),
}
#: The schema before versioning (application_id 0, user_version 0): no runs, no hash in the key.
_LEGACY_TABLES = {"scores": _SCORE_COLUMNS, "corpus_scores": _CORPUS_COLUMNS}

_SCORE_LIST = ", ".join(_SCORE_COLUMNS)
#: Legacy -> version 1, run inside the opening transaction; a legacy row without a content hash
#: gets '' (it matches no sample, so `--resume` rescores it).
LEGACY_MIGRATION: tuple[str, ...] = (
    SCHEMA[0],
    SCHEMA[1].replace("CREATE TABLE scores", "CREATE TABLE scores_v1", 1),
    f"INSERT INTO scores_v1 ({_SCORE_LIST}) SELECT "
    + _SCORE_LIST.replace("sample_hash", "COALESCE(sample_hash, '')")
    + " FROM scores",
    "DROP TABLE scores",
    "ALTER TABLE scores_v1 RENAME TO scores",
    "ALTER TABLE corpus_scores ADD COLUMN run_id INTEGER REFERENCES runs(id)",
)

#: UTC ISO 8601 with milliseconds, as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ') writes it.
_ISO_SQL = "%Y-%m-%dT%H:%M:%fZ"
#: Version 1 -> 2, run inside the opening transaction: `runs` gets what a run was (command,
#: input, metrics, counts, cost, how it ended; its old rows keep id, pid and version, and their
#: start time as ISO text), `scores` gets `request_keys`. No score row changes.
MIGRATION_V2: tuple[str, ...] = (
    SCHEMA[0].replace("CREATE TABLE runs", "CREATE TABLE runs_v2", 1),
    "INSERT INTO runs_v2 (id, started, pid, version) SELECT id,"
    f" strftime('{_ISO_SQL}', started_at, 'unixepoch'), pid, version FROM runs",
    "DROP TABLE runs",
    "ALTER TABLE runs_v2 RENAME TO runs",
    "ALTER TABLE scores ADD COLUMN request_keys TEXT",
)
#: Version 2 -> 3: `scores` gets `fingerprint` (NULL for the rows written before: unknown).
MIGRATION_V3: tuple[str, ...] = ("ALTER TABLE scores ADD COLUMN fingerprint TEXT",)
#: Version 3 -> 4: the indexes (`INDEXES`); no row changes.
MIGRATION_V4: tuple[str, ...] = INDEXES
#: Version 4 -> 5: the label tables and their index (`LABEL_SCHEMA`); no row changes.
MIGRATION_V5: tuple[str, ...] = LABEL_SCHEMA + LABEL_INDEXES

#: Statuses that a rerun would reproduce; `error` (a crash, a timeout) is always retried.
FINAL_STATUSES = (Status.OK, Status.PARSE_ERROR, Status.REFUSED, Status.SKIPPED)
#: Statuses of a score that failed: a run with any of them exits 3 (unless --allow-failures).
FAILED_STATUSES = (Status.ERROR, Status.PARSE_ERROR, Status.REFUSED)

#: (item, system, sample content hash): what a table row asks the store for.
SampleKey = tuple[str, str, str]


#: How a run ended; `running` until it does (a run killed with SIGKILL keeps it). Failed scores
#: are counted apart (`failed`): a run can end `ok` with failed scores.
RunOutcome = Literal["running", "ok", "interrupted", "budget_stop", "error"]
#: The key of `Score.extra` where a judge lists its requests' judge-cache keys; the store keeps
#: them in the `request_keys` column instead.
REQUEST_KEYS = "request_keys"
#: The key of `Score.extra` where a judge says what answered it (`Response.fingerprint`: the
#: returned model name, the API's system_fingerprint, the served checkpoint or weights' hash);
#: the store keeps it in the `fingerprint` column instead. Never part of a signature.
FINGERPRINT = "fingerprint"


#: signature -> run id -> fingerprint (canonical JSON text) -> number of scores.
FingerprintCounts = dict[str, dict[int | None, dict[str, int]]]


def fingerprint_counts(conn: sqlite3.Connection, signatures: Iterable[str]
                       ) -> FingerprintCounts:
    """For each of `signatures`, how many of its stored scores each run wrote with each
    fingerprint (scores without one, e.g. of a metric that calls no model, are left out)."""
    wanted = sorted(set(signatures))
    found: FingerprintCounts = {}
    if not wanted:
        return found
    cursor = conn.execute(
        "SELECT signature, run_id, fingerprint, COUNT(*) FROM scores WHERE signature IN"
        f" ({','.join('?' * len(wanted))}) AND fingerprint IS NOT NULL"
        " GROUP BY signature, run_id, fingerprint", wanted)
    for signature, run_id, text, count in cursor:
        found.setdefault(signature, {}).setdefault(run_id, {})[text] = int(count)
    return found


def iso_utc(timestamp: float) -> str:
    """`timestamp` as UTC ISO 8601 with milliseconds (the `runs` table's time format)."""
    text = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return f"{text[:-3]}Z"


@dataclass
class RunAbout:
    """What a scoring run is, known when it starts: its command line, input (path and content
    hash), the rows chosen from it (`--limit`/`--sample`), its judge cache; and, set by the
    runner, each column's signature."""

    command: str | None = None
    input_path: str | None = None
    input_hash: str | None = None
    selection: dict[str, Any] | None = None
    cache: str | None = None
    metrics: dict[str, str] = field(default_factory=dict)


@dataclass
class RunEnd:
    """How a run ended and what it did (the rest of its `runs` row)."""

    outcome: RunOutcome
    error: str | None = None
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)
    rows: int = 0
    computed: int = 0
    reused: int = 0
    failed: int = 0
    cost_usd: float | None = None


def untouched_uri(path: str | Path) -> str:
    """The URI that reads the SQLite file at `path` without writing anything: read-only, and
    without side files (no open WAL, no transaction under way) the file alone is the
    database, read as immutable, which creates no -wal/-shm files beside it. A file with a
    -wal (a writer at work, e.g. a running `score`) is read through it."""
    alone = not any(Path(f"{path}{end}").exists() for end in ("-wal", "-journal"))
    return f"{Path(path).absolute().as_uri()}?mode=ro" + ("&immutable=1" if alone else "")


class StoreBusy(JudgebenchError):
    """Another process held the store's write lock past the timeout (exit 1)."""

    def __init__(self, message: str, *, path: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


def _timeout(timeout: float | None) -> float:
    if timeout is not None:
        return timeout
    text = os.environ.get(TIMEOUT_ENV)
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        return float(text)
    except ValueError:
        raise InputError(f"must be a number of seconds, not {text!r}", field=TIMEOUT_ENV) from None


class Store:
    """A judgebench store at `path` (":memory:" for none on disk).

    `readonly` opens an existing store without writing to it (nor migrating it); `untouched`
    (with `readonly`) leaves no -wal/-shm files beside it either (`untouched_uri`); `checked`
    skips `PRAGMA quick_check` (which reads the whole file: the caller checked this file
    already, as `judgebench view` does once before serving); `timeout` is
    how long to wait for another process's write lock (default $JUDGEBENCH_STORE_TIMEOUT, or
    30 s). Bad files raise InputError naming the file; a lock held too long raises StoreBusy.
    """

    def __init__(
        self, path: str | Path = ":memory:", *, readonly: bool = False,
        timeout: float | None = None, untouched: bool = False, checked: bool = False,
    ) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.timeout = _timeout(timeout)
        self.run_id: int | None = None
        self.kind = ""
        self._checked = checked
        self._about = RunAbout()
        self._started = time.time()
        self._tokens: list[int | None] = [None, None]
        on_disk = self.path != ":memory:"
        if on_disk:
            self._check_file()
        try:
            if readonly:
                uri = (untouched_uri(self.path) if untouched
                       else f"{Path(self.path).absolute().as_uri()}?mode=ro")
                self.conn = sqlite3.connect(uri, uri=True, timeout=self.timeout,
                                            isolation_level=None)
            else:
                self.conn = sqlite3.connect(self.path, timeout=self.timeout,
                                            isolation_level=None)
        except sqlite3.Error as exc:
            raise self._fault(exc) from None
        try:
            if readonly:
                with self._guard():
                    kind = self.kind = self._inspect(self.conn)
                if kind == "empty":
                    raise InputError("empty file, not a judgebench store", path=self.path)
            else:
                with self._guard(), self._transaction():
                    self._prepare(self._inspect(self.conn))
                if on_disk:
                    with self._guard():
                        self.conn.execute("PRAGMA journal_mode=WAL")
                        self.conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            self.conn.close()
            raise

    # -- opening ------------------------------------------------------------------------
    def _check_file(self) -> None:
        """Refuse what is not a judgebench store (or a new file) before writing anything."""
        path = Path(self.path)
        if path.is_dir():
            raise InputError("is a folder, not a store file: give --store a file name such as "
                             "runs.db", path=self.path)
        if not path.exists():
            if self.readonly:
                raise InputError("store not found", path=self.path)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"cannot create the store's folder ({exc.strerror}): give "
                                 "--store a writable path", path=self.path) from None
            return
        if not path.is_file():
            raise InputError("is not a regular file: give --store a file name such as runs.db",
                             path=self.path)
        try:
            with path.open("rb") as handle:
                header = handle.read(100)
        except OSError as exc:
            raise InputError(f"cannot read the store ({exc.strerror})", path=self.path) from None
        if not header:
            return  # an empty file is a new database to SQLite
        if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
            raise InputError("not a SQLite file, so not a judgebench store; it was left as it "
                             "is: give --store a new file name", path=self.path)
        app_id = int.from_bytes(header[68:72], "big", signed=True)
        if app_id not in (0, APPLICATION_ID):
            raise self._foreign(f"application_id {app_id:#x}")
        try:
            probe = sqlite3.connect(untouched_uri(path), uri=True, timeout=self.timeout,
                                    isolation_level=None)
        except sqlite3.Error as exc:
            raise self._fault(exc) from None
        try:
            with self._guard():
                self._inspect(probe)
                # it reads the whole file: once per process is enough for a reader that asks
                problem = ("ok" if self._checked
                           else probe.execute("PRAGMA quick_check(1)").fetchone()[0])
            if problem != "ok":
                raise self._corrupt(problem)
        finally:
            probe.close()

    def _inspect(self, conn: sqlite3.Connection) -> str:
        """'current', 'v4', 'v3', 'v2', 'v1' or 'legacy' (to migrate) or 'empty' (to create);
        anything else is refused."""
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        objects = conn.execute(
            "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
        tables = {name: self._columns(conn, name) for kind, name in objects if kind == "table"}
        others = sorted(name for kind, name in objects if kind != "table")
        if app_id == APPLICATION_ID:
            return self._judgebench_kind(version, tables, others)
        if app_id != 0:
            raise self._foreign(f"application_id {app_id:#x}")
        if not objects and version == 0:
            return "empty"
        if tables == _LEGACY_TABLES and not others and version == 0:
            return "legacy"
        names = ", ".join(sorted(tables) + others) or "none"
        raise self._foreign(f"tables: {names}; user_version {version}")

    def _judgebench_kind(self, version: int, tables: dict[str, tuple[str, ...]],
                         others: list[str]) -> str:
        """The kind of a store with judgebench's application_id, by its schema version and
        tables; a newer or damaged one is refused."""
        if version == 1 and tables == _TABLES_V1 and not others:
            return "v1"
        if version == 2 and tables == _TABLES_V2 and not others:
            return "v2"
        if version == 3 and tables == _TABLES_V4 and not others:
            return "v3"
        if version == 4 and tables == _TABLES_V4 and others == _INDEX_NAMES_V4:
            return "v4"
        if version > SCHEMA_VERSION:
            raise InputError(
                f"store of schema version {version}, written by a newer judgebench (this "
                f"one reads up to {SCHEMA_VERSION}): upgrade judgebench or give --store "
                "another file", path=self.path)
        if version == SCHEMA_VERSION and tables == _TABLES and others == _INDEX_NAMES:
            return "current"
        if tables == _LEGACY_TABLES and not others:
            return "legacy"
        raise InputError(
            f"damaged judgebench store (schema version {version}, tables "
            f"{sorted(tables)}): restore it from a copy or give --store a new file",
            path=self.path)

    @staticmethod
    def _columns(conn: sqlite3.Connection, table: str) -> tuple[str, ...]:
        quoted = table.replace('"', '""')
        return tuple(row[1] for row in conn.execute(f'PRAGMA table_info("{quoted}")'))

    def _prepare(self, kind: str) -> None:
        self.kind = kind
        if kind == "current":
            return
        # The legacy migration builds this version's tables directly.
        statements = {"empty": SCHEMA + INDEXES + MIGRATION_V5,
                      "legacy": LEGACY_MIGRATION + INDEXES + MIGRATION_V5,
                      "v1": MIGRATION_V2 + MIGRATION_V3 + MIGRATION_V4 + MIGRATION_V5,
                      "v2": MIGRATION_V3 + MIGRATION_V4 + MIGRATION_V5,
                      "v3": MIGRATION_V4 + MIGRATION_V5, "v4": MIGRATION_V5}[kind]
        for statement in statements:
            self.conn.execute(statement)
        self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        self.conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- errors ---------------------------------------------------------------------------
    def _foreign(self, what: str) -> InputError:
        return InputError(f"another program's SQLite database ({what}), not a judgebench "
                          "store; it was left as it is: give --store another file",
                          path=self.path)

    def _corrupt(self, detail: str) -> InputError:
        detail = " ".join(detail.replace("*** in database main ***", "").split())
        return InputError(f"corrupt store ({detail}): restore it from a copy or give --store a "
                          "new file", path=self.path)

    def _fault(self, exc: sqlite3.Error) -> JudgebenchError:
        """One line naming the file and what to do, for a SQLite error."""
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc).splitlines()[0] if str(exc) else name
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
            return StoreBusy(
                f"the store is locked by another process (waited {self.timeout:g} s for its "
                f"write lock): let that run finish, or give --store another file "
                f"(${TIMEOUT_ENV} sets the wait)", path=self.path)
        if name.startswith("SQLITE_NOTADB"):
            return InputError("not a SQLite file, so not a judgebench store: give --store a "
                              "new file name", path=self.path)
        if name.startswith("SQLITE_CORRUPT"):
            return self._corrupt(text)
        if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
            return InputError(f"cannot open the store for writing ({text}): give --store a "
                              "writable path", path=self.path)
        if name.startswith("SQLITE_FULL"):
            return JudgebenchError(f"{self.path}: the disk is full ({text}); every batch "
                                   "committed before is kept: free space and rerun with "
                                   "--resume")
        return JudgebenchError(f"{self.path}: store error ({text})")

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._fault(exc) from None

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        run_id = self.run_id
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            self.run_id = run_id  # a run row written in this transaction is gone with it
            raise
        self.conn.execute("COMMIT")

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE: it waits up to `timeout` for another
        process's write lock, then raises StoreBusy) on this store's connection: everything
        written inside is committed together, or, on any error, nothing is."""
        if self.readonly:
            raise InputError("opened read-only: nothing can be written", path=self.path)
        with self._guard(), self._transaction():
            yield self.conn

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """This store's connection, a SQLite error made a JudgebenchError naming the file."""
        with self._guard():
            yield self.conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs -----------------------------------------------------------------------------
    def begin_run(self, about: RunAbout) -> None:
        """Start recording a run: its `runs` row is written with the first score (or by
        `end_run`), so a run that fails before it scores leaves no row."""
        self._about = about
        self._started = time.time()
        self._tokens = [None, None]
        self.run_id = None

    def _run(self) -> int:
        """This Store's run id, recorded with its first write (inside that transaction)."""
        if self.run_id is None:
            from judgebench._version import __version__

            a = self._about
            cursor = self.conn.execute(
                "INSERT INTO runs (started, pid, version, command, input_path, input_hash,"
                " selection, metrics, cache, outcome) VALUES (?,?,?,?,?,?,?,?,?,'running')",
                (iso_utc(self._started), os.getpid(), __version__, redact(a.command),
                 redact(a.input_path), a.input_hash,
                 None if a.selection is None else json.dumps(a.selection),
                 json.dumps(a.metrics), redact(a.cache)))
            self.run_id = int(cursor.lastrowid or 0)
        return self.run_id

    def end_run(self, end: RunEnd) -> int:
        """Record how the run began with `begin_run` ended; its id."""
        now = time.time()
        with self._guard(), self._transaction():
            run_id = self._run()
            self.conn.execute(
                "UPDATE runs SET ended = ?, statuses = ?, rows = ?, computed = ?, reused = ?,"
                " failed = ?, tokens_in = ?, tokens_out = ?, cost_usd = ?, wall_s = ?,"
                " outcome = ?, error = ? WHERE id = ?",
                (iso_utc(now), json.dumps(end.statuses), end.rows, end.computed, end.reused,
                 end.failed, self._tokens[0], self._tokens[1], end.cost_usd,
                 round(now - self._started, 3), end.outcome, redact(end.error), run_id))
        return run_id

    def _count_tokens(self, scores: Sequence[Score]) -> None:
        for index, name in enumerate(("tokens_in", "tokens_out")):
            values = [v for s in scores if (v := getattr(s, name)) is not None]
            if values:
                self._tokens[index] = (self._tokens[index] or 0) + sum(values)

    # -- segment scores -----------------------------------------------------------------
    def lookup(self, signature: str, keys: Iterable[SampleKey], sample_index: int = 0
               ) -> dict[SampleKey, Score]:
        """The stored score (draw `sample_index` of `score --repeats`, 0 the first) of each
        of `keys` that the store holds: only rows of exactly these samples, content hash
        included, whatever else the store holds.

        The keys go into a temporary table joined on the primary key, so the cost is in the
        number of keys asked for, not in the size of the store."""
        wanted = set(keys)
        found: dict[SampleKey, Score] = {}
        if not wanted:
            return found
        with self._guard():
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS wanted"
                              " (item TEXT, system TEXT, sample_hash TEXT)")
            self.conn.execute("DELETE FROM temp.wanted")
            # One transaction for the inserts: it touches the temporary database only.
            self.conn.execute("BEGIN")
            try:
                self.conn.executemany("INSERT INTO temp.wanted VALUES (?, ?, ?)", wanted)
            finally:
                self.conn.execute("COMMIT")
            cursor = self.conn.execute(
                "SELECT s.item, s.system, s.sample_hash, s.metric, s.value, s.status, s.reason,"
                " s.raw, s.rationale, s.extra, s.tokens_in, s.tokens_out, s.cost_usd,"
                " s.latency_s, s.rowid FROM temp.wanted w CROSS JOIN scores s"
                " ON s.signature = ? AND s.item = w.item AND s.system = w.system"
                " AND s.sample_index = ? AND s.sample_hash = w.sample_hash",
                (signature, sample_index),
            )
            for r in cursor:
                found[(r[0], r[1], r[2])] = self._score(signature, r[0], r[1], sample_index,
                                                        *r[3:])
            self.conn.execute("DELETE FROM temp.wanted")
        return found

    def draws(self, signature: str, keys: Iterable[SampleKey], repeats: int
              ) -> list[dict[SampleKey, Score]]:
        """`lookup` of each of the `repeats` draws (`score --repeats`), draw r at index r."""
        wanted = list(keys)
        return [self.lookup(signature, wanted, r) for r in range(repeats)]

    def request_keys(self, signature: str, keys: Iterable[SampleKey],
                     statuses: Iterable[str]) -> set[str]:
        """The judge-cache keys of the requests behind the stored scores of `signature` on
        `keys` whose status is one of `statuses`."""
        wanted, chosen = set(keys), sorted(set(statuses))
        if not wanted or not chosen:
            return set()
        found: set[str] = set()
        with self._guard():
            cursor = self.conn.execute(
                "SELECT item, system, sample_hash, request_keys FROM scores WHERE signature = ?"
                f" AND status IN ({','.join('?' * len(chosen))}) AND request_keys IS NOT NULL",
                (signature, *chosen))
            for item, system, digest, text in cursor:
                if (item, system, digest) in wanted:
                    with contextlib.suppress(ValueError, TypeError):
                        found.update(k for k in json.loads(text) if isinstance(k, str))
        return found

    def put(
        self, scores: Sequence[Score], hashes: Sequence[str], elapsed_s: float | None = None
    ) -> None:
        """Write one batch in one transaction; `hashes` are the scored samples' content."""
        now = time.time()
        with self._guard(), self._transaction():
            run_id = self._run()
            rows = []
            for s, digest in zip(scores, hashes, strict=True):
                extra = {k: v for k, v in s.extra.items() if k not in (REQUEST_KEYS,
                                                                        FINGERPRINT)}
                keys = s.extra.get(REQUEST_KEYS)
                fingerprint = s.extra.get(FINGERPRINT)
                rows.append((
                    s.signature, s.item, s.system, s.sample_index, digest, s.metric, s.value,
                    str(s.status), s.reason, s.raw, s.rationale,
                    json.dumps(extra) if extra else None,
                    s.tokens_in, s.tokens_out, s.cost_usd, s.latency_s, elapsed_s, now, run_id,
                    json.dumps(keys) if keys else None,
                    json.dumps(fingerprint, sort_keys=True) if fingerprint else None,
                ))
            self.conn.executemany(
                f"INSERT OR REPLACE INTO scores ({_SCORE_LIST}, run_id, request_keys,"
                f" fingerprint) VALUES ({','.join('?' * (len(_SCORE_COLUMNS) + 3))})", rows
            )
        self._count_tokens(scores)

    def scores(self, signature: str) -> list[Score]:
        """Every stored score of `signature`, of any sample content (see `lookup`)."""
        with self._guard():
            cursor = self.conn.execute(
                "SELECT item, system, sample_index, metric, value, status, reason, raw,"
                " rationale, extra, tokens_in, tokens_out, cost_usd, latency_s, rowid"
                " FROM scores WHERE signature = ? ORDER BY rowid",
                (signature,),
            )
            return [self._score(signature, *r) for r in cursor]

    def _score(self, signature: str, item: str, system: str, sample_index: int, metric: str,
               value: float | None, status: str, reason: str | None, raw: str | None,
               rationale: str | None, extra: str | None, tokens_in: int | None,
               tokens_out: int | None, cost_usd: float | None, latency_s: float | None,
               rowid: int) -> Score:
        """A stored score row as a Score; a damaged `status` or `extra` cell (a store edited
        by hand, or by a tool) is an InputError naming the store, the row and the field."""
        def damaged(field: str, what: str) -> InputError:
            return InputError(f"{what}: the store is damaged", path=self.path, row=rowid,
                              field=f"scores.{field}")
        try:
            parsed_status = Status(status)
        except ValueError:
            raise damaged("status", f"{status!r} is not a status") from None
        try:
            parsed_extra = json.loads(extra) if extra else {}
        except ValueError:
            raise damaged("extra", "not JSON") from None
        if not isinstance(parsed_extra, dict):
            raise damaged("extra", "not a JSON object")
        return Score(item=item, system=system, sample_index=sample_index, metric=metric,
                     value=value, status=parsed_status, reason=reason, raw=raw,
                     rationale=rationale, extra=parsed_extra, tokens_in=tokens_in,
                     tokens_out=tokens_out, cost_usd=cost_usd, latency_s=latency_s,
                     signature=signature)

    def fingerprints(self, signatures: Iterable[str]) -> FingerprintCounts:
        """What answered the stored scores of `signatures` (`fingerprint_counts`)."""
        with self._guard():
            return fingerprint_counts(self.conn, signatures)

    def costs(self, signature: str) -> dict[str, float | int | None]:
        """Cost, tokens and compute time of `signature`'s rows ({} when it has none)."""
        with self._guard():
            row = self.conn.execute(
                "SELECT COUNT(*), SUM(cost_usd), COUNT(cost_usd), SUM(tokens_in),"
                " SUM(tokens_out), SUM(COALESCE(latency_s, elapsed_s)),"
                " COUNT(COALESCE(latency_s, elapsed_s)) FROM scores WHERE signature = ?",
                (signature,)).fetchone()
        count, cost, costed, tin, tout, seconds, timed = row
        if not count:
            return {}
        return {"cost_usd": cost if costed == count else None,
                "tokens_in": tin, "tokens_out": tout,
                "time_s": seconds if timed == count else None}

    # -- corpus scores ------------------------------------------------------------------
    def corpus_score(self, signature: str, system: str, items_hash: str) -> CorpusScore | None:
        with self._guard():
            row = self.conn.execute(
                "SELECT metric, value, status, reason, n FROM corpus_scores"
                " WHERE signature = ? AND system = ? AND items_hash = ?",
                (signature, system, items_hash),
            ).fetchone()
        if row is None or row[2] not in FINAL_STATUSES:
            return None
        return CorpusScore(system=system, metric=row[0], value=row[1], status=Status(row[2]),
                           reason=row[3], n=row[4], signature=signature)

    def put_corpus(self, scores: Iterable[tuple[CorpusScore, str]]) -> None:
        now = time.time()
        with self._guard(), self._transaction():
            run_id = self._run()
            self.conn.executemany(
                f"INSERT OR REPLACE INTO corpus_scores ({', '.join(_CORPUS_COLUMNS)}, run_id)"
                f" VALUES ({','.join('?' * (len(_CORPUS_COLUMNS) + 1))})",
                [
                    (c.signature, c.system, items_hash, c.metric, c.value, str(c.status),
                     c.reason, c.n, now, run_id)
                    for c, items_hash in scores
                ],
            )
