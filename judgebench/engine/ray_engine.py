"""`judgebench score --engine ray`: the batches of a run scored by Ray actors, on one machine
or a cluster, with the table, sidecar and stored scores of a local run.

The seam is the runner's scheduler (`pool.BatchScheduler`): the driver reads, validates
(`runner.survey`, before any work), plans what the store lacks (so `--resume` sends nothing
already committed) and commits every batch's outcomes in input order, as the only writer of
the store. `RayScheduler` only decides where a batch is scored: on one of `replicas` Ray Core
actors (`ScoringActor`), each holding one plugin host (with the same `-p` plugins) and one
instance of each metric, so a model or an engine loads once per actor. Batches are sent
round-robin as a chunk is planned (one chunk ahead, as `--workers` does) and read back in
order, so what is committed, and when, is what a local run commits.

Ray Core actors fed batch by batch, not Ray Data's `map_batches`: a Dataset pipeline
reorders and fuses blocks, retries whole tasks on its own and owns its output, while here the
order of commits, resume at batch granularity and the one writer on the driver are the
point; a batch is the unit of work, of commit and of loss. Ray Data reads object-store inputs
(`read_samples_uri`).

Spending is shared: one `SharedBudget` actor holds the run's `--budget-usd` (spent, calls in
flight) and one `SharedLimits` actor the rpm/tpm buckets per (model, endpoint); the backends
in every actor consult them (`runtime.Budget.reserve`/`charge`, `remote.shared_limiters`), so
N actors never spend N budgets nor send N times the rate.

An actor that dies (a node lost, a metric that kills its process) is restarted by Ray; its
batch is sent again alone, then sample by sample, so one sample that kills its actor fails
alone with the reason. A killed driver takes its actors with it (they are owned by it) and
loses nothing committed.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from typing import TYPE_CHECKING, Any

from judgebench.display import SafeWriter
from judgebench.engine.runtime import Budget, BudgetExceeded, RunSettings
from judgebench.engine.scoring import build, failure_reason, one_by_one, score_streamed, timed_score
from judgebench.models import Outcome, Sample, Status

if TYPE_CHECKING:
    from judgebench.backends.remote import RateLimiter
    from judgebench.engine.pool import SchedulerFactory, TimeEstimate
    from judgebench.engine.scoring import PreparedMetric
    from judgebench.plugins import PluginHost
    from judgebench.spec import MetricSpec

#: Environment variables an actor gets from the driver (besides each judge's api_key_env):
#: where the code and caches are, offline switches.
FORWARDED_PREFIXES = ("JUDGEBENCH_", "HF_", "TRANSFORMERS_")
FORWARDED_NAMES = ("PYTHONPATH",)


@dataclass(frozen=True)
class RayConfig:
    """Where and how wide: `address` None starts a local instance sized to this machine
    (`num_cpus`, default its cores); `replicas` actors (default: one per CPU of the cluster,
    or per `gpus_per_replica` GPUs when set); `verbose` keeps Ray's own logs and bars."""

    address: str | None = None
    replicas: int | None = None
    gpus_per_replica: float = 0.0
    num_cpus: int | None = None
    verbose: bool = False


def scheduler_factory(config: RayConfig, settings: RunSettings) -> SchedulerFactory:
    """What `runner.run_stream(scheduler_factory=...)` takes to score on Ray."""
    return partial(RayScheduler, config, settings)


# -- starting and stopping Ray --------------------------------------------------------------
def quiet_environment() -> None:
    """No usage statistics, ever (set before Ray is imported or started)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"


def connect(config: RayConfig) -> bool:
    """Join the cluster at `config.address`, or start a local instance; False if this
    process was connected already (then it is not ours to shut down)."""
    quiet_environment()
    import ray

    if ray.is_initialized():
        return False
    options: dict[str, Any] = {
        "log_to_driver": config.verbose,
        "logging_level": logging.INFO if config.verbose else logging.ERROR,
        "namespace": "judgebench",
    }
    if config.address is None:
        options.update(num_cpus=config.num_cpus or os.cpu_count() or 1,
                       include_dashboard=False)
    else:
        options["address"] = config.address
    ray.init(**options)
    return True


@contextlib.contextmanager
def session(config: RayConfig) -> Iterator[None]:
    """Ray connected for the body (`connect`), shut down after it if it was started here."""
    owned = connect(config)
    try:
        yield
    finally:
        if owned:
            import ray

            ray.shutdown()


def forwarded_env(specs: Sequence[MetricSpec]) -> dict[str, str]:
    """The driver's variables the actors need: code path, caches, offline switches and the
    key variables the judges name (`api_key_env`; never logged, see `judgebench.redact`)."""
    keys = {str(s.options["api_key_env"]) for s in specs if s.options.get("api_key_env")}
    return {name: value for name, value in os.environ.items()
            if name in FORWARDED_NAMES or name in keys or name.startswith(FORWARDED_PREFIXES)}


# -- reading from an object store -----------------------------------------------------------
#: A URI with a scheme (s3://, gs://, abfs://, file://...): read through Ray Data.
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(text: str | os.PathLike[str]) -> bool:
    return isinstance(text, str) and URI.match(text) is not None


class UriSamples:
    """A generations file at a URI, read with Ray Data's readers in blocks (`read_text` for
    JSONL and CSV, so each line is parsed by judgebench's own readers, with the same rules and
    messages, naming the URI and the line; `read_parquet` for Parquet, naming the row), each
    iteration from the start, as `io.SampleFile` reads a local file. Ray must be connected
    (`session`)."""

    def __init__(self, uri: str) -> None:
        from judgebench.tables.io import file_format

        self.uri = uri
        self.format = file_format(uri)

    def _records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        import ray.data

        from judgebench.tables.io import _csv_records, _jsonl_records

        context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # rows in the file's order
        if not logging.getLogger("ray").isEnabledFor(logging.INFO):  # not -v: Ray Data quiet
            context.enable_progress_bars = False
            logging.getLogger("ray.data").setLevel(logging.ERROR)
        blocks: Any = None
        try:
            if self.format == "parquet":
                blocks = iter(ray.data.read_parquet(self.uri).iter_batches(
                    batch_size=4096, batch_format="pyarrow"))
                number = 0
                for batch in blocks:
                    for record in batch.to_pylist():
                        number += 1
                        yield number, record
                return
            blocks = iter(ray.data.read_text(self.uri, drop_empty_lines=False).iter_rows())
            lines = (str(row["text"]).removeprefix("\ufeff") if n == 0 else str(row["text"])
                     for n, row in enumerate(blocks))
            where: Any = self.uri  # the readers only quote it in messages
            yield from (_jsonl_records(lines, where) if self.format == "jsonl"
                        else _csv_records(lines, where))
        except (OSError, ray.exceptions.RayError) as exc:
            from judgebench.errors import InputError

            raise InputError(f"cannot read it through Ray Data: {failure_reason(exc)}",
                             path=self.uri) from None
        finally:
            if hasattr(blocks, "close"):  # now, while Ray is still connected
                blocks.close()

    def _numbered(self) -> Iterator[tuple[int, Sample]]:
        from judgebench.tables.io import position_name, to_sample

        where = position_name(self.uri)
        for position, record in self._records():
            yield position, to_sample(record, tabular=self.format != "jsonl", path=self.uri,
                                      **{where: position})

    def __iter__(self) -> Iterator[Sample]:
        from judgebench.errors import InputError
        from judgebench.tables.io import position_name, unique_stream

        empty = True
        for _, sample in unique_stream(self._numbered(), path=self.uri,
                                       where=position_name(self.uri), again=self._numbered):
            empty = False
            yield sample
        if empty:
            raise InputError("no samples: the file has a header or blank lines only",
                             path=self.uri)


# -- shared spending ------------------------------------------------------------------------
class SharedBudgetState:
    """The run's one budget (a named actor): checked, held and charged by every actor."""

    def __init__(self, limit_usd: float | None, allow_unknown_cost: bool) -> None:
        self.budget = Budget(limit_usd=limit_usd, allow_unknown_cost=allow_unknown_cost)

    def reserve(self, estimate_usd: float | None, model: str) -> tuple[float, str | None]:
        try:
            return self.budget.reserve(estimate_usd, model=model), None
        except BudgetExceeded as exc:
            return 0.0, str(exc)

    def check(self, next_cost_usd: float | None, model: str) -> str | None:
        try:
            self.budget.check(next_cost_usd, model=model)
        except BudgetExceeded as exc:
            return str(exc)
        return None

    def release(self, held_usd: float) -> None:
        self.budget.release(held_usd)

    def charge(self, cost_usd: float | None) -> None:
        self.budget.charge(cost_usd)

    def totals(self) -> tuple[float, int]:
        return self.budget.spent_usd, self.budget.unknown_cost_calls


@dataclass
class SharedBudget(Budget):
    """A `Budget` whose every check, hold and charge goes to the run's `SharedBudgetState`
    actor (what an actor's backends see as `runtime.current().budget`)."""

    state: Any = field(default=None, repr=False)

    def check(self, next_cost_usd: float | None = 0.0, *, model: str = "") -> None:
        import ray

        refused = ray.get(self.state.check.remote(next_cost_usd, model))
        if refused is not None:
            raise BudgetExceeded(refused)

    def reserve(self, estimate_usd: float | None, *, model: str = "") -> float:
        import ray

        held, refused = ray.get(self.state.reserve.remote(estimate_usd, model))
        if refused is not None:
            raise BudgetExceeded(refused)
        return float(held)

    def release(self, held_usd: float) -> None:
        import ray

        ray.get(self.state.release.remote(held_usd))

    def charge(self, cost_usd: float | None) -> None:
        import ray

        ray.get(self.state.charge.remote(cost_usd))


class SharedLimitsState:
    """One rpm/tpm limiter per (model, endpoint) for the whole cluster (a named actor)."""

    def __init__(self) -> None:
        self.limiters: dict[tuple[str, str], RateLimiter] = {}

    def _limiter(self, key: tuple[str, str], rpm: float | None, tpm: float | None
                 ) -> RateLimiter:
        from judgebench.backends.remote import RateLimiter

        if key not in self.limiters:
            self.limiters[key] = RateLimiter(rpm, tpm)
        return self.limiters[key]

    def try_acquire(self, key: tuple[str, str], rpm: float | None, tpm: float | None,
                    tokens: int) -> float:
        return self._limiter(key, rpm, tpm).try_acquire(tokens)

    def pause(self, key: tuple[str, str], rpm: float | None, tpm: float | None,
              seconds: float) -> None:
        self._limiter(key, rpm, tpm).pause(seconds)


def shared_limiter(state: Any, key: tuple[str, str], rpm: float | None,
                   tpm: float | None) -> RateLimiter:
    """A `RateLimiter` whose buckets are the cluster's (`SharedLimitsState`)."""
    import ray

    from judgebench.backends.remote import RateLimiter

    class SharedRateLimiter(RateLimiter):
        def try_acquire(self, tokens: int) -> float:
            return float(ray.get(state.try_acquire.remote(key, rpm, tpm, tokens)))

        def pause(self, seconds: float) -> None:
            ray.get(state.pause.remote(key, rpm, tpm, seconds))

    return SharedRateLimiter(rpm, tpm)


# -- the actor side -------------------------------------------------------------------------
@dataclass(frozen=True)
class BatchResult:
    """One batch scored by an actor: its outcomes (None: not finished, a budget stop), the
    seconds per sample, the budget stop's message, and the process that scored it."""

    outcomes: list[Outcome | None]
    seconds_per_sample: float | None
    budget_stop: str | None
    pid: int


class ScoringActor:
    """One plugin host and one instance of each metric, scoring whole batches."""

    def __init__(self, local_plugins: tuple[str, ...], specs: dict[str, MetricSpec],
                 settings: dict[str, Any], budget: Any, limits: Any) -> None:
        from judgebench.backends import remote

        remote.shared_limiters = partial(shared_limiter, limits)
        self.specs = specs
        self.metrics: dict[str, Any] = {}
        self.settings = RunSettings(budget=SharedBudget(state=budget), **settings)
        self.error: str | None = None
        try:
            from judgebench.plugins import build_host

            self.host = build_host(local_plugins)
        except Exception as exc:
            self.error = failure_reason(exc)

    def _metric(self, column: str) -> Any:
        if self.error is not None:
            raise RuntimeError(f"the plugin host failed in a Ray actor: {self.error}")
        if column not in self.metrics:
            self.metrics[column] = build(self.specs[column], self.host)
        return self.metrics[column]

    def where(self) -> dict[str, Any]:
        """Which code this actor runs, in which process, and whether its backends' limiters
        and budget are the cluster's (for checks and tests)."""
        from judgebench.backends import remote

        limiter = remote.limiter_for("probe", "http://where", None, None)
        # the package this module was loaded from (loaded before any of its modules)
        return {"judgebench": sys.modules["judgebench"].__file__, "pid": os.getpid(),
                "shared_limiter": type(limiter).__name__,
                "shared_budget": type(self.settings.budget).__name__}

    def signatures(self) -> dict[str, str]:
        """Each column's signature as this actor builds it (every metric built now, once),
        or why it cannot."""
        found = {}
        for column in self.specs:
            try:
                found[column] = str(self._metric(column).signature())
            except Exception as exc:
                found[column] = f"error: {failure_reason(exc)}"
        return found

    def score(self, column: str, batch: list[Sample]) -> BatchResult:
        from judgebench.engine.runtime import running

        metric = self._metric(column)
        with running(self.settings):
            if metric.streams:
                return _streamed(metric, batch)
            try:
                outcomes, per_sample = timed_score(metric, batch)
                return BatchResult(list(outcomes), per_sample, None, os.getpid())
            except BudgetExceeded as exc:
                # finished answers are in the judge cache: one at a time, they cost nothing
                finished = [outcome for outcome, _ in one_by_one(metric, batch)]
                return BatchResult(finished, None, str(exc), os.getpid())

    def close(self) -> None:
        for metric in self.metrics.values():
            metric.close()
        self.metrics.clear()


def _streamed(metric: Any, batch: list[Sample]) -> BatchResult:
    """A batch of a metric that yields each result as it finishes (a judge), kept as it
    comes: a budget stop returns every answer paid for, judge cache or not. A stream that
    fails leaves its other samples to be scored one by one (`scoring.score_streamed`)."""
    finished: list[Outcome | None] = [None] * len(batch)
    began = time.perf_counter()
    try:
        score_streamed(metric, batch, set(), finished.__setitem__)
    except BudgetExceeded as exc:
        return BatchResult(finished, None, str(exc), os.getpid())
    return BatchResult(finished, (time.perf_counter() - began) / len(batch), None, os.getpid())


# -- the driver side ------------------------------------------------------------------------
class BudgetStopped(BudgetExceeded):
    """A batch stopped by the budget in an actor, with what it `finished` (None: not)."""

    def __init__(self, message: str, finished: list[Outcome | None],
                 later: list[list[Outcome | None]] | None = None) -> None:
        super().__init__(message)
        self.finished = finished
        #: What the column's batches sent after this one finished (they were in flight).
        self.later = later or []


class RayScheduler:
    """`pool.BatchScheduler` on Ray: every segment-level column's batches go to the actors
    (started, with Ray itself, when the first batch is sent: a run with nothing to score, a
    resumed one, starts nothing). Outcomes come back in order; the driver commits them."""

    def __init__(self, config: RayConfig, settings: RunSettings, workers: int,
                 prepared: Sequence[PreparedMetric], host: PluginHost, rows: int,
                 on_estimate: Callable[[TimeEstimate], None] | None = None) -> None:
        self.config = config
        self.settings = settings
        self.host = host
        self.signatures = {p.column: p.signature for p in prepared}
        self.specs = {p.column: p.spec for p in prepared if p.segment_level}
        self.accepted: dict[str, bool] = {}
        self.actors: list[Any] = []
        self._turn: Iterator[int] = iter(())
        self._owns_ray = False
        self._budget: Any = None
        self._limits: Any = None
        self._new_actor: Callable[[], Any] = lambda: None
        #: Seconds from the first send to a started pool of actors (Ray start-up included).
        self.startup_s: float | None = None

    # -- BatchScheduler --
    def scored(self, p: PreparedMetric, rows: int, batches: Sequence[list[Sample]]
               ) -> Iterator[tuple[list[Outcome], float | None]] | None:
        if not batches or p.column not in self.specs:
            return None
        if not self.actors:
            self._start()
        if not self.accepted[p.column]:
            return None
        sent = [(self._next(), batch) for batch in batches]
        refs = [self.actors[a].score.remote(p.column, batch) for a, batch in sent]
        return self._collected(p.column, sent, refs)

    def close(self) -> None:
        import ray

        actors, self.actors = self.actors, []
        for actor in actors:
            ray.kill(actor)
        for helper in (self._budget, self._limits):
            if helper is not None:
                ray.kill(helper)
        self._budget = self._limits = None
        if self._owns_ray:
            self._owns_ray = False
            ray.shutdown()

    # -- inside --
    def _start(self) -> None:
        began = time.perf_counter()
        self._owns_ray = connect(self.config)
        import ray

        budget = self.settings.budget
        run = uuid.uuid4().hex[:12]
        self._budget = ray.remote(num_cpus=0)(SharedBudgetState).options(
            name=f"judgebench-budget-{run}").remote(budget.limit_usd, budget.allow_unknown_cost)
        self._limits = ray.remote(num_cpus=0)(SharedLimitsState).options(
            name=f"judgebench-limits-{run}").remote()
        settings = {f.name: getattr(self.settings, f.name) for f in fields(self.settings)
                    if f.name != "budget"}
        actor = ray.remote(ScoringActor).options(
            num_cpus=1, num_gpus=self.config.gpus_per_replica or 0,
            runtime_env={"env_vars": forwarded_env(list(self.specs.values()))})
        self._new_actor = partial(actor.remote, self.host.local_plugins, dict(self.specs),
                                  settings, self._budget, self._limits)
        self.actors = [self._new_actor() for _ in range(self._replicas())]
        self._turn = itertools.cycle(range(len(self.actors)))
        # Every actor builds every metric now, before any batch (a model loads once per
        # actor); a column an actor builds with another signature is scored in process.
        built = ray.get([a.signatures.remote() for a in self.actors])
        self.accepted = {column: all(b[column] == self.signatures[column] for b in built)
                         for column in self.specs}
        for column, accepted in self.accepted.items():
            if not accepted:
                other = next(b[column] for b in built if b[column] != self.signatures[column])
                print(f"warning: {column}: a Ray actor builds it as {other!r}, not as here; "
                      "it is scored on the driver", file=SafeWriter(sys.stderr))
        self.startup_s = time.perf_counter() - began

    def _replicas(self) -> int:
        import ray

        if self.config.replicas is not None:
            return max(1, self.config.replicas)
        resources = ray.cluster_resources()
        if self.config.gpus_per_replica:
            return max(1, int(resources.get("GPU", 0) // self.config.gpus_per_replica))
        return max(1, int(resources.get("CPU", 1)))

    def _next(self) -> int:
        return next(self._turn)

    def _collected(self, column: str, sent: Sequence[tuple[int, list[Sample]]],
                   refs: Sequence[Any]) -> Iterator[tuple[list[Outcome], float | None]]:
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        for position, ((actor, batch), ref) in enumerate(zip(sent, refs, strict=True)):
            try:
                found: BatchResult = ray.get(ref)
            except RayTaskError as exc:  # the call itself raised: every sample fails with it
                reason = f"in a Ray actor: {failure_reason(exc.cause or exc)}"
                yield [Outcome.failed(Status.ERROR, reason)] * len(batch), None
                continue
            except RayActorError:
                self._replace(actor)
                found = self._isolated(column, batch)
            if found.budget_stop is not None:
                later = [self._finished(batch, ref)
                         for (_, batch), ref in zip(sent[position + 1:], refs[position + 1:],
                                                    strict=True)]
                self._sync_budget()  # every call of this column has settled
                raise BudgetStopped(found.budget_stop, found.outcomes, later)
            self._sync_budget()
            outcomes = [o for o in found.outcomes if o is not None]
            yield outcomes, found.seconds_per_sample

    @staticmethod
    def _finished(batch: list[Sample], ref: Any) -> list[Outcome | None]:
        """What a batch sent before a budget stop finished (None: not finished)."""
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        try:
            found: BatchResult = ray.get(ref)
        except (RayTaskError, RayActorError):
            return [None] * len(batch)
        return list(found.outcomes)

    def _replace(self, index: int) -> None:
        """A fresh actor in place of a dead one (once: its other batches find it replaced)."""
        import ray
        from ray.exceptions import RayActorError

        try:
            ray.get(self.actors[index].where.remote())
        except RayActorError:
            self.actors[index] = self._new_actor()

    def _isolated(self, column: str, batch: list[Sample]) -> BatchResult:
        """A batch whose actor died, alone again; if that dies too, each sample alone, so
        one that kills its actor fails alone."""
        import ray
        from ray.exceptions import RayActorError

        index = self._next()
        try:
            result: BatchResult = ray.get(self.actors[index].score.remote(column, batch))
            return result
        except RayActorError:
            self._replace(index)
        outcomes: list[Outcome | None] = []
        for sample in batch:
            index = self._next()
            try:
                one: BatchResult = ray.get(self.actors[index].score.remote(column, [sample]))
                outcomes.extend(one.outcomes)
            except RayActorError:
                self._replace(index)
                outcomes.append(Outcome.failed(
                    Status.ERROR, "the Ray actor scoring this sample died"))
        return BatchResult(outcomes, None, None, os.getpid())

    def _sync_budget(self) -> None:
        """The driver's budget shows what the cluster spent (the run's record says it)."""
        import ray

        spent, unknown = ray.get(self._budget.totals.remote())
        self.settings.budget.spent_usd = spent
        self.settings.budget.unknown_cost_calls = unknown

