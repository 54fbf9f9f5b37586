"""Error spans against people's: character-level and span-level precision, recall and F1.

A span set is `Spans`: parallel arrays of segment ids, ``[start, end)`` character offsets and
severity codes (small non-negative integers; the caller maps names to codes, e.g. Minor 0,
Major 1). A zero-length span (``start == end``: an omission marked at a position) marks the
one character at ``start``, as the WMT23 QE task 2 scorer does. Every count is micro: summed
over the segments given, then divided once (WMT23 QE reports micro F1 per language pair). The
segments with no span on either side count through the spans of the other side only, so the
caller passes the segments it evaluates and nothing else: a predicted span in a segment
people did not rate must be left out by the caller.

Character level (WMT23 QE shared task 2, Blain et al. 2023, "Findings of the WMT 2023 Shared
Task on Quality Estimation", its scorer `task2_evaluate.py`; xCOMET, Guerreiro et al. 2023,
"xCOMET: Transparent Machine Translation Evaluation through Fine-grained Error Detection",
reports the same F1). Per character c of a segment, H(c) is the set of severities of people's
spans covering c and M(c) the metric's. With credit t(c):

  ignore    t = 1 if H(c) and M(c) are both non-empty (error or not, severity unread)
  partial   t = 1 if H(c) & M(c) is non-empty, 1/2 if both are non-empty but disjoint
            (a severity mismatch: the WMT23 QE scorer's half credit)
  match     t = 1 if H(c) & M(c) is non-empty, else 0 (severity must match)

  precision = sum_c t(c) / #{c : M(c) non-empty}
  recall    = sum_c t(c) / #{c : H(c) non-empty}
  F1        = 2 P R / (P + R)

Span level (each span as a whole; a predicted span is correct when it matches at least one
human span of its segment, a human span is found when at least one predicted span matches
it; no one-to-one assignment):

  exact     same start and end
  overlap   at least one character in common
  with severity=True the two spans must also have the same severity code.

  precision = #{predicted spans that match} / #{predicted spans}
  recall    = #{human spans matched} / #{human spans}

A ratio with a zero denominator is NaN (no predicted span: precision is undefined, not 0);
F1 is NaN when P or R is, 0 when P + R = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from meta_eval.arrays import ArrayLike, IntArray

CharCredit = Literal["ignore", "partial", "match"]
SpanMatch = Literal["exact", "overlap"]

#: A character's key: segment << _SHIFT | position.
_SHIFT = 32


@dataclass(frozen=True)
class Spans:
    """Parallel arrays, one entry per span: `segment` (non-negative ints), `start`, `end`
    (``0 <= start <= end < 2**31``) and `severity` (codes 0..61)."""

    segment: IntArray
    start: IntArray
    end: IntArray
    severity: IntArray

    @classmethod
    def of(cls, segment: ArrayLike, start: ArrayLike, end: ArrayLike,
           severity: ArrayLike | None = None) -> Spans:
        arrays = [np.asarray(a, dtype=np.int64).reshape(-1) for a in (segment, start, end)]
        sev = (np.zeros_like(arrays[0]) if severity is None
               else np.asarray(severity, dtype=np.int64).reshape(-1))
        seg, lo, hi = arrays
        if not len(seg) == len(lo) == len(hi) == len(sev):
            raise ValueError("segment, start, end and severity differ in length")
        if (seg < 0).any() or (lo < 0).any() or (hi < lo).any() or (hi >= 2**31).any():
            raise ValueError("spans need 0 <= segment and 0 <= start <= end < 2**31")
        if (sev < 0).any() or (sev > 61).any():
            raise ValueError("severity codes are 0..61")
        return cls(seg, lo, hi, sev)

    def __len__(self) -> int:
        return len(self.segment)


@dataclass(frozen=True)
class Counts:
    """The numerators and denominators of precision and recall."""

    credit_predicted: float  # precision's numerator
    predicted: float
    credit_human: float  # recall's numerator
    human: float

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.credit_predicted + other.credit_predicted,
                      self.predicted + other.predicted,
                      self.credit_human + other.credit_human, self.human + other.human)

    @property
    def precision(self) -> float:
        return _ratio(self.credit_predicted, self.predicted)

    @property
    def recall(self) -> float:
        return _ratio(self.credit_human, self.human)

    @property
    def f1(self) -> float:
        return _f1(self.precision, self.recall)


def _ratio(num: float, den: float) -> float:
    return num / den if den else float("nan")


def _f1(p: float, r: float) -> float:
    if np.isnan(p) or np.isnan(r):
        return float("nan")
    return 2 * p * r / (p + r) if p + r else 0.0


def _characters(spans: Spans) -> tuple[IntArray, IntArray]:
    """The sorted unique character keys the spans cover and, per key, the bit mask of the
    severities covering it."""
    length = np.maximum(spans.end - spans.start, 1)
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    first = np.repeat(np.cumsum(length) - length, length)
    pos = np.repeat(spans.start, length) + (np.arange(total, dtype=np.int64) - first)
    keys = (np.repeat(spans.segment, length) << _SHIFT) | pos
    bits = np.left_shift(np.int64(1), np.repeat(spans.severity, length))
    unique, inverse = np.unique(keys, return_inverse=True)
    masks = np.zeros(len(unique), dtype=np.int64)
    np.bitwise_or.at(masks, inverse.reshape(-1), bits)
    return unique, masks


def char_counts(*, human: Spans, metric: Spans, credit: CharCredit = "partial") -> Counts:
    """The character-level counts (module docstring): sum_c t(c) over the characters both
    sides mark, #{c : M(c)}, #{c : H(c)}."""
    h_keys, h_masks = _characters(human)
    m_keys, m_masks = _characters(metric)
    both, hi, mi = np.intersect1d(h_keys, m_keys, assume_unique=True, return_indices=True)
    shared = (h_masks[hi] & m_masks[mi]) != 0
    if credit == "ignore":
        tp = float(len(both))
    elif credit == "match":
        tp = float(shared.sum())
    elif credit == "partial":
        tp = float(shared.sum()) + 0.5 * float((~shared).sum())
    else:
        raise ValueError(f"credit is ignore, partial or match, got {credit!r}")
    return Counts(tp, float(len(m_keys)), tp, float(len(h_keys)))


def char_precision(*, human: Spans, metric: Spans, credit: CharCredit = "partial") -> float:
    """Character-level precision, sum_c t(c) / #{c : M(c) non-empty} (WMT23 QE task 2)."""
    return char_counts(human=human, metric=metric, credit=credit).precision


def char_recall(*, human: Spans, metric: Spans, credit: CharCredit = "partial") -> float:
    """Character-level recall, sum_c t(c) / #{c : H(c) non-empty} (WMT23 QE task 2)."""
    return char_counts(human=human, metric=metric, credit=credit).recall


def char_f1(*, human: Spans, metric: Spans, credit: CharCredit = "partial") -> float:
    """Character-level F1 = 2PR / (P + R) (WMT23 QE task 2's primary metric; xCOMET)."""
    return char_counts(human=human, metric=metric, credit=credit).f1


def _matches(a: Spans, b: Spans, match: SpanMatch, severity: bool) -> IntArray:
    """Per span of `a`, whether some span of `b` in its segment matches it (0/1)."""
    found = np.zeros(len(a), dtype=np.int64)
    if not len(a) or not len(b):
        return found
    order = np.argsort(b.segment, kind="stable")
    b_seg = b.segment[order]
    b_lo, b_hi, b_sev = b.start[order], b.end[order], b.severity[order]
    b_hi_open = np.maximum(b_hi, b_lo + 1)
    left = np.searchsorted(b_seg, a.segment, side="left")
    right = np.searchsorted(b_seg, a.segment, side="right")
    for i in range(len(a)):
        lo, hi = left[i], right[i]
        if lo == hi:
            continue
        if match == "exact":
            ok = (b_lo[lo:hi] == a.start[i]) & (b_hi[lo:hi] == a.end[i])
        else:
            a_hi = max(int(a.end[i]), int(a.start[i]) + 1)
            ok = (b_lo[lo:hi] < a_hi) & (b_hi_open[lo:hi] > a.start[i])
        if severity:
            ok &= b_sev[lo:hi] == a.severity[i]
        found[i] = int(ok.any())
    return found


def span_counts(*, human: Spans, metric: Spans, match: SpanMatch = "overlap",
                severity: bool = False) -> Counts:
    """The span-level counts (module docstring): predicted spans that match, predicted
    spans, human spans matched, human spans."""
    if match not in ("exact", "overlap"):
        raise ValueError(f"match is exact or overlap, got {match!r}")
    return Counts(float(_matches(metric, human, match, severity).sum()), float(len(metric)),
                  float(_matches(human, metric, match, severity).sum()), float(len(human)))


def span_precision(*, human: Spans, metric: Spans, match: SpanMatch = "overlap",
                   severity: bool = False) -> float:
    """Span-level precision: the share of predicted spans matching a human span."""
    return span_counts(human=human, metric=metric, match=match, severity=severity).precision


def span_recall(*, human: Spans, metric: Spans, match: SpanMatch = "overlap",
                severity: bool = False) -> float:
    """Span-level recall: the share of human spans some predicted span matches."""
    return span_counts(human=human, metric=metric, match=match, severity=severity).recall


def span_f1(*, human: Spans, metric: Spans, match: SpanMatch = "overlap",
            severity: bool = False) -> float:
    """Span-level F1 = 2PR / (P + R) of `span_precision` and `span_recall`."""
    return span_counts(human=human, metric=metric, match=match, severity=severity).f1
