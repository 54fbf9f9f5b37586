"""A judge against itself: test-retest reliability over repeated draws of one judgement.

`draws` is a (units, K) array: K independent judgements of each unit (an (item, system)
output), NaN where a draw is missing. A unit counts where it has at least 2 draws.

icc          one-way random-effects intraclass correlation of single draws, ICC(1)
             (Shrout and Fleiss 1979, case 1; unbalanced: Donner 1986): with a units, N
             draws, n_u draws of unit u, MSB and MSW the between- and within-unit mean
             squares and k0 = (N - sum n_u^2 / N) / (a - 1),

                 ICC(1) = (MSB - MSW) / (MSB + (k0 - 1) MSW);

             undefined when MSB + (k0 - 1) MSW = 0 (every draw equal).
icc_mean     the reliability of the mean of K draws (Spearman-Brown),
             K ICC / (1 + (K - 1) ICC), K the draws per unit (their mean when unbalanced).
alpha        Krippendorff's alpha, interval, the draws as coders of each unit
             (`meta_eval.agreement.krippendorff_alpha`).
spread       the mean over units of the standard deviation of its draws (ddof = 1).
flip_share   the share of units whose draws are not all equal: a verdict that flips
             between draws.
pass_at_k    binary judges (draws 0/1, 1 = pass): the chance that at least one of k draws
             passes, the unbiased estimator 1 - C(n - c, k) / C(n, k) of a unit with c passes
             in n draws (Chen et al. 2021, "Evaluating Large Language Models Trained on
             Code"), averaged over units with n >= k.
pass_hat_k   pass^k: the chance that all k draws pass, C(c, k) / C(n, k) (Yao et al. 2024,
             tau-bench), averaged likewise.

noise_ceiling(draws, human): how much of the judge's disagreement with people its own noise
explains (agreement with people against agreement with itself). With r the Pearson
correlation of people's score and the mean of the draws, and R = icc_mean the reliability
of that mean, the judge's noise alone caps r at sqrt(R) (Spearman 1904, the attenuation
bound, people taken as reliable): `ceiling` = sqrt(R), `disattenuated` = r / sqrt(R) and
`noise_share` = (1 - sqrt(R)) / (1 - r), the part of the gap to perfect agreement its
unreliability accounts for, clipped to [0, 1] (1: all of it; NaN when r = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reliability:
    """Test-retest statistics of one judge's draws (module docstring)."""

    units: int  # units with at least 2 draws
    draws: float  # draws per counted unit (mean)
    icc: float
    icc_mean: float
    alpha: float
    spread: float
    flip_share: float


def _counted(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(draws, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"draws must be a (units, K) array, got shape {x.shape}")
    ok = np.isfinite(x)
    keep = ok.sum(axis=1) >= 2
    return x[keep], ok[keep]


def icc_one_way(draws: np.ndarray) -> float:
    """ICC(1) of single draws (module docstring); NaN with fewer than 2 units."""
    x, ok = _counted(draws)
    a = x.shape[0]
    if a < 2:
        return math.nan
    n = ok.sum(axis=1).astype(float)
    total = n.sum()
    # scaled by a power of two first (exact), so squares of huge or tiny scores stay finite
    from meta_eval.numerics import power_of_two_scale

    e = int(power_of_two_scale(np.where(ok, x, 0.0), axis=None).item())
    x = np.ldexp(np.where(ok, x, 0.0), -e)
    grand = x.sum() / total
    means = x.sum(axis=1) / n
    ssb = float(np.sum(n * (means - grand) ** 2))
    ssw = float(np.sum(np.where(ok, (x - means[:, None]) ** 2, 0.0)))
    msb = ssb / (a - 1)
    msw = ssw / (total - a)
    k0 = (total - float(np.sum(n * n)) / total) / (a - 1)
    denominator = msb + (k0 - 1) * msw
    return (msb - msw) / denominator if denominator > 0 else math.nan


def spearman_brown(icc: float, k: float) -> float:
    """The reliability of the mean of k draws from the single-draw ICC."""
    if not math.isfinite(icc):
        return math.nan
    return k * icc / (1 + (k - 1) * icc)


def reliability(draws: np.ndarray) -> Reliability:
    """Every test-retest statistic of `draws` (module docstring)."""
    from meta_eval.agreement import krippendorff_alpha

    x, ok = _counted(draws)
    units = x.shape[0]
    k = float(ok.sum(axis=1).mean()) if units else math.nan
    icc = icc_one_way(draws)
    alpha = (krippendorff_alpha(ratings=x.T, level="interval").value if units >= 1
             else math.nan)
    if units:
        sd = [float(np.std(row[m], ddof=1)) for row, m in zip(x, ok, strict=True)]
        spread = float(np.mean(sd))
        flips = float(np.mean([np.unique(row[m]).size > 1 for row, m in zip(x, ok,
                                                                            strict=True)]))
    else:
        spread = flips = math.nan
    return Reliability(units=units, draws=k, icc=icc, icc_mean=spearman_brown(icc, k),
                       alpha=float(alpha), spread=spread, flip_share=flips)


def _binary(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(draws, dtype=float)
    ok = np.isfinite(x)
    if not np.isin(x[ok], (0.0, 1.0)).all():
        raise ValueError("pass@k and pass^k need binary draws (0 or 1, 1 = pass)")
    return ok.sum(axis=1), np.where(ok, x, 0.0).sum(axis=1)


def pass_at_k(draws: np.ndarray, k: int) -> float:
    """Mean over units with n >= k draws of 1 - C(n - c, k) / C(n, k); NaN without any."""
    n, c = _binary(draws)
    if k < 1:
        raise ValueError("k must be >= 1")
    values = [1.0 - math.comb(int(ni) - int(ci), k) / math.comb(int(ni), k)
              for ni, ci in zip(n, c, strict=True) if ni >= k]
    return float(np.mean(values)) if values else math.nan


def pass_hat_k(draws: np.ndarray, k: int) -> float:
    """Mean over units with n >= k draws of C(c, k) / C(n, k) (pass^k); NaN without any."""
    n, c = _binary(draws)
    if k < 1:
        raise ValueError("k must be >= 1")
    values = [math.comb(int(ci), k) / math.comb(int(ni), k)
              for ni, ci in zip(n, c, strict=True) if ni >= k]
    return float(np.mean(values)) if values else math.nan


@dataclass(frozen=True)
class NoiseCeiling:
    """How far the judge's own noise explains its disagreement with people."""

    agreement: float  # Pearson r of people and the mean of the draws
    reliability: float  # icc_mean
    ceiling: float  # sqrt(reliability)
    disattenuated: float  # agreement / ceiling
    noise_share: float  # (1 - ceiling) / (1 - agreement), in [0, 1]


def noise_ceiling(draws: np.ndarray, human: np.ndarray) -> NoiseCeiling:
    """`draws` (units, K) against people's `human` (units,) (module docstring)."""
    from meta_eval.correlation import pearson_groups

    x = np.asarray(draws, dtype=float)
    h = np.asarray(human, dtype=float)
    if h.shape != (x.shape[0],):
        raise ValueError("human must have one value per unit (row of draws)")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a unit with no draw: NaN
        mean = np.nanmean(np.where(np.isfinite(x), x, np.nan), axis=1)
    r = float(pearson_groups(human=h[None, :], metric=mean[None, :])[0])
    rel = reliability(x).icc_mean
    ceiling = math.sqrt(rel) if math.isfinite(rel) and rel >= 0 else math.nan
    disattenuated = r / ceiling if math.isfinite(ceiling) and ceiling > 0 else math.nan
    share = math.nan
    if math.isfinite(r) and math.isfinite(ceiling) and r < 1:
        share = min(1.0, max(0.0, (1 - ceiling) / (1 - r)))
    return NoiseCeiling(r, rel, ceiling, disattenuated, share)
