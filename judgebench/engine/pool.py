"""Worker processes for CPU metrics (`judgebench score --workers N`), and time estimates.

A metric that computes locally (`parallel_safe`: lexical metrics, sentinels, a third-party
metric of kind `reference`) is scored in a process pool: each worker builds the plugin host
once (with the same `-p` local plugins) and one instance of each metric, and scores whole
batches, the same batches an in-process run makes. Results come back to the parent, which is
the only writer of the store and commits them in input order, so the table, the sidecar, the
corpus file and the stored scores are those of `--workers 1` (timing aside).

Workers are started with `spawn`: a fresh interpreter that imports only what it needs, on
every platform alike, inheriting no threads, locks or open SQLite connection from the parent
(`fork` would copy them). Its cost, about a second per worker, is paid once per run, and
only when the in-process work would take longer than `POOL_MIN_SECONDS`.

Time estimates: the first batch of a parallel-safe column is scored in process and timed
(the call an in-process run makes anyway), which estimates the rest and decides whether it
goes to workers; a dry run times a few samples on a fresh instance. Judges and model metrics
are not timed.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import math
import multiprocessing
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from judgebench.engine import progress_line
from judgebench.engine.scoring import build, failure_reason, score_batch, timed_score
from judgebench.models import Outcome, Sample, Status
from judgebench.verbosity import chosen

if TYPE_CHECKING:
    from judgebench.engine.scoring import PreparedMetric
    from judgebench.metric import Metric
    from judgebench.plugins import PluginHost
    from judgebench.spec import MetricSpec

CONTEXT = "spawn"
#: Below this many seconds of estimated in-process work a metric is not sent to workers:
#: starting them costs about a second each.
POOL_MIN_SECONDS = 3.0
#: A time estimate above this many seconds is said on stderr at the start of a run.
SHOW_ESTIMATE_SECONDS = 30.0
#: The timed sample: at most this many samples (after one untimed warm-up call), and no more
#: once this many seconds are spent.
TIMED_SAMPLES = 8
TIMING_SECONDS = 0.5


def parallel_safe(metric: Metric) -> bool:
    """Whether `metric` may be scored in worker processes (see `Metric.parallel_safe`)."""
    declared = type(metric).parallel_safe
    if declared is not None:
        return declared
    return metric.info.kind in ("reference", "sentinel")


# -- time estimates -------------------------------------------------------------------------
@dataclass(frozen=True)
class TimeEstimate:
    column: str
    seconds_per_sample: float
    rows: int
    workers: int
    #: Samples the estimate was timed on.
    timed: int

    @property
    def seconds(self) -> float:
        return self.seconds_per_sample * self.rows / self.workers

    def text(self) -> str:
        unit = "worker" if self.workers == 1 else "workers"
        timed = "1 sample" if self.timed == 1 else f"{self.timed} samples"
        return (f"{self.column}: about {duration(self.seconds)} for {self.rows:,} rows at "
                f"{self.workers} {unit} (timed on {timed})")


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def effective_workers(workers: int, rows: int, batch_size: int) -> int:
    """How many workers a metric keeps busy: one batch each at most."""
    return max(1, min(workers, math.ceil(rows / max(1, batch_size))))


def workers_for(per_sample: float, rows: int, workers: int, batch_size: int) -> int:
    """The workers `rows` rows at `per_sample` seconds each are worth: 1 (in process) when
    the work is under `POOL_MIN_SECONDS`, else as many as it keeps busy."""
    if per_sample * rows < POOL_MIN_SECONDS:
        return 1
    return effective_workers(workers, rows, batch_size)


def seconds_per_sample(p: PreparedMetric, samples: Sequence[Sample],
                       host: PluginHost) -> tuple[float, int] | None:
    """Seconds per sample of `p`'s metric, timed on a fresh instance, one sample at a time,
    over the first of `samples` until `TIMING_SECONDS` are spent, and how many samples were
    timed; None if it is not timed (not parallel-safe: a judge would make calls, a model
    metric load its model). The first call is not counted (it may import libraries, build
    caches) unless it is the only sample."""
    if not samples or not parallel_safe(p.metric):
        return None
    metric = build(p.spec, host)
    try:
        began = time.perf_counter()
        score_batch(metric, samples[:1])
        if len(samples) == 1:
            return time.perf_counter() - began, 1
        spent, timed = 0.0, 0
        for sample in samples[1:TIMED_SAMPLES + 1]:
            began = time.perf_counter()
            score_batch(metric, [sample])
            spent += time.perf_counter() - began
            timed += 1
            if spent >= TIMING_SECONDS:
                break
        return spent / timed, timed
    finally:
        metric.close()


def time_estimates(prepared: Sequence[PreparedMetric], samples: Sequence[Sample], *,
                   rows: int, workers: int, host: PluginHost) -> dict[str, TimeEstimate]:
    """Per segment-level parallel-safe column, the time to score `rows` rows with `workers`
    workers (or in process, if that column's work is too small for the pool)."""
    found: dict[str, TimeEstimate] = {}
    for p in prepared:
        if not p.segment_level:
            continue
        timing = seconds_per_sample(p, samples, host)
        if timing is None:
            continue
        per_sample, timed = timing
        used = workers_for(per_sample, rows, workers, p.metric.batch_size)
        found[p.column] = TimeEstimate(p.column, per_sample, rows, used, timed)
    return found


# -- the worker side ------------------------------------------------------------------------
_worker: dict[str, Any] = {}


def _init_worker(local_plugins: tuple[str, ...], specs: dict[str, MetricSpec],
                 verbose: bool | None = None) -> None:
    """Build the plugin host once per worker, with the parent's choice of what third-party
    libraries may print (`verbose`; None: the parent made none). An error is kept and
    reported by `_check`: an initializer that raises would only break the pool, without a
    reason."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if verbose is not None:
        from judgebench.verbosity import set_third_party_output

        set_third_party_output(verbose)
    _worker["specs"] = specs
    _worker["metrics"] = {}
    try:
        from judgebench.plugins import build_host

        _worker["host"] = build_host(local_plugins)
    except Exception as exc:
        _worker["error"] = failure_reason(exc)


def _metric(column: str) -> Metric:
    if "error" in _worker:
        raise RuntimeError(f"the plugin host failed in a worker: {_worker['error']}")
    metrics: dict[str, Metric] = _worker["metrics"]
    if column not in metrics:
        metrics[column] = build(_worker["specs"][column], _worker["host"])
    return metrics[column]


def _check(columns: Sequence[str]) -> dict[str, str]:
    """Each column's signature as a worker builds it, or why it cannot."""
    found = {}
    for column in columns:
        try:
            found[column] = str(_metric(column).signature())
        except Exception as exc:
            found[column] = f"error: {failure_reason(exc)}"
    return found


def _score(column: str, batch: list[Sample]) -> tuple[list[Outcome], float]:
    """`timed_score` in a worker."""
    return timed_score(_metric(column), batch)


# -- the parent side ------------------------------------------------------------------------
class BatchScheduler(Protocol):
    """Where the batches of a run are scored (`Scheduler`: here and in worker processes;
    `judgebench.engine.ray_engine.RayScheduler`: in Ray actors). `scored` gives each batch's
    outcomes in order (None: score them in process); `close` stops what it started."""

    def scored(self, p: PreparedMetric, rows: int, batches: Sequence[list[Sample]]
               ) -> Iterator[tuple[list[Outcome], float | None]] | None: ...

    def close(self) -> None: ...


#: Makes a run's scheduler: (workers, prepared metrics, plugin host, rows, on_estimate).
SchedulerFactory = Callable[
    [int, "Sequence[PreparedMetric]", "PluginHost", int,
     "Callable[[TimeEstimate], None] | None"], BatchScheduler]


@dataclass(frozen=True)
class _Sent:
    """Batches sent to one pool (the `Scheduler._pool`-th), by their index."""

    pool: int
    futures: dict[int, concurrent.futures.Future[Any]]


class Scheduler:
    """Where each batch of a run is scored. The first time a parallel-safe column has more
    than one batch of work (in one chunk), its first batch is scored in process and timed,
    which gives the estimate for the rows left (given to `on_estimate` when above
    `SHOW_ESTIMATE_SECONDS`) and, with `workers` > 1 and work worth it, sends the rest to the
    pool (started on first use, up to `workers` processes).

    `scored` yields each batch's outcomes in order. A worker that dies fails only the samples
    it dies on (with the reason), after the pool is started anew. A column that a worker
    builds with another signature than the parent's (or cannot build) is scored in process.
    """

    def __init__(self, workers: int, prepared: Sequence[PreparedMetric], host: PluginHost,
                 rows: int, on_estimate: Callable[[TimeEstimate], None] | None = None) -> None:
        self.workers = max(1, workers)
        self.host = host
        self.rows = rows
        self.on_estimate = on_estimate
        self.estimates: dict[str, TimeEstimate | None] = {}
        self.seen: dict[str, int] = {}
        self.signatures = {p.column: p.signature for p in prepared}
        self.specs: dict[str, MetricSpec] = {  # what workers may build
            p.column: p.spec for p in prepared if p.segment_level and parallel_safe(p.metric)}
        self.accepted: dict[str, bool] = {}
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None
        self._pool = 0  # how many times the pool was started: batches say which one took them

    def scored(self, p: PreparedMetric, rows: int, batches: Sequence[list[Sample]]
               ) -> Iterator[tuple[list[Outcome], float | None]] | None:
        """The outcomes of `batches` (of a chunk of `rows` rows), in order, or None: score
        them in process as always. Batches for workers are sent now, so the caller may plan
        the next chunk before it reads these. The first batch of a column's first chunk with
        more than one is scored here, in process and timed (the call an in-process run
        makes), which gives the estimate for the rows left and decides where the rest go."""
        seen = self.seen.get(p.column, 0)
        self.seen[p.column] = seen + rows
        if not parallel_safe(p.metric):
            return None
        if p.column not in self.estimates:
            if len(batches) < 2:
                return None  # one batch is one worker's: nothing to decide
            todo = sum(len(b) for b in batches)
            return self._timed_first(p, batches, self.rows - seen - rows + todo)
        return self._placed(p, batches)

    def _timed_first(self, p: PreparedMetric, batches: Sequence[list[Sample]], rows: int
                     ) -> Iterator[tuple[list[Outcome], float | None]]:
        progress_line.working(p.column, len(batches[0]))
        outcomes, per_sample = timed_score(p.metric, batches[0])
        left = rows - len(batches[0])
        used = workers_for(per_sample, left, self.workers, p.metric.batch_size)
        estimate = TimeEstimate(p.column, per_sample, left, used, len(batches[0]))
        self.estimates[p.column] = estimate
        if self.on_estimate is not None and estimate.seconds > SHOW_ESTIMATE_SECONDS:
            self.on_estimate(estimate)
        return itertools.chain([(outcomes, per_sample)], self._placed(p, batches[1:]))

    def _placed(self, p: PreparedMetric, batches: Sequence[list[Sample]]
                ) -> Iterator[tuple[list[Outcome], float | None]]:
        estimate = self.estimates.get(p.column)
        if estimate is None or estimate.workers == 1 or not self._accepts(p):
            return (timed_score(p.metric, batch) for batch in batches)
        sent = self._submit_all(p.column, batches)
        return self._from_pool(p, batches, sent)

    def _accepts(self, p: PreparedMetric) -> bool:
        if p.column not in self.accepted:
            if self._executor is None:
                self._start()
            try:
                (signature,) = self._run(_check, [p.column]).values()
            except BrokenProcessPool as exc:
                signature = f"error: {exc}"
            self.accepted[p.column] = signature == p.signature
        return self.accepted[p.column]

    def _from_pool(self, p: PreparedMetric, batches: Sequence[list[Sample]],
                   sent: _Sent) -> Iterator[tuple[list[Outcome], float | None]]:
        for index, batch in enumerate(batches):
            if sent.pool != self._pool:  # the pool was started anew since: send the rest again
                sent = self._submit_all(p.column, batches[index:], start=index)
            try:
                found: tuple[list[Outcome], float | None] = sent.futures[index].result()
            except BrokenProcessPool:
                self._start()
                found = self._isolated(p.column, batch)
            except Exception as exc:  # the batch or its result could not be sent
                reason = f"in a worker process: {failure_reason(exc)}"
                found = ([Outcome.failed(Status.ERROR, reason)] * len(batch), None)
            yield found

    def close(self) -> None:
        """Stop the workers now: a batch still running is not waited for (nothing it would
        return is committed)."""
        executor, self._executor = self._executor, None
        if executor is None:
            return
        executor.shutdown(wait=False, cancel_futures=True)
        processes = getattr(executor, "_processes", None) or {}
        for process in list(processes.values()):
            process.terminate()
        for process in list(processes.values()):
            process.join(5)

    def _start(self) -> None:
        self.close()
        self._pool += 1
        self._executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=self.workers, mp_context=multiprocessing.get_context(CONTEXT),
            initializer=_init_worker, initargs=(self.host.local_plugins, dict(self.specs),
                                                chosen()))

    def _submit_all(self, column: str, batches: Sequence[list[Sample]], start: int = 0
                    ) -> _Sent:
        """Send every batch (numbered from `start`); a pool found broken (by an earlier
        failure) is started anew."""
        for attempt in (1, 2):
            assert self._executor is not None
            try:
                futures = [self._submit(_score, column, batch) for batch in batches]
                return _Sent(self._pool, dict(enumerate(futures, start)))
            except BrokenProcessPool:
                if attempt == 2:
                    raise
                self._start()
        raise AssertionError("unreachable")

    def _submit(self, fn: Any, *args: Any) -> concurrent.futures.Future[Any]:
        """`executor.submit`, a pool whose dead worker is found while its replacement starts
        (the dead one's pipe closed: OSError, not yet BrokenProcessPool) told as broken."""
        assert self._executor is not None
        try:
            return self._executor.submit(fn, *args)
        except OSError as exc:
            raise BrokenProcessPool(f"a worker process died ({exc})") from exc

    def _run(self, fn: Any, *args: Any) -> Any:
        return self._submit(fn, *args).result()

    def _isolated(self, column: str, batch: list[Sample]
                  ) -> tuple[list[Outcome], float | None]:
        """A batch whose pool broke, alone in a fresh pool (another batch may have been the
        cause); if it breaks the pool again, each sample alone, so one that kills its worker
        fails alone."""
        try:
            return self._run(_score, column, batch)
        except BrokenProcessPool:
            self._start()
        outcomes: list[Outcome] = []
        for sample in batch:
            try:
                (outcome,), _ = self._run(_score, column, [sample])
            except BrokenProcessPool as exc:
                self._start()
                outcome = Outcome.failed(
                    Status.ERROR, f"the worker process scoring this sample died ({exc})")
            outcomes.append(outcome)
        return outcomes, None
