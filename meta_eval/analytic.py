"""Analytic (normal-theory) inference for correlations: confidence intervals from r and n,
and tests of two dependent correlations that share one variable (the human side).

correlation_interval: on Fisher's z = atanh(r) with standard error se, at confidence c and
    q the standard normal quantile of (1 + c) / 2, the interval is

        [tanh(z - q se), tanh(z + q se)]

    where se is, by `method`:

        fisher          1 / sqrt(n - 3)                   Pearson (Fisher 1921, "On the
                        'probable error' of a coefficient of correlation deduced from a small
                        sample"); scipy.stats.pearsonr(...).confidence_interval()
        bonett-wright   sqrt((1 + r^2 / 2) / (n - 3))     Spearman (Bonett and Wright 2000,
                        "Sample size requirements for estimating Pearson, Kendall and
                        Spearman correlations", Psychometrika 65(1))
        fieller         sqrt(1.06 / (n - 3))              Spearman, and
                        sqrt(0.437 / (n - 4))             Kendall's tau (Fieller, Hartley and
                        Pearson 1957, "Tests for rank correlation coefficients. I",
                        Biometrika 44; Bonett and Wright 2000 recommend it for Kendall)

    The default (`method="auto"`) is fisher for pearson, bonett-wright for spearman and
    fieller for kendall. Assumptions: independent units (no grouping: one correlation over
    n units), a bivariate normal (Pearson's interval is exact only asymptotically; the rank
    forms were derived for bivariate normal data without ties and stay approximate with
    ties), |r| < 1 (r = +-1 gives the degenerate interval [r, r]). Undefined (None) below
    n = 4 (fisher, spearman) or n = 5 (Kendall's fieller form), or for a non-finite r.

williams_test (Williams 1959, "The comparison of regression variables", JRSS B 21; as
    Steiger 1980 gives it, his T2; psych::r.test with r23): for r_ha, r_hb sharing the
    human side and r_ab between the metrics,

        K = 1 - r_ha^2 - r_hb^2 - r_ab^2 + 2 r_ha r_hb r_ab
        t = (r_ha - r_hb) sqrt((n - 1)(1 + r_ab))
            / sqrt(2 K (n - 1)/(n - 3) + ((r_ha + r_hb)/2)^2 (1 - r_ab)^3)

    on Student's t with n - 3 degrees of freedom.

steiger_test (Steiger 1980, "Tests for comparing elements of a correlation matrix",
    Psychological Bulletin 87(2), the pooled form Z1*): with z = atanh(r),
    rbar = (r_ha + r_hb) / 2,

        psi = r_ab (1 - 2 rbar^2) - rbar^2 (1 - 2 rbar^2 - r_ab^2) / 2
        c   = psi / (1 - rbar^2)^2
        Z   = (z_ha - z_hb) sqrt(n - 3) / sqrt(2 - 2 c)

    on the standard normal.

Both tests: `alternative` "greater" (H1: r_ha > r_hb, one-sided; the default, as
`meta-eval --test williams` reports), "less", or "two-sided" (psych::r.test's default).
`absolute=True` compares |r_ha| with |r_hb|: each metric whose correlation is negative is
negated first, so r_ab takes the sign sign(r_ha) sign(r_hb) (the correlations of the
flipped metrics with each other). The default compares the signed correlations: for
metric evaluation a negative correlation with people is worse, not as good.
Assumptions: n independent units, trivariate normal, 3 < n; the result is NaN otherwise
or where the variance estimate is not positive.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import ndtr, ndtri, stdtr

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike, FloatArray

INTERVAL_METHODS = ("fisher", "bonett-wright", "fieller")
ALTERNATIVES = ("greater", "less", "two-sided")
_DEFAULT_METHOD = {"pearson": "fisher", "spearman": "bonett-wright", "kendall": "fieller"}
#: (statistic, method) -> the standard error of atanh(r), as a signature writes it
STANDARD_ERRORS = {("pearson", "fisher"): "1/sqrt(n-3)",
                   ("spearman", "bonett-wright"): "sqrt((1+r^2/2)/(n-3))",
                   ("spearman", "fieller"): "sqrt(1.06/(n-3))",
                   ("spearman", "fisher"): "1/sqrt(n-3)",
                   ("kendall", "fieller"): "sqrt(0.437/(n-4))"}


#: the reference page's table (docs/_hooks/reference.py): name, what it applies to, the
#: formula, the paper, the assumptions
REFERENCE = (
    ("fisher", "pearson interval", "tanh(atanh(r) +- q / sqrt(n - 3))",
     "Fisher 1921, Metron 1: 3-32",
     "independent units, bivariate normal; asymptotic"),
    ("bonett-wright", "spearman interval (default)",
     "tanh(atanh(r) +- q sqrt((1 + r^2/2) / (n - 3)))",
     "Bonett and Wright 2000, Psychometrika 65(1): 23-28",
     "independent units, bivariate normal, no ties (approximate with ties); n >= 4"),
    ("fieller", "kendall interval (default); spearman on request",
     "tanh(atanh(r) +- q sqrt(0.437 / (n - 4))); spearman: sqrt(1.06 / (n - 3))",
     "Fieller, Hartley and Pearson 1957, Biometrika 44: 470-481",
     "independent units, bivariate normal, no ties (approximate with ties); n >= 5"),
    ("williams", "two dependent pearson or spearman r sharing the human side "
     "(meta-eval --compare --test williams [--williams-sided two] [--compare-abs])",
     "Williams' T2, t on n - 3 df; greater (default), less or two-sided; signed "
     "(default) or |r|",
     "Williams 1959, JRSS B 21: 396-399; Steiger 1980, Psych. Bull. 87(2): 245-251",
     "independent units, trivariate normal; n > 3; on spearman approximate (size 0.057-0.065 "
     "at 0.05 in simulation)"),
    ("steiger", "two dependent pearson or spearman r sharing the human side "
     "(meta-eval --compare --test steiger)",
     "Steiger's pooled Z1* on Fisher z; greater (default), less or two-sided; signed "
     "(default) or |r|",
     "Steiger 1980, Psych. Bull. 87(2): 245-251",
     "independent units, trivariate normal; n > 3, |r| < 1; on spearman approximate "
     "(size 0.057-0.065 at 0.05 in simulation)"),
)


def interval_method(statistic: str, method: str = "auto") -> str:
    """The interval form for `statistic` ("auto": the module docstring's default); a
    ValueError names the forms that apply."""
    if statistic not in _DEFAULT_METHOD:
        raise ValueError(f"no analytic interval for {statistic!r}; "
                         f"one exists for {', '.join(_DEFAULT_METHOD)}")
    if method == "auto":
        return _DEFAULT_METHOD[statistic]
    allowed = {"pearson": ("fisher",), "spearman": ("bonett-wright", "fieller", "fisher"),
               "kendall": ("fieller",)}[statistic]
    if method not in allowed:
        raise ValueError(f"interval method {method!r} does not apply to {statistic}; "
                         f"use {' or '.join(allowed)}")
    return method


def _standard_error(method: str, statistic: str, r: float, n: int) -> float | None:
    if method == "fisher":
        return 1 / math.sqrt(n - 3) if n > 3 else None
    if method == "bonett-wright":
        return math.sqrt((1 + r * r / 2) / (n - 3)) if n > 3 else None
    if statistic == "kendall":
        return math.sqrt(0.437 / (n - 4)) if n > 4 else None
    return math.sqrt(1.06 / (n - 3)) if n > 3 else None


def correlation_interval(*, statistic: str, r: float, n: int, confidence: float = 0.95,
                         method: str = "auto") -> tuple[float, float] | None:
    """The analytic confidence interval of a pearson, spearman or kendall correlation `r`
    over `n` units (module docstring); None where it is undefined."""
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    form = interval_method(statistic, method)
    if not math.isfinite(r):
        return None
    if abs(r) > 1:
        raise ValueError(f"a correlation must lie in [-1, 1], got {r!r}")
    se = _standard_error(form, statistic, r, n)
    if se is None:
        return None
    if abs(r) == 1:
        return (r, r)
    z = math.atanh(r)
    half = float(ndtri((1 + confidence) / 2)) * se
    return (math.tanh(z - half), math.tanh(z + half))


def _orient(r_ha: float, r_hb: float, r_ab: float, absolute: bool
            ) -> tuple[float, float, float]:
    if not absolute:
        return r_ha, r_hb, r_ab
    sign = (-1.0 if r_ha < 0 else 1.0) * (-1.0 if r_hb < 0 else 1.0)
    return abs(r_ha), abs(r_hb), sign * r_ab


def _tail(cdf_low: float, cdf_high: float, alternative: str) -> float:
    """p from the null law's P(X <= x) and P(X >= x)."""
    return float(_tails(np.asarray(cdf_low), np.asarray(cdf_high), alternative))


def _tails(cdf_low: FloatArray, cdf_high: FloatArray, alternative: str) -> FloatArray:
    if alternative == "greater":
        return cdf_high
    if alternative == "less":
        return cdf_low
    if alternative == "two-sided":
        return np.minimum(1.0, 2 * np.minimum(cdf_low, cdf_high))
    raise ValueError(f"unknown alternative {alternative!r}; use {', '.join(ALTERNATIVES)}")


def williams_statistics(*, r_ha: ArrayLike, r_hb: ArrayLike, r_ab: ArrayLike, n: int,
                        absolute: bool = False) -> FloatArray:
    """Williams' t (module docstring) for arrays of correlations, elementwise; NaN where
    n <= 3 or the variance is not positive."""
    ha, hb, ab = (np.asarray(x, dtype=float) for x in (r_ha, r_hb, r_ab))
    if absolute:
        ab = np.where(ha < 0, -1.0, 1.0) * np.where(hb < 0, -1.0, 1.0) * ab
        ha, hb = np.abs(ha), np.abs(hb)
    if n <= 3:
        return np.full(np.broadcast(ha, hb, ab).shape, np.nan)
    k = 1 - ha**2 - hb**2 - ab**2 + 2 * ha * hb * ab
    rbar = (ha + hb) / 2
    var = 2 * (n - 1) / (n - 3) * k + rbar**2 * (1 - ab) ** 3
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (ha - hb) * np.sqrt((n - 1) * (1 + ab)) / np.sqrt(np.where(var > 0, var, np.nan))
    return np.asarray(t, dtype=float)


def williams_p_values(*, r_ha: ArrayLike, r_hb: ArrayLike, r_ab: ArrayLike, n: int,
                      alternative: str = "greater", absolute: bool = False) -> FloatArray:
    """p-values of Williams' test for arrays of correlations, elementwise (module
    docstring; `meta_eval.power` simulates studies with it)."""
    _tail(0.5, 0.5, alternative)
    t = williams_statistics(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n, absolute=absolute)
    if n <= 3:
        return t
    return _tails(stdtr(n - 3, t), stdtr(n - 3, -t), alternative)


def williams_statistic(*, r_ha: float, r_hb: float, r_ab: float, n: int,
                       absolute: bool = False) -> float:
    """Williams' t (module docstring); NaN where n <= 3 or the variance is not positive."""
    return float(williams_statistics(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n,
                                     absolute=absolute))


def williams_test(*, r_ha: float, r_hb: float, r_ab: float, n: int,
                  alternative: str = "greater", absolute: bool = False) -> float:
    """p-value of Williams' test of r_ha against r_hb (module docstring)."""
    return float(williams_p_values(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n,
                                   alternative=alternative, absolute=absolute))


def steiger_statistic(*, r_ha: float, r_hb: float, r_ab: float, n: int,
                      absolute: bool = False) -> float:
    """Steiger's pooled Z1* (module docstring); NaN where n <= 3, |r| = 1 or the variance
    is not positive."""
    r_ha, r_hb, r_ab = _orient(r_ha, r_hb, r_ab, absolute)
    if n <= 3 or max(abs(r_ha), abs(r_hb)) >= 1:
        return math.nan
    rbar = (r_ha + r_hb) / 2
    psi = r_ab * (1 - 2 * rbar**2) - rbar**2 * (1 - 2 * rbar**2 - r_ab**2) / 2
    c = psi / (1 - rbar**2) ** 2
    if not 2 - 2 * c > 0:
        return math.nan
    return (math.atanh(r_ha) - math.atanh(r_hb)) * math.sqrt(n - 3) / math.sqrt(2 - 2 * c)


def steiger_test(*, r_ha: float, r_hb: float, r_ab: float, n: int,
                 alternative: str = "greater", absolute: bool = False) -> float:
    """p-value of Steiger's test of r_ha against r_hb (module docstring)."""
    z = steiger_statistic(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n, absolute=absolute)
    _tail(0.5, 0.5, alternative)
    if math.isnan(z):
        return math.nan
    return _tail(float(ndtr(z)), float(ndtr(-z)), alternative)
