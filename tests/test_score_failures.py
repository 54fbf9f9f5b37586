"""Failures you can see: a run with failed scores says which and why on stderr and in --json,
and exits 3 (0 with --allow-failures, or when every score is ok or skipped); `--limit` and
`--sample` score a few rows; a dry run and a run that fails before scoring leave no store and
no table; editing a local plugin changes its signature."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

# A local plugin whose metric fails in chosen ways, by the output's first word.
PLUGIN = '''
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo, Outcome, Status

REASONS = {
    "garbled": (Status.PARSE_ERROR, "the answer does not begin with a score"),
    "empty": (Status.PARSE_ERROR, "the answer is empty"),
    "declined": (Status.REFUSED, "the model declined"),
    "crash": (Status.ERROR, "RuntimeError: the server went away"),
    "skip": (Status.SKIPPED, "nothing to score"),
}


class Picky(Metric):
    info = MetricInfo(name="picky.len", kind="reference", requires=("output",))

    def score(self, samples):
        out = []
        for s in samples:
            word = s.output.split()[0]
            if word in REASONS:
                status, reason = REASONS[word]
                out.append(Outcome.failed(status, reason))
            else:
                out.append(float(len(s.output)))
        return out


@hookimpl
def register_metrics(register):
    register(Picky)
'''


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    path = tmp_path / "picky.py"
    path.write_text(PLUGIN, encoding="utf-8")
    return path


def _inputs(tmp_path: Path, words: list[str]) -> Path:
    return write_jsonl(tmp_path / "in.jsonl", [
        {"item": f"d{i}", "system": "s", "output": f"{w} text {i}"} for i, w in enumerate(words)])


def _score(plugin: Path, data: Path, tmp_path: Path, *extra: str):
    return run_cli("-p", str(plugin), "score", str(data), "-m", "picky.len", "-o",
                   str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"),
                   "--workers", "1", *extra, cwd=tmp_path)


def test_failures_exit_3_with_the_top_reasons_on_stderr(plugin: Path, tmp_path: Path) -> None:
    words = ["garbled"] * 6 + ["empty"] * 2 + ["declined", "crash", "fine", "fine"]
    proc = _score(plugin, _inputs(tmp_path, words), tmp_path)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.splitlines()
    start = lines.index("10 scores failed:")
    assert lines[start + 1:start + 6] == [
        "  picky.len:",
        "    6 parse_error: the answer does not begin with a score",
        "    2 parse_error: the answer is empty",
        "    1 error: RuntimeError: the server went away",
        "    1 more, 1 other reasons",
    ]
    assert lines[start + 6].startswith("see each one: judgebench logs 1 --store ")
    assert lines[start + 6].endswith(" --failed")
    # the table is still written, with failed cells empty
    table = pd.read_csv(tmp_path / "out.csv")
    assert table["picky.len"].notna().sum() == 2


def test_allow_failures_exits_0_and_json_carries_the_counts_and_reasons(
    plugin: Path, tmp_path: Path
) -> None:
    data = _inputs(tmp_path, ["garbled", "garbled", "crash", "fine"])
    proc = _score(plugin, data, tmp_path, "--json", "--allow-failures")
    assert proc.returncode == 0, proc.stderr
    assert "3 scores failed:" in proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["failed"] == 3 and row["run_id"] == 1
    assert row["failures"] == [
        {"status": "parse_error", "reason": "the answer does not begin with a score",
         "count": 2},
        {"status": "error", "reason": "RuntimeError: the server went away", "count": 1},
    ]
    assert row["statuses"] == {"parse_error": 2, "error": 1, "ok": 1}
    without = _score(plugin, data, tmp_path, "--json", "--resume")
    assert without.returncode == 3
    assert json.loads(without.stdout)[0]["failures"] == row["failures"]


def test_ok_and_skipped_scores_exit_0_with_no_failure_summary(plugin: Path,
                                                               tmp_path: Path) -> None:
    proc = _score(plugin, _inputs(tmp_path, ["skip", "fine", "skip"]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "failed" not in proc.stderr and "1 ok, 2 skipped" in proc.stderr


def test_a_judge_without_its_api_key_fails_every_score_and_exits_3(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    env = {"JB_SERVER_KEY": "sk-server-side-key-0123456789abcdef"}
    with FaultServer("--require-key-env", "JB_SERVER_KEY", env=env) as server:
        spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
                "protocol=text,max_attempts=1")
        proc = run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                       "--store", str(tmp_path / "runs.db"),
                       "--cache", str(tmp_path / "cache.sqlite"), "--json", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert "2 scores failed:" in proc.stderr
    assert "    2 error: bad_request: authentication failed (HTTP 401)" in proc.stderr
    (row,) = json.loads(proc.stdout)
    assert row["statuses"] == {"error": 2} and row["failed"] == 2
    assert row["failures"][0]["reason"].startswith("bad_request: authentication failed")


def test_limit_scores_the_first_rows_and_the_sidecar_says_so(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(20))
    out = tmp_path / "out.csv"
    proc = run_cli("score", str(data), "-m", "lexical.length", "-o", str(out), "--store",
                   str(tmp_path / "runs.db"), "--limit", "5", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out, dtype={"item": str, "system": str})
    first = summeval_records(5)
    assert list(zip(table["item"], table["system"], strict=True)) == [
        (r["item"], r["system"]) for r in first]
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["rows"] == 5 and meta["selection"] == {"limit": 5}
    store = sqlite3.connect(tmp_path / "runs.db")
    assert store.execute("SELECT COUNT(*) FROM scores").fetchone() == (5,)
    assert json.loads(store.execute("SELECT selection FROM runs").fetchone()[0]) == {"limit": 5}


def test_sample_draws_seeded_rows_in_input_order(tmp_path: Path) -> None:
    records = summeval_records(30)
    data = write_jsonl(tmp_path / "in.jsonl", records)

    def sample(seed: int, name: str) -> tuple[list[tuple[str, str]], dict]:
        out = tmp_path / f"{name}.csv"
        proc = run_cli("score", str(data), "-m", "lexical.length", "-o", str(out), "--store",
                       str(tmp_path / "runs.db"), "--sample", "7", "--seed", str(seed),
                       "--workers", "1")
        assert proc.returncode == 0, proc.stderr
        table = pd.read_csv(out, dtype={"item": str, "system": str})
        meta = json.loads(Path(f"{out}.meta.json").read_text())
        return list(zip(table["item"], table["system"], strict=True)), meta

    chosen, meta = sample(3, "a")
    numbers = sorted(random.Random(3).sample(range(30), 7))
    assert chosen == [(records[n]["item"], records[n]["system"]) for n in numbers]
    assert meta["rows"] == 7 and meta["selection"] == {"sample": 7, "seed": 3, "of_rows": 30}
    assert sample(3, "again")[0] == chosen, "the same seed draws the same rows"
    assert sample(4, "other")[0] != chosen


def test_limit_and_sample_together_is_a_usage_error(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    proc = run_cli("score", str(data), "-m", "lexical.length", "--limit", "2", "--sample", "2",
                   "--store", str(tmp_path / "runs.db"))
    assert proc.returncode == 2 and "--limit and --sample" in proc.stderr
    assert not (tmp_path / "runs.db").exists()


def test_a_dry_run_creates_no_store_and_no_table(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(4))
    proc = run_cli("score", str(data), "-m", "lexical.chrf", "--dry-run", "-o",
                   str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_run_that_fails_before_scoring_creates_no_store_and_no_table(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [{"item": "1", "system": "s", "output": "x"}])
    # lexical.bleu needs references, which no row has: refused before any work
    proc = run_cli("score", str(data), "-m", "lexical.bleu", "-o", str(tmp_path / "out.csv"),
                   "--store", str(tmp_path / "runs.db"), cwd=tmp_path)
    assert proc.returncode == 2 and "needs field 'reference'" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_a_local_plugin_file_moved_elsewhere_rescoring_nothing(plugin: Path,
                                                               tmp_path: Path) -> None:
    """A local plugin is signed by its content hash, not its path."""
    data = _inputs(tmp_path, ["fine", "fine", "fine"])
    store = tmp_path / "runs.db"

    def score(path: Path) -> str:
        proc = run_cli("-p", str(path), "score", str(data), "-m", "picky.len", "--store",
                       str(store), "--resume", "-o", str(tmp_path / "out.csv"), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    assert "computed 3, reused 0" in score(plugin)
    moved = tmp_path / "elsewhere" / "deeper" / plugin.name
    moved.parent.mkdir(parents=True)
    plugin.rename(moved)
    assert "computed 0, reused 3" in score(moved)
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM scores").fetchone() == (3,)


def test_a_local_plugin_is_one_key_by_any_path_and_editing_it_rescoring(
    plugin: Path, tmp_path: Path
) -> None:
    data = _inputs(tmp_path, ["fine", "fine", "fine"])
    store = tmp_path / "runs.db"

    def score(spec: str) -> str:
        proc = run_cli("-p", spec, "score", str(data), "-m", "picky.len", "--store",
                       str(store), "--resume", "--json", "-o", str(tmp_path / "out.csv"),
                       cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    first = score("picky.py")
    assert "computed 3, reused 0" in first
    assert "reused 3" in score("./picky.py") and "reused 3" in score(str(plugin))
    signatures = {r[0] for r in sqlite3.connect(store).execute("SELECT signature FROM scores")}
    (signature,) = signatures
    assert "|plugin:local sha256:" in signature and str(tmp_path) not in signature
    plugin.write_text(PLUGIN.replace("float(len(s.output))", "float(len(s.output) + 1)"),
                      encoding="utf-8")
    assert "computed 3, reused 0" in score("picky.py"), "an edited plugin is scored again"
    values = [r[0] for r in sqlite3.connect(store).execute(
        "SELECT value FROM scores WHERE signature != ? ORDER BY item", (signature,))]
    assert values == [float(len(f"fine text {i}") + 1) for i in range(3)]
