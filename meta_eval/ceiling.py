"""The human ceiling: how well people agree with each other, and a metric on that footing.

human_ceiling: with several raters of one criterion, each rater's scores are correlated
    with the mean of the others under the same statistic, level and grouping, and these
    leave-one-rater-out values are averaged; a metric is scored against the same
    leave-one-out references, so `fraction` = metric / ceiling compares like with like.
    For Krippendorff's alpha (a statistic of coders, not of a mean) the raters are the
    coders instead (`coder_ceiling`): the ceiling is alpha with every rater as a coder of
    each (item, system) unit, per group and averaged as the grouping says; `per_rater[r]`
    is alpha of the raters without r; the metric's value is the mean over r of alpha with
    the metric standing in for rater r (the same number of coders), and `fraction` that
    over the ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.agreement import ALPHAS, categories, krippendorff_alpha
from meta_eval.levels import arrange, average_groups, evaluate

if TYPE_CHECKING:
    from meta_eval.arrays import ArrayLike


@dataclass(frozen=True)
class Ceiling:
    """Leave-one-rater-out human agreement and, optionally, a metric on the same footing."""

    statistic: str
    value: float  # mean over raters of stat(rater, mean of the other raters)
    per_rater: list[float]
    metric_value: float | None = None  # mean over raters of stat(metric, mean of the others)
    fraction: float | None = None  # metric_value / value
    extra: dict = field(default_factory=dict)


def human_ceiling(statistic: str, *, raters: Sequence[ArrayLike],
                  metric: ArrayLike | None = None, level: str = "segment",
                  grouping: str = "none", **options) -> Ceiling:
    """Leave-one-rater-out ceiling of `statistic` over (items, systems) rater matrices.

    `options` go to `evaluate` (epsilon, seed, permutations).
    """
    mats = [np.asarray(r, dtype=float) for r in raters]
    if len(mats) < 2:
        raise ValueError("the human ceiling needs at least two raters")
    if any(m.shape != mats[0].shape for m in mats):
        raise ValueError("every rater matrix must have the same (items, systems) shape")
    if statistic in ALPHAS:
        return coder_ceiling(statistic, raters=mats, metric=metric, level=level,
                             grouping=grouping, **options)
    stack = np.stack(mats)
    per_rater, metric_values = [], []
    for r in range(len(mats)):
        others = np.delete(stack, r, axis=0)
        present = np.isfinite(others).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            reference = np.where(present > 0, np.nansum(others, axis=0) / present, np.nan)
        per_rater.append(evaluate(statistic, human=reference, metric=mats[r], level=level,
                                  grouping=grouping, **options).value)
        if metric is not None:
            metric_values.append(evaluate(statistic, human=reference, metric=metric,
                                          level=level, grouping=grouping, **options).value)
    value = float(np.nanmean(per_rater)) if np.isfinite(per_rater).any() else float("nan")
    metric_value = fraction = None
    if metric is not None and np.isfinite(metric_values).any():
        metric_value = float(np.nanmean(metric_values))
        fraction = metric_value / value if np.isfinite(value) and value != 0 else None
    return Ceiling(statistic, value, per_rater, metric_value, fraction)


def coder_alpha(statistic: str, *, coders: Sequence[ArrayLike], grouping: str = "none",
                domain: Sequence[float] | None = None, average: str = "macro",
                replace_nans_with_zeros: bool = False) -> float:
    """Krippendorff's alpha (`statistic` in ALPHAS) with each (items, systems) matrix of
    `coders` as one coder of every (item, system) unit, at segment level: per group of
    `grouping` (a group needs 2 or more pairable units), averaged (`meta_eval.levels`).
    Ordinal and nominal alpha code `categories`."""
    level = ALPHAS[statistic]
    mats = [np.asarray(c, dtype=float) for c in coders]
    if level in ("ordinal", "nominal"):
        mats = [categories(c) for c in mats]
    grouped = [arrange(human=c, metric=c, level="segment", grouping=grouping)[0]
               for c in mats]
    stack = np.stack(grouped)  # coders x groups x units
    values = np.full(stack.shape[1], np.nan)
    pairable = (np.isfinite(stack).sum(axis=0) >= 2).sum(axis=-1)
    for g in range(stack.shape[1]):
        if pairable[g] >= 2:
            values[g] = krippendorff_alpha(ratings=stack[:, g], level=level,
                                           domain=domain).value
    return float(average_groups(values[None], grouping != "none",
                                units=pairable[None].astype(float), average=average,
                                replace_nans_with_zeros=replace_nans_with_zeros)[0])


def coder_ceiling(statistic: str, *, raters: Sequence[ArrayLike],
                  metric: ArrayLike | None = None, level: str = "segment",
                  grouping: str = "none", domain: Sequence[float] | None = None,
                  average: str = "macro", replace_nans_with_zeros: bool = False,
                  **_options: Any) -> Ceiling:
    """The human ceiling of Krippendorff's alpha with the raters as coders (module
    docstring); `domain`, `average`, `replace_nans_with_zeros` as `meta_eval.evaluate`."""
    if level != "segment":
        raise ValueError(f"{statistic} is a segment-level statistic: use level 'segment'")
    mats = [np.asarray(r, dtype=float) for r in raters]
    options: dict[str, Any] = {"grouping": grouping, "domain": domain, "average": average,
                               "replace_nans_with_zeros": replace_nans_with_zeros}
    value = coder_alpha(statistic, coders=mats, **options)
    per_rater = [coder_alpha(statistic, coders=mats[:r] + mats[r + 1:], **options)
                 if len(mats) > 2 else float("nan") for r in range(len(mats))]
    metric_value = fraction = None
    if metric is not None:
        stand_ins = [coder_alpha(statistic, coders=[*mats[:r], np.asarray(metric, float),
                                                    *mats[r + 1:]], **options)
                     for r in range(len(mats))]
        if np.isfinite(stand_ins).any():
            metric_value = float(np.nanmean(stand_ins))
            fraction = metric_value / value if np.isfinite(value) and value != 0 else None
    return Ceiling(statistic, value, per_rater, metric_value, fraction,
                   extra={"ceiling": "raters as coders"})
