"""Calibration of a probabilistic judge against binary human labels: Brier score, expected
calibration error (ECE) and the reliability diagram.

`metric` holds probabilities p in [0, 1] that the label is 1 (a judge's P(good), or for a
pairwise judge P(A is better)); `human` holds labels y in {0, 1}. Kernels take padded
(..., G, U) arrays (NaN missing, a unit missing either side dropped) and return per-group
values (..., G), NaN for a group with no unit. Both are lower-is-better.

brier        BS = (1/n) sum (p_u - y_u)^2 (Brier 1950, "Verification of forecasts expressed
             in terms of probability"; scikit-learn's brier_score_loss).
ece          ECE = sum_b (n_b / n) |mean_{u in b} y_u - mean_{u in b} p_u| over B bins of
             p (Naeini et al. 2015; Guo et al. 2017, "On Calibration of Modern Neural
             Networks"), for the probability of label 1 (as scikit-learn's
             calibration_curve; not the top-label confidence).
             Equal-width bins (`ece`, the default): bin b in 0..B-1 holds b/B <= p < (b+1)/B,
             the last bin also p = 1 (edges computed as b/B in float, so p = 0.3 is in
             [0.3, 0.4)). The default because it is the ECE papers report and the bins of the
             reliability diagram.
             Equal-mass bins (`ece-mass`; Nixon et al. 2019, "Measuring Calibration in Deep
             Learning", adaptive ECE): with the n values of a group, p goes to bin
             floor(B #{q < p} / n), so bins hold about n/B values each and equal values are
             always in one bin (the result does not depend on the order of the units). Less
             biased when the probabilities crowd a few values.
             B = 10 by default (BINS).
reliability_curve(*, human, metric, bins, binning) -> Reliability: per non-empty bin its
             edges, count, mean p and mean y, for the reliability diagram.

A probability outside [0, 1] or a label other than 0/1 is a ValueError.

preference_labels(values): pairwise human preferences a / b / tie as labels 1 / 0 / NaN, so
             a soft pairwise judge (P(A is better)) is calibrated like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.results import Result

if TYPE_CHECKING:
    from meta_eval.arrays import AnyArray, FloatArray, IntArray

BINS = 10
BINNINGS = ("width", "mass")


def _checked(human: FloatArray, metric: FloatArray) -> tuple[FloatArray, FloatArray]:
    h, m = np.broadcast_arrays(np.asarray(human, dtype=float), np.asarray(metric, dtype=float))
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = np.where(ok, h, np.nan), np.where(ok, m, np.nan)
    if ((m[ok] < 0) | (m[ok] > 1)).any():
        raise ValueError("probabilities must be in [0, 1]")
    if ((h[ok] != 0) & (h[ok] != 1)).any():
        raise ValueError("labels must be 0 or 1")
    return h, m


def brier_groups(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """Per-group Brier score over the last axis."""
    h, m = _checked(human, metric)
    ok = np.isfinite(h)
    n = ok.sum(axis=-1)
    sq = np.where(ok, (m - h) ** 2, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, sq / np.maximum(n, 1), np.nan)


def bin_index(metric: FloatArray, *, bins: int = BINS, binning: str = "width") -> IntArray:
    """Bin of each probability along the last axis (-1 where missing); see the docstring."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    if binning not in BINNINGS:
        raise ValueError(f"unknown binning {binning!r}; use one of {BINNINGS}")
    m = np.asarray(metric, dtype=float)
    ok = np.isfinite(m)
    if binning == "width":
        edges = np.arange(bins + 1) / bins
        index = np.searchsorted(edges, np.where(ok, m, 0.0), side="right") - 1
        return np.where(ok, np.clip(index, 0, bins - 1), -1)
    size = m.shape[-1]
    if size == 0:
        return np.zeros(m.shape, dtype=int)
    n = ok.sum(axis=-1, keepdims=True)
    order = np.argsort(m, axis=-1, kind="stable")  # NaN last
    s = np.take_along_axis(m, order, axis=-1)
    starts = np.ones(s.shape, dtype=bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    position = np.broadcast_to(np.arange(size), s.shape)
    below = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)  # #{q < p}
    sorted_bins = (bins * below) // np.maximum(n, 1)
    index = np.empty_like(sorted_bins)
    np.put_along_axis(index, order, sorted_bins, axis=-1)
    return np.where(ok, index, -1)


def _bin_sums(h: FloatArray, m: FloatArray, bins: int, binning: str
              ) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(count, sum p, sum y) per (..., group, bin)."""
    index = bin_index(m, bins=bins, binning=binning)
    ok = index >= 0
    lead = index.shape[:-1]
    rows = int(np.prod(lead))
    flat = (np.arange(rows).reshape(*lead, 1) * bins + index)[ok]

    def total(weights: FloatArray | None) -> AnyArray:  # int counts without weights
        return np.bincount(flat, weights=weights, minlength=rows * bins).reshape(*lead, bins)

    return total(None).astype(float), total(m[ok]), total(h[ok])


def ece_groups(*, human: FloatArray, metric: FloatArray, bins: int = BINS,
               binning: str = "width") -> FloatArray:
    """Per-group expected calibration error over the last axis."""
    h, m = _checked(human, metric)
    count, sum_p, sum_y = _bin_sums(h, m, bins, binning)
    n = count.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.abs(sum_y - sum_p).sum(axis=-1) / np.maximum(n, 1), np.nan)


def brier_score(*, human: FloatArray, metric: FloatArray) -> Result:
    """Brier score of probabilities `metric` against labels `human` (1-D)."""
    value = float(brier_groups(human=np.ravel(human)[None], metric=np.ravel(metric)[None])[0])
    n = int((np.isfinite(np.ravel(human)) & np.isfinite(np.ravel(metric))).sum())
    return Result("brier", value, n=n, skipped=0 if n else 1)


def expected_calibration_error(*, human: FloatArray, metric: FloatArray, bins: int = BINS,
                               binning: str = "width") -> Result:
    """ECE of probabilities `metric` against labels `human` (1-D) over `bins` bins."""
    value = float(ece_groups(human=np.ravel(human)[None], metric=np.ravel(metric)[None],
                             bins=bins, binning=binning)[0])
    n = int((np.isfinite(np.ravel(human)) & np.isfinite(np.ravel(metric))).sum())
    return Result("ece" if binning == "width" else "ece-mass", value, n=n,
                  skipped=0 if n else 1, extra={"bins": bins, "binning": binning})


@dataclass(frozen=True)
class Reliability:
    """The reliability diagram's data: per non-empty bin, its edges (`low`, `high`: for
    equal-mass bins the lowest and highest p in it), count, mean probability and observed
    frequency of label 1; `ece` and `brier` over the same units."""

    binning: str
    bins: int
    low: list[float]
    high: list[float]
    count: list[int]
    mean_probability: list[float]
    frequency: list[float]
    ece: float
    brier: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"binning": self.binning, "bins": self.bins, "low": self.low,
                "high": self.high, "count": self.count,
                "mean_probability": self.mean_probability, "frequency": self.frequency,
                "ece": self.ece, "brier": self.brier, "n": self.n}


def reliability_curve(*, human: FloatArray, metric: FloatArray, bins: int = BINS,
                      binning: str = "width") -> Reliability:
    """Per-bin mean probability and observed frequency of 1-D `metric`, `human`."""
    h, m = _checked(np.ravel(human), np.ravel(metric))
    ok = np.isfinite(h)
    h, m = h[ok], m[ok]
    index = bin_index(m, bins=bins, binning=binning)
    low, high, count, mean_p, freq = [], [], [], [], []
    for b in range(bins):
        inside = index == b
        if not inside.any():
            continue
        if binning == "width":
            low.append(b / bins)
            high.append((b + 1) / bins)
        else:
            low.append(float(m[inside].min()))
            high.append(float(m[inside].max()))
        count.append(int(inside.sum()))
        mean_p.append(float(m[inside].mean()))
        freq.append(float(h[inside].mean()))
    ece = float(ece_groups(human=h[None], metric=m[None], bins=bins, binning=binning)[0])
    brier = float(brier_groups(human=h[None], metric=m[None])[0])
    return Reliability(binning, bins, low, high, count, mean_p, freq, ece, brier, int(h.size))


def preference_labels(values: object) -> FloatArray:
    """Pairwise human preferences as labels for calibrating P(A is better): "a" -> 1,
    "b" -> 0, a tie or a missing value -> NaN (dropped: a binary label has no tie), a number
    in [0, 1] -> itself (1 and 0 are "a" and "b"). ValueError for anything else."""
    out = []
    for v in np.ravel(np.asarray(values, dtype=object)):
        if isinstance(v, str):
            key = v.strip().lower()
            if key not in ("a", "b", "tie", ""):
                raise ValueError(f"unknown preference {v!r}; use a, b or tie")
            out.append({"a": 1.0, "b": 0.0}.get(key, np.nan))
        elif v is None or (isinstance(v, float) and np.isnan(v)):
            out.append(np.nan)
        else:
            x = float(v)
            if not 0 <= x <= 1:
                raise ValueError(f"a preference must be in [0, 1], got {v!r}")
            out.append(x)
    return np.array(out, dtype=float)
