"""Judge-bias probes that judge the same samples under variants of the judge's own options
(no edit of the text): the judge is biased if its verdict depends on how the question is
put rather than on what is judged.

label-scheme  (pairwise; the label-scheme bias of Ye et al. 2024, "Justice or Prejudice?
              Quantifying Biases in LLM-as-a-Judge", and Zheng et al. 2023's naming of the
              assistants) each pair judged with the responses labelled "A/B", "1/2" and by
              random ids (judge.pairwise's `labels=`). A pair's move is 1 where its verdicts
              of the order shown (`verdict_ab`; +1 first wins, -1 second wins, 0 tie) are not
              all the same under the schemes, 0 where they are, NaN where one is missing.

scale-inversion (pointwise; CALM's scale/criterion wording, Ye et al. 2024) each sample
              scored as the judge is and with its criterion worded negatively and the scale
              flipped (judge.rubric's `invert=`, whose answer s comes back as lo + hi - s);
              with scores oriented so that higher is better, a sample's move is +1 where the
              mapped-back score is higher, -1 lower, 0 the same (|d| <= atol + rtol |plain|,
              as the metamorphic probes' "same").

criteria-order (pointwise; the order of the criteria in a multi-criteria prompt) each sample
              rated on its criteria as the judge asks them and with their order reversed
              (judge.rubric's `criteria=`); for each criterion on its own, a sample's move is
              +1 where its score is higher with the order reversed, -1 lower, 0 the same (as
              scale-inversion's), so a judge that rates the first-listed criterion up moves
              that criterion down and the last one up. One result per criterion; a judge
              rating fewer than two criteria is not probed (a skipped row says why).

shift (meta_eval.bias_shift.preference_shift): the mean move (for label-scheme the share of
pairs whose verdict changes with the labels, in [0, 1], its interval kept there: where no
verdict or every verdict changed, the Clopper-Pearson interval of 0 or n in n), with its
Student-t interval at the audit's --ci; verdict as bias_battery's for a probe that keeps
the quality (expect "same": biased where the interval lies wholly outside [-X, X], unbiased
where wholly inside).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from judgebench.auditing.bias import BiasResult, verdicts
from judgebench.auditing.bias_battery import MEASURE, signature, verdict
from judgebench.auditing.probes import ATOL, RTOL
from meta_eval.bias_shift import preference_shift

if TYPE_CHECKING:
    from judgebench.bias_probe import BiasExpect, Mode
    from judgebench.models import Sample
    from meta_eval.arrays import FloatArray

ScoreFn = Callable[[Sequence["Sample"]], list[float | None]]
#: Each sample's score per criterion (a multi-criteria judge), None for a failure.
CriteriaFn = Callable[[Sequence["Sample"]], list["Mapping[str, float] | None"]]
#: judge.pairwise's labels= values, the first the judge's default.
LABEL_SCHEMES = ("ab", "12", "random-ids")
#: Each variant probe and the kind of judge it applies to.
VARIANT_PROBES: dict[str, Mode] = {"label-scheme": "pairwise", "scale-inversion": "pointwise",
                                   "criteria-order": "pointwise"}


class LabelScheme:
    """What `signature` and the report read of the label-scheme probe."""

    name = "label-scheme"
    description = ('the same pair with the responses labelled "A/B", "1/2" and by random ids '
                   "(judge option labels=)")
    expect: BiasExpect = "same"
    threshold = 0.1


class ScaleInversion:
    """What `signature` and the report read of the scale-inversion probe."""

    name = "scale-inversion"
    description = ("the criterion worded negatively, the scale flipped, the answer s mapped "
                   "back to lo + hi - s (judge option invert=)")
    expect: BiasExpect = "same"
    threshold = 0.1


class CriteriaOrder:
    """What `signature` and the report read of the criteria-order probe."""

    name = "criteria-order"
    description = ("the same sample rated with the judge's criteria asked in reverse order "
                   "(judge option criteria=)")
    expect: BiasExpect = "same"
    threshold = 0.1


def reversed_order(criteria: Sequence[str]) -> list[str]:
    """The criteria in reverse: with two or more distinct ones, every criterion but a
    middle one changes place and the set is the same."""
    return list(reversed(criteria))


def criteria_order(samples: Sequence[Sample], plain: CriteriaFn, reordered: CriteriaFn, *,
                   criteria: Sequence[str], judge: str, seed: int, confidence: float,
                   threshold: float | None = None) -> list[BiasResult]:
    """Each criterion's shift from `plain` (the criteria in `criteria`'s order) to
    `reordered` (`reversed_order`), one result per criterion in `criteria`'s order (module
    docstring); scores point up (judge.rubric's criteria scores are higher-is-better)."""
    before, after = (fn(samples) for fn in (plain, reordered))
    order = reversed_order(criteria)
    out = []
    for key in criteria:
        old, new = (np.array([np.nan if s is None or key not in s else float(s[key])
                              for s in side], dtype=float) for side in (before, after))
        delta = new - old
        same = np.abs(delta) <= ATOL + RTOL * np.abs(old)
        known = np.isfinite(delta)
        moves = np.where(known, np.where(same, 0.0, np.sign(delta)), np.nan)
        where = (f"criterion {key}, asked {list(criteria).index(key) + 1} of {len(criteria)} "
                 f"then {order.index(key) + 1}")
        out.append(_result(
            CriteriaOrder(), moves, judge=judge, mode="pointwise", seed=seed,
            confidence=confidence, threshold=threshold,
            what=f"{where}: share of samples scored higher with the criteria in reverse "
                 "order, minus the share scored lower",
            extra={"criterion": key, "order": list(criteria), "reordered": order,
                   "mean_delta": float(delta[known].mean()) if known.any() else None},
            tail=f"|criterion:{key}|order:{'>'.join(criteria)}"))
    return out


def label_scheme(pairs: Sequence[Sample], scores: Mapping[str, ScoreFn], *, judge: str,
                 center: float, seed: int, confidence: float, threshold: float | None = None
                 ) -> BiasResult:
    """The share of `pairs` whose verdict changes with the label scheme (module docstring);
    `scores[scheme]` judges a batch of pairs under that scheme."""
    rows = np.stack([verdicts(scores[s](pairs), center) for s in LABEL_SCHEMES])
    known = np.isfinite(rows).all(axis=0)
    changed = (rows != rows[0]).any(axis=0)
    moves = np.where(known, changed.astype(float), np.nan)
    decided = rows[:, known]
    per_scheme = {f"verdicts_{s}": {"first": int((decided[k] > 0).sum()),
                                    "second": int((decided[k] < 0).sum()),
                                    "tie": int((decided[k] == 0).sum())}
                  for k, s in enumerate(LABEL_SCHEMES)}
    return _result(LabelScheme(), moves, judge=judge, mode="pairwise", seed=seed,
                   confidence=confidence, threshold=threshold, bounds=(0.0, 1.0),
                   what=f"share of pairs whose verdict changes with the labels "
                        f"({'/'.join(LABEL_SCHEMES)})",
                   extra={"schemes": list(LABEL_SCHEMES), **per_scheme})


def scale_inversion(samples: Sequence[Sample], plain: ScoreFn, inverted: ScoreFn, *,
                    judge: str, higher_is_better: bool, seed: int, confidence: float,
                    threshold: float | None = None) -> BiasResult:
    """The shift of `samples`' scores from `plain` to `inverted` (the judge with its scale
    inverted and its answers mapped back; module docstring)."""
    sign = 1.0 if higher_is_better else -1.0
    before, after = (np.array([np.nan if v is None else sign * v for v in fn(samples)],
                              dtype=float) for fn in (plain, inverted))
    delta = after - before
    same = np.abs(delta) <= ATOL + RTOL * np.abs(before)
    moves = np.where(np.isfinite(delta), np.where(same, 0.0, np.sign(delta)), np.nan)
    known = np.isfinite(delta)
    return _result(ScaleInversion(), moves, judge=judge, mode="pointwise", seed=seed,
                   confidence=confidence, threshold=threshold,
                   what="share of samples scored higher with the scale inverted and mapped "
                        "back, minus the share scored lower",
                   extra={"mean_delta": float(delta[known].mean()) if known.any() else None})


def _result(probe: LabelScheme | ScaleInversion | CriteriaOrder, moves: FloatArray, *,
            judge: str, mode: Mode, seed: int, confidence: float, threshold: float | None,
            what: str, extra: dict[str, object], tail: str = "",
            bounds: tuple[float, float] = (-1.0, 1.0)) -> BiasResult:
    limit = probe.threshold if threshold is None else threshold
    shift = preference_shift(moves=moves, confidence=confidence, bounds=bounds)
    said = verdict(shift, limit, probe.expect)
    interval = (f"{confidence:.0%} CI {shift.low:+.3f} to {shift.high:+.3f}"
                if shift.n >= 2 else f"no interval: {shift.n} unit(s) with a move")
    return BiasResult(judge, probe.name, MEASURE, shift.value, shift.n,
                      f"{mode}: {what} ({interval}); {said} at |shift| > {limit:g}", {
        "mode": mode, "edit": probe.description, "expect": probe.expect,
        "ci_low": _finite(shift.low), "ci_high": _finite(shift.high),
        "confidence": confidence, "threshold": limit, "verdict": said, "skipped": 0,
        "failed": int(np.isnan(moves).sum()), **extra,
        "signature": signature(probe, judge=judge, mode=mode, confidence=confidence,
                               seed=seed) + tail})


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
