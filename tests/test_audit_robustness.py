"""`audit --robustness`: per block, Manski bounds and tipping points of the gated metrics
against the best sentinel and leave-one-system-out sensitivity; the verdict's first sentence
says when a conclusion could be overturned (a metric whose pass rests on many failed rows)
and not when it could not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import run_cli

from judgebench.auditing.robustness import caveats
from meta_eval.levels import evaluate
from meta_eval.missingness import domain, manski_bounds


def table(path: Path, failed: int) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        for j in range(6):
            q = rng.normal() + 0.4 * j
            rows.append({"item": f"i{i}", "system": f"s{j}",
                         "human.q": round(q + rng.normal() * 0.5, 2),
                         "weak": q + rng.normal(), "strong": q + rng.normal() * 0.3})
    frame = pd.DataFrame(rows).astype({"weak": object})
    frame.loc[rng.choice(len(frame), failed, replace=False), "weak"] = "failed"
    frame.to_csv(path, index=False)
    return path


def audit(tmp_path: Path, failed: int) -> dict:
    scores = table(tmp_path / f"scores{failed}.csv", failed)
    report = tmp_path / f"report{failed}.json"
    proc = run_cli("audit", str(scores), "--human", "human.q", "--level", "segment",
                   "--grouping", "none", "--bootstrap", "0", "--resamples", "200",
                   "--robustness", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    return json.loads(report.read_text())


def test_a_pass_that_rests_on_failures_says_so_first(tmp_path):
    data = audit(tmp_path, failed=30)
    (verdict,) = data["verdict"]
    assert verdict["summary"].startswith("Not robust: weak's pass at segment level, no "
                                         "grouping could be overturned by its failures")
    (block,) = data["blocks"]
    robust = block["robustness"]
    weak = robust["metrics"]["weak"]
    assert weak["overturnable"] and weak["missing_bounds"]["cells"] == 30
    assert 0 < weak["tipping_point"]["cells"] <= 30
    assert robust["metrics"]["strong"]["missing_bounds"]["cells"] == 0
    # the bounds are the kernel's on the table's matrices
    frame = pd.read_csv(tmp_path / "scores30.csv")
    h = frame["human.q"].to_numpy(float).reshape(12, 6)
    m = pd.to_numeric(frame["weak"], errors="coerce").to_numpy(float).reshape(12, 6)
    bounds = manski_bounds(lambda a, b: evaluate("pearson", human=a, metric=b).value,
                           human=h, metric=m, present=np.ones((12, 6), bool),
                           human_domain=domain(h), metric_domain=domain(m))
    assert weak["missing_bounds"]["low"] == bounds.low
    assert weak["missing_bounds"]["high"] == bounds.high
    assert robust["systems"]["resamples"] == 6


def test_a_robust_pass_has_no_caveat(tmp_path):
    data = audit(tmp_path, failed=2)
    (verdict,) = data["verdict"]
    assert not verdict["summary"].startswith("Not robust")
    assert not data["blocks"][0]["robustness"]["metrics"]["weak"]["overturnable"]


def test_caveats_for_systems():
    block = {"gate": [{"metric": "m", "passed": True}],
             "robustness": {"sentinel": "sentinel.cand", "metrics": {},
                            "systems": {"winner_flips": ["s1"],
                                        "falls_to_sentinel": {"m": ["s2", "s3"]}}}}
    assert caveats(block, "system level") == [
        "the best metric at system level changes without s1",
        "m's pass at system level rests on the systems: without s2, s3 it falls to "
        "sentinel.cand's value"]
    assert caveats({"gate": []}, "x") == []


def test_a_judge_of_overall_quality_is_named(tmp_path):
    rng = np.random.default_rng(3)
    rows = []
    for i in range(40):
        for j in range(6):
            base = rng.normal()
            a, b = base + rng.normal(), base + rng.normal()
            rows.append({"item": f"i{i}", "system": f"s{j}", "human.a": a, "human.b": b,
                         "specific": a + rng.normal(scale=0.5),
                         "overall": (a + b) / 2 + rng.normal(scale=0.3)})
    scores = tmp_path / "two.csv"
    pd.DataFrame(rows).to_csv(scores, index=False)
    report = tmp_path / "two.json"
    proc = run_cli("audit", str(scores), "--human", "human.a", "--human", "human.b",
                   "--level", "segment", "--grouping", "none", "--bootstrap", "0",
                   "--test", "williams", "--robustness", "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    block = next(b for b in data["blocks"] if b["human"] == "human.a")
    construct = block["robustness"]["construct"]
    assert construct["specific"]["discriminant"] and not construct["specific"]["general"]
    assert construct["overall"]["general"]
    verdict = next(v for v in data["verdict"] if v["human"] == "human.a")
    assert verdict["summary"].startswith("Not robust: overall passes at segment level, no "
                                         "grouping but measures overall quality, not human.a")


def test_a_cyclic_pairwise_judge_is_not_robust(tmp_path):
    from test_transitivity import simulate

    items, a, b, p = simulate(np.random.default_rng(3), systems=4, items=40, cycle=2.0)
    verdict = np.where(np.isnan(p), "failed", np.where(p == 0.5, "tie",
                                                       np.where(p == 1, "a", "b")))
    human = np.where(np.random.default_rng(4).random(p.size) < 0.5, "a", "b")
    pairs = tmp_path / "pairs.csv"
    pd.DataFrame({"item": items, "system_a": a, "system_b": b, "judge.x": verdict,
                  "human.pref": human}).to_csv(pairs, index=False)
    report = tmp_path / "pairs.json"
    proc = run_cli("audit", str(pairs), "--pairwise", "--human", "human.pref",
                   "--bootstrap", "50", "--resamples", "100", "--robustness",
                   "--report", str(report))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    (summary,) = data["pairwise_summary"]
    assert summary["text"].startswith("Not robust: judge.x's verdicts rank no single order")
    assert any(t["judge"] == "judge.x" and t["bt_p_value"] < 0.05
               for t in data["transitivity"])


def test_gate_without_each_system_is_the_gate_of_the_smaller_study(tmp_path):
    data = audit(tmp_path, failed=30)
    gate_without = data["blocks"][0]["robustness"]["gate_without"]
    assert gate_without["changed"] == len(gate_without["flips"]) / 6
    full = {g["metric"]: g["passed"] for g in data["blocks"][0]["gate"]}
    frame = pd.read_csv(tmp_path / "scores30.csv")
    for system in ("s0", "s3"):
        smaller = tmp_path / f"without_{system}.csv"
        frame[frame["system"] != system].to_csv(smaller, index=False)
        report = tmp_path / f"without_{system}.json"
        proc = run_cli("audit", str(smaller), "--human", "human.q", "--level", "segment",
                       "--grouping", "none", "--bootstrap", "0", "--resamples", "200",
                       "--report", str(report))
        assert proc.returncode == 0, proc.stderr
        gate = {g["metric"]: g["passed"]
                for g in json.loads(report.read_text())["blocks"][0]["gate"]}
        changed = sorted(m for m in full if gate[m] != full[m])
        assert gate_without["flips"].get(system, []) == changed
