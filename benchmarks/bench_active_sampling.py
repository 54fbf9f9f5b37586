"""Which items to label, compared at one label budget: the spread of the corrected estimate
over simulated studies when the labels are drawn at random, stratified by the judge's score
(or verdict), or actively (meta_eval.sampling), on simulated judges.

Each study draws a fresh population of ITEMS items (seeded by the study's number), labels
BUDGET of them by each design and estimates people's mean (pass rate) from the judge on every
item and the labels:
- means (people's 1-5 scores, or pass/fail against a judge's probability):
    random       simple random sample of BUDGET; PPI++ (the estimate command's default), the
                 uncentred weighted PPI++ (`weighted_ppi_mean`, pi = BUDGET / N) and the
                 centred one (`hajek_ppi_mean`);
    stratified   4 quantile bins of the judge score, proportional; stratified PPI++ and
                 Hajek PPI++;
    active by the population's own priority: all BUDGET drawn by the centred priority
                 computed from every item's label (an oracle: the ceiling of a priority
                 learnt from the judge's score; 20 bins); Hajek PPI++;
    active by the judge's uncertainty (settings whose judge has one: a probability's
                 p (1 - p), a score distribution's variance, the variance of 5 repeated
                 draws): all BUDGET drawn by active_sample(uncertainty=...), no pilot, with
                 the uniform share 0.5 (its default) and 0.2; Hajek PPI++;
    active after a pilot: a random pilot of PILOT labels, then BUDGET - PILOT drawn by
                 active_sample with the centred priority active_label_priority(centre=True)
                 estimates from the pilot (lam from PPI++ on it: what
                 `label --strategy active` does after a first session); estimated by Hajek
                 PPI++ over both draws (the pilot items at pi = 1: a census of themselves
                 given the pilot, as one inclusion-probability column holds it), and by the
                 two draws combined: PPI++ on the pilot and that Hajek PPI++ (each unbiased
                 given what came before, their errors uncorrelated), weighted by their labels
                 (PILOT / BUDGET and the rest);
- pass rates (binary verdicts of a judge with given sensitivity and specificity):
    random       simple random sample, Rogan-Gladen;
    stratified   by verdict, proportional, Rogan-Gladen with 1/pi-weighted rates;
    active       active_binary_sample from the prior 0.9/0.9 (no pilot), the same estimator.
Printed per setting and design: bias, standard deviation and RMSE of the error against the
population's own human mean, the variance relative to random PPI++ (random Rogan-Gladen for
pass rates), and (means) the coverage and mean width of the 90% interval.

    python benchmarks/bench_active_sampling.py [--studies 2000] [--items 2000] [--budget 100]
        [--only TEXT]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from meta_eval.estimation import (
    Estimate,
    EstimationError,
    active_label_priority,
    hajek_ppi_mean,
    ppi_mean,
    stratified_ppi_mean,
    weighted_ppi_mean,
)
from meta_eval.rogan_gladen import rogan_gladen_from_rates
from meta_eval.sampling import (
    active_binary_sample,
    active_sample,
    random_sample,
    stratified_sample,
)

PILOT = 30
CONFIDENCE = 0.9

Population = tuple[np.ndarray, np.ndarray, np.ndarray | None]


def length_biased(noise: Callable[[np.ndarray], np.ndarray]
                  ) -> Callable[[np.random.Generator, int], Population]:
    """People's 1-5 scores; a judge that adds 1.5 x length (in [0, 1]) and noise(length)."""
    def make(rng: np.random.Generator, items: int) -> Population:
        length = rng.random(items)
        human = np.clip(np.round(3 + rng.normal(size=items) + length), 1, 5)
        judge = human + 1.5 * length + rng.normal(size=items) * noise(length)
        return judge, human, None
    return make


def noisy_binary(base: float, sensitivity: float, specificity: float
                 ) -> Callable[[np.random.Generator, int], Population]:
    def make(rng: np.random.Generator, items: int) -> Population:
        human = (rng.random(items) < base).astype(float)
        right = rng.random(items) < np.where(human == 1, sensitivity, specificity)
        return np.where(right, human, 1 - human), human, None
    return make


def lenient_on_long(rng: np.random.Generator, items: int) -> Population:
    """People's 1-5 scores; a judge close to them on short outputs that adds 1.5 points (up
    to 5) to the 40% longest: its errors sit where it says 4-5."""
    length = rng.random(items)
    human = np.clip(np.round(3 + rng.normal(size=items)), 1, 5)
    lenient = np.where(length > 0.6, np.minimum(5.0, human + 1.5), human)
    return lenient + rng.normal(size=items) * 0.3, human, None


def confident_probability(rng: np.random.Generator, items: int) -> Population:
    """A judge's calibrated probability p that people pass the output (most items clear-cut:
    Beta(0.3, 0.3)), and people's pass (1) or fail (0) drawn with that probability; its
    uncertainty p (1 - p)."""
    probability = rng.beta(0.3, 0.3, size=items)
    human = (rng.random(items) < probability).astype(float)
    return probability, human, probability * (1 - probability)


def overconfident_probability(rng: np.random.Generator, items: int) -> Population:
    """People pass with a probability t ~ Beta(0.4, 0.4); the judge says t + 0.15, clipped to
    1 (about a third of the items: sure of a pass where people fail up to 15% of the time);
    its uncertainty p (1 - p) of what it says."""
    truth = rng.beta(0.4, 0.4, size=items)
    human = (rng.random(items) < truth).astype(float)
    probability = np.clip(truth + 0.15, 0.0, 1.0)
    return probability, human, probability * (1 - probability)


def hedging(rng: np.random.Generator, items: int) -> Population:
    """People's 1-5 scores; a judge that gives people's score when it is sure and hedges
    with 3 on 40% of the items, whatever their score: its errors are all where it says 3.
    Its uncertainty (a G-Eval score distribution's variance): 1.44 where it hedges (people's
    spread), 0.05 where it is sure."""
    human = np.clip(np.round(3 + 1.2 * rng.normal(size=items)), 1, 5)
    hedged = rng.random(items) < 0.4
    return np.where(hedged, 3.0, human), human, np.where(hedged, 1.44, 0.05)


def wavering(people_waver: bool) -> Callable[[np.random.Generator, int], Population]:
    """People's 1-5 scores; a judge asked 5 times at temperature > 0 (`score --repeats 5`),
    each draw quality + 0.5 + noise of the item's own sd (0.1 to 2.5: it wavers on hard
    items), rounded to 1-5; its score the draws' mean, its uncertainty their variance.
    People's label is quality plus noise of the same sd (`people_waver`: people disagree
    where the judge wavers, as on ambiguous items) or of sd 0.5 on every item (the judge's
    wavering says nothing about people's noise)."""
    def make(rng: np.random.Generator, items: int) -> Population:
        quality = 3 + rng.normal(size=items)
        sd = 0.1 + 2.4 * rng.beta(0.6, 2.0, size=items)
        noise = sd if people_waver else np.full(items, 0.5)
        human = np.clip(np.round(quality + noise * rng.normal(size=items)), 1, 5)
        draws = np.clip(np.round(quality[:, None] + 0.5 + sd[:, None]
                                 * rng.normal(size=(items, 5))), 1, 5)
        return draws.mean(axis=1), human, draws.var(axis=1, ddof=1)
    return make


SETTINGS: dict[str, tuple[str, Callable[[np.random.Generator, int], Population]]] = {
    "judge that hedges with 3 on 40% of items": ("mean", hedging),
    "judge asked 5 times, wavering where people disagree too": ("mean", wavering(True)),
    "judge asked 5 times, wavering unrelated to people's noise": ("mean", wavering(False)),
    "judge lenient on long outputs (+1.5 up to 5 on the 40% longest)": (
        "mean", lenient_on_long),
    "judge's calibrated probability of a pass, most items clear-cut": (
        "mean", confident_probability),
    "judge's probability of a pass 0.15 too high, sure and wrong on a third of items": (
        "mean", overconfident_probability),
    "length-biased judge, errors grow with length (not visible in its score)": (
        "mean", length_biased(lambda length: 0.1 + 2.0 * length)),
    "length-biased judge, errors the same everywhere": (
        "mean", length_biased(lambda length: np.ones_like(length))),
    "binary judge, sensitivity 0.9, specificity 0.7, pass rate 0.3": (
        "binary", noisy_binary(0.3, 0.9, 0.7)),
    "binary judge, sensitivity 0.98, specificity 0.6, pass rate 0.6": (
        "binary", noisy_binary(0.6, 0.98, 0.6)),
}


def labelled(human: np.ndarray, positions: list[int], probabilities: list[float]
             ) -> tuple[np.ndarray, np.ndarray]:
    shown = np.full(human.size, np.nan)
    pi = np.ones(human.size)
    shown[positions] = human[positions]
    pi[positions] = probabilities
    return shown, pi


def mean_designs(judge: np.ndarray, human: np.ndarray, uncertainty: np.ndarray | None,
                 budget: int, seed: int) -> dict[str, tuple[float, float, float]]:
    """Design (and estimator) -> (point, lower, upper) of the corrected mean."""
    def interval(estimate: Estimate) -> tuple[float, float, float]:
        return estimate.point, estimate.lower, estimate.upper

    def hajek(shown: np.ndarray, pi: np.ndarray) -> Estimate:
        return hajek_ppi_mean(judge=judge, human=shown, inclusion_probability=pi,
                              confidence=CONFIDENCE)

    out = {}
    draw = random_sample(candidates=judge.size, n=budget, seed=seed)
    shown, pi = labelled(human, list(draw.positions), list(draw.probabilities))
    out["random, PPI++"] = interval(ppi_mean(judge=judge, human=shown, confidence=CONFIDENCE))
    out["random, weighted PPI++ (uncentred)"] = interval(weighted_ppi_mean(
        judge=judge, human=shown, inclusion_probability=pi, confidence=CONFIDENCE))
    out["random, Hajek PPI++"] = interval(hajek(shown, pi))
    edges = np.quantile(judge, [0.25, 0.5, 0.75])
    strata = np.searchsorted(edges, judge, side="right")
    draw = stratified_sample(strata=strata.tolist(), n=budget, seed=seed)
    shown, pi = labelled(human, list(draw.positions), list(draw.probabilities))
    out["stratified, stratified PPI++"] = interval(stratified_ppi_mean(
        judge=judge, human=shown, strata=strata, confidence=CONFIDENCE))
    out["stratified, Hajek PPI++"] = interval(hajek(shown, pi))
    draw = active_sample(priority=oracle_priority(judge, human), n=budget, seed=seed)
    shown, pi = labelled(human, list(draw.positions), list(draw.probabilities))
    out["active by the population's own priority (an oracle), Hajek PPI++"] = \
        interval(hajek(shown, pi))
    if uncertainty is not None:
        for share, named in ((0.5, "0.5, the default"), (0.2, "0.2")):
            draw = active_sample(uncertainty=uncertainty, n=budget, seed=seed,
                                 uniform_share=share)
            shown, pi = labelled(human, list(draw.positions), list(draw.probabilities))
            out[f"active by the judge's uncertainty (uniform share {named}), Hajek PPI++"] = \
                interval(hajek(shown, pi))
    pilot = random_sample(candidates=judge.size, n=PILOT, seed=seed + 10**6)
    first = list(pilot.positions)
    shown, _ = labelled(human, first, [1.0] * PILOT)
    before = ppi_mean(judge=judge, human=shown, confidence=CONFIDENCE)
    assert before.lam is not None
    priority = np.nan_to_num(active_label_priority(judge=judge, human=shown, lam=before.lam,
                                                   centre=True))
    draw = active_sample(priority=priority, n=budget - PILOT, seed=seed, exclude=first)
    shown, pi = labelled(human, [*first, *draw.positions],
                         [1.0] * PILOT + list(draw.probabilities))
    after = hajek(shown, pi)
    out["active after a pilot, Hajek PPI++ over both draws"] = interval(after)
    z = (before.upper - before.point) / before.standard_error
    share = PILOT / budget  # each draw's own estimate, weighted by its labels
    point = share * before.point + (1 - share) * after.point
    se = math.hypot(share * before.standard_error, (1 - share) * after.standard_error)
    out["active after a pilot, two draws combined"] = (point, point - z * se, point + z * se)
    return out


def oracle_priority(judge: np.ndarray, human: np.ndarray) -> np.ndarray:
    """The centred priority with every item's label known: sqrt(E[(r - r_bar)^2 | f]) over 20
    quantile bins of the judge score, r = Y - lam f, lam = cov(Y, f) / var(f) clipped to
    [0, 1] (the best a priority learnt from the judge's score can be)."""
    lam = float(np.clip(np.cov(human, judge)[0, 1] / np.var(judge, ddof=1), 0.0, 1.0))
    both = active_label_priority(judge=np.concatenate([judge, judge]),
                                 human=np.concatenate([human, np.full(human.size, np.nan)]),
                                 lam=lam, bins=20, centre=True)
    return both[judge.size:]


def weighted_rogan_gladen(verdicts: np.ndarray, human: np.ndarray, positions: list[int],
                          probabilities: list[float]) -> float:
    """Rogan-Gladen with the calibration rates weighted by 1 / pi (unweighted for equal pi)."""
    v, h = verdicts[positions], human[positions]
    w = 1.0 / np.asarray(probabilities)
    failed, passed = h == 0, h == 1
    if not failed.any() or not passed.any():
        return math.nan
    q0 = float((w * (failed & (v == 0))).sum() / (w * failed).sum())
    q1 = float((w * (passed & (v == 1))).sum() / (w * passed).sum())
    try:
        return rogan_gladen_from_rates(
            pass_rate=float(verdicts.mean()), specificity=q0, sensitivity=q1,
            items=verdicts.size, failed_calibration=int(failed.sum()),
            passed_calibration=int(passed.sum())).point
    except EstimationError:
        return math.nan


def binary_designs(verdicts: np.ndarray, human: np.ndarray, _uncertainty: np.ndarray | None,
                   budget: int, seed: int) -> dict[str, tuple[float, float, float]]:
    nan = math.nan
    out = {}
    draw = random_sample(candidates=verdicts.size, n=budget, seed=seed)
    out["random"] = (weighted_rogan_gladen(verdicts, human, list(draw.positions),
                                           list(draw.probabilities)), nan, nan)
    draw = stratified_sample(strata=verdicts.tolist(), n=budget, seed=seed)
    out["stratified"] = (weighted_rogan_gladen(verdicts, human, list(draw.positions),
                                               list(draw.probabilities)), nan, nan)
    draw = active_binary_sample(verdicts=verdicts, n=budget, seed=seed)
    out["active"] = (weighted_rogan_gladen(verdicts, human, list(draw.positions),
                                           list(draw.probabilities)), nan, nan)
    return out


def run(setting: str, studies: int, items: int, budget: int) -> list[dict[str, object]]:
    kind, make = SETTINGS[setting]
    errors: dict[str, list[float]] = {}
    covered: dict[str, list[bool]] = {}
    widths: dict[str, list[float]] = {}
    undefined: dict[str, int] = {}
    for study in range(studies):
        judge, human, uncertainty = make(np.random.default_rng(study), items)
        truth = float(human.mean())
        found = (mean_designs if kind == "mean" else binary_designs)(judge, human, uncertainty,
                                                                     budget, study)
        for design, (point, lower, upper) in found.items():
            if not math.isfinite(point):
                undefined[design] = undefined.get(design, 0) + 1
                continue
            errors.setdefault(design, []).append(point - truth)
            if math.isfinite(lower):
                covered.setdefault(design, []).append(lower <= truth <= upper)
                widths.setdefault(design, []).append(upper - lower)
    reference = float(np.var(errors["random, PPI++" if kind == "mean" else "random"]))
    rows = []
    for design, values in errors.items():
        e = np.asarray(values)
        rows.append({
            "setting": setting, "design": design, "studies": int(e.size),
            "undefined": undefined.get(design, 0), "bias": round(float(e.mean()), 5),
            "sd": round(float(e.std()), 5), "rmse": round(float(np.sqrt((e**2).mean())), 5),
            "variance_vs_random": round(float(np.var(e)) / reference, 3),
            "coverage": (round(float(np.mean(covered[design])), 3)
                         if design in covered else None),
            "width": round(float(np.mean(widths[design])), 4) if design in widths else None})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--studies", type=int, default=2000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--only", default="", help="run the settings whose name holds this")
    args = parser.parse_args()
    for setting in [name for name in SETTINGS if args.only in name]:
        began = time.perf_counter()
        for row in run(setting, args.studies, args.items, args.budget):
            print(json.dumps({**row, "items": args.items, "budget": args.budget,
                              "seconds": round(time.perf_counter() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()
