"""meta_eval.sampling: every design's stated inclusion probabilities against the frequencies of
thousands of seeded draws (each item within Monte-Carlo error), the probabilities against a
direct computation of the design's formula, exclusions, refusals, extreme magnitudes, and the
weighted PPI++ estimate on active and disagreement draws unbiased over simulated studies."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from meta_eval.estimation import weighted_ppi_mean
from meta_eval.rogan_gladen import rogan_gladen_from_rates
from meta_eval.sampling import (
    Draw,
    SamplingError,
    active_binary_sample,
    active_sample,
    allocate,
    disagreement_sample,
    inclusion_probabilities,
    random_sample,
    spread,
    stratified_sample,
    verdict_split,
)

Z = 4.5  # per-item tolerance in Monte-Carlo standard errors (seeded: the result is fixed)


def frequencies(draw: Callable[[int], Draw], candidates: int, runs: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """How often each candidate was drawn over `runs` seeds, and its stated probability
    (checked to be the same in every draw that holds it)."""
    counts = np.zeros(candidates)
    stated = np.full(candidates, np.nan)
    for seed in range(runs):
        d = draw(seed)
        assert len(set(d.positions)) == d.size, "an item drawn twice"
        where = np.asarray(d.positions)
        counts[where] += 1
        probabilities = np.asarray(d.probabilities)
        known = np.isfinite(stated[where])
        assert np.array_equal(stated[where][known], probabilities[known]), \
            "an item's probability changed between draws of one design"
        stated[where] = probabilities
    return counts / runs, stated


def assert_matches(freq: np.ndarray, expected: np.ndarray, runs: int) -> None:
    se = np.sqrt(expected * (1 - expected) / runs)
    off = np.abs(freq - expected)
    worst = int(np.argmax(off / np.maximum(se, 1e-12)))
    assert (off <= Z * se + 1e-12).all(), (
        f"item {worst}: drawn {freq[worst]:.4f} of the time, stated {expected[worst]:.4f} "
        f"(se {se[worst]:.4f})")


def capped_pps(sizes: np.ndarray, n: int) -> np.ndarray:
    """A direct computation of pi_i = min(1, c s_i), sum pi = n: take the largest sizes with
    certainty one at a time while the share they would get is at least 1."""
    order = np.argsort(-sizes, kind="stable")
    pi = np.zeros(sizes.size)
    taken = 0
    for k, i in enumerate(order):
        rest = sizes[order[k:]].sum()
        if (n - taken) * sizes[i] / rest >= 1:
            pi[i] = 1.0
            taken += 1
        else:
            pi[order[k:]] = (n - taken) * sizes[order[k:]] / rest
            break
    return pi


def test_random_sample_is_n_over_n_for_every_eligible_item():
    runs, exclude = 8000, [0, 7, 7, 29]
    freq, stated = frequencies(
        lambda s: random_sample(candidates=30, n=8, seed=s, exclude=exclude), 30, runs)
    expected = np.full(30, 8 / 27)
    expected[[0, 7, 29]] = 0.0
    assert freq[[0, 7, 29]].sum() == 0, "an excluded item was drawn"
    assert np.allclose(stated[np.isfinite(stated)], 8 / 27, rtol=0, atol=1e-15)
    assert_matches(freq, expected, runs)


STRATA = list("aaa" + "b" * 12 + "c" * 7 + "d" + "e" * 9)


@pytest.mark.parametrize("allocation", ["proportional", "equal"])
def test_stratified_sample_is_n_h_over_n_h_by_simulation(allocation):
    runs, exclude = 8000, [3, 4, 20]
    freq, _stated = frequencies(
        lambda s: stratified_sample(strata=STRATA, n=11, seed=s, allocation=allocation,
                                    exclude=exclude), len(STRATA), runs)
    draw = stratified_sample(strata=STRATA, n=11, seed=0, allocation=allocation,
                             exclude=exclude)
    labels = np.asarray(STRATA)
    keep = np.ones(len(STRATA), dtype=bool)
    keep[exclude] = False
    capacity = {h: int((keep & (labels == h)).sum()) for h in "abcde"}
    sizes = {h: int(draw.details["strata"][h].split("/")[0]) for h in "abcde"}
    assert sum(sizes.values()) == 11
    assert all(min(2, capacity[h]) <= sizes[h] <= capacity[h] for h in "abcde")
    expected = np.array([sizes[h] / capacity[h] if k not in exclude else 0.0
                         for k, h in enumerate(STRATA)])
    assert_matches(freq, expected, runs)
    for position, p in zip(draw.positions, draw.probabilities, strict=True):
        assert p == expected[position]


def reference_allocation(capacity: np.ndarray, weights: np.ndarray, n: int, minimum: int
                         ) -> np.ndarray:
    """Bisection for the water level c of sum clip(c w, min(C, m), C) = n, then Hamilton's
    largest remainders (ties to the earlier stratum): an independent path to `allocate`."""
    low_bound = np.minimum(capacity, minimum).astype(float)
    lo, hi = 0.0, 1.0
    def total(c: float) -> float:
        return float(np.clip(c * weights, low_bound, capacity).sum())
    while total(hi) < n:
        hi *= 2
    for _ in range(300):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < n else (lo, mid)
    quota = np.clip(hi * weights, low_bound, capacity)
    sizes = np.floor(quota + 1e-9).astype(int)
    left = n - sizes.sum()
    remainder = [(-(quota[h] - sizes[h]), h) for h in range(sizes.size) if sizes[h] < capacity[h]]
    for _r, h in sorted(remainder)[:left]:
        sizes[h] += 1
    return sizes


def test_allocate_equals_a_bisection_and_largest_remainders_and_keeps_its_bounds():
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(400):
        strata = int(rng.integers(1, 9))
        capacity = rng.integers(0, 25, strata)
        weights = rng.random(strata) * (rng.random(strata) < 0.85) + 0.0
        weights[rng.random(strata) < 0.2] = 0.25  # ties between strata
        minimum = int(rng.integers(0, 4))
        n = int(rng.integers(1, max(2, capacity.sum() + 1)))
        try:
            got = allocate(capacity=capacity, weights=weights, n=n, minimum=minimum)
        except SamplingError:
            floor = np.minimum(capacity, minimum)
            assert floor.sum() > n or np.where(weights > 0, capacity, floor).sum() < n
            continue
        want = reference_allocation(capacity, weights, n, minimum)
        assert got.sum() == n
        assert np.array_equal(got, want), (capacity, weights, n, minimum, got, want)
        checked += 1
    assert checked > 250


def test_allocate_gives_a_small_stratum_all_it_has_and_the_rest_to_the_others():
    # proportional quotas of 20 over (5, 100, 3) are (0.93, 18.5, 0.56): minimum 2 lifts both
    # small strata to 2 and the large one takes the other 16
    assert allocate(capacity=[5, 100, 3], weights=[5, 100, 3], n=20, minimum=2).tolist() \
        == [2, 16, 2]
    # equal shares of 20 are 6.67 each: the stratum of 3 gives 3, the others share 17
    assert allocate(capacity=[5, 100, 3], weights=[1, 1, 1], n=20).tolist() == [5, 12, 3]
    with pytest.raises(SamplingError, match="at least 2 in each of the 3 non-empty strata"):
        allocate(capacity=[5, 100, 3], weights=[1, 1, 1], n=5, minimum=2)


def sizes_with_ties_and_zeros(count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.round(rng.exponential(size=count) ** 2, 1)  # ties after rounding, some zeros
    d[:4] = 0.0
    d[4] = 400.0  # large enough to be taken with certainty
    return d


def test_disagreement_sample_probabilities_by_simulation_and_by_formula():
    runs, n, u = 16000, 9, 0.2
    d = sizes_with_ties_and_zeros(40, 1)
    exclude = [5, 6]
    freq, stated = frequencies(
        lambda s: disagreement_sample(disagreement=d, n=n, seed=s, uniform_share=u,
                                      exclude=exclude), d.size, runs)
    keep = np.ones(d.size, dtype=bool)
    keep[exclude] = False
    mixture = np.where(keep, u / keep.sum() + (1 - u) * np.where(keep, d, 0) /
                       d[keep].sum(), 0.0)
    expected = capped_pps(mixture, n)
    assert expected[4] == 1.0 and freq[4] == 1.0, "the certainty item is always drawn"
    assert (expected[keep] >= u * n / keep.sum() - 1e-12).all(), "every item stays positive"
    assert freq[exclude].sum() == 0
    drawn = np.isfinite(stated)
    assert np.allclose(stated[drawn], expected[drawn], rtol=1e-12, atol=0)
    assert_matches(freq, expected, runs)
    naive = np.where(keep, n * mixture, 0.0)  # without the capping: probabilities above 1
    se = np.sqrt(expected * (1 - expected) / runs)
    assert (np.abs(freq - np.minimum(naive, 1)) > Z * se + 1e-9).any(), \
        "the uncapped design would pass too: the check cannot tell"


def test_active_sample_probabilities_by_simulation_and_the_first_k_labelled():
    runs, n, u = 10000, 12, 0.3
    rng = np.random.default_rng(2)
    priority = np.sqrt(rng.gamma(0.5, size=50))
    freq, stated = frequencies(
        lambda s: active_sample(priority=priority, n=n, seed=s, uniform_share=u), 50, runs)
    expected = capped_pps(u / 50 + (1 - u) * priority / priority.sum(), n)
    assert np.allclose(stated, expected, rtol=1e-12, atol=0)
    assert_matches(freq, expected, runs)
    k = 5  # an annotator who stops after the first 5 labels
    first, first_stated = frequencies(
        lambda s: active_sample(priority=priority, n=n, seed=s, uniform_share=u).first(k),
        50, runs)
    assert np.allclose(first_stated, expected * k / n, rtol=1e-12, atol=0)
    assert_matches(first, expected * k / n, runs)


def test_active_sample_by_the_judges_uncertainty_follows_its_root_by_simulation():
    """No labels: e_i = sqrt(u_i), mixed with uniform at share 0.5 by default (0.2 given)."""
    runs, n = 8000, 10
    rng = np.random.default_rng(5)
    p = np.round(rng.beta(0.4, 0.4, size=40), 1)  # a judge's probabilities, tied, 0 and 1 too
    u = p * (1 - p)
    exclude = [3, 4]
    keep = np.ones(40, dtype=bool)
    keep[exclude] = False
    for share in (None, 0.2):
        def draw_one(seed: int, share: float | None = share) -> Draw:
            return active_sample(uncertainty=u, n=n, seed=seed, uniform_share=share,
                                 exclude=exclude)

        freq, stated = frequencies(draw_one, 40, runs)
        mixing = 0.5 if share is None else share
        root = np.where(keep, np.sqrt(u), 0.0)
        expected = capped_pps(np.where(keep, mixing / 38 + (1 - mixing) * root / root.sum(),
                                       0.0), n)
        assert (expected[keep & (u == 0)] > 0).all(), "a sure item keeps a probability"
        drawn = np.isfinite(stated)
        assert np.allclose(stated[drawn], expected[drawn], rtol=1e-12, atol=0)
        assert_matches(freq, expected, runs)
    draw = active_sample(uncertainty=u, n=n, seed=0)
    assert draw.signature.startswith("sample.active@1|n:10|seed:0|uniform_share:0.5|")
    assert draw.signature.endswith("|priority:uncertainty")
    learnt = active_sample(priority=np.sqrt(u), n=n, seed=0, uniform_share=0.5)
    assert learnt.positions == draw.positions
    assert learnt.probabilities == pytest.approx(draw.probabilities, rel=1e-12)
    assert "priority" not in learnt.parameters
    for scale in (1e-300, 2.0**-1074 * 1e10, 1e300):  # the root taken after scaling
        other = active_sample(uncertainty=u * scale, n=n, seed=0)
        assert other.positions == draw.positions
        assert np.allclose(other.probabilities, draw.probabilities, rtol=1e-12)
    flat = active_sample(uncertainty=np.zeros(40), n=n, seed=0)
    assert flat.probabilities == pytest.approx([n / 40] * n, rel=1e-12)


def test_active_binary_sample_probabilities_and_the_neyman_split():
    rng = np.random.default_rng(3)
    verdicts = (rng.random(60) < 0.3).astype(float)
    runs, n = 8000, 14
    freq, stated = frequencies(
        lambda s: active_binary_sample(verdicts=verdicts, n=n, seed=s, specificity=0.8,
                                       sensitivity=0.95, exclude=[0, 1]), 60, runs)
    draw = active_binary_sample(verdicts=verdicts, n=n, seed=0, specificity=0.8,
                                sensitivity=0.95, exclude=[0, 1])
    keep = np.ones(60, dtype=bool)
    keep[[0, 1]] = False
    n0, n1 = (int(draw.details["strata"][f"judged {v}"].split("/")[0]) for v in (0, 1))
    c0, c1 = int((keep & (verdicts == 0)).sum()), int((keep & (verdicts == 1)).sum())
    expected = np.where(keep, np.where(verdicts == 1, n1 / c1, n0 / c0), 0.0)
    assert_matches(freq, expected, runs)
    assert np.allclose(stated[np.isfinite(stated)], expected[np.isfinite(stated)])

    # with no uniform share and no minimum the split is Neyman's: the integer split with the
    # smallest variance p^2 a1 (1 - a1) / n1 + (1 - p)^2 a0 (1 - a0) / n0, within one label
    p = float(verdicts.mean())
    theta = (p + 0.8 - 1) / (0.8 + 0.95 - 1)
    a1, a0 = theta * 0.95 / p, theta * 0.05 / (1 - p)
    assert verdict_split(pass_rate=p, specificity=0.8, sensitivity=0.95) == \
        pytest.approx((theta, a0, a1), rel=1e-12)
    split = active_binary_sample(verdicts=verdicts, n=n, seed=0, specificity=0.8,
                                 sensitivity=0.95, uniform_share=1e-12, minimum=0)
    m1 = int(split.details["strata"]["judged 1"].split("/")[0])
    variance = [p**2 * a1 * (1 - a1) / k + (1 - p)**2 * a0 * (1 - a0) / (n - k)
                for k in range(1, n)]
    best = 1 + int(np.argmin(variance))
    assert abs(m1 - best) <= 1
    assert variance[m1 - 1] <= min(variance) * 1.05


def test_the_weighted_rogan_gladen_point_is_the_stratified_one_and_weighted_ppi_at_lam_1():
    """The identity active_binary_sample's docstring relies on: with labels drawn n_v / N_v by
    verdict, Rogan-Gladen with 1/pi-weighted rates = p a1^ + (1 - p) a0^ = weighted PPI, lam=1."""
    rng = np.random.default_rng(4)
    for seed in range(20):
        items = int(rng.integers(80, 400))
        human = (rng.random(items) < rng.uniform(0.2, 0.8)).astype(float)
        verdicts = np.where(rng.random(items) < 0.85, human, 1 - human)
        draw = active_binary_sample(verdicts=verdicts, n=int(items * 0.25), seed=seed)
        shown = np.full(items, np.nan)
        pi = np.ones(items)
        where = np.asarray(draw.positions)
        shown[where], pi[where] = human[where], np.asarray(draw.probabilities)
        p = float(verdicts.mean())
        a = {v: float(human[where][verdicts[where] == v].mean()) for v in (0, 1)}
        stratified = p * a[1] + (1 - p) * a[0]
        w = 1 / pi[where]
        hw, vw = human[where], verdicts[where]
        q0 = float((w * ((hw == 0) & (vw == 0))).sum() / (w * (hw == 0)).sum())
        q1 = float((w * ((hw == 1) & (vw == 1))).sum() / (w * (hw == 1)).sum())
        if q0 + q1 <= 1 or not 0 <= stratified <= 1:
            continue
        corrected = rogan_gladen_from_rates(
            pass_rate=p, specificity=q0, sensitivity=q1, items=items,
            failed_calibration=int((hw == 0).sum()), passed_calibration=int((hw == 1).sum()))
        ppi = weighted_ppi_mean(judge=verdicts, human=shown, inclusion_probability=pi, lam=1.0)
        assert corrected.point == pytest.approx(stratified, abs=1e-12)
        assert ppi.point == pytest.approx(stratified, abs=1e-12)


def population(seed: int, items: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """People's 1-5 scores and a judge biased by length whose errors grow with length."""
    rng = np.random.default_rng(seed)
    length = rng.random(items)
    human = np.clip(np.round(3 + rng.normal(size=items)), 1, 5)
    judge = human + 1.5 * length + rng.normal(size=items) * (0.1 + 2 * length)
    return judge, human


@pytest.mark.parametrize("design", ["active", "disagreement"])
def test_weighted_ppi_on_active_and_disagreement_draws_is_unbiased(design):
    judge, human = population(6)
    truth = float(human.mean())
    earlier = list(range(0, 300, 15))  # 20 items labelled before, now a census of themselves
    score = np.abs(judge - judge.mean()) if design == "disagreement" else \
        0.1 + np.abs(judge - human)  # an oracle priority: the draw design, not its estimate
    studies = 1500
    points: dict[str, list[float]] = {"0": [], "0.6": [], "1": [], "tuned": []}
    for seed in range(studies):
        if design == "active":
            draw = active_sample(priority=score, n=30, seed=seed, exclude=earlier)
        else:
            draw = disagreement_sample(disagreement=score, n=30, seed=seed, exclude=earlier)
        shown = np.full(human.size, np.nan)
        pi = np.ones(human.size)
        where = np.asarray(draw.positions)
        shown[where], pi[where] = human[where], np.asarray(draw.probabilities)
        shown[earlier] = human[earlier]
        for lam in ("0", "0.6", "1", "tuned"):
            estimate = weighted_ppi_mean(judge=judge, human=shown, inclusion_probability=pi,
                                         lam=None if lam == "tuned" else float(lam))
            points[lam].append(estimate.point)
    for lam, values in points.items():
        mean, se = float(np.mean(values)), float(np.std(values) / math.sqrt(studies))
        if lam == "tuned":  # lam fitted on the draw: unbiased only as the labels grow
            assert abs(mean - truth) < 0.05 * float(np.std(values)) + Z * se, (lam, mean)
        else:
            assert abs(mean - truth) <= Z * se, (lam, mean, truth, se)


def test_the_unweighted_label_mean_of_a_disagreement_draw_is_biased():
    """The check above can fail: the plain mean of the drawn labels (ignoring pi) misses."""
    judge, human = population(6)
    score = np.abs(judge - judge.mean())
    means = [float(human[list(disagreement_sample(disagreement=score, n=30,
                                                  seed=s).positions)].mean())
             for s in range(800)]
    se = float(np.std(means)) / math.sqrt(len(means))
    assert abs(float(np.mean(means)) - float(human.mean())) > Z * se


def test_same_seed_same_draw_and_extreme_magnitudes_give_the_same_design():
    d = sizes_with_ties_and_zeros(40, 8)
    base = disagreement_sample(disagreement=d, n=7, seed=11)
    assert base == disagreement_sample(disagreement=d, n=7, seed=11)
    assert base.positions != disagreement_sample(disagreement=d, n=7, seed=12).positions
    assert disagreement_sample(disagreement=d * 2.0**900, n=7, seed=11) == base
    assert disagreement_sample(disagreement=d * 2.0**-1000, n=7, seed=11) == base
    tiny = disagreement_sample(disagreement=d * 1e-300, n=7, seed=11)
    huge = active_sample(priority=d * 1e300, n=7, seed=11)
    for other in (tiny, huge):
        assert np.allclose(other.probabilities, base.probabilities, rtol=1e-12)
    assert np.allclose(inclusion_probabilities(sizes=d * 1e300, n=7),
                       inclusion_probabilities(sizes=d, n=7), rtol=1e-12)
    values = np.array([[1e300, -1e300], [3e-300, np.nan], [2.0, 2.0]])
    assert spread(values=values) == pytest.approx([1e300, 0.0, 0.0], rel=1e-12)


def test_spread_is_the_standard_deviation_of_each_rows_finite_values():
    rng = np.random.default_rng(9)
    x = np.round(rng.normal(size=(200, 4)), 1)
    x[rng.random(x.shape) < 0.25] = np.nan
    got = spread(values=x)
    for row, value in zip(x, got, strict=True):
        finite = row[np.isfinite(row)]
        assert value == (pytest.approx(float(np.std(finite)), abs=1e-12)
                         if finite.size >= 2 else 0.0)


def test_every_strategy_refuses_bad_input_with_a_sentence():
    ok = np.ones(10)
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: random_sample(candidates=10, n=11, seed=0),
         "cannot draw 11 items: only 10 of the 10 candidates are left"),
        (lambda: random_sample(candidates=10, n=9, seed=0, exclude=[1, 2]),
         r"only 8 of the 10 candidates are left to label \(2 excluded"),
        (lambda: random_sample(candidates=10, n=0, seed=0), "a positive integer, got 0"),
        (lambda: random_sample(candidates=10, n=2, seed=-1), "non-negative integer"),
        (lambda: random_sample(candidates=10, n=2, seed=0, exclude=[10]),
         "excluded position 10 is not one of the 10 candidates"),
        (lambda: disagreement_sample(disagreement=[1.0, -0.5, 2.0], n=1, seed=0),
         "disagreement of candidate 1 is -0.5"),
        (lambda: disagreement_sample(disagreement=[1.0, np.nan], n=1, seed=0),
         "disagreement of candidate 1 is nan"),
        (lambda: active_sample(priority=[1.0, np.inf], n=1, seed=0),
         "priority of candidate 1 is inf"),
        (lambda: active_sample(priority=ok, n=2, seed=0, uniform_share=0.0),
         r"uniform share must lie in \(0, 1\]"),
        (lambda: stratified_sample(strata=list("aabb"), n=2, seed=0, allocation="neyman"),
         "allocation must be one of proportional, equal"),
        (lambda: stratified_sample(strata=list("aabbcc"), n=5, seed=0),
         "at least 2 in each of the 3 non-empty strata: that needs 6"),
        (lambda: active_binary_sample(verdicts=[0, 1, 0.5], n=1, seed=0),
         "verdict of candidate 2 is 0.5, not 0 or 1"),
        (lambda: active_binary_sample(verdicts=[0, 1, np.nan], n=1, seed=0),
         "verdict of candidate 2 is nan"),
        (lambda: active_binary_sample(verdicts=[0, 1, 1, 0], n=2, seed=0, specificity=0.5,
                                      sensitivity=0.5, minimum=0),
         "no better than chance"),
        (lambda: Draw((1, 2), (0.5, 0.5), "random", 0).first(3), "has no first 3"),
        (lambda: active_sample(n=1, seed=0), "either a priority .* or the judge's uncertainty"),
        (lambda: active_sample(priority=ok, uncertainty=ok, n=1, seed=0), "exactly one"),
        (lambda: active_sample(uncertainty=[0.2, -0.1], n=1, seed=0),
         "uncertainty of candidate 1 is -0.1"),
        (lambda: active_sample(uncertainty=[np.nan, 0.1], n=1, seed=0),
         "uncertainty of candidate 0 is nan"),
        (lambda: active_sample(uncertainty=ok, n=2, seed=0, uniform_share=1.5),
         r"uniform share must lie in \(0, 1\]"),
    ]
    for call, message in calls:
        with pytest.raises(SamplingError, match=message):
            call()
