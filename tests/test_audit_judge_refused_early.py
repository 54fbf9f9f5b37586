"""`audit --judge` with a judge that scores one output (not a pairwise judge) asked for bias
probes that need a pairwise judge is refused before any work: exit 2, one line naming the
option, and no sentinel or block has run (the audit's progress lines never appear)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, write_jsonl
from test_audit_sentinels import synthetic


@pytest.mark.parametrize("spec", [
    "lexical.token_f1",
    "judge.rubric:backend=litellm,model=openai/x,api_base=http://127.0.0.1:9",
])
def test_a_pointwise_judge_asked_for_pairwise_probes_is_refused_before_any_work(tmp_path,
                                                                                  spec):
    frame, samples = synthetic(n_items=6, n_systems=4, seed=2)
    scores = tmp_path / "scores.csv"
    frame.to_csv(scores, index=False)
    gen = write_jsonl(tmp_path / "gen.jsonl", [s.model_dump(exclude_none=True)
                                               for s in samples])
    proc = run_cli("audit", str(scores), "--human", "human.q", "--samples", str(gen),
                   "--bootstrap", "0", "--resamples", "50", "--judge", spec,
                   "--bias-probe", "position", "--bias-probe", "injection")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error: field '--judge'")
    assert "scores one output" in lines[0] and "pairwise judge" in lines[0]
    assert proc.stdout == ""


def test_the_pairwise_audit_refuses_it_too(tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("item,system_a,system_b,human.pref,j.ab,j.ba\n"
                     "i1,a,b,a,a,b\ni2,a,b,b,b,b\n")
    proc = run_cli("audit", str(pairs), "--pairwise", "--human", "human.pref",
                   "--judge", "lexical.token_f1", "--pairs", str(pairs))
    assert proc.returncode == 2
    assert "scores one output" in proc.stderr and "audit:" not in proc.stderr
