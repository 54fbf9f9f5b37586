"""The pairwise meta-eval service: what `judgebench meta-eval PAIRS --pairwise` computes.

`pairwise_meta_eval(pairs, humans=[...])` reads a pairwise table (one row per compared pair:
item, system_a, system_b, optional category, human.* preferences and per judge `<spec>`,
`<spec>.ab`, `<spec>.ba` verdicts; DESIGN.md), checks every label before any work, and runs
`meta_eval.pairwise_eval.evaluate_pairwise`. Its rows' `to_dict()` are the `--json` objects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.tables.columns import _where
from judgebench.tables.failed import MISSING, FailedAs, FailedCells, parse_failed_as
from judgebench.tables.pairs import (
    NOT_JUDGES,
    ORDERS,
    PAIR_KEY,
    PreparedPairs,
    check_pairs,
    read_pairs,
    verdict_columns,
)
from meta_eval.pairwise import TIE_POLICIES, LabelError, preferences
from meta_eval.pairwise_eval import (
    CEILING,
    PairwiseResult,
    Verdicts,
    calibration,
    evaluate_pairwise,
)

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.services.repeats import RepeatsRow
    from meta_eval.arrays import FloatArray

Log = Callable[[str], None]


def labels(frame: pd.DataFrame, column: str, where: str) -> FloatArray:
    """P(A better) of one column; InputError naming file, line/row and column."""
    if column not in frame.columns:
        raise InputError(f"no such column; columns are {list(frame.columns)}", path=where,
                         field=column)
    try:
        return preferences(frame[column], name=column)
    except LabelError as exc:
        value = frame[column].iloc[exc.row]
        value = value.item() if hasattr(value, "item") else value
        raise InputError(f"{value!r} is not a verdict: use a, b, tie or a number in [0, 1] "
                         "(P(A is better), 0.5 = tie)", path=where, field=column,
                         **_where(frame, where, exc.row)) from None


def default_judges(frame: pd.DataFrame, exclude: Sequence[str], log: Log) -> list[str]:
    """Every `<name>.ab`/`<name>.ba` judge, then every other column whose values are all
    verdicts (not human.*, keys or `exclude`)."""
    skip = {*NOT_JUDGES, *exclude}
    columns = [c for c in frame.columns if c not in skip and not str(c).startswith("human.")]
    ordered = [str(c)[:-3] for c in columns if str(c).endswith(ORDERS)]
    judges = list(dict.fromkeys(ordered))
    for column in columns:
        name = str(column)
        if name in judges or name.endswith(ORDERS) or frame[column].isna().all():
            continue
        try:
            preferences(frame[column], name=name)
        except LabelError:
            log(f"column {name!r} is not a verdict column; left out")
            continue
        judges.append(name)
    return judges


def judge_verdicts(frame: pd.DataFrame, judge: str, where: str,
                   failed: FailedCells | None = None, failed_as: FailedAs = MISSING
                   ) -> Verdicts:
    found = {suffix: f"{judge}{suffix}" in frame.columns for suffix in ("", *ORDERS)}
    if not any(found.values()):
        raise InputError(f"no column {judge!r}, {judge + '.ab'!r} or {judge + '.ba'!r}; "
                         f"columns are {list(frame.columns)}", path=where, field=judge)
    read = {s: labels(frame, f"{judge}{s}", where) if found[s] else None for s in found}
    cells = failed or FailedCells()
    masks = {s: cells.masks.get(f"{judge}{s}") if found[s] else None for s in found}
    return Verdicts(ab=read[".ab"], ba=read[".ba"], combined=read[""],
                    failed_ab=masks[".ab"], failed_ba=masks[".ba"], failed_combined=masks[""],
                    failed_as=failed_as.kind)


@dataclass(frozen=True)
class PairwiseRow:
    """One statistic of one judge (or the human ceiling) in the run's setting."""

    result: PairwiseResult
    ties: str
    by: str | None
    alpha: float
    failed_as: FailedAs = MISSING
    told_by: str = "cells"

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        out: dict[str, Any] = {"metric": r.judge, "human": r.human,
                               **r.result.to_dict(),
                               "grouping": self.by or "none", "human_ties": self.ties,
                               "failed_as": self.failed_as.name}
        if r.failed is not None:
            out["failed"] = {**r.failed, "told_by": self.told_by}
        if self.by is None:
            out.pop("category", None)
        if r.ceiling_fraction is not None:
            out["ceiling_fraction"] = r.ceiling_fraction
        if r.cluster is not None:
            out |= {"cluster": r.cluster, "cluster_test": "mcnemar/sign-flip",
                    "alpha": self.alpha}
        return out


@dataclass(frozen=True)
class PairwiseMetaEvalResult(Result):
    rows: list[PairwiseRow]
    judges: list[str]
    humans: list[str]
    pairs: int
    items: int
    compare: bool
    failed_as: FailedAs = MISSING
    notes: list[str] = field(default_factory=list)
    #: Per judge drawn with `score --repeats K`: its verdicts against themselves
    #: (judgebench.services.repeats); empty without repeats.
    repeats: list[RepeatsRow] = field(default_factory=list)

    def to_dict(self) -> list[dict[str, Any]]:
        return [row.to_dict() for row in self.rows] + [r.to_dict() for r in self.repeats]


def pairwise_meta_eval(pairs: str | Path | pd.DataFrame, *, humans: Sequence[str],
                       judges: Sequence[str] = (), by: str | None = None,
                       human_ties: str = "drop", bootstrap: int = 0, ci: float = 0.95,
                       seed: int = 0, compare: bool = False, resamples: int = 1000,
                       alpha: float = 0.05, failed_as: str | FailedAs | None = None,
                       log: Log | None = None) -> PairwiseMetaEvalResult:
    """Meta-evaluate pairwise judges as `judgebench meta-eval --pairwise` does; a failed
    verdict counts as `failed_as` says (missing, wrong, tie; judgebench.tables.failed)."""
    log = log or (lambda _message: None)
    convention = parse_failed_as(failed_as, pairwise=True)
    if human_ties not in TIE_POLICIES:
        raise InputError(f"unknown tie policy {human_ties!r}; use one of {TIE_POLICIES}",
                         field="--human-ties")
    if not humans:
        raise InputError("name a human preference column with --human", field="--human")
    prepared = PreparedPairs.read(pairs, [*humans, *([by] if by else [])])
    frame, where, sidecar, failed = (prepared.frame, prepared.where, prepared.sidecar,
                                     prepared.failed)
    human_p = {h: labels(frame, h, where) for h in dict.fromkeys(humans)}
    categories = None
    if by is not None:
        if by not in frame.columns:
            raise InputError(f"no such column; columns are {list(frame.columns)}", path=where,
                             field=by)
        empty = frame[by].isna()
        if empty.any():
            raise InputError("a pair without a category", path=where, field=by,
                             **_where(frame, where, int(empty.to_numpy().argmax())))
        categories = frame[by].astype(str).to_numpy()
    exclude = [*humans, *([by] if by else [])]
    names = list(dict.fromkeys(judges)) or default_judges(frame, exclude, log)
    if not names:
        raise InputError("no judge columns (<spec>, <spec>.ab, <spec>.ba): name them with "
                         "--judge", path=where)
    verdicts = {j: judge_verdicts(frame, j, where, failed, convention) for j in names}
    items = frame["item"].to_numpy()
    log(f"{len(frame)} pairs over {len(set(items))} items; {len(names)} judge(s) x "
        f"{len(human_p)} human column(s); human ties: {human_ties}; failed verdicts: "
        f"{convention.name}" + (f"; by {by}" if by else ""))
    for note in failed.notes:
        log(note)
    evaluation = evaluate_pairwise(judges=verdicts, humans=human_p, items=items,
                                   categories=categories, ties=human_ties,
                                   bootstrap=bootstrap, ci=ci, seed=seed,
                                   compare=compare, resamples=resamples, alpha=alpha)
    soft = calibration(judges=verdicts, humans=human_p, items=items, bootstrap=bootstrap,
                       ci=ci, seed=seed)
    told = {j: next((failed.told_by[c] for c in (j, f"{j}.ab", f"{j}.ba")
                     if c in failed.told_by), "cells") for j in names}
    rows = [PairwiseRow(r, human_ties, by, alpha, convention, told.get(r.judge, "cells"))
            for r in [*evaluation.results, *soft]]
    import numpy as np

    from judgebench.services.repeats import repeats_rows

    keyed = frame.assign(system=frame["system_a"].astype("str") + " vs "
                         + frame["system_b"].astype("str"))
    repeats = repeats_rows(sidecar, keyed, names, list(human_p), where,
                           {h: np.asarray(v, dtype=float) for h, v in human_p.items()})
    return PairwiseMetaEvalResult(rows, names, list(human_p), len(frame),
                                  len(set(items)), compare and len(names) > 1, convention,
                                  failed.notes, repeats)


__all__ = ["CEILING", "NOT_JUDGES", "ORDERS", "PAIR_KEY", "PairwiseMetaEvalResult", "PairwiseRow",
           "check_pairs", "pairwise_meta_eval", "read_pairs", "verdict_columns"]
