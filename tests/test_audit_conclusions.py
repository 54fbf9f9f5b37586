"""`audit --alt-test`, `--power-for` and `--sequential`: the verdict reads them. Each is checked
on simulated data with a known answer against an independent implementation: the alt-test
against the paper's procedure (tests/test_alt_test.py), the study's power against plain
Monte Carlo (tests/test_power.py), the sequential replay against the kernel fed per-item
correlations from scipy; a conclusion that is not robust says so in the verdict's first
sentence, in JSON, Markdown, HTML (in headless Chromium) and the --json results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from chromium import Browser, need_chromium
from conftest import run_cli
from test_alt_test import as_dicts, paper_alt_test, simulate
from test_power import monte_carlo_power

from meta_eval.alt_test import alt_test, epsilon_to_pass
from meta_eval.sequential import sequential_clusters

ITEMS, SYSTEMS = 40, 5
BASE = ["--bootstrap", "0", "--resamples", "200"]


def annotated(path: Path, criteria: tuple[str, ...] = ("q",), seed: int = 11) -> Path:
    """ITEMS x SYSTEMS rows, three annotators per criterion (human.<c>.a<k>, numeric 1-5 with
    sd 1 noise), their mean as human.<c>; judge.good reports the truth with sd 0.2 noise
    on the first criterion, judge.bad guesses."""
    rng = np.random.default_rng(seed)
    n = ITEMS * SYSTEMS
    frame = pd.DataFrame({"item": [f"i{i}" for i in range(ITEMS) for _ in range(SYSTEMS)],
                          "system": [f"s{j}" for _ in range(ITEMS) for j in range(SYSTEMS)]})
    for k, criterion in enumerate(criteria):
        humans, judge = simulate(rng, n, 3, categorical=False, human_noise=1.0,
                                 judge_noise=0.2)
        frame[f"human.{criterion}"] = humans.mean(axis=1)
        for a in range(3):
            frame[f"human.{criterion}.a{a}"] = humans[:, a]
        if k == 0:
            frame["judge.good"] = judge
    frame["judge.bad"] = rng.integers(1, 6, n).astype(float)
    frame.to_csv(path, index=False)
    return path


def audit(tmp_path: Path, scores: Path, *args: str, name: str = "r") -> dict:
    reports = {fmt: tmp_path / f"{name}.{fmt}" for fmt in ("json", "md", "html")}
    proc = run_cli("audit", str(scores), *BASE, *args,
                   *(x for p in reports.values() for x in ("--report", str(p))))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(reports["json"].read_text())
    out["_md"] = reports["md"].read_text()
    out["_html"] = reports["html"]
    out["_stdout"] = proc.stdout
    return out


def test_alt_test_in_the_verdict_matches_the_paper(tmp_path):
    scores = annotated(tmp_path / "scores.csv")
    data = audit(tmp_path, scores, "--human", "human.q", "--level", "segment", "--grouping",
                 "none", "--alt-test", "0.15", "--alt-score", "neg-rmse")
    frame = pd.read_csv(scores)
    names = [f"human.q.a{a}" for a in range(3)]
    rows = {r["metric"]: r for r in data["alt_test"]}
    assert set(rows) == {"judge.good", "judge.bad"}  # the annotators are not metrics
    for metric, row in rows.items():
        people, judge = as_dicts(frame[names].to_numpy(float), frame[metric].to_numpy(float))
        wr, ap, p_values = paper_alt_test(judge, people, "neg-rmse", 0.15, 0.05)
        assert row["alt-test-winning-rate"] == wr
        assert row["alt-test-advantage-probability"] == pytest.approx(ap, rel=1e-12)
        assert [a["p_value"] for a in row["per_annotator"]] == pytest.approx(p_values)
        assert row["annotators"] == names and row["human"] == "human.q"
    assert rows["judge.good"]["passed"] and not rows["judge.bad"]["passed"]
    (verdict,) = data["verdict"]
    needed = rows["judge.good"]["epsilon_to_pass"]
    assert needed is not None and needed < 0.15
    good = (f"judge.good can replace an annotator on human.q (winning rate 1.00, advantage "
            f"probability {rows['judge.good']['alt-test-advantage-probability']:.2f}, "
            f"epsilon 0.15; it passes from epsilon {needed:g})")
    assert "Replacing an annotator: " + good in verdict["summary"]
    assert "judge.bad cannot replace an annotator on human.q (winning rate 0.00" in \
        verdict["summary"]
    assert [(r["metric"], r["passed"]) for r in verdict["replacement"]] == [
        ("judge.good", True), ("judge.bad", False)]
    assert good in data["_md"] and "| can replace an annotator? |" in data["_md"]
    assert good in data["_stdout"]
    html = data["_html"].read_text()
    assert good in html and 'class="replacement"' in html


@pytest.mark.parametrize("seed", range(4))
def test_epsilon_to_pass_against_every_epsilon(seed):
    """The smallest passing epsilon is the first of the grid 0, 0.001, ..., 1 at which the
    alt-test passes, every epsilon tried one by one."""
    rng = np.random.default_rng(seed)
    humans, judge = simulate(rng, 60, 3, categorical=bool(seed % 2),
                             human_noise=0.3 + 0.1 * seed, judge_noise=0.4 + 0.1 * seed)
    score = "accuracy" if seed % 2 else "neg-rmse"
    grid = np.round(np.arange(0, 1001) * 0.001, 12)
    passes = [alt_test(humans=humans, judge=judge, epsilon=float(e), score=score,
                       min_items=20).passed for e in grid]
    assert passes == sorted(passes)  # monotone, as the bisection assumes
    first = next((float(e) for e, p in zip(grid, passes, strict=True) if p), None)
    assert epsilon_to_pass(humans=humans, judge=judge, score=score, min_items=20) == first
    never = epsilon_to_pass(humans=humans, judge=rng.integers(0, 4, 60).astype(float) * 9,
                            score=score, min_items=20)
    assert never is None or never > 0.3


def test_alt_test_per_criterion_and_raters(tmp_path):
    scores = annotated(tmp_path / "two.csv", criteria=("fluency", "relevance"))
    data = audit(tmp_path, scores, "--human", "human.fluency", "--human", "human.relevance",
                 "--level", "system", "--alt-test", "0.1", "--alt-score", "neg-rmse")
    frame = pd.read_csv(scores)
    for row in data["alt_test"]:
        names = [f"{row['human']}.a{a}" for a in range(3)]
        people, judge = as_dicts(frame[names].to_numpy(float),
                                 frame[row["metric"]].to_numpy(float))
        wr, ap, _ = paper_alt_test(judge, people, "neg-rmse", 0.1, 0.05)
        assert row["alt-test-winning-rate"] == wr
        assert row["alt-test-advantage-probability"] == pytest.approx(ap, rel=1e-12)
    passed = {(r["human"], r["metric"]): r["passed"] for r in data["alt_test"]}
    assert passed[("human.fluency", "judge.good")]
    assert not passed[("human.relevance", "judge.good")]  # it reports fluency's truth
    # --rater picks the annotators: two of the three
    one = audit(tmp_path, scores, "--human", "human.fluency", "--level", "system",
                "--alt-test", "0.1", "--alt-score", "neg-rmse", "--rater",
                "human.fluency.a0", "--rater", "human.fluency.a1", name="raters")
    assert {r["human"]: r["annotators"] for r in one["alt_test"]} == {
        "human.fluency": ["human.fluency.a0", "human.fluency.a1"]}
    # raters with names of their own, with one --human: never audited as metrics
    renamed = pd.read_csv(scores).rename(columns={f"human.fluency.a{a}": f"r{a}"
                                                  for a in range(3)})
    renamed.to_csv(tmp_path / "renamed.csv", index=False)
    own = audit(tmp_path, tmp_path / "renamed.csv", "--human", "human.fluency", "--level",
                "system", "--alt-test", "0.1", "--alt-score", "neg-rmse", "--rater", "r0",
                "--rater", "r1", "--rater", "r2", name="own")
    assert {r["metric"] for r in own["blocks"][0]["rows"] if r["kind"] == "metric"} == {
        "judge.good", "judge.bad"}
    assert [(r["metric"], r["passed"]) for r in own["alt_test"]] == [
        ("judge.good", True), ("judge.bad", False)]
    # a rater that names no criterion when there are several, one annotator, no --alt-test
    for args, message in (
            (["--human", "human.fluency", "--human", "human.relevance", "--rater", "judge.bad"],
             "names no --human criterion"),
            (["--human", "human.fluency", "--rater", "human.fluency.a0"], "one annotator"),
            (["--human", "human.fluency", "--rater", "human.fluency.zz"], "human.fluency.zz")):
        proc = run_cli("audit", str(scores), *BASE, "--level", "system", "--alt-test", "0.1",
                       *args)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    proc = run_cli("audit", str(scores), "--human", "human.fluency", "--rater",
                   "human.fluency.a0")
    assert proc.returncode == 2 and "--alt-test" in proc.stderr


def correlated(path: Path, n: int, seed: int = 5) -> Path:
    """human = truth + noise; a and b track the truth with different noise."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=n)
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(n)], "system": "s",
                          "human.q": truth + rng.normal(0, 0.7, n),
                          "m.a": truth + rng.normal(0, 0.5, n),
                          "m.b": truth + rng.normal(0, 0.9, n)})
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("delta", "separates"), [(0.3, True), (0.03, False)])
def test_power_in_the_verdict(tmp_path, delta, separates):
    n = 150
    scores = correlated(tmp_path / "scores.csv", n)
    data = audit(tmp_path, scores, "--human", "human.q", "--level", "segment", "--grouping",
                 "none", "--sentinel", "sentinel.random", "--power-for", str(delta))
    (power,) = data["power"]
    frame = pd.read_csv(scores)
    c = np.corrcoef(frame[["human.q", "m.a", "m.b"]].to_numpy().T)
    (row,) = power["comparisons"]
    assert (row["metric"], row["against"]) == ("m.a", "m.b")
    assert row["r_a"] == pytest.approx(c[0, 1], rel=1e-12)
    assert row["r_ab"] == pytest.approx(c[1, 2], rel=1e-12)
    theirs = monte_carlo_power(n, c[0, 1], c[0, 1] - delta, c[1, 2], 0.05, 1000, 3)
    se = math.sqrt(theirs * (1 - theirs) / 1000 + 0.25 / 2000)
    assert abs(row["power_at_n"] - theirs) <= 4 * se + 0.005
    assert power["separates"] is separates and power["n"] == n
    (verdict,) = data["verdict"]
    assert verdict["power"]["separates"] is separates
    if separates:
        assert not verdict["summary"].startswith("Not robust")
        assert f"This study can separate metrics {delta:g} apart at alpha 0.05 with its " \
               f"{n} items" in verdict["summary"]
    else:
        head = (f"Not robust: this study cannot separate metrics closer than {delta:g} at "
                f"alpha 0.05 with its {n} items (Pearson r with human.q; power "
                f"{row['power_at_n']:.2f} for m.a against m.b; 80% power needs "
                f"{row['items_needed']} items)")
        assert verdict["summary"].startswith(head)
        assert row["items_needed"] > n
        assert head in data["_md"] and head in data["_html"].read_text()
    results = json.loads(run_cli("audit", str(scores), *BASE, "--human", "human.q",
                                 "--level", "system", "--sentinel", "sentinel.random",
                                 "--power-for", str(delta), "--json").stdout)
    assert [r["separates"] for r in results if r["type"] == "power"] == [separates]


def per_item_values(frame: pd.DataFrame, names: list[str]) -> np.ndarray:
    """Per item, Pearson across systems with scipy (NaN where a column is constant)."""
    out = []
    for _, group in frame.groupby("item", sort=False):
        row = []
        for name in names:
            x, y = group["human.q"].to_numpy(float), group[name].to_numpy(float)
            row.append(scipy.stats.pearsonr(x, y).statistic if np.ptp(x) and np.ptp(y)
                       else math.nan)
        out.append(row)
    return np.array(out)


def sequential_table(path: Path, items: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(items):
        for j in range(SYSTEMS):
            t = rng.normal()
            rows.append({"item": f"i{i:03d}", "system": f"s{j}",
                         "human.q": t + rng.normal(0, 0.3),
                         "m.good": t + rng.normal(0, 0.3)})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(("items", "confirmed"), [(200, True), (12, False)])
def test_sequential_in_the_verdict(tmp_path, items, confirmed):
    scores = sequential_table(tmp_path / "scores.csv", items, seed=2)
    data = audit(tmp_path, scores, "--human", "human.q", "--level", "segment", "--grouping",
                 "item", "--sentinel", "sentinel.random", "--sequential", "--resamples",
                 "1000")
    (seq,) = data["sequential"]
    (block,) = data["blocks"]
    assert seq["passed"] == ["m.good"], block["gate"]
    (sentinel,) = {r["metric"] for r in block["rows"]} - {"m.good"}
    assert seq["sentinel"] == sentinel and seq["items_total"] == items
    (verdict,) = data["verdict"]
    if confirmed:
        assert seq["settled"] and seq["items_used"] < items
        assert not verdict["summary"].startswith("Not robust")
        assert (f"At segment level, grouped by item an anytime-valid sequential study would "
                f"have decided every comparison after {seq['items_used']} of {items} items"
                ) in verdict["summary"]
        assert seq["human_labels_saved"] == (items - seq["items_used"]) * SYSTEMS
    else:
        assert not seq["settled"]
        assert not verdict["summary"].startswith("Not robust")  # open, not contradicted
        head = ("At segment level, grouped by item an anytime-valid sequential test leaves "
                "the lead of m.good ([")
        tail = (f"]) over {sentinel} undecided with all {items} items: only the gate's test "
                "at this fixed number of items decides it.")
        markdown = data["_md"].replace("\\[", "[").replace("\\]", "]")  # escaped there
        for text in (verdict["summary"], markdown):
            assert head in text and tail in text


def test_a_pass_the_sequence_contradicts_is_not_robust():
    from judgebench.auditing.conclusions import sentences

    seq = {"human": "h", "statistic": "pearson", "level": "segment", "grouping": "item",
           "sentinel": "sentinel.cand", "passed": ["m"], "settled": True, "items_used": 30,
           "items_total": 90, "human_labels_saved": 60, "judge_calls_saved": 60,
           "decisions": [{"metric": "sentinel.cand", "against": "m", "decision": "better",
                          "low": 0.1, "high": 0.4, "decided_at": 30}]}
    fragile, found = sentences({"sequential": [seq]}, "h", lambda b: "here")
    assert fragile == ["m's pass at here is contradicted by an anytime-valid sequential "
                       "test: it decides sentinel.cand better after 30 items (difference "
                       "in [-0.400, -0.100])"]
    assert found == ["At here an anytime-valid sequential study would have decided every "
                     "comparison after 30 of 90 items (60 human labels and 60 judge calls "
                     "saved)."]


def test_sequential_against_the_kernel(tmp_path):
    """Two metrics, no sentinel defined per item (sentinel.constant): the replay's decision
    is the kernel's on scipy's per-item Pearson."""
    rng = np.random.default_rng(4)
    rows = []
    for i in range(150):
        for j in range(SYSTEMS):
            t = rng.normal()
            rows.append({"item": f"i{i:03d}", "system": f"s{j}", "human.q": t + rng.normal(),
                         "m.good": t + rng.normal(0, 0.3), "m.weak": t + rng.normal(0, 1.5)})
    path = tmp_path / "two.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    data = audit(tmp_path, path, "--human", "human.q", "--level", "segment", "--grouping",
                 "item", "--sentinel", "sentinel.constant", "--sequential")
    (seq,) = data["sequential"]
    names = ["m.good", "m.weak"]
    frame = pd.read_csv(path)
    theirs = sequential_clusters(per_item_values(frame, names), names, alpha=0.05, seed=0)
    assert seq["items_used"] == theirs.items_used and seq["settled"] == theirs.settled
    mine = [d for d in seq["decisions"] if {d["metric"], d["against"]} == set(names)]
    (d,) = mine
    (kernel,) = theirs.decisions
    assert (d["metric"], d["decision"], d["decided_at"]) == (kernel.better, kernel.decision,
                                                              kernel.at)
    assert d["low"] == pytest.approx(kernel.low, rel=1e-9) and \
        d["high"] == pytest.approx(kernel.high, rel=1e-9)


def test_sequential_needs_an_item_grouped_block(tmp_path):
    scores = sequential_table(tmp_path / "scores.csv", 20, seed=1)
    proc = run_cli("audit", str(scores), "--human", "human.q", "--level", "system",
                   "--sequential")
    assert proc.returncode == 2 and "--sequential" in proc.stderr


def test_html_with_every_conclusion_renders_in_chromium(tmp_path):
    need_chromium()
    scores = annotated(tmp_path / "scores.csv")
    data = audit(tmp_path, scores, "--human", "human.q", "--alt-test", "0.15", "--alt-score",
                 "neg-rmse", "--power-for", "0.05", "--sequential")
    page = data["_html"]
    browser = Browser(tmp_path / "profile")
    try:
        session = browser.open(page.resolve().as_uri())
        assert browser.requests(session) == [page.resolve().as_uri()]
        summary = browser.evaluate(session, "document.querySelector('#verdict .summary')"
                                            ".textContent")
        assert summary == data["verdict"][0]["summary"]
        assert "can replace an annotator on human.q" in str(summary)
        rows = browser.evaluate(session, "document.querySelectorAll('.replacement tbody tr')"
                                         ".length")
        assert rows == 2
        width = browser.evaluate(session, "document.querySelector('.replacement table')"
                                          ".getBoundingClientRect().width")
        assert isinstance(width, int | float) and width > 200
    finally:
        browser.close()


def test_the_pytest_fixture_passes_them_on(tmp_path):
    from judgebench.pytest_plugin import Auditor

    scores = annotated(tmp_path / "scores.csv")
    found = Auditor()(scores, human="human.q", levels=["segment"], groupings=["item"],
                      sentinels=["sentinel.random"], resamples=200, alt_test=0.15,
                      alt_score="neg-rmse", power_for=0.3, sequential=True)
    verdict = found.verdict("human.q")
    assert [r["metric"] for r in verdict["replacement"] if r["passed"]] == ["judge.good"]
    # judge.bad is uncorrelated with judge.good: no study has them 0.3 apart in r
    assert verdict["power"]["separates"] is None
    assert [(s["metric"], s["against"]) for s in found.report.power[0]["skipped"]] == [
        ("judge.good", "judge.bad")]
    assert "No pair of metrics can be 0.3 apart in Pearson r with human.q" in \
        verdict["summary"]
    assert found.report.sequential and found.report.sequential[0]["grouping"] == "item"
