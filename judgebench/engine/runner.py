"""The scoring run: metrics over samples, in batches, into the store, out as a wide table.

Order of work: a first read of every sample (`survey`: validation, duplicates, which fields
are missing where, the human columns), then build every metric from its spec and check every
required field (nothing runs if one is missing), then, chunk by chunk over a second read, per
metric score the samples the store does not already hold (resume), committing each batch (each
sample, for a metric that streams its results: `Metric.score_stream`), and write that chunk's
rows of the wide table; last, corpus-level scores per system. The table is built from the
store, so a resumed run and a fresh one produce the same table.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from judgebench.engine import progress_line
from judgebench.engine.judge_cache import REPLAYS
from judgebench.engine.pairwise_table import build_pairwise_table, check_shape, describe
from judgebench.engine.runtime import BudgetExceeded, RunSettings, current, running
from judgebench.engine.scoring import (
    PreparedMetric,
    failure_reason,
    further_draws,
    one_by_one,
    plan_repeats,
    prepare_metrics,
    score_batch,
    score_streamed,
)
from judgebench.engine.store import (
    FAILED_STATUSES,
    FINAL_STATUSES,
    RunAbout,
    RunEnd,
    RunOutcome,
    SampleKey,
    Store,
)
from judgebench.engine.survey import Survey, key_bytes, majority, sample_hash, survey
from judgebench.errors import InputError, JudgebenchError
from judgebench.metric import STATISTICS, Metric, add_statistics, outcome_of
from judgebench.models import CorpusScore, Outcome, Sample, Score, Status
from judgebench.redact import redact
from judgebench.spec import MetricSpec

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.engine.pool import BatchScheduler, SchedulerFactory, TimeEstimate
    from judgebench.plugins import PluginHost


#: Distinct failure reasons kept per column; the rest are counted under one "other reasons".
MAX_REASONS = 100
OTHER_REASONS = "(other reasons)"


@dataclass
class RunResult:
    metrics: list[PreparedMetric]
    corpus: list[CorpusScore] = field(default_factory=list)
    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    computed: int = 0
    reused: int = 0
    rows: int = 0
    estimates: dict[str, dict[str, Any]] = field(default_factory=dict)
    pairwise: bool = False  # the table is the pairwise one (judgebench.engine.pairwise_table)
    #: Per column, the failed scores of the table by (status, reason), corpus scores included.
    failures: dict[str, Counter[tuple[str, str]]] = field(default_factory=dict)
    #: The `runs` row of this run in the store (None for a dry run).
    run_id: int | None = None
    #: The rows chosen from the input (`--limit`/`--sample`), None for all of them.
    selection: dict[str, Any] | None = None
    #: Judge answers replayed from the judge cache, and requests sent to a model, in this
    #: process (the judges on Ray actors are not counted).
    cached_answers: int = 0
    sent_calls: int = 0
    #: The store the run wrote (its absolute path; ":memory:"): the sidecar names it where
    #: a column was drawn more than once (`score --repeats`), for meta-eval to read the draws.
    store_path: str = ":memory:"

    def count_failures(self, column: str, scores: Iterable[Score | CorpusScore]) -> None:
        found = self.failures.setdefault(column, Counter())
        for score in scores:
            if score.status in FAILED_STATUSES:
                key = (str(score.status), score.reason or "")
                if key not in found and len(found) >= MAX_REASONS:
                    key = (str(score.status), OTHER_REASONS)
                found[key] += 1

    @property
    def failed(self) -> int:
        """How many scores failed (`FAILED_STATUSES`), over every column."""
        return sum(sum(found.values()) for found in self.failures.values())

    def reasons(self, column: str) -> list[dict[str, Any]]:
        """The column's failures, most frequent first: status, reason, count."""
        found = self.failures.get(column, Counter())
        return [{"status": status, "reason": reason, "count": n}
                for (status, reason), n in sorted(found.items(), key=lambda e: (-e[1], e[0]))]

    def summary(self) -> dict[str, Any]:
        """Column -> metric, signature, direction, level and status counts, and every corpus
        score: the `.meta.json` sidecar, where meta-eval, audit and aggregate find a
        column's direction and its system scores."""
        summary = {
            "columns": {
                p.column: {
                    "metric": p.metric.info.name,
                    "signature": p.signature,
                    "higher_is_better": p.metric.info.higher_is_better,
                    "level": p.metric.info.level,
                    "has_corpus": p.corpus_level,
                    "repeats": p.repeats,
                    **({"repeats_cell": p.cell} if p.repeats > 1 else {}),
                    "statuses": dict(self.statuses.get(p.column, {})),
                }
                for p in self.metrics
            },
            "corpus": [c.model_dump(mode="json") for c in self.corpus],
            "computed": self.computed,
            "reused": self.reused,
            "rows": self.rows,
            "selection": self.selection,
        }
        if any(p.repeats > 1 for p in self.metrics):
            summary["store"] = self.store_path
        return describe(summary) if self.pairwise else summary


@dataclass
class TableResult(RunResult):
    """A run scored in memory, with the whole wide table (what `run` returns)."""

    table: pd.DataFrame = field(kw_only=True)


def check_requirements(samples: Sequence[Sample], prepared: Sequence[PreparedMetric]) -> None:
    """Stop before any work if a metric needs a field some samples lack."""
    survey(samples).check_requirements(prepared)


def _stamp(outcome: Outcome, sample: Sample, p: PreparedMetric) -> Score:
    data = outcome.model_dump()
    for name in ("reason", "raw", "rationale"):  # third-party metrics too
        data[name] = redact(data[name])
    if sample.turn is not None:  # the store keys a sample by content; `logs` names its turn
        data["extra"] = {**data["extra"], "turn": sample.turn}
    return Score(item=sample.item, system=sample.system, metric=p.metric.info.name,
                 signature=p.signature, sample_index=p.repeat, **data)


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, disable=not enabled, unit="sample",
                dynamic_ncols=True, leave=False)


#: Samples scored (each metric's batches inside), committed and written per chunk when
#: streaming. A power of two, so a metric whose batch size is one (up to this) gets the batches
#: it would get from the whole input at once.
CHUNK_ROWS = 8192


class TableSink(Protocol):
    """Where a streaming run writes the wide table, one chunk of rows at a time."""

    def write(self, frame: pd.DataFrame) -> None: ...


def run(
    samples: Sequence[Sample],
    specs: Sequence[MetricSpec],
    *,
    store: Store,
    resume: bool = False,
    progress: bool = False,
    settings: RunSettings | None = None,
    host: PluginHost | None = None,
) -> TableResult:
    """Score samples held in memory; `result.table` is the whole wide table. A dry run has
    no table: it is `run_stream(..., estimate_from=samples)`."""
    settings = settings or RunSettings()
    if settings.dry_run:
        raise ValueError("run() scores; estimate a dry run with run_stream(estimate_from=...)")
    surveyed = survey(samples)
    result = run_stream(lambda: samples, surveyed, specs, store=store, resume=resume,
                        progress=progress, settings=settings, host=host,
                        chunk_rows=max(1, len(samples)), estimate_from=samples)
    table = (build_pairwise_table(samples, result.metrics, store,
                                  has_category=surveyed.pairs.has_category)
             if result.pairwise else build_table(samples, result.metrics, store))
    return TableResult(**{f.name: getattr(result, f.name) for f in fields(result)}, table=table)


def run_stream(
    read: Callable[[], Iterable[Sample]],
    surveyed: Survey,
    specs: Sequence[MetricSpec],
    *,
    store: Store,
    resume: bool = False,
    progress: bool = False,
    settings: RunSettings | None = None,
    host: PluginHost | None = None,
    sink: TableSink | None = None,
    chunk_rows: int | None = None,
    estimate_from: Sequence[Sample] | None = None,
    workers: int = 1,
    on_estimate: Callable[[TimeEstimate], None] | None = None,
    about: RunAbout | None = None,
    scheduler_factory: SchedulerFactory | None = None,
) -> RunResult:
    """Score the samples that each call of `read` yields anew, `chunk_rows` at a time, so
    memory is bounded by the chunk, not the input; `surveyed` is `survey` of the same
    samples (the first read, done by the caller before any work); `chunk_rows` defaults to
    `CHUNK_ROWS`.

    Per chunk: every segment-level metric scores what the store lacks (each batch committed),
    then the chunk's rows of the wide table go to `sink`. A corpus-level metric needs each
    system's samples at once: its samples are kept, per system, until the end of the read, so
    memory grows with the rows for corpus metrics only; of a metric whose corpus score comes
    from summed statistics (`Metric.sums_statistics`) only each system's sum is kept. A dry
    run needs `estimate_from`, the samples in memory.

    `workers` > 1 scores parallel-safe metrics in that many processes (`judgebench.engine.pool`),
    with the same results (`scheduler_factory`, called as `pool.Scheduler` is, places the
    batches elsewhere: `judgebench.engine.ray_engine`); `on_estimate` gets each column's time
    estimate when it is long (`pool.SHOW_ESTIMATE_SECONDS`), before its work starts. A dry
    run's estimates include `estimated_s`, the seconds that column would take (None when it
    is not timed).

    Once the checks before any work have passed, the run is recorded in the store's `runs`
    table (`about`: its command line and input), and how it ended when it ends: ok, error,
    interrupted (Ctrl-C, SIGTERM) or budget_stop."""
    from judgebench.engine.pool import Scheduler
    from judgebench.plugins import build_host

    host = host or build_host()
    entries = [host.metric(spec.name) for spec in specs]  # each spec looked up once, here
    # A pairwise table written out is keyed by (item, system_a, system_b); scores in memory
    # (the audit's probes, which score one pair several ways) are keyed by (item, system).
    pairwise = check_shape(surveyed.pairs, [(s.column, e.info) for s, e in
                                            zip(specs, entries, strict=True)],
                           keyed_by_pair=sink is not None)
    settings = settings or RunSettings()
    with running(settings):  # a backend asks no server for its identity in a dry run
        prepared = prepare_metrics(specs, host, entries)
    surveyed.check_requirements(prepared)
    # --repeats K, checked now; draw 0 is `prepared` (the table's columns), the further draws
    # are built once the run is recorded
    plan_repeats(prepared, settings.repeats, settings.repeats_allow_greedy,
                 settings.repeats_cell, pairwise)
    drawn = list(prepared)  # every instance built, each closed at the end
    result = RunResult(metrics=prepared, rows=surveyed.rows, pairwise=pairwise,
                       store_path=_store_path(store))
    table_of: Callable[..., pd.DataFrame] = (
        partial(build_pairwise_table, has_category=surveyed.pairs.has_category) if pairwise
        else build_table)
    scheduler: BatchScheduler | None = None
    try:
        with running(settings), contextlib.ExitStack() as recording:
            REPLAYS.reset()
            if settings.dry_run:
                _dry_run(result, prepared, estimate_from or [], workers=workers, host=host,
                         on_estimate=on_estimate)
                return result
            # before any call: a budget needs known prices
            settings.budget.preflight((p.column, p.metric) for p in prepared)
            corpus = [p for p in prepared if p.corpus_level]
            result.selection = about.selection if about is not None else None
            recording.enter_context(_recorded(store, about, prepared, result, settings))
            drawn += further_draws(prepared, host)
            segment = [p for p in drawn if p.segment_level]
            scheduler = (scheduler_factory or Scheduler)(workers, prepared, host, surveyed.rows,
                                                         on_estimate)
            by_system: dict[str, SystemCorpus] = {}
            keys_digest = hashlib.blake2b(digest_size=16)
            rows = 0
            for column, draws in Counter(p.column for p in segment).items():
                progress_line.counting(column, surveyed.rows * draws)
            with _progress(surveyed.rows * len(segment), "scoring", progress) as bar:

                def plan(chunk: list[Sample]) -> _PlannedChunk:
                    hashes = [sample_hash(s) for s in chunk]
                    keys = [(s.item, s.system, h) for s, h in zip(chunk, hashes, strict=True)]
                    for sample in chunk:
                        keys_digest.update(key_bytes(sample))
                    return _PlannedChunk(chunk, hashes, keys, [
                        _plan_segments(p, chunk, keys, store, resume, bar, result,
                                       scheduler if p.repeat == 0 else None)
                        for p in segment])

                def finish(planned: _PlannedChunk) -> None:
                    draws: dict[str, list[dict[SampleKey, Score]]] = {}
                    for work in planned.segments:
                        draws.setdefault(work.p.column, []).append(
                            _finish_segments(work, planned.keys, store, bar, result))
                    stored = {column: found[0] for column, found in draws.items()}
                    if corpus:
                        _collect_corpus(corpus, by_system, planned.samples, planned.keys, stored)
                    if sink is not None:
                        cells = {p.column: cell_of_draws(draws[p.column], p, pairwise)
                                 for p in prepared if p.column in draws}
                        sink.write(table_of(planned.samples, prepared, store,
                                            hashes=planned.hashes,
                                            human_names=surveyed.human_names, stored=cells,
                                            **({} if pairwise else {"turns": surveyed.turns})))

                # One chunk ahead: the next chunk is read and its worker batches sent before
                # this one is finished, so workers do not wait while the parent commits,
                # builds the table and reads on.
                pending: _PlannedChunk | None = None
                for chunk in _chunks(read(), chunk_rows or CHUNK_ROWS):
                    rows += len(chunk)
                    planned = plan(chunk)
                    if pending is not None:
                        finish(pending)
                    pending = planned
                if pending is not None:
                    finish(pending)
            _check_unchanged(surveyed, rows, keys_digest.digest())
            for p in corpus:
                _run_corpus(p, by_system, store, resume, result)
    finally:
        result.cached_answers, result.sent_calls = REPLAYS.hits, REPLAYS.sent
        if scheduler is not None:
            scheduler.close()
        for p in drawn:
            p.metric.close()
    return result


def _store_path(store: Store) -> str:
    """The store's path as the result names it: absolute, or ":memory:"."""
    return store.path if store.path == ":memory:" else str(Path(store.path).absolute())


def _check_unchanged(surveyed: Survey, rows: int, keys_digest: bytes) -> None:
    """The samples scored are those surveyed before any work (the same rows and keys)."""
    if rows != surveyed.rows or keys_digest != surveyed.keys_digest.digest():
        raise InputError("the input changed while it was being scored: run again on a "
                         "file that no other program is writing")


def _dry_run(result: RunResult, prepared: Sequence[PreparedMetric], samples: Sequence[Sample],
             *, workers: int, host: PluginHost,
             on_estimate: Callable[[TimeEstimate], None] | None) -> None:
    """A dry run's estimates, per column, into `result` (`estimated_s`: the seconds the
    column would take, None when it is not timed); `on_estimate` gets each long one."""
    from judgebench.engine.pool import SHOW_ESTIMATE_SECONDS, TIMED_SAMPLES, time_estimates

    timed = time_estimates(prepared, list(samples)[:TIMED_SAMPLES + 1], rows=len(samples),
                           workers=workers, host=host)
    for p in prepared:
        result.estimates[p.column] = _repeated(_estimate(p.metric, samples), p.repeats)
        estimate = timed.get(p.column)
        result.estimates[p.column]["estimated_s"] = (
            None if estimate is None else round(estimate.seconds, 3))
        if estimate is not None and on_estimate is not None \
                and estimate.seconds > SHOW_ESTIMATE_SECONDS:
            on_estimate(estimate)


@contextlib.contextmanager
def _recorded(store: Store, about: RunAbout | None, prepared: Sequence[PreparedMetric],
              result: RunResult, settings: RunSettings) -> Iterator[None]:
    """The scoring inside is one run in the store's `runs` table, ended with what it did and
    how it ended (an error recording the end does not hide the run's own error). `prepared`
    are the table's columns, each with the draws `--repeats` gives it (`p.repeats`; every
    draw of a column has its signature)."""
    store.begin_run(replace(about or RunAbout(),
                            metrics={p.column: p.signature for p in prepared}))
    outcome: RunOutcome = "ok"
    error: str | None = None
    try:
        yield
    except BudgetExceeded as exc:
        attempted = result.computed + result.reused
        exc.args = (settings.budget.stopped(
            str(exc), result.rows * sum(p.repeats for p in prepared if p.segment_level)
            - attempted),)
        outcome, error = "budget_stop", str(exc)
        raise
    except KeyboardInterrupt:
        outcome, error = "interrupted", "interrupted (Ctrl-C or SIGTERM)"
        raise
    except BaseException as exc:
        outcome, error = "error", failure_reason(exc)
        raise
    finally:
        budget = settings.budget
        end = RunEnd(
            outcome=outcome, error=error,
            statuses={column: dict(counts) for column, counts in result.statuses.items()},
            rows=result.rows, computed=result.computed, reused=result.reused,
            failed=result.failed,
            cost_usd=None if budget.unknown_cost_calls else round(budget.spent_usd, 6))
        try:
            result.run_id = store.end_run(end)
        except JudgebenchError:
            if outcome == "ok":
                raise


def _chunks(samples: Iterable[Sample], size: int) -> Iterator[list[Sample]]:
    chunk: list[Sample] = []
    for sample in samples:
        chunk.append(sample)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass
class _PlannedSegments:
    """One segment-level metric's work on one chunk: what the store lacks, in batches, and
    where their outcomes come from (workers already sent them, or None: in process)."""

    p: PreparedMetric
    batches: list[list[tuple[Sample, str]]]
    from_workers: Iterator[tuple[list[Outcome], float | None]] | None


@dataclass
class _PlannedChunk:
    samples: list[Sample]
    hashes: list[str]
    keys: list[SampleKey]
    segments: list[_PlannedSegments]


def _plan_segments(
    p: PreparedMetric,
    samples: Sequence[Sample],
    keys: Sequence[SampleKey],
    store: Store,
    resume: bool,
    bar: Any,
    result: RunResult,
    scheduler: BatchScheduler | None = None,
) -> _PlannedSegments:
    """What the store lacks of these samples, in batches; batches for `scheduler`'s workers
    are sent now."""
    retry = current().retry
    final = {status for status in FINAL_STATUSES if str(status) not in retry}
    done = store.lookup(p.signature, keys, p.repeat) if resume else {}
    todo = [
        (s, key[2]) for s, key in zip(samples, keys, strict=True)
        if key not in done or done[key].status not in final
    ]
    # The answers behind the scores asked again are not replayed from the judge cache.
    again = retry & {str(Status.PARSE_ERROR), str(Status.REFUSED)}
    if again and todo:
        REPLAYS.skip(store.request_keys(p.signature, keys, again))
    result.reused += len(samples) - len(todo)
    bar.update(len(samples) - len(todo))
    progress_line.scored(p.column, len(samples) - len(todo))
    size = max(1, p.metric.batch_size)
    batches = [todo[start : start + size] for start in range(0, len(todo), size)]
    from_workers = None if scheduler is None else scheduler.scored(
        p, len(samples), [[s for s, _ in chunk] for chunk in batches])
    return _PlannedSegments(p, batches, from_workers)


def _finish_segments(work: _PlannedSegments, keys: Sequence[SampleKey], store: Store,
                     bar: Any, result: RunResult) -> dict[SampleKey, Score]:
    """Score (or collect from the workers) and commit each planned batch; return the stored
    scores of the chunk."""
    p = work.p
    progress_line.scoring(p.column)
    try:
        for position, chunk in enumerate(work.batches):
            try:
                _finish_batch(work, chunk, store, bar, result)
            except BudgetExceeded as exc:  # batches sent after it were paid for too
                for later, finished in zip(work.batches[position + 1:],
                                           getattr(exc, "later", []), strict=False):
                    _keep_finished_elsewhere(p, later, finished, store, result)
                raise
    except (BudgetExceeded, KeyboardInterrupt):
        _count_stored(p, keys, store, result)  # the run's record counts what was committed
        raise
    return _count_stored(p, keys, store, result)


def _count_stored(p: PreparedMetric, keys: Sequence[SampleKey], store: Store,
                  result: RunResult) -> dict[SampleKey, Score]:
    stored = store.lookup(p.signature, keys, p.repeat)
    result.statuses.setdefault(p.column, Counter()).update(
        str(score.status) for score in stored.values())
    result.count_failures(p.column, stored.values())
    return stored


def _finish_batch(work: _PlannedSegments, chunk: Sequence[tuple[Sample, str]], store: Store,
                  bar: Any, result: RunResult) -> None:
    p = work.p
    batch = [s for s, _ in chunk]
    progress_line.working(p.column, len(batch))
    if work.from_workers is not None:
        try:
            outcomes, elapsed = next(work.from_workers)
        except BudgetExceeded as exc:  # elsewhere: what finished there comes with it
            _keep_finished_elsewhere(p, chunk, getattr(exc, "finished", None), store, result)
            raise
        store.put([_stamp(o, s, p) for o, s in zip(outcomes, batch, strict=True)],
                  [h for _, h in chunk], elapsed)
        result.computed += len(batch)
        bar.update(len(batch))
        progress_line.scored(p.column, len(batch), _failed(outcomes))
        return
    if p.metric.streams:
        _score_streamed(p, chunk, store, bar, result)
        return
    began = time.perf_counter()
    try:
        outcomes = score_batch(p.metric, batch)
    except BudgetExceeded:
        if _keep_finished_before_budget_stop(p, chunk, store, result) < len(chunk):
            raise
        # each sample finished one at a time under the budget (a refusal of calls in
        # flight together): nothing was left out, so the run goes on
        bar.update(len(batch))
        return
    elapsed = (time.perf_counter() - began) / len(batch)
    store.put([_stamp(o, s, p) for o, s in zip(outcomes, batch, strict=True)],
              [h for _, h in chunk], elapsed)
    result.computed += len(batch)
    bar.update(len(batch))
    progress_line.scored(p.column, len(batch), _failed(outcomes))


def _failed(outcomes: Iterable[Outcome]) -> int:
    return sum(o.status in FAILED_STATUSES for o in outcomes)


def _score_streamed(p: PreparedMetric, chunk: Sequence[tuple[Sample, str]], store: Store,
                    bar: Any, result: RunResult) -> None:
    """Score one batch of a metric that yields its results as they finish
    (`Metric.score_stream`), committing each sample as it comes (one small transaction: see
    docs/guides/judges.md, "Streaming", for its cost), so a killed run loses only the samples in
    flight. If the stream raises, the samples it did not yield are scored one by one, as
    `score_batch` does; a budget stop keeps what finished."""
    began = time.perf_counter()
    done: set[int] = set()

    def commit(index: int, outcome: Outcome) -> None:
        sample, digest = chunk[index]
        elapsed = (time.perf_counter() - began) / (len(done) + 1)  # per sample, so far
        store.put([_stamp(outcome, sample, p)], [digest], elapsed)
        result.computed += 1
        bar.update(1)
        progress_line.scored(p.column, 1, _failed([outcome]))

    try:
        score_streamed(p.metric, [s for s, _ in chunk], done, commit)
    except BudgetExceeded:
        left = [c for i, c in enumerate(chunk) if i not in done]
        if _keep_finished_before_budget_stop(p, left, store, result) < len(left):
            raise
        bar.update(len(left))  # every sample finished under the budget: the run goes on


def _keep_finished_before_budget_stop(
    p: PreparedMetric, chunk: Sequence[tuple[Sample, str]], store: Store, result: RunResult
) -> int:
    """A batch stopped by the budget may have finished some samples (their answers are in the
    judge cache): score them one at a time, which costs nothing for cached answers and stops
    again before any new spending, and store what finishes; how many did."""
    finished = one_by_one(p.metric, [s for s, _ in chunk])
    kept = 0
    for (sample, digest), (outcome, seconds) in zip(chunk, finished, strict=True):
        if outcome is not None:
            store.put([_stamp(outcome, sample, p)], [digest], seconds)
            result.computed += 1
            kept += 1
    return kept


def _keep_finished_elsewhere(
    p: PreparedMetric, chunk: Sequence[tuple[Sample, str]], finished: Sequence[Outcome | None]
    | None, store: Store, result: RunResult
) -> None:
    """A batch stopped by the budget in a worker: store the outcomes it finished (None: not
    finished); without them, those finished in process (`_keep_finished_before_budget_stop`)."""
    if finished is None:
        _keep_finished_before_budget_stop(p, chunk, store, result)
        return
    done = [(o, s, h) for o, (s, h) in zip(finished, chunk, strict=True) if o is not None]
    if done:
        store.put([_stamp(o, s, p) for o, s, _ in done], [h for _, _, h in done], None)
        result.computed += len(done)


@dataclass
class SummedStatistics:
    """One system's sum of one metric's sufficient statistics, in input order. From the
    first sample without statistics on (a score stored by an older run, a failed one), the
    rest are kept in order, statistics or samples, and added up at the end only if the
    corpus score is not already stored."""

    total: list[float] | None = None
    tail: list[Sample | list[float]] = field(default_factory=list)

    def add(self, score: Score | None, sample: Sample) -> None:
        stats = score.extra.get(STATISTICS) if score is not None else None
        if self.tail or stats is None:
            self.tail.append(sample if stats is None else stats)
        else:
            self.total = add_statistics(self.total, stats)

    def finish(self, metric: Metric) -> list[float] | None:
        """The whole sum, with statistics computed for the samples kept in the tail."""
        total, size = self.total, max(1, metric.batch_size)
        pending = [e for e in self.tail if isinstance(e, Sample)]
        computed = iter([stats for start in range(0, len(pending), size)
                         for stats in metric.statistics(pending[start : start + size])])
        for entry in self.tail:
            total = add_statistics(total, next(computed) if isinstance(entry, Sample) else entry)
        return total


@dataclass
class SystemCorpus:
    """What the corpus pass needs of one system: the hash of its samples' content hashes in
    input order, their number, the samples themselves for metrics with only `corpus_score`,
    and per column the summed statistics of a metric that sums them."""

    items_digest: Any = field(default_factory=hashlib.sha256)
    n: int = 0
    samples: list[Sample] = field(default_factory=list)
    sums: dict[str, SummedStatistics] = field(default_factory=dict)


def _collect_corpus(
    corpus: Sequence[PreparedMetric],
    by_system: dict[str, SystemCorpus],
    chunk: Sequence[Sample],
    keys: Sequence[SampleKey],
    stored: Mapping[str, Mapping[SampleKey, Score]],
) -> None:
    summed = [p for p in corpus if p.metric.sums_statistics]
    keep = len(summed) < len(corpus)
    for sample, key in zip(chunk, keys, strict=True):
        entry = by_system.get(sample.system)
        if entry is None:
            entry = by_system[sample.system] = SystemCorpus(
                sums={p.column: SummedStatistics() for p in summed})
        entry.items_digest.update(key[2].encode())
        entry.n += 1
        if keep:
            entry.samples.append(sample)
        for p in summed:
            entry.sums[p.column].add(stored[p.column].get(key), sample)


def _run_corpus(
    p: PreparedMetric,
    by_system: dict[str, SystemCorpus],
    store: Store,
    resume: bool,
    result: RunResult,
) -> None:
    """One corpus score per system (in order of first appearance), keyed by a hash of its
    samples' content hashes in input order."""
    progress_line.doing(f"corpus {p.column}: {len(by_system)} systems")
    for system, entry in by_system.items():
        items_hash = entry.items_digest.hexdigest()[:20]
        found = store.corpus_score(p.signature, system, items_hash) if resume else None
        if found is None:
            summed = entry.sums.get(p.column)
            outcome = _corpus_outcome(p.metric, entry.samples if summed is None else summed)
            found = CorpusScore(system=system, metric=p.column, value=outcome.value,
                                status=outcome.status, reason=redact(outcome.reason),
                                signature=p.signature, n=entry.n)
            store.put_corpus([(found, items_hash)])
        result.corpus.append(found.model_copy(update={"metric": p.column}))
        result.count_failures(p.column, [found])


def _corpus_outcome(metric: Metric, samples: list[Sample] | SummedStatistics) -> Outcome:
    try:
        if isinstance(samples, SummedStatistics):
            total = samples.finish(metric)
            if total is None:
                raise JudgebenchError(f"metric {metric.info.name}: no statistics to sum")
            return outcome_of(metric.corpus_from_statistics(total))
        return outcome_of(metric.corpus_score(samples))
    except (BudgetExceeded, KeyboardInterrupt):
        raise
    except Exception as exc:
        return Outcome.failed(Status.ERROR, failure_reason(exc))


def _estimate(metric: Metric, samples: Sequence[Sample]) -> dict[str, Any]:
    return dict(metric.estimate(list(samples)))


def _repeated(estimate: dict[str, Any], repeats: int) -> dict[str, Any]:
    """A column's dry-run estimate for `--repeats K` draws: K times its calls, tokens and
    cost (a draw is a judgement of its own)."""
    if repeats == 1:
        return estimate
    out = {**estimate, "repeats": repeats}
    for name in ("calls", "tokens_in", "tokens_out", "cost_usd"):
        value = estimate.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[name] = value * repeats
    return out


def cell_of_draws(draws: Sequence[Mapping[SampleKey, Score]], p: PreparedMetric,
                  pairwise: bool = False) -> dict[SampleKey, Score]:
    """The scores the table's cells of `p`'s column show: its one draw, else its draws
    combined as `p.cell` says (`mean_of_draws`, `majority_of_draws`; a pairwise judge's
    verdicts: `pairwise_table.majority_verdicts`)."""
    if len(draws) == 1:
        return dict(draws[0])
    if pairwise:
        from judgebench.engine.pairwise_table import majority_verdicts

        return majority_verdicts(draws)
    return majority_of_draws(draws) if p.cell == "majority" else mean_of_draws(draws)


def majority_of_draws(draws: Sequence[Mapping[SampleKey, Score]]) -> dict[SampleKey, Score]:
    """As `mean_of_draws`, with the most frequent value of the draws that scored (among
    equally frequent values, the one drawn first) instead of their mean."""
    out: dict[SampleKey, Score] = {}
    for key in {k for found in draws for k in found}:
        scores = [found[key] for found in draws if key in found]
        ok = [s.value for s in scores if s.status == Status.OK and s.value is not None]
        first = scores[0]
        out[key] = (first.model_copy(update={"value": majority(ok), "status": Status.OK,
                                              "extra": {**first.extra, "draws": len(ok)}})
                    if ok else first)
    return out


def mean_of_draws(draws: Sequence[Mapping[SampleKey, Score]]) -> dict[SampleKey, Score]:
    """`score --repeats K`: per sample, the first draw's score with the mean of the values of
    its draws that scored (status ok) as its value, and `extra["draws"]` how many did; a
    sample no draw scored keeps its first draw's failure. One draw: that draw."""
    if len(draws) == 1:
        return dict(draws[0])
    out: dict[SampleKey, Score] = {}
    for key in {k for found in draws for k in found}:
        scores = [found[key] for found in draws if key in found]
        ok = [s.value for s in scores if s.status == Status.OK and s.value is not None]
        first = scores[0]
        out[key] = (first.model_copy(update={"value": math.fsum(ok) / len(ok),
                                              "status": Status.OK,
                                              "extra": {**first.extra, "draws": len(ok)}})
                    if ok else first)
    return out


def build_table(
    samples: Sequence[Sample], prepared: Sequence[PreparedMetric], store: Store, *,
    hashes: Sequence[str] | None = None, human_names: Iterable[str] | None = None,
    stored: Mapping[str, Mapping[SampleKey, Score]] | None = None, turns: bool | None = None,
) -> pd.DataFrame:
    """The wide table: item, system, one column per segment-level metric spec, then the
    `human.<name>` columns carried from the samples. Each cell is the stored score of exactly
    that sample (signature, item, system and content hash; `hashes` as `sample_hash` gives
    them), never another run's score for the same ids. `human_names` (default: those of
    `samples`) fixes the human columns, so chunks of one table share them. `stored`: per
    column, the scores of these samples already read from the store."""
    import pandas as pd

    if hashes is None:
        hashes = [sample_hash(s) for s in samples]
    keys = [(s.item, s.system, h) for s, h in zip(samples, hashes, strict=True)]

    data: dict[str, list[Any]] = {
        "item": [s.item for s in samples],
        "system": [s.system for s in samples],
    }
    if turns is None:
        turns = any(s.turn is not None for s in samples)
    if turns:  # conversations judged turn by turn: the turn is a key (judgebench.tables.turn_table)
        data["turn"] = [s.turn for s in samples]
    for p in prepared:
        if not p.segment_level:
            continue
        found = (stored[p.column] if stored is not None and p.column in stored
                 else cell_of_draws(store.draws(p.signature, keys, p.repeats), p))
        data[p.column] = [found[k].value if k in found else None for k in keys]
    if human_names is None:
        human_names = survey(samples).human_names
    for name in human_names:
        data[f"human.{name}"] = [s.human.get(name) for s in samples]
    frame = pd.DataFrame(data)
    first_score = 3 if turns else 2
    if turns:
        frame["turn"] = frame["turn"].astype("Int64")
    for column in frame.columns[first_score:]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame
