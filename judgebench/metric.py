"""The Metric base class every metric plugin subclasses.

A metric declares `info` (a MetricInfo) and, if it takes options, an `Options` pydantic model.
It implements `score(samples)` (segment level: one result per sample) and, where it has one,
`corpus_score(samples)` (one number over one system's samples). A result is a float, or an
Outcome when it needs a status other than ok, a reason, raw judge text, tokens or cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from judgebench.errors import InputError
from judgebench.models import MetricInfo, Outcome, Sample, Signature


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Metric:
    info: ClassVar[MetricInfo]
    Options: ClassVar[type[BaseModel]] = NoOptions
    #: Filled in by the plugin host from the distribution that registered the metric.
    plugin: ClassVar[str] = ""
    #: How many samples the runner hands to `score` at once.
    batch_size: ClassVar[int] = 64

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
        """One number over the samples of one system (e.g. corpus BLEU)."""
        raise NotImplementedError(f"{self.info.name} has no corpus-level score")

    def close(self) -> None:
        """Release models, sessions or files. Called once when a run ends."""


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)
    if value is None:
        return "none"
    return str(value)
