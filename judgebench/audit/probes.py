"""Metamorphic probes: change an output in a known way and check the score moves as it must.

For each probe, every applicable sample is scored as given and as changed, with the metric
run exactly as `judgebench score` runs it. With scores oriented so that higher is better
(a lower-is-better metric is negated) and d = score(changed) - score(original):

    expect "lower":  right when d < 0          (a tie is not a move)
    expect "same":   right when |d| <= atol + rtol |score(original)|
    expect "best":   right when score(changed) >= max over the item's systems of their
                     scores - tolerance (identity: the first reference as the output; it and
                     the item's systems are all scored against that reference alone)

    rate = right / n, over the n samples (items for "best") where both scores exist.

Probes (after CheckList's invariance and directional tests, Ribeiro et al. 2020, and the
perturbation checks of Sai et al. 2021, "Perturbation CheckLists for Evaluating NLG
Evaluation Metrics"): identity, truncation, word shuffle, a dropped sentence, an unrelated
output (another item's, same system), repetition, negation, number change (all "lower" but
identity), case and whitespace changes (must not matter), renaming every system and changing
the batch order (must not change any score; scored in separate runs).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from judgebench.models import Sample, Score
from judgebench.spec import MetricSpec

Expect = Literal["lower", "same", "best"]
RTOL, ATOL = 1e-6, 1e-9
SENTENCE = re.compile(r"(?<=[.!?])\s+")
AUXILIARIES = ("is", "are", "was", "were", "will", "would", "can", "could", "should", "has",
               "have", "had", "does", "did", "must", "may", "might")
NEGATION = re.compile(r"\b(not|never|no)\b\s*|n't\b", flags=re.IGNORECASE)
AUXILIARY = re.compile(r"\b(" + "|".join(AUXILIARIES) + r")\b", flags=re.IGNORECASE)
NUMBER = re.compile(r"\d+")


def _rng(*key: object) -> np.random.Generator:
    digest = hashlib.sha256("\x1f".join(map(str, key)).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))


@dataclass(frozen=True)
class Context:
    """What a transform may look at besides its sample: every probed sample, and a seed."""

    samples: Sequence[Sample]
    seed: int


# -- transforms: a changed output, or None where the probe does not apply --------------------
def identity(s: Sample, ctx: Context) -> str | None:
    return s.references[0] if s.references else None


def against(s: Sample, reference: str) -> Sample:
    """`s` with `reference` as its only reference (unchanged if that is all it has)."""
    return s if s.references == [reference] else s.model_copy(update={"reference": reference})


def truncation(s: Sample, ctx: Context) -> str | None:
    words = (s.output or "").split()
    return " ".join(words[: len(words) // 2]) if len(words) >= 4 else None


def shuffle(s: Sample, ctx: Context) -> str | None:
    words = (s.output or "").split()
    if len(set(words)) < 2:
        return None
    order = _rng(ctx.seed, "shuffle", s.item, s.system).permutation(len(words))
    changed = " ".join(words[i] for i in order)
    return changed if changed != " ".join(words) else " ".join(reversed(words))


def drop_sentence(s: Sample, ctx: Context) -> str | None:
    sentences = [x for x in SENTENCE.split((s.output or "").strip()) if x]
    if len(sentences) < 2:
        return None
    drop = int(_rng(ctx.seed, "drop", s.item, s.system).integers(len(sentences)))
    return " ".join(x for k, x in enumerate(sentences) if k != drop)


def unrelated(s: Sample, ctx: Context) -> str | None:
    """The same system's output for another item (the next one in sorted order)."""
    others = sorted({x.item for x in ctx.samples if x.system == s.system and x.item != s.item
                     and x.output})
    if not others:
        return None
    later = [i for i in others if i > s.item]
    other = later[0] if later else others[0]
    return next(x.output for x in ctx.samples if x.system == s.system and x.item == other)


def repetition(s: Sample, ctx: Context) -> str | None:
    text = (s.output or "").strip()
    return f"{text} {text}" if text else None


def negation(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    if NEGATION.search(text):
        return NEGATION.sub("", text, count=1)
    match = AUXILIARY.search(text)
    if match is None:
        return None
    return f"{text[:match.end()]} not{text[match.end():]}"


def numbers(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    if not NUMBER.search(text):
        return None
    return NUMBER.sub(lambda m: str(int(m.group()) * 2 + 3), text)


def case(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    changed = text.lower() if text != text.lower() else text.upper()
    return changed if changed != text else None


def whitespace(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    if " " not in text.strip():
        return None
    return "  " + "  ".join(text.split(" ")) + " \n"


@dataclass(frozen=True)
class Probe:
    name: str
    expect: Expect
    description: str
    transform: Callable[[Sample, Context], str | None] | None = None


PROBES: tuple[Probe, ...] = (
    Probe("identity", "best", "output = the first reference, scored against it alone",
          identity),
    Probe("truncation", "lower", "first half of the words only", truncation),
    Probe("shuffle", "lower", "words in a random order", shuffle),
    Probe("drop-sentence", "lower", "one sentence removed", drop_sentence),
    Probe("unrelated", "lower", "the same system's output for another item", unrelated),
    Probe("repetition", "lower", "the output written twice", repetition),
    Probe("negation", "lower", "a negation added or removed", negation),
    Probe("numbers", "lower", "every number changed", numbers),
    Probe("case", "same", "letter case changed", case),
    Probe("whitespace", "same", "spaces doubled, leading and trailing whitespace", whitespace),
    Probe("rename-systems", "same", "every system renamed (separate run)"),
    Probe("batch-order", "same", "samples in another order (separate run)"),
)
PROBE_NAMES = tuple(p.name for p in PROBES)


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
        pick = _rng(seed, "items").choice(len(usable), items, replace=False)
        chosen = {usable[i] for i in pick}
    else:
        chosen = set(usable)
    return [s for s in samples if s.item in chosen and s.output]


ScoreFn = Callable[[Sequence[Sample]], list[float | None]]


def run_probes(samples: Sequence[Sample], score: ScoreFn, *, metric: str,
               higher_is_better: bool = True, probes: Sequence[str] = PROBE_NAMES,
               seed: int = 0) -> list[ProbeResult]:
    """Every probe in `probes` for one metric. `score(samples)` returns one value (None for
    a failure) per sample, in order, from one fresh run."""
    unknown = [p for p in probes if p not in PROBE_NAMES]
    if unknown:
        raise ValueError(f"unknown probe(s) {unknown}; known: {', '.join(PROBE_NAMES)}")
    sign = 1.0 if higher_is_better else -1.0
    ctx = Context(samples, seed)
    chosen = [p for p in PROBES if p.name in probes]
    changed: list[Sample] = []
    where: list[tuple[str, int]] = []  # (probe, index of the original)
    skipped: dict[str, int] = {}
    for probe in chosen:
        if probe.transform is None:
            continue
        seen_items: set[str] = set()
        for k, s in enumerate(samples):
            if probe.expect == "best":  # one output per item, shared by its systems
                if s.item in seen_items:
                    continue
                seen_items.add(s.item)
            text = probe.transform(s, ctx)
            if text is None or not text.strip():
                skipped[probe.name] = skipped.get(probe.name, 0) + 1
                continue
            base = against(s, text) if probe.name == "identity" else s
            changed.append(base.model_copy(update={"output": text,
                                                   "system": f"{s.system}~{probe.name}"}))
            where.append((probe.name, k))
    # identity compares with the item's systems scored against the same single reference;
    # where that is already their only reference, their original scores are that comparison.
    alone = {samples[k].item: c.output or "" for (name, k), c in zip(where, changed, strict=True)
             if name == "identity"}
    rebased = [k for k, s in enumerate(samples)
               if s.item in alone and s.references != [alone[s.item]]]
    extra = [against(samples[k], alone[samples[k].item]).model_copy(
        update={"system": f"{samples[k].system}~identity-reference"}) for k in rebased]
    values = score([*samples, *changed, *extra])
    oriented = np.array([np.nan if v is None else sign * v for v in values])
    original = oriented[:len(samples)]
    moved = oriented[len(samples):len(samples) + len(changed)]
    baseline = original.copy()
    baseline[rebased] = oriented[len(samples) + len(changed):]
    results = []
    for probe in chosen:
        if probe.name == "rename-systems":
            renamed = [s.model_copy(update={"system": f"renamed-{_short(s.system)}"})
                       for s in samples]
            after = np.array([np.nan if v is None else sign * v for v in score(renamed)])
            results.append(_summarise(probe, metric, original, after, skipped=0))
        elif probe.name == "batch-order":
            order = _rng(seed, "order").permutation(len(samples))
            scored = score([samples[i] for i in order])
            after = np.full(len(samples), np.nan)
            for position, i in enumerate(order):
                if scored[position] is not None:
                    after[i] = sign * scored[position]
            results.append(_summarise(probe, metric, original, after, skipped=0))
        else:
            rows = [(k, j) for j, (name, k) in enumerate(where) if name == probe.name]
            before = np.array([original[k] for k, _ in rows])
            after = np.array([moved[j] for _, j in rows])
            if probe.expect == "best":
                results.append(_identity(probe, metric, samples, rows, baseline, after,
                                         skipped.get(probe.name, 0)))
            else:
                results.append(_summarise(probe, metric, before, after,
                                          skipped=skipped.get(probe.name, 0)))
    return results


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def _summarise(probe: Probe, metric: str, before: np.ndarray, after: np.ndarray, *,
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


def _identity(probe: Probe, metric: str, samples: Sequence[Sample],
              rows: list[tuple[int, int]], baseline: np.ndarray, after: np.ndarray,
              skipped: int) -> ProbeResult:
    """Per item: the reference as output must score at least the item's best system, all
    scored against that reference alone (`baseline`: the systems' scores so)."""
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
    from judgebench.runner import run
    from judgebench.store import Store

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
