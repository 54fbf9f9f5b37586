"""`meta-eval --alt-test`: can each judge replace a human annotator (`meta_eval.alt_test`)?

Every `human.*` column (or the `--human` columns named) is one annotator, an empty cell an
item it did not label; every metric column is a candidate judge, a failed or empty cell an
item it did not answer. Annotators named `human.<criterion>.<annotator>` are grouped by
criterion, and each criterion is tested on its own. One `AltTestRow` per judge and criterion;
`to_dict()` is the `--json` array.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.tables.prepared import PreparedTable
from meta_eval.numerics import finite_or_none

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.alt_test import AltTestResult

Log = Callable[[str], None]




@dataclass(frozen=True)
class AltTestRow:
    """The alt-test of one judge against the annotators."""

    metric: str
    annotators: tuple[str, ...]
    criterion: str | None
    score: str
    epsilon: float
    alpha: float
    result: AltTestResult
    #: `epsilon_to_pass` (meta_eval.alt_test): the smallest epsilon at which it passes,
    #: when asked for (`searched`); None: not even at epsilon 1
    epsilon_to_pass: float | None = None
    searched: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        extra = {"epsilon_to_pass": self.epsilon_to_pass} if self.searched else {}
        return {**extra, "metric": self.metric, "human": ",".join(self.annotators),
                "criterion": self.criterion, "statistic": "alt-test",
                "alt_score": self.score, "epsilon": self.epsilon, "alpha": self.alpha,
                "n": r.items,
                "alt-test-winning-rate": finite_or_none(r.winning_rate),
                "alt-test-advantage-probability": finite_or_none(r.advantage_probability),
                "passed": r.passed if r.annotators else None,
                "per_annotator": [t.to_dict() for t in r.annotators],
                "skipped_annotators": dict(r.skipped)}


@dataclass(frozen=True)
class AltTestReport(Result):
    """Every judge's alt-test, best advantage probability first."""

    rows: list[AltTestRow]

    def to_dict(self) -> list[dict[str, Any]]:
        return [row.to_dict() for row in self.rows]


def alt_test(scores: str | Path | pd.DataFrame, *, humans: Sequence[str] = (),
             metrics: Sequence[str] = (), epsilon: float, score: str = "accuracy",
             alpha: float = 0.05, min_items: int = 30, search_epsilon: bool = False,
             log: Log | None = None) -> AltTestReport:
    """The alt-test of each metric column of `scores` against the annotator columns
    (`humans`, default every `human.*` column); with `search_epsilon`, also the smallest
    epsilon at which each passes. Bad input raises `InputError`."""
    from meta_eval.alt_test import SCORES, epsilon_to_pass
    from meta_eval.alt_test import alt_test as kernel

    log = log or (lambda _message: None)
    if score not in SCORES:
        raise InputError(f"one of {', '.join(SCORES)}", field="--alt-score")
    if not epsilon >= 0:
        raise InputError("must be >= 0", field="--epsilon")
    table = PreparedTable.read(scores, list(humans) or None, metrics, log=log)
    where, frame, annotators, judges = table.where, table.frame, table.humans, table.metrics
    if len(annotators) < 2:
        raise InputError(f"the alt-test needs two or more annotator columns (human.*), found "
                         f"{len(annotators)}", path=where, field="--human")
    groups = criteria(annotators)
    log(f"alt-test: {len(frame)} rows, {len(annotators)} annotators"
        f"{f' in {len(groups)} criteria' if len(groups) > 1 else ''}, {len(judges)} judge(s), "
        f"{score}, epsilon {epsilon}, q {alpha}")
    rows = []
    for criterion, names in groups.items():
        if len(names) < 2:
            raise InputError(f"criterion {criterion!r} has one annotator column ({names[0]}): "
                             "the alt-test needs two or more", path=where, field=names[0])
        matrix = frame[names].to_numpy(dtype=float)
        for judge in judges:
            answers = frame[judge].to_numpy(dtype=float)
            needed = epsilon_to_pass(humans=matrix, judge=answers, score=score, alpha=alpha,
                                     min_items=min_items) if search_epsilon else None
            rows.append(AltTestRow(judge, tuple(names), criterion, score, epsilon, alpha,
                                   kernel(humans=matrix, judge=answers, epsilon=epsilon,
                                          score=score, alpha=alpha, min_items=min_items,
                                          names=names), needed, search_epsilon))
    for row in rows:
        for name, why in row.result.skipped.items():
            log(f"{row.metric}: annotator {name} not tested ({why})")
    rows.sort(key=lambda r: (list(groups).index(r.criterion),
                             -(r.result.advantage_probability
                               if math.isfinite(r.result.advantage_probability) else -1.0)))
    return AltTestReport(rows)


def criteria(annotators: Sequence[str]) -> dict[str | None, list[str]]:
    """Annotator columns by criterion: `human.<criterion>.<annotator>` columns grouped by
    criterion when every column is named so, else one group (criterion None)."""
    parts = [str(a).split(".") for a in annotators]
    if all(len(p) >= 3 and p[0] == "human" for p in parts):
        out: dict[str | None, list[str]] = {}
        for name, p in zip(annotators, parts, strict=True):
            out.setdefault(p[1], []).append(name)
        return out
    return {None: list(annotators)}
