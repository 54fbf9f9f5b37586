"""meta_eval.rogan_gladen against the closed form of Lee et al. 2026 ("How to Correctly Report
LLM-as-a-Judge Evaluations"), transcribed here term by term from the paper's interval (the
authors' llm_judge_reporting/calibration.py computes the same), and its undefined region."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from meta_eval.estimation import EstimationError
from meta_eval.rogan_gladen import rogan_gladen, rogan_gladen_from_rates


def paper_interval(p: float, q0: float, q1: float, n: int, m0: int, m1: int,
                   alpha: float) -> tuple[float, float, float]:
    """(point, lower, upper) by the paper's formulas, scalar arithmetic."""
    z = float(norm.ppf(1 - alpha / 2))
    point = min(1.0, max(0.0, (p + q0 - 1) / (q0 + q1 - 1)))
    pa = (n * p + z**2 / 2) / (n + z**2)
    q0a = (m0 * q0 + 1) / (m0 + 2)
    q1a = (m1 * q1 + 1) / (m1 + 2)
    na, m0a, m1a = n + z**2, m0 + 2, m1 + 2
    th = (pa + q0a - 1) / (q0a + q1a - 1)
    dth = 2 * z**2 * (-(1 - th) * q0a * (1 - q0a) / m0a + th * q1a * (1 - q1a) / m1a)
    se = math.sqrt(pa * (1 - pa) / na + (1 - th) ** 2 * q0a * (1 - q0a) / m0a
                   + th**2 * q1a * (1 - q1a) / m1a) / (q0a + q1a - 1)
    return point, min(1.0, max(0.0, th + dth - z * se)), min(1.0, max(0.0, th + dth + z * se))


@pytest.mark.parametrize("seed", range(200))
def test_equals_the_papers_closed_form(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q0, q1 = rng.uniform(0.3, 1.0, size=2)
    if q0 + q1 <= 1.05:
        q0, q1 = 1 - q0 / 2, 1 - q1 / 3
    p = float(rng.choice([0.0, 1.0, rng.uniform()]) if seed % 10 == 0 else rng.uniform())
    n, m0, m1 = (int(v) for v in rng.integers(1, 5000, size=3))
    alpha = float(rng.choice([0.05, 0.1, 0.01]))
    ours = rogan_gladen_from_rates(pass_rate=p, specificity=q0, sensitivity=q1, items=n,
                                   failed_calibration=m0, passed_calibration=m1,
                                   confidence=1 - alpha)
    point, lower, upper = paper_interval(p, q0, q1, n, m0, m1, alpha)
    assert ours.point == pytest.approx(point, abs=1e-12)
    assert ours.lower == pytest.approx(lower, abs=1e-12)
    assert ours.upper == pytest.approx(upper, abs=1e-12)


def test_perfect_judge_gives_its_pass_rate() -> None:
    ours = rogan_gladen_from_rates(pass_rate=0.37, specificity=1.0, sensitivity=1.0,
                                   items=10**9, failed_calibration=10**9,
                                   passed_calibration=10**9)
    assert ours.point == pytest.approx(0.37)
    assert ours.upper - ours.lower < 1e-3


def test_from_verdicts_counts_the_rates() -> None:
    test = [1, 1, 0, 1, 0, 0, 1, 1, 1, 0]
    judged = [1, 0, 0, 0, 1, 1, 1, 1]
    human = [0, 0, 0, 0, 1, 1, 1, 0]  # failed: judged 1,0,0,0,1 -> q0 = 3/5; passed: q1 = 3/3
    ours = rogan_gladen(test_verdicts=test, calibration_verdicts=judged,
                        calibration_human=human, confidence=0.9)
    point, lower, upper = paper_interval(0.6, 0.6, 1.0, 10, 5, 3, 0.1)
    assert (ours.point, ours.lower, ours.upper) == pytest.approx((point, lower, upper))
    assert ours.labels == 8 and ours.items == 10


@pytest.mark.parametrize(("q0", "q1"), [(0.5, 0.5), (0.3, 0.6), (0.0, 0.0), (0.6, 0.4)])
def test_no_better_than_chance_is_refused(q0: float, q1: float) -> None:
    with pytest.raises(EstimationError, match="no better than chance"):
        rogan_gladen_from_rates(pass_rate=0.5, specificity=q0, sensitivity=q1, items=100,
                                failed_calibration=50, passed_calibration=50)


def test_too_small_a_calibration_set_is_refused() -> None:
    # raw q0 + q1 = 1.1 > 1, but with one failed item the adjusted q0 is 2/3 and q1' < 1/3
    with pytest.raises(EstimationError, match="too small"):
        rogan_gladen_from_rates(pass_rate=0.5, specificity=1.0, sensitivity=0.1, items=100,
                                failed_calibration=1, passed_calibration=100)


def test_refusals() -> None:
    with pytest.raises(EstimationError, match="people failed and items people passed"):
        rogan_gladen(test_verdicts=[1, 0], calibration_verdicts=[1, 1],
                     calibration_human=[1, 1])
    with pytest.raises(EstimationError, match="test verdict 1 is nan"):
        rogan_gladen(test_verdicts=[1, np.nan], calibration_verdicts=[1, 0],
                     calibration_human=[1, 0])
