"""`meta-eval --sequential`: when would a study taking its items in batches have known its
answer (`meta_eval.sequential`), and what would stopping there have saved?

Run on a table already scored and labelled, it replays the study in the chosen order and
reports per block (human column x statistic, segment level grouped by item) the items used,
the items, human labels and judge calls (metric cells) saved, the pairwise decisions and the
clusters at the stop."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from judgebench.errors import InputError
from judgebench.services.meta_eval_results import MetaEvalBlock, MetricRow
from meta_eval.statistics import get

#: kernels whose per-item value is not a bounded mean the confidence sequences can take
UNBOUNDED = {"spa", "pdp"}


def check(statistics: Sequence[str], level: str, grouping: str) -> None:
    if level != "segment" or grouping != "item":
        raise InputError("the sequential procedure averages per-item values: use --level "
                         "segment --grouping item", field="--sequential")
    for name in statistics:
        spec = get(name)
        if spec.on_scale or spec.kernel in UNBOUNDED or spec.epsilon == "calibrated":
            raise InputError(f"{name}: the sequential procedure takes a correlation whose "
                             "per-item value lies in [-1, 1] (pearson, spearman, the Kendall "
                             "family, acc-23)", field="--statistic")


def with_sequential(blocks: Sequence[MetaEvalBlock],
                    columns: Callable[[str], Mapping[str, np.ndarray]], *, order: str,
                    batch: int, margin: float, top_k: int | None, alpha: float,
                    seed: int) -> list[MetaEvalBlock]:
    """`blocks` with `sequential` on each in-table metric row."""
    from meta_eval.sequential import sequential_clusters
    from meta_eval.statistics import group_values

    out = []
    for block in blocks:
        t = block.task
        spec = get(t.statistic)
        matrices = columns(t.statistic)
        names = [r.metric for r in block.rows if isinstance(r, MetricRow)
                 and r.metric in matrices and not r.outcome.given]
        if len(names) < 2:
            out.append(block)
            continue
        if top_k is not None and not 0 < top_k < len(names):
            raise InputError(f"between 1 and {len(names) - 1}", field="--top-k")
        human = matrices[t.human]
        eps = spec.tie_threshold(t.epsilon)
        values = np.column_stack([group_values(spec.kernel, human=human, metric=matrices[m],
                                               epsilon=eps) for m in names])
        scores = np.stack([matrices[m] for m in names])
        result = sequential_clusters(values, names, alpha=alpha, margin=margin, batch=batch,
                                     top_k=top_k, order=order, seed=seed,
                                     metric_scores=scores)
        unused = result.item_order[result.items_used:]
        calls = int(np.isfinite(scores[:, unused]).sum())
        labels = int(np.isfinite(human[unused]).sum())
        shared: dict[str, Any] = {**result.to_dict(), "judge_calls_saved": calls,
                                  "human_labels_saved": labels}
        rows = []
        for row in block.rows:
            if not isinstance(row, MetricRow) or row.metric not in names:
                rows.append(row)
                continue
            mine = {**shared, "cluster": result.clusters[row.metric],
                    "value_at_stop": result.means[row.metric],
                    "decisions": [d for d in shared["decisions"]
                                  if row.metric in (d["metric"], d["against"])]}
            rows.append(replace(row, extra={**(row.extra or {}), "sequential": mine}))
        out.append(replace(block, rows=rows))
    return out
