"""A third-party trained sentinel: the mean human score of the same system on the other items.

It subclasses the host's Sentinel and registers through `register_sentinels`, as any plugin's.
"""

from __future__ import annotations

from collections.abc import Sequence

from judgebench.hookspecs import hookimpl
from judgebench.metric import NoOptions
from judgebench.models import MetricInfo, Outcome, Sample, Status
from judgebench.registry import SentinelRegister
from judgebench.sentinel import Sentinel


class SystemPrior(Sentinel[NoOptions]):
    """Per sample: the mean human score of its system over the other items (leave one out)."""

    info = MetricInfo(name="sentinel.system-prior", version="1", kind="sentinel", requires=(),
                      description="Mean human score of the system on the other items.")
    trained = True

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        return [Outcome.failed(Status.SKIPPED, "needs human scores") for _ in samples]

    def fit_predict(self, samples: Sequence[Sample],
                    human: Sequence[float | None]) -> list[float | Outcome]:
        out: list[float | Outcome] = []
        for s in samples:
            others = [h for t, h in zip(samples, human, strict=True)
                      if t.system == s.system and t.item != s.item and h is not None]
            out.append(sum(others) / len(others) if others else
                       Outcome.failed(Status.SKIPPED, "no other item of this system"))
        return out


@hookimpl
def register_sentinels(register: SentinelRegister) -> None:
    register(SystemPrior)
