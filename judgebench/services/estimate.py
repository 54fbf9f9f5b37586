"""The estimate service: what `judgebench estimate` computes, as a Python function.

A judge column scored every item; a human column holds labels on a subset (a missing value is
an item nobody labelled). Per system (`by="system"`) or over the whole table, side by side:
the human labels alone (`human-only`, the classical interval), the judge alone (`judge-only`,
biased: its interval is about the judge, not people), and the corrected estimates of E[human]
that use both (`ppi` = PPI++, `stratified`, `weighted`; for a pass rate of binary verdicts
`rogan-gladen`). The statistics are `meta_eval.estimation` and `meta_eval.rogan_gladen`; this
module only reads the table (`PreparedTable.read`), picks the rows and checks the input.

With `statistic="pass-rate"` the judge's score passes where it is >= `threshold` (without a
threshold the judge column must already be 0/1), and so does the human label with
`human_threshold` (else it must be 0/1). Every row carries a `signature` (sacreBLEU style)
naming everything that decides its number.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench._version import __version__
from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.tables.prepared import PreparedTable
from meta_eval.estimation import Estimate, EstimationError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from judgebench.plugins import PluginHost

Log = Callable[[str], None]
VERSION = "1"
METHODS = ("ppi", "stratified", "weighted", "rogan-gladen")
STATISTICS = ("mean", "pass-rate")
ALL = "(all)"


@dataclass(frozen=True)
class EstimateRow:
    """One estimate of one group (a system, or `(all)`): the estimate, or `undefined` (the
    sentence saying why no number exists)."""

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

    @property
    def biased(self) -> bool:
        return self.method == "judge-only"

    def to_dict(self) -> dict[str, Any]:
        e = self.estimate
        record: dict[str, Any] = {"type": "estimate", "system": self.group,
                                  "method": self.method, "biased": self.biased}
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


@dataclass
class EstimateResult(Result):
    """`judgebench estimate`'s numbers: the estimates per group, then the paired differences
    (`compare`); `to_dict()` is the JSON array the command prints."""

    judge: str
    human: str
    statistic: str
    by: str | None
    rows: list[EstimateRow]
    differences: list[DifferenceRow] = field(default_factory=list)

    def to_dict(self) -> list[dict[str, Any]]:
        return [*(r.to_dict() for r in self.rows), *(d.to_dict() for d in self.differences)]


def _finite(value: float) -> float | None:
    import math

    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class _Group:
    name: str
    items: list[str]
    judge: np.ndarray
    human: np.ndarray
    strata: np.ndarray | None
    inclusion: np.ndarray | None
    #: the judge as the corrected estimators take it: negated where lower is better (a mean)
    oriented: np.ndarray


def estimate(scores: str | Path | pd.DataFrame, *, judge: str, human: str,
             by: str | None = "system", statistic: str = "mean",
             threshold: float | None = None, human_threshold: float | None = None,
             methods: Sequence[str] = (), strata: str | None = None,
             inclusion_probability: str | None = None, compare: bool = False,
             target_width: float | None = None, next_items: int = 10,
             confidence: float = 0.95, lower: Sequence[str] = (),
             higher: Sequence[str] = (), log: Log | None = None,
             host: PluginHost | None = None) -> EstimateResult:
    """Estimate E[`human`] (or its pass rate) per system from the `judge` column and the
    human labels it has (module docstring). `methods`: ppi, stratified (needs `strata`),
    weighted (needs `inclusion_probability`), rogan-gladen (pass-rate only); default ppi,
    plus rogan-gladen for a pass rate. `compare`: every pair of systems' paired difference.
    `target_width`: per corrected estimate, how many more labels reach that interval width
    and the `next_items` unlabelled items to label first. A judge whose lower scores are
    better (`lower`, the sidecar or its registered metric) enters the corrected estimates of
    a mean negated (PPI++ tunes a weight in [0, 1]); judge-only stays on its own scale. Bad
    input raises InputError naming the file, column and system."""
    chosen = _check_options(statistic, methods, strata, inclusion_probability, by, compare,
                            target_width, confidence, threshold, human_threshold)
    others = [c for c in (strata, inclusion_probability) if c is not None]
    table = PreparedTable.read(scores, [human], [judge], others=others, lower=lower,
                               higher=higher, host=host, log=log)
    negated = statistic == "mean" and not table.infos[judge].higher_is_better
    frame = table.frame
    where = table.where
    for column, option in ((strata, "--strata"), (inclusion_probability,
                                                  "--inclusion-probability"), (by, "--by")):
        if column is not None and column not in frame.columns:
            raise InputError(f"no column {column!r} in the table", path=where, field=option)
    groups = _groups(frame, judge=judge, human=human, by=by, strata=strata,
                     inclusion=inclusion_probability, where=where, negated=negated)
    groups = [_as_statistic(g, statistic, judge, human, threshold, human_threshold, where,
                            by) for g in groups]
    settings = _settings(judge, human, statistic, by, threshold, human_threshold, confidence,
                         strata, inclusion_probability)
    if negated:
        settings["judge_sign"] = "negated"

    rows: list[EstimateRow] = []
    for group in groups:
        rows.extend(_estimates(group, chosen, settings, confidence, target_width, next_items,
                               where=where, human=human, by=by))
    differences = (_differences(groups, settings, confidence, where=where, human=human)
                   if compare else [])
    return EstimateResult(judge, human, statistic, by, rows, differences)


def _check_options(statistic: str, methods: Sequence[str], strata: str | None,
                   inclusion: str | None, by: str | None, compare: bool,
                   target_width: float | None, confidence: float, threshold: float | None,
                   human_threshold: float | None) -> tuple[str, ...]:
    if by not in (None, "system"):
        raise InputError(f"estimates are per system or overall, not per {by!r}", field="--by")
    if statistic not in STATISTICS:
        raise InputError(f"unknown statistic {statistic!r}; use one of "
                         f"{', '.join(STATISTICS)}", field="--statistic")
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise InputError(f"unknown method(s) {unknown}; use {', '.join(METHODS)}",
                         field="--method")
    chosen = tuple(dict.fromkeys(methods)) or (
        ("ppi", "rogan-gladen") if statistic == "pass-rate" else ("ppi",))
    if "rogan-gladen" in chosen and statistic != "pass-rate":
        raise InputError("rogan-gladen corrects a pass rate of binary verdicts: use "
                         "--statistic pass-rate", field="--method")
    if ("stratified" in chosen) != (strata is not None):
        raise InputError("--method stratified and --strata COLUMN go together",
                         field="--strata")
    if ("weighted" in chosen) != (inclusion is not None):
        raise InputError("--method weighted and --inclusion-probability COLUMN go together",
                         field="--inclusion-probability")
    if statistic != "pass-rate" and (threshold is not None or human_threshold is not None):
        raise InputError("a threshold makes scores pass or fail: use --statistic pass-rate",
                         field="--threshold")
    if compare and by is None:
        raise InputError("--compare compares systems: it needs --by system", field="--compare")
    if target_width is not None and not target_width > 0:
        raise InputError(f"must be positive, got {target_width}", field="--target-width")
    if not 0 < confidence < 1:
        raise InputError(f"must lie strictly between 0 and 1, got {confidence}",
                         field="--confidence")
    return chosen


def _settings(judge: str, human: str, statistic: str, by: str | None,
              threshold: float | None, human_threshold: float | None, confidence: float,
              strata: str | None, inclusion: str | None) -> dict[str, str]:
    """The parts of every signature: what decides the numbers besides the method."""
    parts = {"statistic": statistic, "judge": judge, "human": human, "by": by or "none"}
    if statistic == "pass-rate":
        parts["threshold"] = "binary" if threshold is None else f"{threshold:g}"
        parts["human_threshold"] = "binary" if human_threshold is None else (
            f"{human_threshold:g}")
    parts["confidence"] = f"{confidence:g}"
    if strata is not None:
        parts["strata"] = strata
    if inclusion is not None:
        parts["inclusion"] = inclusion
    return parts


def signature(method: str, settings: dict[str, str]) -> str:
    """`estimate.METHOD@VERSION|key:value|...|judgebench:VERSION` (sacreBLEU style)."""
    keys = {"ppi++": ("lam:tuned",), "paired-ppi++": ("lam:tuned",)}.get(method, ())
    used = {k: v for k, v in settings.items()
            if not (k == "strata" and method != "stratified-ppi++")
            and not (k == "inclusion" and method != "weighted-ppi++")}
    return "|".join([f"estimate.{method}@{VERSION}", *(f"{k}:{v}" for k, v in used.items()),
                     *keys, f"judgebench:{__version__}"])


def _groups(frame: pd.DataFrame, *, judge: str, human: str, by: str | None,
            strata: str | None, inclusion: str | None, where: str, negated: bool
            ) -> list[_Group]:
    import numpy as np
    import pandas as pd

    judged = pd.to_numeric(frame[judge], errors="coerce").to_numpy(dtype=float)
    labels = frame[human].to_numpy(dtype=float)
    lines = frame.attrs.get("lines")
    systems = frame["system"].astype(str).to_numpy() if "system" in frame.columns else None
    missing = np.flatnonzero(~np.isfinite(judged))
    if missing.size:
        k = int(missing[0])
        system = f" (system {systems[k]!r})" if systems is not None else ""
        raise InputError(
            f"the judge column {judge!r} has no finite score for {missing.size} row(s), "
            f"first item {frame['item'].iloc[k]!r}{system}: the judge must cover every item "
            "(score the missing ones, or leave those rows out)",
            path=where, field=judge, line=None if lines is None else lines[k])
    if not np.isfinite(labels).any():
        raise InputError(f"the human column {human!r} has no labels (every value is "
                         "missing)", path=where, field=human)
    probabilities = None
    if inclusion is not None:
        probabilities = pd.to_numeric(frame[inclusion], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~((probabilities > 0) & (probabilities <= 1))
                             & (np.isfinite(labels) | ~(probabilities >= 0)))
        if bad.size:
            k = int(bad[0])
            raise InputError(
                f"the inclusion probability is {frame[inclusion].iloc[k]!r}: it must be a "
                "number in (0, 1] for a labelled item and in [0, 1] otherwise",
                path=where, field=inclusion, line=None if lines is None else lines[k])
    strata_values = None
    if strata is not None:
        blank = np.flatnonzero(frame[strata].isna().to_numpy())
        if blank.size:
            raise InputError("a row without a stratum: every row needs one",
                             path=where, field=strata,
                             line=None if lines is None else lines[int(blank[0])])
        strata_values = frame[strata].astype(str).to_numpy()
    items = frame["item"].astype(str).to_numpy()
    if by is None and systems is not None:  # an item is one (item, system) row
        items = np.asarray([f"{i} ({s})" for i, s in zip(items, systems, strict=True)])
    keys = (np.full(len(frame), ALL, dtype=object) if by is None
            else frame[by].astype(str).to_numpy())
    out = []
    for name in dict.fromkeys(keys.tolist()):
        rows = np.flatnonzero(keys == name)
        out.append(_Group(str(name), items[rows].tolist(), judged[rows], labels[rows],
                          None if strata_values is None else strata_values[rows],
                          None if probabilities is None else probabilities[rows],
                          -judged[rows] if negated else judged[rows]))
    return sorted(out, key=lambda g: g.name)


def _as_statistic(group: _Group, statistic: str, judge: str, human: str,
                  threshold: float | None, human_threshold: float | None, where: str,
                  by: str | None) -> _Group:
    """For a pass rate: the judge's and people's scores made 0/1 (>= threshold passes);
    without a threshold a column must already be 0/1."""
    import numpy as np

    if statistic != "pass-rate":
        return group
    in_group = f" ({by} {group.name!r})" if by is not None else ""

    def passes(values: np.ndarray, cut: float | None, column: str, option: str) -> np.ndarray:
        present = np.isfinite(values)
        if cut is not None:
            return np.where(present, (values >= cut).astype(float), np.nan)
        bad = present & ~np.isin(values, (0.0, 1.0))
        if bad.any():
            value = values[np.flatnonzero(bad)[0]]
            raise InputError(
                f"the column {column!r} is not binary{in_group}: it holds {value:g}; a pass "
                f"rate needs 0/1 verdicts, or {option} T to pass scores >= T",
                path=where, field=column)
        return values

    verdicts = passes(group.judge, threshold, judge, "--threshold")
    return _Group(group.name, group.items, verdicts,
                  passes(group.human, human_threshold, human, "--human-threshold"),
                  group.strata, group.inclusion, verdicts)


def _estimates(group: _Group, methods: Sequence[str], settings: dict[str, str],
               confidence: float, target_width: float | None, next_items: int, *,
               where: str, human: str, by: str | None) -> list[EstimateRow]:
    import numpy as np

    from meta_eval.estimation import human_only_mean, judge_only_mean

    labelled = int(np.isfinite(group.human).sum())
    in_group = f" ({by} {group.name!r})" if by is not None else ""
    if labelled < 2:
        raise InputError(f"the human column {human!r} has {labelled} label(s){in_group}; an "
                         "estimate needs at least 2", path=where, field=human)

    def run(option: str, compute: Callable[[], Estimate]) -> Estimate:
        try:
            return compute()
        except EstimationError as error:
            raise InputError(f"{error}{in_group}", path=where, field=option) from None

    h, f = group.human, group.judge
    human_only = run(human, lambda: human_only_mean(human=h, confidence=confidence))
    judge_only = run(settings["judge"], lambda: judge_only_mean(judge=f, confidence=confidence))
    rows = [EstimateRow(group.name, "human-only", signature("human-only", settings),
                        human_only),
            EstimateRow(group.name, "judge-only", signature("judge-only", settings),
                        judge_only)]
    for method in methods:
        if method == "rogan-gladen":
            rows.append(_rogan_gladen(group, settings, confidence, judge_only.point))
            continue
        option = {"ppi": settings["judge"], "stratified": "--strata",
                  "weighted": "--inclusion-probability"}[method]
        corrected = run(option, functools.partial(_corrected, method, group, confidence))
        rows.append(_with_target(
            EstimateRow(group.name, corrected.method, signature(corrected.method, settings),
                        corrected, moved=corrected.point - judge_only.point),
            group, target_width, next_items))
    if target_width is not None:  # human-only: how many labels, not which (uniform)
        rows[0] = _with_target(rows[0], group, target_width, 0)
    return rows


def _corrected(method: str, group: _Group, confidence: float) -> Estimate:
    from meta_eval.estimation import ppi_mean, stratified_ppi_mean, weighted_ppi_mean

    f, h = group.oriented, group.human
    if method == "stratified" and group.strata is not None:
        return stratified_ppi_mean(judge=f, human=h, strata=group.strata, confidence=confidence)
    if method == "weighted" and group.inclusion is not None:
        return weighted_ppi_mean(judge=f, human=h, inclusion_probability=group.inclusion,
                                 confidence=confidence)
    return ppi_mean(judge=f, human=h, confidence=confidence)


def _with_target(row: EstimateRow, group: _Group, target_width: float | None,
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
                                         lam=row.estimate.lam)
        order = [int(k) for k in np.argsort(-np.where(unlabelled, priority, -np.inf),
                                            kind="stable") if unlabelled[k]]
        count = next_items if needed is None else min(needed, next_items)
        chosen = tuple(group.items[k] for k in order[:count])
    return EstimateRow(row.group, row.method, row.signature, row.estimate, row.undefined,
                       row.moved, target_width, needed, chosen)


def _rogan_gladen(group: _Group, settings: dict[str, str], confidence: float,
                  judged: float) -> EstimateRow:
    """The Rogan-Gladen pass rate: the test set is every item of the group, the calibration
    set its labelled items; where it is undefined, the sentence saying why."""
    import numpy as np

    from meta_eval.rogan_gladen import rogan_gladen

    labelled = np.isfinite(group.human)
    sig = signature("rogan-gladen", settings)
    try:
        corrected = rogan_gladen(test_verdicts=group.judge,
                                 calibration_verdicts=group.judge[labelled],
                                 calibration_human=group.human[labelled],
                                 confidence=confidence)
    except EstimationError as error:
        return EstimateRow(group.name, "rogan-gladen", sig, undefined=str(error))
    return EstimateRow(group.name, "rogan-gladen", sig, corrected,
                       moved=corrected.point - judged)


def _differences(groups: Sequence[_Group], settings: dict[str, str], confidence: float, *,
                 where: str, human: str) -> list[DifferenceRow]:
    """Every pair of systems, a minus b, on the items both have (PPI++ on differences)."""
    import numpy as np
    import pandas as pd

    from meta_eval.estimation import paired_difference

    index = pd.Index([item for g in groups for item in g.items]).unique()
    shape = (len(groups), len(index))
    judged, labels = np.full(shape, np.nan), np.full(shape, np.nan)
    present = np.zeros(shape, dtype=bool)
    for row, group in enumerate(groups):  # one row per system, one column per item
        at = index.get_indexer(pd.Index(group.items))
        judged[row, at], labels[row, at], present[row, at] = group.oriented, group.human, True
    sig = signature("paired-ppi++", settings)
    out = []
    for i, a in enumerate(groups):
        for j in range(i + 1, len(groups)):
            common = present[i] & present[j]
            try:
                difference = paired_difference(
                    judge_a=judged[i, common], judge_b=judged[j, common],
                    human_a=labels[i, common], human_b=labels[j, common],
                    confidence=confidence)
            except EstimationError as error:
                raise InputError(f"system {a.name!r} against {groups[j].name!r} on their "
                                 f"{int(common.sum())} common items: {error}", path=where,
                                 field=human) from None
            out.append(DifferenceRow(a.name, groups[j].name, difference, sig))
    return out
