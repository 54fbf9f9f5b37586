"""`judgebench audit --fail-on`: the audit as a CI gate, on SummEval scored with token F1 and
BLEU. A failed check exits 4 after writing the reports, with one FAIL line per finding on
stderr and the same findings in the JSON report; a bad expression is an input error (exit 2)
before any work."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from judgebench.commands.audit import CHECKS_FAILED

FAST = ("--bootstrap", "0", "--resamples", "200")
COHERENCE_FAILS = ("FAIL lexical.token_f1: does not beat sentinel.cand at system level for "
                   "human.coherence (cluster 1: not significantly better than sentinel.cand "
                   "(cluster 1))")


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory,
           summeval_token_f1_bleu: tuple[Path, Path, Path]) -> dict[str, Path]:
    """The session's token_f1 + BLEU table (read only) and a folder of this module's own."""
    samples, scores, store = summeval_token_f1_bleu
    return {"root": tmp_path_factory.mktemp("fail-on"), "samples": samples, "scores": scores,
            "store": store}


def audit(scored: dict[str, Path], *args: str, scores: Path | None = None):
    return run_cli("audit", str(scores or scored["scores"]), "--samples",
                   str(scored["samples"]), *FAST, *args)


def fail_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("FAIL ")]


def test_the_exit_status_is_its_own_code() -> None:
    # 0 ok, 1 other failure, 2 bad input, 3 finished with failed scores (DESIGN.md).
    assert CHECKS_FAILED == 4


def test_gate_fails_the_job_with_a_line_per_failing_metric(scored: dict[str, Path],
                                                           tmp_path: Path) -> None:
    report = tmp_path / "audit.json"
    proc = audit(scored, "--human", "human.relevance", "--human", "human.coherence",
                 "--level", "system", "--fail-on", "gate", "--report", str(report))
    assert proc.returncode == CHECKS_FAILED, proc.stderr
    # Relevance passes at system level (token F1 beats every sentinel); coherence does not.
    assert fail_lines(proc.stderr) == [COHERENCE_FAILS]
    assert "--fail-on: 1 failure(s); exit 4" in proc.stderr
    assert proc.stdout.startswith("# Audit of scores.csv")  # the card is still printed,
    assert f"- {COHERENCE_FAILS}" in proc.stdout  # with the findings in its verdict block
    data = json.loads(report.read_text())  # and the report still written
    assert data["fail_on"] == ["gate"]
    assert data["failures"] == [{
        "check": "gate", "metric": "lexical.token_f1",
        "message": COHERENCE_FAILS.removeprefix("FAIL lexical.token_f1: "),
        "human": "human.coherence", "statistic": "pearson", "level": "system",
        "grouping": "none"}]


def test_gate_passes_where_every_metric_passes(scored: dict[str, Path]) -> None:
    proc = audit(scored, "--human", "human.relevance", "--level", "system", "--fail-on",
                 "gate", "--json")
    assert proc.returncode == 0, proc.stderr
    assert fail_lines(proc.stderr) == []
    results = json.loads(proc.stdout)
    gate = [r["gate"] for r in results if r["type"] == "correlation" and r["kind"] == "metric"
            and r["gate"] is not None]
    assert gate == ["pass"]  # token F1; BLEU is scored by its corpus formula, not gated here
    assert not [r for r in results if r["type"] == "failure"]


def test_json_array_carries_the_failures(scored: dict[str, Path]) -> None:
    proc = audit(scored, "--human", "human.coherence", "--level", "system", "--fail-on",
                 "gate", "--json")
    assert proc.returncode == CHECKS_FAILED
    failures = [r for r in json.loads(proc.stdout) if r["type"] == "failure"]
    assert [f"FAIL {f['metric']}: {f['message']}" for f in failures] == [COHERENCE_FAILS]


@pytest.fixture(scope="module")
def holes(scored: dict[str, Path]) -> Path:
    """The table with 30 of 400 token F1 scores missing (7.5%); same .meta.json."""
    path = scored["root"] / "holes.csv"
    frame = pd.read_csv(scored["scores"], dtype={"item": str, "system": str})
    frame.loc[frame.index[:30], "lexical.token_f1"] = None
    frame.to_csv(path, index=False)
    shutil.copy(f"{scored['scores']}.meta.json", f"{path}.meta.json")
    return path


@pytest.mark.parametrize(("expression", "code"), [
    ("parse-rate>0.05", CHECKS_FAILED), ("parse-rate>5%", CHECKS_FAILED),
    ("parse-rate>0.1", 0), ("parse-rate > 10%", 0)])
def test_parse_rate_counts_the_missing_values_of_the_table(
        scored: dict[str, Path], holes: Path, expression: str, code: int) -> None:
    proc = audit(scored, "--human", "human.relevance", "--level", "system", "--fail-on",
                 expression, scores=holes)
    assert proc.returncode == code, proc.stderr
    expected = ["FAIL lexical.token_f1: 7.5% of its scores are not ok (30 of 400, from the "
                "missing values in the scores table), above 5.0%"]
    assert fail_lines(proc.stderr) == (expected if code else [])


def test_parse_rate_reads_the_store_statuses(scored: dict[str, Path], tmp_path: Path) -> None:
    """A judge's parse errors that the table hides (filled in by hand) are in the store."""
    store = tmp_path / "runs.db"
    shutil.copy(scored["store"], store)
    meta = json.loads(Path(f"{scored['scores']}.meta.json").read_text())
    signature = meta["columns"]["lexical.token_f1"]["signature"]
    with sqlite3.connect(store) as conn:
        changed = conn.execute(
            "UPDATE scores SET status = 'parse_error', value = NULL WHERE rowid IN (SELECT "
            "rowid FROM scores WHERE signature = ? ORDER BY rowid LIMIT 24)",
            (signature,)).rowcount
    assert changed == 24
    args = ("--human", "human.relevance", "--level", "system", "--fail-on", "parse-rate>0.05")
    assert audit(scored, *args).returncode == 0  # the table and its .meta.json: all ok
    proc = audit(scored, *args, "--store", str(store))
    assert proc.returncode == CHECKS_FAILED, proc.stderr
    assert fail_lines(proc.stderr) == [
        "FAIL lexical.token_f1: 6.0% of its scores are not ok (24 of 400, from the statuses "
        "in the store), above 5.0%"]


@pytest.mark.slow  # five audits at segment level
def test_cluster_drop_against_a_previous_audit(scored: dict[str, Path],
                                               tmp_path: Path) -> None:
    args = ("--human", "human.coherence", "--level", "segment", "--grouping", "none")
    previous = tmp_path / "old.json"
    assert audit(scored, *args, "--report", str(previous)).returncode == 0
    same = audit(scored, *args, "--fail-on", "cluster-drop", "--previous", str(previous))
    assert same.returncode == 0 and fail_lines(same.stderr) == []
    # Token F1 replaced by noise: it falls from cluster 1 (it passed the gate) to a worse one.
    worse = tmp_path / "worse.csv"
    frame = pd.read_csv(scored["scores"], dtype={"item": str, "system": str})
    frame["lexical.token_f1"] = np.random.default_rng(3).normal(size=len(frame))
    frame.to_csv(worse, index=False)
    shutil.copy(f"{scored['scores']}.meta.json", f"{worse}.meta.json")
    old = {r["metric"]: r["cluster"] for b in json.loads(previous.read_text())["blocks"]
           for r in b["rows"]}
    assert old["lexical.token_f1"] == 1
    proc = audit(scored, *args, "--fail-on", "cluster-drop", "--fail-on", "gate",
                 "--previous", str(previous), "--json", scores=worse)
    assert proc.returncode == CHECKS_FAILED, proc.stderr
    now = {r["metric"]: r["cluster"] for r in json.loads(proc.stdout)
           if r["type"] == "correlation"}
    assert now["lexical.token_f1"] > 1 and now["lexical.bleu"] == old["lexical.bleu"]
    lines = fail_lines(proc.stderr)
    assert lines[0] == (f"FAIL lexical.token_f1: fell from cluster 1 to cluster "
                        f"{now['lexical.token_f1']} at segment level, no grouping for "
                        "human.coherence")
    # Several checks: the gate's findings follow (noise does not beat the sentinels).
    assert lines[1].startswith("FAIL lexical.token_f1: does not beat sentinel.")
    assert len(lines) == 2
    # The --json array of an earlier audit serves as --previous as well.
    array = tmp_path / "old-array.json"
    array.write_text(audit(scored, *args, "--json").stdout)
    again = audit(scored, *args, "--fail-on", "cluster-drop", "--previous", str(array),
                  scores=worse)
    assert again.returncode == CHECKS_FAILED and fail_lines(again.stderr)[0] == lines[0]


def test_cluster_drop_with_nothing_in_common_is_a_failure(scored: dict[str, Path],
                                                          tmp_path: Path) -> None:
    previous = tmp_path / "old.json"
    previous.write_text(json.dumps([{"type": "correlation", "metric": "other", "kind":
                                     "metric", "human": "human.x", "statistic": "pearson",
                                     "level": "system", "grouping": "none", "cluster": 1}]))
    proc = audit(scored, "--human", "human.coherence", "--level", "system", "--fail-on",
                 "cluster-drop", "--previous", str(previous))
    assert proc.returncode == CHECKS_FAILED
    assert fail_lines(proc.stderr) == [
        "FAIL (previous audit): nothing to compare: the previous audit has none of these "
        "metrics in these settings"]


@pytest.mark.parametrize(("args", "message"), [
    (["--fail-on", "gates"], "field '--fail-on': 'gates' is not a check; use gate, "
                             "parse-rate>X"),
    (["--fail-on", "parse-rate>abc"], "'parse-rate>abc': 'abc' is not a number"),
    (["--fail-on", "parse-rate>1.5"], "'parse-rate>1.5': the threshold is a share"),
    (["--fail-on", "parse-rate<0.1"], "'parse-rate<0.1' is not a check"),
    (["--fail-on", "gate", "--fail-on", "parse-rate>-1"], "'parse-rate>-1': the threshold"),
    (["--fail-on", "cluster-drop"], "--fail-on cluster-drop compares with --previous"),
    (["--fail-on", "gate", "--previous", "old.json"], "field '--previous': --fail-on "
                                                       "cluster-drop compares"),
    (["--fail-on", "cluster-drop", "--previous", "missing.json"],
     "missing.json, field '--previous': no such file"),
])
def test_bad_checks_are_input_errors_before_any_work(scored: dict[str, Path], tmp_path: Path,
                                                     args: list[str], message: str) -> None:
    report = tmp_path / "r.json"
    proc = run_cli("audit", str(scored["scores"]), "--human", "human.relevance",
                   "--report", str(report), *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert proc.stdout == "" and not report.exists()
    assert "sentinels:" not in proc.stderr  # nothing was computed


def test_previous_that_is_not_an_audit_names_the_file(scored: dict[str, Path],
                                                      tmp_path: Path) -> None:
    for name, content in (("broken.json", "{not json"), ("other.json", '{"format": "x"}'),
                          ("rows.json", '[{"type": "correlation", "metric": "m"}]')):
        path = tmp_path / name
        path.write_text(content)
        proc = run_cli("audit", str(scored["scores"]), "--human", "human.relevance",
                       "--fail-on", "cluster-drop", "--previous", str(path))
        assert proc.returncode == 2, proc.stderr
        assert f"{path}" in proc.stderr and "'--previous'" in proc.stderr
