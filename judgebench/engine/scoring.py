"""The scoring primitives: a metric built from its spec, one batch scored, the one requirement
rule. The runner (in process), the worker processes (`judgebench.engine.pool`) and the Ray actors
(`judgebench.engine.ray_engine`) score through these alike; batches, resume, the store and the table
are the runner's.

- `prepare` builds and signs a metric from its spec once (`build` is the same step where a
  worker or an actor needs its own instance);
- `score_batch` scores one batch (a batch that raises is scored sample by sample, so one bad
  sample fails alone), `score_streamed` one batch of a metric that yields its results as they
  finish (`Metric.score_stream`), `one_by_one` what a batch stopped by the budget finished;
- `lacks` is what a metric needs of a sample: the field it requires, where `input` is the
  input or else the source (`Sample.input_text`); a run stops before any work when a sample
  lacks it (`runner.Survey.check_requirements`).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judgebench.engine.runtime import BudgetExceeded
from judgebench.errors import InputError, JudgebenchError
from judgebench.metric import MAX_COUNT, Metric, outcome_of
from judgebench.models import Outcome, Sample, Status
from judgebench.redact import redact
from judgebench.spec import MetricSpec

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost
    from judgebench.registry import MetricEntry


# -- preparing a metric ---------------------------------------------------------------------
@dataclass
class PreparedMetric:
    spec: MetricSpec
    metric: Metric
    signature: str
    #: `score --repeats K`: the draw this instance scores (stored as the score's sample
    #: index), and the draws its column has (the table's cell is their mean).
    repeat: int = 0
    repeats: int = 1
    #: How the table's cell combines the draws: "mean", or "majority" (the most frequent
    #: value; a pairwise judge's verdicts always).
    cell: str = "mean"

    @property
    def column(self) -> str:
        return self.spec.column

    @property
    def segment_level(self) -> bool:
        return self.metric.info.level == "segment"

    @property
    def corpus_level(self) -> bool:
        return self.metric.info.level == "corpus" or self.metric.info.has_corpus


def build(spec: MetricSpec, host: PluginHost, entry: MetricEntry | None = None) -> Metric:
    """The metric `spec` names, with its options (`entry`: its registration, when already
    looked up)."""
    return (entry or host.metric(spec.name)).build(**spec.options)


def prepare(spec: MetricSpec, host: PluginHost, entry: MetricEntry | None = None
            ) -> PreparedMetric:
    """`spec`'s metric, built and signed."""
    metric = build(spec, host, entry)
    return PreparedMetric(spec, metric, str(metric.signature()))


def repeatable(metric: Metric) -> bool:
    """Whether `score --repeats K` draws a metric K times: a judge, whose options say its
    sampling temperature. A metric without one is deterministic and scored once."""
    return metric.info.kind == "judge" and hasattr(metric.options, "temperature")


#: The most draws `score --repeats K` takes (bounded as a metric's counts are: a larger K
#: would only grow memory before the first call).
MAX_REPEATS = MAX_COUNT


def plan_repeats(prepared: Sequence[PreparedMetric], repeats: int, allow_greedy: bool = False,
                 cell: str | None = None, pairwise: bool = False) -> None:
    """`score --repeats K`, checked and noted on each metric that will be drawn (its
    `repeats` and `cell`) without building any draw (`further_draws`): each repeatable
    segment-level metric (`repeatable`) gets `repeats` draws. `repeats` is 1 to MAX_REPEATS.
    A judge at temperature 0 draws K times only with `allow_greedy` (its draws would be
    copies, or differ by the server's own noise): an InputError before any work otherwise.
    `cell`: how the table's cell combines the draws, "mean" (default) or "majority" (a
    categorical judge's most frequent score); a pairwise table's verdicts are always the
    majority."""
    if not 1 <= repeats <= MAX_REPEATS:
        raise InputError(f"--repeats must be 1 to {MAX_REPEATS}, not {repeats}",
                         field="--repeats")
    if cell not in (None, "mean", "majority"):
        raise InputError(f"{cell!r} is not a cell: mean or majority", field="--repeats-cell")
    if pairwise and cell == "mean":
        raise InputError("a pairwise table's cell is a verdict: its draws combine by majority "
                         "(leave --repeats-cell out, or give majority)", field="--repeats-cell")
    how = "majority" if pairwise else cell or "mean"
    if repeats == 1:
        return
    for p in prepared:
        if not (p.segment_level and repeatable(p.metric)):
            continue
        if float(getattr(p.metric.options, "temperature", 0.0)) == 0.0 and not allow_greedy:
            raise InputError(
                f"--repeats {repeats}: {p.column} is a judge at temperature 0, whose draws "
                "are not independent; give it temperature>0, or --repeats-allow-greedy to "
                "draw anyway (a server's own noise)", field="--repeats")
    for p in prepared:
        if p.segment_level and repeatable(p.metric):
            p.repeats, p.cell = repeats, how


def further_draws(prepared: Sequence[PreparedMetric], host: PluginHost
                  ) -> list[PreparedMetric]:
    """The draws after draw 0 of each metric `plan_repeats` chose: one instance per further
    draw, built anew from its spec with the same signature."""
    extra: list[PreparedMetric] = []
    for p in prepared:
        for r in range(1, p.repeats):
            metric = build(p.spec, host)
            metric.repeat = r
            extra.append(PreparedMetric(p.spec, metric, p.signature, repeat=r,
                                        repeats=p.repeats, cell=p.cell))
    return extra


def with_repeats(prepared: Sequence[PreparedMetric], host: PluginHost, repeats: int,
                 allow_greedy: bool = False, cell: str | None = None, pairwise: bool = False
                 ) -> list[PreparedMetric]:
    """`prepared` (draw 0, the table's columns) then every further draw: `plan_repeats`,
    then `further_draws`."""
    plan_repeats(prepared, repeats, allow_greedy, cell, pairwise)
    return [*prepared, *further_draws(prepared, host)]


def prepare_metrics(specs: Sequence[MetricSpec], host: PluginHost,
                    entries: Sequence[MetricEntry] | None = None) -> list[PreparedMetric]:
    """Every spec's metric, built and signed (`entries`: their registrations, when already
    looked up); an InputError first if two specs name one column."""
    columns = Counter(spec.column for spec in specs)
    twice = [c for c, n in columns.items() if n > 1]
    if twice:
        raise InputError(f"metric column(s) given twice: {twice} (a column is named by its "
                         "spec less the options that only say how to reach a model, such as "
                         "api_base or concurrency; name columns yourself with --config)")
    if entries is None:
        return [prepare(spec, host) for spec in specs]
    return [prepare(spec, host, entry) for spec, entry in zip(specs, entries, strict=True)]


# -- what a metric needs of a sample --------------------------------------------------------
def needed(sample: Sample, name: str) -> Any:
    """The value a metric that requires field `name` reads: the field's, but for `input`,
    the input or else the source (`Sample.input_text`)."""
    return sample.input_text if name == "input" else getattr(sample, name)


def lacks(sample: Sample, name: str) -> bool:
    """Whether a sample lacks what a metric requiring field `name` reads (`needed`): absent
    (None), or a list or dict with nothing in it. An empty string is a value: an empty output
    is a text, and each metric says what it does with one (`MetricInfo.empty_text`)."""
    value = needed(sample, name)
    return value is None or (isinstance(value, list | dict) and len(value) == 0)


# -- scoring one batch ----------------------------------------------------------------------
def failure_reason(exc: BaseException) -> str:
    """An exception as a failed score's reason (scrubbed of secrets)."""
    return redact(f"{type(exc).__name__}: {exc}") or type(exc).__name__


def score_batch(metric: Metric, batch: Sequence[Sample]) -> list[Outcome]:
    """Score a batch; if it raises, score its samples one by one so one bad sample fails
    alone, with its reason."""
    try:
        results = list(metric.score(batch))
        if len(results) != len(batch):
            raise JudgebenchError(
                f"metric {metric.info.name} returned {len(results)} results for "
                f"{len(batch)} samples"
            )
    except (BudgetExceeded, KeyboardInterrupt):
        raise
    except Exception as exc:
        if len(batch) == 1:
            return [Outcome.failed(Status.ERROR, failure_reason(exc))]
        return [outcome for sample in batch for outcome in score_batch(metric, [sample])]
    return [outcome_of(r) for r in results]


def timed_score(metric: Metric, batch: Sequence[Sample]) -> tuple[list[Outcome], float]:
    """`score_batch` of `batch`, and the seconds it took per sample."""
    began = time.perf_counter()
    outcomes = score_batch(metric, batch)
    return outcomes, (time.perf_counter() - began) / len(batch)


def score_streamed(metric: Metric, batch: Sequence[Sample], done: set[int],
                   commit: Callable[[int, Outcome], None]) -> None:
    """Give `commit` each outcome of a batch of a metric that yields its results as they
    finish (`Metric.score_stream`), as it comes, and add its index to `done` once committed.
    If the stream fails (it raised, or yielded a bad or no index for some samples), the
    samples it did not yield are scored one by one, as `score_batch` does. A BudgetExceeded
    is raised, `done` saying what was committed before it."""

    def kept(index: int, outcome: Outcome) -> None:
        commit(index, outcome)
        done.add(index)

    failure = _commit_stream(metric, batch, done, kept)
    if failure is not None:
        for index in [i for i in range(len(batch)) if i not in done]:
            (outcome,) = ([Outcome.failed(Status.ERROR, failure_reason(failure))]
                          if len(batch) == 1 else score_batch(metric, [batch[index]]))
            kept(index, outcome)


def _commit_stream(metric: Metric, batch: Sequence[Sample], done: set[int],
                   commit: Callable[[int, Outcome], None]) -> Exception | None:
    """Commit each result `metric.score_stream(batch)` yields; return what made the stream
    fail (it raised, or yielded a bad or no index for some samples), None if it did not. An
    error committing (the store) is raised, not taken for the metric's."""
    stream = metric.score_stream(batch)
    try:
        while True:
            try:
                index, r = next(stream)
            except StopIteration:
                break
            except (BudgetExceeded, KeyboardInterrupt):
                raise
            except Exception as exc:
                return exc
            if not 0 <= index < len(batch) or index in done:
                return JudgebenchError(f"metric {metric.info.name} streamed index {index} "
                                       f"for a batch of {len(batch)} (out of range or twice)")
            commit(index, outcome_of(r))
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()  # a stream left early stops its calls
    if len(done) < len(batch):
        return JudgebenchError(f"metric {metric.info.name} streamed no result for "
                               f"{len(batch) - len(done)} of {len(batch)} samples")
    return None


def one_by_one(metric: Metric, batch: Sequence[Sample]
               ) -> Iterator[tuple[Outcome | None, float]]:
    """What a batch stopped by the budget finished: its samples scored one at a time, which
    costs nothing for answers already in the judge cache and stops again before any new
    spending; per sample its outcome (None: stopped by the budget) and the seconds it took."""
    for sample in batch:
        began = time.perf_counter()
        try:
            (outcome,) = score_batch(metric, [sample])
        except BudgetExceeded:
            yield None, time.perf_counter() - began
            continue
        yield outcome, time.perf_counter() - began
