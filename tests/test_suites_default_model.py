"""`bench` end to end on the embedded default model (SmolLM2-135M-Instruct, as
tests/test_default_judges.py runs it: a fresh process, offline, nothing cached but the
session's converted model, `model_cache`; the cold conversion is tested there): judge.rubric
on `--limit 2` of every pointwise suite, judge.pairwise on `--limit 2` of every pairwise one
(`--suite all`: the other kind is skipped, saying so); every built-in suite of the judge's
kind runs, this checkout's copy of them (plugins/judgebench_suites first on the path).

What the loopback runs of the suites (tests/test_suites*.py) cannot show: each suite's own
prompt shape (its template, its fields, a conversation) through the model's tokenizer, chat
template and constrained decoding, answered and parsed. Two rows per suite show that as
well as five did, at two fifths of the model calls."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")
pytest.importorskip("llguidance", reason="the [local] extra is not installed")

from conftest import REPO, run_cli_process
from suites_support import BUILTIN, DATA, DIST, plugin_args

from judgebench.suite import load_suite

pytestmark = pytest.mark.slow  # the default model, in fresh processes

SPECS = {"pointwise": "judge.rubric:criterion=coherence,feedback_tokens=16",
         "pairwise": "judge.pairwise:feedback_tokens=16"}
ROWS = 2


@pytest.mark.parametrize("kind", SPECS)
def test_bench_runs_the_default_judge_on_two_rows_of_every_suite(tmp_path: Path,
                                                                  model_cache: Path,
                                                                  kind: str) -> None:
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    paths = [str(REPO), str(REPO / "plugins"), str(DIST)]  # this checkout's suites first
    env = {"PYTHONPATH": os.pathsep.join(paths), "JUDGEBENCH_CACHE_DIR": str(model_cache),
           "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = run_cli_process(*plugin_args(), "bench", SPECS[kind], "--suite", "all", "--limit",
                           str(ROWS), "--bootstrap", "100", "--json", "--store",
                           str(tmp_path / "runs.db"), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    cards = out["cards"]
    assert cards, proc.stderr
    for card in cards:
        suite = card["suite"]
        if card["kind"] != kind:
            assert card["skipped"] and "cannot run on" in card["verdict"][0]
            continue
        assert card["scored"] == ROWS, suite
        mine = [r for r in card["rows"] if r["kind"] == "yours"]
        assert mine, suite
        assert card["verdict"], suite
        assert any(f"--limit {ROWS}" in note for note in card["notes"])
        assert all(r.get("reproduces") is None for r in card["rows"])
    ran = {c["suite"] for c in cards if not c["skipped"]}
    # every built-in suite of the judge's kind (the conversations of topical-chat too)
    assert ran >= {s for s in BUILTIN if load_suite(DATA / s).info.kind == kind}
    assert all(load_suite(DATA / s).info.kind == kind for s in ran if (DATA / s).is_dir())
    # two rows may leave a headline statistic undefined (a constant judge): "no value"
    summary = {c["suite"]: c["status"] for c in out["summary"] if c["kind"] == "yours"}
    assert {s for s, status in summary.items() if status != "skipped"} == ran
    assert {summary[s] for s in ran} <= {"ok", "no value"}
