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
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.errors import InputError
from judgebench.services.estimate_result import (
    VERSION,
    DifferenceRow,
    EstimateResult,
    EstimateRow,
    Group,
    RankRow,
    signature,
    with_target,
)
from judgebench.tables.prepared import PreparedTable
from meta_eval.estimation import Estimate, EstimationError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from judgebench.plugins import PluginHost

Log = Callable[[str], None]
METHODS = ("ppi", "stratified", "weighted", "rogan-gladen")
STATISTICS = ("mean", "pass-rate", "win-rate")
ALL = "(all)"


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
    input raises InputError naming the file, column and system. `statistic="win-rate"`:
    `scores` is a pairwise table and each system's win rate against each other one is
    estimated (`judgebench.services.estimate_win_rate`)."""
    if statistic == "win-rate":
        _check_win_rate(methods, strata, inclusion_probability, by, compare, threshold,
                        human_threshold, lower, higher)
        _check_options("mean", (), None, None, "system", False, target_width, confidence,
                       None, None)
        from judgebench.services.estimate_win_rate import win_rates

        return win_rates(scores, judge=judge, human=human, confidence=confidence,
                         target_width=target_width, next_items=next_items)
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
    if not compare:
        return EstimateResult(judge, human, statistic, by, rows)
    differences = _differences(groups, settings, confidence, where=where, human=human)
    ranking = _ranking(groups, rows, differences, settings, confidence)
    return EstimateResult(judge, human, statistic, by, rows, differences, ranking)


def _check_win_rate(methods: Sequence[str], strata: str | None, inclusion: str | None,
                    by: str | None, compare: bool, threshold: float | None,
                    human_threshold: float | None, lower: Sequence[str],
                    higher: Sequence[str]) -> None:
    """What a win rate refuses: it is one PPI++ estimate per pair of systems."""
    given = {"--method": [m for m in methods if m != "ppi"],
             "--strata": [strata] if strata is not None else [],
             "--inclusion-probability": [inclusion] if inclusion is not None else [],
             "--compare": [True] if compare else [],
             "--threshold": [threshold] if threshold is not None else [],
             "--human-threshold": [human_threshold] if human_threshold is not None else [],
             "--lower-is-better": list(lower), "--higher-is-better": list(higher)}
    refused = [option for option, values in given.items() if values]
    if refused:
        raise InputError("a win rate is PPI++ on each pair of systems' verdicts (method ppi; "
                         "no strata, weights, thresholds, directions or --compare: the win "
                         "rates are the comparisons)", field=refused[0])
    if by is None:
        raise InputError("a win rate is of one system against another: it needs --by system",
                         field="--by")


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


def _groups(frame: pd.DataFrame, *, judge: str, human: str, by: str | None,
            strata: str | None, inclusion: str | None, where: str, negated: bool
            ) -> list[Group]:
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
        out.append(Group(str(name), items[rows].tolist(), judged[rows], labels[rows],
                          None if strata_values is None else strata_values[rows],
                          None if probabilities is None else probabilities[rows],
                          -judged[rows] if negated else judged[rows]))
    return sorted(out, key=lambda g: g.name)


def _as_statistic(group: Group, statistic: str, judge: str, human: str,
                  threshold: float | None, human_threshold: float | None, where: str,
                  by: str | None) -> Group:
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
    return Group(group.name, group.items, verdicts,
                  passes(group.human, human_threshold, human, "--human-threshold"),
                  group.strata, group.inclusion, verdicts)


def _estimates(group: Group, methods: Sequence[str], settings: dict[str, str],
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
        rows.append(with_target(
            EstimateRow(group.name, corrected.method, signature(corrected.method, settings),
                        corrected, moved=corrected.point - judge_only.point,
                        caution=_thin_strata(group) if method == "stratified" else None),
            group, target_width, next_items))
    if target_width is not None:  # human-only: how many labels, not which (uniform)
        rows[0] = with_target(rows[0], group, target_width, 0)
    return rows


#: Labels per stratum below which the stratified interval runs narrow (stratified_ppi_mean:
#: 1,000 simulated studies at nominal 0.9 covered 0.835 with 8 labels in a stratum, 0.886
#: with 20 or more; benchmarks/README.md)
THIN_STRATUM = 20


def _thin_strata(group: Group) -> str | None:
    """A sentence naming the strata with fewer than THIN_STRATUM labels, if any."""
    import numpy as np

    if group.strata is None:
        return None
    labelled = np.isfinite(np.asarray(group.human, dtype=float))
    strata = np.asarray(group.strata)
    thin = {str(name): int(labelled[strata == name].sum()) for name in np.unique(strata)}
    thin = {name: n for name, n in thin.items() if n < THIN_STRATUM}
    if not thin:
        return None
    listed = ", ".join(f"{name} ({n})" for name, n in sorted(thin.items()))
    return (f"strata with fewer than {THIN_STRATUM} labels: {listed}; there the stratified "
            "interval runs narrow (simulated coverage 0.835 at 8 labels for nominal 0.9): "
            "prefer --method weighted (Hajek PPI++) or label more")


def _corrected(method: str, group: Group, confidence: float) -> Estimate:
    from meta_eval.estimation import hajek_ppi_mean, ppi_mean, stratified_ppi_mean

    f, h = group.oriented, group.human
    if method == "stratified" and group.strata is not None:
        return stratified_ppi_mean(judge=f, human=h, strata=group.strata, confidence=confidence)
    if method == "weighted" and group.inclusion is not None:
        # centred (Hajek): a judge offset from people costs the weighted estimate nothing
        # (`weighted_ppi_mean`, the uncentred form, stays in meta_eval for comparison)
        return hajek_ppi_mean(judge=f, human=h, inclusion_probability=group.inclusion,
                              confidence=confidence)
    return ppi_mean(judge=f, human=h, confidence=confidence)


def _rogan_gladen(group: Group, settings: dict[str, str], confidence: float,
                  judged: float) -> EstimateRow:
    """The Rogan-Gladen pass rate: the test set is every item of the group, the calibration
    set its labelled items; where it is undefined, the sentence saying why."""
    import numpy as np

    from meta_eval.rogan_gladen import rogan_gladen

    labelled = np.isfinite(group.human)
    sig = signature("rogan-gladen", settings)
    if group.inclusion is not None and np.ptp(group.inclusion[labelled]) > 0:
        return EstimateRow(group.name, "rogan-gladen", sig, undefined=(
            "the labels were drawn with unequal inclusion probabilities, and Rogan-Gladen's "
            "sensitivity and specificity are rates of a uniform calibration sample: use "
            "--method weighted (at lam = 1 it is the 1/pi-weighted Rogan-Gladen point)"))
    try:
        corrected = rogan_gladen(test_verdicts=group.judge,
                                 calibration_verdicts=group.judge[labelled],
                                 calibration_human=group.human[labelled],
                                 confidence=confidence)
    except EstimationError as error:
        return EstimateRow(group.name, "rogan-gladen", sig, undefined=str(error))
    return EstimateRow(group.name, "rogan-gladen", sig, corrected,
                       moved=corrected.point - judged)


def _differences(groups: Sequence[Group], settings: dict[str, str], confidence: float, *,
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


def _ranking(groups: Sequence[Group], rows: Sequence[EstimateRow],
             differences: Sequence[DifferenceRow], settings: dict[str, str],
             confidence: float) -> list[RankRow]:
    """The systems ranked by their PPI++ estimates (higher first), each with the
    simultaneous interval of its rank and its significance cluster, both from the paired
    PPI++ differences (`meta_eval.rank_intervals`; clusters at alpha = 1 - confidence)."""
    from meta_eval.estimation import ppi_mean
    from meta_eval.rank_intervals import corrected_clusters, rank_intervals

    points = {}
    for group in groups:
        found = next((r.estimate for r in rows if r.group == group.name
                      and r.method == "ppi++" and r.estimate is not None), None)
        if found is None:  # ppi was not among the methods asked for
            found = ppi_mean(judge=group.oriented, human=group.human, confidence=confidence)
        points[group.name] = found.point
    paired = {(d.a, d.b): (d.estimate.point, d.estimate.standard_error) for d in differences}
    items = {(d.a, d.b): d.estimate.items for d in differences}
    intervals = rank_intervals(points=points, differences=paired, confidence=confidence)
    clusters = corrected_clusters(points=points, differences=paired, items=items,
                                  alpha=1.0 - confidence, statistic=settings["statistic"])
    sig = signature("rank", settings | {"ranked_by": "ppi++", "rank_ci": "bonferroni",
                                        "clusters": f"paired-normal@{1.0 - confidence:g}"})
    return [RankRow(r.system, "ppi++", r.point, r.rank, r.rank_low, r.rank_high,
                    clusters.cluster_of(r.system), confidence, sig) for r in intervals]


__all__ = ["ALL", "METHODS", "STATISTICS", "VERSION", "DifferenceRow", "EstimateResult",
           "EstimateRow", "RankRow", "estimate", "signature"]
