"""The Metric base class every metric plugin subclasses.

A metric declares `info` (a MetricInfo) and, if it takes options, an `Options` pydantic model;
`Metric[OptionsT]` is generic over that model, so `self.options.x` type-checks
(`class Bleu(Metric[BleuOptions]): Options = BleuOptions`). A plain `Metric` subclass (no
parameter) works too; its `self.options` is then untyped.

A metric implements `score(samples)` (segment level: one result per sample) and, where it has
one, `corpus_score(samples)` (one number over one system's samples). A result is a float, or
an Outcome when it needs a status other than ok, a reason, raw judge text, tokens or cost;
`outcome_of` is the one rule that turns a result into an Outcome, for the runner and the audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from judgebench.errors import InputError
from judgebench.models import MetricInfo, Outcome, Sample, Signature, Status


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


OptionsT = TypeVar("OptionsT", bound=BaseModel)

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

    def __init__(self, **options: Any) -> None:
        try:
            self.options = self.Options(**options)
        except ValidationError as exc:
            problems = "; ".join(
                f"option '{'.'.join(map(str, e['loc'])) or '?'}': {e['msg']}" for e in exc.errors()
            )
            raise InputError(f"metric {self.info.name}: {problems}") from None

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

    def corpus_score(self, samples: Sequence[Sample]) -> float | Outcome:
        """One number over the samples of one system (e.g. corpus BLEU). A metric whose info
        has `level="corpus"` or `has_corpus=True` must override it (checked at registration)."""
        raise NotImplementedError(f"{self.info.name} has no corpus-level score")

    def estimate(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """What scoring `samples` would cost, for `judgebench score --dry-run`: a mapping with
        `calls`, `tokens_in`, `tokens_out` and `cost_usd` (None where a price is unknown), and
        optionally a `note`. The default is a local metric's: no calls, nothing to pay."""
        return dict(LOCAL_ESTIMATE)

    def close(self) -> None:
        """Release models, sessions or files. Called once when a run ends."""


def outcome_of(result: object) -> Outcome:
    """The one rule for a metric's (or a sentinel's) result: an Outcome as it is; None, a
    non-number or NaN is an error status with the reason; any other number (infinities
    included) is an ok value."""
    if isinstance(result, Outcome):
        return result
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
