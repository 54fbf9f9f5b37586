"""The meta-eval service: what `judgebench meta-eval` computes, as a Python function.

`meta_eval(table, tasks)` runs a `meta_eval.task.TaskSet` (one task per view, human column and
statistic: `task_set`) over the score matrices of a `PreparedTable` (a wide scores table read
once, every metric column oriented so that higher is better) and returns a `MetaEvalResult`:
typed rows whose `to_dict()` are the objects `judgebench meta-eval --json` prints, and
`to_frame()`. `from_options(scores, humans=[...], ...)` is the keyword form
(`judgebench.api.meta_eval`, the command).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
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
from meta_eval.significance import CLOSED_FORM, CLOSED_FORM_STATISTICS, TEST_NAMES
from meta_eval.statistics import get
from meta_eval.task import INTERVALS, ComparisonError, Task, TaskResult, TaskSet

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray

Log = Callable[[str], None]
__all__ = ["CEILING", "CI_NOTE", "COMPARE_NOTE", "CeilingRow", "MetaEvalBlock",
           "MetaEvalResult", "MetricRow", "PairTest", "Row", "check_analyses", "from_options",
           "meta_eval", "task_set"]


def task_set(*, humans: Sequence[str], views: Sequence[tuple[str, str]],
             statistics: Sequence[str] = ("pearson",), epsilon: float = 0.0,
             bootstrap: int = 0, ci: float = 0.95, compare: bool = False,
             method: str = "permutation", resamples: int = 1000, alpha: float = 0.05,
             raters: Sequence[str] = (), permutations: int = 1000, seed: int = 0,
             labels: Sequence[float] | None = None, average: str = "macro",
             replace_nans_with_zeros: bool = False, interval: str = "bootstrap",
             alternative: str = "greater", absolute: bool = False) -> TaskSet:
    """The tasks of a meta-evaluation, checked: one per (view, human column, statistic), in
    that order. `labels`: the declared categories (kappa family) or values (Krippendorff's
    alpha) of the statistics that take them. Bad options raise `InputError` naming the
    option. `alternative` ("greater" or "two-sided") and `absolute` (|r|): the williams and
    steiger tests' conventions (`meta_eval.analytic`)."""
    statistics = tuple(statistics) or ("pearson",)
    _check_interval(interval, bootstrap)
    _check_convention(method, alternative, absolute)
    for level, grouping in views:
        _check_options(statistics, level, grouping, epsilon, raters)
    domain = _check_declared(statistics, labels, average, replace_nans_with_zeros, compare,
                             method)
    base = Task(human=humans[0] if humans else "", epsilon=epsilon, bootstrap=bootstrap,
                ci=ci, seed=seed, permutations=permutations, compare=compare, method=method,
                resamples=resamples, alpha=alpha, raters=tuple(raters), every_pair=True,
                average=average, replace_nans_with_zeros=replace_nans_with_zeros,
                interval=interval, alternative=alternative, absolute=absolute)
    tasks = TaskSet.product(base, view=list(views), human=list(humans), statistic=statistics)
    return TaskSet(tuple(replace(t, domain=domain if get(t.statistic).declared else None)
                         for t in tasks))


def from_options(scores: str | Path | pd.DataFrame, *, humans: Sequence[str],
                 metrics: Sequence[str] = (), level: str = "segment", grouping: str = "none",
                 statistics: Sequence[str] = ("pearson",), epsilon: float = 0.0,
                 bootstrap: int = 0, ci: float = 0.95, lower: Sequence[str] = (),
                 higher: Sequence[str] = (), corpus_path: str | Path | None = None,
                 system_score: str = "auto", exclude_systems: Sequence[str] = (),
                 compare: bool = False, method: str = "permutation", resamples: int = 1000,
                 alpha: float = 0.05, raters: Sequence[str] = (), permutations: int = 1000,
                 seed: int = 0, labels: Sequence[float] | None = None,
                 average: str = "macro", replace_nans_with_zeros: bool = False,
                 failed_as: str | FailedAs | None = None, log: Log | None = None,
                 host: PluginHost | None = None, missing_bounds: bool = False,
                 leave_systems_out: int = 0, system_bootstrap: int = 0,
                 sequential: dict[str, Any] | None = None,
                 views: Sequence[tuple[str, str]] = (),
                 interval: str = "bootstrap", alternative: str = "greater",
                 absolute: bool = False) -> MetaEvalResult:
    """The keyword form (`judgebench.api.meta_eval`, the `meta-eval` command): the options
    checked and made a `TaskSet` (`task_set`), the table read once for them
    (`PreparedTable.read`), and `meta_eval` run over both."""
    convention = parse_failed_as(failed_as, pairwise=False)
    views = list(dict.fromkeys(views)) or [(level, grouping)]
    check_analyses(views, tuple(statistics) or ("pearson",), missing_bounds=missing_bounds,
                   leave_systems_out=leave_systems_out, system_bootstrap=system_bootstrap,
                   sequential=sequential)
    tasks = task_set(
        humans=humans, views=views, statistics=statistics, epsilon=epsilon,
        bootstrap=bootstrap, ci=ci, compare=compare, method=method, resamples=resamples,
        alpha=alpha, raters=raters, permutations=permutations, seed=seed, labels=labels,
        average=average, replace_nans_with_zeros=replace_nans_with_zeros, interval=interval,
        alternative=alternative, absolute=absolute)
    table = PreparedTable.read(
        scores, humans, metrics, raters=raters, lower=lower, higher=higher,
        corpus_path=corpus_path,
        use_corpus=system_score == "auto" and any(v[0] == "system" for v in views),
        exclude_systems=exclude_systems, failed_as=convention, views=views, host=host,
        log=log)
    return meta_eval(table, tasks, missing_bounds=missing_bounds,
                     leave_systems_out=leave_systems_out, system_bootstrap=system_bootstrap,
                     sequential=sequential, log=log)



def check_analyses(views: Sequence[tuple[str, str]], statistics: Sequence[str], *,
                   missing_bounds: bool = False, leave_systems_out: int = 0,
                   system_bootstrap: int = 0, sequential: dict[str, Any] | None = None) -> None:
    """The analyses added to the rows (missing bounds, system sensitivity, sequential) take
    one view; InputError naming the option otherwise."""
    if len(views) > 1 and (missing_bounds or leave_systems_out or system_bootstrap
                           or sequential is not None):
        raise InputError("takes one --level and one --grouping", field=(
            "--missing-bounds" if missing_bounds else "--sequential" if sequential is not None
            else "--system-sensitivity"))
    if sequential is not None and views:
        from judgebench.services.sequential import check

        check(statistics, *views[0])


def meta_eval(table: PreparedTable, tasks: TaskSet, *, missing_bounds: bool = False,
              leave_systems_out: int = 0, system_bootstrap: int = 0,
              sequential: dict[str, Any] | None = None, log: Log | None = None
              ) -> MetaEvalResult:
    """Run `tasks` (`task_set`) over the score matrices of `table` (a `PreparedTable`, read
    for the tasks' human and rater columns and views), as `judgebench meta-eval` does. At
    system level a metric with corpus scores is scored by them when the table was read with
    `use_corpus`; with `compare` (and two or more metrics) the metrics are ranked into
    significance clusters; `raters` add the human ceiling. Agreement and error statistics
    compare the values on the human scale, every other statistic the columns oriented so that
    higher is better. `missing_bounds`: each statistic's Manski bounds over its missing cells
    and its tipping point (judgebench.services.missingness); `leave_systems_out` (k) and
    `system_bootstrap` (N): how often the conclusions change without k systems or over N
    system resamples (judgebench.services.robustness); `sequential` (order, batch, margin,
    top_k): when a study taking items in batches would have stopped
    (judgebench.services.sequential). Bad input raises `InputError` naming the option."""
    log = log or (lambda _message: None)
    views, statistics = tasks.views, tasks.distinct("statistic")
    humans = tasks.distinct("human")
    first = next(iter(tasks), Task(human=""))
    raters = first.raters
    check_analyses(views, statistics, missing_bounds=missing_bounds,
                   leave_systems_out=leave_systems_out, system_bootstrap=system_bootstrap,
                   sequential=sequential)
    domain = next((t.domain for t in tasks if t.domain is not None), None)
    in_table = table.in_table
    check_scales(table.frame, statistics=statistics, humans=[*humans, *raters],
                 metrics=in_table, path=table.where, labels=domain)
    names = [*dict.fromkeys([*humans, *raters, *in_table])]
    matrices = table.matrices(names)
    given = table.corpus_scores(matrices.systems) if table.use_corpus else {}
    on_scale = [s for s in statistics if get(s).on_scale]
    # Agreement and error statistics compare values on the human scale: never negated.
    raw = table.matrices(names, oriented=False) if on_scale else matrices
    raw_given = table.corpus_scores(raw.systems, oriented=False, columns=list(given))
    _log_setting(table, given, matrices, humans, statistics, views, log)
    compare = first.compare and len(table.metrics) > 1
    if not compare:
        tasks = tasks.replace(compare=False)
    _check_compare(compare, first.method, statistics)
    blocks = []
    for task in tasks:
        chosen = (table.metrics if task.level == "system" or len(views) == 1 else in_table)
        at_level = given if task.level == "system" else {}
        raw_at_level = raw_given if task.level == "system" else {}
        blocks.append(_block(task, *((raw.columns, table, raw_at_level)
                                     if task.statistic in on_scale
                                     else (matrices.columns, table, at_level)), log, chosen))
    if missing_bounds:
        from judgebench.services.missingness import present_cells, with_bounds

        blocks = with_bounds(blocks, lambda s: raw.columns if s in on_scale
                             else matrices.columns,
                             present_cells(table.frame, matrices.items, matrices.systems))
    if leave_systems_out or system_bootstrap:
        from judgebench.services.robustness import with_sensitivity

        if leave_systems_out < 0 or leave_systems_out > len(matrices.systems) - 2:
            raise InputError(f"leave 1 to {len(matrices.systems) - 2} of the "
                             f"{len(matrices.systems)} systems out", field="--leave-out")
        blocks = with_sensitivity(blocks, lambda s: raw.columns if s in on_scale
                                  else matrices.columns, list(matrices.systems),
                                  leave_out=leave_systems_out, bootstrap=system_bootstrap,
                                  seed=first.seed)
    if sequential is not None:
        from judgebench.services.sequential import with_sequential

        blocks = with_sequential(blocks, lambda s: matrices.columns, alpha=first.alpha,
                                 seed=first.seed, **sequential)
    from judgebench.services.repeats import repeats_rows

    repeats = repeats_rows(table.sidecar, table.frame, in_table, humans, table.where)
    return MetaEvalResult(blocks, compare, len(matrices.items), len(matrices.systems),
                          table.failed_as, repeats)


def _check_interval(interval: str, bootstrap: int) -> None:
    """`--interval`: one of INTERVALS; "analytic" takes no --bootstrap, "both" needs one."""
    if interval not in INTERVALS:
        raise InputError(f"unknown interval {interval!r}; use {', '.join(INTERVALS)}",
                         field="--interval")
    if interval == "analytic" and bootstrap:
        raise InputError("--interval analytic reports no bootstrap interval: drop --bootstrap "
                         "or use --interval both", field="--interval")
    if interval == "both" and not bootstrap:
        raise InputError("--interval both needs --bootstrap N (N > 0) for the bootstrap "
                         "interval", field="--interval")


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
    if compare and method in CLOSED_FORM and (average != "macro" or replace_nans_with_zeros):
        raise InputError(f"{TEST_NAMES[method]} test compares one correlation each: it takes "
                         "no --average micro or --replace-nans-with-zeros", field="--test")
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
    other = [s for s in statistics if s not in CLOSED_FORM_STATISTICS]
    if method in CLOSED_FORM and other:
        raise InputError(f"{TEST_NAMES[method]} test compares pearson or spearman "
                         f"correlations, not {', '.join(other)}; use --test permutation",
                         field="--test")


def _check_convention(method: str, alternative: str, absolute: bool) -> None:
    """--williams-sided and --compare-abs: conventions of the williams and steiger tests
    only (the permutation test is one-sided on the signed statistic)."""
    if alternative not in ("greater", "two-sided"):
        raise InputError(f"unknown sides {alternative!r}; use one or two",
                         field="--williams-sided")
    if method not in CLOSED_FORM and (alternative != "greater" or absolute):
        raise InputError("the permutation test is one-sided on the signed statistic; "
                         "use --test williams or --test steiger",
                         field="--compare-abs" if absolute else "--williams-sided")


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
