"""The SQLite store: one row per score, keyed by (signature, item, system, sample index).

WAL mode; each batch is committed in one transaction as it finishes, so a killed run keeps
every finished batch and `--resume` recomputes nothing it holds. Only the signature, the
sample keys and the results are written: never options that carry secrets (signatures are
built from metric options, which never hold API keys; keys come from the environment).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from judgebench.models import CorpusScore, Score, Status

SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (
    signature   TEXT NOT NULL,
    item        TEXT NOT NULL,
    system      TEXT NOT NULL,
    sample_index INTEGER NOT NULL DEFAULT 0,
    sample_hash TEXT,
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
    PRIMARY KEY (signature, item, system, sample_index)
);
CREATE TABLE IF NOT EXISTS corpus_scores (
    signature   TEXT NOT NULL,
    system      TEXT NOT NULL,
    items_hash  TEXT NOT NULL,
    metric      TEXT NOT NULL,
    value       REAL,
    status      TEXT NOT NULL,
    reason      TEXT,
    n           INTEGER NOT NULL,
    created_at  REAL NOT NULL,
    PRIMARY KEY (signature, system, items_hash)
);
"""

#: Statuses that a rerun would reproduce; `error` (a crash, a timeout) is always retried.
FINAL_STATUSES = (Status.OK, Status.PARSE_ERROR, Status.REFUSED, Status.SKIPPED)


class Store:
    def __init__(self, path: str | Path = ":memory:") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, timeout=30.0)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        self.conn.commit()

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- segment scores -----------------------------------------------------------------
    def finished(self, signature: str) -> dict[tuple[str, str], str | None]:
        """(item, system) -> sample content hash, for pairs holding a final result."""
        marks = ",".join("?" * len(FINAL_STATUSES))
        rows = self.conn.execute(
            "SELECT item, system, sample_hash FROM scores"
            f" WHERE signature = ? AND sample_index = 0 AND status IN ({marks})",
            (signature, *FINAL_STATUSES),
        )
        return {(item, system): digest for item, system, digest in rows}

    def put(
        self, scores: Sequence[Score], hashes: Sequence[str | None], elapsed_s: float | None = None
    ) -> None:
        """Write one batch in one transaction; `hashes` are the scored samples' content."""
        now = time.time()
        rows = [
            (
                s.signature, s.item, s.system, s.sample_index, digest, s.metric, s.value,
                str(s.status),
                s.reason, s.raw, s.rationale, json.dumps(s.extra) if s.extra else None,
                s.tokens_in, s.tokens_out, s.cost_usd, s.latency_s, elapsed_s, now,
            )
            for s, digest in zip(scores, hashes, strict=True)
        ]
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO scores VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows
            )

    def scores(self, signature: str) -> list[Score]:
        cursor = self.conn.execute(
            "SELECT item, system, sample_index, metric, value, status, reason, raw, rationale,"
            " extra, tokens_in, tokens_out, cost_usd, latency_s FROM scores WHERE signature = ?"
            " ORDER BY rowid",
            (signature,),
        )
        return [
            Score(
                item=r[0], system=r[1], sample_index=r[2], metric=r[3], value=r[4],
                status=Status(r[5]), reason=r[6], raw=r[7], rationale=r[8],
                extra=json.loads(r[9]) if r[9] else {}, tokens_in=r[10], tokens_out=r[11],
                cost_usd=r[12], latency_s=r[13], signature=signature,
            )
            for r in cursor
        ]

    def values(self, signature: str) -> dict[tuple[str, str], float | None]:
        """(item, system) -> value of sample index 0, for building the wide table."""
        cursor = self.conn.execute(
            "SELECT item, system, value FROM scores WHERE signature = ? AND sample_index = 0",
            (signature,),
        )
        return {(item, system): value for item, system, value in cursor}

    # -- corpus scores ------------------------------------------------------------------
    def corpus_score(self, signature: str, system: str, items_hash: str) -> CorpusScore | None:
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
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO corpus_scores VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    (c.signature, c.system, items_hash, c.metric, c.value, str(c.status),
                     c.reason, c.n, now)
                    for c, items_hash in scores
                ],
            )
