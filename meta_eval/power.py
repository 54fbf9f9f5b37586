"""Power before labelling: how many items (and annotators) a study needs to tell apart two
metrics whose Pearson correlations with people differ by delta.

The pilot gives r_a = r(H, A) (the better metric), r_ab = r(A, B) and, with several
annotators, their single-rater reliability rho (the mean inter-rater Pearson r). The planned
study's units are drawn from the trivariate normal with correlations

    r(H, A) = r_a,  r(H, B) = r_a - delta,  r(A, B) = r_ab,

and each simulated study is tested with Williams' one-sided test of H1: r(H, A) > r(H, B)
(Williams 1959; Steiger 1980, eq. 7) at `alpha`. The sample covariance of n Gaussian units is
drawn directly from its Wishart distribution (Wishart 1928: (n - 1) S ~ W(Sigma, n - 1)), so
a simulated study costs the same at any n. Power(n) is the share of `sims` studies that
reject; the items needed is the smallest n with power >= `target` (doubling, then
bisection on n; each n with its own seeded draws).

Annotators: a human score that averages k raters has reliability rel_k = k rho / (1 + (k-1)
rho) (Spearman 1910; Brown 1910), and a metric's correlation with it scales with sqrt(rel_k)
(Spearman's 1904 attenuation): r(H_k, M) = r(H_k0, M) sqrt(rel_k / rel_k0) from the pilot's
k0 raters, delta with it. Segment level without grouping; the items a system ranking needs
are `judgebench items --power`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from meta_eval.arrays import FloatArray


@dataclass(frozen=True)
class PowerPlan:
    """Items needed for each number of annotators (None: not reached by `max_items`)."""

    delta: float
    r_a: float
    r_ab: float
    alpha: float
    target: float
    sims: int
    #: annotators -> (items needed, the power reached there, delta at that many annotators)
    needed: dict[int, tuple[int | None, float | None, float]]

    def to_dict(self) -> dict[str, object]:
        return {"delta": self.delta, "r_a": self.r_a, "r_b": self.r_a - self.delta,
                "r_ab": self.r_ab, "alpha": self.alpha, "target_power": self.target,
                "sims": self.sims,
                "plan": [{"annotators": k, "items": n, "power": p, "delta": d}
                         for k, (n, p, d) in self.needed.items()]}


def williams_p(r_ha: FloatArray, r_hb: FloatArray, r_ab: FloatArray, n: int) -> FloatArray:
    """One-sided p of Williams' T2 for H1: r_ha > r_hb (vectorised;
    `meta_eval.analytic.williams_p_values`)."""
    from meta_eval.analytic import williams_p_values

    return williams_p_values(r_ha=r_ha, r_hb=r_hb, r_ab=r_ab, n=n)


def correlation_matrix(r_a: float, r_b: float, r_ab: float) -> np.ndarray:
    sigma = np.array([[1.0, r_a, r_b], [r_a, 1.0, r_ab], [r_b, r_ab, 1.0]])
    if np.linalg.eigvalsh(sigma)[0] <= 1e-12:
        raise ValueError(f"no joint distribution has r(H,A)={r_a:.4g}, r(H,B)={r_b:.4g} "
                         f"and r(A,B)={r_ab:.4g}: choose a smaller delta")
    return sigma


def simulated_power(n: int, *, r_a: float, r_b: float, r_ab: float, alpha: float = 0.05,
                    sims: int = 2000, seed: int = 0) -> float:
    """The share of `sims` Gaussian studies of n units in which Williams' test rejects."""
    from scipy.stats import wishart

    if n < 4:
        return 0.0
    sigma = correlation_matrix(r_a, r_b, r_ab)
    s = wishart.rvs(df=n - 1, scale=sigma, size=sims,
                    random_state=np.random.default_rng([seed, n]))
    s = np.asarray(s).reshape(sims, 3, 3)
    d = np.sqrt(np.einsum("kii->ki", s))
    r = s / d[:, :, None] / d[:, None, :]
    p = williams_p(r[:, 0, 1], r[:, 0, 2], r[:, 1, 2], n)
    return float(np.mean(p <= alpha))


def items_needed(*, r_a: float, r_b: float, r_ab: float, alpha: float = 0.05,
                 target: float = 0.8, sims: int = 2000, seed: int = 0,
                 max_items: int = 1_000_000) -> tuple[int | None, float | None]:
    """The smallest n with simulated power >= target (module docstring), and its power."""
    def power(n: int) -> float:
        return simulated_power(n, r_a=r_a, r_b=r_b, r_ab=r_ab, alpha=alpha, sims=sims,
                               seed=seed)

    low, high = 3, 8
    while power(high) < target:
        low, high = high, high * 2
        if high > max_items:
            return None, None
    while high - low > 1:
        mid = (low + high) // 2
        if power(mid) >= target:
            high = mid
        else:
            low = mid
    return high, power(high)


def spearman_brown(rho: float, k: float) -> float:
    """The reliability of the mean of k raters whose single-rater reliability is rho."""
    return k * rho / (1 + (k - 1) * rho)


def power_plan(delta: float, *, r_a: float, r_ab: float, alpha: float = 0.05,
               target: float = 0.8, sims: int = 2000, seed: int = 0,
               rho: float | None = None, pilot_annotators: int = 1,
               annotators: tuple[int, ...] = (), max_items: int = 1_000_000) -> PowerPlan:
    """Items needed at the pilot's annotators, and with `rho` for each of `annotators`."""
    if not delta > 0:
        raise ValueError("delta must be > 0")
    counts = (pilot_annotators, *[k for k in annotators if k != pilot_annotators])
    needed: dict[int, tuple[int | None, float | None, float]] = {}
    for k in sorted(set(counts)):
        scale = 1.0 if rho is None or k == pilot_annotators else math.sqrt(
            spearman_brown(rho, k) / spearman_brown(rho, pilot_annotators))
        a, b = r_a * scale, (r_a - delta) * scale
        n, p = items_needed(r_a=a, r_b=b, r_ab=r_ab, alpha=alpha, target=target, sims=sims,
                            seed=seed, max_items=max_items)
        needed[k] = (n, p, a - b)
        if rho is None:
            break
    return PowerPlan(delta, r_a, r_ab, alpha, target, sims, needed)
