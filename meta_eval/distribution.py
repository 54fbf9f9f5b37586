"""How far a judge's verdict distribution is from people's: CKLD and Wasserstein-1.

These compare the two sides' histograms, not unit by unit: a judge that gives every answer
a 4 while people spread 1-5 agrees often with a lenient rater yet is biased in its choices.
Each kernel takes padded arrays `human`, `metric` of shape (..., G, U), NaN where missing (a
unit missing either side is dropped), and returns per-group values (..., G), NaN for a
group with no unit. Both sides are categories (`meta_eval.agreement.categories`: rounded
half up to integers). With n units in a group, p_c = #{u: h_u = c} / n people's share of
category c, and over the K categories of the scale (the declared labels, else the sorted
union of the categories both sides use in the call):

ckld          choice KL divergence (Choi et al. 2025, "Mitigating Selection Bias with Node
              Pruning and Auxiliary Options", CKLD): KL(p || q) = sum_c p_c log(p_c / q_c),
              q_c = (#{u: m_u = c} + 1/2) / (n + K/2) the judge's share with Jeffreys' add-1/2
              smoothing (a judge that never uses a category people used would be infinitely
              far otherwise); 0 log 0 = 0. scipy.stats.entropy(p, q). Lower is better.
ckld-uniform  KL(u || q), u_c = 1/K: the judge's choice bias against the uniform choice
              (the original CKLD's reference where the gold distribution is unknown or
              balanced); it reads people only through K and which units count.
wasserstein   Wasserstein-1 (earth mover's) distance between the two histograms on the
              ordinal line, W1 = sum_j |P(h <= c_j) - P(m <= c_j)| (c_{j+1} - c_j) over the
              sorted categories (Vallender 1974; scipy.stats.wasserstein_distance): the mass
              moved times the number of scale points it moves, in scale points. With declared
              labels the bins are their positions (labels 1, 2, 4, 8: a 4 moved to 8 is one
              bin, as kappa's weights). Lower is better; 0: the same histogram.

wasserstein-real  Wasserstein-1 between the two sides' empirical distributions of real
              values, nothing rounded: with the n units both sides scored sorted on each
              side, h_(1) <= ... <= h_(n) and m_(1) <= ... <= m_(n), W1 = (1/n) sum_i
              |h_(i) - m_(i)| (the quantile form of W1 for two samples of equal size;
              Vallender 1974; scipy.stats.wasserstein_distance(h, m) on those units), in
              the scores' units. A unit missing either side is dropped (as every
              statistic's units are those both sides scored), so both samples have n
              values; NaN for a group with none. Lower is better; 0: the same values.

K depends on the call without declared labels (a resample that loses a category loses its
smoothing mass), so `--labels` fixes ckld's scale. Magnitudes: categories are scaled by a
power of two above the largest |category| (exact) before any gap, so categories at +-1e300
do not overflow W1's gaps; wasserstein-real scales each group's values the same way before
any difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.agreement import _domain, _positions, categories
from meta_eval.numerics import paired

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray

SMOOTHING = 0.5  # Jeffreys' pseudo-count added to each of the judge's categories
_CELLS = 1 << 22  # (rows x categories) cells per chunk


def _histograms(human: np.ndarray, metric: np.ndarray, domain: Sequence[float] | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]:
    """(counts of people's categories (rows, K), the judge's (rows, K), the K categories in
    order (positions among `domain` if declared), the leading shape)."""
    h, m = paired(human=categories(human), metric=categories(metric))
    if domain is not None:
        h, m = _positions(h, domain), _positions(m, domain)
        cats = np.arange(_domain(domain).size, dtype=float)
    else:
        ok = np.isfinite(h)
        cats = np.unique(np.concatenate([h[ok], m[ok]]))
    lead = h.shape[:-1]
    rows_h, rows_m = h.reshape(-1, h.shape[-1]), m.reshape(-1, m.shape[-1])
    rows, k = rows_h.shape[0], max(cats.size, 1)
    counts_h = np.zeros((rows, k))
    counts_m = np.zeros((rows, k))
    if cats.size:
        step = max(1, _CELLS // k)
        for start in range(0, rows, step):
            sl = slice(start, start + step)
            ok = np.isfinite(rows_h[sl])
            n_rows = ok.shape[0]
            row = np.broadcast_to(np.arange(n_rows)[:, None], ok.shape)
            for side, out in ((rows_h[sl], counts_h), (rows_m[sl], counts_m)):
                index = np.searchsorted(cats, np.where(ok, side, cats[0]))
                out[sl] = np.bincount((row * k + index)[ok],
                                      minlength=n_rows * k).reshape(n_rows, k)
    return counts_h, counts_m, cats, lead


def _kl(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """sum_c p_c log(p_c / q_c) over the last axis, 0 log 0 = 0 (q > 0 everywhere)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)  # >= 0 exactly (rounding may give -1e-17)


def ckld_groups(*, human: np.ndarray, metric: np.ndarray, reference: str = "gold",
                domain: Sequence[float] | None = None) -> np.ndarray:
    """Per-group choice KL divergence (module docstring); `reference`: "gold" (people's
    distribution) or "uniform"; `domain`: the declared labels."""
    if reference not in ("gold", "uniform"):
        raise ValueError(f"unknown CKLD reference {reference!r}; use 'gold' or 'uniform'")
    counts_h, counts_m, cats, lead = _histograms(human, metric, domain)
    n = counts_h.sum(axis=-1)
    k = cats.size
    with np.errstate(invalid="ignore", divide="ignore"):
        q = (counts_m + SMOOTHING) / (n + SMOOTHING * k)[:, None]
        p = counts_h / n[:, None] if reference == "gold" else np.full_like(q, 1.0 / max(k, 1))
    value = _kl(p, q)
    return np.where(n > 0, value, np.nan).reshape(lead)


def wasserstein_groups(*, human: np.ndarray, metric: np.ndarray,
                       domain: Sequence[float] | None = None) -> np.ndarray:
    """Per-group Wasserstein-1 distance between the two sides' category histograms (module
    docstring); `domain`: the declared labels (bins at their positions)."""
    counts_h, counts_m, cats, lead = _histograms(human, metric, domain)
    n = counts_h.sum(axis=-1)
    if cats.size < 2:
        return np.where(n > 0, 0.0, np.nan).reshape(lead)
    e = int(np.frexp(np.max(np.abs(cats)))[1])
    gaps = np.diff(np.ldexp(cats, -e))  # each category in (-1, 1): gaps < 2, exact scaling
    with np.errstate(invalid="ignore", divide="ignore"):
        cdf_gap = np.abs(np.cumsum(counts_h - counts_m, axis=-1)[:, :-1]) / n[:, None]
    value = np.ldexp((cdf_gap * gaps).sum(axis=-1), e)
    return np.where(n > 0, value, np.nan).reshape(lead)




def wasserstein_real_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group Wasserstein-1 distance between the two sides' real values on the units both
    scored (module docstring: `wasserstein-real`)."""
    h, m = paired(human=human, metric=metric)
    finite = np.isfinite(h)
    n = finite.sum(axis=-1)
    top = np.maximum(np.where(finite, np.abs(h), 0.0).max(axis=-1, initial=0.0),
                     np.where(finite, np.abs(m), 0.0).max(axis=-1, initial=0.0))
    e = np.frexp(top)[1]
    hs = np.sort(np.ldexp(h, -e[..., None]), axis=-1)  # NaN sorts last, as many per side
    ms = np.sort(np.ldexp(m, -e[..., None]), axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(np.isfinite(hs), np.abs(hs - ms), 0.0).sum(axis=-1) / n
    return np.asarray(np.where(n > 0, np.ldexp(mean, e), np.nan), dtype=float)
