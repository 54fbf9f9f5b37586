"""The registered judge-bias probes (judgebench.bias_probe.BiasProbe) on a pointwise or a
pairwise judge: each probe's seeded edit, the judge's move, the shift with its interval and
a verdict against a threshold.

pointwise   every sample scored as given and with its output edited (in one run); with
            scores oriented so that higher is better, a sample's move is +1 where the edited
            output scores higher, -1 lower, 0 the same (|d| <= atol + rtol |original|, as the
            metamorphic probes' "same").
pairwise    every distinct answer of the pairs judged against its edited copy in both orders
            (edited first, edited second); a presentation's verdict for the edited copy is +1
            (it wins), -1 (the original wins) or 0 (a tie), and the answer's move is the mean
            of its two presentations' (so a judge that always picks one position moves 0).

shift (meta_eval.bias_shift.preference_shift): the mean move, in [-1, 1] (0: the judge
ignores the edit), with its Student-t interval at the audit's --ci. Verdict against a
threshold X (the probe's own, or `--fail-on bias:NAME>X`), for a probe whose edit keeps the
quality (expect "same"):

    biased        the interval lies wholly outside [-X, X]
    unbiased      the interval lies wholly inside [-X, X]

and for one whose edit adds a flaw (expect "lower": a fair judge falls by at least X):

    biased        the interval lies wholly above -X (the judge overlooks the flaw)
    unbiased      the interval lies wholly below -X

    inconclusive  otherwise; undetermined where fewer than two units have a move

self-preference (pointwise; after Panickssery et al. 2024, "LLM Evaluators Recognize and
Favor Their Own Generations"): over pairs of outputs on one item, one of the judge's model
family and one of another, the move is (sign(judge own - judge other) - sign(people own -
people other)) / 2: +1 where the judge prefers its family's output against people, 0 where it
agrees with them; the shift and verdict are as above (the pairs of one item share outputs, so
the interval treats them as independent).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from judgebench.auditing.bias import BiasResult, verdicts
from judgebench.auditing.probes import ATOL, RTOL
from judgebench.conversation import with_output
from judgebench.probe import seeded_rng
from meta_eval.bias_shift import Shift, preference_shift

if TYPE_CHECKING:
    from judgebench.bias_probe import BiasExpect, BiasProbe, Mode
    from judgebench.models import Sample
    from meta_eval.arrays import FloatArray

ScoreFn = Callable[[Sequence["Sample"]], list[float | None]]
MEASURE = "shift"


class _Named(Protocol):
    """Any probe with a name (a variant probe: judgebench.auditing.bias_variants)."""

    name: str


def verdict(shift: Shift, threshold: float, expect: BiasExpect = "same") -> str:
    """biased, unbiased, inconclusive or undetermined (module docstring)."""
    if not (math.isfinite(shift.low) and math.isfinite(shift.high)):
        return "undetermined"
    if expect == "lower":
        return ("biased" if shift.low > -threshold else "unbiased"
                if shift.high < -threshold else "inconclusive")
    if shift.low > threshold or shift.high < -threshold:
        return "biased"
    if -threshold <= shift.low and shift.high <= threshold:
        return "unbiased"
    return "inconclusive"


def signature(probe: BiasProbe | _SelfPreference | _Named, *, judge: str, mode: Mode,
              confidence: float, seed: int) -> str:
    from judgebench._version import __version__

    return (f"bias.{probe.name}@{__version__}|ci:t-{confidence:g}|judge:{judge}|mode:{mode}"
            f"|seed:{seed}|statistic:{MEASURE}")


def _edited(probe: BiasProbe, text: str | None, seed: int, item: str, system: str | None
            ) -> str | None:
    changed = probe.edit(text or "", seeded_rng(seed, "bias", probe.name, item, system))
    return changed if changed and changed.strip() and changed != text else None


def _result(probe: BiasProbe | _SelfPreference, moves: FloatArray, *, judge: str,
            mode: Mode, seed: int, confidence: float, threshold: float, skipped: int,
            extra: dict[str, float | int | str | None]) -> BiasResult:
    shift = preference_shift(moves=moves, confidence=confidence)
    said = verdict(shift, threshold, probe.expect)
    failed = int(np.isnan(moves).sum())
    interval = (f"{confidence:.0%} CI {shift.low:+.3f} to {shift.high:+.3f}"
                if shift.n >= 2 else f"no interval: {shift.n} unit(s) with a move")
    rule = (f"|shift| > {threshold:g}" if probe.expect == "same"
            else f"shift > -{threshold:g} (a fair judge falls)")
    note = (f"{mode}: share moved towards the edited answer minus the share moved away "
            f"({interval}); {said} at {rule}")
    return BiasResult(judge, probe.name, MEASURE, shift.value, shift.n, note, {
        "mode": mode, "edit": probe.description, "expect": probe.expect,
        "ci_low": _finite(shift.low), "ci_high": _finite(shift.high),
        "confidence": confidence, "threshold": threshold, "verdict": said,
        "skipped": skipped, "failed": failed,
        "signature": signature(probe, judge=judge, mode=mode, confidence=confidence,
                               seed=seed), **extra})


def _finite(value: float) -> float | None:
    """None for NaN (JSON has no NaN)."""
    return value if math.isfinite(value) else None


def pointwise(samples: Sequence[Sample], score: ScoreFn, *, probes: Sequence[BiasProbe],
              judge: str, higher_is_better: bool, seed: int, confidence: float,
              thresholds: Mapping[str, float] | None = None) -> list[BiasResult]:
    """Every probe in `probes` on a judge that scores one output (module docstring)."""
    if not probes:
        return []
    edited: list[Sample] = []
    where: list[tuple[str, int]] = []
    skipped: dict[str, int] = {}
    for probe in probes:
        for k, s in enumerate(samples):
            text = _edited(probe, s.output, seed, s.item, s.system)
            if text is None:
                skipped[probe.name] = skipped.get(probe.name, 0) + 1
                continue
            edited.append(with_output(s, text).model_copy(
                update={"system": f"{s.system}~bias-{probe.name}"}))
            where.append((probe.name, k))
    sign = 1.0 if higher_is_better else -1.0
    values = np.array([np.nan if v is None else sign * v
                       for v in score([*samples, *edited])], dtype=float)
    before, after = values[:len(samples)], values[len(samples):]
    out = []
    for probe in probes:
        rows = [(k, j) for j, (name, k) in enumerate(where) if name == probe.name]
        old = np.array([before[k] for k, _ in rows], dtype=float)
        new = np.array([after[j] for _, j in rows], dtype=float)
        delta = new - old
        same = np.abs(delta) <= ATOL + RTOL * np.abs(old)
        moves = np.where(np.isfinite(delta), np.where(same, 0.0, np.sign(delta)), np.nan)
        known = np.isfinite(delta)
        out.append(_result(probe, moves, judge=judge, mode="pointwise", seed=seed,
                           confidence=confidence,
                           threshold=(thresholds or {}).get(probe.name, probe.threshold),
                           skipped=skipped.get(probe.name, 0),
                           extra={"mean_delta": float(delta[known].mean()) if known.any()
                                  else None}))
    return out


def pairwise(pairs: Sequence[Sample], score: ScoreFn, *, probes: Sequence[BiasProbe],
             judge: str, center: float, seed: int, confidence: float,
             thresholds: Mapping[str, float] | None = None) -> list[BiasResult]:
    """Every probe in `probes` on a judge that compares two outputs (module docstring)."""
    if not probes:
        return []
    answers = _answers(pairs)
    shown: list[Sample] = []
    where: list[str] = []
    skipped: dict[str, int] = {}
    for probe in probes:
        for j, (pair, system, text) in enumerate(answers):
            changed = _edited(probe, text, seed, pair.item, system)
            if changed is None:
                skipped[probe.name] = skipped.get(probe.name, 0) + 1
                continue
            tag = f"answer{j}~bias-{probe.name}"
            edited_system = f"{system}~bias-{probe.name}"
            shown += [pair.model_copy(update={
                          "output_a": changed, "output_b": text, "system_a": edited_system,
                          "system_b": system, "system": f"{tag}-first"}),
                      pair.model_copy(update={
                          "output_a": text, "output_b": changed, "system_a": system,
                          "system_b": edited_system, "system": f"{tag}-second"})]
            where.append(probe.name)
    signs = verdicts(score(shown), center)
    first, second = signs[0::2], -signs[1::2]
    out = []
    for probe in probes:
        mine = np.array([name == probe.name for name in where], dtype=bool)
        a, b = first[mine], second[mine]
        moves = np.where(np.isfinite(a) & np.isfinite(b), (a + b) / 2, np.nan)
        presentations = np.r_[a, b]
        decided = presentations[np.isfinite(presentations)]
        out.append(_result(probe, moves, judge=judge, mode="pairwise", seed=seed,
                           confidence=confidence,
                           threshold=(thresholds or {}).get(probe.name, probe.threshold),
                           skipped=skipped.get(probe.name, 0),
                           extra={"edited_wins": float((decided > 0).mean())
                                  if decided.size else None,
                                  "tie_rate": float((decided == 0).mean())
                                  if decided.size else None}))
    return out


def _answers(pairs: Sequence[Sample]) -> list[tuple[Sample, str | None, str]]:
    """Each distinct (item, system, text) answer of the pairs, with a pair it came from,
    as many as there are pairs."""
    seen: set[tuple[str, str | None, str]] = set()
    out: list[tuple[Sample, str | None, str]] = []
    for pair in pairs:
        for system, text in ((pair.system_a, pair.output_a), (pair.system_b, pair.output_b)):
            key = (pair.item, system, text or "")
            if text and text.strip() and key not in seen:
                seen.add(key)
                out.append((pair, system, text))
    return out[:len(pairs)]


def bias_samples(samples: Sequence[Sample], *, count: int, seed: int) -> list[Sample]:
    """`count` seeded samples with an output (all of them if fewer), in their order."""
    usable = [s for s in samples if s.output and s.output.strip()]
    if len(usable) <= count:
        return usable
    picks = seeded_rng(seed, "bias-samples").choice(len(usable), count, replace=False)
    return [usable[i] for i in sorted(int(i) for i in picks)]


def self_preference(samples: Sequence[Sample], score: ScoreFn, *, judge: str,
                    judge_family: str | None, families: Mapping[str, str],
                    human: Mapping[tuple[str, str], float], higher_is_better: bool,
                    count: int, seed: int, confidence: float, threshold: float = 0.1
                    ) -> BiasResult:
    """The pointwise self-preference shift (module docstring) over `count` seeded (own,
    other) pairs of `samples` with people's scores `human[(item, system)]`."""
    if not judge_family or not families:
        return BiasResult(judge, "self-preference", MEASURE, None, 0,
                          "skipped: give the judge's model family and the systems' "
                          "(--judge-family, --system-family SYSTEM=FAMILY)")
    pairs = _own_pairs(samples, judge_family, families, human)
    if not pairs:
        return BiasResult(judge, "self-preference", MEASURE, None, 0,
                          f"skipped: no item has an output of family '{judge_family}' and "
                          "one of another, both with people's scores")
    if len(pairs) > count:
        pick = seeded_rng(seed, "bias", "self-preference").choice(len(pairs), count,
                                                                  replace=False)
        pairs = [pairs[int(i)] for i in sorted(pick)]
    scored = sorted({k for pair in pairs for k in pair})
    sign = 1.0 if higher_is_better else -1.0
    values = dict(zip(scored, (np.nan if v is None else sign * v
                               for v in score([samples[k] for k in scored])), strict=True))
    moves = np.full(len(pairs), np.nan)
    for u, (own, other) in enumerate(pairs):
        a, b = values[own], values[other]
        if math.isfinite(a) and math.isfinite(b):
            judged = 0.0 if abs(a - b) <= ATOL + RTOL * abs(b) else float(np.sign(a - b))
            people = float(np.sign(_human(samples[own], human) - _human(samples[other], human)))
            moves[u] = (judged - people) / 2
    probe = _SelfPreference()
    return _result(probe, moves, judge=judge, mode="pointwise", seed=seed,
                   confidence=confidence, threshold=threshold, skipped=0,
                   extra={"family": judge_family, "pairs": len(pairs)})


class _SelfPreference:
    """What `_result` reads of a probe, for the self-preference shift (not an edit)."""

    name = "self-preference"
    description = "an output of the judge's family against another's on the same item"
    expect: BiasExpect = "same"


def _human(s: Sample, human: Mapping[tuple[str, str], float]) -> float:
    return human[(s.item, s.system or "")]


def _own_pairs(samples: Sequence[Sample], family: str, families: Mapping[str, str],
               human: Mapping[tuple[str, str], float]) -> list[tuple[int, int]]:
    """(own, other) sample indices on one item, each with a finite human score."""
    by_item: dict[str, list[int]] = {}
    for k, s in enumerate(samples):
        h = human.get((s.item, s.system or ""))
        if s.output and s.system in families and h is not None and math.isfinite(h):
            by_item.setdefault(s.item, []).append(k)
    out = []
    for item in sorted(by_item):
        own = [k for k in by_item[item] if families[samples[k].system or ""] == family]
        other = [k for k in by_item[item] if families[samples[k].system or ""] != family]
        out += [(a, b) for a in own for b in other]
    return out
