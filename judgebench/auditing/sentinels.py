"""Compute the registered sentinels on a scores table, per human column.

The scores table has no text, so sentinels that read text (length, cand, src, ref) take it
from the generations (`samples`), matched on (item, system). Rows without what a sentinel
needs get a skipped status with the reason; a sentinel that raises gets an error status on
every row. Every sentinel is a judgebench.sentinel.Sentinel and is scored through its
contract: `fit_predict(samples, human)`, once per human column for a trained one
(`trained = True`), once and shared by every human column for a blind one. Its results become
Outcomes by the runner's own rule (`judgebench.metric.outcome_of`: None, a non-number or NaN
is an error; infinities are values).
"""

from __future__ import annotations

import math
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.engine.scoring import lacks, needed
from judgebench.errors import InputError, PluginError
from judgebench.metric import outcome_of
from judgebench.models import Outcome, Sample, Status
from judgebench.sentinel import Sentinel
from judgebench.spec import MetricSpec, parse_spec
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray


@dataclass
class SentinelRun:
    """One sentinel's scores on the table rows, per human column (NaN where it failed)."""

    column: str
    name: str
    signature: str
    description: str
    trained: bool
    values: dict[str, FloatArray] = field(default_factory=dict)
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)
    reasons: dict[str, dict[str, str]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {"column": self.column, "name": self.name, "signature": self.signature,
                "description": self.description, "trained": self.trained,
                "statuses": self.statuses, "reasons": self.reasons}


def default_specs(host: PluginHost) -> list[MetricSpec]:
    return [MetricSpec(name=name) for name in sorted(host.sentinels())]


def parse_sentinels(texts: Sequence[str], host: PluginHost) -> list[MetricSpec]:
    """Sentinel specs from the command line; none given means every registered sentinel."""
    if not texts:
        return default_specs(host)
    known = host.sentinels()
    specs = [parse_spec(t) for t in texts]
    for spec in specs:
        if spec.name not in known:
            raise InputError(f"unknown sentinel '{spec.name}'{did_you_mean(spec.name, known)} "
                             f"(registered: {', '.join(sorted(known)) or 'none'})",
                             field="--sentinel")
    return specs


def align_samples(frame: pd.DataFrame, samples: Sequence[Sample] | None
                  ) -> tuple[list[Sample], FloatArray]:
    """One Sample per table row (a bare one where the generations have none) and a mask of
    the rows that have generations."""
    items = frame["item"].astype("str").tolist()
    systems = frame["system"].astype("str").tolist()
    if samples is None:
        bare = [Sample(item=i, system=s) for i, s in zip(items, systems, strict=True)]
        return bare, np.zeros(len(bare), dtype=bool)
    by_key = {(s.item, s.system): s for s in samples}
    out, found = [], np.zeros(len(items), dtype=bool)
    for row, key in enumerate(zip(items, systems, strict=True)):
        sample = by_key.get(key)
        found[row] = sample is not None
        out.append(sample if sample is not None else Sample(item=key[0], system=key[1]))
    if samples and not found.any():
        raise InputError("no (item, system) of the scores table is in the generations",
                         field="--samples")
    return out, found


def _lacks(sample: Sample, name: str) -> bool:
    """What a sentinel cannot score: what any metric lacks (`scoring.lacks`), and an empty
    text, which has no features."""
    return lacks(sample, name) or needed(sample, name) == ""


def compute_sentinels(frame: pd.DataFrame, *, humans: Sequence[str],
                      samples: Sequence[Sample] | None, specs: Sequence[MetricSpec],
                      host: PluginHost, samples_path: str | None = None) -> list[SentinelRun]:
    """Every sentinel in `specs` on the rows of `frame`, for each human column."""
    rows, found = align_samples(frame, samples)
    # Every sentinel is built and signed before the first one runs: what one lacks (an
    # option, an extra) is refused before any work.
    built = [_build(spec, host) for spec in specs]
    runs = []
    for spec, (sentinel, signature) in zip(specs, built, strict=True):
        info = sentinel.info
        trained = sentinel.trained
        run = SentinelRun(column=spec.column, name=info.name, signature=signature,
                          description=info.description, trained=trained)
        # Rows this sentinel cannot score, and why.
        blocked: dict[int, str] = {}
        for row, sample in enumerate(rows):
            for name in info.requires:
                if _lacks(sample, name):
                    if samples is None:
                        why = f"needs the '{name}' text: give the generations with --samples"
                    elif not found[row]:
                        where = samples_path or "the generations"
                        why = f"no generation for this (item, system) in {where}"
                    else:
                        why = f"the generation has no '{name}'"
                    blocked[row] = why
                    break
        usable = [r for r in range(len(rows)) if r not in blocked]
        shared: list[Outcome] | None = None
        for human in humans:
            if trained or shared is None:
                target = frame[human].to_numpy(dtype=float, na_value=np.nan)
                outcomes = _run(sentinel, [rows[r] for r in usable],
                                [None if math.isnan(target[r]) else float(target[r])
                                 for r in usable])
                if not trained:
                    shared = outcomes
            else:
                outcomes = shared
            values = np.full(len(rows), np.nan)
            counts: Counter[str] = Counter()
            reasons: dict[str, str] = {}
            for r, outcome in zip(usable, outcomes, strict=True):
                counts[str(outcome.status)] += 1
                if outcome.status == Status.OK and outcome.value is not None:
                    values[r] = outcome.value
                elif outcome.reason:
                    reasons.setdefault(str(outcome.status), outcome.reason)
            for why in blocked.values():
                counts[str(Status.SKIPPED)] += 1
                reasons.setdefault(str(Status.SKIPPED), why)
            run.values[human] = values
            run.statuses[human] = dict(counts)
            run.reasons[human] = reasons
        sentinel.close()
        runs.append(run)
    return runs


def _build(spec: MetricSpec, host: PluginHost) -> tuple[Sentinel, str]:
    """The sentinel of `spec`, and its signature."""
    entry = host.sentinels().get(spec.name)
    if entry is None:
        raise InputError(f"unknown sentinel '{spec.name}'", field="--sentinel")
    sentinel = entry.build(**spec.options)
    if not isinstance(sentinel, Sentinel):  # registration checks the class, not its objects
        raise PluginError(f"plugin '{entry.plugin}': sentinel '{spec.name}' built "
                          f"{type(sentinel).__name__}, not a judgebench.sentinel.Sentinel")
    return sentinel, str(sentinel.signature())


def _run(sentinel: Sentinel, samples: list[Sample], human: list[float | None]
         ) -> list[Outcome]:
    if not samples:
        return []
    try:
        results = list(sentinel.fit_predict(samples, human))
        if len(results) != len(samples):
            raise ValueError(f"returned {len(results)} results for {len(samples)} samples")
    except InputError:
        raise
    except Exception as exc:
        reason = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return [Outcome.failed(Status.ERROR, reason)] * len(samples)
    return [outcome_of(r) for r in results]
