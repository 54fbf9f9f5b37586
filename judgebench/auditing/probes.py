"""Metamorphic probes: change an output in a known way and check the score moves as it must.

The probes are the ones registered through the `register_probes` hook (judgebench.probe.Probe;
the built-in ones are in plugins/judgebench_audit/probes.py). For each probe, every
applicable sample is scored as given and as changed, with the metric run exactly as
`judgebench score` runs it. With scores oriented so that higher is better (a lower-is-better
metric is negated) and d = score(changed) - score(original):

    expect "lower":  right when d < 0          (a tie is not a move)
    expect "same":   right when |d| <= atol + rtol |score(original)|
    expect "best":   right when score(changed) >= max over the item's systems of their
                     scores - tolerance (one changed sample per item; it and the item's
                     systems are all scored against the changed sample's references, e.g.
                     identity: the first reference as the output, against that reference alone)

    rate = right / n, over the n samples (items for "best") where both scores exist.

Sample-scope probes are scored in one run with the originals; run-scope probes (renaming every
system, another batch order) in a separate run each.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.models import Sample, Score
from judgebench.probe import Context, Probe, against, seeded_rng
from judgebench.spec import MetricSpec

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray

RTOL, ATOL = 1e-6, 1e-9


@dataclass
class ProbeResult:
    metric: str
    probe: str
    expect: str
    rate: float | None
    n: int
    right: int
    mean_delta: float | None
    skipped: int
    failed: int
    description: str

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("rate", "mean_delta"):
            if out[key] is not None and not math.isfinite(out[key]):
                out[key] = None
        return out


def probe_subset(samples: Sequence[Sample], items: int, seed: int) -> list[Sample]:
    """Every system's sample for `items` seeded-random items that have an output."""
    usable = sorted({s.item for s in samples if s.output})
    if len(usable) > items:
        pick = seeded_rng(seed, "items").choice(len(usable), items, replace=False)
        chosen = {usable[i] for i in pick}
    else:
        chosen = set(usable)
    return [s for s in samples if s.item in chosen and s.output]


ScoreFn = Callable[[Sequence[Sample]], list[float | None]]


def registered_probes(host: PluginHost | None = None) -> list[Probe]:
    """Every probe registered through `register_probes`, in registration order."""
    from judgebench.plugins import build_host

    return [entry.probe for entry in (host or build_host()).probes().values()
            if isinstance(entry.probe, Probe)]


def choose_probes(names: Sequence[str] | None, host: PluginHost | None = None) -> list[Probe]:
    """The registered probes named in `names` (all of them for None), in registration order."""
    known = registered_probes(host)
    if names is None:
        return known
    unknown = [n for n in names if n not in {p.name for p in known}]
    if unknown:
        raise ValueError(f"unknown probe(s) {unknown}; known: "
                         f"{', '.join(p.name for p in known)}")
    return [p for p in known if p.name in names]


@dataclass
class _Perturbed:
    """The changed samples of the sample-scope probes, each with its probe and the index of
    its original, and per probe how many samples it could not change."""

    samples: list[Sample]
    where: list[tuple[str, int]]  # (probe, index of the original)
    skipped: dict[str, int]

    def rows(self, probe: str) -> list[tuple[int, int]]:
        """(index of the original, index of the changed sample) of each of `probe`'s."""
        return [(k, j) for j, (name, k) in enumerate(self.where) if name == probe]


def run_probes(samples: Sequence[Sample], score: ScoreFn, *, metric: str,
               higher_is_better: bool = True, probes: Sequence[str] | None = None,
               seed: int = 0, host: PluginHost | None = None) -> list[ProbeResult]:
    """Every registered probe named in `probes` (default: all) for one metric, in
    registration order. `score(samples)` returns one value (None for a failure) per sample,
    in order, from one fresh run. The probes are `host`'s (default: the process's host)."""
    chosen = choose_probes(probes, host)
    sign = 1.0 if higher_is_better else -1.0
    changed = _perturb(chosen, samples, Context(samples, seed))
    rebased, extra = _against_changed_references(chosen, samples, changed)
    values = score([*samples, *changed.samples, *extra])
    oriented = np.array([np.nan if v is None else sign * v for v in values])
    original = oriented[:len(samples)]
    moved = oriented[len(samples):len(samples) + len(changed.samples)]
    baselines = _baselines(original, oriented[len(samples) + len(changed.samples):], rebased)
    results = []
    for probe in chosen:
        if probe.scope == "run":
            after = _rerun(probe, samples, score, seed=seed, sign=sign)
            results.append(_summarise(probe, metric, original, after, skipped=0))
            continue
        rows = changed.rows(probe.name)
        after = np.array([moved[j] for _, j in rows])
        skipped = changed.skipped.get(probe.name, 0)
        if probe.expect == "best":
            results.append(_best(probe, metric, samples, rows, baselines[probe.name], after,
                                 skipped))
        else:
            before = np.array([original[k] for k, _ in rows])
            results.append(_summarise(probe, metric, before, after, skipped=skipped))
    return results


def _perturb(chosen: Sequence[Probe], samples: Sequence[Sample], ctx: Context) -> _Perturbed:
    """Every sample-scope probe's changed samples, named `<system>~<probe>`; a change that
    leaves no output is skipped."""
    changed = _Perturbed([], [], {})
    for probe in chosen:
        if probe.scope == "run":
            continue
        for k, s in _inputs(probe, samples):
            perturbed = probe.perturb(s, ctx)
            if perturbed is None or not (perturbed.output or "").strip():
                changed.skipped[probe.name] = changed.skipped.get(probe.name, 0) + 1
                continue
            changed.samples.append(
                perturbed.model_copy(update={"system": f"{s.system}~{probe.name}"}))
            changed.where.append((probe.name, k))
    return changed


def _inputs(probe: Probe, samples: Sequence[Sample]) -> list[tuple[int, Sample]]:
    """The samples (with their index) a probe changes: every one, or for a "best" probe the
    first of each item (one output per item, shared by its systems)."""
    if probe.expect != "best":
        return list(enumerate(samples))
    seen_items: set[str] = set()
    firsts = []
    for k, s in enumerate(samples):
        if s.item not in seen_items:
            seen_items.add(s.item)
            firsts.append((k, s))
    return firsts


def _against_changed_references(chosen: Sequence[Probe], samples: Sequence[Sample],
                                changed: _Perturbed) -> tuple[dict[str, list[int]],
                                                              list[Sample]]:
    """A "best" probe compares with the item's systems scored against the changed sample's
    references; where those are already a system's references, its original score is that.
    Per "best" probe the indices of the samples to score again, and those samples."""
    rebased: dict[str, list[int]] = {}
    extra: list[Sample] = []
    for probe in chosen:
        if probe.expect != "best":
            continue
        alone = {samples[k].item: c.references
                 for (name, k), c in zip(changed.where, changed.samples, strict=True)
                 if name == probe.name}
        rebased[probe.name] = [k for k, s in enumerate(samples)
                               if s.item in alone and s.references != alone[s.item]]
        extra += [against(samples[k], alone[samples[k].item]).model_copy(
            update={"system": f"{samples[k].system}~{probe.name}-reference"})
            for k in rebased[probe.name]]
    return rebased, extra


def _baselines(original: FloatArray, rescored: FloatArray, rebased: dict[str, list[int]]
               ) -> dict[str, FloatArray]:
    """Per "best" probe, the original scores with the rebased samples' replaced by their
    scores against the changed references (`rescored`, in the order of `rebased`)."""
    baselines: dict[str, FloatArray] = {}
    start = 0
    for name, indices in rebased.items():
        baselines[name] = original.copy()
        baselines[name][indices] = rescored[start:start + len(indices)]
        start += len(indices)
    return baselines


def _rerun(probe: Probe, samples: Sequence[Sample], score: ScoreFn, *, seed: int,
           sign: float) -> FloatArray:
    """A run-scope probe's scores of every sample, oriented, from a separate run."""
    batch, index = probe.rerun(samples, seed)
    scored = score(batch)
    after = np.full(len(samples), np.nan)
    for position, i in enumerate(index):
        value = scored[position]
        if value is not None:
            after[i] = sign * value
    return after


def _summarise(probe: Probe, metric: str, before: FloatArray, after: FloatArray, *,
               skipped: int) -> ProbeResult:
    both = np.isfinite(before) & np.isfinite(after)
    failed = int((~both).sum())
    delta = after[both] - before[both]
    if probe.expect == "lower":
        right = delta < 0
    else:
        right = np.abs(delta) <= ATOL + RTOL * np.abs(before[both])
    n = int(both.sum())
    return ProbeResult(metric, probe.name, probe.expect, float(right.mean()) if n else None,
                       n, int(right.sum()), float(delta.mean()) if n else None, skipped,
                       failed, probe.description)


def _best(probe: Probe, metric: str, samples: Sequence[Sample],
          rows: list[tuple[int, int]], baseline: FloatArray, after: FloatArray,
          skipped: int) -> ProbeResult:
    """Per item: the changed sample must score at least the item's best system, all scored
    against the changed sample's references (`baseline`: the systems' scores so)."""
    best: dict[str, float] = {}
    for k, s in enumerate(samples):
        if np.isfinite(baseline[k]):
            best[s.item] = max(best.get(s.item, -np.inf), baseline[k])
    by_item: dict[str, float] = {}
    for (k, _), value in zip(rows, after, strict=True):
        if np.isfinite(value):
            by_item[samples[k].item] = value
    compared = [(by_item[i], best[i]) for i in by_item if i in best]
    right = [v >= b - (ATOL + RTOL * abs(b)) for v, b in compared]
    n = len(compared)
    return ProbeResult(metric, probe.name, probe.expect, float(np.mean(right)) if n else None,
                       n, int(sum(right)),
                       float(np.mean([v - b for v, b in compared])) if n else None,
                       skipped, len({samples[k].item for k, _ in rows}) - n,
                       probe.description + " (compared with the item's best system, scored "
                       "against the same reference)")


def runner_scores_fn(spec: MetricSpec, host: Any, settings: Any = None
                     ) -> Callable[[Sequence[Sample]], list[Score | None]]:
    """Score with the metric as `judgebench score` would: a fresh in-memory store per call
    (and `settings`, e.g. another judge-response cache, when given). One stored Score (sample
    index 0: value, status, extra) per sample, in order; None where none was stored."""
    from judgebench.engine.runner import run
    from judgebench.engine.store import Store

    def score(batch: Sequence[Sample]) -> list[Score | None]:
        with Store(":memory:") as store:
            result = run(list(batch), [spec], store=store, host=host, settings=settings)
            [prepared] = result.metrics
            stored = {(s.item, s.system): s for s in store.scores(prepared.signature)
                      if s.sample_index == 0}
        return [stored.get((s.item, s.system)) for s in batch]

    return score


def runner_score_fn(spec: MetricSpec, host: Any, settings: Any = None) -> ScoreFn:
    """The values of `runner_scores_fn` (None for a failure)."""
    scores = runner_scores_fn(spec, host, settings)

    def score(batch: Sequence[Sample]) -> list[float | None]:
        return [None if s is None else s.value for s in scores(batch)]

    return score
