"""Paths and destinations: no path may overwrite another, every destination is checked before
any work or spending (exit 2, nothing written), a failed run leaves no empty store, and the
temporary file of a killed write is cleaned up by the next write."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

SECRET = "sk-paths-test-0123456789"


def score(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("score", *args)


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder` with its bytes (a symlink: its target)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with 4 SummEval generations in in.jsonl, as the working directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "default-cache"))
    write_jsonl(tmp_path / "in.jsonl", summeval_records(4))
    return tmp_path


# -- two options naming one file --------------------------------------------------------------
def _link(work: Path, name: str, target: str) -> None:
    (work / name).symlink_to(target)


def _hardlink(work: Path, name: str, target: str) -> None:
    os.link(work / target, work / name)


COLLISIONS = {
    # case: (arguments after INPUT, files to set up, option reported, other option named)
    "-o is the input, spelt ./": (["-o", "./in.jsonl", "--store", "s.db"], None, "-o", "INPUT"),
    "-o is a symlink to the input": (["-o", "link.jsonl", "--store", "s.db"],
                                     (_link, "link.jsonl", "in.jsonl"), "-o", "INPUT"),
    "-o is a hard link of the input": (["-o", "hard.jsonl", "--store", "s.db"],
                                       (_hardlink, "hard.jsonl", "in.jsonl"), "-o", "INPUT"),
    "--store is the input": (["-o", "out.csv", "--store", "./in.jsonl"], None, "--store",
                             "INPUT"),
    "--store is -o": (["-o", "out.csv", "--store", "out.csv"], None, "--store", "-o"),
    "--store is -o through a symlink": (["-o", "out.csv", "--store", "db-link"],
                                        (_link, "db-link", "out.csv"), "--store", "-o"),
    "--corpus is -o": (["-o", "out.csv", "--corpus", "./out.csv", "--store", "s.db"], None,
                       "--corpus", "-o"),
    "--corpus is the input": (["-o", "out.csv", "--corpus", "in.jsonl", "--store", "s.db"],
                              None, "--corpus", "INPUT"),
    "--corpus is the sidecar of -o": (["-o", "out.jsonl", "--corpus", "out.jsonl.meta.json",
                                       "--store", "s.db"], None, "--corpus", "-o"),
    "--cache is --store": (["-o", "out.csv", "--store", "s.db", "--cache", "./s.db"], None,
                           "--cache", "--store"),
    "--cache folder holds --store": (["-o", "out.csv", "--store", "c/judge_cache.sqlite",
                                      "--cache", "c"], None, "--cache", "--store"),
    "--store is the default cache": (["-o", "out.csv", "--store",
                                      "default-cache/judge_cache.sqlite"], None,
                                     "--cache (default)", "--store"),
    "--store is the WAL of --cache": (["-o", "out.csv", "--cache", "c.sqlite", "--store",
                                       "c.sqlite-wal"], None, "--cache", "--store"),
}


@pytest.mark.parametrize("case", sorted(COLLISIONS))
def test_two_options_naming_one_file_exit_2_and_change_nothing(work: Path, case: str) -> None:
    args, setup, reported, other = COLLISIONS[case]
    if setup is not None:
        make, name, target = setup
        make(work, name, target)
    before = snapshot(work)
    result = score("in.jsonl", "-m", "lexical.chrf", *args)
    assert result.returncode == 2, result.stderr
    assert f"field '{reported}'" in result.stderr and other in result.stderr, result.stderr
    assert "is the same file as" in result.stderr
    assert snapshot(work) == before  # no table, no sidecar, no store, the input intact


def test_the_same_path_twice_for_one_option_of_audit_is_refused(work: Path) -> None:
    table = _scores_table(work)
    before = snapshot(work)
    result = run_cli("audit", str(table), "--human", "human.coherence",
                     "--report", "r.html", "--report", "./r.html")
    assert result.returncode == 2, result.stderr
    assert "field '--report'" in result.stderr and "is the same file as" in result.stderr
    assert snapshot(work) == before


def test_an_audit_report_may_not_overwrite_the_sidecar_of_its_scores(work: Path) -> None:
    table = _scores_table(work)
    before = snapshot(work)
    result = run_cli("audit", str(table), "--human", "human.coherence",
                     "--level", "system", "--bootstrap", "0",
                     "--report", f"{table}.meta.json")
    assert result.returncode == 2, result.stderr
    assert "the .meta.json of SCORES" in result.stderr
    assert snapshot(work) == before


def _scores_table(work: Path) -> Path:
    write_jsonl(work / "more.jsonl", summeval_records(32))
    result = score("more.jsonl", "-m", "lexical.chrf", "-o", "scores.csv", "--store", "s.db")
    assert result.returncode == 0, result.stderr
    return work / "scores.csv"


# -- destinations checked before any work -----------------------------------------------------
def _under_a_file(work: Path) -> str:
    (work / "file.txt").write_text("not a folder")
    return "file.txt/sub"


def _read_only_folder(work: Path) -> str:
    if os.geteuid() == 0:  # root writes through chmod: a file as parent stops root too
        return _under_a_file(work)
    folder = work / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    return "locked"


DESTINATIONS = {
    # case: (arguments after INPUT, given the blocked folder; words of the error)
    "-o under a file": (_under_a_file, lambda d: ["-o", f"{d}/out.csv", "--store", "s.db"],
                        "field '-o'"),
    "-o in a read-only folder": (_read_only_folder,
                                 lambda d: ["-o", f"{d}/out.csv", "--store", "s.db"],
                                 "field '-o'"),
    "-o is a folder": (lambda w: (w / "out.csv").mkdir() or "out.csv",
                       lambda d: ["-o", d, "--store", "s.db"], "is a directory"),
    "-o of an unknown type": (lambda w: "", lambda d: ["-o", "out.txt", "--store", "s.db"],
                              "unknown file type '.txt'"),
    "--corpus of an unknown type": (lambda w: "", lambda d: ["-o", "out.csv", "--corpus",
                                                             "corpus.tsv", "--store", "s.db"],
                                    "unknown file type '.tsv'"),
    "--corpus under a file": (_under_a_file, lambda d: ["-o", "out.csv", "--corpus",
                                                        f"{d}/c.csv", "--store", "s.db"],
                              "field '--corpus'"),
    "--store under a file": (_under_a_file, lambda d: ["-o", "out.csv", "--store", f"{d}/s.db"],
                             "field '--store'"),
    "--store is not a database": (lambda w: (w / "s.db").write_text("item,system\n") and "",
                                  lambda d: ["-o", "out.csv", "--store", "s.db"],
                                  "is not a SQLite database"),
    "--cache under a file": (_under_a_file, lambda d: ["-o", "out.csv", "--store", "s.db",
                                                       "--cache", f"{d}/c.sqlite"],
                             "field '--cache'"),
}


@pytest.mark.parametrize("case", sorted(DESTINATIONS))
def test_a_bad_destination_exits_2_before_anything_is_written(work: Path, case: str) -> None:
    block, args, words = DESTINATIONS[case]
    blocked = block(work)
    before = snapshot(work)
    result = score("in.jsonl", "-m", "lexical.chrf", *args(blocked))
    assert result.returncode == 2, result.stderr
    assert words in result.stderr, result.stderr
    assert snapshot(work) == before  # no table, no .meta.json, no store


def test_a_good_run_still_writes_every_destination(work: Path) -> None:
    result = score("in.jsonl", "-m", "lexical.chrf", "-o", "new/dir/out.csv", "--corpus",
                   "new/c.jsonl", "--store", "new/s.db", "--cache", "new/cache")
    assert result.returncode == 0, result.stderr
    for name in ("new/dir/out.csv", "new/dir/out.csv.meta.json", "new/c.jsonl", "new/s.db"):
        assert (work / name).is_file(), name


def test_an_audit_report_that_cannot_be_written_is_refused_first(work: Path) -> None:
    table = _scores_table(work)
    blocked = _under_a_file(work)
    result = run_cli("audit", str(table), "--human", "human.coherence",
                     "--report", f"{blocked}/r.md")
    assert result.returncode == 2, result.stderr
    assert "field '--report'" in result.stderr and "is not a directory" in result.stderr
    assert "sentinel" not in result.stderr  # refused before the audit ran


# -- a judge is not paid for a run that cannot write ----------------------------------------
@pytest.mark.parametrize("bad", ["-o", "--corpus"])
def test_a_judge_gets_no_request_when_a_destination_is_bad(tmp_path: Path, bad: str) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    (tmp_path / "file.txt").write_text("not a folder")
    with FaultServer(log=tmp_path / "served.jsonl") as srv:
        spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={srv.url},"
                "api_key_env=JB_JUDGE_KEY,protocol=text")

        def score_into(folder: str, paths: dict[str, str]) -> subprocess.CompletedProcess[str]:
            env = {"JB_JUDGE_KEY": SECRET, "JUDGEBENCH_CACHE_DIR": str(tmp_path / folder)}
            args = [part for option, path in paths.items() for part in (option, path)]
            return run_cli("score", str(data), "-m", spec, "--store",
                           str(tmp_path / f"{folder}.db"), *args, cwd=tmp_path, env=env)

        good = {"-o": str(tmp_path / "out.csv"), "--corpus": str(tmp_path / "corpus.csv")}
        paths = {**good, bad: (str(tmp_path / "file.txt/out.csv") if bad == "-o"
                               else str(tmp_path / "corpus.txt"))}
        refused = score_into("cache-bad", paths)
        assert refused.returncode == 2, refused.stderr
        assert f"field '{bad}'" in refused.stderr
        assert srv.served() == []  # not one request
        assert not (tmp_path / "cache-bad.db").exists()
        assert not (tmp_path / "out.csv").exists() and not (tmp_path / "corpus.csv").exists()
        finished = score_into("cache-good", good)  # the same run, writable: it calls
        assert finished.returncode == 0, finished.stderr
        assert len(srv.served()) == 3
        assert (tmp_path / "out.csv").is_file() and (tmp_path / "corpus.csv").is_file()


# -- no empty store after a failed run --------------------------------------------------------
def test_a_run_that_fails_before_its_first_score_leaves_no_store(work: Path) -> None:
    result = score("in.jsonl", "-m", "no.such.metric", "-o", "out.csv", "--store", "new.db")
    assert result.returncode == 2, result.stderr
    assert "unknown metric" in result.stderr
    assert sorted(p.name for p in work.iterdir()) == ["in.jsonl"]


def test_a_failed_run_keeps_a_store_it_did_not_create(work: Path) -> None:
    assert score("in.jsonl", "-m", "lexical.chrf", "--store", "old.db",
                 "-o", "out.csv").returncode == 0
    failed = score("in.jsonl", "-m", "no.such.metric", "--store", "old.db")
    assert failed.returncode == 2, failed.stderr
    rows = sqlite3.connect(work / "old.db").execute("SELECT COUNT(*) FROM scores").fetchone()
    assert rows == (4,)


# -- temporary files of a killed write --------------------------------------------------------
KILLED_WRITE = """
import os, signal, sys
from judgebench.tables.io import atomic_path
with atomic_path(sys.argv[1]) as tmp:
    tmp.write_text("half of a table")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_next_write_removes_what_a_killed_write_left(work: Path) -> None:
    out = work / "out.csv"
    proc = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    [left] = [p for p in work.iterdir() if p.name.startswith(".out.csv.")]
    assert left.name.endswith(".tmp") and not out.exists()
    an_hour_ago = time.time() - 3600
    os.utime(left, (an_hour_ago, an_hour_ago))
    in_progress = work / ".out.csv.abcd1234.tmp"  # another writer's, modified just now
    in_progress.write_text("being written")
    other = work / ".other.csv.abcd1234.tmp"  # another destination's
    other.write_text("old")
    os.utime(other, (an_hour_ago, an_hour_ago))
    result = score("in.jsonl", "-m", "lexical.chrf", "-o", "out.csv", "--store", "s.db")
    assert result.returncode == 0, result.stderr
    assert not left.exists()
    assert in_progress.exists() and other.exists()
    assert out.read_text().startswith("item,system")


def test_only_regular_files_named_like_its_temporaries_are_removed(tmp_path: Path) -> None:
    from judgebench.tables.io import remove_stale_temps

    target = tmp_path / "r.html"
    old = time.time() - 3600
    names = {".r.html.abcd_123.tmp": True,  # what mkstemp makes: removed
             ".r.html.meta.json.abcd1234.tmp": False,  # r.html.meta.json's
             ".r.html.abcd12345.tmp": False, ".r.html.ABCD1234.tmp": False, "r.html.tmp": False}
    for name in names:
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, (old, old))
    (tmp_path / ".r.html.dir12345.tmp").mkdir()
    removed = remove_stale_temps(target)
    assert sorted(p.name for p in removed) == [".r.html.abcd_123.tmp"]
    for name, gone in names.items():
        assert (tmp_path / name).exists() is not gone, name
    assert (tmp_path / ".r.html.dir12345.tmp").is_dir()
