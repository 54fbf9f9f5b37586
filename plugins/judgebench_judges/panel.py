"""judge.panel: several judges (e.g. one judge metric on different models) combined.

``judge.panel:judge=judge.rubric,models=m1;m2;m3,combine=majority,criterion=coherence``:
one member per model (``backends`` may list one backend per model, or one for all); every
other option is passed to each member. In a TOML config, ``members`` may instead list full
metric specs. ``combine=mean`` averages the members that answered; ``combine=majority``
takes the most frequent value among them (a tie between values: their mean; Verga et al.
2024, "Replacing Judges with Juries", use max voting and average pooling). Fewer than
``quorum`` answering members is an error. Each member's value, status and reason are kept
in ``extra["members"]``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judgebench.plugin_api import (
    MAX_COUNT,
    REQUEST_KEYS,
    EmptyText,
    InputError,
    Metric,
    MetricInfo,
    Outcome,
    Sample,
    Status,
    run_sync,
)
from judgebench_judges.base import JudgeMetric

#: The panel reads no text itself: each member judge judges an empty one.
PANEL_EMPTY = EmptyText(output="scored", reference="scored", input="scored",
                        note="as its member judges, which judge an empty text like any other")


class PanelOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    judge: str = "judge.rubric"
    models: list[str] = Field(default_factory=list, examples=["MODEL_A;MODEL_B"])
    backends: list[str] = Field(default_factory=list)
    members: list[str] = Field(default_factory=list)
    combine: Literal["mean", "majority"] = "mean"
    quorum: int = Field(1, ge=1, le=MAX_COUNT)

    @field_validator("models", "backends", "members", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(";") if part.strip()]
        return value


class JudgePanel(Metric[PanelOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.panel", version="1", kind="judge", requires=(), deterministic=False,
        empty_text=PANEL_EMPTY,
        description="Several judges (e.g. models) combined by mean or majority; each member's "
                    "verdict kept.",
        citation="Verga et al. (2024). Replacing Judges with Juries: Evaluating LLM "
                 "Generations with a Panel of Diverse Models. arXiv:2404.18796.",
    )
    Options = PanelOptions
    batch_size: ClassVar[int] = 512

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.members: list[JudgeMetric[Any]] = self._build_members()
        if len(self.members) < self.options.quorum:
            raise InputError(f"metric judge.panel: {len(self.members)} member(s), fewer than "
                             f"quorum={self.options.quorum}")

    def _build_members(self) -> list[JudgeMetric[Any]]:
        o = self.options
        shared = dict(o.model_extra or {})
        specs: list[tuple[str, dict[str, Any]]] = []
        if o.members:
            from judgebench.plugin_api import parse_spec

            for text in o.members:
                spec = parse_spec(text)
                specs.append((spec.name, {**shared, **spec.options}))
        else:
            if not o.models:
                raise InputError("metric judge.panel: give models=a;b;... or members=...")
            if o.backends and len(o.backends) not in (1, len(o.models)):
                raise InputError("metric judge.panel: backends needs one entry, or one per model")
            for i, model in enumerate(o.models):
                opts = {**shared, "model": model}
                if o.backends:
                    opts["backend"] = o.backends[i if len(o.backends) > 1 else 0]
                specs.append((o.judge, opts))
        members = []
        for name, opts in specs:
            if not name.startswith("judge.") or name == "judge.panel":
                raise InputError(f"metric judge.panel: member '{name}' is not a judge metric")
            member = self.host.metric(name).build(**opts)  # the host that built the panel
            if not isinstance(member, JudgeMetric):
                raise InputError(f"metric judge.panel: member '{name}' is not a judge metric")
            members.append(member)
        return members

    _repeat: int = 0

    @property
    def repeat(self) -> int:
        """Which draw of `score --repeats K` this panel makes; every member makes the same
        draw (its requests, and so its judge-cache keys, carry it: a member left at draw 0
        would replay draw 0's answers as every draw)."""
        return self._repeat

    @repeat.setter
    def repeat(self, value: int) -> None:
        self._repeat = value
        for member in getattr(self, "members", []):
            member.repeat = value

    def signature_fields(self) -> dict[str, str]:
        signatures = [str(m.signature()) for m in self.members]
        digest = hashlib.sha256("\n".join(signatures).encode()).hexdigest()[:12]
        fields = {"combine": self.options.combine, "quorum": str(self.options.quorum),
                  "members": f"{len(self.members)}:{digest}"}
        if self.plugin:
            fields["plugin"] = self.plugin
        return fields

    def unpriced_models(self) -> list[str]:
        """Every member's paid model whose price is unknown (`Budget.preflight`)."""
        return [model for m in self.members for model in getattr(m, "unpriced_models", list)()]

    def member_signatures(self) -> list[str]:
        return [str(m.signature()) for m in self.members]

    def score(self, samples: Sequence[Sample]) -> list[Outcome]:
        return run_sync(self.ascore(samples))

    async def ascore(self, samples: Sequence[Sample]) -> list[Outcome]:
        per_member = await asyncio.gather(*(m.ascore(samples) for m in self.members))
        return [self.combine([results[i] for results in per_member])
                for i in range(len(samples))]

    def combine(self, outcomes: list[Outcome]) -> Outcome:
        members = [
            {"signature": str(m.signature()), "value": o.value, "status": str(o.status),
             "reason": o.reason, "extra": o.extra}
            for m, o in zip(self.members, outcomes, strict=True)
        ]
        costs = [o.cost_usd for o in outcomes]
        accounting = {
            "tokens_in": _sum([o.tokens_in for o in outcomes]),
            "tokens_out": _sum([o.tokens_out for o in outcomes]),
            "cost_usd": None if any(c is None for c in costs)
            else math.fsum(c for c in costs if c is not None),
            "latency_s": _sum([o.latency_s for o in outcomes]),
        }
        values = [o.value for o in outcomes if o.status == Status.OK and o.value is not None]
        extra: dict[str, Any] = {"members": members, "answered": len(values)}
        keys = [key for o in outcomes for key in o.extra.get(REQUEST_KEYS, [])]
        if keys:  # the panel's score links to every member's requests (`judgebench logs`)
            extra[REQUEST_KEYS] = keys
        if len(values) < self.options.quorum:
            reasons = "; ".join(f"{m['status']}: {m['reason']}" for m in members
                                if m["status"] != "ok")
            statuses = {o.status for o in outcomes}
            status = statuses.pop() if len(statuses) == 1 else Status.ERROR
            return Outcome.failed(status, f"{len(values)} of {len(outcomes)} members answered, "
                                  f"quorum is {self.options.quorum}: {reasons}", extra=extra,
                                  **accounting)
        if self.options.combine == "mean":
            value = math.fsum(values) / len(values)
        else:
            counts = Counter(values)
            top = max(counts.values())
            tied = [v for v, c in counts.items() if c == top]
            value = math.fsum(tied) / len(tied)
            extra["votes"] = {str(v): c for v, c in counts.items()}
        return Outcome(value=value, extra=extra, **accounting)

    def estimate(self, samples: Sequence[Sample]) -> dict[str, Any]:
        total: dict[str, Any] = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        for member in self.members:
            part = member.estimate(samples)
            for key in ("calls", "tokens_in", "tokens_out"):
                total[key] += part[key]
            total["cost_usd"] = (None if total["cost_usd"] is None or part["cost_usd"] is None
                                 else total["cost_usd"] + part["cost_usd"])
        return total

    def close(self) -> None:
        for member in self.members:
            member.close()


def _sum(values: list[Any]) -> Any:
    return None if any(v is None for v in values) else sum(values)
