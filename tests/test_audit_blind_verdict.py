"""An audit whose text sentinels could not run (no --samples) says its verdict is against
the blind sentinels only: in the JSON verdict, in the Markdown and HTML headings, and on
stderr; with the generations every sentinel runs and the verdict is unqualified."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, write_jsonl
from test_audit_sentinels import synthetic

TEXT_SENTINELS = ["sentinel.cand", "sentinel.length", "sentinel.ref", "sentinel.src"]


def _audit(tmp_path: Path, *extra: str):
    frame, samples = synthetic(n_items=6, n_systems=4, seed=2)
    scores = tmp_path / "scores.csv"
    frame.to_csv(scores, index=False)
    gen = write_jsonl(tmp_path / "gen.jsonl", [s.model_dump(exclude_none=True)
                                               for s in samples])
    args = [a.replace("GEN", str(gen)) for a in extra]
    proc = run_cli("audit", str(scores), "--human", "human.q", "--bootstrap", "0",
                   "--resamples", "50", "--report", str(tmp_path / "r.json"), "--report",
                   str(tmp_path / "r.html"), *args)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    return proc, data, (tmp_path / "r.html").read_text()


def test_without_samples_the_verdict_is_against_blind_sentinels_only(tmp_path):
    proc, data, html = _audit(tmp_path)
    (verdict,) = data["verdict"]
    skipped = sorted(s["column"] for s in data["sentinels"]
                     if not s["statuses"]["human.q"].get("ok"))
    assert skipped == TEXT_SENTINELS
    assert verdict["state"] == "pass"
    assert sorted(verdict["sentinels_not_run"]) == TEXT_SENTINELS
    assert verdict["against"] == "blind sentinels only"
    assert "Against blind sentinels only" in verdict["summary"]
    assert "**human.q: PASS AGAINST BLIND SENTINELS ONLY.**" in proc.stdout
    assert '<span class="state">pass against blind sentinels only</span>' in html
    warning = next(line for line in proc.stderr.splitlines() if "warning: human.q" in line)
    assert all(name in warning for name in TEXT_SENTINELS) and "--samples" in warning


def test_with_samples_every_sentinel_runs_and_the_verdict_is_plain(tmp_path):
    proc, data, html = _audit(tmp_path, "--samples", "GEN")
    (verdict,) = data["verdict"]
    assert verdict["sentinels_not_run"] == [] and verdict["against"] is None
    assert "**human.q: PASS.**" in proc.stdout
    assert '<span class="state">pass</span>' in html
    assert "warning:" not in proc.stderr
