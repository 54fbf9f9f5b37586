"""The store can be trusted: a table holds only its own samples' scores whatever else the store
holds (other runs, concurrent processes), and a bad store file is a one-line error that leaves
the file as it was."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl

from judgebench.auditing.run import store_costs
from judgebench.engine.runner import build_table, run, sample_hash
from judgebench.engine.store import APPLICATION_ID, SCHEMA_VERSION, Store, StoreBusy
from judgebench.errors import InputError, JudgebenchError
from judgebench.models import Sample, Score
from judgebench.spec import parse_spec

PLUGIN = '''
import os, time
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo, Outcome, Status

DONE = [0]


class Length(Metric):
    """Output length; refuses outputs starting with "no". With $PAUSE_AT set, stops after that
    many samples until $GO_FILE exists (writing $PAUSED_FILE), so a test can run another
    process against the same store in between."""

    info = MetricInfo(name="trust.len", kind="reference", requires=("output",))
    batch_size = 4

    def score(self, samples):
        pause = os.environ.get("PAUSE_AT")
        if pause and DONE[0] >= int(pause) and not os.path.exists(os.environ["GO_FILE"]):
            open(os.environ["PAUSED_FILE"], "w").close()
            deadline = time.time() + 120
            while not os.path.exists(os.environ["GO_FILE"]) and time.time() < deadline:
                time.sleep(0.05)
        DONE[0] += len(samples)
        return [Outcome.failed(Status.REFUSED, "starts with no") if s.output.startswith("no")
                else float(len(s.output)) for s in samples]


@hookimpl
def register_metrics(register):
    register(Length)
'''

#: The store's schema before it was versioned (application_id 0, user_version 0), verbatim.
LEGACY_SCHEMA = """
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

SPECS = [parse_spec("lexical.rouge1"), parse_spec("lexical.chrf")]


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "trust_plugin.py"
    path.write_text(PLUGIN, encoding="utf-8")
    return path


def _samples(records: list[dict]) -> list[Sample]:
    return [Sample.model_validate(r) for r in records]


def _other_outputs(records: list[dict]) -> list[dict]:
    """The same ids with other outputs: another system's run, another prompt."""
    return [{**r, "output": " ".join(reversed(r["output"].split()))} for r in records]


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())
            if p.is_file()}


def _one_line_error(proc: subprocess.CompletedProcess[str], path: Path, code: int) -> str:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0]
    return lines[0]


# -- item 1: a table holds only the scores of its own samples --------------------------------
def test_a_table_holds_only_its_own_samples_whatever_the_store_holds(tmp_path: Path) -> None:
    mine, theirs = _samples(summeval_records(32)), _samples(_other_outputs(summeval_records(32)))
    with Store(":memory:") as fresh:
        expected = run(mine, SPECS, store=fresh).table
    with Store(tmp_path / "shared.db") as store:
        first = run(mine, SPECS, store=store)
        other = run(theirs, SPECS, store=store)
        assert not other.table.equals(expected), "the two runs must differ for this test"
        pd.testing.assert_frame_equal(build_table(mine, first.metrics, store), expected)

        resumed = run(mine, SPECS, store=store, resume=True)
        assert (resumed.computed, resumed.reused) == (0, 64), "unchanged samples are reused"
        pd.testing.assert_frame_equal(resumed.table, expected)

        changed = [s.model_copy(update={"output": "a changed output"}) if i == 3 else s
                   for i, s in enumerate(mine)]
        again = run(changed, SPECS, store=store, resume=True)
        assert (again.computed, again.reused) == (2, 62), "a changed output is rescored"
        assert again.table.loc[3, "lexical.chrf"] != expected.loc[3, "lexical.chrf"]
        pd.testing.assert_frame_equal(again.table.drop(index=3), expected.drop(index=3))


def test_two_processes_writing_one_store_each_get_their_own_table(
    tmp_path: Path, plugin: Path
) -> None:
    """Run A stops half way while run B (same ids, other outputs, some refused) writes the same
    store from start to end; then A finishes. Each table and each status count must be what
    the same run writes into a store of its own."""
    rows_a = [{"item": f"d{i}", "system": "s", "output": "x" * (i + 1)} for i in range(40)]
    rows_b = [{"item": f"d{i}", "system": "s", "output": ("no " if i % 2 else "y") * (i + 2)}
              for i in range(40)]
    inputs = {"a": write_jsonl(tmp_path / "a.jsonl", rows_a),
              "b": write_jsonl(tmp_path / "b.jsonl", rows_b)}

    def args(name: str, store: Path, out: Path) -> list[str]:
        return ["-p", str(plugin), "score", str(inputs[name]), "-m", "trust.len", "-o", str(out),
                "--store", str(store), "--no-progress", "--allow-failures"]

    alone = {}
    for name in inputs:
        out = tmp_path / f"alone-{name}.csv"
        run_cli(*args(name, tmp_path / f"alone-{name}.db", out), check=True)
        alone[name] = (pd.read_csv(out), json.loads(Path(f"{out}.meta.json").read_text()))

    shared = tmp_path / "shared.db"
    go, paused = tmp_path / "go", tmp_path / "paused"
    env = {**os.environ, "PAUSE_AT": "20", "GO_FILE": str(go), "PAUSED_FILE": str(paused)}
    proc_a = subprocess.Popen([sys.executable, "-m", "judgebench.cli",
                               *args("a", shared, tmp_path / "a.csv")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not paused.exists() and proc_a.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert paused.exists(), "run A did not reach its pause"
        run_cli(*args("b", shared, tmp_path / "b.csv"), check=True)
        assert proc_a.poll() is None, "run A must still be running while B writes"
        go.touch()
        _, err = proc_a.communicate(timeout=120)
    finally:
        if proc_a.poll() is None:
            proc_a.kill()
            proc_a.wait()
    assert proc_a.returncode == 0, err

    for name in inputs:
        out = tmp_path / f"{name}.csv"
        table, meta = pd.read_csv(out), json.loads(Path(f"{out}.meta.json").read_text())
        pd.testing.assert_frame_equal(table, alone[name][0])
        assert meta["columns"]["trust.len"]["statuses"] == \
            alone[name][1]["columns"]["trust.len"]["statuses"]
    assert alone["a"][1]["columns"]["trust.len"]["statuses"] == {"ok": 40}
    assert alone["b"][1]["columns"]["trust.len"]["statuses"] == {"ok": 20, "refused": 20}
    runs = sqlite3.connect(shared).execute(
        "SELECT COUNT(DISTINCT run_id) FROM scores").fetchone()[0]
    assert runs == 2, "each row names the run that wrote it"


# -- item 6: store faults are one-line errors that leave the file as it was --------------------
def _store_with_rows(path: Path, n: int = 400) -> Path:
    with Store(path) as store:
        store.put([Score(item=f"i{i}", system="s", metric="m", value=1.0, signature="sig",
                         raw="judge text " * 20) for i in range(n)], [f"h{i}" for i in range(n)])
    return path


def _random_bytes(folder: Path) -> Path:
    path = folder / "random.db"
    path.write_bytes(os.urandom(8192))
    return path


def _page_overwritten(folder: Path) -> Path:
    path = _store_with_rows(folder / "corrupt.db")
    with path.open("r+b") as handle:
        handle.seek(4096 * 3)
        handle.write(b"\xff" * 3000)
    return path


def _truncated(folder: Path) -> Path:
    path = _store_with_rows(folder / "truncated.db")
    os.truncate(path, path.stat().st_size // 2)
    return path


def _other_program(folder: Path) -> Path:
    path = folder / "app.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT);"
                       "INSERT INTO users (name) VALUES ('ada');")
    conn.close()
    return path


def _other_application_id(folder: Path) -> Path:
    """Another program's file that even has tables shaped like ours."""
    path = folder / "lookalike.db"
    conn = sqlite3.connect(path)
    conn.executescript(LEGACY_SCHEMA + "PRAGMA application_id = 0x12345678;")
    conn.close()
    return path


def _other_scores_table(folder: Path) -> Path:
    path = folder / "scores.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE scores (student TEXT, grade REAL);"
                       "INSERT INTO scores VALUES ('ada', 1.0);")
    conn.close()
    return path


UNTOUCHED = [_random_bytes, _page_overwritten, _truncated, _other_program,
             _other_application_id, _other_scores_table]


@pytest.mark.parametrize("make", UNTOUCHED, ids=lambda f: f.__name__.strip("_"))
def test_a_bad_or_foreign_store_file_is_refused_untouched(
    tmp_path: Path, summeval_small: Path, make
) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    path = make(folder)
    before = _snapshot(folder)
    time.sleep(0.01)  # an mtime change would show
    proc = run_cli("score", str(summeval_small), "-m", "lexical.chrf", "-o",
                   str(tmp_path / "o.csv"), "--store", str(path))
    line = _one_line_error(proc, path, 2)
    assert "--store" in line
    assert _snapshot(folder) == before, "the file (and its folder) must be left as it was"
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.parametrize("where", ["folder", "under_a_file", "under_proc"])
def test_a_store_path_that_cannot_be_a_store_is_exit_2(
    tmp_path: Path, summeval_small: Path, where: str
) -> None:
    if where == "folder":
        path = tmp_path / "runs.db"
        path.mkdir()
    elif where == "under_a_file":
        (tmp_path / "notes.txt").write_text("a file, not a folder")
        path = tmp_path / "notes.txt" / "runs.db"
    else:
        path = Path("/proc/judgebench-no-such-folder/runs.db")
    proc = run_cli("score", str(summeval_small), "-m", "lexical.chrf", "--store", str(path))
    _one_line_error(proc, path, 2)


def test_a_read_only_store_is_refused_before_any_work() -> None:
    """In a real process without write permission (as `nobody` when the tests run as root)."""
    folder = Path(tempfile.mkdtemp(dir="/tmp", prefix="judgebench-ro-"))
    try:
        path = _store_with_rows(folder / "runs.db", n=3)
        folder.chmod(0o755 if os.geteuid() == 0 else 0o555)  # root: the child is `nobody`
        path.chmod(0o444)
        before = _snapshot(folder)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: report what opening the store raised, then exit at once
            os.close(read_end)
            code, text = 0, "opened"
            try:
                if os.geteuid() == 0:
                    os.setuid(65534)
                Store(path).close()
            except JudgebenchError as exc:
                code, text = exc.exit_code, str(exc)
            except BaseException as exc:  # reported to the parent
                code, text = 99, repr(exc)
            os.write(write_end, json.dumps([code, text]).encode())
            os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end) as pipe:
            code, text = json.loads(pipe.read())
        os.waitpid(pid, 0)
        assert code == 2, text
        assert text.startswith(str(path)) and "writable" in text and "\n" not in text
        assert _snapshot(folder) == before
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_a_lock_held_by_another_process_is_exit_1_with_one_line(
    tmp_path: Path, summeval_small: Path
) -> None:
    store = _store_with_rows(tmp_path / "runs.db", n=3)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\n"
         "print('locked', flush=True)\n"
         "time.sleep(120)\n", str(store)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        began = time.monotonic()
        proc = run_cli("score", str(summeval_small), "-m", "lexical.chrf", "--store", str(store),
                       env={"JUDGEBENCH_STORE_TIMEOUT": "1"})
        assert time.monotonic() - began < 25, "the timeout comes from $JUDGEBENCH_STORE_TIMEOUT"
        line = _one_line_error(proc, store, 1)
        assert "locked by another process" in line
    finally:
        holder.kill()
        holder.wait()
    with Store(store) as free:
        assert free.timeout == 30.0
        assert len(free.scores("sig")) == 3


def test_a_lock_taken_during_a_run_stops_it_with_store_busy(tmp_path: Path) -> None:
    store = Store(_store_with_rows(tmp_path / "runs.db", n=3), timeout=0.3)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\n"
         "print('locked', flush=True)\n"
         "time.sleep(120)\n", str(store.path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        score = Score(item="new", system="s", metric="m", value=2.0, signature="sig")
        with pytest.raises(StoreBusy, match="locked by another process") as caught:
            store.put([score], ["hnew"])
        assert caught.value.exit_code == 1 and str(caught.value).startswith(store.path)
    finally:
        holder.kill()
        holder.wait()
    store.put([score], ["hnew"])  # the lock is gone: the same write now succeeds
    assert len(store.scores("sig")) == 4
    store.close()


def test_a_new_store_is_stamped_and_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="newer judgebench") as caught:
        Store(path)
    assert str(caught.value).startswith(str(path))


def _legacy_store(path: Path, samples: list[Sample], signature: str) -> None:
    """A store as the unversioned schema wrote it, with marker values a rerun would not give."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.executescript(LEGACY_SCHEMA)
    conn.executemany(
        "INSERT INTO scores (signature, item, system, sample_index, sample_hash, metric, value,"
        " status, created_at) VALUES (?,?,?,0,?,?,?,'ok',0)",
        [(signature, s.item, s.system, None if i == 0 else sample_hash(s), "lexical.chrf",
          1000.0 + i) for i, s in enumerate(samples)])
    conn.commit()
    conn.close()


def test_an_old_store_is_migrated_in_place_and_its_scores_reused(tmp_path: Path) -> None:
    samples = _samples(summeval_records(8))
    spec = parse_spec("lexical.chrf")
    with Store(":memory:") as scratch:
        signature = run(samples[:1], [spec], store=scratch).metrics[0].signature
    path = tmp_path / "old.db"
    _legacy_store(path, samples, signature)

    with Store(path) as store:
        result = run(samples, [spec], store=store, resume=True)
    assert (result.computed, result.reused) == (1, 7), "the row without a content hash is redone"
    assert result.table["lexical.chrf"].tolist()[1:] == [1000.0 + i for i in range(1, 8)]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    key = [r[1] for r in sorted(conn.execute("PRAGMA table_info(scores)"), key=lambda r: r[5])
           if r[5]]
    assert key == ["signature", "item", "system", "sample_index", "sample_hash"]
    assert conn.execute("SELECT COUNT(*) FROM scores").fetchone() == (9,)  # 8 kept, 1 new
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone() == (1,)


def test_a_failed_migration_leaves_the_old_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import judgebench.engine.store as store_module

    samples = _samples(summeval_records(4))
    path = tmp_path / "old.db"
    _legacy_store(path, samples, "lexical.chrf@1|x")
    before = path.read_bytes()
    failing = (*store_module.LEGACY_MIGRATION, "INSERT INTO no_such_table VALUES (1)")
    monkeypatch.setattr(store_module, "LEGACY_MIGRATION", failing)
    with pytest.raises(JudgebenchError) as caught:
        Store(path)
    assert str(caught.value).startswith(str(path)) and "no_such_table" in str(caught.value)
    assert path.read_bytes() == before
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone() == (0,)
    assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")} \
        == {"scores", "corpus_scores"}
    conn.close()

    monkeypatch.undo()
    with Store(path) as store:
        assert [s.value for s in store.scores("lexical.chrf@1|x")] == [1000.0, 1001.0, 1002.0,
                                                                      1003.0]


def test_audit_reads_a_store_only_after_the_same_checks(tmp_path: Path) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    foreign = _other_application_id(folder)
    before = _snapshot(folder)
    with pytest.raises(InputError, match="another program's SQLite database"):
        store_costs(foreign, "sig")
    with pytest.raises(InputError, match="corrupt store"):
        store_costs(_truncated(folder), "sig")
    assert _snapshot(folder)["lookalike.db"] == before["lookalike.db"]
    mine = _store_with_rows(folder / "mine.db", n=3)
    assert store_costs(mine, "sig")["tokens_in"] is None
    assert store_costs(mine, "other") == {}
