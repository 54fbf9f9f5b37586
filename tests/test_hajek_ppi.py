"""meta_eval.estimation.hajek_ppi_mean, the centred inverse-probability-weighted PPI++ mean:
against a direct computation written here from the formulas (exact rational arithmetic, lam
found as the vertex of the variance parabola) on data with ties, unequal and tiny inclusion
probabilities and extreme magnitudes; its identities with ppi_mean; the shift a judge's offset
makes (none here, some in the uncentred form); refusals; and its interval's coverage over
1,000 seeded studies drawn by active sampling."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from meta_eval.estimation import (
    EstimationError,
    active_label_priority,
    hajek_ppi_mean,
    human_only_mean,
    ppi_mean,
    two_sided_z,
    weighted_ppi_mean,
)
from meta_eval.sampling import active_sample, random_sample

STUDIES = 1000
NOMINAL = 0.9
MC_SE = math.sqrt(NOMINAL * (1 - NOMINAL) / STUDIES)
FLOOR = NOMINAL - 3 * MC_SE  # 0.8715, as tests/test_estimation_coverage.py


def direct(f: np.ndarray, y: np.ndarray, pi: np.ndarray, lam: float | None
           ) -> tuple[float, float, float, float]:
    """(point, se, lam, human-only se) from the docstring's formulas in exact rationals:
    theta = lam mean(f) + sum xi w (Y - lam f) / sum xi w with w = 1 / pi;
    se^2 = sum psi^2 / N^2, psi_i = lam (f_i - mean f) + xi_i (N w_i / sum xi w) (r_i - mu_r);
    lam the clipped minimiser of se^2, found from se^2 at lam = 0, 1/2, 1 (a parabola)."""
    items = len(f)
    fq = [Fraction(float(v)) for v in f]
    labelled = [k for k in range(items) if math.isfinite(y[k])]
    yq = {k: Fraction(float(y[k])) for k in labelled}
    wq = {k: 1 / Fraction(float(pi[k])) for k in labelled}
    total_w = sum(wq.values())
    f_bar = sum(fq) / items

    def variance(g: Fraction) -> Fraction:
        mu = sum(wq[k] * (yq[k] - g * fq[k]) for k in labelled) / total_w
        psi = [g * (fq[i] - f_bar) for i in range(items)]
        for k in labelled:
            psi[k] += items * wq[k] / total_w * (yq[k] - g * fq[k] - mu)
        return Fraction(sum((p * p for p in psi), Fraction(0))) / items**2

    if lam is None:
        v0, vh, v1 = variance(Fraction(0)), variance(Fraction(1, 2)), variance(Fraction(1))
        curvature = 2 * (v1 - 2 * vh + v0)  # v(g) = a g^2 + b g + c: a = 2 (v1 - 2 vh + v0)
        slope = v1 - v0 - curvature  # b = v1 - v0 - a
        best = Fraction(0) if curvature == 0 else -slope / (2 * curvature)
        tuned = min(max(best, Fraction(0)), Fraction(1))
    else:
        tuned = Fraction(lam)
    mu_r = sum(wq[k] * (yq[k] - tuned * fq[k]) for k in labelled) / total_w
    point = tuned * f_bar + mu_r
    return (float(point), math.sqrt(variance(tuned)), float(tuned),
            math.sqrt(variance(Fraction(0))))


def case(seed: int, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(judge, human with NaN where unlabelled, pi) of one kind of data."""
    rng = np.random.default_rng(seed)
    items = int(rng.integers(60, 200))
    length = rng.random(items)
    y: np.ndarray
    if kind == "likert":  # 1-5 people, a judge on a 1-10 scale offset by length: ties
        y = np.clip(np.round(3 + rng.normal(size=items) + length), 1, 5)
        f = np.clip(np.round(2 * y + 3 * length + rng.normal(size=items)), 1, 10)
    elif kind == "binary":  # pass/fail against a judge's probability, tied to 1 decimal
        f = np.round(rng.beta(0.5, 0.5, size=items), 1)
        y = (rng.random(items) < f).astype(np.float64)
    else:  # anticorrelated: lam clips at 0
        y = rng.normal(size=items)
        f = -y + 0.3 * rng.normal(size=items)
    pi = np.round(0.05 + 0.6 * length, 2)  # tied probabilities
    labelled = rng.random(items) < pi
    labelled[:3] = True
    pi[1] = 1.0  # a census item
    if kind == "binary":  # every weight enormous (Hajek's mean does not see the scale)
        pi[1] = 0.9
        pi *= 1e-200
    return f, np.where(labelled, y, np.nan), pi


@pytest.mark.parametrize("kind", ["likert", "binary", "anticorrelated"])
@pytest.mark.parametrize("seed", range(3))
def test_equals_a_direct_computation(kind: str, seed: int) -> None:
    f, h, pi = case(seed, kind)
    for lam in (None, 0.0, 0.4, 1.0):
        ours = hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi, confidence=0.9,
                              lam=lam)
        point, se, tuned, se_human = direct(f, h, pi, lam)
        assert ours.lam == pytest.approx(tuned, abs=1e-9)
        assert ours.point == pytest.approx(point, rel=1e-9, abs=1e-12)
        assert ours.standard_error == pytest.approx(se, rel=1e-9)
        z = two_sided_z(0.9)
        assert (ours.lower, ours.upper) == pytest.approx((point - z * se, point + z * se),
                                                         rel=1e-9, abs=1e-12)
        labels = int(np.isfinite(h).sum())
        assert ours.labels == labels and ours.items == f.size
        assert ours.effective_labels == pytest.approx(labels * (se_human / se) ** 2,
                                                      rel=1e-8)
        assert ours.labelled_variance / labels + ours.fixed_variance == pytest.approx(
            se * se, rel=1e-9)
        assert ours.fixed_variance >= 0 and ours.method == "hajek-ppi++"
    if kind == "anticorrelated":
        assert hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi).lam == 0.0


@pytest.mark.parametrize("exponent", [-1000, -60, 900])
def test_extreme_magnitudes_scale_exactly(exponent: int) -> None:
    f, h, pi = case(7, "likert")
    base = hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi)
    scale = math.ldexp(1.0, exponent)
    scaled = hajek_ppi_mean(judge=f * scale, human=h * scale, inclusion_probability=pi)
    assert scaled.lam == base.lam
    for field in ("point", "lower", "upper", "standard_error"):
        value = getattr(scaled, field)
        assert math.isfinite(value) and value != 0, field
        assert value == pytest.approx(math.ldexp(getattr(base, field), exponent), rel=1e-12)
    assert scaled.effective_labels == pytest.approx(base.effective_labels, rel=1e-12)
    # 1e300 and 1e-300, not powers of two: the same up to rounding
    for factor in (1e300, 1e-300):
        other = hajek_ppi_mean(judge=f * factor, human=h * factor, inclusion_probability=pi)
        assert other.point == pytest.approx(base.point * factor, rel=1e-9)
        assert other.standard_error == pytest.approx(base.standard_error * factor, rel=1e-9)


def test_every_item_labelled_at_probability_1_is_the_human_only_interval() -> None:
    rng = np.random.default_rng(3)
    y = np.round(rng.normal(size=300), 1)
    f = y + rng.normal(size=300)
    for probability in (1.0, 0.37):  # equal: the weights' scale does not matter
        ours = hajek_ppi_mean(judge=f, human=y, inclusion_probability=np.full(300, probability),
                              confidence=0.9)
        for other in (ppi_mean(judge=f, human=y, confidence=0.9),
                      human_only_mean(human=y, confidence=0.9)):
            for field in ("point", "lower", "upper", "standard_error", "effective_labels"):
                assert getattr(ours, field) == pytest.approx(getattr(other, field), rel=1e-12)
        assert ours.lam == 0.0


def test_equal_probabilities_are_ppi_with_every_item_in_the_judges_mean() -> None:
    rng = np.random.default_rng(4)
    items, n = 900, 120
    length = rng.random(items)
    y = np.clip(np.round(3 + rng.normal(size=items) + length), 1, 5)
    f = y + 1.5 * length + rng.normal(size=items)
    draw = random_sample(candidates=items, n=n, seed=4)
    where = np.asarray(draw.positions)
    h = np.full(items, np.nan)
    h[where] = y[where]
    pi = np.full(items, n / items)
    # lam = 0: the labels' mean and var(Y) / n, as PPI++ at lam = 0
    zero, ppi_zero = (hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi, lam=0.0),
                      ppi_mean(judge=f, human=h, lam=0.0))
    for field in ("point", "lower", "upper", "standard_error"):
        assert getattr(zero, field) == pytest.approx(getattr(ppi_zero, field), rel=1e-12)
    # a given lam: PPI++ whose unlabelled set is every item (the labelled items' judge scores
    # are in the judge's mean), se^2 plus 2 lam cov(f, r) / N over the labelled items
    lam = 0.7
    ours = hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi, lam=lam)
    every = ppi_mean(judge=np.concatenate([f, f[where]]),
                     human=np.concatenate([np.full(items, np.nan), y[where]]), lam=lam)
    assert ours.point == pytest.approx(every.point, rel=1e-12)
    r = y[where] - lam * f[where]
    cov = float(np.mean((f[where] - f[where].mean()) * (r - r.mean())))
    assert ours.standard_error**2 == pytest.approx(
        every.standard_error**2 + 2 * lam * cov / items, rel=1e-10)
    # the weights' scale does not matter (Hajek): pi x 1/3 (an annotator who stopped early)
    third = hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi / 3, lam=lam)
    assert (third.point, third.standard_error) == pytest.approx(
        (ours.point, ours.standard_error), rel=1e-12)


def test_a_judges_offset_shifts_the_point_and_leaves_the_interval_width() -> None:
    """theta(Y + c) = theta(Y) + c and the same se, at any pi: the intercept the uncentred
    form lacks (its se grows with the offset; the check can fail)."""
    f, h, pi = case(5, "likert")
    base = hajek_ppi_mean(judge=f, human=h, inclusion_probability=pi, lam=0.6)
    uncentred = weighted_ppi_mean(judge=f, human=h, inclusion_probability=pi, lam=0.6)
    for c in (-4.0, 2.5, 40.0):
        moved = hajek_ppi_mean(judge=f, human=h + c, inclusion_probability=pi, lam=0.6)
        assert moved.point == pytest.approx(base.point + c, rel=1e-12)
        assert moved.standard_error == pytest.approx(base.standard_error, rel=1e-10)
        other = weighted_ppi_mean(judge=f, human=h + c, inclusion_probability=pi, lam=0.6)
        assert abs(other.standard_error - uncentred.standard_error) > \
            0.01 * uncentred.standard_error


def test_refusals_name_the_item() -> None:
    f = np.array([1.0, 2, 3, 4, 5])
    h = np.array([1.0, 2, np.nan, 4, np.nan])
    pi = np.full(5, 0.5)
    cases = [
        (dict(judge=[1.0, np.nan, 3, 4, 5], human=h, inclusion_probability=pi),
         "no finite score for 1 item.*item 1"),
        (dict(judge=f, human=h, inclusion_probability=[0.5, np.nan, 0.5, 0.5, 0.5]),
         "inclusion probability of item 1 is nan"),
        (dict(judge=f, human=h, inclusion_probability=[0.5, 0.5, np.nan, 0.5, 0.5]),
         "inclusion probability of item 2 is nan"),
        (dict(judge=f, human=h, inclusion_probability=[0.5, 0.0, 0.5, 0.5, 0.5]),
         "item 1 is 0.0: it must lie in \\(0, 1\\] for a labelled item"),
        (dict(judge=f, human=h, inclusion_probability=[0.5, 0.5, 0.5, 1.5, 0.5]),
         "item 3 is 1.5"),
        (dict(judge=f, human=h, inclusion_probability=[0.5] * 4),
         "one entry per item"),
        (dict(judge=f, human=[1.0, np.inf, np.nan, 4, np.nan], inclusion_probability=pi),
         "human label of item 1 is infinite"),
        (dict(judge=f, human=[1.0, np.nan, np.nan, np.nan, np.nan], inclusion_probability=pi),
         "at least 2 human labels, got 1"),
        (dict(judge=f, human=h, inclusion_probability=[0.5, 1e-12, 0.5, 0.5, 0.5]),
         "leave 1 effective labels of the 3"),
    ]
    for kwargs, message in cases:
        with pytest.raises(EstimationError, match=message):
            hajek_ppi_mean(**kwargs)  # type: ignore[arg-type]


def probability_population(rng: np.random.Generator, items: int, offset: float
                           ) -> tuple[np.ndarray, np.ndarray, float]:
    """People pass with probability t ~ Beta(0.4, 0.4) (E[Y] = 0.5: symmetric); the judge
    says t + offset, clipped to [0, 1] (offset 0.15: sure of a pass on a third of the items,
    where people fail up to 15% of the time)."""
    truth = rng.beta(0.4, 0.4, size=items)
    human = (rng.random(items) < truth).astype(float)
    return np.clip(truth + offset, 0.0, 1.0), human, 0.5


def score_population(rng: np.random.Generator, items: int
                     ) -> tuple[np.ndarray, np.ndarray, float]:
    """People's scores with E[Y] = 1.5; a judge offset by length whose noise grows with it."""
    length = rng.random(items)
    human = 1.0 + length + rng.normal(size=items)
    judge = human + 0.8 * length + rng.normal(size=items) * (0.2 + 2 * length)
    return judge, human, 1.5


@pytest.mark.parametrize("offset", [0.0, 0.15], ids=["calibrated", "sure-and-wrong"])
def test_coverage_under_active_sampling_from_the_judges_uncertainty(offset: float) -> None:
    """1,000 studies of 2,000 items, 100 labels drawn with pi ~ sqrt(p (1 - p)) of the
    judge's probability (the default uniform share, 0.5): the 90% interval covers E[Y]
    within Monte-Carlo error of 0.9, and the point is unbiased."""
    rng = np.random.default_rng(60)
    hits, errors = 0, []
    for study in range(STUDIES):
        judge, human, truth = probability_population(rng, 2000, offset)
        draw = active_sample(uncertainty=judge * (1 - judge), n=100, seed=study)
        where = np.asarray(draw.positions)
        shown = np.full(2000, np.nan)
        shown[where] = human[where]
        pi = np.ones(2000)
        pi[where] = draw.probabilities
        estimate = hajek_ppi_mean(judge=judge, human=shown, inclusion_probability=pi,
                                  confidence=NOMINAL)
        hits += estimate.lower <= truth <= estimate.upper
        errors.append(estimate.point - truth)
    coverage = hits / STUDIES
    assert FLOOR <= coverage <= NOMINAL + 3 * MC_SE, coverage
    assert abs(float(np.mean(errors))) < 3 * float(np.std(errors)) / math.sqrt(STUDIES)


def test_coverage_under_active_sampling_after_a_pilot() -> None:
    """1,000 studies of 800 items: 20 labels at random, then 50 drawn by the centred priority
    the 20 give, estimated over both draws (the pilot at pi = 1)."""
    rng = np.random.default_rng(61)
    hits = 0
    for study in range(STUDIES):
        judge, human, truth = score_population(rng, 800)
        pilot = list(random_sample(candidates=800, n=20, seed=study).positions)
        shown = np.full(800, np.nan)
        shown[pilot] = human[pilot]
        lam = ppi_mean(judge=judge, human=shown).lam
        assert lam is not None
        priority = np.nan_to_num(active_label_priority(judge=judge, human=shown, lam=lam,
                                                       centre=True))
        draw = active_sample(priority=priority, n=50, seed=study, exclude=pilot)
        where = np.asarray(draw.positions)
        shown[where] = human[where]
        pi = np.ones(800)
        pi[where] = draw.probabilities
        estimate = hajek_ppi_mean(judge=judge, human=shown, inclusion_probability=pi,
                                  confidence=NOMINAL)
        hits += estimate.lower <= truth <= estimate.upper
    coverage = hits / STUDIES
    assert FLOOR <= coverage <= NOMINAL + 3 * MC_SE, coverage


def test_the_centred_priority_is_the_binned_centred_rectifier() -> None:
    judge = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.25])
    human = np.array([0.0, 1.0, 1.0, 1.0, np.nan, np.nan, np.nan])
    # residuals Y - f: 0, 1, 0, 0 (mean 1/4); centred -1/4, 3/4, -1/4, -1/4; squared 1/16,
    # 9/16, 1/16, 1/16: the bin below the median 0.5 has mean 5/16, the one above 1/16
    priority = active_label_priority(judge=judge, human=human, lam=1.0, bins=2, centre=True)
    assert np.isnan(priority[:4]).all()
    assert priority[4:] == pytest.approx([math.sqrt(5 / 16), 0.25, math.sqrt(5 / 16)])
    shifted = active_label_priority(judge=judge, human=human + 7.0, lam=1.0, bins=2,
                                    centre=True)
    assert shifted[4:] == pytest.approx(priority[4:], rel=1e-12)
    assert active_label_priority(judge=judge, human=human + 7.0, lam=1.0, bins=2)[4] > 6
