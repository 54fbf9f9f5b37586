"""meta_eval.analytic against independent implementations: Fisher-z intervals against
scipy.stats.pearsonr(...).confidence_interval() and pingouin.compute_esci; the Bonett-Wright
and Fieller forms against scipy.stats' correlations and normal law; on random data with
ties, NaN and extreme magnitudes, to 1e-9. Coverage of each interval and the size of
Williams' and Steiger's tests by seeded simulation; Williams' test against psych::r.test's
worked example; |r| against negating the data."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pingouin
import pytest
import scipy.stats

from meta_eval import significance
from meta_eval.analytic import (
    correlation_interval,
    interval_method,
    steiger_test,
    williams_statistic,
    williams_test,
)
from meta_eval.correlation import kendall_groups, pearson_groups, spearman_groups
from meta_eval.pairs import snap

TOL = 1e-9
OURS_R = {"pearson": lambda h, m: float(pearson_groups(human=h, metric=m)),
          "spearman": lambda h, m: float(spearman_groups(human=h, metric=m)),
          "kendall": lambda h, m: float(kendall_groups(human=h, metric=m))}
SCIPY_R = {"pearson": lambda h, m: scipy.stats.pearsonr(h, m).statistic,
           "spearman": lambda h, m: scipy.stats.spearmanr(snap(h), snap(m)).statistic,
           "kendall": lambda h, m: scipy.stats.kendalltau(snap(h), snap(m)).statistic}
# the standard error of z = atanh(r), written out from the papers (module docstring)
SE = {("pearson", "fisher"): lambda r, n: 1 / np.sqrt(n - 3),
      ("spearman", "bonett-wright"): lambda r, n: np.sqrt((1 + r**2 / 2) / (n - 3)),
      ("spearman", "fieller"): lambda r, n: np.sqrt(1.06 / (n - 3)),
      ("kendall", "fieller"): lambda r, n: np.sqrt(0.437 / (n - 4))}


def data(rng: np.random.Generator, n: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
    latent = rng.normal(size=n)
    h = latent + rng.normal(size=n) * rng.uniform(0.1, 3)
    m = latent + rng.normal(size=n) * rng.uniform(0.1, 3)
    if kind == 1:  # ratings and a rounded metric: many ties
        h, m = np.round(h * 2) / 2, np.round(m, 1)
    elif kind == 2:  # tiny and huge magnitudes
        h, m = h * 1e-300, m * 1e300
    elif kind == 3:  # a few levels on one side, NaN on both
        h = np.floor(h)
        h[rng.random(n) < 0.1] = np.nan
        m[rng.random(n) < 0.1] = np.nan
    elif kind == 4:  # a strong negative correlation
        m = -latent - rng.normal(size=n) * 0.05
    return h, m


def close(got: float, want: float) -> bool:
    return abs(got - want) <= TOL * max(1.0, abs(want))


@pytest.mark.parametrize("seed", range(30))
def test_fisher_interval_is_scipys_and_pingouins(seed: int) -> None:
    rng = np.random.default_rng(4300 + seed)
    n = [4, 5, 7, 12, 40, 200, 3000][seed % 7]
    h, m = data(rng, n, seed % 5)
    confidence = [0.95, 0.9, 0.99, 0.5][seed % 4]
    ok = np.isfinite(h) & np.isfinite(m)
    r = OURS_R["pearson"](h, m)
    got = correlation_interval(statistic="pearson", r=r, n=int(ok.sum()), confidence=confidence)
    if ok.sum() < 4:
        assert got is None
        return
    assert got is not None
    want = scipy.stats.pearsonr(h[ok], m[ok]).confidence_interval(confidence)
    assert close(got[0], want.low) and close(got[1], want.high), (got, want)
    esci = pingouin.compute_esci(stat=r, nx=int(ok.sum()), ny=int(ok.sum()), eftype="r",
                                 confidence=confidence, decimals=15)
    assert close(got[0], esci[0]) and close(got[1], esci[1]), (got, esci)


@pytest.mark.parametrize("form", [k for k in SE if k[0] != "pearson"])
@pytest.mark.parametrize("seed", range(20))
def test_rank_intervals_against_scipy(form: tuple[str, str], seed: int) -> None:
    statistic, method = form
    rng = np.random.default_rng(4400 + seed)
    n = [5, 6, 9, 30, 150, 1000][seed % 6]
    h, m = data(rng, n, seed % 5)
    ok = np.isfinite(h) & np.isfinite(m)
    r = OURS_R[statistic](h, m)
    want_r = float(SCIPY_R[statistic](h[ok], m[ok]))
    assert close(r, want_r)
    got = correlation_interval(statistic=statistic, r=r, n=int(ok.sum()), method=method)
    if ok.sum() < (5 if statistic == "kendall" else 4):
        assert got is None
        return
    assert got is not None
    low, high = (float(x) for x in np.tanh(scipy.stats.norm.interval(
        0.95, loc=np.arctanh(want_r), scale=SE[form](want_r, ok.sum()))))
    assert close(got[0], low) and close(got[1], high), (got, low, high)
    assert got[0] <= r <= got[1]


def test_defaults_edges_and_refusals() -> None:
    assert interval_method("pearson") == "fisher"
    assert interval_method("spearman") == "bonett-wright"
    assert interval_method("kendall") == "fieller"
    assert correlation_interval(statistic="pearson", r=1.0, n=10) == (1.0, 1.0)
    assert correlation_interval(statistic="kendall", r=-1.0, n=10) == (-1.0, -1.0)
    assert correlation_interval(statistic="pearson", r=0.3, n=3) is None
    assert correlation_interval(statistic="kendall", r=0.3, n=4) is None
    assert correlation_interval(statistic="kendall", r=0.3, n=5) is not None
    assert correlation_interval(statistic="spearman", r=math.nan, n=50) is None
    with pytest.raises(ValueError, match="kendall-23"):
        correlation_interval(statistic="kendall-23", r=0.3, n=50)
    with pytest.raises(ValueError, match="fieller"):
        correlation_interval(statistic="kendall", r=0.3, n=50, method="fisher")
    with pytest.raises(ValueError, match="confidence"):
        correlation_interval(statistic="pearson", r=0.3, n=50, confidence=1.0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        correlation_interval(statistic="pearson", r=1.5, n=50)


def _bivariate(rng: np.random.Generator, rho: float, reps: int, n: int
               ) -> tuple[np.ndarray, np.ndarray]:
    x = rng.normal(size=(reps, n))
    y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=(reps, n))
    return x, y


@pytest.mark.parametrize("statistic", ["pearson", "spearman", "kendall"])
@pytest.mark.parametrize("rho,n", [(0.0, 20), (0.6, 40), (-0.85, 60)])
def test_coverage_by_simulation(statistic: str, rho: float, n: int) -> None:
    """Bivariate normal: Spearman's population rho_s = 6/pi asin(rho/2), Kendall's tau =
    2/pi asin(rho). 2000 seeded replicates: a 95% interval covers the truth in 2000 p
    trials, p within [0.93, 0.97] (the binomial's 99.9% range at 0.95 is +-0.016)."""
    reps = 2000
    x, y = _bivariate(np.random.default_rng(int(abs(rho) * 100) + n), rho, reps, n)
    truth = {"pearson": rho, "spearman": 6 / math.pi * math.asin(rho / 2),
             "kendall": 2 / math.pi * math.asin(rho)}[statistic]
    if statistic == "kendall":
        rs = [float(kendall_groups(human=x[i], metric=y[i])) for i in range(reps)]
    else:
        kernel = pearson_groups if statistic == "pearson" else spearman_groups
        rs = list(kernel(human=x, metric=y))
    covered = 0
    for r in rs:
        interval = correlation_interval(statistic=statistic, r=float(r), n=n)
        assert interval is not None
        covered += interval[0] <= truth <= interval[1]
    assert 0.93 <= covered / reps <= 0.97, covered / reps


def test_williams_is_psych_r_test_worked_example() -> None:
    """psych::r.test(103, .4, .5, .1) prints 't value -0.89 with probability < 0.37'
    (two-tailed; psych's help page, the Hotelling case)."""
    t = williams_statistic(r_ha=0.4, r_hb=0.5, r_ab=0.1, n=103)
    p = williams_test(r_ha=0.4, r_hb=0.5, r_ab=0.1, n=103, alternative="two-sided")
    assert round(t, 2) == -0.89
    assert round(p, 2) == 0.37
    want = float(2 * scipy.stats.t.sf(abs(t), 100))
    assert close(p, want)


@pytest.mark.parametrize("seed", range(15))
def test_williams_sides_and_absolute(seed: int) -> None:
    rng = np.random.default_rng(4500 + seed)
    n = [5, 20, 300][seed % 3]
    h, a = data(rng, n, seed % 5)
    b = h + rng.normal(size=n) * abs(np.nanstd(h)) * rng.uniform(0.2, 4)
    if seed % 2:
        b = -b
    ok = np.isfinite(h) & np.isfinite(a) & np.isfinite(b)
    h, a, b = h[ok], a[ok], b[ok]
    r = {k: scipy.stats.pearsonr(x, y).statistic for k, (x, y) in
         {"ha": (h, a), "hb": (h, b), "ab": (a, b)}.items()}
    n = int(ok.sum())
    kw = {"r_ha": r["ha"], "r_hb": r["hb"], "r_ab": r["ab"], "n": n}
    greater = williams_test(**kw)
    if n <= 3:
        assert math.isnan(greater) and math.isnan(steiger_test(**kw))
        return
    assert greater == significance.williams_test(**kw)  # meta-eval --test williams
    # psych::r.test's code for (n, r12, r13, r23), written out
    r12, r13, r23 = r["ha"], r["hb"], r["ab"]
    determin = 1 - r12 * r12 - r23 * r23 - r13 * r13 + 2 * r12 * r23 * r13
    av = (r12 + r13) / 2
    t2 = (r12 - r13) * np.sqrt((n - 1) * (1 + r23) / ((2 * (n - 1) / (n - 3)) * determin
                                                     + av * av * (1 - r23) ** 3))
    assert close(greater, float(scipy.stats.t.sf(t2, n - 3)))
    less = williams_test(**kw, alternative="less")
    two = williams_test(**kw, alternative="two-sided")
    assert close(greater + less, 1.0)
    assert close(two, min(1.0, 2 * min(greater, less)))
    t = williams_statistic(**kw)
    assert close(greater, float(scipy.stats.t.sf(t, n - 3)))
    # |r|: the same test on the data with each negatively correlated metric negated
    fa, fb = np.sign(r["ha"]) * a, np.sign(r["hb"]) * b
    flipped = {"r_ha": scipy.stats.pearsonr(h, fa).statistic,
               "r_hb": scipy.stats.pearsonr(h, fb).statistic,
               "r_ab": scipy.stats.pearsonr(fa, fb).statistic, "n": n}
    for test in (williams_test, steiger_test):
        got = test(**kw, absolute=True, alternative="two-sided")
        want = test(**flipped, alternative="two-sided")
        assert close(got, want), (test, got, want)
    steiger_greater = steiger_test(**kw)
    assert close(steiger_greater + steiger_test(**kw, alternative="less"), 1.0)


def _trivariate(rng: np.random.Generator, corr: np.ndarray, reps: int, n: int) -> np.ndarray:
    chol = np.linalg.cholesky(corr)
    return rng.normal(size=(reps, n, 3)) @ chol.T


@pytest.mark.parametrize("r_h,r_ab,n", [(0.5, 0.6, 50), (0.8, 0.9, 100), (0.2, 0.1, 30)])
def test_size_under_the_null_by_simulation(r_h: float, r_ab: float, n: int) -> None:
    """r_ha = r_hb in the population: each two-sided test at 0.05 rejects in 4000 seeded
    replicates at a rate within [0.038, 0.062] (the binomial's 99.9% range is +-0.011);
    with r_ha raised by 0.2 it rejects more often."""
    reps = 4000
    rng = np.random.default_rng(int(r_h * 10 + r_ab * 100) + n)
    for shift, check in ((0.0, lambda rate: 0.038 <= rate <= 0.062),
                         (0.2, lambda rate: rate > 0.1)):
        r_ha = min(r_h + shift, 0.95)
        corr = np.array([[1, r_ha, r_h], [r_ha, 1, r_ab], [r_h, r_ab, 1]])
        if np.linalg.eigvalsh(corr).min() <= 0:
            continue
        draws = _trivariate(rng, corr, reps, n)
        rs = [np.corrcoef(d, rowvar=False) for d in draws]
        for test in (williams_test, steiger_test):
            p = np.array([test(r_ha=c[0, 1], r_hb=c[0, 2], r_ab=c[1, 2], n=n,
                               alternative="two-sided") for c in rs])
            assert check(float((p <= 0.05).mean())), (test, shift, (p <= 0.05).mean())


def test_steiger_and_williams_agree_for_large_n() -> None:
    """Both are first-order equivalent near the null: their p-values agree to 2% for a
    small difference over many units."""
    for r_ha, r_hb, r_ab in ((0.6, 0.59, 0.7), (0.3, 0.31, 0.2), (-0.1, -0.09, 0.5)):
        w = williams_test(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=20000, alternative="two-sided")
        s = steiger_test(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=20000, alternative="two-sided")
        assert 0.01 < w < 0.99 and abs(w - s) < 0.02 * w, (w, s)
    assert math.isnan(williams_test(r_ha=0.5, r_hb=0.4, r_ab=0.3, n=3))
    assert math.isnan(steiger_test(r_ha=1.0, r_hb=0.4, r_ab=0.3, n=30))
    with pytest.raises(ValueError, match="two-sided"):
        williams_test(r_ha=0.5, r_hb=0.4, r_ab=0.3, n=30, alternative="both")


def _hyperbolic_squared(r: int) -> float:
    return 1 / (r + 1) ** 2


@pytest.mark.parametrize("seed", range(20))
def test_weighted_tau_options_are_scipys(seed: int) -> None:
    """weighted_tau_groups' rank, weigher and additive against scipy.stats.weightedtau on
    each group's units, with ties, NaN and extreme magnitudes."""
    from meta_eval.correlation import weighted_tau_groups

    rng = np.random.default_rng(4600 + seed)
    n = [3, 8, 40][seed % 3]
    pairs = [data(rng, n, (seed + g) % 5) for g in range(3)]
    human, metric = np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])
    for rank in ("both", "human", "metric"):
        for weigher in (None, _hyperbolic_squared):
            for additive in (True, False):
                got = weighted_tau_groups(human=human, metric=metric, rank=rank,
                                          weigher=weigher, additive=additive)
                for g in range(3):
                    ok = np.isfinite(human[g]) & np.isfinite(metric[g])
                    h, m = snap(human[g][ok]), snap(metric[g][ok])
                    if ok.sum() < 2 or np.ptp(h) == 0 or np.ptp(m) == 0:
                        assert np.isnan(got[g])
                        continue
                    x, y = (m, h) if rank == "metric" else (h, m)
                    options: dict[str, Any] = {"rank": True if rank == "both" else None}
                    want = scipy.stats.weightedtau(x, y, weigher=weigher, additive=additive,
                                                   **options).statistic
                    assert close(float(got[g]), float(want)), (rank, additive, g)
    with pytest.raises(ValueError, match="human or metric"):
        weighted_tau_groups(human=human, metric=metric, rank="x")
