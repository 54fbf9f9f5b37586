"""A bench card's coverage line per judge: how much of the suite the judge could decide alone
with a guaranteed agreement with people of 1 - alpha = 0.9 (Trust or Escalate, Jung, Brahman,
Choi 2025; `meta_eval.escalation.calibrate_threshold` with delta = 0.1), calibrated on the
suite's human labels under its headline protocol.

A judge's confidence is what the scored table records of it: for a pairwise judge run in both
orders (`<judge>.ab`, `<judge>.ba`, as `judge.pairwise` and LLMBar's stored verdicts are),
whether the two orders agree (1) or not (1/2) — the agreement of its two draws, one per
order. Its verdict is the combined one (`<judge>`, else the agreed verdict where the orders
agree and a tie where they do not, MT-Bench's rule); it agrees with people where verdict and
label are equal at one decimal (a tie 0.5 kept apart). A cell reading `failed` (a stored
verdict its paper could not parse, `judgebench.tables.failed`) is no verdict. The
calibration rows are the labelled
rows (human ties left out when the protocol drops them); a row where the judge has no
verdict (failed) cannot be kept. Coverage is the share of those rows the judge keeps at the
chosen threshold, with the agreement on them. A judge with no such record — a pointwise
judge, or a pairwise one with one order — is "n/a: no confidence".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALPHA = 0.1
DELTA = 0.1
NO_CONFIDENCE = "n/a: no confidence"


@dataclass(frozen=True)
class Coverage:
    """One judge's coverage at 1 - ALPHA (None with `note` where there is none)."""

    label: str
    kind: str  # "yours", "published"
    items: int
    kept: int | None = None
    threshold: float | None = None
    agreement: float | None = None
    note: str | None = None

    @property
    def coverage(self) -> float | None:
        if self.kept is None or not self.items:
            return None
        return self.kept / self.items

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "kind": self.kind, "alpha": ALPHA, "delta": DELTA,
                "guaranteed_agreement": 1.0 - ALPHA, "items": self.items, "kept": self.kept,
                "coverage": self.coverage, "threshold": self.threshold,
                "agreement": self.agreement, "note": self.note}


def pairwise_coverage(table: Path, *, human: str, ties: str | None, judges: Sequence[str],
                      specs: Sequence[str]) -> list[Coverage]:
    """Each of `judges` (columns of the scored pairwise `table`; `specs` the user's) at
    1 - ALPHA, as the module docstring says."""
    import numpy as np
    import pandas as pd

    from judgebench.services.pairwise import labels
    from judgebench.tables.failed import failed_text

    frame = pd.read_csv(table, dtype=str, keep_default_na=False, na_values=[""])
    for column in (c for c in frame.columns if c != human):
        frame[column] = frame[column].mask(failed_text(frame[column]))
    where = str(table)
    people = labels(frame, human, where)
    rows = np.isfinite(people)
    if (ties or "drop") == "drop":
        rows &= people != 0.5
    out = []
    for judge in judges:
        kind = "yours" if judge in specs else "published"
        orders = [f"{judge}.ab", f"{judge}.ba"]
        if not all(c in frame.columns for c in orders):
            out.append(Coverage(judge, kind, int(rows.sum()),
                                note=f"{NO_CONFIDENCE} (one order: no second draw to agree)"))
            continue
        ab, ba = (labels(frame, c, where) for c in orders)
        combined = (labels(frame, judge, where) if judge in frame.columns
                    else np.where(ab == ba, ab, np.where(np.isnan(ab) | np.isnan(ba),
                                                         np.nan, 0.5)))
        confidence = np.where(ab == ba, 1.0, 0.5)
        decided = np.isfinite(ab) & np.isfinite(ba) & np.isfinite(combined)
        out.append(_calibrated(judge, kind, people[rows], combined[rows], confidence[rows],
                               decided[rows]))
    return out


def _calibrated(judge: str, kind: str, people: Any, verdicts: Any, confidence: Any,
                decided: Any) -> Coverage:
    """The threshold on the rows the judge decided; coverage over every calibration row."""
    from judgebench.services.escalate import round_half_away
    from meta_eval.escalation import calibrate_threshold, smallest_testable

    items = int(people.size)
    if not decided.any():
        return Coverage(judge, kind, items, kept=0, note="no verdict on any labelled row")
    agree = (round_half_away(verdicts[decided], 1) == round_half_away(people[decided], 1))
    chosen = calibrate_threshold(confidence=confidence[decided], agree=agree.astype(float),
                                 alpha=ALPHA, delta=DELTA)
    if chosen.threshold is None:
        needed = smallest_testable(alpha=ALPHA, delta=DELTA)
        why = ("too few labelled rows to show it" if int(decided.sum()) < needed else
               "no confidence level shows it")
        return Coverage(judge, kind, items, kept=0,
                        note=f"keeps nothing: {why} (agreement >= {1 - ALPHA:g} with "
                             f"probability {1 - DELTA:g})")
    return Coverage(judge, kind, items, kept=chosen.kept, threshold=chosen.threshold,
                    agreement=chosen.agreement_kept)


def pointwise_coverage(judges: Sequence[str], specs: Sequence[str], items: int
                       ) -> list[Coverage]:
    """A pointwise suite: the scores table records no confidence for a pointwise judge."""
    return [Coverage(j, "yours" if j in specs else "published", items,
                     note=f"{NO_CONFIDENCE} (a pointwise score carries none)")
            for j in judges]
