"""The meta-eval service's result types: a row per metric (or the human ceiling) of one task,
a block per task, and the whole result; `to_dict()` gives the objects `judgebench meta-eval
--json` prints. The analyses that add to rows (missingness, robustness, sequential) take
these types, and the service builds them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judgebench.results import Result
from judgebench.tables.failed import MISSING, FailedAs
from judgebench.tables.scores_table import ColumnInfo
from meta_eval.numerics import finite_or_none
from meta_eval.statistics import get
from meta_eval.task import MetricOutcome, Task, TaskResult, test_signature

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.services.repeats import RepeatsRow
    from meta_eval.ceiling import Ceiling
    from meta_eval.results import Comparison

CEILING = "(human ceiling)"
CI_NOTE = "no item bootstrap for a corpus score (it would need the corpus score of every resample)"
COMPARE_NOTE = ("not compared: its system score is a corpus score, and the significance test "
                "resamples segment scores")




@dataclass(frozen=True)
class PairTest:
    """One paired test of the row's metric against `against` (H1: it is better, one-sided
    p, unless the task's williams or steiger test is two-sided)."""

    against: str
    test: Comparison

    def to_dict(self) -> dict[str, Any]:
        t = self.test.to_dict()
        return {"against": self.against, "p_value": t["p_value"], "delta": t["delta"],
                "n": t["n"], "resamples": t["resamples"], "p_value_early": t["p_value_early"]}


@dataclass(frozen=True)
class MetricRow:
    """One metric against one human column in one task."""

    human: str
    outcome: MetricOutcome
    info: ColumnInfo
    task: Task
    #: categorical statistics: the judge x human table of categories over every unit
    #: (`meta_eval.agreement.confusion_table`), whatever the grouping
    confusion: dict[str, Any] | None = None
    #: with --compare: the tests of "this metric is better than X" for every X ranked below
    comparisons: tuple[PairTest, ...] = ()
    #: how failed scores were counted (`--failed-as`) and the column's failed rows
    failed_as: FailedAs = MISSING
    failed: dict[str, Any] | None = None
    #: robustness fields merged into `to_dict()`: `missing_bounds` and `tipping_point`
    #: (--missing-bounds, services.missingness), `system_sensitivity` (services.robustness)
    extra: dict[str, Any] | None = None

    @property
    def metric(self) -> str:
        return self.outcome.metric

    @property
    def value(self) -> float | None:
        return self.outcome.value

    @property
    def ci(self) -> tuple[float, float] | None:
        result = self.outcome.result
        low, high = finite_or_none(result.ci_low), finite_or_none(result.ci_high)
        return None if low is None or high is None else (low, high)

    @property
    def epsilon(self) -> float | None:
        return finite_or_none(self.outcome.result.epsilon)

    @property
    def ci_note(self) -> str | None:
        return CI_NOTE if self.outcome.given and self.task.bootstrap else None

    @property
    def compare_note(self) -> str | None:
        return COMPARE_NOTE if self.outcome.given and self.task.compare else None

    def to_dict(self) -> dict[str, Any]:
        o, task = self.outcome, self.task
        failed = {"failed_as": self.failed_as.name,
                  **({"failed": self.failed} if self.failed is not None else {})}
        if o.error is not None:
            return {"metric": o.metric, "human": self.human, "statistic": task.statistic,
                    "value": None, "n": 0, "level": task.level, "grouping": task.grouping,
                    "note": o.error, **self.info.describe(), "system_score": "corpus",
                    **({"compare_note": COMPARE_NOTE} if task.compare else {}),
                    **failed}
        out: dict[str, Any] = {"metric": o.metric, "human": self.human, **o.result.to_dict(),
                               **self.info.describe(), **failed}
        spec = get(task.statistic)
        if spec.on_scale:  # compared on the human scale: the values as they are
            out |= {"flipped": False, "better": spec.better}
        if self.confusion is not None:
            out["confusion"] = self.confusion
        if o.system_score is not None:
            out["system_score"] = o.system_score
        if self.ci_note:
            out["ci_note"] = self.ci_note
        if o.cluster is not None:
            out |= {"cluster": o.cluster, "cluster_test": task.method,
                    "cluster_test_signature": test_signature(task), "alpha": task.alpha,
                    "comparisons": [c.to_dict() for c in self.comparisons]}
        if self.compare_note:
            out["compare_note"] = self.compare_note
        if task.raters and not o.given:
            out["ceiling_fraction"] = o.ceiling_fraction
        if self.extra is not None:
            out |= self.extra
        return out


@dataclass(frozen=True)
class CeilingRow:
    """The leave-one-rater-out human ceiling of one task."""

    task: Task
    ceiling: Ceiling

    metric = CEILING

    @property
    def human(self) -> str:
        return ",".join(self.task.raters)

    @property
    def value(self) -> float | None:
        return finite_or_none(self.ceiling.value)

    @property
    def n(self) -> int:
        """The raters the value averages over: those with a value of their own (a rater who
        rated none of the rows has none); all of them where no rater has one of their own
        (Krippendorff's alpha of two coders)."""
        own = sum(1 for v in self.ceiling.per_rater if math.isfinite(v))
        return own or len(self.task.raters)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": CEILING, "human": self.human, "statistic": self.task.statistic,
                "value": self.value, "n": self.n, "level": self.task.level,
                "grouping": self.task.grouping,
                "per_rater": [finite_or_none(v) for v in self.ceiling.per_rater],
                **self.ceiling.extra}


Row = MetricRow | CeilingRow


@dataclass(frozen=True)
class MetaEvalBlock:
    """One (human column, statistic): the task, what it computed, and its rows best first
    (the ceiling last)."""

    task: Task
    result: TaskResult
    rows: list[Row]


@dataclass(frozen=True)
class MetaEvalResult(Result):
    """Every block of a meta-evaluation; `to_dict()` is the `--json` array."""

    blocks: list[MetaEvalBlock]
    compare: bool
    items: int
    systems: int
    failed_as: FailedAs = MISSING
    #: Per judge column drawn with `score --repeats K`: the judge against itself
    #: (judgebench.services.repeats); empty without repeats.
    repeats: list[RepeatsRow] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return [row for block in self.blocks for row in block.rows]

    def to_dict(self) -> list[dict[str, Any]]:
        return [row.to_dict() for row in self.rows] + [r.to_dict() for r in self.repeats]

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.to_dict())
