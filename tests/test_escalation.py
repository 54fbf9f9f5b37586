"""meta_eval.escalation: fixed-sequence testing against scipy's binomial test and Clopper-Pearson
bound written out per candidate, the guarantee over 1,000 simulated calibrations, and the
risk-coverage curve and AUGRC against direct computations and Traub et al.'s identity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, rankdata
from sklearn.metrics import roc_auc_score

from meta_eval.escalation import (
    agreement_at,
    augrc,
    calibrate_threshold,
    risk_coverage_curve,
    smallest_testable,
)
from meta_eval.estimation import EstimationError


def direct_threshold(confidence: np.ndarray, agree: np.ndarray, alpha: float,
                     delta: float) -> float | None:
    """Fixed-sequence testing, one candidate at a time with scipy.stats.binomtest."""
    chosen = None
    for t in sorted(set(confidence.tolist()), reverse=True):
        kept = confidence >= t
        if binomtest(0, int(kept.sum()), alpha, alternative="less").pvalue > delta:
            continue  # untestable: no labels could reject it
        wrong = int((agree[kept] == 0).sum())
        test = binomtest(wrong, int(kept.sum()), alpha, alternative="less")
        upper = test.proportion_ci(confidence_level=1 - delta, method="exact").high
        assert (test.pvalue <= delta) == (upper < alpha) or abs(test.pvalue - delta) < 1e-9
        if test.pvalue > delta:
            break
        chosen = t
    return chosen


@pytest.mark.parametrize("seed", range(30))
def test_threshold_equals_direct_fixed_sequence_testing(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = int(rng.integers(50, 800))
    confidence = np.round(rng.random(items), int(rng.integers(1, 4)))  # ties
    agree = (rng.random(items) < 0.6 + 0.4 * confidence).astype(int)
    alpha, delta = float(rng.choice([0.05, 0.1, 0.2])), float(rng.choice([0.05, 0.1]))
    ours = calibrate_threshold(confidence=confidence, agree=agree, alpha=alpha, delta=delta)
    expected = direct_threshold(confidence, agree, alpha, delta)
    assert ours.threshold == expected
    if expected is not None:
        kept = confidence >= expected
        assert ours.kept == kept.sum()
        assert ours.coverage == pytest.approx(kept.mean())
        assert ours.agreement_kept == pytest.approx(agree[kept].mean())
        assert ours.guaranteed_agreement == 1 - alpha


def test_guarantee_holds_over_1000_calibrations() -> None:
    """P(agree | c) = (1 + c) / 2 with c ~ U(0, 1): the disagreement rate on c >= l is
    (1 - l) / 4, at most alpha = 0.1 exactly when l >= 0.6."""
    rng = np.random.default_rng(2025)
    alpha, delta, studies, items = 0.1, 0.1, 1000, 500
    violated = 0
    coverages = []
    for _ in range(studies):
        confidence = rng.random(items)
        agree = (rng.random(items) < (1 + confidence) / 2).astype(int)
        result = calibrate_threshold(confidence=confidence, agree=agree, alpha=alpha,
                                     delta=delta)
        if result.threshold is not None:
            violated += (1 - result.threshold) / 4 > alpha
            coverages.append(result.coverage)
        else:
            coverages.append(0.0)
    assert violated / studies <= delta
    # not vacuous: most calibrations keep items (the 40% with c >= 0.6 may be kept);
    # fixed-sequence testing stops at its first non-rejection, so some keep nothing
    kept = np.asarray(coverages)
    assert (kept > 0).mean() > 0.6
    assert float(np.median(kept)) > 0.05


def test_guarantee_holds_with_tied_confidences() -> None:
    """Confidence as the agreement of 5 repeated draws: c in {0.2, ..., 1.0}, all tied within
    a level; P(agree | c) = 0.5 + 0.45 c, so the disagreement rate on c >= l is 0.05 at l = 1,
    0.095 at 0.8 (just inside alpha = 0.1) and 0.14 at 0.6."""
    rng = np.random.default_rng(7)
    alpha, delta = 0.1, 0.05
    levels = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    risk = {float(t): float(np.mean(0.5 - 0.45 * levels[levels >= t])) for t in levels}
    violated, chosen = 0, []
    for _ in range(1000):
        confidence = rng.choice(levels, size=400)
        agree = (rng.random(400) < 0.5 + 0.45 * confidence).astype(int)
        result = calibrate_threshold(confidence=confidence, agree=agree, alpha=alpha,
                                     delta=delta)
        if result.threshold is not None:
            violated += risk[result.threshold] > alpha
        chosen.append(result.threshold)
    assert violated / 1000 <= delta
    # not vacuous: 80 items at c = 1 with 5% disagreement pass the test about 4 times in 10
    assert chosen.count(1.0) + chosen.count(0.8) > 300


def test_held_out_agreement() -> None:
    confidence = np.array([0.9, 0.8, 0.7, 0.95, 0.2])
    agree = np.array([1, 0, 1, 1, 0])
    held_out = agreement_at(confidence=confidence, agree=agree, threshold=0.75)
    assert held_out.kept == 3 and held_out.coverage == pytest.approx(0.6)
    assert held_out.agreement == pytest.approx(2 / 3)
    nothing = agreement_at(confidence=confidence, agree=agree, threshold=None)
    assert nothing.kept == 0 and np.isnan(nothing.agreement)


def test_nothing_passes_when_the_judge_is_poor() -> None:
    rng = np.random.default_rng(1)
    confidence = rng.random(300)
    agree = (rng.random(300) < 0.5).astype(int)
    result = calibrate_threshold(confidence=confidence, agree=agree, alpha=0.05, delta=0.1)
    assert result.threshold is None and result.kept == 0 and result.coverage == 0
    assert len(result.tested) == 1 and result.tested[0][3] > 0.1


@pytest.mark.parametrize(("alpha", "delta"), [(0.1, 0.1), (0.05, 0.05), (0.2, 0.01), (0.5, 0.5)])
def test_smallest_testable(alpha: float, delta: float) -> None:
    n = smallest_testable(alpha=alpha, delta=delta)
    assert binomtest(0, n, alpha, alternative="less").pvalue <= delta
    assert n == 1 or binomtest(0, n - 1, alpha, alternative="less").pvalue > delta


def test_refusals() -> None:
    with pytest.raises(EstimationError, match="item 1"):
        calibrate_threshold(confidence=[0.5, np.nan], agree=[1, 1], alpha=0.1, delta=0.1)
    with pytest.raises(EstimationError, match="agreement of item 0"):
        calibrate_threshold(confidence=[0.5, 0.2], agree=[0.5, 1], alpha=0.1, delta=0.1)
    with pytest.raises(EstimationError, match="alpha and delta"):
        calibrate_threshold(confidence=[0.5], agree=[1], alpha=0.0, delta=0.1)


@pytest.mark.parametrize("seed", range(20))
def test_risk_coverage_curve_and_augrc(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = int(rng.integers(5, 400))
    confidence = np.round(rng.random(items), int(rng.integers(0, 3)))  # many ties
    correct = (rng.random(items) < 0.3 + 0.6 * confidence).astype(int)
    correct[0], correct[1] = 0, 1
    curve = risk_coverage_curve(confidence=confidence, correct=correct)
    for t, coverage, selective, generalized in zip(
            curve.thresholds, curve.coverage, curve.selective_risk, curve.generalized_risk,
            strict=True):
        kept = confidence >= t
        assert coverage == pytest.approx(kept.mean())
        assert selective == pytest.approx(1 - correct[kept].mean())
        assert generalized == pytest.approx(((1 - correct) * kept).mean())
    area = augrc(confidence=confidence, correct=correct)
    ranks = rankdata(-confidence)  # average ranks, 1 = most confident
    assert area == pytest.approx(
        float(((1 - correct) * (items + 0.5 - ranks)).sum()) / items**2, rel=1e-12)
    accuracy = correct.mean()
    auroc = roc_auc_score(correct, confidence)
    assert area == pytest.approx(
        (1 - auroc) * accuracy * (1 - accuracy) + (1 - accuracy) ** 2 / 2, rel=1e-12)


def test_augrc_bounds() -> None:
    confidence = np.arange(10.0)
    right_first = (confidence >= 5).astype(int)  # the confident half is right
    assert augrc(confidence=confidence, correct=right_first) == pytest.approx(0.125)
    assert augrc(confidence=confidence, correct=1 - right_first) == pytest.approx(0.375)
