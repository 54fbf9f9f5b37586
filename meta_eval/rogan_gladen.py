"""A pass rate from a binary judge corrected for its sensitivity and specificity, with an
interval that includes the calibration set's uncertainty.

Lee, Zeng, Jeong, Sohn, Lee 2026, "How to Correctly Report LLM-as-a-Judge Evaluations"
(arXiv:2511.21140; the authors' code: UW-Madison-Lee-Lab/LLM-judge-reporting,
llm_judge_reporting/calibration.py). With p the share of the n test items the judge passes,
q0 = specificity P(judge fails | human fails) from m0 human-failed calibration items and
q1 = sensitivity P(judge passes | human passes) from m1 human-passed ones:

    theta = clip((p + q0 - 1) / (q0 + q1 - 1), 0, 1)       (Rogan and Gladen 1978)

and the (1 - a) interval, z = Phi^-1(1 - a/2), from Agresti-Coull-style adjusted values
    p' = (n p + z^2/2) / (n + z^2), q0' = (m0 q0 + 1) / (m0 + 2), q1' = (m1 q1 + 1) / (m1 + 2),
    n' = n + z^2, m0' = m0 + 2, m1' = m1 + 2, theta' = (p' + q0' - 1) / (q0' + q1' - 1),
    shift = 2 z^2 (-(1 - theta') q0'(1 - q0') / m0' + theta' q1'(1 - q1') / m1'),
    se = sqrt(p'(1-p')/n' + (1-theta')^2 q0'(1-q0')/m0' + theta'^2 q1'(1-q1')/m1')
         / (q0' + q1' - 1),
    interval = clip(theta' + shift -+ z se, 0, 1),
the delta method for the Rogan-Gladen estimator with independent binomial errors in p, q0 and
q1, centred with the paper's bias shift. Undefined where q0 + q1 <= 1 (the judge is no better
than chance, and the correction divides by zero or flips the sign), for the raw or the
adjusted rates: refused with `EstimationError`, never a number.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.estimation import Estimate, EstimationError, two_sided_z

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike


def rogan_gladen_from_rates(*, pass_rate: float, specificity: float, sensitivity: float,
                            items: int, failed_calibration: int, passed_calibration: int,
                            confidence: float = 0.95) -> Estimate:
    """The corrected pass rate and its interval from the rates and counts (module docstring).
    `items` = n, `failed_calibration` = m0, `passed_calibration` = m1."""
    z = two_sided_z(confidence)
    for name, value in (("pass rate", pass_rate), ("specificity", specificity),
                        ("sensitivity", sensitivity)):
        if not 0.0 <= value <= 1.0:
            raise EstimationError(f"the judge's {name} must lie in [0, 1], got {value}")
    n, m0, m1 = items, failed_calibration, passed_calibration
    if n < 1:
        raise EstimationError("the correction needs at least one judged test item")
    if m0 < 1 or m1 < 1:
        raise EstimationError(
            "the correction needs calibration items people failed and items people passed "
            f"(got {m0} failed and {m1} passed): without both, the judge's specificity and "
            "sensitivity are unknown")
    youden = specificity + sensitivity - 1.0
    if youden <= 0:
        raise EstimationError(
            f"the judge's sensitivity ({sensitivity:.3f}) plus specificity ({specificity:.3f}) "
            "is not above 1: it is no better than chance on the calibration set, so no "
            "corrected pass rate exists")
    theta = min(1.0, max(0.0, (pass_rate + specificity - 1.0) / youden))
    z2 = z * z
    p_adj = (n * pass_rate + z2 / 2.0) / (n + z2)
    q0 = (m0 * specificity + 1.0) / (m0 + 2.0)
    q1 = (m1 * sensitivity + 1.0) / (m1 + 2.0)
    n_adj, m0_adj, m1_adj = n + z2, m0 + 2.0, m1 + 2.0
    youden_adj = q0 + q1 - 1.0
    if youden_adj <= 0:
        raise EstimationError(
            "the calibration set is too small to tell the judge from chance: its adjusted "
            f"sensitivity ({q1:.3f}) plus specificity ({q0:.3f}) is not above 1")
    centre = (p_adj + q0 - 1.0) / youden_adj
    shift = 2.0 * z2 * (-(1.0 - centre) * q0 * (1.0 - q0) / m0_adj
                        + centre * q1 * (1.0 - q1) / m1_adj)
    test_part = p_adj * (1.0 - p_adj) / n_adj
    calibration_part = ((1.0 - centre) ** 2 * q0 * (1.0 - q0) / m0_adj
                        + centre**2 * q1 * (1.0 - q1) / m1_adj)
    se = math.sqrt(test_part + calibration_part) / youden_adj
    labels = m0 + m1
    human_variance = theta * (1.0 - theta)
    return Estimate(
        method="rogan-gladen", point=theta,
        lower=min(1.0, max(0.0, centre + shift - z * se)),
        upper=min(1.0, max(0.0, centre + shift + z * se)),
        standard_error=se, confidence=confidence, labels=labels, items=n, lam=None,
        effective_labels=human_variance / (se * se) if se > 0 else math.inf,
        labelled_variance=calibration_part * labels / youden_adj**2,
        fixed_variance=test_part / youden_adj**2)


def rogan_gladen(*, test_verdicts: ArrayLike, calibration_verdicts: ArrayLike,
                 calibration_human: ArrayLike, confidence: float = 0.95) -> Estimate:
    """The corrected pass rate from the judge's binary verdicts on the test items and, on a
    calibration set, the judge's verdicts beside people's (1 pass, 0 fail; True/False too).
    NaN verdicts are refused (a verdict the judge did not give is not a fail)."""
    test = _binary("test verdict", test_verdicts)
    judged = _binary("calibration verdict", calibration_verdicts)
    truth = _binary("calibration human label", calibration_human)
    if judged.shape != truth.shape:
        raise EstimationError(
            f"calibration verdicts and human labels differ in length: {judged.size} and "
            f"{truth.size}")
    failed, passed = truth == 0, truth == 1
    m0, m1 = int(failed.sum()), int(passed.sum())
    specificity = float((judged[failed] == 0).mean()) if m0 else 0.0
    sensitivity = float((judged[passed] == 1).mean()) if m1 else 0.0
    return rogan_gladen_from_rates(
        pass_rate=float(test.mean()) if test.size else 0.0, specificity=specificity,
        sensitivity=sensitivity, items=int(test.size), failed_calibration=m0,
        passed_calibration=m1, confidence=confidence)


def _binary(name: str, values: ArrayLike) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    bad = np.flatnonzero(~np.isin(array, (0.0, 1.0)))
    if bad.size:
        raise EstimationError(f"{name} {bad[0]} is {array[bad[0]]}, not 0 or 1")
    return array
