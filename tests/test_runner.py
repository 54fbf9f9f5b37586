"""The runner and store: resume after SIGKILL, failures as statuses, corpus scores, the API."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl

import judgebench
from judgebench.errors import InputError

SLOW_PLUGIN = '''
import os, time
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo, Outcome, Status


class Slow(Metric):
    """Output length, slowly; every call is logged so a test can see what was recomputed."""

    info = MetricInfo(name="test.slow", kind="reference", requires=("output",))
    batch_size = 2

    def score(self, samples):
        with open(os.environ["SLOW_LOG"], "a") as log:
            for s in samples:
                log.write(f"{s.item}|{s.system}\\n")
        time.sleep(float(os.environ.get("SLOW_SECONDS", "0.05")))
        return [float(len(s.output)) for s in samples]


class Flaky(Metric):
    """Fails in ways a real metric does: raises on one sample, refuses another."""

    info = MetricInfo(name="test.flaky", kind="judge", requires=("output",))
    batch_size = 4

    def score(self, samples):
        if any(s.output == "boom" for s in samples):
            raise ValueError("cannot score boom")
        return [Outcome.failed(Status.REFUSED, "policy") if s.output == "no" else 1.0
                for s in samples]


@hookimpl
def register_metrics(register):
    register(Slow)
    register(Flaky)
'''


@pytest.fixture
def slow_plugin(tmp_path: Path) -> Path:
    path = tmp_path / "slow_plugin.py"
    path.write_text(SLOW_PLUGIN, encoding="utf-8")
    return path


def _rows(n: int) -> list[dict]:
    return [{"item": f"d{i}", "system": "s", "output": "x" * (i + 1),
             "human": {"q": float(i % 5)}} for i in range(n)]


def _logged(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.mark.slow  # a paced 60-row job, killed and resumed in real processes
def test_sigkill_mid_run_loses_nothing_and_resume_recomputes_nothing(
    tmp_path: Path, slow_plugin: Path
) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", _rows(60))
    store, out, log = tmp_path / "runs.db", tmp_path / "scores.csv", tmp_path / "calls.log"
    env = {**os.environ, "SLOW_LOG": str(log), "SLOW_SECONDS": "0.1"}
    args = [sys.executable, "-m", "judgebench.cli", "-p", str(slow_plugin), "score", str(data),
            "-m", "test.slow", "-o", str(out), "--store", str(store), "--resume"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    committed = 0
    while time.time() < deadline and committed < 10:
        time.sleep(0.05)
        if store.exists():
            try:
                committed = sqlite3.connect(store).execute(
                    "SELECT COUNT(*) FROM scores").fetchone()[0]
            except sqlite3.OperationalError:
                continue
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists(), "a killed run must not leave a half-written table"

    before = {r[0] + "|" + r[1] for r in sqlite3.connect(store).execute(
        "SELECT item, system FROM scores WHERE status = 'ok'")}
    assert 10 <= len(before) < 60
    first_run_calls = len(_logged(log))

    resumed = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    second_run = _logged(log)[first_run_calls:]
    assert not set(second_run) & before, "resume recomputed finished scores"
    assert set(second_run) | before == {f"d{i}|s" for i in range(60)}
    table = pd.read_csv(out)
    assert table["test.slow"].tolist() == [float(i + 1) for i in range(60)]
    assert f"reused {len(before)}" in resumed.stderr

    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert "computed 0, reused 60" in again.stderr
    assert len(_logged(log)) == first_run_calls + len(second_run)


def test_resume_rescored_changed_samples_only(tmp_path: Path, slow_plugin: Path) -> None:
    rows = _rows(6)
    data = write_jsonl(tmp_path / "in.jsonl", rows)
    log = tmp_path / "calls.log"
    env = {"SLOW_LOG": str(log), "SLOW_SECONDS": "0"}
    common = ["-m", "test.slow", "--store", str(tmp_path / "s.db"), "--resume"]
    run_cli("-p", str(slow_plugin), "score", str(data), *common, env=env, check=True)
    rows[2]["output"] = "changed output"
    write_jsonl(data, rows)
    proc = run_cli("-p", str(slow_plugin), "score", str(data), *common, env=env, check=True)
    assert _logged(log)[6:] == ["d2|s"]
    assert pd.read_csv(__import__("io").StringIO(proc.stdout))["test.slow"][2] == 14.0


def test_failures_are_statuses_with_reasons_never_zero(tmp_path: Path, slow_plugin: Path) -> None:
    outputs = ["fine", "boom", "no", "good", "fine"]
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": str(i), "system": "s", "output": o} for i, o in enumerate(outputs)])
    store, out = tmp_path / "s.db", tmp_path / "o.csv"
    proc = run_cli("-p", str(slow_plugin), "score", str(data), "-m", "test.flaky", "-o",
                   str(out), "--store", str(store))
    assert proc.returncode == 3, proc.stderr  # finished, with failed scores
    rows = sqlite3.connect(store).execute(
        "SELECT item, value, status, reason FROM scores ORDER BY item").fetchall()
    assert rows == [
        ("0", 1.0, "ok", None),
        ("1", None, "error", "ValueError: cannot score boom"),
        ("2", None, "refused", "policy"),
        ("3", 1.0, "ok", None),
        ("4", 1.0, "ok", None),
    ]
    values = pd.read_csv(out)["test.flaky"]
    assert values.isna().tolist() == [False, True, True, False, False]
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["columns"]["test.flaky"]["statuses"] == {"ok": 3, "error": 1, "refused": 1}


def test_errors_are_retried_on_resume_but_refusals_are_kept(
    tmp_path: Path, slow_plugin: Path
) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", [
        {"item": "1", "system": "s", "output": "boom"}, {"item": "2", "system": "s",
                                                           "output": "no"}])
    store = tmp_path / "s.db"
    run_cli("-p", str(slow_plugin), "score", str(data), "-m", "test.flaky",
            "--store", str(store), "--allow-failures", check=True)
    proc = run_cli("-p", str(slow_plugin), "score", str(data), "-m", "test.flaky",
                   "--store", str(store), "--resume", "--allow-failures", check=True)
    assert "computed 1, reused 1" in proc.stderr


def test_api_score_returns_the_wide_table_with_humans_and_corpus() -> None:
    records = summeval_records(32)
    table = judgebench.score(records, metrics=["lexical.bleu",
                                               "lexical.rouge1:multi_ref=mean"]).to_pandas()
    assert list(table.columns) == [
        "item", "system", "lexical.bleu", "lexical.rouge1:multi_ref=mean", "human.coherence",
        "human.consistency", "human.fluency", "human.relevance"]
    assert len(table) == 32 and table["lexical.bleu"].notna().all()
    corpus = {c["system"]: c for c in table.attrs["corpus"]}
    assert len(corpus) == 16
    signature = table.attrs["signatures"]["lexical.rouge1:multi_ref=mean"]
    assert signature.startswith("lexical.rouge1@1|") and "multi_ref:mean" in signature


def test_corpus_bleu_is_not_the_mean_of_sentence_bleu() -> None:
    import sacrebleu

    records = summeval_records(32)
    table = judgebench.score(records, metrics=["lexical.bleu"]).to_pandas()
    m0 = [r for r in records if r["system"] == "M0"]
    expected = sacrebleu.corpus_bleu([r["output"] for r in m0],
                                     [[r["reference"][i] for r in m0] for i in range(11)]).score
    corpus = next(c for c in table.attrs["corpus"] if c["system"] == "M0")
    assert corpus["value"] == pytest.approx(expected, abs=1e-9)
    assert corpus["value"] != pytest.approx(table[table.system == "M0"]["lexical.bleu"].mean())


def test_same_column_twice_is_an_error() -> None:
    with pytest.raises(InputError, match="given twice"):
        judgebench.score(summeval_records(2), metrics=["lexical.bleu", "lexical.bleu"]).to_pandas()


def test_two_configurations_sit_side_by_side(tmp_path: Path, summeval_small: Path) -> None:
    out = tmp_path / "o.parquet"
    run_cli("score", str(summeval_small), "-m", "lexical.rouge2", "-m",
            "lexical.rouge2:multi_ref=mean", "-o", str(out), "--store", str(tmp_path / "s.db"),
            check=True)
    table = pd.read_parquet(out)
    best, mean = table["lexical.rouge2"], table["lexical.rouge2:multi_ref=mean"]
    assert (best >= mean - 1e-12).all() and (best > mean).any()


def test_json_summary_and_dry_run(tmp_path: Path, summeval_small: Path) -> None:
    out = tmp_path / "o.jsonl"
    proc = run_cli("score", str(summeval_small), "-m", "lexical.chrf", "-o", str(out),
                   "--store", str(tmp_path / "s.db"), "--json", check=True)
    (row,) = json.loads(proc.stdout)
    assert row["column"] == "lexical.chrf" and row["statuses"] == {"ok": 32}
    assert len(row["corpus"]) == 16
    assert len(pd.read_json(out, lines=True)) == 32
    dry = run_cli("score", str(summeval_small), "-m", "lexical.chrf", "--dry-run", "--json",
                  "--store", str(tmp_path / "dry.db"), check=True)
    assert json.loads(dry.stdout)[0]["calls"] == 0
    assert not (tmp_path / "dry.db").exists(), "a dry run stores nothing: no store file"
