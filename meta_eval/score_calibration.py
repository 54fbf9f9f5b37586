"""A monotone calibration map of a judge's score onto people's scale, fitted and reported
out of fold (`judgebench fit --search calibration`).

The map is the isotonic regression of the human score on the judge's (Barlow et al. 1972,
"Statistical Inference under Order Restrictions"; as a calibration map, Zadrozny and Elkan
2002): the non-decreasing step function nearest the labels in least squares, interpolated
linearly between its knots and clipped at the ends (scikit-learn's
``IsotonicRegression(increasing=True, out_of_bounds="clip")``). It is fitted on the units
where both scores are finite; a NaN score (a failed judgement, a unit judged with itself as
an example) stays NaN.

A monotone map leaves the units' order as it is, up to ties it creates: a rank statistic
(Spearman, Kendall) cannot gain from it, a linear one (Pearson) and an error (MAE, RMSE)
can.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray, IntArray

Knots = list[tuple[float, float]]


def knots(*, raw: FloatArray, human: FloatArray) -> Knots:
    """The map fitted on the units where both are finite, as its (raw, calibrated) knots
    (sklearn's ``X_thresholds_``, ``y_thresholds_``); ValueError where there is no unit.

    sklearn merges x values closer than float64's resolution (1e-15, absolutely: every
    score of a judge on a 1e-200 scale would be one); isotonic regression depends on the
    x values' order alone, so it is fitted on their dense ranks and the knots mapped back
    to the scores: the same knots wherever sklearn merges nothing."""
    from sklearn.isotonic import IsotonicRegression

    keep = np.isfinite(raw) & np.isfinite(human)
    if not keep.any():
        raise ValueError("no unit has both a judge score and a human score to fit on")
    values, ranks = np.unique(raw[keep], return_inverse=True)
    model = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(
        ranks.astype(float), human[keep])
    return [(float(values[int(r)]), float(y))
            for r, y in zip(model.X_thresholds_, model.y_thresholds_, strict=True)]


def apply(found: Knots, raw: FloatArray) -> FloatArray:
    """`raw` through the map (clipped to the first and last knot, linear between knots,
    as sklearn's ``predict``), NaN kept."""
    xs = np.array([x for x, _ in found])
    ys = np.array([y for _, y in found])
    out = np.full(raw.shape, np.nan)
    finite = np.isfinite(raw)
    with np.errstate(all="ignore"):
        out[finite] = (np.full(int(finite.sum()), ys[0]) if len(found) == 1 else
                       np.interp(np.clip(raw[finite], xs[0], xs[-1]), xs, ys))
    return out


def out_of_fold(*, raw: FloatArray, human: FloatArray, folds: IntArray, use: BoolArray
                ) -> FloatArray:
    """Calibrated scores that no unit's own label made: each fold of `use` through the map
    fitted on the other folds of `use`, every unit outside `use` through the map fitted on
    all of `use` (NaN where a fit has no unit to fit on). Only the labels of `use` are read."""
    out = np.full(raw.shape, np.nan)
    labelled = np.where(use, human, np.nan)
    for fold in np.unique(folds[use]):
        test = use & (folds == fold)
        try:
            found = knots(raw=np.where(use & (folds != fold), raw, np.nan), human=labelled)
        except ValueError:
            continue
        out[test] = apply(found, raw)[test]
    try:
        found = knots(raw=raw, human=labelled)
    except ValueError:
        return out
    out[~use] = apply(found, raw)[~use]
    return out
