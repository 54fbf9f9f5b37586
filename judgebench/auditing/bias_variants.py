"""Judge-bias probes that judge the same samples under variants of the judge's own options
(no edit of the text): the judge is biased if its verdict depends on how the question is
put rather than on what is judged.

label-scheme  (pairwise; the label-scheme bias of Ye et al. 2024, "Justice or Prejudice?
              Quantifying Biases in LLM-as-a-Judge", and Zheng et al. 2023's naming of the
              assistants) each pair judged with the responses labelled "A/B", "1/2" and by
              random ids (judge.pairwise's `labels=`). A pair's move is 1 where its verdicts
              of the order shown (`verdict_ab`; +1 first wins, -1 second wins, 0 tie) are not
              all the same under the schemes, 0 where they are, NaN where one is missing.

shift (meta_eval.bias_shift.preference_shift): the mean move, here the share of pairs whose
verdict changes with the labels, with its Student-t interval at the audit's --ci; verdict as
bias_battery's for a probe that keeps the quality (expect "same": biased where the interval
lies wholly above X, unbiased where wholly inside [-X, X]).

criteria order is not probed: judge.rubric and judge.geval put one criterion in a prompt.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from judgebench.auditing.bias import BiasResult, verdicts
from judgebench.auditing.bias_battery import MEASURE, signature, verdict
from meta_eval.bias_shift import preference_shift

if TYPE_CHECKING:
    from judgebench.bias_probe import BiasExpect, Mode
    from judgebench.models import Sample

ScoreFn = Callable[[Sequence["Sample"]], list[float | None]]
#: judge.pairwise's labels= values, the first the judge's default.
LABEL_SCHEMES = ("ab", "12", "random-ids")
#: Each variant probe and the kind of judge it applies to.
VARIANT_PROBES: dict[str, Mode] = {"label-scheme": "pairwise"}
#: The judge option each variant probe varies: a judge without it is skipped.
VARIED_OPTION = {"label-scheme": "labels"}


class LabelScheme:
    """What `signature` and the report read of the label-scheme probe."""

    name = "label-scheme"
    description = ('the same pair with the responses labelled "A/B", "1/2" and by random ids '
                   "(judge option labels=)")
    expect: BiasExpect = "same"
    threshold = 0.1


def label_scheme(pairs: Sequence[Sample], scores: Mapping[str, ScoreFn], *, judge: str,
                 center: float, seed: int, confidence: float, threshold: float | None = None
                 ) -> BiasResult:
    """The share of `pairs` whose verdict changes with the label scheme (module docstring);
    `scores[scheme]` judges a batch of pairs under that scheme."""
    probe = LabelScheme()
    limit = probe.threshold if threshold is None else threshold
    rows = np.stack([verdicts(scores[s](pairs), center) for s in LABEL_SCHEMES])
    known = np.isfinite(rows).all(axis=0)
    changed = (rows != rows[0]).any(axis=0)
    moves = np.where(known, changed.astype(float), np.nan)
    shift = preference_shift(moves=moves, confidence=confidence)
    said = verdict(shift, limit, probe.expect)
    interval = (f"{confidence:.0%} CI {shift.low:+.3f} to {shift.high:+.3f}"
                if shift.n >= 2 else f"no interval: {shift.n} pair(s) judged under every scheme")
    decided = rows[:, known]
    per_scheme = {f"verdicts_{s}": {"first": int((decided[k] > 0).sum()),
                                    "second": int((decided[k] < 0).sum()),
                                    "tie": int((decided[k] == 0).sum())}
                  for k, s in enumerate(LABEL_SCHEMES)}
    note = (f"pairwise: share of pairs whose verdict changes with the labels "
            f"({'/'.join(LABEL_SCHEMES)}; {interval}); {said} at |shift| > {limit:g}")
    return BiasResult(judge, probe.name, MEASURE, shift.value, shift.n, note, {
        "mode": "pairwise", "edit": probe.description, "expect": probe.expect,
        "ci_low": _finite(shift.low), "ci_high": _finite(shift.high),
        "confidence": confidence, "threshold": limit, "verdict": said, "skipped": 0,
        "failed": int((~known).sum()), "schemes": list(LABEL_SCHEMES), **per_scheme,
        "signature": signature(probe, judge=judge, mode="pairwise", confidence=confidence,
                               seed=seed)})


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
