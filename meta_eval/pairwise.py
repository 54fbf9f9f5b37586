"""Agreement of a pairwise judge with people, with position bias made visible.

Each row is one comparison of output A with output B: the human label, the judge's verdict
with A shown first (`verdict_ab`) and with B shown first (`verdict_ba`). Labels say which
output wins: "a", "b" or "tie" (any case), or a number (> 0: A, < 0: B, 0: tie); missing
values (None, NaN, "") drop the row from the measures that need them. By default
`verdict_ba` names outputs, not positions; with `ba_positional=True` its "a"/"b" mean the
first/second position and are mapped back (first position = output B).

Reported (the position-bias analysis of Zheng et al. 2023, "Judging LLM-as-a-Judge"):
accuracy_ab / accuracy_ba (verdict == human), accuracy_both (right in both orders),
consistency (the two orders give the same verdict), judge_tie_rate (share of verdicts that
are ties, both orders pooled) and human_tie_rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from meta_eval.results import _clean

_WORDS = {"a": 1, "b": -1, "tie": 0}


def normalise_labels(values: Sequence[Any], *, name: str = "label") -> np.ndarray:
    """Labels to +1 (A wins), -1 (B wins), 0 (tie), NaN (missing)."""
    out = np.full(len(values), np.nan)
    for k, v in enumerate(values):
        if v is None or (isinstance(v, float) and v != v) or v == "":
            continue
        if isinstance(v, str):
            key = v.strip().lower()
            if key not in _WORDS:
                raise ValueError(f"{name} row {k}: unknown label {v!r}; use a, b or tie")
            out[k] = _WORDS[key]
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            out[k] = float(np.sign(v))
        else:
            raise ValueError(f"{name} row {k}: unknown label {v!r}; use a, b or tie")
    return out


@dataclass(frozen=True)
class PairwiseAgreement:
    n: int  # rows with a human label and at least one verdict
    accuracy_ab: float
    accuracy_ba: float
    accuracy_both: float
    consistency: float
    judge_tie_rate: float
    human_tie_rate: float
    n_ab: int
    n_ba: int
    n_both: int

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


def _share(mask: np.ndarray, among: np.ndarray) -> float:
    return float(mask[among].mean()) if among.any() else float("nan")


def pairwise_agreement(*, human: Sequence[Any], verdict_ab: Sequence[Any],
                       verdict_ba: Sequence[Any], ba_positional: bool = False
                       ) -> PairwiseAgreement:
    """Accuracy per order, in both orders, positional consistency and tie shares."""
    h = normalise_labels(human, name="human")
    ab = normalise_labels(verdict_ab, name="verdict_ab")
    ba = normalise_labels(verdict_ba, name="verdict_ba")
    if not len(h) == len(ab) == len(ba):
        raise ValueError("human, verdict_ab and verdict_ba must have one length")
    if ba_positional:
        ba = -ba
    has_h, has_ab, has_ba = np.isfinite(h), np.isfinite(ab), np.isfinite(ba)
    with_ab, with_ba, with_all = has_h & has_ab, has_h & has_ba, has_h & has_ab & has_ba
    verdicts = np.r_[ab[has_ab], ba[has_ba]]
    return PairwiseAgreement(
        n=int((has_h & (has_ab | has_ba)).sum()),
        accuracy_ab=_share(ab == h, with_ab),
        accuracy_ba=_share(ba == h, with_ba),
        accuracy_both=_share((ab == h) & (ba == h), with_all),
        consistency=_share(ab == ba, has_ab & has_ba),
        judge_tie_rate=float((verdicts == 0).mean()) if verdicts.size else float("nan"),
        human_tie_rate=_share(h == 0, has_h),
        n_ab=int(with_ab.sum()), n_ba=int(with_ba.sum()), n_both=int(with_all.sum()),
    )
