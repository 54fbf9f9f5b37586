"""Standard errors, intervals and tests of the kappas (`meta_eval.agreement` has the values).

cohen_kappa_inference (Fleiss, Cohen and Everitt 1969, "Large sample standard errors of
    kappa and weighted kappa"): with the disagreement weights d_ij of `kappa_weights` turned
    into agreement weights a_ij = 1 - d_ij / max d, the joint proportions p_ij of n pairs,
    marginals p_i. and p_.j, a_i. = sum_j p_.j a_ij, a_.j = sum_i p_i. a_ij,
    p_e = sum_ij p_i. p_.j a_ij and kappa as `cohen_kappa`:

        var(kappa)  = [sum_ij p_ij (a_ij - (a_i. + a_.j)(1 - kappa))^2
                       - (kappa - p_e (1 - kappa))^2] / (n (1 - p_e)^2)
        var0(kappa) = [sum_ij p_i. p_.j (a_ij - (a_i. + a_.j))^2 - p_e^2] / (n (1 - p_e)^2)

    The interval is kappa -/+ z_{1-a/2} se (Wald, with var); the test of H0: kappa = 0 takes
    z = kappa / se0 (var0: the two sides independent with these marginals), p two-sided.
    Assumptions: n independent pairs, large n (the interval can fall outside [-1, 1] with
    few pairs or a kappa near 1). These are statsmodels' cohens_kappa and SAS PROC FREQ's
    AGREE numbers.

fleiss_kappa_inference (Fleiss, Nee and Landis 1979, "Large sample variance of kappa in the
    case of different sets of raters"): over N units each coded by the same number m of
    raters, with p_j the share of all codes in category j and q_j = 1 - p_j,

        se0 = sqrt(2) / (sum_j p_j q_j sqrt(N m (m - 1)))
              * sqrt((sum_j p_j q_j)^2 - sum_j p_j q_j (q_j - p_j)),

    the standard error under H0: kappa = 0 (raters code at random with the observed
    marginals, fixed); z = kappa / se0, p two-sided (R irr::kappam.fleiss). No interval:
    no large-sample variance away from 0 is established for Fleiss' kappa; bootstrap units.

randolph_kappa (Randolph 2005, "Free-marginal multirater kappa"): the raters are free to
    use the q declared categories in any proportion, so chance agreement is 1/q:
    kappa_free = (P_bar - 1/q) / (1 - 1/q), P_bar the mean over units of P_u = (sum_j n_uj^2
    - m) / (m (m - 1)). Under H0 (every rater picks uniformly and independently) the pair
    agreements of one unit are uncorrelated (two pairs sharing a rater agree together with
    chance 1/q^2), so var0(P_u) = (1/q)(1 - 1/q) / (m (m - 1) / 2) exactly and

        se0 = sqrt(2 / (N m (m - 1) (q - 1))).

    The interval's se is that of a mean of N independent units, sd(P_u) / (sqrt(N) (1 -
    1/q)) (ddof = 1), kappa_free -/+ z_{1-a/2} se. Assumptions: independent units, every
    rater codes every unit (units with a missing code are dropped, as for Fleiss' kappa).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.agreement import cohen_kappa, fleiss_kappa, kappa_table, kappa_weights, unit_counts
from meta_eval.results import Result

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike


def _normal(confidence: float) -> float:
    from scipy.stats import norm

    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return float(norm.ppf(1.0 - (1.0 - confidence) / 2.0))


def _two_sided(z: float) -> float:
    from scipy.stats import norm

    return float(2.0 * norm.sf(abs(z))) if math.isfinite(z) else float("nan")


def _with(result: Result, *, se: float, se0: float, confidence: float, quantile: float,
          signature: str, interval: bool = True) -> Result:
    z = result.value / se0 if se0 > 0 else float("nan")
    low = result.value - quantile * se if interval else float("nan")
    high = result.value + quantile * se if interval else float("nan")
    return Result(result.statistic, result.value, n=result.n, skipped=result.skipped,
                  ci_low=low if math.isfinite(low) else None,
                  ci_high=high if math.isfinite(high) else None,
                  p_value=_two_sided(z) if math.isfinite(z) else None,
                  extra={"se": se, "se0": se0, "z": z, "confidence": confidence,
                         "signature": signature})


def cohen_kappa_inference(*, human: Sequence, metric: Sequence,
                          weights: str | ArrayLike | None = None,
                          labels: Sequence | None = None,
                          confidence: float = 0.95) -> Result:
    """Cohen's kappa (`agreement.cohen_kappa`, same arguments) with its asymptotic standard
    error `se`, the interval at `confidence`, and `se0`, `z` and the two-sided p-value of
    H0: kappa = 0 (module docstring)."""
    quantile = _normal(confidence)
    result = cohen_kappa(human=human, metric=metric, weights=weights, labels=labels)
    name = "none" if weights is None else weights if isinstance(weights, str) else "custom"
    signature = f"{result.statistic}|weights:{name}|se:fleiss-cohen-everitt-1969|" \
                f"ci:wald-{confidence:g}|n:{result.n}"
    nan = float("nan")
    if not math.isfinite(result.value):
        return _with(result, se=nan, se0=nan, confidence=confidence, quantile=quantile,
                     signature=signature)
    cats, table = kappa_table(human=human, metric=metric, labels=labels)
    k = len(cats)
    n = table.sum()
    p = table / n
    d = kappa_weights(weights, k)
    w = 1.0 - d / d.max()
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    w_row, w_col = w @ cols, rows @ w
    chance = float(rows @ w @ cols)
    kappa = result.value
    both = w_row[:, None] + w_col[None, :]
    scale = n * (1.0 - chance) ** 2
    var = (float((p * (w - both * (1.0 - kappa)) ** 2).sum())
           - (kappa - chance * (1.0 - kappa)) ** 2) / scale
    var0 = (float((np.outer(rows, cols) * (w - both) ** 2).sum()) - chance ** 2) / scale
    return _with(result, se=math.sqrt(max(var, 0.0)), se0=math.sqrt(max(var0, 0.0)),
                 confidence=confidence, quantile=quantile, signature=signature)


def fleiss_kappa_inference(*, ratings: ArrayLike) -> Result:
    """Fleiss' kappa (`agreement.fleiss_kappa`) with its standard error `se0` under H0:
    kappa = 0, `z` and the two-sided p-value (Fleiss, Nee and Landis 1979; module
    docstring); no interval."""
    result = fleiss_kappa(ratings=ratings)
    _, counts = unit_counts(ratings=ratings)
    signature = f"fleiss-kappa|se0:fleiss-nee-landis-1979|n:{result.n}"
    nan = float("nan")
    if not math.isfinite(result.value):
        return _with(result, se=nan, se0=nan, confidence=nan, quantile=nan,
                     signature=signature, interval=False)
    n_units, m = counts.shape[0], float(counts[0].sum())
    shares = counts.sum(axis=0) / (n_units * m)
    pq = shares * (1.0 - shares)
    total = float(pq.sum())
    inner = total ** 2 - float((pq * ((1.0 - shares) - shares)).sum())
    se0 = math.sqrt(2.0) / (total * math.sqrt(n_units * m * (m - 1.0))) * math.sqrt(inner)
    out = _with(result, se=nan, se0=se0, confidence=nan, quantile=nan, signature=signature,
                interval=False)
    extra = {key: v for key, v in out.extra.items() if key not in ("se", "confidence")}
    return Result(out.statistic, out.value, n=out.n, skipped=out.skipped,
                  p_value=out.p_value, extra=extra)


def randolph_kappa(*, ratings: ArrayLike, categories: int | Sequence[float],
                   confidence: float = 0.95) -> Result:
    """Randolph's free-marginal kappa of a (raters, units) matrix of category codes over the
    units every rater coded, with `categories` the declared categories (or their number q);
    `se` and the interval, `se0`, `z` and the two-sided p-value of H0 (module docstring)."""
    quantile = _normal(confidence)
    values, counts = unit_counts(ratings=ratings)
    if isinstance(categories, int):
        q = categories
        if q < values.size:
            raise ValueError(f"{values.size} categories are used but only {q} declared")
    else:
        declared = np.unique(np.asarray(list(categories), dtype=float))
        outside = values[~np.isin(values, declared)]
        if outside.size:
            raise ValueError(f"category {float(outside[0])!r} is not among the declared "
                             f"categories")
        q = int(declared.size)
    if q < 2:
        raise ValueError(f"Randolph's kappa needs 2 or more declared categories, got {q}")
    n_units = counts.shape[0]
    m = float(counts[0].sum()) if n_units else 0.0
    signature = f"randolph-kappa|q:{q}|se:unit-mean|se0:exact-uniform|" \
                f"ci:wald-{confidence:g}|n:{n_units}"
    nan = float("nan")
    if m < 2 or n_units == 0:
        return _with(Result("randolph-kappa", nan, n=n_units, skipped=1), se=nan, se0=nan,
                     confidence=confidence, quantile=quantile, signature=signature)
    per_unit = ((counts ** 2).sum(axis=1) - m) / (m * (m - 1.0))
    chance = 1.0 / q
    value = (float(per_unit.mean()) - chance) / (1.0 - chance)
    se = float(per_unit.std(ddof=1)) / math.sqrt(n_units) / (1.0 - chance) \
        if n_units > 1 else nan
    se0 = math.sqrt(2.0 / (n_units * m * (m - 1.0) * (q - 1.0)))
    return _with(Result("randolph-kappa", value, n=n_units), se=se, se0=se0,
                 confidence=confidence, quantile=quantile, signature=signature)
