"""The Metric base class every metric plugin subclasses.

A metric declares `info` (a MetricInfo) and, if it takes options, an `Options` pydantic model;
`Metric[OptionsT]` is generic over that model, so `self.options.x` type-checks
(`class Bleu(Metric[BleuOptions]): Options = BleuOptions`). A plain `Metric` subclass (no
parameter) works too; its `self.options` is then untyped.

A metric implements `score(samples)` (segment level: one result per sample) and, where it has
one, `corpus_score(samples)` (one number over one system's samples). A result is a float, or
an Outcome when it needs a status other than ok, a reason, raw judge text, tokens or cost;
`outcome_of` is the one rule that turns a result into an Outcome, for the runner and the audit.

A metric whose results finish one by one (an LLM judge: hundreds of requests in flight)
overrides `score_stream(samples)`: it yields `(index into samples, result)` as each sample
finishes, in completion order, and the runner commits each to the store as it comes, so the
progress bar moves per sample and a run killed mid-batch loses only the samples in flight.
The default yields `score`'s results in input order once the whole batch is done.

A segment-level metric whose corpus score comes from summed per-sample sufficient statistics
(sacrebleu's BLEU, chrF and TER) implements `statistics(samples)` (a short list of numbers per
sample) and `corpus_from_statistics(total)`, and returns each sample's statistics with its
result: a `WithStatistics` number, or an Outcome with them in `extra[STATISTICS]`. The runner
then adds them up per system during the segment pass (`add_statistics`: element by element,
in input order) and keeps no samples for that metric; they are stored with the score, so a
resumed run sums stored statistics and calls `statistics` only for stored scores that lack
them. A metric with only `corpus_score` keeps the samples of each system until the end of
the read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from judgebench.errors import InputError, JudgebenchError, PluginError
from judgebench.models import MetricInfo, Outcome, Sample, Signature, Status
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


OptionsT = TypeVar("OptionsT", bound=BaseModel)

# Bounds of numeric options. Every int and float option of a built-in metric has a lower and
# an upper bound (its card shows them), so a value past them is refused when the spec is read,
# before any work: an unbounded order or count (chrF's char_order with 400 digits) would run
# without end. These are the bounds several options share.
#: Tokens of one prompt, answer or context.
MAX_TOKENS = 1 << 24
#: Texts, samples or sequences handled at once.
MAX_BATCH = 1 << 16
#: Requests in flight, attempts, retries, members, folds, orders: small counts.
MAX_COUNT = 1000
#: Seconds of one wait (a request, a server's start): a day.
MAX_SECONDS = 86_400.0
#: A seed that numpy, faiss and scikit-learn take (they want 0 <= seed < 2**32).
MAX_SEED = 2**32 - 1
#: A seed that a model server takes (a signed 64-bit integer).
MIN_SEED64, MAX_SEED64 = -(2**63), 2**63 - 1
#: Either end of a judge's integer scale (min, max).
MAX_SCALE = 1000
#: A finite number option with no natural end (a rate, a constant).
MAX_MAGNITUDE = 1e12

#: The key of a sample's sufficient statistics in its Outcome's `extra`.
STATISTICS = "statistics"

#: What `Metric.estimate` returns for a metric that makes no model calls.
LOCAL_ESTIMATE: dict[str, Any] = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
                                  "note": "no model calls (local computation)"}


class Metric(Generic[OptionsT]):
    info: ClassVar[MetricInfo]
    #: The options model: built from the spec's options, every field enters the signature.
    #: It must forbid unknown fields (`extra="forbid"`), so a misspelt option is an error.
    Options: type[OptionsT] = NoOptions  # type: ignore[assignment]
    options: OptionsT
    #: "name version" of the plugin that registered the metric: set on the instance by the
    #: plugin host when it builds the metric (`MetricEntry.build`), empty for a metric built
    #: directly. It enters the signature.
    plugin: str = ""
    #: How many samples the runner hands to `score` at once.
    batch_size: ClassVar[int] = 64
    #: Whether `judgebench score --workers N` may score this metric in worker processes (one
    #: instance per worker, each batch wherever a worker is free). None decides by kind:
    #: `reference` and `sentinel` metrics (local computation) yes, `judge` and `learned` no
    #: (paid calls with their own concurrency, or a model in memory). A metric that loads a
    #: model, calls a server or keeps state across batches sets False.
    parallel_safe: ClassVar[bool | None] = None
    #: Which draw of `score --repeats K` this instance makes (set by the runner on the
    #: instance scoring draw r): a judge puts it in every request (`Request.repeat`), so each
    #: draw has its own judge-cache keys. 0 without --repeats.
    repeat: int = 0
    _host: PluginHost | None = None

    @property
    def host(self) -> PluginHost:
        """The plugin host that built this metric (`MetricEntry.build`): where it looks up
        its backend (`self.host.backend(name, **options)`) or a panel its members. A metric
        built directly (its class called) has none until it is given one
        (`metric.host = build_host()`); asking for it before raises a PluginError."""
        if self._host is None:
            info = getattr(self, "info", None)
            name = getattr(info, "name", None) or type(self).__name__
            raise PluginError(
                f"metric '{name}' has no plugin host: build it through one "
                f"(`host.metric('{name}').build(...)`, as judgebench does) or give it one "
                "(`metric.host = judgebench.plugins.build_host()`)")
        return self._host

    @host.setter
    def host(self, host: PluginHost) -> None:
        self._host = host

    def __init__(self, **options: Any) -> None:
        try:
            self.options = self.Options(**options)
        except ValidationError as exc:
            problems = "; ".join(self._problem(e["loc"], e["type"], e["msg"])
                                 for e in exc.errors())
            raise InputError(f"metric {self.info.name}: {problems}") from None

    def _problem(self, loc: Sequence[object], kind: str, message: str) -> str:
        """One option's validation error; a misspelt option name gets the closest ones."""
        name = ".".join(map(str, loc))
        if not name:  # a check across options
            return message.removeprefix("Value error, ")
        if kind != "extra_forbidden":
            return f"option '{name}': {message}"
        return (f"unknown option '{name}'{did_you_mean(name, self.Options.model_fields)} "
                f"(options: {', '.join(sorted(self.Options.model_fields)) or 'none'})")

    # -- what decides the numbers -------------------------------------------------------
    def signature_fields(self) -> dict[str, str]:
        """Everything besides name and version that decides a score. Extend, don't replace."""
        fields = {k: _text(v) for k, v in self.options.model_dump().items()}
        if self.plugin:
            fields["plugin"] = self.plugin
        return fields

    def signature(self) -> Signature:
        return Signature(
            metric=self.info.name, version=self.info.version, fields=self.signature_fields()
        )

    # -- scoring ------------------------------------------------------------------------
    def score(self, samples: Sequence[Sample]) -> Sequence[float | Outcome | None]:
        """One result per sample, in order. Raise to mark the whole batch as failed."""
        raise NotImplementedError(f"{self.info.name} has no segment-level score")

    def score_stream(self, samples: Sequence[Sample]
                     ) -> Iterator[tuple[int, float | Outcome | None]]:
        """`(index into samples, result)` as each sample finishes, each index once, in any
        order. Raise to stop: the results yielded before are kept and the runner scores the
        samples not yet yielded one by one (a BudgetExceeded stops the run, see the runner).
        The default: `score` of the whole batch, then its results in input order."""
        results = list(self.score(samples))
        if len(results) != len(samples):
            raise JudgebenchError(f"metric {self.info.name} returned {len(results)} results "
                                  f"for {len(samples)} samples")
        yield from enumerate(results)

    @property
    def streams(self) -> bool:
        """Whether this metric yields its results as they finish (`score_stream` overridden)."""
        return type(self).score_stream is not Metric.score_stream

    def corpus_score(self, samples: Sequence[Sample]) -> float | Outcome:
        """One number over the samples of one system (e.g. corpus BLEU). A metric whose info
        has `level="corpus"` or `has_corpus=True` must override it (checked at registration)."""
        raise NotImplementedError(f"{self.info.name} has no corpus-level score")

    def statistics(self, samples: Sequence[Sample]) -> list[list[float]]:
        """Each sample's sufficient statistics (the numbers `score` puts in its result's
        `extra[STATISTICS]`), for a metric that implements `corpus_from_statistics`. The
        runner calls it for stored scores that lack them. Raise as `score` would."""
        raise NotImplementedError(f"{self.info.name} has no sufficient statistics")

    def corpus_from_statistics(self, total: list[float]) -> float | Outcome:
        """The corpus score of one system from the `add_statistics` sum of its samples'
        statistics: what `corpus_score` gives on the same samples, exactly. Overriding it
        makes the runner use it instead of `corpus_score` for a segment-level metric."""
        raise NotImplementedError(f"{self.info.name} has no corpus score from statistics")

    @property
    def sums_statistics(self) -> bool:
        """Whether the runner computes this metric's corpus score from summed statistics."""
        return (self.info.level == "segment"
                and type(self).corpus_from_statistics is not Metric.corpus_from_statistics)

    def estimate(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """What scoring `samples` would cost, for `judgebench score --dry-run`: a mapping with
        `calls`, `tokens_in`, `tokens_out` and `cost_usd` (None where a price is unknown), and
        optionally a `note`. The default is a local metric's: no calls, nothing to pay."""
        return dict(LOCAL_ESTIMATE)

    def close(self) -> None:
        """Release models, sessions or files. Called once when a run ends."""


class WithStatistics(float):
    """A segment result that is its number and carries the sample's sufficient statistics
    (`statistics`); `outcome_of` moves them into the Outcome's `extra[STATISTICS]`."""

    statistics: list[float]

    def __new__(cls, value: float, statistics: Sequence[float]) -> WithStatistics:
        result = super().__new__(cls, value)
        result.statistics = list(statistics)
        return result

    def __getnewargs__(self) -> tuple[float, list[float]]:  # type: ignore[override]
        return float(self), self.statistics


def add_statistics(total: list[float] | None, stats: Sequence[float]) -> list[float]:
    """`total` plus one sample's statistics, element by element (`total` None: the first
    sample's, copied). Adding in input order gives sacrebleu's `sum_of_lists` exactly."""
    if total is None:
        return list(stats)
    if len(stats) != len(total):
        raise ValueError(f"statistics of {len(stats)} numbers added to {len(total)}")
    for i, value in enumerate(stats):
        total[i] += value
    return total


def outcome_of(result: object) -> Outcome:
    """The one rule for a metric's (or a sentinel's) result: an Outcome as it is; None, a
    non-number or NaN is an error status with the reason; any other number (infinities
    included) is an ok value, with the statistics of a `WithStatistics`."""
    if isinstance(result, Outcome):
        return result
    if isinstance(result, WithStatistics):
        outcome = outcome_of(float(result))
        if outcome.status is Status.OK:
            outcome.extra[STATISTICS] = list(result.statistics)
        return outcome
    if result is None:
        return Outcome.failed(Status.ERROR, "metric returned no value")
    try:
        value = float(result)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        kind = type(result).__name__
        return Outcome.failed(Status.ERROR, f"metric returned {kind}, not a number")
    if value != value:
        return Outcome.failed(Status.ERROR, "metric returned NaN")
    return Outcome(value=value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    if value is None:
        return "none"
    return str(value)
