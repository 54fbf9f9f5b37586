"""The meta-eval service: what `judgebench meta-eval` computes, as a Python function.

`meta_eval(scores, humans=[...])` reads a wide scores table (a path, with its `.meta.json`
sidecar, or a DataFrame), orients every metric column so that higher is better, runs one
`meta_eval.task.Task` per (human column, statistic) and returns a `MetaEvalResult`: typed rows
whose `to_dict()` are the objects `judgebench meta-eval --json` prints, and `to_frame()`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.services.meta_eval_results import (
    CEILING,
    CI_NOTE,
    COMPARE_NOTE,
    CeilingRow,
    MetaEvalBlock,
    MetaEvalResult,
    MetricRow,
    PairTest,
    Row,
)
from judgebench.suggest import did_you_mean
from judgebench.tables.failed import FailedAs, parse_failed_as
from judgebench.tables.prepared import PreparedTable
from judgebench.tables.scales import check_scales
from meta_eval.statistics import get
from meta_eval.task import ComparisonError, Task, TaskResult

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray

Log = Callable[[str], None]
__all__ = ["CEILING", "CI_NOTE", "COMPARE_NOTE", "CeilingRow", "MetaEvalBlock",
           "MetaEvalResult", "MetricRow", "PairTest", "Row", "meta_eval"]
def meta_eval(scores: str | Path | pd.DataFrame, *, humans: Sequence[str],
              metrics: Sequence[str] = (), level: str = "segment", grouping: str = "none",
              statistics: Sequence[str] = ("pearson",), epsilon: float = 0.0,
              bootstrap: int = 0, ci: float = 0.95, lower: Sequence[str] = (),
              higher: Sequence[str] = (), corpus_path: str | Path | None = None,
              system_score: str = "auto", exclude_systems: Sequence[str] = (),
              compare: bool = False, method: str = "permutation", resamples: int = 1000,
              alpha: float = 0.05, raters: Sequence[str] = (), permutations: int = 1000,
              seed: int = 0, labels: Sequence[float] | None = None, average: str = "macro",
              replace_nans_with_zeros: bool = False, failed_as: str | FailedAs | None = None,
              log: Log | None = None, host: PluginHost | None = None,
              missing_bounds: bool = False, leave_systems_out: int = 0,
              system_bootstrap: int = 0, sequential: dict[str, Any] | None = None,
              views: Sequence[tuple[str, str]] = ()) -> MetaEvalResult:
    """Correlate metric columns of `scores` with each human column, as `judgebench meta-eval`
    does (same options, same results). `system_score` "auto" uses a metric's corpus scores
    at system level where it has them; `compare` ranks the metrics into significance
    clusters; `raters` (two or more columns) add the human ceiling. `labels`: the declared
    categories (kappa family) or values (Krippendorff's alpha); `average` ("macro" or
    "micro") and `replace_nans_with_zeros`: how groups are averaged (`meta_eval.levels`); a
    failed score counts as `failed_as` says (missing, min, max or a number;
    judgebench.tables.failed). A column's direction not given by a flag or the sidecar is its
    registered metric's in `host` (default: the installed plugins, built only then).
    `missing_bounds`: each statistic's Manski bounds over its missing
    cells and its tipping point (judgebench.services.missingness); `leave_systems_out` (k)
    and `system_bootstrap` (N): how often the conclusions change without k systems or over
    N system resamples (judgebench.services.robustness); `sequential` (order, batch,
    margin, top_k): when a study taking items in batches would have stopped
    (judgebench.services.sequential). `views`: several (level, grouping) pairs from one
    read of the table, their blocks in that order (default: `level`, `grouping`); a
    corpus-only metric is in the system-level views only. Bad input raises `InputError`
    naming the option."""
    log = log or (lambda _message: None)
    convention = parse_failed_as(failed_as, pairwise=False)
    statistics = tuple(statistics) or ("pearson",)
    views = list(dict.fromkeys(views)) or [(level, grouping)]
    if len(views) > 1 and (missing_bounds or leave_systems_out or system_bootstrap
                           or sequential is not None):
        raise InputError("takes one --level and one --grouping", field=(
            "--missing-bounds" if missing_bounds else "--sequential" if sequential is not None
            else "--system-sensitivity"))
    if sequential is not None:
        from judgebench.services.sequential import check

        check(statistics, level, grouping)
    for level, grouping in views:
        _check_options(statistics, level, grouping, epsilon, raters)
    domain = _check_declared(statistics, labels, average, replace_nans_with_zeros, compare,
                             method)
    use_corpus = system_score == "auto" and any(v[0] == "system" for v in views)
    cols = PreparedTable.read(scores, humans, metrics, raters=raters, lower=lower,
                              higher=higher, corpus_path=corpus_path, use_corpus=use_corpus,
                              exclude_systems=exclude_systems, failed_as=convention,
                              views=views, host=host, log=log)
    in_table = cols.in_table
    check_scales(cols.frame, statistics=statistics, humans=[*humans, *raters],
                 metrics=in_table, path=cols.where, labels=domain)
    names = [*dict.fromkeys([*humans, *raters, *in_table])]
    matrices = cols.matrices(names)
    given = cols.corpus_scores(matrices.systems) if use_corpus else {}
    on_scale = [s for s in statistics if get(s).on_scale]
    # Agreement and error statistics compare values on the human scale: never negated.
    raw = cols.matrices(names, oriented=False) if on_scale else matrices
    raw_given = cols.corpus_scores(raw.systems, oriented=False, columns=list(given))
    _log_setting(cols, given, matrices, humans, statistics, views, log)
    compare = compare and len(cols.metrics) > 1
    _check_compare(compare, method, statistics)
    blocks = []
    for level, grouping in views:
        chosen = (cols.metrics if level == "system" or len(views) == 1 else in_table)
        at_level = given if level == "system" else {}
        raw_at_level = raw_given if level == "system" else {}
        blocks += [_block(Task(human=human, statistic=statistic, level=level,
                               grouping=grouping, epsilon=epsilon, bootstrap=bootstrap, ci=ci,
                               seed=seed, permutations=permutations, compare=compare,
                               method=method, resamples=resamples, alpha=alpha,
                               raters=tuple(raters), every_pair=True, average=average,
                               replace_nans_with_zeros=replace_nans_with_zeros,
                               domain=domain if get(statistic).declared else None),
                          *((raw.columns, cols, raw_at_level) if statistic in on_scale
                            else (matrices.columns, cols, at_level)), log, chosen)
                   for human in humans for statistic in statistics]
    if missing_bounds:
        from judgebench.services.missingness import present_cells, with_bounds

        blocks = with_bounds(blocks, lambda s: raw.columns if s in on_scale
                             else matrices.columns,
                             present_cells(cols.frame, matrices.items, matrices.systems))
    if leave_systems_out or system_bootstrap:
        from judgebench.services.robustness import with_sensitivity

        if leave_systems_out < 0 or leave_systems_out > len(matrices.systems) - 2:
            raise InputError(f"leave 1 to {len(matrices.systems) - 2} of the "
                             f"{len(matrices.systems)} systems out", field="--leave-out")
        blocks = with_sensitivity(blocks, lambda s: raw.columns if s in on_scale
                                  else matrices.columns, list(matrices.systems),
                                  leave_out=leave_systems_out, bootstrap=system_bootstrap,
                                  seed=seed)
    if sequential is not None:
        from judgebench.services.sequential import with_sequential

        blocks = with_sequential(blocks, lambda s: matrices.columns, alpha=alpha, seed=seed,
                                 **sequential)
    from judgebench.services.repeats import repeats_rows

    repeats = repeats_rows(cols.table.sidecar, cols.frame, in_table, humans,
                           str(cols.table.path))
    return MetaEvalResult(blocks, compare, len(matrices.items), len(matrices.systems),
                          convention, repeats)


def _check_options(statistics: Sequence[str], level: str, grouping: str, epsilon: float,
                   raters: Sequence[str]) -> None:
    from meta_eval.levels import check_options
    from meta_eval.statistics import STATISTICS

    for name in statistics:
        try:
            check_options(name, level, grouping)
        except ValueError as exc:
            hint = "" if name in STATISTICS else did_you_mean(name, STATISTICS)
            raise InputError(f"{exc}{hint}", field="--statistic") from None
    if epsilon < 0:
        raise InputError("must be >= 0", field="--epsilon")
    if raters and len(raters) < 2:
        raise InputError("the human ceiling needs two or more --rater columns",
                         field="--rater")


def _check_declared(statistics: Sequence[str], labels: Sequence[float] | None,
                    average: str, replace_nans_with_zeros: bool, compare: bool, method: str
                    ) -> tuple[float, ...] | None:
    """The declared labels, sorted; InputError for labels no statistic takes, or an averaging
    a statistic cannot take."""
    from meta_eval.levels import check_averaging

    for name in statistics:
        try:
            check_averaging(get(name), average, replace_nans_with_zeros)
        except ValueError as exc:
            field = "--average" if average != "macro" else "--replace-nans-with-zeros"
            raise InputError(str(exc), field=field) from None
        if compare and get(name).swaps == "pairs" and (
                average != "macro" or replace_nans_with_zeros):
            raise InputError(f"--compare tests {name} by swapping pair outcomes, which "
                             "weights the groups itself: use the macro average without "
                             "--replace-nans-with-zeros", field="--compare")
    if compare and method == "williams" and (average != "macro" or replace_nans_with_zeros):
        raise InputError("Williams' test compares one Pearson r each: it takes no "
                         "--average micro or --replace-nans-with-zeros", field="--test")
    if labels is None:
        return None
    if not any(get(name).declared for name in statistics):
        raise InputError("declares the categories of the kappa family, ckld and "
                         "wasserstein and the values of Krippendorff's alpha; ask for one "
                         "of them with --statistic",
                         field="--labels")
    return tuple(sorted(set(float(v) for v in labels)))


def _log_setting(cols: PreparedTable, given: dict[str, FloatArray], matrices: Any,
                 humans: Sequence[str], statistics: Sequence[str],
                 views: Sequence[tuple[str, str]], log: Log) -> None:
    flipped = [c for c in cols.metrics if not cols.infos[c].higher_is_better]
    if flipped:
        log(f"lower is better, negated: {', '.join(flipped)}")
    if given:
        log(f"system scores are corpus scores for: {', '.join(given)}")
    log(f"{len(matrices.items)} items x {len(matrices.systems)} systems; "
        f"{len(cols.metrics)} metric(s) x {len(humans)} human column(s) x "
        f"{len(statistics)} statistic(s), "
        + "; ".join(f"level {level}, grouping {grouping}" for level, grouping in views))


def _check_compare(compare: bool, method: str, statistics: Sequence[str]) -> None:
    if not compare:
        return
    if method == "williams" and set(statistics) != {"pearson"}:
        raise InputError("Williams' test compares Pearson correlations; use "
                         "--test permutation", field="--test")


def _block(task: Task, matrices: dict[str, FloatArray], cols: PreparedTable,
           given: dict[str, FloatArray], log: Log, metrics: Sequence[str]) -> MetaEvalBlock:
    def progress(a: str, b: str) -> None:
        log(f"{task.human} {task.statistic}: {a} vs {b}")

    try:
        result = task.run(matrices, list(metrics), given=given, progress=progress)
    except ComparisonError as exc:
        raise InputError(str(exc), field="--compare") from None
    categorical = get(task.statistic).categorical
    rows: list[Row] = [MetricRow(task.human, o, cols.infos[o.metric], task,
                                 _confusion(matrices, task.human, o.metric)
                                 if categorical and o.metric in matrices else None,
                                 _pair_tests(result, o.metric),
                                 cols.failed_as, ((cols.corpus_failed if o.given
                                                   else cols.failed) or {}).get(o.metric))
                       for o in result.best_first()]
    if result.ceiling is not None:
        rows.append(CeilingRow(task, result.ceiling))
    return MetaEvalBlock(task, result, rows)


def _pair_tests(result: TaskResult, metric: str) -> tuple[PairTest, ...]:
    """The tests of `metric` against each metric ranked below it, in rank order."""
    if result.ranking is None:
        return ()
    tests = result.ranking.tests
    return tuple(PairTest(m.metric, tests[(metric, m.metric)]) for m in result.ranking.metrics
                 if (metric, m.metric) in tests)


def _confusion(matrices: dict[str, FloatArray], human: str, metric: str) -> dict[str, Any]:
    from meta_eval.agreement import confusion_table

    return confusion_table(human=matrices[human], metric=matrices[metric]).to_dict()
