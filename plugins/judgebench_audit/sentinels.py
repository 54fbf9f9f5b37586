"""The sentinels that need no training: random, constant and length.

Each is a judgebench.sentinel.Sentinel (the host's base class, which every sentinel
subclasses): blind, so `fit_predict` (the base's) ignores the human scores. The trained ones
are in judgebench_audit.regressors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from judgebench.plugin_api import (
    MAX_MAGNITUDE,
    MAX_SEED,
    EmptyText,
    MetricInfo,
    Outcome,
    Sample,
    Sentinel,
    Status,
)

SENTINEL_CITATION = ("Perrella, Proietti, Scirè, Barba and Navigli (2024). Guardians of the "
                     "Machine Translation Meta-Evaluation: Sentinel Metrics Fall In! ACL.")


def unit_normal(*key: object) -> float:
    """A standard normal draw determined only by `key` (not by call order or process)."""
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode("utf-8")).digest()
    entropy = int.from_bytes(digest[:16], "little")
    return float(np.random.default_rng(entropy).standard_normal())


#: The sentinels that read no text: every sample gets its value, whatever its texts.
NO_TEXT = EmptyText(note="every sample gets its value, whatever its texts")


class RandomOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    noise: float = Field(default=1.0, ge=0, le=MAX_MAGNITUDE)


class RandomSentinel(Sentinel[RandomOptions]):
    """sentinel.random: a seeded random mean per system plus random noise per item.

    value(item, system) = mu_system + noise * e_(item, system), with mu and e standard normal
    draws keyed by (seed, system) and (seed, item, system) (WMT23's random-sysname sentinel:
    Freitag et al. 2023, "Results of WMT23 Metrics Shared Task"). It is blind to content;
    batch order and system order do not change it.
    """

    info = MetricInfo(
        name="sentinel.random", version="1", kind="sentinel", requires=(),
        empty_text=NO_TEXT,
        description="Seeded random score per system plus per-item noise: blind to content.",
        citation=SENTINEL_CITATION,
    )
    Options = RandomOptions

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        seed, noise = self.options.seed, self.options.noise
        means: dict[str, float] = {}
        out: list[float | Outcome] = []
        for s in samples:
            if s.system not in means:
                means[s.system] = unit_normal(seed, "system", s.system)
            out.append(means[s.system] + noise * unit_normal(seed, "item", s.item, s.system))
        return out


class ConstantOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: float = Field(default=0.0, ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)


class ConstantSentinel(Sentinel[ConstantOptions]):
    """sentinel.constant: the same score for every output.

    Every pair is a metric tie: correlations are undefined, while tie-crediting statistics
    (acc-23, acc-eq) credit it with every pair people rate equal.
    """

    info = MetricInfo(
        name="sentinel.constant", version="1", kind="sentinel", requires=(),
        empty_text=NO_TEXT,
        description="The same score for every output (a metric that only predicts ties).",
        citation=SENTINEL_CITATION,
    )
    Options = ConstantOptions

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        return [self.options.value] * len(samples)


class LengthOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit: Literal["words", "chars"] = "words"


class LengthSentinel(Sentinel[LengthOptions]):
    """sentinel.length: the output's length in whitespace-separated words (or characters)."""

    info = MetricInfo(
        name="sentinel.length", version="1", kind="sentinel", requires=("output",),
        empty_text=EmptyText(output="scored", note="0 words, 0 characters"),
        description="Output length (words or chars): rewards whatever length people prefer.",
        citation=SENTINEL_CITATION,
    )
    Options = LengthOptions

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        out: list[float | Outcome] = []
        for s in samples:
            if s.output is None:
                out.append(Outcome.failed(Status.SKIPPED, "sample has no output text"))
            elif self.options.unit == "words":
                out.append(float(len(s.output.split())))
            else:
                out.append(float(len(s.output)))
        return out
