"""Agreement with people, significance clusters and the gate, for one setting at a time.

A block is one (human column, statistic, level, grouping): every metric and sentinel gets
the statistic with a bootstrap CI (meta_eval.evaluate), all of them are ranked together into
significance clusters (meta_eval.significance_clusters), each metric goes through the
sentinel gate, and each sentinel that looks good gets a note on what that means.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import meta_eval
from judgebench.audit.gate import GateResult, explain, gate

SETTINGS: tuple[tuple[str, str], ...] = (
    ("system", "none"), ("segment", "none"), ("segment", "item"), ("segment", "system"),
)


@dataclass(frozen=True)
class Options:
    """How every block is computed."""

    bootstrap: int = 1000
    ci: float = 0.95
    seed: int = 0
    alpha: float = 0.05
    method: str = "permutation"
    resamples: int = 1000
    epsilon: float = 0.0
    permutations: int = 1000


@dataclass
class Row:
    column: str
    kind: str  # "metric" | "sentinel"
    result: meta_eval.Result
    cluster: int | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"metric": self.column, "kind": self.kind, **self.result.to_dict()}
        out["cluster"] = self.cluster
        return out


@dataclass
class Block:
    human: str
    statistic: str
    level: str
    grouping: str
    rows: list[Row]
    gate: list[GateResult]
    notes: list[dict[str, str]] = field(default_factory=list)
    tests: int = 0

    @property
    def label(self) -> str:
        return "system" if self.level == "system" else f"segment, grouping {self.grouping}"

    def to_dict(self) -> dict[str, Any]:
        return {"human": self.human, "statistic": self.statistic, "level": self.level,
                "grouping": self.grouping, "rows": [r.to_dict() for r in self.rows],
                "gate": [g.to_dict() for g in self.gate], "notes": self.notes,
                "tests": self.tests}


def evaluate_block(*, human: np.ndarray, human_name: str, columns: Mapping[str, np.ndarray],
                   sentinels: Sequence[str], statistic: str, level: str, grouping: str,
                   options: Options, given: Mapping[str, np.ndarray] | None = None,
                   progress: Callable[[str], None] | None = None) -> Block:
    """One block. `columns` maps every metric and sentinel name to its (items, systems)
    matrix, oriented so that higher is better; names in `sentinels` are the sentinels."""
    given = dict(given or {}) if level == "system" else {}
    tested = {name: matrix for name, matrix in columns.items() if name not in given}
    results = {
        name: meta_eval.evaluate(statistic, human=human, metric=matrix, level=level,
                                 grouping=grouping, epsilon=options.epsilon,
                                 bootstrap=options.bootstrap, ci=options.ci, seed=options.seed,
                                 permutations=options.permutations)
        for name, matrix in tested.items()
    }
    corpus_rows = [_corpus_row(name, statistic, human, scores, options.epsilon)
                   for name, scores in given.items()]
    values = {name: r.value for name, r in results.items()}
    test_options: dict[str, Any] = {}
    if options.method == "permutation":
        test_options = {"resamples": options.resamples, "epsilon": options.epsilon,
                        "permutations": options.permutations}
    ranking = meta_eval.significance_clusters(
        statistic, human=human, metrics=tested, level=level, grouping=grouping,
        method=options.method, alpha=options.alpha, seed=options.seed, values=values,
        progress=(lambda a, b: progress(f"{a} vs {b}")) if progress else None,
        **test_options)
    clusters = {m.metric: m.cluster for m in ranking.metrics}
    mean = {"system_score": "mean"} if level == "system" else {}
    rows = [Row(m.metric, "sentinel" if m.metric in sentinels else "metric",
                dataclasses.replace(results[m.metric],
                                    extra={**results[m.metric].extra, **mean}),
                clusters[m.metric] if math.isfinite(m.value) else None)
            for m in ranking.metrics]
    metric_names = [name for name in tested if name not in sentinels]
    present = [s for s in sentinels if s in tested]
    verdicts = gate(ranking, metrics=metric_names, sentinels=present)
    rows += corpus_rows  # not gated: see _corpus_row
    notes = []
    worst_metric = max((clusters[m] for m in metric_names if math.isfinite(values[m])),
                       default=None)
    for name in present:
        beaten = worst_metric is None or (math.isfinite(values[name])
                                          and clusters[name] > worst_metric)
        text = explain(name, level=level, grouping=grouping, statistic=statistic,
                       value=values[name], beaten=beaten)
        if text:
            notes.append({"sentinel": name, "text": text})
    return Block(human_name, statistic, level, grouping, rows, verdicts, notes,
                 tests=len(ranking.p_values))


def _corpus_row(name: str, statistic: str, human: np.ndarray, scores: np.ndarray,
                epsilon: float) -> Row:
    """A metric whose system score is its corpus score: the statistic against the systems'
    human means, with no CI, no cluster and no gate verdict (all three resample segment
    scores)."""
    from meta_eval.corpus import evaluate_given

    try:
        result = evaluate_given(statistic, human=human, metric=scores, epsilon=epsilon)
    except ValueError as exc:
        result = meta_eval.Result(statistic, float("nan"), n=0, level="system",
                                  grouping="none", extra={"note": str(exc)})
    result = dataclasses.replace(result, extra={
        **result.extra, "system_score": "corpus",
        "gate_note": "not gated at system level: its system score is a corpus score, and the "
                     "significance test behind the gate resamples segment scores"})
    return Row(name, "metric", result, None)
