"""`judgebench meta-eval pairwise PAIRS`: LLMBar's published statistics reproduced, JSON and
table output, default judges, and exit code 2 naming file, line and column on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from sklearn.metrics import cohen_kappa_score

LLMBAR = Path(__file__).parent / "data" / "pairwise" / "llmbar"
# LLMBar statistics.json key -> judgebench statistic (PROVENANCE.md)
LLMBAR_KEYS = {"correct_False": "accuracy-ab", "correct_True": "accuracy-ba",
               "correct_average": "accuracy", "correct_both": "both-correct",
               "equal": "consistency", "kappa_agreement": "kappa-orders"}


def pairwise_json(*args: str) -> list[dict]:
    proc = run_cli("meta-eval", "pairwise", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def stored(value: str | float) -> float:
    """LLMBar writes "95 / 100 = 95.0%" or "95.5%" for rates and a float for kappas."""
    if isinstance(value, float):
        return value
    return float(value.split("=")[-1].strip().rstrip("%")) / 100


def test_llmbar_statistics_are_reproduced_for_every_subset_and_evaluator():
    out = pairwise_json(str(LLMBAR / "pairs.csv"), "--human", "human.gold", "--by",
                        "category")
    expected = json.loads((LLMBAR / "statistics.json").read_text(encoding="utf-8"))
    checked = 0
    for subset, evaluators in expected.items():
        category = subset.split("/")[-1]
        for judge, statistics in evaluators.items():
            for key, statistic in LLMBAR_KEYS.items():
                row = next(r for r in out if r["metric"] == judge and r["category"] == category
                           and r["statistic"] == statistic)
                assert row["value"] == pytest.approx(stored(statistics[key]), abs=1e-12), (
                    subset, judge, key)
                checked += 1
    assert checked == 5 * 3 * 6
    gpt4 = {r["statistic"]: r for r in out if r["metric"] == "gpt4-vanilla"
            and r["category"] == "Natural"}
    assert gpt4["accuracy"]["value"] == pytest.approx(0.955)  # the paper's Acc.
    assert gpt4["consistency"]["value"] == pytest.approx(0.95)  # the paper's Agr.
    assert gpt4["accuracy"]["n"] == 100
    # The macro average over the five subsets is the mean of LLMBar's per-subset numbers.
    macro = next(r for r in out if r["metric"] == "chatgpt-vanilla"
                 and r["category"] == "(macro)" and r["statistic"] == "accuracy")
    assert macro["value"] == pytest.approx(np.mean(
        [stored(e["chatgpt-vanilla"]["correct_average"]) for e in expected.values()]))
    assert macro["n"] == 5 and macro["grouping"] == "category"


def test_llmbar_kappa_against_gold_is_sklearn_on_one_coding():
    out = pairwise_json(str(LLMBAR / "pairs.csv"), "--human", "human.gold")
    frame = pd.read_csv(LLMBAR / "pairs.csv")
    for judge in ("gpt4-vanilla", "chatgpt-vanilla"):
        ab, ba = frame[f"{judge}.ab"], frame[f"{judge}.ba"]
        combined = np.where(ab == ba, ab, "tie")
        row = next(r for r in out if r["metric"] == judge and r["statistic"] == "kappa")
        assert row["value"] == pytest.approx(cohen_kappa_score(combined, frame["human.gold"]))
        assert row["n"] == 419 and "category" not in row


@pytest.fixture
def pairs(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 160
    gold = rng.choice(["a", "b", "tie"], size=n, p=[0.45, 0.45, 0.1])
    other = np.where(rng.random(n) < 0.8, gold, rng.choice(["a", "b"], size=n))
    flip = {"a": "b", "b": "a", "tie": "tie"}

    def noisy(error: float) -> list[str]:
        return [flip[g] if rng.random() < error else g for g in gold]

    frame = pd.DataFrame({
        "item": [f"q{k // 2:03d}" for k in range(n)], "system_a": "m1", "system_b": "m2",
        "category": rng.choice(["chat", "code"], size=n), "human.preference": gold,
        "human.other": other, "good.ab": noisy(0.1), "good.ba": noisy(0.1),
        "bad": noisy(0.45), "bad.ab": noisy(0.45), "bad.ba": noisy(0.5),
        "soft": np.round(rng.random(n), 2), "note": "free text",
    })
    frame.loc[5, "good.ba"] = None
    frame.loc[7, "human.other"] = None
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    return path


def test_json_rows_default_judges_and_keys(pairs):
    out = pairwise_json(str(pairs), "--human", "human.preference", "--bootstrap", "100",
                        "--seed", "3")
    assert [r["metric"] for r in out if r["statistic"] == "accuracy"] == ["good", "bad", "soft"]
    for r in out:
        assert {"metric", "human", "statistic", "value", "n", "level", "grouping",
                "human_ties", "ci_low", "ci_high"} <= set(r)
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
        assert r["level"] == "pair" and r["human_ties"] == "drop"
        assert (r["human"] is None) == (r["statistic"] in ("consistency", "tie-rate",
                                                          "kappa-orders"))
    good = {r["statistic"] for r in out if r["metric"] == "good"}
    assert good == {"accuracy-ab", "accuracy-ba", "accuracy", "accuracy-combined",
                    "accuracy-vote", "both-correct", "consistency", "tie-rate", "kappa-orders",
                    "kappa"}
    # a soft judge (probabilities) is also calibrated against people
    assert {r["statistic"] for r in out if r["metric"] == "soft"} == {
        "accuracy", "accuracy-combined", "accuracy-vote", "tie-rate", "kappa", "brier", "ece"}
    frame = pd.read_csv(pairs)
    decided = frame[frame["human.preference"] != "tie"]
    assert next(r for r in out if r["metric"] == "good" and r["statistic"] == "accuracy-ab"
                )["value"] == pytest.approx((decided["good.ab"] == decided["human.preference"]
                                             ).mean())
    soft = np.where(decided["soft"] > 0.5, "a", np.where(decided["soft"] < 0.5, "b", "tie"))
    assert next(r for r in out if r["metric"] == "soft" and r["statistic"] == "accuracy"
                )["value"] == pytest.approx((soft == decided["human.preference"]).mean())
    again = pairwise_json(str(pairs), "--human", "human.preference", "--bootstrap", "100",
                          "--seed", "3")
    assert again == out


def test_text_table_ceiling_by_and_compare(pairs):
    proc = run_cli("meta-eval", "pairwise", str(pairs), "--human", "human.preference",
                   "--human", "human.other", "--judge", "good", "--judge", "bad", "--compare",
                   "--human-ties", "half")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "human.preference · human ties half" in text and "(human ceiling)" in text
    assert "good (cluster 1)" in text and "bad (cluster 2)" in text
    assert "% of ceiling" in text and "kappa-orders" in text
    out = pairwise_json(str(pairs), "--human", "human.preference", "--human", "human.other",
                        "--judge", "good", "--by", "category", "--human-ties", "class")
    assert {r["category"] for r in out} == {"chat", "code", "(macro)"}
    ceiling = [r for r in out if r["metric"] == "(human ceiling)"]
    assert {r["statistic"] for r in ceiling} == {"accuracy", "kappa"}
    assert all(len(r["per_rater"]) == 2 for r in ceiling)
    assert all("ceiling_fraction" in r for r in out
               if r["metric"] == "good" and r["human"] is not None)


def write(tmp_path: Path, text: str, name: str = "pairs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("text", "args", "message"), [
    ("item,system_b,human.p,j\n1,b,a,a\n", (), "field 'system_a'"),
    ("item,system_a,system_b,human.p,j\n1,a,,a,a\n", (), "line 2, field 'system_b'"),
    ("item,system_a,system_b,human.p,j\n1,a,b,a,a\n2,a,b,a,maybe\n", ("--judge", "j"),
     "line 3, field 'j': 'maybe' is not a verdict"),
    ("item,system_a,system_b,human.p,j.ab\n1,a,b,a,a\n2,a,b,a,1.5\n", ("--judge", "j"),
     "line 3, field 'j.ab': '1.5' is not a verdict"),
    ("item,system_a,system_b,human.p,j\n1,a,b,a,0.2\n2,a,b,a,1.5\n", ("--judge", "j"),
     "line 3, field 'j': 1.5 is not a verdict"),
    ("item,system_a,system_b,human.p,j\n1,a,b,a,a\n2,a,b,-1,b\n", (),
     "line 3, field 'human.p'"),
    ("item,system_a,system_b,human.p,j\n1,a,b,a,a\n", ("--judge", "k"), "field 'k'"),
    ("item,system_a,system_b,human.q,j\n1,a,b,a,a\n", (), "field 'human.p'"),
    ("item,system,human.p,m\n1,s,0.5,0.2\n", (), "wide scores table"),
    ("item,system_a,system_b,human.p,j\n1,a,b,a,a\n", ("--by", "category"),
     "field 'category'"),
])
def test_bad_input_exits_2_naming_where(tmp_path, text, args, message):
    path = write(tmp_path, text)
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.p", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and str(path) in proc.stderr
    assert proc.stdout == ""


def test_numeric_meta_eval_of_a_pairwise_table_says_use_pairwise(tmp_path):
    path = write(tmp_path, "item,system,m,human.p\n1,gpt vs claude,0.3,1\n2,a vs b,0.2,0\n")
    proc = run_cli("meta-eval", str(path), "--human", "human.p")
    assert proc.returncode == 2
    assert "meta-eval pairwise" in proc.stderr and "field 'system'" in proc.stderr
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.p", "--metric", "m")
    assert proc.returncode == 2 and "No such option '--metric'" in proc.stderr
    proc = run_cli("meta-eval", str(path), "--human", "human.p", "--judge", "m")
    assert proc.returncode == 2 and "No such option '--judge'" in proc.stderr


def test_jsonl_soft_preferences_compare_by_category_and_text_cis(tmp_path):
    rng = np.random.default_rng(4)
    lines = []
    for k in range(120):
        p = float(rng.choice([0.1, 0.3, 0.5, 0.7, 0.9]))  # AlpacaEval-style soft preference
        gold = "a" if p > 0.5 else "b" if p < 0.5 else "tie"
        wrong = {"a": "b", "b": "a", "tie": "a"}[gold]
        lines.append(json.dumps({
            "item": k // 3, "system_a": "x", "system_b": "y", "category": f"c{k % 2}",
            "human.pref": p, "sharp.ab": gold if rng.random() < 0.95 else wrong,
            "sharp.ba": gold if rng.random() < 0.95 else wrong,
            "blunt": gold if rng.random() < 0.55 else wrong}))
    path = write(tmp_path, "\n".join(lines) + "\n", "pairs.jsonl")
    out = pairwise_json(str(path), "--human", "human.pref", "--by", "category", "--compare")
    clusters = {r["metric"]: r["cluster"] for r in out if "cluster" in r}
    assert clusters == {"sharp": 1, "blunt": 2}
    assert all(r["category"] == "(macro)" for r in out if "cluster" in r)
    frame = pd.read_json(path, lines=True)
    hard = np.where(frame["human.pref"] > 0.5, "a", np.where(frame["human.pref"] < 0.5, "b",
                                                              "tie"))
    for c in ("c0", "c1"):
        keep = (frame["category"] == c).to_numpy() & (hard != "tie")
        row = next(r for r in out if r["metric"] == "blunt" and r["category"] == c
                   and r["statistic"] == "accuracy")
        assert row["value"] == pytest.approx((frame["blunt"][keep] == hard[keep]).mean())
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.pref",
                   "--bootstrap", "50")
    assert proc.returncode == 0, proc.stderr
    assert "human.pref · human ties drop" in proc.stdout and "[" in proc.stdout
    bad = write(tmp_path, json.dumps({"item": 1, "system_a": "x", "system_b": "y",
                                      "human.pref": True, "j": "a"}) + "\n", "bad.jsonl")
    proc = run_cli("meta-eval", "pairwise", str(bad), "--human", "human.pref")
    assert proc.returncode == 2 and "line 1, field 'human.pref'" in proc.stderr
