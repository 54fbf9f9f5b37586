"""A judge against itself (issue 28, part 1, its statistics): ICC(1) against scipy's
one-way ANOVA F, Krippendorff's alpha over draws against the `krippendorff` package, pass@k
and pass^k against enumerating every k-subset of draws, the noise ceiling by hand."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from meta_eval.repeats import (
    icc_one_way,
    noise_ceiling,
    pass_at_k,
    pass_hat_k,
    reliability,
    spearman_brown,
)


def draws_data(seed: int, units: int = 40, k: int = 5, holes: float = 0.1) -> np.ndarray:
    """1-5 verdicts: a per-unit quality plus draw noise, ties everywhere, NaN holes."""
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 6, units)[:, None]
    x = np.clip(quality + rng.integers(-1, 2, (units, k)), 1, 5).astype(float)
    x[rng.random(x.shape) < holes] = np.nan
    return x


def icc_from_anova(x: np.ndarray) -> float:
    """ICC(1) from scipy's F = MSB / MSW and Donner's k0 (unbalanced groups)."""
    groups = [row[np.isfinite(row)] for row in x if np.isfinite(row).sum() >= 2]
    f = scipy.stats.f_oneway(*groups).statistic
    n = np.array([g.size for g in groups], dtype=float)
    k0 = (n.sum() - (n * n).sum() / n.sum()) / (len(groups) - 1)
    return float((f - 1) / (f + k0 - 1))


@pytest.mark.parametrize("seed", range(6))
def test_icc_matches_scipy_anova_and_alpha_the_package(seed):
    import krippendorff

    x = draws_data(seed)
    assert icc_one_way(x) == pytest.approx(icc_from_anova(x), rel=1e-10)
    got = reliability(x)
    counted = x[np.isfinite(x).sum(axis=1) >= 2]
    want = krippendorff.alpha(reliability_data=counted.T, level_of_measurement="interval")
    assert got.alpha == pytest.approx(want, rel=1e-10)
    assert got.units == counted.shape[0]
    sd = [np.std(r[np.isfinite(r)], ddof=1) for r in counted]
    assert got.spread == pytest.approx(float(np.mean(sd)))
    flips = [len(set(r[np.isfinite(r)].tolist())) > 1 for r in counted]
    assert got.flip_share == pytest.approx(float(np.mean(flips)))
    k = float(np.isfinite(counted).sum(axis=1).mean())
    assert got.icc_mean == pytest.approx(k * got.icc / (1 + (k - 1) * got.icc))


def test_icc_extreme_magnitudes_and_degenerate_cases():
    x = draws_data(3, holes=0.0)
    assert icc_one_way(x * 1e300) == pytest.approx(icc_one_way(x), rel=1e-9)
    assert icc_one_way(x * 1e-300) == pytest.approx(icc_one_way(x), rel=1e-9)
    assert math.isnan(icc_one_way(np.ones((5, 3))))  # every draw equal
    assert math.isnan(icc_one_way(np.array([[1.0, 2.0]])))  # one unit
    # perfectly repeatable draws of varying units: 1
    assert icc_one_way(np.repeat(np.arange(6.0)[:, None], 4, axis=1)) == pytest.approx(1.0)
    one = reliability(np.array([[3.0, np.nan], [2.0, 2.0], [4.0, 5.0]]))
    assert one.units == 2 and one.flip_share == 0.5
    assert spearman_brown(math.nan, 3) != spearman_brown(math.nan, 3)


def brute(x: np.ndarray, k: int, every: bool) -> float:
    values = []
    for row in x:
        draws = row[np.isfinite(row)]
        if draws.size < k:
            continue
        subsets = list(itertools.combinations(draws.tolist(), k))
        good = [all(s) if every else any(s) for s in subsets]
        values.append(sum(good) / len(subsets))
    return float(np.mean(values))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_pass_at_k_and_pass_hat_k_enumerate_every_subset(seed, k):
    rng = np.random.default_rng(seed)
    x = (rng.random((30, 6)) < rng.random((30, 1))).astype(float)
    x[rng.random(x.shape) < 0.15] = np.nan
    assert pass_at_k(x, k) == pytest.approx(brute(x, k, every=False), abs=1e-12)
    assert pass_hat_k(x, k) == pytest.approx(brute(x, k, every=True), abs=1e-12)
    if k == 1:
        assert pass_at_k(x, 1) == pytest.approx(pass_hat_k(x, 1))
    with pytest.raises(ValueError, match="binary"):
        pass_at_k(x * 2, k)


def test_noise_ceiling_by_hand():
    rng = np.random.default_rng(0)
    truth = rng.normal(size=200)
    x = truth[:, None] + rng.normal(scale=1.0, size=(200, 4))
    human = truth + rng.normal(scale=0.5, size=200)
    got = noise_ceiling(x, human)
    r = float(np.corrcoef(human, x.mean(axis=1))[0, 1])
    rel = reliability(x).icc_mean
    assert got.agreement == pytest.approx(r)
    assert got.ceiling == pytest.approx(math.sqrt(rel))
    assert got.disattenuated == pytest.approx(r / math.sqrt(rel))
    assert got.noise_share == pytest.approx(min(1, (1 - math.sqrt(rel)) / (1 - r)))
    assert 0 < got.noise_share <= 1
