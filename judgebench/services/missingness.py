"""`meta-eval --missing-bounds`: each statistic's Manski bounds over its missing cells and
its tipping point (`meta_eval.missingness`), added to the rows of a meta-evaluation.

Fillable cells are the table's rows where a human value is missing or a metric's score
failed or is empty (after `--failed-as`: a failed score it counted is no longer missing).
The tipping point is against the metric ranked just below in the same block: how many of
the metric's failed rows, scored against it, would put it at or below that metric's value.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from judgebench.services.meta_eval_results import MetaEvalBlock, MetricRow
from meta_eval.statistics import get

#: statistics whose every evaluation is itself a resampling (too slow to fill exhaustively)
NOT_BOUNDED = {"spa": "SPA resamples inside every evaluation"}


def _value_of(block: MetaEvalBlock) -> Callable[[np.ndarray, np.ndarray], float]:
    from meta_eval.levels import evaluate

    t = block.task

    def value(h: np.ndarray, m: np.ndarray) -> float:
        return evaluate(t.statistic, human=h, metric=m, level=t.level, grouping=t.grouping,
                        epsilon=t.epsilon, permutations=t.permutations, average=t.average,
                        replace_nans_with_zeros=t.replace_nans_with_zeros,
                        domain=t.domain, with_p_value=False).value
    return value


def with_bounds(blocks: Sequence[MetaEvalBlock], columns: Callable[[str], dict[str, Any]],
                present: np.ndarray, *, limit: int = 4096) -> list[MetaEvalBlock]:
    """`blocks` with `missing_bounds` (and `tipping_point`) on every in-table metric row;
    `columns(statistic)` gives the matrices that statistic was computed on."""
    from meta_eval.missingness import domain, manski_bounds, tipping_point

    out = []
    for block in blocks:
        statistic = block.task.statistic
        matrices = columns(statistic)
        human = matrices[block.task.human]
        goodness = get(statistic).goodness
        value = _value_of(block)
        metric_rows = [r for r in block.rows if isinstance(r, MetricRow)
                       and r.metric in matrices and not r.outcome.given]
        bounded = {id(r) for r in metric_rows}
        rows = []
        for row in block.rows:
            if not isinstance(row, MetricRow) or id(row) not in bounded:
                rows.append(row)
                continue
            if statistic in NOT_BOUNDED:
                note = {"missing_bounds_note": NOT_BOUNDED[statistic]}
                rows.append(replace(row, extra={**(row.extra or {}), **note}))
                continue
            metric = matrices[row.metric]
            bounds = manski_bounds(value, human=human, metric=metric, present=present,
                                   human_domain=domain(human), metric_domain=domain(metric),
                                   goodness=goodness, limit=limit)
            info: dict[str, Any] = {"missing_bounds": bounds.to_dict()}
            below = metric_rows[[id(r) for r in metric_rows].index(id(row)) + 1:]
            if below and row.value is not None and below[0].value is not None \
                    and math.isfinite(below[0].value):
                tip = tipping_point(value, human=human, metric=metric, present=present,
                                    metric_domain=domain(metric),
                                    threshold=below[0].value, goodness=goodness,
                                    limit=limit)
                info["tipping_point"] = {"against": below[0].metric, **tip.to_dict()}
            rows.append(replace(row, extra={**(row.extra or {}), **info}))
        out.append(replace(block, rows=rows))
    return out


def present_cells(frame: Any, items: Sequence[str], systems: Sequence[str]) -> np.ndarray:
    """(items, systems): True where the table has that row."""
    where = {(str(i), str(s)) for i, s in zip(frame["item"], frame["system"], strict=True)}
    return np.array([[(i, s) in where for s in systems] for i in items], dtype=bool)
