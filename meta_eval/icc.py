"""Intraclass correlations of a (targets, raters) table: the six Shrout-Fleiss / McGraw-Wong
forms, each with its F-test and confidence interval.

Shrout and Fleiss 1979, "Intraclass correlations: uses in assessing rater reliability";
McGraw and Wong 1996, "Forming inferences about some intraclass correlation coefficients"
(names in brackets). With n targets (rows) rated by the same k raters (columns), the
two-way ANOVA mean squares are MSR (targets, df n - 1), MSC (raters, df k - 1), MSE
(residual, df (n - 1)(k - 1)) and MSW = (SSC + SSE) / (n (k - 1)) (within targets):

    ICC1  [ICC(1)]    one-way random: each target rated by different, exchangeable raters
          (MSR - MSW) / (MSR + (k - 1) MSW)
    ICC2  [ICC(A,1)]  two-way random, absolute agreement: raters a sample of a population
          (MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n)
    ICC3  [ICC(C,1)]  two-way mixed, consistency: these k raters only
          (MSR - MSE) / (MSR + (k - 1) MSE)
    ICC1k, ICC2k, ICC3k: the reliability of the mean of the k raters,
          (MSR - MSW) / MSR, (MSR - MSE) / (MSR + (MSC - MSE) / n), (MSR - MSE) / MSR.

F-tests of H0: ICC = 0: F = MSR / MSW on (n - 1, n (k - 1)) df for ICC1 and ICC1k,
F = MSR / MSE on (n - 1, (n - 1)(k - 1)) df for the others; p = P(F_df > F).

Confidence intervals (Shrout and Fleiss 1979, Table 4; McGraw and Wong 1996, Table 7), at
level 1 - a with F_q(d1, d2) the q quantile: for ICC1 and ICC3, F_L = F / F_{1-a/2}(df1, df2)
and F_U = F F_{1-a/2}(df2, df1), the interval (F_L - 1) / (F_L + k - 1) .. (F_U - 1) / (F_U
+ k - 1) and for their means 1 - 1/F_L .. 1 - 1/F_U. ICC2 takes Satterthwaite's df

    v = (k - 1)(n - 1) (k ICC2 F_C + n (1 + (k - 1) ICC2) - k ICC2)^2 /
        ((n - 1) k^2 ICC2^2 F_C^2 + (n (1 + (k - 1) ICC2) - k ICC2)^2),  F_C = MSC / MSE,

F* = F_{1-a/2}(n - 1, v), F_* = F_{1-a/2}(v, n - 1), and the interval
n (MSR - F* MSE) / (F* (k MSC + (k n - k - n) MSE) + n MSR) ..
n (F_* MSR - MSE) / (k MSC + (k n - k - n) MSE + n F_* MSR); ICC2k's bounds are these
stepped up by Spearman-Brown, k b / (1 + (k - 1) b). (These are pingouin's and R
psych::ICC's formulas.)

Assumptions: ratings are normal, targets independent, variance equal across raters; a
target missing any rating is dropped (the forms need a complete table; the one-way ICC of
unbalanced draws is `meta_eval.repeats.icc_one_way`). The values are scaled by a power of
two before any square (exact), so huge or tiny ratings neither overflow nor underflow.

DESIGNS names which forms suit a design: "one-way" (exchangeable raters or repeated draws
of one judge), "two-way-random" (raters drawn from a population: absolute agreement),
"two-way-mixed" (these raters only: consistency).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.numerics import power_of_two_scale

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike

FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
MCGRAW_WONG = {"ICC1": "ICC(1)", "ICC2": "ICC(A,1)", "ICC3": "ICC(C,1)",
               "ICC1k": "ICC(k)", "ICC2k": "ICC(A,k)", "ICC3k": "ICC(C,k)"}
DESIGNS = {"one-way": ("ICC1", "ICC1k"), "two-way-random": ("ICC2", "ICC2k"),
           "two-way-mixed": ("ICC3", "ICC3k")}


@dataclass(frozen=True)
class Icc:
    """One ICC form with its F-test of ICC = 0 and its confidence interval."""

    form: str
    value: float
    f: float
    df1: float
    df2: float
    p_value: float
    ci_low: float
    ci_high: float
    confidence: float
    n: int  # targets in the complete table
    k: int  # raters

    @property
    def signature(self) -> str:
        return (f"icc:{self.form}|{MCGRAW_WONG[self.form]}|n:{self.n}|k:{self.k}|"
                f"ci:F-{self.confidence:g}|shrout-fleiss-1979")

    def to_dict(self) -> dict[str, Any]:
        def clean(v: float) -> float | None:
            return float(v) if np.isfinite(v) else None

        return {"form": self.form, "mcgraw_wong": MCGRAW_WONG[self.form],
                "value": clean(self.value), "f": clean(self.f), "df1": clean(self.df1),
                "df2": clean(self.df2), "p_value": clean(self.p_value),
                "ci_low": clean(self.ci_low), "ci_high": clean(self.ci_high),
                "confidence": self.confidence, "n": self.n, "k": self.k,
                "signature": self.signature}


def icc_forms(*, ratings: ArrayLike, confidence: float = 0.95) -> dict[str, Icc]:
    """The six ICC forms of a (targets, raters) table, NaN = missing (a target missing a
    rating is dropped). NaN values with fewer than 2 complete targets or 2 raters, or when
    a mean square in a denominator is 0."""
    import scipy.stats

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    x = np.asarray(ratings, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"ratings must be a (targets, raters) table, got shape {x.shape}")
    x = x[np.isfinite(x).all(axis=1)]
    n, k = x.shape
    if n < 2 or k < 2:
        nan = float("nan")
        return {f: Icc(f, nan, nan, nan, nan, nan, nan, nan, confidence, n, k)
                for f in FORMS}
    x = np.ldexp(x, -int(power_of_two_scale(x, axis=None).item()))
    grand = x.mean()
    rows, cols = x.mean(axis=1), x.mean(axis=0)
    ssr = k * float(((rows - grand) ** 2).sum())
    ssc = n * float(((cols - grand) ** 2).sum())
    sse = float(((x - rows[:, None] - cols[None, :] + grand) ** 2).sum())
    df1, dfw, dfe = n - 1, n * (k - 1), (n - 1) * (k - 1)
    msr, msc, mse, msw = ssr / df1, ssc / (k - 1), sse / dfe, (ssc + sse) / dfw

    def ratio(a: float, b: float) -> float:
        return a / b if b > 0 else float("nan")

    icc1 = ratio(msr - msw, msr + (k - 1) * msw)
    icc2 = ratio(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n)
    icc3 = ratio(msr - mse, msr + (k - 1) * mse)
    icc1k, icc2k, icc3k = ratio(msr - msw, msr), ratio(msr - mse, msr + (msc - mse) / n), \
        ratio(msr - mse, msr)
    f1, f3 = ratio(msr, msw), ratio(msr, mse)
    p1 = float(scipy.stats.f.sf(f1, df1, dfw))
    p3 = float(scipy.stats.f.sf(f3, df1, dfe))
    q = 1.0 - (1.0 - confidence) / 2.0
    f = scipy.stats.f

    def bounds(value: float, df2: float) -> tuple[float, float, float, float]:
        lo = value / f.ppf(q, df1, df2)
        hi = value * f.ppf(q, df2, df1)
        return ((lo - 1) / (lo + k - 1), (hi - 1) / (hi + k - 1), 1 - 1 / lo, 1 - 1 / hi)

    l1, u1, l1k, u1k = bounds(f1, dfw)
    l3, u3, l3k, u3k = bounds(f3, dfe)
    fc = ratio(msc, mse)
    spread = n * (1 + (k - 1) * icc2) - k * icc2
    v = dfe * (k * icc2 * fc + spread) ** 2 / (df1 * k**2 * icc2**2 * fc**2 + spread**2)
    f_up, f_low = f.ppf(q, df1, v), f.ppf(q, v, df1)
    base = k * msc + (k * n - k - n) * mse
    l2 = n * (msr - f_up * mse) / (f_up * base + n * msr)
    u2 = n * (f_low * msr - mse) / (base + n * f_low * msr)

    def stepped(b: float) -> float:
        return k * b / (1 + (k - 1) * b)

    table = {"ICC1": (icc1, f1, dfw, p1, l1, u1), "ICC2": (icc2, f3, dfe, p3, l2, u2),
             "ICC3": (icc3, f3, dfe, p3, l3, u3), "ICC1k": (icc1k, f1, dfw, p1, l1k, u1k),
             "ICC2k": (icc2k, f3, dfe, p3, stepped(l2), stepped(u2)),
             "ICC3k": (icc3k, f3, dfe, p3, l3k, u3k)}
    return {form: Icc(form, float(value), float(fv), df1, df2, p, float(lo), float(hi),
                      confidence, n, k)
            for form, (value, fv, df2, p, lo, hi) in table.items()}
