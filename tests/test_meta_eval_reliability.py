"""Calibration of probabilistic judges: Brier score, ECE (equal-width and equal-mass bins),
the reliability curve, and the command path (issue 15, part 1).

References: scikit-learn's brier_score_loss and calibration_curve, and small cases computed
by hand (with exact fractions).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from meta_eval import evaluate, significance_clusters
from meta_eval.reliability import (
    bin_index,
    brier_score,
    ece_groups,
    expected_calibration_error,
    preference_labels,
    reliability_curve,
)


def labelled(seed: int, items: int = 25, systems: int = 8, holes: float = 0.1):
    rng = np.random.default_rng(seed)
    truth = rng.random((items, systems))
    labels = (rng.random((items, systems)) < truth).astype(float)
    probs = np.clip(truth + rng.normal(size=truth.shape) * 0.15, 0, 1)
    probs = np.round(probs, 1) if seed % 2 else probs  # ties, and values on bin edges
    probs[rng.random(probs.shape) < holes] = np.nan
    labels[rng.random(labels.shape) < holes / 2] = np.nan
    return labels, probs


def close(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def sk_brier(y: np.ndarray, p: np.ndarray) -> float:
    ok = np.isfinite(y) & np.isfinite(p)
    return float(brier_score_loss(y[ok], p[ok])) if ok.any() else math.nan


@pytest.mark.parametrize("seed", range(6))
def test_brier_matches_sklearn_at_every_grouping(seed):
    y, p = labelled(seed)
    assert close(evaluate("brier", human=y, metric=p).value, sk_brier(y.ravel(), p.ravel()))
    for grouping, axis in (("item", 0), ("system", 1)):
        per = [sk_brier(np.take(y, g, axis), np.take(p, g, axis)) for g in range(y.shape[axis])]
        assert close(evaluate("brier", human=y, metric=p, grouping=grouping).value,
                     float(np.nanmean(per)))
    assert close(brier_score(human=y, metric=p).value, sk_brier(y.ravel(), p.ravel()))


def test_ece_equal_width_by_hand():
    # bins of width 0.5 (B = 2): [0, .5) holds .1, .2, .3 (labels 0, 1, 0); [.5, 1] holds
    # .5, .8, 1.0 (labels 1, 1, 0).
    p = np.array([0.1, 0.2, 0.3, 0.5, 0.8, 1.0])
    y = np.array([0, 1, 0, 1, 1, 0.0])
    low = abs(Fraction(1, 3) - Fraction(6, 30))      # |mean y - mean p| in [0, .5)
    high = abs(Fraction(2, 3) - Fraction(23, 30))    # in [.5, 1]
    want = float(Fraction(3, 6) * low + Fraction(3, 6) * high)
    got = expected_calibration_error(human=y, metric=p, bins=2)
    assert got.value == pytest.approx(want, rel=1e-15) and got.n == 6
    # ten bins: edges at b/10, p = 0.3 is in [0.3, 0.4), 1.0 in the last bin, 0 in the first
    assert list(bin_index(np.array([0.0, 0.3, 0.29999, 0.7, 0.95, 1.0]))) == [0, 3, 2, 7, 9, 9]


def test_ece_equal_mass_by_hand():
    # n = 6, B = 3: bins by #{q < p}: .1 -> 0, .2 -> 0, .2 -> 0 (#{q < .2} = 1, floor(3/6)),
    # .4 -> floor(9/6) = 1, .6 -> floor(12/6) = 2, .9 -> 2. A tie never straddles two bins.
    p = np.array([0.6, 0.2, 0.1, 0.9, 0.2, 0.4])
    y = np.array([1, 0, 0, 1, 1, 0.0])
    assert list(bin_index(p, bins=3, binning="mass")) == [2, 0, 0, 2, 0, 1]
    bins: list[tuple[list[float], list[int]]] = [([0.2, 0.1, 0.2], [0, 0, 1]), ([0.4], [0]),
                                                 ([0.6, 0.9], [1, 1])]
    want = sum(Fraction(len(b[0]), 6) * abs(sum(map(Fraction, b[1]), Fraction(0)) / len(b[1])
                                             - sum(map(Fraction, b[0]), Fraction(0)) / len(b[0]))
               for b in bins)
    got = expected_calibration_error(human=y, metric=p, bins=3, binning="mass")
    assert got.value == pytest.approx(float(want), rel=1e-14)
    assert evaluate("ece-mass", human=y[None], metric=p[None]).value == pytest.approx(
        float(ece_groups(human=y[None], metric=p[None], binning="mass")[0]))
    # the order of the units does not matter, ties included
    order = np.random.default_rng(0).permutation(6)
    again = expected_calibration_error(human=y[order], metric=p[order], bins=3, binning="mass")
    assert again.value == got.value


@pytest.mark.parametrize("seed", [0, 2, 4])
def test_ece_equal_width_matches_sklearn_calibration_curve(seed):
    # continuous probabilities (no value on an edge, where sklearn's linspace edges differ
    # from b/B in the last bit)
    y, p = labelled(seed, holes=0.0)
    y, p = y.ravel(), p.ravel()
    p = np.clip(p, 1e-6, 1 - 1e-6)
    freq, mean_p = calibration_curve(y, p, n_bins=10, strategy="uniform")
    counts = np.bincount(np.minimum((p * 10).astype(int), 9), minlength=10)
    counts = counts[counts > 0]
    want = float(np.sum(counts / p.size * np.abs(freq - mean_p)))
    assert close(evaluate("ece", human=y[None], metric=p[None]).value, want)
    curve = reliability_curve(human=y, metric=p)
    assert np.allclose(curve.frequency, freq, rtol=0, atol=1e-12)
    assert np.allclose(curve.mean_probability, mean_p, rtol=0, atol=1e-12)
    assert sum(curve.count) == curve.n == p.size
    assert close(curve.ece, want) and close(curve.brier, sk_brier(y, p))


def test_perfectly_calibrated_bins_have_zero_ece():
    p = np.repeat([0.25, 0.75], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0.0])
    assert evaluate("ece", human=y[None], metric=p[None]).value == 0.0
    assert evaluate("ece-mass", human=y[None], metric=p[None]).value == 0.0


def test_lower_brier_ranks_first_with_ci():
    y, p = labelled(0, items=60, holes=0.0)
    noisy = np.clip(p + np.random.default_rng(1).normal(size=p.shape) * 0.4, 0, 1)
    ranking = significance_clusters("brier", human=y, metrics={"noisy": noisy, "good": p},
                                    resamples=300, seed=0)
    assert [m.metric for m in ranking.metrics] == ["good", "noisy"]
    assert ranking.metrics[1].cluster == 2
    r = evaluate("ece", human=y, metric=p, bootstrap=200, seed=3)
    assert r.ci_low is not None and r.ci_high is not None
    assert r.ci_low <= r.value <= r.ci_high


def test_out_of_range_inputs_are_errors():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        evaluate("brier", human=np.array([[1.0, 0.0]]), metric=np.array([[1.2, 0.0]]))
    with pytest.raises(ValueError, match="0 or 1"):
        evaluate("ece", human=np.array([[0.5, 0.0]]), metric=np.array([[0.2, 0.1]]))
    with pytest.raises(ValueError, match="segment-level"):
        evaluate("ece", human=np.array([[1.0, 0.0]]), metric=np.array([[0.2, 0.1]]),
                 level="system")


def test_preference_labels_for_pairwise_judges():
    got = preference_labels(["a", "B", "tie", None, 1, 0.0, ""])
    assert list(got[:2]) == [1.0, 0.0] and np.isnan(got[2:4]).all() and list(got[4:6]) == [1, 0]
    with pytest.raises(ValueError, match="unknown preference"):
        preference_labels(["x"])
    # a soft pairwise judge (P(A is better)) against people's a/b
    soft = np.array([0.9, 0.2, 0.6, 0.5])
    labels = preference_labels(["a", "b", "b", "tie"])
    assert brier_score(human=labels, metric=soft).value == pytest.approx(
        (0.01 + 0.04 + 0.36) / 3)


def write(path: Path, labels: np.ndarray, probs: np.ndarray) -> Path:
    items, systems = labels.shape
    pd.DataFrame({"item": np.repeat([f"i{i}" for i in range(items)], systems),
                  "system": np.tile([f"s{s}" for s in range(systems)], items),
                  "human.good": labels.ravel(), "judge.p": probs.ravel()}).to_csv(path,
                                                                                   index=False)
    return path


def test_cli_brier_and_ece(tmp_path):
    y, p = labelled(3, holes=0.0)
    path = write(tmp_path / "p.csv", y, p)
    proc = run_cli("meta-eval", str(path), "--human", "human.good", "--statistic", "brier",
                   "--statistic", "ece", "--statistic", "ece-mass", "--bootstrap", "100",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    by = {r["statistic"]: r for r in json.loads(proc.stdout)}
    assert close(by["brier"]["value"], sk_brier(y.ravel(), p.ravel()))
    assert close(by["ece"]["value"],
                 expected_calibration_error(human=y.ravel(), metric=p.ravel()).value)
    assert by["ece"]["better"] == "lower" and by["brier"]["ci_low"] <= by["brier"]["value"]


def test_cli_names_the_row_of_a_bad_probability_or_label(tmp_path):
    y, p = labelled(5, holes=0.0)
    bad_p = p.copy()
    bad_p[1, 2] = 1.5
    proc = run_cli("meta-eval", str(write(tmp_path / "a.csv", y, bad_p)), "--human",
                   "human.good", "--statistic", "brier")
    line = 2 + 1 * y.shape[1] + 2
    assert proc.returncode == 2
    assert f"line {line}" in proc.stderr and "'judge.p'" in proc.stderr and "1.5" in proc.stderr
    bad_y = y.copy()
    bad_y[0, 3] = 4.0
    proc = run_cli("meta-eval", str(write(tmp_path / "b.csv", bad_y, p)), "--human",
                   "human.good", "--statistic", "ece")
    assert proc.returncode == 2
    assert "line 5" in proc.stderr and "'human.good'" in proc.stderr and "0 or 1" in proc.stderr
