"""What `judgebench estimate` returns: its rows (one estimate of one system, or of one system
against another; a paired difference; a system's place in the ranking), the result that holds
them, the signature every row carries, and the group of items an estimate is made on (with
how many more labels reach a target width and which items to label next). The services
`judgebench.services.estimate` and `judgebench.services.estimate_win_rate` build them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from judgebench._version import __version__
from judgebench.results import Result

if TYPE_CHECKING:
    import numpy as np

    from meta_eval.estimation import Estimate

VERSION = "1"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class EstimateRow:
    """One estimate of one group (a system, `(all)`, or with `against` a system's win rate
    over another): the estimate, or `undefined` (the sentence saying why no number exists)."""

    group: str
    method: str
    signature: str
    estimate: Estimate | None = None
    undefined: str | None = None
    #: corrected point minus the judge-only point (corrected rows only)
    moved: float | None = None
    target_width: float | None = None
    labels_to_reach: int | None = None
    next_items: tuple[str, ...] = ()
    #: the other system of a win rate (`statistic="win-rate"`), None otherwise
    against: str | None = None
    #: a sentence on why the interval may run narrow (e.g. a thinly labelled stratum)
    caution: str | None = None

    @property
    def biased(self) -> bool:
        return self.method == "judge-only"

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        record: dict[str, Any] = {"type": "estimate", "system": self.group,
                                  "against": self.against, "method": self.method,
                                  "biased": self.biased}
        if e is None:
            record.update(point=None, lower=None, upper=None, undefined=self.undefined)
        else:
            record.update(
                point=e.point, lower=e.lower, upper=e.upper, standard_error=e.standard_error,
                confidence=e.confidence, labels=e.labels, items=e.items, lam=e.lam,
                effective_labels=None if self.biased else _finite(e.effective_labels),
                labels_worth=None if self.biased else _finite(e.labels_worth),
                moved=self.moved, undefined=None)
        if self.target_width is not None and not self.biased:
            record.update(target_width=self.target_width, labels_to_reach=self.labels_to_reach,
                          next_items=list(self.next_items))
        if self.caution is not None:
            record["caution"] = self.caution
        record["signature"] = self.signature
        return record


@dataclass(frozen=True)
class DifferenceRow:
    """System `a` minus system `b` on their common items (PPI++ on paired differences)."""

    a: str
    b: str
    estimate: Estimate
    signature: str

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        return {"type": "difference", "system": self.a, "against": self.b,
                "method": e.method, "point": e.point, "lower": e.lower, "upper": e.upper,
                "standard_error": e.standard_error, "confidence": e.confidence,
                "labels": e.labels, "items": e.items, "lam": e.lam,
                "effective_labels": _finite(e.effective_labels),
                "labels_worth": _finite(e.labels_worth),
                "excludes_zero": e.lower > 0 or e.upper < 0, "signature": self.signature}


@dataclass(frozen=True)
class RankRow:
    """A system's place in the ranking by its corrected estimate (`compare`): its rank among
    the estimates, the simultaneous interval of its true rank (Bonferroni over the paired
    differences) and its significance cluster (`meta_eval.rank_intervals`)."""

    system: str
    method: str
    point: float
    rank: int
    rank_low: int
    rank_high: int
    cluster: int
    confidence: float
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": "rank", "system": self.system, "method": self.method,
                "point": self.point, "rank": self.rank, "rank_low": self.rank_low,
                "rank_high": self.rank_high, "cluster": self.cluster,
                "confidence": self.confidence, "signature": self.signature}


@dataclass
class EstimateResult(Result):
    """`judgebench estimate`'s numbers: the estimates per group, then the paired differences
    and the ranking (`compare`); `to_dict()` is the JSON array the command prints."""

    judge: str
    human: str
    statistic: str
    by: str | None
    rows: list[EstimateRow]
    differences: list[DifferenceRow] = field(default_factory=list)
    ranking: list[RankRow] = field(default_factory=list)

    def to_dict(self) -> list[dict[str, Any]]:
        return [*(r.to_dict() for r in self.rows), *(d.to_dict() for d in self.differences),
                *(r.to_dict() for r in self.ranking)]


def signature(method: str, settings: dict[str, str]) -> str:
    """`estimate.METHOD@VERSION|key:value|...|judgebench:VERSION` (sacreBLEU style)."""
    keys = ("lam:tuned",) if method in ("ppi++", "paired-ppi++", "win-rate-ppi++") else ()
    used = {k: v for k, v in settings.items()
            if not (k == "strata" and method != "stratified-ppi++")
            and not (k == "inclusion" and method != "hajek-ppi++")}
    return "|".join([f"estimate.{method}@{VERSION}", *(f"{k}:{v}" for k, v in used.items()),
                     *keys, f"judgebench:{__version__}"])


@dataclass(frozen=True)
class Group:
    """The items one estimate is made on: their names, the judge's scores on every item, the
    human labels (NaN: not labelled), the strata and inclusion probabilities where given."""

    name: str
    items: list[str]
    judge: np.ndarray
    human: np.ndarray
    strata: np.ndarray | None
    inclusion: np.ndarray | None
    #: the judge as the corrected estimators take it: negated where lower is better (a mean)
    oriented: np.ndarray


def with_target(row: EstimateRow, group: Group, target_width: float | None,
                next_items: int) -> EstimateRow:
    """The row with how many more labels reach `target_width` and, for an estimate with a
    judge (lam), the unlabelled items to label first (highest active-label priority)."""
    import numpy as np

    from meta_eval.estimation import active_label_priority, labels_to_reach

    if target_width is None or row.estimate is None:
        return row
    needed = labels_to_reach(estimate=row.estimate, target_width=target_width)
    chosen: tuple[str, ...] = ()
    unlabelled = ~np.isfinite(group.human)
    if needed != 0 and unlabelled.any() and next_items and row.estimate.lam is not None:
        priority = active_label_priority(judge=group.oriented, human=group.human,
                                         lam=row.estimate.lam, centre=True)
        order = [int(k) for k in np.argsort(-np.where(unlabelled, priority, -np.inf),
                                            kind="stable") if unlabelled[k]]
        count = next_items if needed is None else min(needed, next_items)
        chosen = tuple(group.items[k] for k in order[:count])
    return replace(row, target_width=target_width, labels_to_reach=needed, next_items=chosen)


__all__ = ["DifferenceRow", "EstimateResult", "EstimateRow", "Group", "RankRow", "signature",
           "with_target"]
