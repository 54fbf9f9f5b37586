"""The Python API: one function per command, giving the command's numbers.

    import judgebench

    scores = judgebench.score("examples/summeval-sample.jsonl", ["lexical.chrf"])
    result = judgebench.meta_eval(scores, humans=["human.relevance"], level="system",
                                  statistics=["kendall"])
    result.to_pandas()      # the rows `judgebench meta-eval` prints
    result.to_json()        # what `judgebench meta-eval --json` prints

Every function that reads a table takes a path, a DataFrame, or the result of `score`
(whose corpus scores and column directions travel with it, as the `.meta.json` sidecar
travels beside a file). Every result has `to_dict()`, `to_json()` and `to_pandas()`
(`judgebench.results.Result`); a function's keyword options are the command's options, spelt
as in the service it calls (`judgebench.services.*`), and bad input raises
`judgebench.errors.InputError` naming the file (or `<DataFrame>`), the row and the field.
Functions keep no state between calls: calling one twice gives the same result twice.

The functions that use plugins (score, meta_eval, audit, aggregate, combine, items,
estimate, escalate, fit, bench, suites, meta_eval_spans: metrics, backends, rules, sentinels,
probes, suites, a column's registered direction) take `host=`, keyword only: a
`judgebench.plugins.PluginHost` (`build_host(["my_plugin.py"])` adds local plugins). Without
one, each call builds its own from the installed plugins (10 to 25 ms once the plugins are
imported); meta_eval builds it only for a column whose direction neither a flag nor the
sidecar gives. The others (meta_eval_pairwise, meta_eval_reliability, compare_judges, diff,
label_sample, runs, logs, and the label functions: define_criterion, save_label,
current_labels, ... of `judgebench.engine.labels`) use no plugin.

This module is the public surface. `judgebench.services` holds what these functions call;
it is internal: its modules and signatures may change in any release (CHANGELOG.md).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeAlias, TypeVar

import judgebench.engine.labels as _labels
import judgebench.services.aggregate as _aggregate
import judgebench.services.audit as _audit
import judgebench.services.bench as _bench
import judgebench.services.combine as _combine
import judgebench.services.compare_judges as _compare_judges
import judgebench.services.diff as _diff
import judgebench.services.escalate as _escalate
import judgebench.services.estimate as _estimate
import judgebench.services.items as _items
import judgebench.services.label_sample as _label_sample
import judgebench.services.meta_eval as _meta_eval
import judgebench.services.pairwise as _pairwise
import judgebench.services.reliability as _reliability
import judgebench.services.runs as _runs
import judgebench.services.score as _score
import judgebench.services.spans as _spans
from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.services.score import ScoreResult
from judgebench.tables.scores_table import SIDECAR_ATTR

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from judgebench.services.fit import FitResult
    from judgebench.services.meta_eval import MetaEvalResult
    from judgebench.tables.failed import FailedAs

__all__ = ["aggregate", "audit", "bench", "combine", "compare_judges", "current_labels",
           "define_criterion", "diff", "escalate", "estimate", "fit", "get_criterion",
           "get_sample",
           "items", "label_history", "label_sample", "labelled_items", "logs", "meta_eval",
           "meta_eval_pairwise", "meta_eval_reliability", "meta_eval_spans", "record_sample",
           "runs", "save_label", "save_labels", "score", "suites", "withdraw_label"]

#: What the table-reading functions accept.
Table: TypeAlias = "str | Path | pd.DataFrame | ScoreResult"

P = ParamSpec("P")
R = TypeVar("R")

#: The name a DataFrame goes by in error messages.
IN_MEMORY = "<DataFrame>"


def _frame_or_path(table: Any) -> Any:
    """A path stays a path, a DataFrame a DataFrame; a `ScoreResult` becomes its table (with
    its sidecar in attrs)."""
    return table.to_frame() if isinstance(table, ScoreResult) else table


@contextmanager
def _as_path(table: Any) -> Iterator[Any]:
    """`table` as a file for a service that reads files only: a DataFrame (or a
    `ScoreResult`) is written to a temporary CSV, with its sidecar beside it, for the time of
    the call; an input error about that file names `<DataFrame>` and the frame's row."""
    import pandas as pd

    table = _frame_or_path(table)
    if not isinstance(table, pd.DataFrame):
        yield table
        return
    with tempfile.TemporaryDirectory(prefix="judgebench-") as folder:
        path = Path(folder) / "DataFrame.csv"
        table.to_csv(path, index=False)
        sidecar = table.attrs.get(SIDECAR_ATTR)
        if sidecar is not None:
            Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
        try:
            yield path
        except InputError as exc:
            if exc.path is None or not str(exc.path).startswith(str(path)):
                raise
            row = exc.row if exc.line is None else exc.line - 1  # line 1 is the CSV header
            raise InputError(str(exc.detail).replace(str(path), IN_MEMORY), path=IN_MEMORY,
                             row=row, field=exc.field) from None


def _reads_file(service: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Table, P], R]:
    """`service`, taking a DataFrame or a `ScoreResult` where it takes a file's path."""

    @functools.wraps(service)
    def call(table: Table, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with _as_path(table) as path:
            result = service(path, *args, **kwargs)
        if path is not table:
            _name_the_frame(result, str(path))
        return result

    return call


def _name_the_frame(result: Any, path: str) -> None:
    """Where `result` names the temporary file a frame was read from, name `<DataFrame>`."""
    if not dataclasses.is_dataclass(result):
        return
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if isinstance(value, str | Path) and str(value) == path:
            object.__setattr__(result, field.name, IN_MEMORY)  # frozen results too
        elif isinstance(value, dict):
            value.update({k: IN_MEMORY for k, v in value.items()
                          if isinstance(v, str | Path) and str(v) == path})


def _reads_frame(service: Callable[Concatenate[Any, P], R]) -> Callable[Concatenate[Table, P], R]:
    """`service`, which reads paths and DataFrames, taking a `ScoreResult` too."""

    @functools.wraps(service)
    def call(table: Table, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return service(_frame_or_path(table), *args, **kwargs)

    return call


score = _score.score


def meta_eval(scores: Table, *, humans: Sequence[str], metrics: Sequence[str] = (),
              level: str = "segment", grouping: str = "none",
              statistics: Sequence[str] = ("pearson",), epsilon: float = 0.0,
              bootstrap: int = 0, ci: float = 0.95, lower: Sequence[str] = (),
              higher: Sequence[str] = (), corpus_path: str | Path | None = None,
              system_score: str = "auto", exclude_systems: Sequence[str] = (),
              compare: bool = False, method: str = "permutation", resamples: int = 1000,
              alpha: float = 0.05, raters: Sequence[str] = (), permutations: int = 1000,
              seed: int = 0, labels: Sequence[float] | None = None, average: str = "macro",
              replace_nans_with_zeros: bool = False, failed_as: str | FailedAs | None = None,
              log: Callable[[str], None] | None = None, host: PluginHost | None = None,
              missing_bounds: bool = False, leave_systems_out: int = 0,
              system_bootstrap: int = 0, sequential: dict[str, Any] | None = None,
              views: Sequence[tuple[str, str]] = (),
              interval: str = "bootstrap", alternative: str = "greater",
              absolute: bool = False) -> MetaEvalResult:
    """Correlate metric columns of `scores` with each human column, as `judgebench meta-eval`
    does (same options, same results): the table read once
    (`judgebench.tables.prepared.PreparedTable`), the options made a `meta_eval.task.TaskSet`
    (`services.meta_eval.task_set`), and `services.meta_eval.meta_eval` runs one over the
    other. `system_score` "auto" uses a metric's corpus scores at system level where it has
    them; `compare` ranks the metrics into significance clusters; `raters` (two or more
    columns) add the human ceiling; `labels`: the declared categories or values; a failed
    score counts as `failed_as` says (missing, min, max or a number). A column's direction
    not given by a flag or the sidecar is its registered metric's in `host` (default: the
    installed plugins). `views`: several (level, grouping) pairs from one read of the table
    (default: `level`, `grouping`). `interval`: "bootstrap" (with `bootstrap` > 0),
    "analytic" (Fisher z, Bonett-Wright, Fieller: `meta_eval.analytic`) or "both".
    `method` "williams" or "steiger" (pearson, spearman): `alternative` "greater" (one-sided,
    the default) or "two-sided", `absolute` compares |r|. Bad input raises `InputError`
    naming the option."""
    return _meta_eval.from_options(
        _frame_or_path(scores), humans=humans, metrics=metrics, level=level,
        grouping=grouping, statistics=statistics, epsilon=epsilon, bootstrap=bootstrap, ci=ci,
        lower=lower, higher=higher, corpus_path=corpus_path, system_score=system_score,
        exclude_systems=exclude_systems, compare=compare, method=method, resamples=resamples,
        alpha=alpha, raters=raters, permutations=permutations, seed=seed, labels=labels,
        average=average, replace_nans_with_zeros=replace_nans_with_zeros, failed_as=failed_as,
        log=log, host=host, missing_bounds=missing_bounds,
        leave_systems_out=leave_systems_out, system_bootstrap=system_bootstrap,
        sequential=sequential, views=views, interval=interval, alternative=alternative,
        absolute=absolute)


meta_eval_pairwise = _reads_frame(_pairwise.pairwise_meta_eval)
compare_judges = _reads_frame(_compare_judges.compare_judges)
audit = _reads_file(_audit.audit)
aggregate = _reads_file(_aggregate.aggregate)
combine = _reads_file(_combine.combine)
estimate = _reads_frame(_estimate.estimate)
escalate = _reads_frame(_escalate.escalate)
items = _reads_file(_items.items)
runs = _runs.runs
logs = _runs.logs
#: `judgebench diff A B`: two runs (scores tables or stores) compared column by column
diff = _diff.diff
#: `judgebench meta-eval spans SCORES SPANS`: a judge's stored error spans against people's
meta_eval_spans = _reads_file(_spans.span_meta_eval)
#: `judgebench meta-eval reliability TABLE`: draws of a judge or raters against themselves
meta_eval_reliability = _reads_file(_reliability.reliability)
#: which rows of a scores or pairwise table to give people to label (Python only)
label_sample = _reads_frame(_label_sample.label_sample)
# people's labels in a store (`judgebench labels`, the labelling page)
define_criterion = _labels.define_criterion
get_criterion = _labels.get_criterion
save_label = _labels.save_label
save_labels = _labels.save_labels
withdraw_label = _labels.withdraw_label
current_labels = _labels.current_labels
label_history = _labels.label_history
labelled_items = _labels.labelled_items
record_sample = _labels.record_sample
get_sample = _labels.get_sample


def fit(data: str | Path, judge: str, *, human: str, search: Sequence[str] = ("few-shot",),
        shots: Sequence[int] = (1, 2), draws: int = 4, folds: int = 4,
        folds_over: str = "items", statistic: str = "pearson", bootstrap: int = 1000,
        seed: int = 0, limit: int | None = None, raters: Sequence[str] = (),
        criteria_file: str | Path | None = None, scales: Sequence[tuple[int, int]] = (),
        panel_judges: Sequence[str] = (), panel_max: int = 3, panels: Sequence[str] = (),
        panel_combine: Sequence[str] = ("mean", "majority"),
        rewrite_with: str | None = None, rewrites: int = 2, rewrite_rows: int = 8,
        output: str | Path | None = None, store: str | Path | None = None,
        cache: str | Path | None = None, budget_usd: float | None = None,
        allow_unknown_cost: bool = False, host: PluginHost | None = None) -> FitResult:
    """`judgebench fit`: `judge` (a judge.rubric spec, or @FILE) fitted to the human score
    `human` of the samples file `data` (`human.H`, or `store:CRITERION` read from `store`),
    reported on a held-out fold; `output` gets the chosen judge as TOML (`score -m @FILE`).
    The keywords are the command's options (`scales` as (min, max) pairs). Without `store`,
    scores are kept in memory only (the judge cache still answers a second call); paths are
    checked first, as the command checks them (`output` may not be an input)."""
    from judgebench.engine.runtime import Budget, RunSettings, check_budget_usd
    from judgebench.engine.store import Store
    from judgebench.services.fit import FitSettings
    from judgebench.services.fit import fit as fit_service
    from judgebench.spec import spec_file
    from judgebench.tables import destinations

    path = Path(data)
    out = None if output is None else Path(output)
    wordings = None if criteria_file is None else Path(criteria_file)
    destinations.check([
        destinations.read("data", path),
        *([destinations.read("judge @FILE", given)]
          if (given := spec_file(judge)) is not None else []),
        *([destinations.read("criteria_file", wordings)] if wordings is not None else []),
        *([destinations.written("output", out)] if out is not None else []),
        *([destinations.database("store", store)] if store is not None else []),
        destinations.judge_cache("cache", cache),
    ])
    settings = FitSettings(human=human, search=tuple(search), shots=tuple(shots), draws=draws,
                           folds=folds, seed=seed, statistic=statistic, bootstrap=bootstrap,
                           limit=limit, folds_over=folds_over, raters=tuple(raters),
                           store=None if store is None else str(store),
                           criteria_file=None if wordings is None else str(wordings),
                           scales=tuple((int(a), int(b)) for a, b in scales),
                           panel_judges=tuple(panel_judges), panel_max=panel_max,
                           panels=tuple(panels),
                           panel_combine=tuple(panel_combine), rewrite_with=rewrite_with,
                           rewrites=rewrites, rewrite_rows=rewrite_rows)
    run_settings = RunSettings(budget=Budget(limit_usd=check_budget_usd(budget_usd),
                                             allow_unknown_cost=allow_unknown_cost),
                               cache_path=None if cache is None else Path(cache))
    with Store(store if store is not None else ":memory:") as db:
        return fit_service(path, judge, settings=settings, store=db, run_settings=run_settings,
                           output=out, host=host)


def bench(specs: str | list[str], suites: str = "all", *, suite_paths: tuple[str, ...] = (),
          store: str | Path | None = None, resume: bool = False, limit: int | None = None,
          workers: int = 1, budget_usd: float | None = None, bootstrap: int = 1000,
          seed: int = 0, alpha: float = 0.05, workdir: str | Path | None = None,
          host: PluginHost | None = None) -> _bench.BenchResult:
    """`judgebench bench SPEC... --suite SUITES`: each suite's card (`BenchResult.cards`;
    `to_dict()` is `--json`). Without `store`, the scores go to a temporary store."""
    from judgebench.plugins import build_host
    from judgebench.suite import resolve

    host = host or build_host()
    chosen = resolve(suites, suite_paths, host=host)
    with tempfile.TemporaryDirectory(prefix="judgebench-") as folder:
        options = _bench.ScoreOptions(store=Path(store) if store is not None
                                      else Path(folder) / "runs.db", resume=resume,
                                      budget_usd=budget_usd, workers=workers, limit=limit)
        return _bench.bench([specs] if isinstance(specs, str) else list(specs), chosen,
                            options=options, host=host, bootstrap=bootstrap, seed=seed,
                            alpha=alpha, workdir=workdir)


@dataclasses.dataclass(frozen=True)
class SuitesResult(Result):
    """`judgebench suites`: the suites (`name` None), one suite's card, or the files
    `export` wrote (`exported`: file name -> path)."""

    suites: list[dict[str, Any]]
    card: dict[str, Any] | None = None
    exported: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> Any:
        """What `judgebench suites --json` prints: the listing, or the suite's card; with
        `export`, the files written."""
        if self.exported:
            return self.exported
        return self.card if self.card is not None else self.suites


def suites(name: str | None = None, *, suite_paths: Sequence[str | Path] = (),
           export: str | Path | None = None, force: bool = False,
           host: PluginHost | None = None) -> SuitesResult:
    """`judgebench suites [NAME] [--suite-path DIR] [--export DIR]`: the installed suites
    and those under `suite_paths` (size, criteria, protocols, licence), or suite `name`'s
    card; with `export`, its samples (score input) and human table written to that folder
    (files already there refused unless `force`). Every suite's checksums are verified."""
    from judgebench.plugins import build_host
    from judgebench.render.bench import listing, suite_card
    from judgebench.suite import available, load_suite, resolve
    from judgebench.suite import export as export_suite

    host = host or build_host()
    if name is None:
        if export is not None:
            raise InputError("--export writes one suite: give its NAME", field="--export")
        found = available(suite_paths, host=host)
        return SuitesResult(listing([load_suite(*found[n]) for n in sorted(found)]))
    (suite,) = resolve(name, suite_paths, host=host)
    listed = listing([suite])
    if export is not None:
        written = export_suite(suite, export, force=force)
        return SuitesResult(listed, exported={k: str(v) for k, v in written.items()})
    return SuitesResult(listed, card=suite_card(suite))
