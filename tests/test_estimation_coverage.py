"""Coverage simulations: 1,000 seeded studies per setting, judges biased by a covariate (the
answer's length), uniform and skewed label sampling. Every corrected interval must cover the
truth at least at its nominal level minus three Monte-Carlo standard errors; judge-only's
coverage is computed and asserted to be poor (the reason the corrections exist)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meta_eval.estimation import (
    Estimate,
    human_only_mean,
    judge_only_mean,
    paired_difference,
    pairwise_win_rates,
    ppi_mean,
    stratified_ppi_mean,
    weighted_ppi_mean,
)
from meta_eval.rogan_gladen import rogan_gladen

STUDIES = 1000
NOMINAL = 0.9
FLOOR = NOMINAL - 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / STUDIES)  # 0.8715
POOR = 0.2


def covers(estimate: Estimate, truth: float) -> bool:
    return estimate.lower <= truth <= estimate.upper


def length_biased_items(rng: np.random.Generator, items: int, binary: bool
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(length, human score, judge score, population mean of the human score). People's
    scores rise with length a little; the judge adds a bonus for length on top."""
    length = rng.random(items)
    if binary:
        passed = rng.random(items) < 0.3 + 0.2 * length
        lenient = rng.random(items) < 0.5 * length  # the judge passes long failures
        missed = rng.random(items) < 0.1
        judge = np.where(passed, ~missed, lenient).astype(float)
        return length, passed.astype(float), judge, 0.4
    human = 1.0 + length + rng.normal(size=items)
    judge = human + 0.8 * length + rng.normal(scale=0.6, size=items)
    return length, human, judge, 1.5


@pytest.mark.parametrize("binary", [False, True], ids=["score", "pass-rate"])
def test_uniform_sampling(binary: bool) -> None:
    rng = np.random.default_rng(40 + binary)
    hits = {"ppi++": 0, "human-only": 0, "judge-only": 0}
    worth = []
    for _ in range(STUDIES):
        _, human, judge, truth = length_biased_items(rng, 1000, binary)
        labelled = np.zeros(1000, dtype=bool)
        labelled[rng.choice(1000, size=120, replace=False)] = True
        shown = np.where(labelled, human, np.nan)
        ppi = ppi_mean(judge=judge, human=shown, confidence=NOMINAL)
        hits["ppi++"] += covers(ppi, truth)
        hits["human-only"] += covers(human_only_mean(human=shown, confidence=NOMINAL), truth)
        hits["judge-only"] += covers(judge_only_mean(judge=judge, confidence=NOMINAL), truth)
        worth.append(ppi.labels_worth)
    coverage = {k: v / STUDIES for k, v in hits.items()}
    assert coverage["ppi++"] >= FLOOR, coverage
    assert coverage["human-only"] >= FLOOR, coverage
    assert coverage["judge-only"] < POOR, coverage
    assert float(np.mean(worth)) > 0  # the judge was worth labels


def test_skewed_sampling_weighted() -> None:
    """Long answers are labelled up to 16 times as often: inverse-probability weighting."""
    rng = np.random.default_rng(41)
    hits = {"weighted-ppi++": 0, "judge-only": 0}
    for _ in range(STUDIES):
        length, human, judge, truth = length_biased_items(rng, 1500, False)
        pi = 0.02 + 0.3 * length
        labelled = rng.random(1500) < pi
        shown = np.where(labelled, human, np.nan)
        weighted = weighted_ppi_mean(judge=judge, human=shown, inclusion_probability=pi,
                                     confidence=NOMINAL)
        hits["weighted-ppi++"] += covers(weighted, truth)
        hits["judge-only"] += covers(judge_only_mean(judge=judge, confidence=NOMINAL), truth)
    coverage = {k: v / STUDIES for k, v in hits.items()}
    assert coverage["weighted-ppi++"] >= FLOOR, coverage
    assert coverage["judge-only"] < POOR, coverage


def test_skewed_sampling_stratified() -> None:
    """Four length strata of about 400 items labelled at 5%, 10%, 20% and 40%. (At 2% a stratum
    has 8 labels and the CLT interval covers only about 0.84: see stratified_ppi_mean.)"""
    rng = np.random.default_rng(42)
    rates = np.array([0.05, 0.1, 0.2, 0.4])
    hits = {"stratified-ppi++": 0, "judge-only": 0}
    for _ in range(STUDIES):
        length, human, judge, truth = length_biased_items(rng, 1600, False)
        strata = np.minimum((length * 4).astype(int), 3)
        labelled = np.zeros(1600, dtype=bool)
        for s in range(4):
            members = np.flatnonzero(strata == s)
            count = max(2, round(rates[s] * members.size))
            labelled[rng.choice(members, size=count, replace=False)] = True
        shown = np.where(labelled, human, np.nan)
        stratified = stratified_ppi_mean(judge=judge, human=shown, strata=strata,
                                         confidence=NOMINAL)
        hits["stratified-ppi++"] += covers(stratified, truth)
        hits["judge-only"] += covers(judge_only_mean(judge=judge, confidence=NOMINAL), truth)
    coverage = {k: v / STUDIES for k, v in hits.items()}
    assert coverage["stratified-ppi++"] >= FLOOR, coverage
    assert coverage["judge-only"] < POOR, coverage


def test_paired_difference() -> None:
    """System B writes longer answers and is truly 0.2 worse; the judge's length bonus makes
    B look better."""
    rng = np.random.default_rng(43)
    hits = {"paired-ppi++": 0, "judge-only": 0}
    for _ in range(STUDIES):
        items = 800
        difficulty = rng.normal(size=items)
        length_a, length_b = rng.random(items), 0.5 + rng.random(items)
        human_a = difficulty + rng.normal(size=items)
        human_b = difficulty - 0.2 + rng.normal(size=items)
        judge_a = human_a + 0.8 * length_a + rng.normal(scale=0.5, size=items)
        judge_b = human_b + 0.8 * length_b + rng.normal(scale=0.5, size=items)
        labelled = np.zeros(items, dtype=bool)
        labelled[rng.choice(items, size=100, replace=False)] = True
        difference = paired_difference(
            judge_a=judge_a, judge_b=judge_b, human_a=np.where(labelled, human_a, np.nan),
            human_b=np.where(labelled, human_b, np.nan), confidence=NOMINAL)
        hits["paired-ppi++"] += covers(difference, 0.2)
        hits["judge-only"] += covers(
            judge_only_mean(judge=judge_a - judge_b, confidence=NOMINAL), 0.2)
    coverage = {k: v / STUDIES for k, v in hits.items()}
    assert coverage["paired-ppi++"] >= FLOOR, coverage
    assert coverage["judge-only"] < POOR, coverage


def test_pairwise_win_rate() -> None:
    """People prefer neither system (win rate 0.5); the judge picks the longer answer 40% of
    the time, and A's answers are longer more often than not."""
    rng = np.random.default_rng(44)
    hits = {"win-rate-ppi++": 0, "judge-only": 0}
    rows = 1000
    for _ in range(STUDIES):
        a_longer = rng.normal(0.5, 1.0, size=rows) > 0
        a_better = (rng.random(rows) < 0.5).astype(float)
        judge_a = np.where(rng.random(rows) < 0.6, a_better, a_longer.astype(float))
        a_first = rng.random(rows) < 0.5  # half the rows list B first
        first = np.where(a_first, "A", "B").tolist()
        second = np.where(a_first, "B", "A").tolist()
        judge = np.where(a_first, judge_a, 1 - judge_a)
        human = np.where(a_first, a_better, 1 - a_better)
        human[rng.random(rows) >= 0.15] = np.nan
        rate = pairwise_win_rates(first=first, second=second, judge=judge, human=human,
                                  confidence=NOMINAL)[("A", "B")]
        hits["win-rate-ppi++"] += covers(rate, 0.5)
        hits["judge-only"] += covers(judge_only_mean(judge=judge_a, confidence=NOMINAL), 0.5)
    coverage = {k: v / STUDIES for k, v in hits.items()}
    assert coverage["win-rate-ppi++"] >= FLOOR, coverage
    assert coverage["judge-only"] < POOR, coverage


def test_rogan_gladen() -> None:
    """A binary judge with sensitivity 0.85 and specificity 0.75 on a pass rate of 0.3."""
    rng = np.random.default_rng(45)
    theta, sensitivity, specificity = 0.3, 0.85, 0.75
    hits = {"rogan-gladen": 0, "judge-only": 0}
    for _ in range(STUDIES):
        truth = rng.random(1000) < theta
        verdicts = np.where(truth, rng.random(1000) < sensitivity,
                            rng.random(1000) >= specificity).astype(float)
        calibration_truth = np.repeat([0.0, 1.0], [150, 100])
        calibration_verdicts = np.concatenate([rng.random(150) >= specificity,
                                               rng.random(100) < sensitivity]).astype(float)
        corrected = rogan_gladen(test_verdicts=verdicts, calibration_verdicts=calibration_verdicts,
                                 calibration_human=calibration_truth, confidence=NOMINAL)
        hits["rogan-gladen"] += covers(corrected, theta)
        hits["judge-only"] += covers(judge_only_mean(judge=verdicts, confidence=NOMINAL), theta)
    coverage = {k: v / STUDIES for k, v in hits.items()}
    assert coverage["rogan-gladen"] >= FLOOR, coverage
    assert coverage["judge-only"] < POOR, coverage
