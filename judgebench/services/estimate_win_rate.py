"""`estimate --statistic win-rate`: a pairwise judge's win rate of each system against each
other one, corrected with people's verdicts on a subset of the pairs.

The table is a pairwise one (item, system_a, system_b; `judgebench.tables.pairs`): the judge
column holds a verdict on every row, the human column on a subset (a missing value is a pair
nobody labelled), each `a`, `b`, `tie` or P(A better) in [0, 1]; a verdict the sidecar counts
as failed is missing, and the judge must cover every row. Per unordered pair of systems
{a, b} (a sorted first), its rows oriented towards a (`meta_eval.estimation.oriented_pairs`:
a row with a second counts 1 - its verdict), side by side:

- human-only: a's win rate over b among the labelled rows (a tie counts a half), with the
  classical interval;
- judge-only (biased): the judge's win rate over every row of the pair;
- win-rate-ppi++: `meta_eval.estimation.pairwise_win_rates` (PPI++ on the oriented rows).

Then the same rows for b against a, mirrored (1 - the rate, the interval mirrored). A pair
with fewer than 2 labelled rows gets `undefined` rows saying so, not a number.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.errors import InputError
from judgebench.services.estimate_result import (
    EstimateResult,
    EstimateRow,
    Group,
    signature,
    with_target,
)
from meta_eval.estimation import EstimationError, mirrored

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from meta_eval.estimation import Estimate, OrientedPair

Log = Callable[[str], None]


def win_rates(scores: str | Path | pd.DataFrame, *, judge: str, human: str,
              confidence: float = 0.95, target_width: float | None = None,
              next_items: int = 10) -> EstimateResult:
    """Each system's win rate against each other one (module docstring). Bad input raises
    InputError naming the file, line and column."""
    import numpy as np

    from judgebench.services.pairwise import labels
    from judgebench.tables.columns import _where
    from judgebench.tables.pairs import PreparedPairs
    from meta_eval.estimation import oriented_pairs

    prepared = PreparedPairs.read(scores, exclude=[human])
    frame, where = prepared.frame, prepared.where
    if judge == human:
        raise InputError("the judge and the human column must differ", field="--judge")
    if judge not in frame.columns:
        raise InputError(f"no column {judge!r} in the pairwise table; columns are "
                         f"{list(frame.columns)}", path=where, field=judge)
    verdicts = labels(frame, judge, where)
    people = labels(frame, human, where)
    missing = np.flatnonzero(np.isnan(verdicts))
    if missing.size:
        k = int(missing[0])
        failed = prepared.failed.masks.get(judge)
        why = (" (a failed verdict)" if failed is not None and bool(failed[k]) else "")
        raise InputError(f"the judge column {judge!r} has no verdict on {missing.size} "
                         f"row(s){why}: the judge must cover every pair (judge the missing "
                         "ones, or leave those rows out)", path=where, field=judge,
                         **_where(frame, where, k))
    if not np.isfinite(people).any():
        raise InputError(f"the human column {human!r} has no labels (every value is "
                         "missing)", path=where, field=human)
    first = [str(v) for v in frame["system_a"]]
    second = [str(v) for v in frame["system_b"]]
    try:
        pairs = oriented_pairs(first=first, second=second, judge=verdicts, human=people)
    except EstimationError as error:
        raise InputError(str(error), path=where, field="system_b") from None
    names = [f"{i} ({a} vs {b})" for i, a, b in
             zip(frame["item"].astype(str), first, second, strict=True)]
    settings = {"statistic": "win-rate", "judge": judge, "human": human, "by": "pair",
                "confidence": f"{confidence:g}"}
    rows: list[EstimateRow] = []
    for pair in pairs:
        ours = _pair_rows(pair, first, second, verdicts, people, names, settings, confidence,
                          target_width, next_items)
        rows += ours
        rows += [_mirror(row) for row in ours]
    return EstimateResult(judge, human, "win-rate", "pair", rows)


def _pair_rows(pair: OrientedPair, first: Sequence[str], second: Sequence[str],
               verdicts: np.ndarray, people: np.ndarray, names: Sequence[str],
               settings: dict[str, str], confidence: float, target_width: float | None,
               next_items: int) -> list[EstimateRow]:
    """a against b: human-only, judge-only and the corrected win rate."""
    import numpy as np

    from meta_eval.estimation import human_only_mean, judge_only_mean, pairwise_win_rates

    a, b = str(pair.a), str(pair.b)
    group = Group(a, [names[k] for k in pair.rows], pair.judge, pair.human, None, None,
                  pair.judge)
    labelled = int(np.isfinite(pair.human).sum())

    def row(method: str, *, estimate: Estimate | None = None, undefined: str | None = None,
            moved: float | None = None) -> EstimateRow:
        return EstimateRow(a, method, signature(method, settings), estimate, undefined,
                           moved, against=b)

    if pair.rows.size < 2:
        judged = row("judge-only", undefined=f"{a} and {b} meet in {pair.rows.size} row: "
                                              "an interval needs at least 2")
    else:
        judged = row("judge-only", estimate=judge_only_mean(judge=pair.judge,
                                                            confidence=confidence))
    if labelled < 2:
        why = (f"{labelled} of the {pair.rows.size} rows of {a} against {b} carry a human "
               "label: an estimate needs at least 2")
        return [row("human-only", undefined=why), judged, row("win-rate-ppi++", undefined=why)]
    alone = human_only_mean(human=pair.human, confidence=confidence)
    index = pair.rows
    rates = pairwise_win_rates(first=[first[k] for k in index],
                               second=[second[k] for k in index], judge=verdicts[index],
                               human=people[index], confidence=confidence)
    won = rates[(pair.a, pair.b)]
    moved = None if judged.estimate is None else won.point - judged.estimate.point
    return [with_target(row("human-only", estimate=alone), group, target_width, 0), judged,
            with_target(row("win-rate-ppi++", estimate=won, moved=moved), group,
                        target_width, next_items)]


def _mirror(row: EstimateRow) -> EstimateRow:
    """b against a: the rate 1 - a's, its interval mirrored, `moved` negated."""
    assert row.against is not None
    return replace(row, group=row.against, against=row.group,
                   estimate=None if row.estimate is None else mirrored(row.estimate),
                   moved=None if row.moved is None else -row.moved)
