"""`judgebench combine` and the audit's verdict on a combination: cross-fitting never lets a
row's own item train its model, ridge matches a closed-form numpy ridge on the same folds,
known weights are recovered, directions are honoured, bad input exits 2, and on SummEval the
combination of lexical metrics is reported next to its best component and audited."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl

from meta_eval.combination import item_folds


def synthetic(path: Path, *, items: int = 60, systems: int = 8, seed: int = 0,
              noise: float = 0.3) -> Path:
    """human = 2 m1 - m2 + noise; m3 is noise; m4 = -m1 (lower is better)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(items):
        for j in range(systems):
            m1, m2, m3 = rng.normal(size=3)
            rows.append({"item": f"i{i:02d}", "system": f"s{j}", "m1": m1, "m2": m2,
                         "m3": m3, "m4": -m1,
                         "h": 2 * m1 - m2 + noise * rng.normal()})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def combine(*args: str) -> tuple[list[dict], object]:
    proc = run_cli("combine", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), proc


def column_of(out: Path, head: dict) -> np.ndarray:
    frame = pd.read_csv(out)
    return frame[head["column"]].to_numpy(dtype=float)


def test_ridge_matches_a_closed_form_ridge_on_the_same_folds(tmp_path):
    path = synthetic(tmp_path / "s.csv")
    out = tmp_path / "c.csv"
    rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                      "--metric", "m3", "--folds", "4", "--seed", "3", "--alpha", "2.5",
                      "-o", str(out))
    got = column_of(out, rows[0])
    frame = pd.read_csv(path)
    x = frame[["m1", "m2", "m3"]].to_numpy()
    y = frame["h"].to_numpy()
    folds = item_folds(frame["item"].astype(str).tolist(), 4, 3)
    expected = np.empty(len(y))
    for k in np.unique(folds):
        train, test = folds != k, folds == k
        mean, scale = x[train].mean(axis=0), x[train].std(axis=0)
        z = (x[train] - mean) / scale
        zc = z - z.mean(axis=0)
        w = np.linalg.solve(zc.T @ zc + 2.5 * np.eye(3), zc.T @ (y[train] - y[train].mean()))
        expected[test] = y[train].mean() + ((x[test] - mean) / scale - z.mean(axis=0)) @ w
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


def test_a_rows_score_never_depends_on_its_own_items_human_scores(tmp_path):
    path = synthetic(tmp_path / "s.csv", items=30)
    frame = pd.read_csv(path)
    changed = frame.copy()
    changed.loc[changed["item"] == "i05", "h"] += 100.0
    other = tmp_path / "changed.csv"
    changed.to_csv(other, index=False)
    for model in ("ridge", "isotonic"):
        a_rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                            "--model", model, "-o", str(tmp_path / f"a_{model}.csv"))
        b_rows, _ = combine(str(other), "--human", "h", "--metric", "m1", "--metric", "m2",
                            "--model", model, "-o", str(tmp_path / f"b_{model}.csv"))
        a = column_of(tmp_path / f"a_{model}.csv", a_rows[0])
        b = column_of(tmp_path / f"b_{model}.csv", b_rows[0])
        own = (frame["item"] == "i05").to_numpy()
        np.testing.assert_array_equal(a[own], b[own])
        assert np.abs(a[~own] - b[~own]).max() > 0.1  # the others did learn from it


def test_weights_recover_the_truth_and_the_combination_beats_its_components(tmp_path):
    path = synthetic(tmp_path / "s.csv")
    out = tmp_path / "c.csv"
    rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                      "--metric", "m3", "--alpha", "0.01", "-o", str(out))
    head = rows[0]
    per_unit = head["weights"]["per_unit"]
    assert per_unit["m1"] == pytest.approx(2.0, abs=0.05)
    assert per_unit["m2"] == pytest.approx(-1.0, abs=0.05)
    assert per_unit["m3"] == pytest.approx(0.0, abs=0.05)
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    entry = meta["columns"][head["column"]]
    assert entry["higher_is_better"] is True
    assert entry["combination"]["inputs"] == ["m1", "m2", "m3"]
    assert entry["combination"]["weights"] == head["weights"]
    for setting in rows[1:]:
        assert setting["out_of_fold"] is True
        assert setting["best_component"] == "m1"
        assert setting["combined"] > setting["best_component_value"]
    # The column is named by what decides it.
    for part in ("combine.ridge@1", "inputs:m1+m2+m3", "human:h", "folds:5", "seed:0"):
        assert part in head["column"]


def test_a_lower_is_better_input_is_oriented_first(tmp_path):
    path = synthetic(tmp_path / "s.csv")
    a_rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                        "-o", str(tmp_path / "a.csv"))
    b_rows, _ = combine(str(path), "--human", "h", "--metric", "m4", "--metric", "m2",
                        "--lower-is-better", "m4", "-o", str(tmp_path / "b.csv"))
    assert b_rows[0]["inputs_higher_is_better"] == {"m4": False, "m2": True}
    assert b_rows[0]["weights"]["standardised"]["m4"] == pytest.approx(
        a_rows[0]["weights"]["standardised"]["m1"])
    np.testing.assert_allclose(column_of(tmp_path / "a.csv", a_rows[0]),
                               column_of(tmp_path / "b.csv", b_rows[0]))
    # the flag is kept in OUT's sidecar: a reader of OUT needs no flag again
    meta = json.loads((tmp_path / "b.csv.meta.json").read_text())
    assert meta["columns"]["m4"]["higher_is_better"] is False


def test_a_constant_component_and_too_few_labels(tmp_path):
    path = synthetic(tmp_path / "s.csv", items=20)
    frame = pd.read_csv(path)
    frame["flat"] = 1.0
    frame.to_csv(path, index=False)
    rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "flat",
                      "-o", str(tmp_path / "c.csv"))
    for setting in rows[1:]:
        assert setting["components"]["flat"] is None  # undefined, not 0
        assert setting["best_component"] == "m1" and setting["combined"] is not None
    frame["h"] = np.nan
    frame.loc[:1, "h"] = 1.0
    frame.to_csv(path, index=False)
    proc = run_cli("combine", str(path), "--human", "h", "--metric", "m1", "-o",
                   str(tmp_path / "d.csv"))
    assert proc.returncode == 2 and "fewer than 3 rows" in proc.stderr


def test_isotonic_is_monotone_in_the_ridge_score_within_each_fold(tmp_path):
    path = synthetic(tmp_path / "s.csv")
    r_rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                        "-o", str(tmp_path / "r.csv"))
    i_rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                        "--model", "isotonic", "-o", str(tmp_path / "i.csv"))
    ridge = column_of(tmp_path / "r.csv", r_rows[0])
    iso = column_of(tmp_path / "i.csv", i_rows[0])
    items = pd.read_csv(path)["item"].astype(str).tolist()
    folds = item_folds(items, 5, 0)
    for k in np.unique(folds):
        order = np.argsort(ridge[folds == k])
        assert (np.diff(iso[folds == k][order]) >= -1e-12).all()
    assert len(np.unique(iso)) < len(iso)  # a step function


def test_gp_runs_and_reports_its_kernel(tmp_path):
    path = synthetic(tmp_path / "s.csv", items=20, systems=6)
    rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m3",
                         "--model", "gp", "--folds", "3", "-o", str(tmp_path / "g.csv"))
    head = rows[0]
    assert "RBF" in head["weights"]["fitted_kernel"]
    assert head["weights"]["relevance"]["m1"] > head["weights"]["relevance"]["m3"]
    assert np.isfinite(column_of(tmp_path / "g.csv", head)).all()
    segment = rows[1]
    assert segment["combined"] > 0.5


def test_rows_missing_a_metric_get_no_score_and_missing_human_rows_are_scored(tmp_path):
    path = synthetic(tmp_path / "s.csv", items=20)
    frame = pd.read_csv(path)
    frame.loc[3, "m1"] = np.nan
    frame.loc[4, "h"] = np.nan
    frame.to_csv(path, index=False)
    rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                      "-o", str(tmp_path / "c.csv"))
    values = column_of(tmp_path / "c.csv", rows[0])
    assert np.isnan(values[3]) and np.isfinite(values[4])
    assert rows[0]["scored"] == len(frame) - 1


def test_text_output_names_the_best_component(tmp_path):
    path = synthetic(tmp_path / "s.csv")
    proc = run_cli("combine", str(path), "--human", "h", "--metric", "m1", "--metric", "m3",
                   "-o", str(tmp_path / "c.csv"))
    assert proc.returncode == 0, proc.stderr
    assert "(best component)" in proc.stdout and "combination" in proc.stdout


def test_bad_input_exits_2_before_writing(tmp_path):
    path = synthetic(tmp_path / "s.csv", items=10)
    out = tmp_path / "c.csv"
    cases = [
        (("--metric", "nope"), "'nope'"),
        (("--metric", "h"), "human column"),
        (("--metric", "m1", "--statistic", "bogus"), "--statistic"),
    ]
    for extra, message in cases:
        proc = run_cli("combine", str(path), "--human", "h", *extra, "-o", str(out))
        assert proc.returncode == 2, (extra, proc.stderr)
        assert message in proc.stderr
        assert not out.exists()
    proc = run_cli("combine", str(path), "--human", "h", "--metric", "m1", "-o", str(path))
    assert proc.returncode == 2 and not Path(f"{path}.meta.json").exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("item,system,m1,h\na,x,1,2\na,y,zz,3\n", encoding="utf-8")
    proc = run_cli("combine", str(bad), "--human", "h", "--metric", "m1", "-o", str(out))
    assert proc.returncode == 2 and "line 3" in proc.stderr and "'m1'" in proc.stderr


def test_audit_verdict_logic_on_a_synthetic_table(tmp_path):
    """A combination far better than its components is a significant improvement; one whose
    best component carries all the signal is not."""
    path = synthetic(tmp_path / "s.csv", items=40, systems=6, noise=0.1)
    out = tmp_path / "c.csv"
    rows, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m2",
                      "-o", str(out))
    proc = run_cli("audit", str(out), "--human", "h", "--metric", "m1", "--metric", "m2",
                   "--metric", rows[0]["column"], "--level", "segment", "--grouping",
                   "none", "--statistic", "pearson", "--bootstrap", "0", "--resamples",
                   "200", "--json")
    assert proc.returncode == 0, proc.stderr
    verdicts = [r for r in json.loads(proc.stdout) if r["type"] == "combination"]
    assert len(verdicts) == 1
    v = verdicts[0]
    assert v["best_component"] == "m1" and v["beats_sentinels"] is True
    assert v["improvement"] is True and v["verdict"] == "significant improvement"
    assert v["cluster"] < v["best_component_cluster"]


def test_a_combination_that_adds_nothing_is_not_a_significant_improvement(tmp_path):
    """human = m1 + noise: m1 + m3 is at best m1 again (out of fold, a little worse). The
    HTML card says so."""
    rng = np.random.default_rng(3)
    rows = [{"item": f"i{i}", "system": f"s{j}", "m1": (m1 := rng.normal()),
             "m3": rng.normal(), "h": m1 + 0.5 * rng.normal()}
            for i in range(40) for j in range(6)]
    path = tmp_path / "s.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "c.csv"
    made, _ = combine(str(path), "--human", "h", "--metric", "m1", "--metric", "m3",
                      "-o", str(out))
    html = tmp_path / "audit.html"
    proc = run_cli("audit", str(out), "--human", "h", "--level", "segment", "--grouping",
                   "none", "--statistic", "pearson", "--bootstrap", "0", "--resamples",
                   "200", "--report", str(html), "--json")
    assert proc.returncode == 0, proc.stderr
    (v,) = [r for r in json.loads(proc.stdout) if r["type"] == "combination"]
    assert v["metric"] == made[0]["column"] and v["best_component"] == "m1"
    assert v["cluster"] >= v["best_component_cluster"]
    assert v["improvement"] is False and v["verdict"] == "not a significant improvement"
    assert "its best component m1" in v["reason"]
    page = html.read_text()
    assert "Learned combinations" in page and "not a significant improvement" in page


def _block(rows: dict[str, tuple[float, int | None]], passed: bool):
    from judgebench.auditing.blocks import Block, Row
    from judgebench.auditing.gate import GateResult
    from meta_eval import Result

    made = [Row(name, "sentinel" if name.startswith("sentinel") else "metric",
                Result(statistic="pearson", value=value, n=10), cluster)
            for name, (value, cluster) in rows.items()]
    gate = [GateResult("combo", passed, rows["combo"][1], "sentinel.random", 3,
                       "the gate's reason")]
    return Block("h", "pearson", "segment", "none", made, gate)


def test_verdict_rules_one_by_one():
    from judgebench.auditing.combination import combination_verdicts

    combos = {"combo": {"inputs": ["a", "b", "c"], "human": "h"}}
    cases = [
        # beats sentinels and its best component (a) is a cluster below: improvement
        ({"combo": (0.9, 1), "a": (0.5, 2), "b": (0.4, 2), "c": (0.1, 3),
          "sentinel.random": (0.0, 3)}, True, True, "a"),
        # best component in the same cluster
        ({"combo": (0.9, 1), "a": (0.85, 1), "b": (0.4, 2), "c": (0.1, 3),
          "sentinel.random": (0.0, 3)}, True, False, "a"),
        # significantly better than its components but fails the gate
        ({"combo": (0.9, 1), "a": (0.5, 2), "b": (0.4, 2), "c": (0.1, 3),
          "sentinel.random": (0.95, 1)}, False, False, "a"),
    ]
    for rows, passed, improvement, best in cases:
        (v,) = combination_verdicts([_block(rows, passed)], combos)
        assert v["improvement"] is improvement and v["best_component"] == best
        assert v["verdict"] == ("significant improvement" if improvement
                                else "not a significant improvement")
        if not passed:
            assert "does not beat the sentinels" in v["reason"]
    # c not ranked (a corpus score: no cluster) is named, not compared
    rows = {"combo": (0.9, 1), "a": (0.5, 2), "b": (0.4, 2), "c": (0.99, None),
            "sentinel.random": (0.0, 3)}
    (v,) = combination_verdicts([_block(rows, True)], combos)
    assert v["not_compared"] == ["c"] and v["best_component"] == "a" and v["improvement"]
    # only the blocks of the human column the combination was fitted to
    assert combination_verdicts([_block(rows, True)], {"combo": {"inputs": ["a"],
                                                                 "human": "other"}}) == []


@pytest.fixture(scope="module")
def summeval_scores(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("summeval")
    gens = write_jsonl(tmp / "gens.jsonl", summeval_records(16 * 40))
    scores = tmp / "scores.csv"
    proc = run_cli("score", str(gens), "-m", "lexical.rouge2", "-m", "lexical.chrf",
                   "-m", "lexical.rouge1", "-o", str(scores))
    assert proc.returncode == 0, proc.stderr
    return scores


@pytest.mark.slow
def test_summeval_combination_is_reported_next_to_its_best_component_and_audited(
        summeval_scores, tmp_path):
    out = tmp_path / "combined.csv"
    rows, _ = combine(str(summeval_scores), "--human", "human.relevance",
                      "--metric", "lexical.rouge2", "--metric", "lexical.chrf",
                      "--metric", "lexical.rouge1", "-o", str(out))
    settings = {(r["level"], r["grouping"]): r for r in rows[1:]}
    assert set(settings) == {("segment", "none"), ("segment", "item"), ("system", "none")}
    for s in settings.values():
        assert s["best_component"] in ("lexical.rouge2", "lexical.chrf", "lexical.rouge1")
        assert s["best_component_value"] == max(v for v in s["components"].values())
        assert -1 <= s["combined"] <= 1
    # The out-of-fold segment Kendall agrees with meta-eval on the written table.
    proc = run_cli("meta-eval", str(out), "--human", "human.relevance", "--metric",
                   rows[0]["column"], "--statistic", "kendall", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["value"] == pytest.approx(
        settings[("segment", "none")]["combined"])
    report = tmp_path / "audit.md"
    proc = run_cli("audit", str(out), "--human", "human.relevance", "--level", "system",
                   "--level", "segment", "--grouping", "item", "--statistic", "kendall",
                   "--bootstrap", "0", "--resamples", "200", "--report", str(report),
                   "--json")
    assert proc.returncode == 0, proc.stderr
    verdicts = [r for r in json.loads(proc.stdout) if r["type"] == "combination"]
    assert {(v["level"], v["grouping"]) for v in verdicts} == {("system", "none"),
                                                              ("segment", "item")}
    for v in verdicts:
        assert v["verdict"] in ("significant improvement", "not a significant improvement")
        assert v["improvement"] == (v["beats_sentinels"] is True and v["best_component"]
                                    is not None and v["cluster"] < v["best_component_cluster"])
    system = next(v for v in verdicts if v["level"] == "system")
    assert "lexical.chrf" in system["not_compared"]  # its system score is a corpus score
    text = report.read_text()
    assert "## Learned combinations" in text and "significant improvement" in text
