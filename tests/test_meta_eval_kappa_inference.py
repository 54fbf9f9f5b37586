"""meta_eval.kappa_inference against statsmodels' cohens_kappa and fleiss_kappa, R irr's
kappam.fleiss on Fleiss 1971's data, and seeded simulations of coverage and test size."""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from meta_eval.agreement import cohen_kappa, kappa_table
from meta_eval.kappa_inference import cohen_kappa_inference, fleiss_kappa_inference, randolph_kappa

# Fleiss 1971's psychiatric diagnoses (30 patients x 6 raters, 5 categories), as in
# statsmodels' tests; R irr::kappam.fleiss prints Kappa = 0.4302445, z = 17.65183
DIAGNOSES = [[4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
             [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
             [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
             [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
             [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
             [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
             [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
             [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5]]
EXTREME = [-1e308, -5e-324, 0.0, 1e-300, 3.0, 1e308]


def _pairs(seed: int) -> tuple[list[float], list[float], list[float]]:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    labels = sorted(rng.choice(EXTREME, size=k, replace=False).tolist()) if seed % 2 \
        else list(range(1, k + 1))
    n = int(rng.integers(8, 80))
    a = rng.integers(0, k, size=n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, size=n))  # ties on purpose
    human = [labels[i] for i in a]
    metric = [labels[i] for i in b]
    for i in rng.choice(n, size=n // 10, replace=False):
        (human if i % 2 else metric)[i] = float("nan")
    return human, metric, labels


def _custom(k: int, seed: int) -> np.ndarray:
    w = np.random.default_rng(seed).uniform(0.1, 3.0, size=(k, k))
    np.fill_diagonal(w, 0.0)
    return w


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic", "custom"])
def test_against_statsmodels(seed: int, weights: str | None) -> None:
    human, metric, labels = _pairs(seed)
    w = _custom(len(labels), seed) if weights == "custom" else weights
    got = cohen_kappa_inference(human=human, metric=metric, weights=w, labels=labels,
                                confidence=0.9)
    _, table = kappa_table(human=human, metric=metric, labels=labels)
    if weights is None:
        ref = cohens_kappa(table)
    elif weights == "custom":
        assert isinstance(w, np.ndarray)
        ref = cohens_kappa(table, weights=w / w.max())
    else:
        ref = cohens_kappa(table, weights=np.arange(len(labels)), wt=weights)
    ref_low, ref_high = (ref["kappa"] + s * 1.6448536269514722 * ref["std_kappa"]
                         for s in (-1, 1))
    assert got.value == pytest.approx(ref["kappa"], rel=1e-9, abs=1e-12)
    assert got.value == pytest.approx(cohen_kappa(human=human, metric=metric, weights=w,
                                                  labels=labels).value, abs=1e-15)
    for mine, theirs in [(got.extra["se"], ref["std_kappa"]),
                         (got.extra["se0"], ref["std_kappa0"]),
                         (got.extra["z"], ref["z_value"]),
                         (got.p_value, ref["pvalue_two_sided"]),
                         (got.ci_low, ref_low), (got.ci_high, ref_high)]:
        assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-12)
    assert "fleiss-cohen-everitt-1969" in got.extra["signature"]


def test_ninety_five_percent_matches_statsmodels_default() -> None:
    human, metric, labels = _pairs(3)
    got = cohen_kappa_inference(human=human, metric=metric, labels=labels)
    ref = cohens_kappa(kappa_table(human=human, metric=metric, labels=labels)[1])
    assert (got.ci_low, got.ci_high) == pytest.approx((ref["kappa_low"], ref["kappa_upp"]),
                                                      rel=1e-9)


def test_weight_scale_is_free() -> None:
    human, metric, labels = _pairs(5)
    w = _custom(len(labels), 5)
    a = cohen_kappa_inference(human=human, metric=metric, weights=w, labels=labels)
    b = cohen_kappa_inference(human=human, metric=metric, weights=w * 2.0**-1000,
                              labels=labels)
    assert (a.value, a.extra["se"], a.p_value) == pytest.approx(
        (b.value, b.extra["se"], b.p_value), rel=1e-12)


@pytest.mark.parametrize("bad", [np.ones((3, 3)), np.zeros((3, 3)), -np.eye(3)[::-1],
                                 np.full((2, 2), np.nan), np.ones((2, 3))])
def test_bad_weight_matrix(bad: np.ndarray) -> None:
    with pytest.raises(ValueError, match="weight matrix"):
        cohen_kappa(human=[1, 2, 3], metric=[1, 2, 2], weights=bad, labels=[1, 2, 3])


def test_undefined_has_no_interval() -> None:
    got = cohen_kappa_inference(human=[1, 1, 1], metric=[1, 1, 1])
    assert math.isnan(got.value) and got.ci_low is None and got.p_value is None


def test_fleiss_irr_example() -> None:
    got = fleiss_kappa_inference(ratings=np.asarray(DIAGNOSES, dtype=float).T)
    assert got.value == pytest.approx(0.4302445, abs=5e-8)
    assert got.extra["z"] == pytest.approx(17.65183, abs=5e-6)
    assert got.p_value is not None and got.p_value < 1e-60
    assert got.ci_low is None and "se" not in got.extra


def _uniform_units(rng: np.random.Generator, n: int, m: int, p: np.ndarray) -> np.ndarray:
    return rng.choice(p.size, size=(m, n), p=p).astype(float)


def test_fleiss_se0_matches_null_spread() -> None:
    rng = np.random.default_rng(1979)
    p = np.array([0.5, 0.3, 0.15, 0.05])
    kappas, se0 = [], []
    for _ in range(1500):
        got = fleiss_kappa_inference(ratings=_uniform_units(rng, 60, 4, p))
        kappas.append(got.value)
        se0.append(got.extra["se0"])
    # sd of 1500 draws is within ~4% of the truth (4 standard errors: 4 / sqrt(2 * 1500))
    assert np.std(kappas, ddof=1) == pytest.approx(np.mean(se0), rel=0.08)
    rejected = np.mean(np.abs(np.array(kappas) / np.array(se0)) > 1.959963984540054)
    assert abs(rejected - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 1500) + 0.005


@pytest.mark.parametrize("seed", range(8))
def test_randolph_against_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, m, n = int(rng.integers(2, 7)), int(rng.integers(2, 7)), int(rng.integers(3, 40))
    codes = rng.integers(0, q, size=(m, n)).astype(float)
    codes[:, : n // 3] = codes[0, : n // 3]  # agreement and ties
    if seed % 2:
        codes[0, 0] = np.nan  # a unit dropped
    got = randolph_kappa(ratings=codes, categories=list(range(q)))
    keep = np.isfinite(codes).all(axis=0)
    table, _ = aggregate_raters(codes[:, keep].T.astype(int), n_cat=q)
    assert got.value == pytest.approx(fleiss_kappa(table, method="randolph"), rel=1e-9,
                                      abs=1e-12)
    assert got.n == keep.sum()
    assert got.extra["se0"] == pytest.approx(math.sqrt(2 / (keep.sum() * m * (m - 1)
                                                            * (q - 1))), rel=1e-12)


def test_randolph_null_and_coverage() -> None:
    rng = np.random.default_rng(2005)
    q, m, n, reps = 4, 3, 50, 1500
    null = [randolph_kappa(ratings=_uniform_units(rng, n, m, np.full(q, 1 / q)),
                           categories=q) for _ in range(reps)]
    assert np.std([r.value for r in null], ddof=1) == pytest.approx(null[0].extra["se0"],
                                                                    rel=0.08)
    right = 0.6 + 0.4 / q  # a rater codes the true category, else one at random
    truth = ((right ** 2 + (q - 1) * (0.4 / q) ** 2) - 1 / q) / (1 - 1 / q)
    covered = 0
    for _ in range(reps):
        true = rng.integers(0, q, size=n)
        guess = rng.integers(0, q, size=(m, n))
        codes = np.where(rng.random((m, n)) < 0.6, true[None, :], guess).astype(float)
        r = randolph_kappa(ratings=codes, categories=q)
        assert r.ci_low is not None and r.ci_high is not None
        covered += r.ci_low <= truth <= r.ci_high
    assert abs(covered / reps - 0.95) < 4 * math.sqrt(0.05 * 0.95 / reps) + 0.01


def test_randolph_declared_categories() -> None:
    with pytest.raises(ValueError, match="declared"):
        randolph_kappa(ratings=[[1.0, 2.0, 3.0], [1.0, 2.0, 2.0]], categories=2)
    with pytest.raises(ValueError, match="declared"):
        randolph_kappa(ratings=[[1.0, 2.0, 7.0], [1.0, 2.0, 2.0]], categories=[1, 2, 3])


@pytest.mark.parametrize("weights", [None, "quadratic"])
def test_cohen_coverage_and_size(weights: str | None) -> None:
    rng = np.random.default_rng(1969)
    joint = np.array([[0.30, 0.05, 0.02], [0.06, 0.25, 0.05], [0.01, 0.06, 0.20]])
    k, n, reps = 3, 150, 1500
    truth_pairs = np.argwhere(np.ones((k, k)))
    from meta_eval.agreement import kappa_weights

    d = kappa_weights(weights, k)
    rows, cols = joint.sum(axis=1), joint.sum(axis=0)
    truth = 1 - (d * joint).sum() / (d * np.outer(rows, cols)).sum()
    covered = rejected = 0
    for _ in range(reps):
        cells = truth_pairs[rng.choice(k * k, size=n, p=joint.reshape(-1))]
        r = cohen_kappa_inference(human=cells[:, 0].tolist(), metric=cells[:, 1].tolist(),
                                  weights=weights, labels=[0, 1, 2])
        assert r.ci_low is not None and r.ci_high is not None
        covered += r.ci_low <= truth <= r.ci_high
        a = rng.choice(k, size=n, p=rows)
        b = rng.choice(k, size=n, p=cols)  # independent: H0 holds
        p = cohen_kappa_inference(human=a.tolist(), metric=b.tolist(), weights=weights,
                                  labels=[0, 1, 2]).p_value
        rejected += p is not None and p < 0.05
    tolerance = 4 * math.sqrt(0.05 * 0.95 / reps) + 0.01
    assert abs(covered / reps - 0.95) < tolerance
    assert abs(rejected / reps - 0.05) < tolerance
