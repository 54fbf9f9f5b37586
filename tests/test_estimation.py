"""meta_eval.estimation against the authors' PPI++ implementation (ppi-python) and direct
computations: points, intervals, lam, on Gaussian data shaped as ppi-python's own tests draw it,
on ties, NaN masks and extreme magnitudes."""

from __future__ import annotations

import math
import statistics

import numpy as np
import ppi_py
import pytest

from meta_eval.estimation import (
    EstimationError,
    active_label_priority,
    human_only_mean,
    judge_only_mean,
    labels_to_reach,
    paired_difference,
    pairwise_win_rates,
    ppi_mean,
    stratified_ppi_mean,
    two_sided_z,
    weighted_ppi_mean,
)


def _case(kind: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(judge, human with NaN where unlabelled) for one kind of data."""
    rng = np.random.default_rng(seed)
    items = int(rng.integers(200, 3000))
    share = float(rng.uniform(0.03, 0.4))
    if kind == "gaussian":  # ppi-python's tests: Y ~ N(0, 1), Yhat = Y + bias + noise
        y = rng.normal(size=items)
        f = y + rng.normal(0.2, 1.0, size=items) * rng.uniform(0.1, 2.0)
    elif kind == "likert":  # 1-5 ratings, the judge's 1-5 ratings: heavy ties
        y = rng.integers(1, 6, size=items).astype(float)
        f = np.clip(y + rng.integers(-1, 3, size=items), 1, 5).astype(float)
    elif kind == "binary":
        y = (rng.random(items) < 0.35).astype(float)
        f = np.where(rng.random(items) < 0.8, y, 1 - y)
    elif kind == "anticorrelated":  # lam clips at 0
        y = rng.normal(size=items)
        f = -y + rng.normal(size=items) * 0.3
    elif kind == "huge":
        y = rng.normal(size=items) * 1e100
        f = y * 0.9 + rng.normal(size=items) * 3e99
    elif kind == "tiny":
        y = rng.normal(size=items) * 1e-100
        f = y + rng.normal(size=items) * 1e-100
    else:
        raise AssertionError(kind)
    labelled = rng.random(items) < share
    labelled[:2] = True
    return f, np.where(labelled, y, np.nan)


KINDS = ("gaussian", "likert", "binary", "anticorrelated", "huge", "tiny")


def _close(ours: float, theirs: float, scale: float) -> None:
    assert abs(ours - theirs) <= 1e-8 * max(abs(theirs), scale), (ours, theirs)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("lam", [None, 0.0, 0.5, 1.0])
def test_ppi_mean_equals_ppi_python(kind: str, seed: int, lam: float | None) -> None:
    f, h = _case(kind, seed)
    labelled = np.isfinite(h)
    y, fl, fu = h[labelled], f[labelled], f[~labelled]
    ours = ppi_mean(judge=f, human=h, confidence=0.9, lam=lam)
    (lower,), (upper,) = ppi_py.ppi_mean_ci(y, fl, fu, alpha=0.1, lam=lam)
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, fl, fu, lam=lam)))
    scale = float(np.max(np.abs(h[labelled])) * 1e-3)
    _close(ours.point, point, scale)
    _close(ours.lower, lower, scale)
    _close(ours.upper, upper, scale)
    _close(ours.standard_error, (upper - lower) / (2 * two_sided_z(0.9)), scale)
    assert ours.labels == labelled.sum() and ours.items == f.size
    if kind == "anticorrelated" and lam is None:
        assert ours.lam == 0.0


def _joined(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """ppi-python's (Y, Yhat, Yhat_unlabeled) as one judge column and one human column."""
    return (np.concatenate([yhat, yhat_unlabelled]),
            np.concatenate([y, np.full(yhat_unlabelled.size, np.nan)]))


def test_ppi_pythons_own_examples() -> None:
    """The data of ppi-python's tests/test_mean.py (test_ppi_mean_pointestimate and
    test_ppi_mean_ci), seeded."""
    rng = np.random.default_rng(2023)
    y = rng.normal(0, 1, 100)
    judge, human = _joined(y, y + 2, np.ones(10000) * 2)
    assert ppi_mean(judge=judge, human=human).point == pytest.approx(
        float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, y + 2, np.ones(10000) * 2))),
        abs=1e-12)
    assert ppi_mean(judge=judge, human=human).point == pytest.approx(0.0, abs=1e-12)
    for _ in range(3):
        y, yhat, unlabelled = (rng.normal(0, 1, 10000), rng.normal(-2, 1, 10000),
                               rng.normal(-2, 1, 10000))
        judge, human = _joined(y, yhat, unlabelled)
        for alpha in (0.5, 0.2, 0.1, 0.05, 0.01):
            ours = ppi_mean(judge=judge, human=human, confidence=1 - alpha)
            (lower,), (upper,) = ppi_py.ppi_mean_ci(y, yhat, unlabelled, alpha=alpha)
            _close(ours.lower, lower, 1e-3)
            _close(ours.upper, upper, 1e-3)


@pytest.mark.parametrize("kind", KINDS)
def test_human_only_equals_classical_mean_ci(kind: str) -> None:
    _, h = _case(kind, 11)
    y = h[np.isfinite(h)]
    ours = human_only_mean(human=h, confidence=0.8)
    lower, upper = ppi_py.classical_mean_ci(y, alpha=0.2)
    scale = float(np.max(np.abs(y)) * 1e-3)
    _close(ours.lower, float(lower), scale)
    _close(ours.upper, float(upper), scale)
    assert ours.effective_labels == pytest.approx(y.size)


def test_judge_only_is_the_judges_mean() -> None:
    f, _ = _case("likert", 3)
    ours = judge_only_mean(judge=f, confidence=0.95)
    se = statistics.pstdev(f.tolist()) / math.sqrt(f.size)
    assert ours.point == pytest.approx(statistics.fmean(f.tolist()), rel=1e-12)
    assert ours.upper - ours.point == pytest.approx(1.959963984540054 * se, rel=1e-10)
    assert ours.labels == 0 and ours.effective_labels == 0


def test_effective_labels_is_the_human_only_variance_ratio() -> None:
    f, h = _case("gaussian", 4)
    ppi = ppi_mean(judge=f, human=h)
    human = human_only_mean(human=h)
    assert ppi.effective_labels == pytest.approx(
        ppi.labels * (human.standard_error / ppi.standard_error) ** 2, rel=1e-12)
    assert ppi.labels_worth == pytest.approx(ppi.effective_labels - ppi.labels)


@pytest.mark.parametrize("exponent", [-1000, -900, 900, 980])
def test_extreme_magnitudes_scale_exactly(exponent: int) -> None:
    f, h = _case("gaussian", 7)
    base = ppi_mean(judge=f, human=h)
    scaled = ppi_mean(judge=np.ldexp(f, exponent), human=np.ldexp(h, exponent))
    for field in ("point", "lower", "upper", "standard_error"):
        value = getattr(scaled, field)
        assert math.isfinite(value) and value != 0
        assert value == pytest.approx(math.ldexp(getattr(base, field), exponent), rel=1e-12)
    assert scaled.lam == pytest.approx(base.lam, rel=1e-12)


def test_one_huge_value_does_not_overflow() -> None:
    f, h = _case("gaussian", 8)
    h[np.flatnonzero(np.isfinite(h))[0]] = 1e308
    estimate = ppi_mean(judge=f, human=h)
    assert math.isfinite(estimate.upper) and estimate.upper > estimate.point > 0


def test_every_item_labelled_is_human_only() -> None:
    rng = np.random.default_rng(0)
    y = rng.normal(size=50)
    f = y + rng.normal(size=50)
    ppi = ppi_mean(judge=f, human=y)
    human = human_only_mean(human=y)
    assert ppi.lam == 0.0
    assert (ppi.point, ppi.lower, ppi.upper) == pytest.approx(
        (human.point, human.lower, human.upper), rel=1e-14)


def test_refusals_name_the_item() -> None:
    f, h = _case("gaussian", 1)
    f[17] = np.nan
    with pytest.raises(EstimationError, match="item 17"):
        ppi_mean(judge=f, human=h)
    with pytest.raises(EstimationError, match="at least 2 human labels, got 1"):
        ppi_mean(judge=np.ones(5), human=[1.0, np.nan, np.nan, np.nan, np.nan])
    with pytest.raises(EstimationError, match="confidence"):
        ppi_mean(judge=np.ones(3), human=np.ones(3), confidence=1.0)
    with pytest.raises(EstimationError, match="infinite"):
        ppi_mean(judge=np.ones(3), human=[1.0, np.inf, 0.0])
    with pytest.raises(EstimationError, match="item 1 is infinite"):
        human_only_mean(human=[1.0, -np.inf, 0.0])


def _direct_ppi(y: list[float], fl: list[float], fu: list[float]) -> tuple[float, float]:
    """PPI++ for one stratum written out with the statistics module (point, variance)."""
    n, nu = len(y), len(fu)
    every = fl + fu
    cov = sum((a - statistics.fmean(y)) * (b - statistics.fmean(fl))
              for a, b in zip(y, fl, strict=True)) / n
    lam = min(1.0, max(0.0, cov / ((1 + n / nu) * statistics.variance(every))))
    rect = [a - lam * b for a, b in zip(y, fl, strict=True)]
    point = lam * statistics.fmean(fu) + statistics.fmean(rect)
    variance = lam**2 * statistics.pvariance(fu) / nu + statistics.pvariance(rect) / n
    return point, variance


@pytest.mark.parametrize("seed", range(4))
def test_stratified_equals_direct_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = 1200
    strata = rng.integers(0, 4, size=items)
    y = rng.integers(1, 6, size=items).astype(float) + strata
    f = np.round(y + rng.normal(0.5, 1, size=items) * (1 + strata))
    rates = np.array([0.02, 0.05, 0.1, 0.3])
    labelled = rng.random(items) < rates[strata]
    h = np.where(labelled, y, np.nan)
    ours = stratified_ppi_mean(judge=f, human=h, strata=strata, confidence=0.9)
    point = variance = human_variance = 0.0
    for s in range(4):
        member = strata == s
        lab, unl = member & labelled, member & ~labelled
        p, v = _direct_ppi(y[lab].tolist(), f[lab].tolist(), f[unl].tolist())
        w = member.sum() / items
        point += w * p
        variance += w * w * v
        human_variance += w * w * statistics.pvariance(y[lab].tolist()) / lab.sum()
    z = two_sided_z(0.9)
    assert ours.point == pytest.approx(point, rel=1e-10)
    assert ours.standard_error == pytest.approx(math.sqrt(variance), rel=1e-10)
    assert ours.upper == pytest.approx(point + z * math.sqrt(variance), rel=1e-10)
    assert ours.effective_labels == pytest.approx(labelled.sum() * human_variance / variance,
                                                  rel=1e-10)


def test_stratified_refuses_a_stratum_without_labels() -> None:
    with pytest.raises(EstimationError, match="stratum 'b'"):
        stratified_ppi_mean(judge=[1.0, 2, 3, 4, 5], human=[1, 2, np.nan, 4, np.nan],
                            strata=["a", "a", "b", "b", "b"])


@pytest.mark.parametrize("seed", range(4))
def test_weighted_equals_direct_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items = 800
    length = rng.random(items)
    y = rng.normal(size=items) + length
    f = np.round(y + 0.8 * length + rng.normal(size=items) * 0.5, 1)
    pi = 0.05 + 0.4 * length
    labelled = rng.random(items) < pi
    h = np.where(labelled, y, np.nan)
    ours = weighted_ppi_mean(judge=f, human=h, inclusion_probability=pi, confidence=0.9)

    def terms(lam: float) -> list[float]:
        out = []
        for i in range(items):
            if labelled[i]:
                out.append(lam * f[i] + (y[i] - lam * f[i]) / pi[i])
            else:
                out.append(lam * f[i])
        return out

    assert ours.lam is not None
    zs = terms(ours.lam)
    assert ours.point == pytest.approx(statistics.fmean(zs), rel=1e-10)
    assert ours.standard_error == pytest.approx(
        math.sqrt(statistics.pvariance(zs) / items), rel=1e-10)
    grid = [statistics.pvariance(terms(lam)) for lam in np.linspace(0, 1, 41)]
    assert statistics.pvariance(zs) <= min(grid) * (1 + 1e-12)
    horvitz = terms(0.0)
    assert ours.effective_labels == pytest.approx(
        labelled.sum() * statistics.pvariance(horvitz) / statistics.pvariance(zs), rel=1e-10)


def test_weighted_refuses_a_labelled_item_with_probability_zero() -> None:
    with pytest.raises(EstimationError, match="item 1"):
        weighted_ppi_mean(judge=[1.0, 2, 3], human=[1.0, 2, np.nan],
                          inclusion_probability=[0.5, 0.0, 0.5])


def test_paired_difference_is_ppi_on_differences() -> None:
    rng = np.random.default_rng(5)
    items = 1500
    quality = rng.normal(size=items)
    ya, yb = quality + 0.3 + rng.normal(size=items), quality + rng.normal(size=items)
    fa, fb = ya + 0.5 + rng.normal(size=items), yb + rng.normal(size=items)
    labelled = rng.random(items) < 0.1
    ha, hb = np.where(labelled, ya, np.nan), np.where(labelled, yb, np.nan)
    ours = paired_difference(judge_a=fa, judge_b=fb, human_a=ha, human_b=hb, confidence=0.9)
    d, dhat = ya - yb, fa - fb
    (lower,), (upper,) = ppi_py.ppi_mean_ci(d[labelled], dhat[labelled], dhat[~labelled],
                                             alpha=0.1)
    assert (ours.lower, ours.upper) == pytest.approx((lower, upper), rel=1e-10)
    assert ours.method == "paired-ppi++"


def test_win_rates_orient_each_pair() -> None:
    rng = np.random.default_rng(6)
    rows = 900
    systems = np.array(["x", "y", "z"])
    first = rng.integers(0, 3, size=rows)
    second = (first + rng.integers(1, 3, size=rows)) % 3
    truth = rng.choice([0.0, 0.5, 1.0], size=rows)
    judge = np.where(rng.random(rows) < 0.75, truth, rng.choice([0.0, 0.5, 1.0], size=rows))
    human = np.where(rng.random(rows) < 0.3, truth, np.nan)
    rates = pairwise_win_rates(first=systems[first].tolist(), second=systems[second].tolist(),
                               judge=judge, human=human, confidence=0.9)
    assert set(rates) == {(a, b) for a in "xyz" for b in "xyz" if a != b}
    rows_xz = ((first == 0) & (second == 2)) | ((first == 2) & (second == 0))
    flip = first[rows_xz] == 2
    fj = np.where(flip, 1 - judge[rows_xz], judge[rows_xz])
    yh = np.where(flip, 1 - human[rows_xz], human[rows_xz])
    lab = np.isfinite(yh)
    (lower,), (upper,) = ppi_py.ppi_mean_ci(yh[lab], fj[lab], fj[~lab], alpha=0.1)
    assert (rates[("x", "z")].lower, rates[("x", "z")].upper) == pytest.approx(
        (lower, upper), rel=1e-10)
    assert rates[("z", "x")].point == pytest.approx(1 - rates[("x", "z")].point)
    assert rates[("z", "x")].lower == pytest.approx(1 - upper, rel=1e-10)
    with pytest.raises(EstimationError, match="row 0"):
        pairwise_win_rates(first=["a"], second=["b"], judge=[2.0], human=[1.0])


@pytest.mark.parametrize("width", [0.05, 0.1, 0.2])
def test_labels_to_reach_is_the_smallest_count(width: float) -> None:
    f, h = _case("gaussian", 9)
    estimate = ppi_mean(judge=f, human=h, confidence=0.9)
    more = labels_to_reach(estimate=estimate, target_width=width)
    z = two_sided_z(0.9)

    def full_width(labels: int) -> float:
        return 2 * z * math.sqrt(estimate.labelled_variance / labels + estimate.fixed_variance)

    if more is None:
        assert (width / (2 * z)) ** 2 <= estimate.fixed_variance
    elif more == 0:
        assert estimate.upper - estimate.lower <= width
    else:
        assert full_width(estimate.labels + more) <= width < full_width(estimate.labels + more - 1)
    assert labels_to_reach(estimate=estimate, target_width=1e-9) is None
    assert labels_to_reach(estimate=estimate, target_width=1e9) == 0


def test_active_priority_is_the_binned_rectifier() -> None:
    judge = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.25])
    human = np.array([0.0, 1.0, 1.0, 1.0, np.nan, np.nan, np.nan])
    priority = active_label_priority(judge=judge, human=human, lam=1.0, bins=2)
    # one edge, the labelled judge scores' median 0.5: below it the squared rectifiers are 0
    # and 1 (mean 0.5), at or above it 0 and 0
    assert np.isnan(priority[:4]).all()
    assert priority[4:] == pytest.approx([math.sqrt(0.5), 0.0, math.sqrt(0.5)])


@pytest.mark.parametrize("exponent", [-1000, 980])
def test_every_form_scales_exactly(exponent: int) -> None:
    rng = np.random.default_rng(12)
    items = 600
    y = rng.normal(size=items)
    f = y + rng.normal(size=items)
    strata = rng.integers(0, 3, size=items)
    pi = np.full(items, 0.2)
    h = np.where(rng.random(items) < pi, y, np.nan)
    forms = {
        "stratified": lambda s: stratified_ppi_mean(judge=f * s, human=h * s, strata=strata),
        "weighted": lambda s: weighted_ppi_mean(judge=f * s, human=h * s,
                                                inclusion_probability=pi),
        "paired": lambda s: paired_difference(judge_a=f * s, judge_b=f[::-1] * s,
                                              human_a=h * s, human_b=h[::-1] * s),
        "human-only": lambda s: human_only_mean(human=h * s),
        "judge-only": lambda s: judge_only_mean(judge=f * s),
    }
    for name, form in forms.items():
        base, scaled = form(1.0), form(math.ldexp(1.0, exponent))
        for field in ("point", "lower", "upper", "standard_error"):
            value = getattr(scaled, field)
            assert math.isfinite(value) and value != 0, (name, field)
            assert value == pytest.approx(math.ldexp(getattr(base, field), exponent),
                                          rel=1e-12), (name, field)
