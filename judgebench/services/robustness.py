"""`meta-eval --system-sensitivity`: how often the winner, the order and each metric's
cluster change when systems leave the study or are resampled
(`meta_eval.system_sensitivity`), added to the rows of a meta-evaluation."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from judgebench.services.meta_eval_results import MetaEvalBlock, MetricRow
from meta_eval.statistics import get


def with_sensitivity(blocks: Sequence[MetaEvalBlock],
                     columns: Callable[[str], Mapping[str, np.ndarray]], systems: list[str],
                     *, leave_out: int = 1, bootstrap: int = 0, seed: int = 0,
                     limit: int = 1000) -> list[MetaEvalBlock]:
    """`blocks` with `system_sensitivity` on each in-table metric row: per resampling kind
    the block's shares (winner and order changed, mean Kendall tau, the left-out systems
    that flip the winner) and this metric's own (how often it wins, its cluster changes)."""
    from meta_eval.levels import evaluate
    from meta_eval.significance import significance_clusters
    from meta_eval.system_sensitivity import system_sensitivity

    out = []
    for block in blocks:
        t = block.task
        matrices = columns(t.statistic)
        names = [r.metric for r in block.rows if isinstance(r, MetricRow)
                 and r.metric in matrices and not r.outcome.given]
        if len(names) < 2 or (t.level == "system" and len(systems) < 4) \
                or t.statistic == "spa":
            out.append(block)
            continue
        options: dict[str, Any] = {"epsilon": t.epsilon, "permutations": t.permutations,
                                   "average": t.average,
                                   "replace_nans_with_zeros": t.replace_nans_with_zeros,
                                   "domain": t.domain}

        def values(h: np.ndarray, ms: Mapping[str, np.ndarray],
                   options: dict[str, Any] = options, t: Any = t) -> dict[str, float]:
            return {m: evaluate(t.statistic, human=h, metric=x, level=t.level,
                                grouping=t.grouping, **options, with_p_value=False).value
                    for m, x in ms.items()}

        def clusters(h: np.ndarray, ms: Mapping[str, np.ndarray], v: dict[str, float],
                     t: Any = t) -> dict[str, int]:
            ranking = significance_clusters(t.statistic, human=h, metrics=dict(ms),
                                            level=t.level, grouping=t.grouping,
                                            method=t.method, alpha=t.alpha, seed=t.seed,
                                            values=v, **({"resamples": t.resamples,
                                                          "epsilon": t.epsilon}
                                                         if t.method == "permutation"
                                                         else {}))
            return {m.metric: m.cluster for m in ranking.metrics}

        k = min(leave_out, len(systems) - (4 if t.level == "system" else 2))
        results = system_sensitivity(human=matrices[t.human],
                                     metrics={m: matrices[m] for m in names}, values=values,
                                     systems=systems, leave_out=max(k, 0), bootstrap=bootstrap,
                                     limit=limit, seed=seed,
                                     goodness=get(t.statistic).goodness,
                                     clusters=clusters if t.compare else None)
        rows = []
        for row in block.rows:
            if not isinstance(row, MetricRow) or row.metric not in names:
                rows.append(row)
                continue
            info = []
            for s in results:
                d = s.to_dict()
                d["winner_share"] = s.winner_share[row.metric]
                d["tied_share"] = s.tied_share[row.metric]
                d["study_winner"] = row.metric in s.leaders
                if s.cluster_changed:
                    d["cluster_changed"] = s.cluster_changed[row.metric]
                info.append(d)
            rows.append(replace(row, extra={**(row.extra or {}), "system_sensitivity": info}))
        out.append(replace(block, rows=rows))
    return out
