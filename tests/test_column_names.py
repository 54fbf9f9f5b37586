"""A column is named by what is computed, not by how the model is reached.

`judgebench.spec.RUNTIME_OPTIONS` (endpoint, key variable, concurrency, rate limits,
timeouts, retries, prices, the answer cache) stay out of a scores-table column's name, its
sidecar and the run's summary; each is checked here to be outside every judge's signature, so
two columns that differ only by them would be the same scores.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.engine.runner import prepare_metrics
from judgebench.plugins import build_host
from judgebench.spec import RUNTIME_OPTIONS, parse_spec

KEY_ENV = "JB_COLUMN_KEY"
#: a value for each runtime option a judge takes
VALUES = {"api_base": "http://127.0.0.1:9/v1", "api_key_env": KEY_ENV, "concurrency": "3",
          "rpm": "10", "tpm": "1000", "timeout_s": "5", "max_attempts": "2",
          "input_cost_per_token": "1e-6", "output_cost_per_token": "2e-6", "price_in": "1",
          "price_out": "2", "cache": "false"}
JUDGES = ["judge.rubric", "judge.geval", "judge.reference", "judge.pairwise",
          "judge.prometheus"]


def test_the_column_drops_runtime_options_and_keeps_the_rest_as_written() -> None:
    spec = parse_spec('judge.rubric:model=m,api_base=http://h/v1,definition="a, b",rpm=3')
    assert spec.column == 'judge.rubric:model=m,definition="a, b"'
    assert spec.options["api_base"] == "http://h/v1"  # still used, only not in the name
    assert parse_spec("judge.rubric:api_base=http://h/v1").column == "judge.rubric"
    written = "lexical.rouge2:multi_ref=mean,stemmer='yes'"
    assert parse_spec(written).column == written  # no runtime option: exactly as written


@pytest.mark.parametrize("judge", JUDGES)
def test_no_runtime_option_enters_a_judges_signature(judge: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "k")
    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # openai/ models need one to be built
    host = build_host()
    base = f"{judge}:backend=litellm,model=openai/judge"
    signature = prepare_metrics([parse_spec(base)], host)[0].signature
    taken = [o for o in sorted(RUNTIME_OPTIONS) if o in VALUES]
    assert set(RUNTIME_OPTIONS) - set(taken) <= {"backoff_base_s", "backoff_max_s",
                                                  "max_retry_after_s"}
    for option in taken:
        with_option = parse_spec(f"{base},{option}={VALUES[option]}")
        assert with_option.column == base
        assert prepare_metrics([with_option], host)[0].signature == signature, option


def test_artefacts_name_the_short_column(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    with FaultServer(log=tmp_path / "served.jsonl") as server:
        spec = (f"judge.rubric:backend=openai_compat,model=judge,protocol=text,"
                f"api_base={server.url},api_key_env={KEY_ENV},concurrency=2,timeout_s=30")
        out, store = tmp_path / "s.csv", tmp_path / "runs.db"
        proc = run_cli("score", str(data), "-m", spec, "-o", str(out), "--store", str(store),
                       "--cache", str(tmp_path / "cache.sqlite"), cwd=tmp_path,
                       env={KEY_ENV: "secret-value"})
        assert proc.returncode == 0, proc.stderr
    column = "judge.rubric:backend=openai_compat,model=judge,protocol=text"
    assert column in pd.read_csv(out).columns
    sidecar = json.loads(Path(f"{out}.meta.json").read_text())
    assert list(sidecar["columns"]) == [column]
    with sqlite3.connect(store) as conn:
        metrics = conn.execute("SELECT metrics FROM runs").fetchone()[0]
    for text in (json.dumps(sidecar), metrics, proc.stderr, out.read_text()):
        assert server.url not in text and "concurrency" not in text
    # a table written before, with the long name, still reads
    old = pd.read_csv(out).rename(columns={column: spec})
    old.to_csv(tmp_path / "old.csv", index=False)
    proc = run_cli("meta-eval", str(tmp_path / "old.csv"), "--human", "human.relevance",
                   "--metric", spec)
    assert proc.returncode == 0, proc.stderr


def test_two_specs_that_differ_only_in_runtime_options_are_one_column(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    base = "judge.rubric:backend=litellm,model=openai/judge"
    proc = run_cli("score", str(data), "-m", f"{base},concurrency=2", "-m",
                   f"{base},concurrency=4", "-o", str(tmp_path / "s.csv"),
                   env={KEY_ENV: "k"})
    assert proc.returncode == 2
    assert "given twice" in proc.stderr and base in proc.stderr
    assert not (tmp_path / "s.csv").exists()
