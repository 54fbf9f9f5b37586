"""`score --until-settled HUMAN`: score the items in seeded random batches and stop once the
metrics' significance clusters (or the top k) against HUMAN are settled by anytime-valid
confidence sequences (`meta_eval.sequential`), so that judges are not called on the items
the answer no longer needs.

Each batch scores every system's sample of its items (the store keeps what earlier batches
scored, so each batch calls the judges on its own items only); after each, the per-item
statistic (segment level, grouped by item) of every metric column is checked. The table
written holds the rows scored."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.spec import MetricSpec
from meta_eval.sequential import SequentialResult
from meta_eval.statistics import get

Log = Callable[[str], None]


@dataclass(frozen=True)
class SettledRun(Result):
    table: Any  # the scores table of the rows scored (pd.DataFrame)
    sequential: SequentialResult | None
    items_total: int
    items_scored: int
    rows_total: int
    rows_scored: int
    metrics: int

    def to_dict(self) -> dict[str, Any]:
        seq = self.sequential
        return {"items_total": self.items_total, "items_scored": self.items_scored,
                "items_saved": self.items_total - self.items_scored,
                "rows_scored": self.rows_scored,
                "judge_calls_saved": (self.rows_total - self.rows_scored) * self.metrics,
                "settled": bool(seq and seq.settled),
                "exhausted": bool(seq is None or seq.exhausted),
                "confidence_sequence": seq.to_dict()["confidence_sequence"] if seq else None,
                "clusters": dict(seq.clusters) if seq else {},
                "decisions": [d.to_dict() for d in seq.decisions] if seq else []}


def score_until_settled(input_path: str | Path, specs: Sequence[MetricSpec], *, human: str,
                        store: str | Path, statistic: str = "pearson", batch: int = 10,
                        margin: float = 0.0, top_k: int | None = None, alpha: float = 0.05,
                        seed: int = 0, log: Log | None = None) -> SettledRun:
    """Score `input_path` with `specs` batch by batch until settled (module docstring)."""
    from judgebench.engine.runner import run
    from judgebench.engine.store import Store
    from judgebench.services.score import ScoreResult
    from judgebench.services.sequential import check
    from judgebench.tables.io import read_samples
    from meta_eval.sequential import sequential_clusters
    from meta_eval.statistics import group_values
    from meta_eval.table import score_matrices

    log = log or (lambda _message: None)
    check([statistic], "segment", "item")
    if len(specs) < 2:
        raise InputError("--until-settled compares two or more metrics: give -m twice or more",
                         field="--until-settled")
    samples = read_samples(input_path)
    key = human.removeprefix("human.")
    if not any(s.human.get(key) is not None for s in samples):
        raise InputError(f"no sample has a human score {key!r} (the input's human.{key} "
                         "field)", path=str(input_path), field="--until-settled")
    items = list(dict.fromkeys(s.item for s in samples))
    order = [items[k] for k in np.random.default_rng(seed).permutation(len(items))]
    by_item: dict[str, list[Any]] = {}
    for s in samples:
        by_item.setdefault(s.item, []).append(s)
    spec = get(statistic)
    result, seq, done = None, None, 0
    with Store(store) as db:
        while done < len(order):
            done = min(len(order), done + batch)
            chosen = [s for item in order[:done] for s in by_item[item]]
            result = ScoreResult(run(chosen, specs, store=db, resume=True))
            table = result.table
            columns = [p.column for p in result.run.metrics]
            matrices = score_matrices(table.assign(item=table["item"].astype(str)),
                                      [f"human.{key}", *columns])
            position = {item: k for k, item in enumerate(matrices.items)}
            rows = [position[item] for item in order[:done]]
            h = matrices[f"human.{key}"][rows]
            values = np.column_stack([group_values(spec.kernel, human=h,
                                                   metric=matrices[c][rows],
                                                   epsilon=spec.tie_threshold(0.0))
                                      for c in columns])
            seq = sequential_clusters(values, columns, alpha=alpha, margin=margin,
                                      batch=batch, top_k=top_k, order="given")
            log(f"until-settled: {done}/{len(order)} items scored, "
                + ("settled" if seq.settled else "not settled (items exhausted)"
                   if done == len(order) else "not settled yet"))
            if seq.settled:
                break
    assert result is not None
    return SettledRun(result.to_frame(), seq, len(order), done, len(samples),
                      len(result.table), len(specs))
