"""The alternative-annotator test (Calderon, Reichart and Dror, ACL 2025) against an
implementation written here from the paper's algorithm (dicts of annotations, scipy's
one-sided `ttest_1samp`, Benjamini-Yekutieli by its definition), on simulated annotators with
known noise, categorical and numeric; and `meta-eval --alt-test` end to end."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

from judgebench.cli import cli
from meta_eval.alt_test import alt_test, benjamini_yekutieli


def paper_alt_test(llm: dict, humans: dict, score: str, epsilon: float, q: float,
                   min_items: int = 30) -> tuple[float, float, list[float]]:
    """The paper's procedure, step by step on dicts: (winning rate, advantage probability,
    the p-values)."""
    def align(pred, anns):
        if score == "accuracy":
            return float(np.mean([pred == a for a in anns]))
        return -math.sqrt(float(np.mean([(pred - a) ** 2 for a in anns])))

    by_item: dict = {}
    for h, anns in humans.items():
        for i in anns:
            by_item.setdefault(i, []).append(h)
    keep = {i for i, hs in by_item.items() if len(hs) >= 2 and i in llm}
    p_values, rhos = [], []
    for h, anns in humans.items():
        items = [i for i in anns if i in keep]
        if len(items) < min_items:
            continue
        d, wins = [], []
        for i in items:
            rest = [humans[k][i] for k in by_item[i] if k != h]
            s_h, s_f = align(anns[i], rest), align(llm[i], rest)
            wins.append(s_f >= s_h)
            d.append(float(s_h >= s_f) - float(s_f >= s_h))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = scipy.stats.ttest_1samp(d, epsilon, alternative="less").pvalue
        if np.isnan(p):  # constant d: the t statistic is -inf or +inf
            p = 0.0 if np.mean(d) < epsilon else 1.0
        p_values.append(float(p))
        rhos.append(float(np.mean(wins)))
    m = len(p_values)
    harmonic = sum(1 / k for k in range(1, m + 1))
    ranked = sorted(range(m), key=lambda k: p_values[k])
    k_max = 0
    for rank, k in enumerate(ranked, start=1):
        if p_values[k] <= rank / m * q / harmonic:
            k_max = rank
    return k_max / m, float(np.mean(rhos)), p_values


def simulate(rng, n: int, m: int, *, categorical: bool, human_noise: float,
             judge_noise: float, coverage: float = 1.0):
    """Items with a true label; each annotator (and the judge) reports it or, with
    probability `noise` (categorical) / with Gaussian noise of that sd rounded to 1..5
    (numeric), something else. Cells outside `coverage` are unlabelled."""
    truth = rng.integers(0, 4, n) if categorical else rng.integers(1, 6, n)

    def noisy(noise):
        if categorical:
            other = rng.integers(0, 4, n)
            return np.where(rng.random(n) < noise, other, truth).astype(float)
        return np.clip(np.round(truth + rng.normal(0, noise, n)), 1, 5)

    humans = np.column_stack([noisy(human_noise) for _ in range(m)])
    humans[rng.random((n, m)) > coverage] = np.nan
    return humans, noisy(judge_noise)


def as_dicts(humans, judge):
    h = {f"h{j}": {i: humans[i, j] for i in range(humans.shape[0])
                   if np.isfinite(humans[i, j])} for j in range(humans.shape[1])}
    return h, {i: judge[i] for i in range(judge.size) if np.isfinite(judge[i])}


@pytest.mark.parametrize("categorical", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_matches_the_papers_procedure(categorical, seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 7))
    humans, judge = simulate(rng, int(rng.integers(30, 120)), m, categorical=categorical,
                             human_noise=float(rng.uniform(0.1, 0.6)) * (1 if categorical
                                                                         else 2),
                             judge_noise=float(rng.uniform(0.05, 0.6)) * (1 if categorical
                                                                          else 2),
                             coverage=float(rng.uniform(0.6, 1.0)))
    judge[rng.random(judge.size) < 0.05] = np.nan  # failed judge cells
    epsilon = float(rng.choice([0.0, 0.1, 0.15, 0.2]))
    score = "accuracy" if categorical else "neg-rmse"
    ours = alt_test(humans=humans, judge=judge, epsilon=epsilon, score=score, alpha=0.05,
                    min_items=20)
    wr, ap, p_values = paper_alt_test(*reversed(as_dicts(humans, judge)), score, epsilon,
                                      0.05, min_items=20)
    assert ours.winning_rate == pytest.approx(wr, abs=0)
    assert ours.advantage_probability == pytest.approx(ap, rel=1e-12)
    np.testing.assert_allclose([t.p_value for t in ours.annotators], p_values, rtol=1e-9,
                               atol=1e-300)


def test_known_noise_decides_who_passes():
    """A judge far more accurate than noisy annotators replaces them; one that guesses does
    not; an annotator-like judge has advantage near 1/2 plus the ties."""
    rng = np.random.default_rng(7)
    humans, good = simulate(rng, 200, 4, categorical=True, human_noise=0.5, judge_noise=0.05)
    bad = rng.integers(0, 4, 200).astype(float)
    strong = alt_test(humans=humans, judge=good, epsilon=0.1)
    weak = alt_test(humans=humans, judge=bad, epsilon=0.1)
    assert strong.winning_rate == 1.0 and strong.passed
    assert weak.winning_rate == 0.0 and not weak.passed
    assert strong.advantage_probability > weak.advantage_probability


def test_benjamini_yekutieli_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(200):
        m = int(rng.integers(1, 9))
        p = rng.random(m) * float(rng.choice([0.02, 0.1, 1.0]))
        p = np.round(p, 3)  # ties
        harmonic = sum(1 / k for k in range(1, m + 1))
        expected = np.zeros(m, bool)
        for k in range(m, 0, -1):  # largest k whose k-th smallest p passes
            if np.sort(p)[k - 1] <= k / m * 0.05 / harmonic:
                expected = p <= np.sort(p)[k - 1]
                break
        got = benjamini_yekutieli(p, 0.05)
        assert got.sum() == expected.sum()
        assert set(p[got]) == set(p[expected])


def test_annotator_with_few_items_is_skipped():
    rng = np.random.default_rng(1)
    humans, judge = simulate(rng, 40, 3, categorical=True, human_noise=0.3, judge_noise=0.3)
    humans[10:, 2] = np.nan
    out = alt_test(humans=humans, judge=judge, epsilon=0.2, names=["a", "b", "c"])
    assert [t.annotator for t in out.annotators] == ["a", "b"]
    assert out.skipped == {"c": "10 items, fewer than 30"}


def _table(tmp_path: Path, *, categorical: bool) -> Path:
    rng = np.random.default_rng(11)
    humans, good = simulate(rng, 80, 3, categorical=categorical, human_noise=0.4 if
                            categorical else 1.0, judge_noise=0.05 if categorical else 0.2)
    bad = rng.integers(0, 4, 80).astype(float) if categorical else rng.integers(1, 6, 80)
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(80)], "system": "s",
                          "judge.good": good, "judge.bad": bad,
                          **{f"human.a{j}": humans[:, j] for j in range(3)}})
    frame.loc[5, "human.a1"] = np.nan
    frame["judge.good"] = frame["judge.good"].astype(object)
    frame.loc[7, "judge.good"] = "failed"
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("categorical", [True, False])
def test_cli_json(tmp_path, categorical):
    path = _table(tmp_path, categorical=categorical)
    score = "accuracy" if categorical else "neg-rmse"
    result = CliRunner().invoke(cli, ["meta-eval", "alt-test", str(path), "--epsilon",
                                      "0.15", "--alt-score", score, "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = {r["metric"]: r for r in json.loads(result.stdout)}
    assert list(out) == ["judge.good", "judge.bad"]
    frame = pd.read_csv(path)
    humans = frame[["human.a0", "human.a1", "human.a2"]].to_numpy(float)
    for name, row in out.items():
        judge = pd.to_numeric(frame[name], errors="coerce").to_numpy(float)
        wr, ap, p_values = paper_alt_test(*reversed(as_dicts(humans, judge)), score, 0.15,
                                          0.05)
        assert row["alt-test-winning-rate"] == wr
        assert row["alt-test-advantage-probability"] == pytest.approx(ap, rel=1e-12)
        assert [a["p_value"] for a in row["per_annotator"]] == pytest.approx(p_values)
        assert row["n"] == (79 if name == "judge.good" else 80)
    assert out["judge.good"]["passed"] and not out["judge.bad"]["passed"]
    text = CliRunner().invoke(cli, ["meta-eval", "alt-test", str(path), "--epsilon", "0.15",
                                    "--alt-score", score], catch_exceptions=False)
    assert "judge.good  winning rate 1.00" in text.stdout


def test_cli_needs_epsilon_and_annotators(tmp_path):
    path = _table(tmp_path, categorical=True)
    result = CliRunner().invoke(cli, ["meta-eval", "alt-test", str(path)])
    assert result.exit_code == 2 and "alt-test needs --epsilon" in result.output
    result = CliRunner().invoke(cli, ["meta-eval", "alt-test", str(path), "--epsilon",
                                      "0.1", "--human", "human.a0"])
    assert result.exit_code == 2 and "two or more annotator columns" in result.output
    result = CliRunner().invoke(cli, ["meta-eval", "alt-test", str(path), "--epsilon",
                                      "0.1", "--human", "human.a0", "--human", "human.zz"])
    assert result.exit_code == 2 and "human.zz" in result.output
    result = CliRunner().invoke(cli, ["meta-eval", str(path)])
    assert result.exit_code == 2 and "--human" in result.output


def test_cli_per_criterion(tmp_path):
    """Annotators named human.<criterion>.<annotator>: one test per criterion, each against
    the paper's procedure on that criterion's annotators only."""
    rng = np.random.default_rng(12)
    columns = {}
    judges = {}
    for criterion, judge_noise in (("fluency", 0.05), ("relevance", 0.9)):
        humans, judge = simulate(rng, 60, 3, categorical=True, human_noise=0.4,
                                 judge_noise=judge_noise)
        columns |= {f"human.{criterion}.a{j}": humans[:, j] for j in range(3)}
        judges[criterion] = judge
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(60)], "system": "s",
                          "judge": judges["fluency"], **columns})
    path = tmp_path / "criteria.csv"
    frame.to_csv(path, index=False)
    result = CliRunner().invoke(cli, ["meta-eval", "alt-test", str(path), "--epsilon",
                                      "0.1", "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = {r["criterion"]: r for r in json.loads(result.stdout)}
    assert set(out) == {"fluency", "relevance"}
    for criterion, row in out.items():
        names = [f"human.{criterion}.a{j}" for j in range(3)]
        wr, ap, _ = paper_alt_test(*reversed(as_dicts(frame[names].to_numpy(float),
                                                      frame["judge"].to_numpy(float))),
                                   "accuracy", 0.1, 0.05)
        assert row["alt-test-winning-rate"] == wr
        assert row["alt-test-advantage-probability"] == pytest.approx(ap, rel=1e-12)
    assert out["fluency"]["passed"]
