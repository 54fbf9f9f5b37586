"""`meta-eval listwise`: judges that score or pick the best of N candidates against people's
best, as RewardBench 2 scores reward models (`meta_eval.best_of_n`), beside the pairwise
reduction of the same judge's scores; per subset when the table has one (the `ties` subset by
its own rule)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import comb
from pathlib import Path
from typing import Any

import numpy as np

from judgebench._version import __version__
from judgebench.errors import InputError
from judgebench.results import Result

Log = Callable[[str], None]
VERSION = "1"
ALL = "all"


@dataclass(frozen=True)
class ListwiseRow:
    """One judge against one human column on one subset (`all`: every prompt outside the
    ties subset). `accuracy` is the best-of-N accuracy (the Ties score on `ties`), with a
    Wilson interval; `pairwise` the pairwise reduction; `random` a random ranking's expected
    accuracy, mean 1 / C(N, k) (k correct of N). A prompt with a failed judgement
    (`failed_prompts`) or that people did not mark (`unlabelled_prompts`: every human cell
    empty) is left out. `reason` and no numbers when no prompt could be scored."""

    judge: str
    human: str
    subset: str
    rule: str
    prompts: int
    failed_prompts: int
    unlabelled_prompts: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    pairwise: float | None
    random: float | None
    reason: str | None
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "human": self.human, "subset": self.subset,
                "rule": self.rule, "prompts": self.prompts,
                "failed_prompts": self.failed_prompts,
                "unlabelled_prompts": self.unlabelled_prompts,
                "status": "ok" if self.reason is None else "error", "reason": self.reason,
                "accuracy": self.accuracy, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "pairwise": self.pairwise, "random": self.random,
                "signature": self.signature}


@dataclass(frozen=True)
class ListwiseReport(Result):
    rows: list[ListwiseRow]
    confidence: float

    def to_dict(self) -> list[dict[str, Any]]:
        return [{**r.to_dict(), "confidence": self.confidence} for r in self.rows]


def listwise(table: str | Path, *, humans: Sequence[str], judges: Sequence[str] = (),
             confidence: float = 0.95, log: Log | None = None) -> ListwiseReport:
    """Each judge column against each human column of a listwise table
    (`judgebench.tables.listwise`)."""
    from judgebench.tables.listwise import ListwiseTable

    log = log or (lambda _message: None)
    read = ListwiseTable.read(table)
    if not humans:
        raise InputError("give people's best candidates: --human COL", path=read.where,
                         field="--human")
    names = list(dict.fromkeys(judges)) or read.judges(humans)
    if not names:
        raise InputError("no judge columns: name them with --judge", path=read.where,
                         field="--judge")
    items = np.array(read.column("item"))
    subsets = (np.array([s.strip() for s in read.column("subset")])
               if "subset" in read.frame.columns else np.full(len(items), ALL))
    log(f"listwise: {len(set(items.tolist()))} prompts, {len(read.frame)} candidates, "
        f"{len(names)} judge(s)")
    rows = []
    for human in dict.fromkeys(humans):
        correct, marked = read.human(human)
        for judge in names:
            scores = read.judge(judge)
            for subset in _subsets(subsets):
                rows.append(_row(judge, human, subset, items, subsets, scores,
                                 (correct, marked), confidence, read.where))
    return ListwiseReport(rows, confidence)


def _subsets(subsets: np.ndarray) -> list[str]:
    names = list(dict.fromkeys(subsets.tolist()))
    return [ALL] if names == [ALL] else [ALL, *names]


def _row(judge: str, human: str, subset: str, items: np.ndarray, subsets: np.ndarray,
         scores: np.ndarray, people: tuple[np.ndarray, np.ndarray], confidence: float,
         where: str) -> ListwiseRow:
    from meta_eval.best_of_n import (
        best_of_n_accuracy,
        pairwise_reduction,
        prompt_stats,
        ties_score,
    )
    from meta_eval.proportions import wilson_interval

    ties = subset.lower() == "ties"
    keep = (subsets == subset) if subset != ALL else (np.char.lower(subsets.astype(str))
                                                      != "ties")
    correct, marked = people
    unlabelled = set(items[keep & ~marked].tolist())
    failed = set(items[keep & marked & np.isnan(scores)].tolist())
    use = keep & marked & ~np.isin(items, list(failed))
    rule = "rewardbench2-ties" if ties else "best-of-n"
    signature = "|".join([f"meta-eval.listwise@{VERSION}", f"rule:{rule}",
                          "accuracy:min-correct>max-incorrect", "pairwise:tie-half",
                          f"ci:wilson-{confidence:g}", f"judgebench:{__version__}"])
    prompts = len(set(items[use].tolist()))
    empty = ListwiseRow(judge, human, subset, rule, prompts, len(failed), len(unlabelled),
                        None, None, None, None, None, None, signature)
    if not prompts:
        return _failed(empty, "no prompt with a score for every candidate")
    args = {"scores": scores[use], "correct": correct[use], "groups": items[use]}
    try:
        stats = prompt_stats(**args)
        if ties:
            kinds, pairs = _ties_ids(items[use], where)
            accuracy = ties_score(**args, kind=kinds, pair=pairs)
            low = high = None
        else:
            accuracy = best_of_n_accuracy(**args)
            interval = wilson_interval(successes=int(stats.accurate.sum()), n=prompts,
                                       confidence=confidence)
            low, high = interval if interval is not None else (None, None)
        pairwise = pairwise_reduction(**args)
    except ValueError as exc:
        raise InputError(f"{judge} against {human}: {exc}", path=where) from None
    sizes = {p: (int((items[use] == p).sum()), int(((items[use] == p) & correct[use]).sum()))
             for p in stats.prompts}
    random = None if ties else float(np.mean([1.0 / comb(n, k) for n, k in sizes.values()]))
    return ListwiseRow(judge, human, subset, rule, prompts, len(failed), len(unlabelled),
                       accuracy, low, high, pairwise, random, None, signature)


def _failed(row: ListwiseRow, reason: str) -> ListwiseRow:
    from dataclasses import replace

    return replace(row, reason=reason)


def _ties_ids(items: np.ndarray, where: str) -> tuple[list[str], list[str]]:
    """RewardBench 2's Ties ids, `ref:ID` and `tied:ID`, split into kind and pair id."""
    kinds, pairs = [], []
    for item in items.tolist():
        kind, sep, pair = str(item).partition(":")
        if not sep or kind not in ("ref", "tied"):
            raise InputError(f"an item of the ties subset is 'ref:ID' or 'tied:ID' (as "
                             f"RewardBench 2 names them); got {item!r}", path=where,
                             field="item")
        kinds.append(kind)
        pairs.append(pair)
    return kinds, pairs
