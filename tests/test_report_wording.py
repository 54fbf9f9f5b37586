"""What the text around the numbers says is what happened (issue 42, Screens): a title names
the failed-cell convention only where a failed cell was counted or the convention is not
the default; a report without bootstrap resamples says it has no intervals, not "95%
bootstrap CI (0 resamples)"; `judgebench metrics` is a short table (name, kind, one line),
the options on each metric's card."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import REPO, run_cli

from judgebench.render.card import intervals
from judgebench.render.text import METRICS_WIDTH

SCORES = REPO / "examples" / "summeval-scores.csv"


def scores_table(path: Path, *, failed: bool) -> Path:
    """12 items x 3 systems: a judge column (one cell `failed` if asked), another metric,
    a human column."""
    rng = np.random.default_rng(0)
    n = 36
    judge = rng.integers(1, 6, n).astype(object)
    if failed:
        judge[5] = "failed"
    pd.DataFrame({"item": np.repeat([f"i{k}" for k in range(12)], 3),
                  "system": np.tile(["a", "b", "c"], 12), "judge.rubric": judge,
                  "other": rng.normal(size=n), "human.q": rng.integers(1, 6, n)}
                 ).to_csv(path, index=False)
    return path


def pairs_table(path: Path, *, failed: bool) -> Path:
    rng = np.random.default_rng(1)
    n = 40
    verdicts = rng.choice(["a", "b", "tie"], (n, 3)).astype(object)
    if failed:
        verdicts[3, 0] = "failed"
    pd.DataFrame({"item": [f"i{k}" for k in range(n)], "system_a": "x", "system_b": "y",
                  "human.gold": rng.choice(["a", "b"], n), "j1": verdicts[:, 0],
                  "j2": verdicts[:, 1]}).to_csv(path, index=False)
    return path


def titles(stdout: str) -> list[str]:
    """The text tables' titles: the lines that name a human column."""
    return [line for line in stdout.splitlines() if line.startswith("human.")]


def test_meta_eval_titles_name_the_convention_only_when_it_counted_something(
        tmp_path: Path) -> None:
    clean = scores_table(tmp_path / "clean.csv", failed=False)
    dirty = scores_table(tmp_path / "dirty.csv", failed=True)
    found = {}
    for name, path, extra in (("clean", clean, ()), ("dirty", dirty, ()),
                              ("chosen", clean, ("--failed-as", "min"))):
        proc = run_cli("meta-eval", str(path), "--human", "human.q", "--statistic",
                       "pearson", "--statistic", "kendall", *extra)
        assert proc.returncode == 0, proc.stderr
        found[name] = titles(proc.stdout)
        assert len(found[name]) == 2, proc.stdout
    assert found["clean"] == ["human.q · pearson · segment, grouping none",
                              "human.q · kendall · segment, grouping none"]
    assert all(t.endswith(" · failed as missing") for t in found["dirty"])
    assert all(t.endswith(" · failed as min") for t in found["chosen"])
    proc = run_cli("meta-eval", str(SCORES), "--human", "human.coherence", "--metric",
                   "lexical.chrf", "--bootstrap", "0")
    assert proc.returncode == 0 and "failed as" not in proc.stdout, proc.stdout


def test_pairwise_compare_judges_and_aggregate_name_it_only_when_it_counted_something(
        tmp_path: Path) -> None:
    clean = pairs_table(tmp_path / "clean.csv", failed=False)
    dirty = pairs_table(tmp_path / "dirty.csv", failed=True)
    for path, said in ((clean, False), (dirty, True)):
        pairwise = run_cli("meta-eval", "pairwise", str(path), "--human", "human.gold")
        compared = run_cli("compare-judges", str(path), "--a", "j1", "--b", "j2", "--human",
                           "human.gold", "--bootstrap", "0")
        for proc in (pairwise, compared):
            assert proc.returncode == 0, proc.stderr
            assert ("failed as missing" in proc.stdout.splitlines()[0]) is said, proc.stdout
    board = tmp_path / "board.csv"
    pd.DataFrame({"system": ["s1", "s2", "s3"], "t1": [1.0, 2.0, 3.0],
                  "t2": [3.0, 1.0, 2.0]}).to_csv(board, index=False)
    proc = run_cli("aggregate", str(board), "-r", "mean")
    assert proc.returncode == 0 and "failed as" not in proc.stdout, proc.stdout
    pd.DataFrame({"system": ["s1", "s2", "s3"], "t1": [1.0, "failed", 3.0],
                  "t2": [3.0, 1.0, 2.0]}).to_csv(board, index=False)
    proc = run_cli("aggregate", str(board), "-r", "mean")
    assert proc.returncode == 0, proc.stderr
    assert "failed as missing\n  t1: 1 failed, counted dropped" in proc.stdout, proc.stdout


def test_an_audit_without_resamples_says_it_has_no_intervals(tmp_path: Path) -> None:
    md, html = tmp_path / "card.md", tmp_path / "card.html"
    proc = run_cli("audit", str(SCORES), "--human", "human.coherence", "--metric",
                   "lexical.chrf", "--level", "system", "--bootstrap", "0", "--resamples",
                   "20", "--report", str(md), "--report", str(html))
    assert proc.returncode == 0, proc.stderr
    for report in (md, html):
        text = report.read_text(encoding="utf-8")
        assert "no confidence intervals (--bootstrap 0)" in text
        assert "0 resamples" not in text and "bootstrap CI" not in text
    assert intervals({"bootstrap": 200, "ci": 0.95}) == \
        "95% bootstrap CI over items (200 resamples)"


def test_the_metric_list_is_one_short_line_each_and_the_options_are_on_the_card() -> None:
    proc = run_cli("metrics")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    listed = json.loads(run_cli("metrics", "--json").stdout)
    header, rows = lines[0], lines[1:1 + len(listed)]
    assert header.split() == ["metric", "kind", "what", "it", "is"]
    assert [row.split()[:2] for row in rows] == [[m["name"], m["kind"]] for m in listed]
    assert max(len(line) for line in lines) <= METRICS_WIDTH
    assert "options:" not in proc.stdout and "judgebench metrics NAME" in proc.stdout
    rubric = next(m for m in listed if m["name"] == "judge.rubric")
    assert len(rubric["options"]) > 40  # what the list no longer prints ...
    card = run_cli("metrics", "judge.rubric").stdout
    assert all(f"\n  {option} " in card for option in rubric["options"])  # ... the card does
    bleu = next(row for row in rows if row.startswith("lexical.bleu "))
    assert bleu.split(None, 2)[2] == "sacrebleu BLEU (sentence: effective order; corpus: corpus..."

