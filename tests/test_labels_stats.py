"""`labels stats` against independent implementations, on random labels with ties, missing
labels, statuses and extreme magnitudes: Krippendorff's alpha against the `krippendorff`
package, Cohen's kappa against scikit-learn, Fleiss' kappa against statsmodels, the judges'
correlations against scipy, accuracy/TPR/TNR/confusion against direct counts and
scikit-learn, the Wilson interval against statsmodels."""

from __future__ import annotations

import itertools
import math
import warnings
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohen
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
from statsmodels.stats.proportion import proportion_confint

from judgebench.engine import labels as L
from judgebench.services.label_stats import label_stats
from meta_eval.agreement import fleiss_kappa
from meta_eval.kappa_inference import fleiss_kappa_inference
from meta_eval.proportions import wilson_interval

ANNOTATORS = ("ann", "bob", "cy", "dee")


def _random_labels(store: Path, crit: L.Criterion, values: list[Any], seed: int,
                   keys: int = 40, coverage: float = 0.7) -> dict[str, dict[Any, float]]:
    """Each annotator answers a random 70% of `keys` keys (a few more `cant_tell`), values
    drawn from `values`, with an annotator copying another's answer half the time (so the
    agreement is not only chance); what each answered, as stored."""
    rng = np.random.default_rng(seed)
    system: Any = ("s", "t") if crit.pairwise else "s"
    truth = [values[i] for i in rng.integers(0, len(values), keys)]
    batch: list[L.NewLabel] = []
    answered: dict[str, dict[Any, float]] = {a: {} for a in ANNOTATORS}
    for a in ANNOTATORS:
        for k in range(keys):
            draw = rng.random()
            if draw > coverage + 0.05:
                continue
            key = (f"i{k:03d}", system)
            if draw > coverage:
                batch.append(L.NewLabel(crit.name, a, key[0], system, status="cant_tell"))
                continue
            value = truth[k] if rng.random() < 0.5 else values[rng.integers(0, len(values))]
            batch.append(L.NewLabel(crit.name, a, key[0], system, value))
            answered[a][key] = crit.value_of(value)
    L.save_labels(store, batch)
    return answered


def _matrix(answered: dict[str, dict[Any, float]]) -> tuple[list[Any], np.ndarray]:
    keys = sorted({k for cells in answered.values() for k in cells}, key=repr)
    return keys, np.array([[answered[a].get(k, np.nan) for k in keys] for a in ANNOTATORS])


CASES = [
    ("scale", {"low": 1, "high": 5}, [1, 2, 3, 4, 5], "interval"),
    ("scale", {"low": 1, "high": 5}, [1, 2, 3, 4, 5], "ordinal"),
    ("scale", {"low": 0, "high": 1, "step": 0.25}, [0, 0.25, 0.5, 0.75, 1], "interval"),
    ("binary", {}, [0, 1], "nominal"),
    ("choices", {"choices": ["calm", "rude", "odd"]}, ["calm", "rude", "odd"], "nominal"),
    ("pairwise", {}, ["a", "b", "tie"], "nominal"),
]


@pytest.mark.parametrize(("kind", "options", "values", "level"), CASES,
                         ids=[f"{c[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("seed", [0, 1])
def test_agreement_equals_krippendorff_sklearn_and_statsmodels(
        tmp_path: Path, kind: str, options: dict, values: list, level: str, seed: int) -> None:
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind=kind, **options)
    answered = _random_labels(store, crit, values, seed)
    result = label_stats(store, scale_level=level if kind == "scale" else "interval",
                         bootstrap=0)
    (stats,) = result.criteria
    _keys, matrix = _matrix(answered)
    codes = matrix * 2 if kind == "pairwise" else \
        np.round((matrix - options.get("low", 0)) / options.get("step", 1)) \
        if kind == "scale" else matrix
    expected_alpha = krippendorff.alpha(reliability_data=codes if level == "nominal"
                                        else matrix,
                                        level_of_measurement=level)  # type: ignore[arg-type]
    assert stats.level == level
    assert stats.alpha.value == pytest.approx(expected_alpha, rel=1e-9, abs=1e-12)
    counts = np.isfinite(matrix).sum(axis=0)
    assert stats.coverage == {"1": int((counts == 1).sum()), "2": int((counts == 2).sum()),
                              "3+": int((counts >= 3).sum())}
    assert stats.annotators == {a: len(answered[a]) for a in ANNOTATORS}
    assert stats.statuses["cant_tell"] > 0
    pairs = {(k["a"], k["b"]): k for k in stats.kappas}
    assert len(pairs) == 6
    for (i, a), (j, b) in itertools.combinations(enumerate(ANNOTATORS), 2):
        both = np.isfinite(codes[i]) & np.isfinite(codes[j])
        x, y = codes[i][both].astype(int), codes[j][both].astype(int)
        if kind == "scale":
            lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
            expected = cohen_kappa_score(x, y, weights="quadratic",
                                         labels=list(range(lo, hi + 1)))
        else:
            expected = cohen_kappa_score(x, y)
        assert pairs[(a, b)]["value"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert pairs[(a, b)]["n"] == int(both.sum())
        lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
        table = np.zeros((hi - lo + 1, hi - lo + 1))
        np.add.at(table, (x - lo, y - lo), 1.0)
        ref = sm_cohen(table, weights=np.arange(hi - lo + 1), wt="quadratic") \
            if kind == "scale" else sm_cohen(table)
        analytic = pairs[(a, b)]["analytic"]
        assert analytic["se"] == pytest.approx(ref["std_kappa"], rel=1e-9, abs=1e-12)
        assert analytic["p_value"] == pytest.approx(ref["pvalue_two_sided"], rel=1e-9,
                                                    abs=1e-12)
        assert (analytic["low"], analytic["high"]) == pytest.approx(
            (ref["kappa_low"], ref["kappa_upp"]), rel=1e-9, abs=1e-12)
    complete = codes[:, np.isfinite(codes).all(axis=0)]
    table, _ = aggregate_raters(complete.T.astype(int))
    assert stats.fleiss is not None and stats.fleiss.n == complete.shape[1] > 0
    assert stats.fleiss.value == pytest.approx(sm_fleiss(table), rel=1e-9, abs=1e-12)
    assert stats.fleiss.analytic is not None
    assert stats.fleiss.analytic["z"] == pytest.approx(
        fleiss_kappa_inference(ratings=complete).extra["z"], rel=1e-12)
    assert stats.ceiling is not None
    if kind == "scale":  # each annotator against the mean of the others, averaged
        direct = []
        for r in range(len(ANNOTATORS)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # a key only r answered
                others = np.nanmean(np.delete(matrix, r, axis=0), axis=0)
            ok = np.isfinite(others) & np.isfinite(matrix[r])
            direct.append(sps.pearsonr(matrix[r][ok], others[ok])[0])
        assert stats.ceiling["value"] == pytest.approx(np.mean(direct), rel=1e-9)
    else:  # alpha with every annotator as a coder; per annotator: alpha without them
        assert stats.ceiling["value"] == pytest.approx(expected_alpha, rel=1e-9)
        assert stats.ceiling["per_annotator"] == pytest.approx(
            [krippendorff.alpha(reliability_data=np.delete(codes, r, axis=0),
                                level_of_measurement="nominal") for r in range(4)], rel=1e-9)
    assert stats.signature.startswith("labels.stats@1|criterion:c|alpha:")


@pytest.mark.parametrize("scale", [1e-200, 1e200])
def test_interval_alpha_is_right_at_extreme_magnitudes(tmp_path: Path, scale: float) -> None:
    """A scale of any value between its ends, from 1e-200 wide to 1e+200: squared
    differences would underflow or overflow; alpha is the package's on the unit scale."""
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind="scale", low=0, high=scale, step=None)
    rng = np.random.default_rng(5)
    unit = [float(v) for v in rng.choice([0.0, 0.25, 0.5, 0.625, 1.0], size=8)]
    answered = _random_labels(store, crit, [v * scale for v in unit], seed=3)
    (stats,) = label_stats(store, bootstrap=0).criteria
    _, matrix = _matrix(answered)
    expected = krippendorff.alpha(reliability_data=matrix / scale,
                                  level_of_measurement="interval")
    assert stats.alpha.value == pytest.approx(expected, rel=1e-9)
    assert all(k["value"] is None for k in stats.kappas), "no steps: no categories to kappa"
    assert stats.fleiss is None


def test_fleiss_kappa_kernel_matches_statsmodels_and_its_edges() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        ratings = rng.integers(0, 4, size=(int(rng.integers(2, 6)), 30)).astype(float)
        ratings[rng.random(ratings.shape) < 0.1] = np.nan
        complete = ratings[:, np.isfinite(ratings).all(axis=0)]
        table, _ = aggregate_raters(complete.T.astype(int))
        found = fleiss_kappa(ratings=ratings)
        assert found.n == complete.shape[1]
        assert found.value == pytest.approx(sm_fleiss(table), rel=1e-12, abs=1e-12)
    assert math.isnan(fleiss_kappa(ratings=np.ones((3, 5))).value)  # one category
    assert math.isnan(fleiss_kappa(ratings=np.array([[1.0, np.nan], [np.nan, 2.0]])).value)
    assert math.isnan(fleiss_kappa(ratings=np.array([[1.0, 2.0]])).value)  # one rater


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 10), (10, 10), (3, 7), (499, 1000),
                                      (1, 10**9)])
def test_wilson_interval_matches_statsmodels(k: int, n: int) -> None:
    for confidence in (0.5, 0.9, 0.95, 0.999):
        low, high = wilson_interval(successes=k, n=n, confidence=confidence) or (0, 0)
        expected = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
        assert (low, high) == pytest.approx(expected, rel=1e-10, abs=1e-15)
        assert 0 <= low <= k / n <= high <= 1
    assert wilson_interval(successes=0, n=0) is None


def _scores(path: Path, rows: list[dict]) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_a_binary_judge_against_the_majority_equals_direct_counts(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    L.define_criterion(store, "ok", kind="binary")
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 2, 60)
    batch = []
    for k in range(60):
        for a in ("ann", "bob", "cy")[: 1 + k % 3]:  # 1, 2 (may split) or 3 annotators
            value = int(truth[k]) if rng.random() < 0.8 else 1 - int(truth[k])
            batch.append(L.NewLabel("ok", a, f"i{k}", "s", value))
    L.save_labels(store, batch)
    score = rng.random(60)
    judge = np.where(rng.random(60) < 0.75, truth, 1 - truth)
    rows = [{"item": f"i{k}", "system": "s", "judge": int(judge[k]), "prob": score[k]}
            for k in range(60)]
    rows.append({"item": "unlabelled", "system": "s", "judge": 1, "prob": 0.5})
    table = _scores(tmp_path / "scores.csv", rows)
    (stats,) = label_stats(store, scores=table, judges=["judge"], bootstrap=200).criteria
    (j,) = stats.judges
    votes: dict[int, list[int]] = {}
    for lab in L.current_labels(store):
        votes.setdefault(int(lab.item[1:]), []).append(int(lab.value or 0))
    ref = {k: round(np.mean(v)) for k, v in votes.items() if np.mean(v) != 0.5}
    split = sum(1 for v in votes.values() if np.mean(v) == 0.5)
    keys = sorted(ref)
    h, m = np.array([ref[k] for k in keys]), judge[keys]
    assert (j.n, j.split) == (len(keys), split) and split > 0
    by = {e.statistic: e for e in j.statistics}
    assert by["accuracy"].value == pytest.approx((h == m).mean(), rel=1e-12)
    assert (by["accuracy"].low, by["accuracy"].high) == pytest.approx(proportion_confint(
        int((h == m).sum()), len(keys), alpha=0.05, method="wilson"), rel=1e-10)
    assert by["tpr"].value == pytest.approx((m[h == 1] == 1).mean(), rel=1e-12)
    assert by["tnr"].value == pytest.approx((m[h == 0] == 0).mean(), rel=1e-12)
    assert by["tpr"].n == int((h == 1).sum()) and by["tnr"].n == int((h == 0).sum())
    assert by["kappa"].value == pytest.approx(cohen_kappa_score(h, m), rel=1e-12)
    kappa_low, kappa = by["kappa"].low, by["kappa"].value
    assert kappa_low is not None and kappa is not None and kappa_low < kappa
    assert j.confusion is not None
    assert j.confusion["counts"] == confusion_matrix(h, m, labels=[0, 1]).T.tolist()
    # a score column needs --threshold: score >= T is 1
    with pytest.raises(Exception, match="--threshold"):
        label_stats(store, scores=table, judges=["prob"], bootstrap=0)
    (stats,) = label_stats(store, scores=table, judges=["prob"], threshold=0.5,
                           bootstrap=0).criteria
    cut = (score[keys] >= 0.5).astype(int)
    assert stats.judges[0].statistics[0].value == pytest.approx((h == cut).mean())
    assert "threshold:0.5" in stats.judges[0].signature


def test_a_scale_judge_against_the_mean_equals_scipy(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    L.define_criterion(store, "q", kind="scale", low=1, high=5)
    rng = np.random.default_rng(4)
    batch = [L.NewLabel("q", a, f"i{k}", f"s{k % 3}", int(rng.integers(1, 6)))
             for k in range(45) for a in ("ann", "bob") if rng.random() < 0.8]
    L.save_labels(store, batch)
    judge = rng.normal(size=45) * 1e-150  # tiny magnitudes, ties by repetition
    judge[::7] = judge[0]
    table = _scores(tmp_path / "scores.csv",
                    [{"item": f"i{k}", "system": f"s{k % 3}", "j": judge[k]}
                     for k in range(45)])
    (stats,) = label_stats(store, scores=table, bootstrap=100, seed=1).criteria
    (j,) = stats.judges
    means: dict[int, list[float]] = {}
    for lab in L.current_labels(store):
        means.setdefault(int(lab.item[1:]), []).append(float(lab.value or 0))
    keys = sorted(means)
    h = np.array([np.mean(means[k]) for k in keys])
    m = judge[keys]
    by = {e.statistic: e for e in j.statistics}
    assert by["pearson"].value == pytest.approx(sps.pearsonr(h, m)[0], rel=1e-9)
    assert by["spearman"].value == pytest.approx(sps.spearmanr(h, m)[0], rel=1e-9)
    assert by["kendall"].value == pytest.approx(sps.kendalltau(h, m)[0], rel=1e-9)
    for e in j.statistics:
        assert e.n == len(keys) and e.low is not None and e.high is not None
        assert e.value is not None and e.low <= e.value <= e.high


def test_a_pairwise_judge_is_read_in_either_order(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    L.define_criterion(store, "pref", kind="pairwise")
    L.save_labels(store, [L.NewLabel("pref", "ann", "i1", ("x", "y"), "a"),
                          L.NewLabel("pref", "ann", "i2", ("x", "y"), "b"),
                          L.NewLabel("pref", "ann", "i3", ("y", "x"), "tie"),
                          L.NewLabel("pref", "ann", "i4", ("x", "y"), "a")])
    table = _scores(tmp_path / "pairs.csv", [
        {"item": "i1", "system_a": "y", "system_b": "x", "v": "b"},  # the same verdict
        {"item": "i2", "system_a": "x", "system_b": "y", "v": "b"},
        {"item": "i3", "system_a": "x", "system_b": "y", "v": 0.5},
        {"item": "i4", "system_a": "x", "system_b": "y", "v": 0.2}])  # b: wrong
    (stats,) = label_stats(store, scores=table, bootstrap=0).criteria
    (j,) = stats.judges
    assert (j.judge, j.n) == ("v", 4)
    assert j.statistics[0].statistic == "accuracy" and j.statistics[0].value == 0.75


def test_the_command_prints_text_and_json_with_signatures(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind="scale", low=1, high=5)
    _random_labels(store, crit, [1, 2, 3, 4, 5], seed=0)
    proc = run_cli("labels", "stats", "--store", str(store), "--bootstrap", "50")
    assert proc.returncode == 0, proc.stderr
    assert "Krippendorff's alpha at the interval level" in proc.stdout
    assert "Fleiss' kappa" in proc.stdout and "labels.stats@1|criterion:c" in proc.stdout
    proc = run_cli("labels", "stats", "--store", str(store), "--bootstrap", "0", "-f", "json",
                   "--scale-level", "ordinal")
    assert proc.returncode == 0, proc.stderr
    import json

    data = json.loads(proc.stdout)
    assert data["criteria"][0]["level"] == "ordinal"
    assert data["criteria"][0]["alpha"]["statistic"] == "krippendorff-ordinal"
    proc = run_cli("labels", "stats", "--store", str(store), "--criterion", "nope")
    assert proc.returncode == 2 and "no criterion 'nope'" in proc.stderr


def test_a_tiny_fleiss_p_prints_its_digits_not_zero(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind="binary")
    batch = [L.NewLabel(crit.name, a, f"i{k:03d}", "s", k % 2)
             for a in ANNOTATORS for k in range(60)]  # all agree: z large, p ~ 1e-40
    L.save_labels(store, batch)
    proc = run_cli("labels", "stats", "--store", str(store), "--bootstrap", "0")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines() if "Fleiss' kappa:" in x)
    p_text = line.split(", p ")[1].split(":")[0]
    assert float(p_text) > 0 and "e-" in p_text, line
