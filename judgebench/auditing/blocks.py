"""Agreement with people, significance clusters and the gate, for one setting at a time.

A block is one (human column, statistic, level, grouping), computed by one meta_eval Task:
every metric and sentinel gets the statistic with a bootstrap CI, all of them are ranked
together into significance clusters, each metric goes through the
sentinel gate, and each sentinel that looks good gets a note on what that means.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import meta_eval
from judgebench.auditing.gate import GateResult, explain, gate
from meta_eval.task import MetricOutcome, Task, TaskResult

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray

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
    #: `audit --robustness`: missingness bounds and system sensitivity per block
    #: (judgebench.auditing.robustness)
    robustness: bool = False
    #: `audit --sequential`: the anytime-valid replay of each segment-level, item-grouped
    #: block (judgebench.auditing.conclusions)
    sequential: bool = False
    #: `audit --interval`: "bootstrap", "analytic" (`meta_eval.analytic`, each row's
    #: `analytic_ci_*` fields) or "both"
    interval: str = "bootstrap"

    def task(self, human: str, statistic: str, level: str, grouping: str) -> Task:
        """The block's setting as a meta_eval Task (audit blocks always cluster)."""
        return Task(human=human, statistic=statistic, level=level, grouping=grouping,
                    epsilon=self.epsilon, bootstrap=self.bootstrap, ci=self.ci,
                    seed=self.seed, permutations=self.permutations, compare=True,
                    method=self.method, resamples=self.resamples, alpha=self.alpha,
                    interval=self.interval)


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
    robustness: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return "system" if self.level == "system" else f"segment, grouping {self.grouping}"

    def to_dict(self) -> dict[str, Any]:
        return {"human": self.human, "statistic": self.statistic, "level": self.level,
                "grouping": self.grouping, "rows": [r.to_dict() for r in self.rows],
                "gate": [g.to_dict() for g in self.gate], "notes": self.notes,
                "tests": self.tests,
                **({"robustness": self.robustness} if self.robustness is not None else {})}


def evaluate_block(*, human: FloatArray, human_name: str, columns: Mapping[str, FloatArray],
                   sentinels: Sequence[str], statistic: str, level: str, grouping: str,
                   options: Options, given: Mapping[str, FloatArray] | None = None,
                   progress: Callable[[str], None] | None = None) -> Block:
    """One block. `columns` maps every metric and sentinel name to its (items, systems)
    matrix, oriented so that higher is better; names in `sentinels` are the sentinels; a
    metric in `given` (a subset of `columns`) is scored at system level by those system
    scores (its corpus score)."""
    task = options.task(human_name, statistic, level, grouping)
    result = task.run({human_name: human, **columns}, list(columns), given=given,
                      progress=(lambda a, b: progress(f"{a} vs {b}")) if progress else None)
    assert result.ranking is not None  # the task compares
    tested = [result[m.metric] for m in result.ranking.metrics]
    rows = [_tested_row(o, "sentinel" if o.metric in sentinels else "metric")
            for o in tested]
    rows += [_corpus_row(o) for o in result.metrics.values() if o.given]  # see _corpus_row
    metric_names = [o.metric for o in result.metrics.values()
                    if not o.given and o.metric not in sentinels]
    present = [o.metric for o in result.metrics.values()
               if not o.given and o.metric in sentinels]
    verdicts = gate(result.ranking, metrics=metric_names, sentinels=present)
    notes = _sentinel_notes(result, metric_names, present)
    return Block(human_name, statistic, level, grouping, rows, verdicts, notes,
                 tests=len(result.ranking.p_values))


def _tested_row(outcome: MetricOutcome, kind: str) -> Row:
    mean = {"system_score": outcome.system_score} if outcome.system_score else {}
    result = dataclasses.replace(outcome.result, extra={**outcome.result.extra, **mean})
    return Row(outcome.metric, kind, result,
               outcome.cluster if outcome.value is not None else None)


def _sentinel_notes(result: TaskResult, metric_names: Sequence[str],
                    sentinels: Sequence[str]) -> list[dict[str, str]]:
    """What each sentinel's agreement means, and whether every metric beats it."""
    task = result.task
    worst_metric = max((_cluster(result[m]) for m in metric_names
                        if result[m].value is not None), default=None)
    notes = []
    for name in sentinels:
        outcome = result[name]
        beaten = worst_metric is None or (outcome.value is not None
                                          and _cluster(outcome) > worst_metric)
        text = explain(name, level=task.level, grouping=task.grouping,
                       statistic=task.statistic, value=outcome.result.value, beaten=beaten)
        if text:
            notes.append({"sentinel": name, "text": text})
    return notes


def _cluster(outcome: MetricOutcome) -> int:
    assert outcome.cluster is not None  # every tested metric of a comparing task has one
    return outcome.cluster


def _corpus_row(outcome: MetricOutcome) -> Row:
    """A metric whose system score is its corpus score: the statistic against the systems'
    human means, with no CI, no cluster and no gate verdict (all three resample segment
    scores)."""
    note = {"note": outcome.error} if outcome.error is not None else {}
    result = dataclasses.replace(outcome.result, extra={
        **outcome.result.extra, **note, "system_score": "corpus",
        "gate_note": "not gated at system level: its system score is a corpus score, and the "
                     "significance test behind the gate resamples segment scores"})
    return Row(outcome.metric, "metric", result, None)
