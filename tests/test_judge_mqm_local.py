"""judge.mqm on the embedded default model (SmolLM2-135M-Instruct, transformers backend):
in form on every segment, because the backend enforces the JSON schema while decoding
(llguidance) and the schema's spans are the output's own word runs, so every span is
located; then `meta-eval --spans` (the example's spans, and the suite's), `audit --spans` and
`logs` on what it marked. Two TED segments of the bundled example
(examples/ted-mqm-sample.jsonl), GEMBA's few-shot examples off and two errors at most, to
keep the CPU time to about a minute. The 135M model is a plumbing default, not a good
annotator: the test checks the form, not the spans."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import run_cli
from suites_support import plugin_args, plugin_env

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_mqm_on_the_default_model_is_in_form_and_located(tmp_path, model_cache) -> None:
    spec = "judge.mqm:examples=false,max_errors=2"
    out, store = tmp_path / "mqm.csv", tmp_path / "mqm.db"
    env = {"JUDGEBENCH_CACHE_DIR": str(model_cache)}
    proc = run_cli("score", str(EXAMPLES / "ted-mqm-sample.jsonl"), "-m", spec, "--limit",
                   "2", "-o", str(out), "--store", str(store), env=env)
    assert proc.returncode == 0, proc.stderr
    [column] = json.loads(Path(f"{out}.meta.json").read_text())["columns"].values()
    assert column["statuses"] == {"ok": 2}
    assert "constrained:json" in column["signature"]
    assert "model:SmolLM2-135M-Instruct" in column["signature"]
    assert "source_lang" in column["signature"]
    extras = [json.loads(e) for (e,) in sqlite3.connect(store).execute(
        "SELECT extra FROM scores")]
    for extra in extras:
        assert extra["unlocated"] == 0 and len(extra["spans"]) <= 2
        for span in extra["spans"]:
            assert extra["output"][span["start"]:span["end"]] == span["text"]
    proc = run_cli("meta-eval", "spans", str(out), str(EXAMPLES / "ted-mqm-spans.jsonl"),
                   "--store", str(store), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["n"] for r in rows if r["system"] is None} == {2}
    env |= plugin_env()
    suite = run_cli(*plugin_args(), "meta-eval", "spans", str(out), "wmt21-tedtalks-en-de",
                    "--store", str(store), "--json", env=env)
    assert suite.returncode == 0, suite.stderr
    assert json.loads(suite.stdout) == rows  # the example's spans are the suite's
    audit = run_cli(*plugin_args(), "audit", str(out), "--human", "human.mqm", "--spans",
                    "wmt21-tedtalks-en-de", "--store", str(store), "--bootstrap", "0",
                    "--json", env=env)
    assert audit.returncode == 0, audit.stderr
    assert len([r for r in json.loads(audit.stdout) if r.get("type") == "spans"]) == len(rows)
    logs = run_cli("logs", "--store", str(store), env=env)
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout.count("  spans:") == 2
