"""meta_eval.irt against known truths: simulated data with known parameters, a direct
numerical maximisation of the same objective (independent of the EM), Rasch sufficiency,
interval coverage, the power formula by simulation, and the stated degenerate-input rules."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from meta_eval import irt


def simulate(systems: int, items: int, seed: int, *, spread: float = 1.0,
             slope: tuple[float, float] = (0.5, 2.5), rasch: bool = False):
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, spread, systems)
    a = np.ones(items) if rasch else rng.uniform(*slope, items)
    b = rng.uniform(-2, 2, items)
    p = 1 / (1 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    return (rng.random(p.shape) < p).astype(float), theta, a, b


def oracle_slopes(y: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """Per-item logistic regression on the TRUE abilities: what any estimator is bound by."""
    out = []
    for row in y:
        def loss(x, row=row):
            z = x[0] * theta + x[1]
            return np.sum(np.logaddexp(0, z) - row * z)
        out.append(minimize(loss, [1.0, 0.0], method="BFGS").x[0])
    return np.array(out)


@pytest.mark.slow
def test_2pl_recovers_known_parameters_with_many_systems():
    y, _, a, b = simulate(1000, 200, seed=5)
    fit = irt.fit_items(responses=y, model="2pl")
    assert fit.converged and fit.informative.all()
    assert np.corrcoef(fit.difficulty, b)[0, 1] > 0.99
    assert np.corrcoef(fit.discrimination, a)[0, 1] > 0.97


def test_2pl_at_100_systems_x_500_items_is_as_good_as_knowing_the_abilities():
    """100 respondents per item bound what any estimator can recover of a slope: the
    logistic regression of each item on the true abilities reaches about 0.8. The MML fit
    must do at least as well as that oracle (within 0.02), and recover difficulties > 0.95
    when the systems' abilities spread (sd 1.5)."""
    y, theta, a, b = simulate(100, 500, seed=0, spread=1.5)
    fit = irt.fit_items(responses=y, model="2pl")
    assert fit.converged
    k = fit.informative
    assert np.corrcoef(fit.difficulty[k], b[k])[0, 1] > 0.95
    recovered = np.corrcoef(fit.discrimination[k], a[k])[0, 1]
    bound = np.corrcoef(oracle_slopes(y[k], theta), a[k])[0, 1]
    assert recovered > 0.8
    assert recovered > bound - 0.02
    ability = irt.estimate_abilities(responses=y, discrimination=fit.discrimination,
                                     difficulty=fit.difficulty)
    assert np.corrcoef(ability.ability, theta)[0, 1] > 0.99


@pytest.mark.parametrize("model", ["2pl", "rasch"])
def test_em_reaches_the_optimum_of_a_direct_maximisation(model):
    """The EM's estimate maximises the stated objective: L-BFGS on `log_posterior` from a
    different start lands on the same parameters."""
    y, *_ = simulate(40, 6, seed=3, slope=(0.7, 2.0))
    fit = irt.fit_items(responses=y, model=model, tol=1e-9, max_iter=20000)
    k = fit.informative
    items = int(k.sum())
    common = model == "rasch"

    def negative(x):
        slope = np.full(items, x[0]) if common else x[:items]
        intercept = x[1:] if common else x[items:]
        return -irt.log_posterior(responses=y[k], slope=slope, intercept=intercept,
                                  common=common)

    start = np.r_[0.5, np.zeros(items)] if common else np.r_[np.full(items, 0.5),
                                                             np.zeros(items)]
    best = minimize(negative, start, method="L-BFGS-B", options={"ftol": 1e-15, "gtol": 1e-9})
    if common:
        slope, intercept = best.x[0], best.x[1:]
        assert fit.scale == pytest.approx(slope, abs=1e-4)
        assert fit.difficulty[k] == pytest.approx(-intercept, abs=1e-4)
        assert (fit.discrimination[k] == 1).all()
    else:
        slope, intercept = best.x[:items], best.x[items:]
        assert fit.discrimination[k] == pytest.approx(slope, abs=1e-4)
        assert fit.difficulty[k] == pytest.approx(-intercept / slope, abs=1e-4)


def test_rasch_equal_raw_scores_give_equal_abilities_and_order_by_raw_score():
    y, *_ = simulate(60, 80, seed=11, rasch=True)
    fit = irt.fit_items(responses=y, model="rasch")
    ability = irt.estimate_abilities(responses=y, discrimination=fit.discrimination,
                                     difficulty=fit.difficulty)
    raw = y[fit.informative].sum(axis=0)
    for score in np.unique(raw):
        same = ability.ability[raw == score]
        assert np.ptp(same) < 1e-8
    finite = ability.extreme == 0
    by_raw = np.argsort(raw[finite], kind="stable")
    steps = np.diff(ability.ability[finite][by_raw])
    rises = np.diff(raw[finite][by_raw]) > 0
    assert (steps[rises] > 1e-6).all() and (np.abs(steps[~rises]) < 1e-8).all()
    # and the ML equation holds: sum_i P_i(theta) equals the raw score
    j = int(np.flatnonzero(finite)[0])
    p = 1 / (1 + np.exp(-(ability.ability[j] - fit.difficulty[fit.informative])))
    assert p.sum() == pytest.approx(raw[j], abs=1e-8)


def test_ml_abilities_match_a_hand_solved_likelihood_equation():
    """Known Rasch difficulties (-1, 0, 1): the ML ability of raw score r solves
    sum_i 1/(1 + exp(-(theta - b_i))) = r (brentq here), SE = 1/sqrt(sum p q); with two
    items of difficulty 0 and one right answer, theta = 0 and SE = 1/sqrt(0.5) exactly."""
    from scipy.optimize import brentq

    b = np.array([-1.0, 0.0, 1.0])
    y = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 1]], dtype=float)  # raw scores 1, 2, 2
    est = irt.estimate_abilities(responses=y, discrimination=np.ones(3), difficulty=b)
    for j, raw in enumerate(y.sum(axis=0)):
        theta = brentq(lambda t, raw=raw: (1 / (1 + np.exp(-(t - b)))).sum() - raw, -10, 10,
                       xtol=1e-14)
        p = 1 / (1 + np.exp(-(theta - b)))
        assert est.ability[j] == pytest.approx(theta, abs=1e-9)
        assert est.se[j] == pytest.approx(1 / np.sqrt((p * (1 - p)).sum()), rel=1e-9)
    two = irt.estimate_abilities(responses=np.array([[1.0], [0.0]]),
                                 discrimination=np.ones(2), difficulty=np.zeros(2))
    assert two.ability[0] == pytest.approx(0.0, abs=1e-12)
    assert two.se[0] == pytest.approx(1 / np.sqrt(0.5), rel=1e-12)


def test_rasch_recovers_difficulties():
    y, _, _, b = simulate(200, 300, seed=2, rasch=True)
    fit = irt.fit_items(responses=y, model="rasch")
    k = fit.informative
    assert np.corrcoef(fit.difficulty[k], b[k])[0, 1] > 0.98
    assert fit.scale == pytest.approx(1.0, abs=0.15)  # true ability sd is 1


def test_ability_intervals_cover_the_truth_at_the_nominal_rate():
    """Known item parameters: the Wald interval from the test information covers ~95%."""
    rng = np.random.default_rng(7)
    systems, items = 3000, 60
    theta = rng.normal(size=systems)
    a, b = rng.uniform(0.8, 2.0, items), rng.uniform(-2, 2, items)
    p = 1 / (1 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    y = (rng.random(p.shape) < p).astype(float)
    est = irt.estimate_abilities(responses=y, discrimination=a, difficulty=b)
    low, high = est.interval(0.95)
    finite = est.extreme == 0
    assert finite.mean() > 0.99
    covered = ((low <= theta) & (theta <= high))[finite].mean()
    assert 0.93 <= covered <= 0.97


def test_ability_intervals_with_fitted_items_after_linking():
    """Fitted items: the scale is identified up to a linear map (MML fixes the sample's
    abilities near N(0, 1)); after linking the truth to it, coverage stays near nominal."""
    y, theta, *_ = simulate(300, 150, seed=4)
    fit = irt.fit_items(responses=y, model="2pl")
    est = irt.estimate_abilities(responses=y, discrimination=fit.discrimination,
                                 difficulty=fit.difficulty)
    finite = est.extreme == 0
    slope, offset = np.polyfit(theta[finite], est.ability[finite], 1)
    linked = slope * theta + offset
    low, high = est.interval(0.95)
    covered = ((low <= linked) & (linked <= high))[finite].mean()
    assert 0.88 <= covered <= 0.99


def test_degenerate_items_and_systems_follow_the_stated_rules():
    y, *_ = simulate(30, 40, seed=9)
    y[:, 0] = 0.0  # a system that got everything wrong
    y[:, 1] = 1.0  # and one that got everything right
    y[0] = 1.0  # an item everyone got right
    y[1] = 0.0  # an item everyone got wrong
    y[2, :-1] = np.nan  # answered by one system
    y[5, 3] = np.nan  # a missing cell
    fit = irt.fit_items(responses=y, model="2pl")
    assert list(fit.informative[:3]) == [False, False, False]
    assert np.isnan(fit.difficulty[:3]).all() and np.isfinite(fit.difficulty[3:]).all()
    est = irt.estimate_abilities(responses=y, discrimination=fit.discrimination,
                                 difficulty=fit.difficulty)
    assert est.extreme[0] == -1 and est.extreme[1] == 1
    assert np.isnan(est.ability[:2]).all() and np.isfinite(est.ability[2:]).all()
    order = est.order()
    assert order[0] == 1 and order[-1] == 0


def test_a_constant_column_is_an_error_not_nan():
    with pytest.raises(ValueError, match="no informative item"):
        irt.fit_items(responses=np.ones((5, 4)))
    with pytest.raises(ValueError, match="0, 1 or NaN"):
        irt.fit_items(responses=np.full((3, 3), 0.5))


def test_a_reversed_item_gets_a_negative_discrimination():
    y, *_ = simulate(200, 60, seed=6)
    y[10] = 1 - y[10]  # a mislabelled item: right and wrong swapped
    fit = irt.fit_items(responses=y, model="2pl")
    assert fit.discrimination[10] < -irt.FLAG_DISCRIMINATION
    assert (np.delete(fit.discrimination, 10) > irt.FLAG_DISCRIMINATION).all()


def test_selected_subset_keeps_the_ranking_better_than_random_subsets():
    y, *_ = simulate(40, 600, seed=8, slope=(0.3, 2.5))
    fit = irt.fit_items(responses=y, model="2pl")
    est = irt.estimate_abilities(responses=y, discrimination=fit.discrimination,
                                 difficulty=fit.difficulty)
    chosen = irt.select_items(responses=y, fit=fit, abilities=est, size=40, draws=30)
    assert len(set(chosen.items.tolist())) == 40
    assert chosen.tau > chosen.random_tau
    assert chosen.tau > 0.8


def test_items_needed_gives_the_stated_power_by_simulation():
    """At the number of items the formula asks for, simulated experiments with items drawn
    from the fitted ones separate the pair about `power` of the time."""
    rng = np.random.default_rng(12)
    a, b = rng.uniform(0.8, 2.0, 400), rng.uniform(-2, 2, 400)
    theta = np.array([0.6, 0.4, -0.5])
    fit = irt.ItemFit(model="2pl", difficulty=b, discrimination=a,
                      informative=np.ones(400, bool), loglik=0.0, iterations=0,
                      converged=True)
    truth = irt.Abilities(ability=theta, se=np.full(3, 0.1), extreme=np.zeros(3, int),
                          information=np.ones(3))
    power = irt.top_k_power(fit=fit, abilities=truth, top_k=1, alpha=0.05, power=0.8)
    n = int(power.pairs[0].items_needed)
    assert 50 < n < 5000
    hits = 0
    runs = 400
    for _ in range(runs):
        pick = rng.integers(0, 400, n)
        p = 1 / (1 + np.exp(-a[pick, None] * (theta[None, :2] - b[pick, None])))
        y = (rng.random(p.shape) < p).astype(float)
        est = irt.estimate_abilities(responses=y, discrimination=a[pick], difficulty=b[pick])
        z = (est.ability[0] - est.ability[1]) / np.hypot(*est.se[:2])
        hits += z > 1.959964
    assert 0.72 <= hits / runs <= 0.88


def test_binary_responses_and_agreement():
    metric = np.array([[0.1, 0.5, np.nan], [0.7, 0.2, 0.5]])
    y = irt.binary_responses(metric=metric, threshold=0.5)
    assert np.array_equal(y, np.array([[0, 1, np.nan], [1, 0, 1]]), equal_nan=True)
    human = np.array([[1.0, 2.0, 3.0], [3.0, 3.0, 1.0]])
    metric = np.array([[0.1, 0.3, 0.2], [0.5, 0.5, 0.6]])
    agree = irt.agreement_responses(human=human, metric=metric)
    # item 0: pairs (0,1) ok, (0,2) ok, (1,2) wrong -> system 0: 2/2, 1: 1/2, 2: 1/2
    assert np.array_equal(agree[0], [1, 1, 1])
    # item 1: (0,1) human tie: no pair; (0,2) wrong, (1,2) wrong
    assert np.array_equal(agree[1], [0, 0, 0])


def test_agreement_in_chunks_equals_a_loop():
    rng = np.random.default_rng(1)
    human = rng.integers(1, 4, (700, 60)).astype(float)
    metric = rng.normal(size=(700, 60))
    metric[::7, ::5] = np.nan
    got = irt.agreement_responses(human=human, metric=metric)
    for i in (0, 1, 350, 699):
        for j in range(0, 60, 13):
            agree = pairs = 0
            for k in range(60):
                dh, dm = human[i, j] - human[i, k], metric[i, j] - metric[i, k]
                if k == j or dh == 0 or not np.isfinite(dm):
                    continue
                pairs += 1
                agree += np.sign(dh) == np.sign(dm)
            expected = np.nan if pairs == 0 else float(agree / pairs >= 0.5)
            assert np.array_equal(got[i, j], expected, equal_nan=True)

