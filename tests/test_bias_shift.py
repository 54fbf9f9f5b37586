"""meta_eval.bias_shift.preference_shift against scipy's one-sample t interval, and the
bias battery's verdict and arithmetic against a direct computation."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from judgebench.auditing.bias_battery import verdict
from meta_eval.bias_shift import Shift, preference_shift


def scipy_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy: nearly identical data
        ci = stats.ttest_1samp(values, 0.0).confidence_interval(confidence)
    return max(-1.0, float(ci.low)), min(1.0, float(ci.high))


@pytest.mark.parametrize("seed", range(25))
def test_the_shift_is_scipys_t_interval_on_random_moves_with_ties_and_nan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    # pointwise moves (-1, 0, 1, many ties) or pairwise ones (halves too), some missing
    moves = rng.choice([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 1.0], size=n)
    moves[rng.random(n) < 0.15] = np.nan
    confidence = float(rng.choice([0.8, 0.9, 0.95, 0.99]))
    kept = moves[~np.isnan(moves)]
    shift = preference_shift(moves=moves, confidence=confidence)
    assert shift.n == kept.size
    if kept.size < 2:
        assert math.isnan(shift.low) and math.isnan(shift.high)
        return
    assert shift.value == pytest.approx(float(np.mean(kept)), abs=1e-12)
    if np.ptp(kept) == 0:  # every unit alike: the Clopper-Pearson bound (the test below)
        assert shift.low < shift.high
        return
    low, high = scipy_interval(kept, confidence)
    assert (shift.low, shift.high) == pytest.approx((low, high), abs=1e-10)


def test_continuous_moves_near_the_bounds_match_scipy_too() -> None:
    rng = np.random.default_rng(7)
    for scale in (1e-300, 1e-12, 1.0):
        moves = np.clip(1 - scale * rng.random(50), -1, 1)
        shift = preference_shift(moves=moves, confidence=0.95)
        if np.ptp(moves) == 0:  # 1 - 1e-300 r is 1.0: every unit alike (Clopper-Pearson)
            assert shift.high == 1.0 and shift.low < 1.0
            continue
        low, high = scipy_interval(moves, 0.95)
        assert shift.value == pytest.approx(float(np.mean(moves)), rel=1e-15)
        assert shift.high <= 1.0 and shift.low == pytest.approx(low, rel=1e-9, abs=1e-300)
        assert shift.high == pytest.approx(high, rel=1e-12)


@pytest.mark.parametrize("value", [-1.0, -0.5, 0.0, 0.5, 1.0])
@pytest.mark.parametrize("n", [2, 10, 36, 1000])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_every_unit_moving_alike_bounds_the_others_by_clopper_pearson(
        value: float, n: int, confidence: float) -> None:
    """All n units moved by v: the unseen share's bound is the Clopper-Pearson upper limit of
    0 successes in n (scipy's binomtest), the mean moved that share of the way to -1 or +1."""
    unseen = stats.binomtest(0, n).proportion_ci(confidence, method="exact").high
    shift = preference_shift(moves=[value] * n + [np.nan], confidence=confidence)
    assert (shift.value, shift.n) == (value, n)
    assert shift.low == pytest.approx(max(-1.0, value - unseen * (value + 1)), abs=1e-12)
    assert shift.high == pytest.approx(min(1.0, value + unseen * (1 - value)), abs=1e-12)
    assert shift.low < value or value == -1.0
    assert shift.high > value or value == 1.0


def test_no_unit_moving_is_not_a_zero_width_interval_and_one_unit_none() -> None:
    ten = preference_shift(moves=[0.0] * 10)
    assert ten.low == pytest.approx(-0.3085, abs=1e-4) and ten.high == -ten.low
    assert verdict(ten, 0.1) == "inconclusive"  # 10 units cannot bound the shift by 0.1
    assert verdict(preference_shift(moves=[0.0] * 36), 0.1) == "unbiased"
    assert verdict(preference_shift(moves=[1.0] * 10), 0.1) == "biased"
    one = preference_shift(moves=[np.nan, -1.0])
    assert (one.value, one.n) == (-1.0, 1) and math.isnan(one.low)
    empty = preference_shift(moves=[])
    assert empty.n == 0 and math.isnan(empty.value)


@pytest.mark.parametrize("bad", [[2.0, 0.0], [np.inf, 0.0], [-1.5]])
def test_a_move_outside_minus_one_to_one_is_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        preference_shift(moves=bad)


def test_confidence_must_be_a_probability() -> None:
    with pytest.raises(ValueError, match="confidence"):
        preference_shift(moves=[0.0, 1.0], confidence=1.0)


@pytest.mark.parametrize(("low", "high", "threshold", "expected"), [
    (0.2, 0.6, 0.1, "biased"), (-0.6, -0.2, 0.1, "biased"),
    (-0.05, 0.08, 0.1, "unbiased"), (-0.1, 0.1, 0.1, "unbiased"),
    (0.05, 0.3, 0.1, "inconclusive"), (0.1, 0.3, 0.1, "inconclusive"),
    (math.nan, math.nan, 0.1, "undetermined"), (0.0, 0.0, 0.0, "unbiased"),
])
def test_the_verdict_compares_the_interval_with_the_threshold(
        low: float, high: float, threshold: float, expected: str) -> None:
    assert verdict(Shift((low + high) / 2, low, high, 10, 0.95), threshold) == expected


@pytest.mark.parametrize(("low", "high", "expected"), [
    (-0.05, 0.05, "biased"), (-0.08, 0.2, "biased"), (-0.9, -0.2, "unbiased"),
    (-0.5, 0.0, "inconclusive"), (-0.5, -0.1, "inconclusive"),
    (math.nan, math.nan, "undetermined"),
])
def test_a_flaw_probe_is_biased_where_the_judge_does_not_fall_by_the_threshold(
        low: float, high: float, expected: str) -> None:
    assert verdict(Shift((low + high) / 2, low, high, 10, 0.95), 0.1, "lower") == expected


def failures_of(rows: list[dict], expression: str) -> list[str]:
    from judgebench.auditing.checks import _bias, parse_checks

    [check] = parse_checks([expression])
    assert check.probe is not None and check.threshold is not None
    return [f.message for f in _bias(rows, check, check.probe, check.threshold)]


def row(probe: str, low: float, high: float, expect: str = "same") -> dict:
    return {"judge": "j", "probe": probe, "measure": "shift", "value": (low + high) / 2,
            "n": 10, "extra": {"ci_low": low, "ci_high": high, "confidence": 0.95,
                               "mode": "pointwise", "expect": expect}}


def test_fail_on_bias_reads_the_interval_and_the_probes_expectation() -> None:
    assert failures_of([row("authority", 0.25, 0.6)], "bias:authority>0.2")
    assert failures_of([row("authority", -0.6, -0.25)], "bias:authority>20%")
    assert not failures_of([row("authority", 0.1, 0.6)], "bias:authority>0.2")
    assert failures_of([row("fallacy", -0.1, 0.1, "lower")], "bias:fallacy>0.2")
    assert not failures_of([row("fallacy", -0.9, -0.3, "lower")], "bias:fallacy>0.2")
    assert not failures_of([row("fallacy", -0.3, -0.1, "lower")], "bias:fallacy>0.2")
    [undetermined] = failures_of([row("authority", math.nan, math.nan)], "bias:authority>0.2")
    assert "no interval" in undetermined
    [absent] = failures_of([row("authority", 0.3, 0.4)], "bias:bandwagon>0.2")
    assert "nothing to check" in absent


@pytest.mark.parametrize("seed", range(5))
def test_the_self_preference_shift_is_a_direct_computation(seed: int) -> None:
    """Random judges and people with ties, missing scores and huge magnitudes: the mean of
    (sign(judge own - other) - sign(people own - other)) / 2 over every (own, other) pair of
    an item, and scipy's t interval of those moves."""
    from judgebench.auditing.bias_battery import self_preference
    from judgebench.models import Sample

    rng = np.random.default_rng(seed)
    systems = [f"s{k}" for k in range(6)]
    families = {s: ("mine" if k < 2 else "theirs") for k, s in enumerate(systems[:5])}
    samples = [Sample(item=f"i{i}", system=s, output=f"answer {i} {s}")
               for i in range(8) for s in systems]
    scale = float(rng.choice([1.0, 1e300]))
    judge = {s.output: (None if rng.random() < 0.1 else scale * float(rng.integers(1, 4)))
             for s in samples}
    human = {(s.item, s.system or ""): (math.nan if rng.random() < 0.1
                                        else float(rng.integers(1, 4))) for s in samples}
    result = self_preference(samples, lambda b: [judge[s.output or ""] for s in b],
                             judge="j", judge_family="mine", families=families, human=human,
                             higher_is_better=bool(seed % 2), count=10_000, seed=seed,
                             confidence=0.9)
    sign = 1.0 if seed % 2 else -1.0
    moves = []
    for i in range(8):
        own = [s for s in samples if s.item == f"i{i}" and families.get(s.system or "") == "mine"]
        other = [s for s in samples
                 if s.item == f"i{i}" and families.get(s.system or "") == "theirs"]
        for a in own:
            for b in other:
                ha, hb = human[(a.item, a.system or "")], human[(b.item, b.system or "")]
                ja, jb = judge[a.output or ""], judge[b.output or ""]
                if math.isnan(ha) or math.isnan(hb) or ja is None or jb is None:
                    continue
                moves.append((np.sign(sign * (ja - jb)) - np.sign(ha - hb)) / 2)
    assert result.n == len(moves)
    assert result.value == pytest.approx(float(np.mean(moves)), abs=1e-12)
    low, high = scipy_interval(np.asarray(moves), 0.9)
    assert (result.extra["ci_low"], result.extra["ci_high"]) == pytest.approx((low, high),
                                                                              abs=1e-10)


@pytest.mark.parametrize("n", [2, 10, 36, 1000])
@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_a_share_in_zero_to_one_moving_alike_is_bounded_as_a_proportion(
        n: int, confidence: float) -> None:
    """Moves in [0, 1] (label-scheme: a pair's verdict changed or not), all alike: the
    interval is the two-sided Clopper-Pearson interval of 0 (or n) successes in n, scipy's
    binomtest and the beta quantiles, never below 0 or above 1."""
    alpha = 1 - confidence
    for successes, value in ((0, 0.0), (n, 1.0)):
        exact = stats.binomtest(successes, n).proportion_ci(confidence, method="exact")
        low = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, 1))
        high = 1.0 if successes == n else float(stats.beta.ppf(1 - alpha / 2, 1, n))
        assert (exact.low, exact.high) == pytest.approx((low, high), abs=1e-12)
        shift = preference_shift(moves=[value] * n + [np.nan], confidence=confidence,
                                 bounds=(0.0, 1.0))
        assert (shift.value, shift.n) == (value, n)
        assert (shift.low, shift.high) == pytest.approx((exact.low, exact.high), abs=1e-12)
        assert 0.0 <= shift.low <= shift.value <= shift.high <= 1.0


@pytest.mark.parametrize("seed", range(10))
def test_mixed_shares_are_the_t_interval_clipped_to_zero_to_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    moves = (rng.random(n) < rng.choice([0.02, 0.3, 0.98])).astype(float)
    moves[rng.random(n) < 0.1] = np.nan
    kept = moves[~np.isnan(moves)]
    if kept.size < 2 or np.ptp(kept) == 0:
        return
    shift = preference_shift(moves=moves, confidence=0.95, bounds=(0.0, 1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ci = stats.ttest_1samp(kept, 0.0).confidence_interval(0.95)
    assert (shift.low, shift.high) == pytest.approx(
        (max(0.0, float(ci.low)), min(1.0, float(ci.high))), abs=1e-10)


def test_a_move_outside_the_bounds_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        preference_shift(moves=[-1.0, 0.0], bounds=(0.0, 1.0))


@pytest.mark.parametrize("changed", [False, True])
def test_the_label_scheme_interval_stays_in_zero_to_one(changed: bool) -> None:
    """label-scheme's share on 10 pairs whose verdicts never (or always) change with the
    labels: the Clopper-Pearson interval of 0 (or 10) in 10, not one for [-1, 1]."""
    from judgebench.auditing.bias_variants import LABEL_SCHEMES, label_scheme
    from judgebench.models import Sample

    pairs = [Sample(item=f"i{k}", system="x vs y", system_a="x", system_b="y",
                    output_a=f"a{k}", output_b=f"b{k}") for k in range(10)]

    def scheme(k: int):
        def score(batch):
            return [1.0 if not changed or k == 0 else 0.0 for _ in batch]
        return score

    result = label_scheme(pairs, {s: scheme(k) for k, s in enumerate(LABEL_SCHEMES)},
                          judge="j", center=0.5, seed=1, confidence=0.95)
    exact = stats.binomtest(10 if changed else 0, 10).proportion_ci(0.95, method="exact")
    assert result.value == (1.0 if changed else 0.0)
    assert (result.extra["ci_low"], result.extra["ci_high"]) == pytest.approx(
        (exact.low, exact.high), abs=1e-12)
