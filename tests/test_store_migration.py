"""A store written by main at 1710a54 (schema version 1, tests/data/stores/main-1710a54.db)
is migrated in place to this version: every row kept as it was, and `--resume` on it
recomputes nothing."""

from __future__ import annotations

import shutil
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import EXAMPLE, run_cli

from judgebench.engine.store import SCHEMA_VERSION, Store
from judgebench.errors import JudgebenchError

FIXTURE = Path(__file__).parent / "data" / "stores" / "main-1710a54.db"
#: The metrics the fixture was scored with (README next to it); the judge's api_base is not in
#: its signature, and its 64 parse errors are final, so no call is made on resume.
SPECS = ["lexical.bleu", "lexical.rouge2",
         "judge.rubric:backend=openai_compat,model=judge,api_base=http://127.0.0.1:9/v1,"
         "protocol=text,max_attempts=1"]
V1_SCORE_COLUMNS = (
    "signature", "item", "system", "sample_index", "sample_hash", "metric", "value", "status",
    "reason", "raw", "rationale", "extra", "tokens_in", "tokens_out", "cost_usd", "latency_s",
    "elapsed_s", "created_at", "run_id")
V1_CORPUS_COLUMNS = ("signature", "system", "items_hash", "metric", "value", "status", "reason",
                     "n", "created_at", "run_id")


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    shutil.copyfile(FIXTURE, path)
    return path


def _rows(path: Path, table: str, columns: tuple[str, ...]) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return sorted(conn.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall(),
                      key=repr)


def test_the_fixture_is_a_version_1_store_with_failures(old_store: Path) -> None:
    conn = sqlite3.connect(old_store)
    assert conn.execute("PRAGMA user_version").fetchone() == (1,)
    assert [r[1] for r in conn.execute("PRAGMA table_info(runs)")] == [
        "id", "started_at", "pid", "version"]
    counts = dict(((m, s), n) for m, s, n in conn.execute(
        "SELECT metric, status, COUNT(*) FROM scores GROUP BY 1, 2"))
    assert counts == {("judge.rubric", "parse_error"): 64, ("lexical.bleu", "ok"): 64,
                      ("lexical.rouge2", "ok"): 64}
    assert conn.execute("SELECT COUNT(*) FROM corpus_scores").fetchone() == (16,)
    conn.close()


def test_every_old_row_is_kept_unchanged_by_the_migration(old_store: Path) -> None:
    scores = _rows(old_store, "scores", V1_SCORE_COLUMNS)
    corpus = _rows(old_store, "corpus_scores", V1_CORPUS_COLUMNS)
    runs = _rows(old_store, "runs", ("id", "started_at", "pid", "version"))
    Store(old_store).close()

    conn = sqlite3.connect(old_store)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    assert _rows(old_store, "scores", V1_SCORE_COLUMNS) == scores
    assert conn.execute("SELECT COUNT(*) FROM scores WHERE request_keys IS NOT NULL"
                        ).fetchone() == (0,)
    assert _rows(old_store, "corpus_scores", V1_CORPUS_COLUMNS) == corpus
    migrated = conn.execute("SELECT id, started, pid, version, outcome, ended FROM runs"
                            ).fetchall()
    assert len(migrated) == len(runs) == 1
    (run_id, started_at, pid, version), = runs
    started = datetime.fromisoformat(migrated[0][1])
    assert migrated[0][0] == run_id and migrated[0][2:4] == (pid, version)
    assert abs(started.timestamp() - started_at) < 0.001 and started.tzinfo == UTC
    assert migrated[0][4:] == (None, None), "what an old run did is not made up"
    conn.close()


def test_resume_on_the_old_store_recomputes_nothing(old_store: Path, tmp_path: Path) -> None:
    # The lexical metrics' signatures are those of 1710a54; the judge's changed since (its
    # signature gained engine options, `scoring:` and `constrained:`), so resuming it would
    # rightly rescore: its old rows are kept (the migration test) but not reused.
    before = _rows(old_store, "scores", V1_SCORE_COLUMNS)
    args = ["score", str(EXAMPLE), *[a for spec in SPECS[:2] for a in ("-m", spec)],
            "-o", str(tmp_path / "scores.csv"), "--store", str(old_store), "--resume",
            "--workers", "1", "--cache", str(tmp_path / "cache.sqlite")]
    proc = run_cli(*args, "--allow-failures")
    assert proc.returncode == 0, proc.stderr
    assert "computed 0, reused 128" in proc.stderr
    assert _rows(old_store, "scores", V1_SCORE_COLUMNS) == before
    conn = sqlite3.connect(old_store)
    run = conn.execute("SELECT id, computed, reused, failed, outcome FROM runs ORDER BY id DESC"
                       ).fetchone()
    assert run == (2, 0, 128, 0, "ok")
    # the table is the old store's values
    bleu = dict(((i, s), v) for i, s, v in conn.execute(
        "SELECT item, system, value FROM scores WHERE metric = 'lexical.bleu'"))
    import pandas as pd

    table = pd.read_csv(tmp_path / "scores.csv", dtype={"item": str, "system": str})
    assert [bleu[(i, s)] for i, s in zip(table["item"], table["system"], strict=True)] \
        == pytest.approx(table["lexical.bleu"].tolist())
    conn.close()


def test_a_failed_migration_leaves_the_version_1_store_as_it_was(
    old_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import judgebench.engine.store as store_module

    before = old_store.read_bytes()
    monkeypatch.setattr(store_module, "MIGRATION_V2",
                        (*store_module.MIGRATION_V2, "INSERT INTO no_such_table VALUES (1)"))
    with pytest.raises(JudgebenchError, match="no_such_table"):
        Store(old_store)
    assert old_store.read_bytes() == before
    conn = sqlite3.connect(old_store)
    assert conn.execute("PRAGMA user_version").fetchone() == (1,)
    assert [r[1] for r in conn.execute("PRAGMA table_info(runs)")][1] == "started_at"
    conn.close()


def test_a_version_1_store_is_read_as_it_is_when_opened_read_only(old_store: Path) -> None:
    before = old_store.read_bytes()
    with Store(old_store, readonly=True) as store:
        assert store.kind == "v1"
        assert len(store.scores(_rows(old_store, "scores", ("signature",))[0][0])) == 64
    assert old_store.read_bytes() == before


def test_a_version_3_store_gains_the_index_and_keeps_its_rows(tmp_path: Path) -> None:
    """Version 4 adds `scores_by_run` only (5 the label tables); the viewer reads a version 3
    store as it is."""
    from judgebench.services.runs import logs

    path = tmp_path / "v3.db"
    with Store(path) as store:
        store.conn.execute("DROP INDEX scores_by_run")
        for table in ("labels", "sample_items", "samples", "criteria"):  # version 5's
            store.conn.execute(f"DROP TABLE {table}")
        store.conn.execute("PRAGMA user_version = 3")
    before = sqlite3.connect(path).execute("SELECT * FROM runs").fetchall()
    with Store(path, readonly=True) as store:
        assert store.kind == "v3"
    with pytest.raises(Exception, match="no runs in this store yet"):
        logs(path, readonly=True)  # read, not refused as an older schema
    Store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (5,)
    assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE"
                        " 'sqlite_%' ORDER BY name").fetchall() == [("labels_by_key",),
                                                                     ("scores_by_run",)]
    assert conn.execute("SELECT * FROM runs").fetchall() == before
    plan = " ".join(str(r) for r in conn.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM scores WHERE run_id = 1 ORDER BY rowid LIMIT 5"))
    assert "scores_by_run" in plan
    conn.close()
