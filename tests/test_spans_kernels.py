"""meta_eval.spans against independent computations: a brute-force per-character set
implementation, the WMT23 QE task 2 scorer's definition (its per-character major/minor count
arrays, as `task2_evaluate.py` in WMT-QE-Task/qe-eval-scripts writes them) and a brute-force
pairwise span matcher, on random spans with overlaps, empty sides, zero-length and adjacent
spans."""

from __future__ import annotations

import math
import random

import pytest

from meta_eval.spans import (
    CharCredit,
    SpanMatch,
    Spans,
    char_counts,
    char_f1,
    char_precision,
    char_recall,
    span_counts,
    span_f1,
    span_precision,
    span_recall,
)

MAJOR, MINOR = 1, 0


def random_spans(rng: random.Random, segments: int, length: int, most: int
                 ) -> list[tuple[int, int, int, int]]:
    out = []
    for seg in range(segments):
        for _ in range(rng.randint(0, most)):
            start = rng.randint(0, length)
            end = min(length, start + rng.choice([0, 1, 2, 3, 5, 8]))
            out.append((seg, start, end, rng.choice([MINOR, MAJOR])))
        if out and rng.random() < 0.3:  # an adjacent span: starts where the last one ends
            s, _, e, _ = out[-1]
            if s == seg and e < length:
                out.append((seg, e, min(length, e + 2), rng.choice([MINOR, MAJOR])))
    return out


def as_spans(rows: list[tuple[int, int, int, int]]) -> Spans:
    return Spans.of([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                    [r[3] for r in rows])


def brute_chars(human, metric, credit):
    """Per (segment, character): the set of severities each side marks there."""
    def cover(rows):
        out: dict[tuple[int, int], set[int]] = {}
        for seg, s, e, sev in rows:
            for c in range(s, max(e, s + 1)):
                out.setdefault((seg, c), set()).add(sev)
        return out
    h, m = cover(human), cover(metric)
    tp = 0.0
    for key in set(h) & set(m):
        if credit == "ignore" or h[key] & m[key]:
            tp += 1
        elif credit == "partial":
            tp += 0.5
    return tp, len(m), len(h)


def wmt23_scorer(human, metric, length, segments):
    """The WMT23 QE task 2 scorer's loop, transcribed: per segment, count arrays of
    len(mt)+1 for major and minor, a zero-length span marking its start."""
    def arrays(rows):
        out = {seg: {"major": [0] * (length + 1), "minor": [0] * (length + 1)}
               for seg in range(segments)}
        for seg, s, e, sev in rows:
            kind = "major" if sev == MAJOR else "minor"
            if s == e:
                out[seg][kind][s] += 1
            else:
                for i in range(s, e):
                    out[seg][kind][i] += 1
        return out
    gold, sys_ = arrays(human), arrays(metric)
    tp = total_gold = total_sys = 0.0
    for seg in gold:
        for gmaj, smaj, gmin, smin in zip(gold[seg]["major"], sys_[seg]["major"],
                                          gold[seg]["minor"], sys_[seg]["minor"], strict=True):
            if gmaj or gmin:
                total_gold += 1
            if smaj or smin:
                total_sys += 1
            if gmaj and not gmin:
                tp += 1 if smaj else 0.5 if smin else 0
            elif gmin and not gmaj:
                tp += 1 if smin else 0.5 if smaj else 0
            elif gmin and gmaj and (smin or smaj):
                tp += 1
    return tp, total_sys, total_gold


def brute_span_matches(a, b, match, severity):
    found = 0
    for seg, s, e, sev in a:
        for seg2, s2, e2, sev2 in b:
            if seg2 != seg or (severity and sev2 != sev):
                continue
            if match == "exact":
                ok = (s, e) == (s2, e2)
            else:
                ok = bool(set(range(s, max(e, s + 1))) & set(range(s2, max(e2, s2 + 1))))
            if ok:
                found += 1
                break
    return found


def close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12)


def f1_of(p: float, r: float) -> float:
    if math.isnan(p) or math.isnan(r):
        return math.nan
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


@pytest.mark.parametrize("seed", range(40))
def test_char_level_equals_brute_force_and_the_wmt23_scorer(seed) -> None:
    rng = random.Random(seed)
    segments, length = rng.randint(1, 6), rng.randint(1, 30)
    human = random_spans(rng, segments, length, rng.choice([0, 2, 5]))
    metric = random_spans(rng, segments, length, rng.choice([0, 2, 5]))
    h, m = as_spans(human), as_spans(metric)
    credits: tuple[CharCredit, ...] = ("ignore", "partial", "match")
    for credit in credits:
        tp, n_m, n_h = brute_chars(human, metric, credit)
        got = char_counts(human=h, metric=m, credit=credit)
        assert (got.credit_predicted, got.predicted, got.human) == (tp, n_m, n_h)
        p = tp / n_m if n_m else math.nan
        r = tp / n_h if n_h else math.nan
        assert close(char_precision(human=h, metric=m, credit=credit), p)
        assert close(char_recall(human=h, metric=m, credit=credit), r)
        assert close(char_f1(human=h, metric=m, credit=credit), f1_of(p, r))
    wmt = wmt23_scorer(human, metric, length, segments)
    got = char_counts(human=h, metric=m, credit="partial")
    assert (got.credit_predicted, got.predicted, got.human) == wmt


@pytest.mark.parametrize("seed", range(40))
def test_span_level_equals_brute_force(seed) -> None:
    rng = random.Random(1000 + seed)
    segments, length = rng.randint(1, 5), rng.randint(1, 25)
    human = random_spans(rng, segments, length, rng.choice([0, 1, 4]))
    metric = random_spans(rng, segments, length, rng.choice([0, 1, 4]))
    if rng.random() < 0.3 and human:  # some exact copies
        metric += rng.sample(human, k=min(len(human), 2))
    h, m = as_spans(human), as_spans(metric)
    matches: tuple[SpanMatch, ...] = ("exact", "overlap")
    for match in matches:
        for severity in (False, True):
            mp = brute_span_matches(metric, human, match, severity)
            mh = brute_span_matches(human, metric, match, severity)
            got = span_counts(human=h, metric=m, match=match, severity=severity)
            assert (got.credit_predicted, got.predicted, got.credit_human, got.human) == (
                mp, len(metric), mh, len(human))
            p = mp / len(metric) if metric else math.nan
            r = mh / len(human) if human else math.nan
            assert close(span_precision(human=h, metric=m, match=match, severity=severity), p)
            assert close(span_recall(human=h, metric=m, match=match, severity=severity), r)
            assert close(span_f1(human=h, metric=m, match=match, severity=severity),
                         f1_of(p, r))


def test_hand_examples() -> None:
    # people: "abcdef" chars 0-3 Major; metric: 2-6 Minor, adjacent 6-8 Major
    h = Spans.of([0], [0], [4], [MAJOR])
    m = Spans.of([0, 0], [2, 6], [6, 8], [MINOR, MAJOR])
    counts = char_counts(human=h, metric=m, credit="partial")
    assert (counts.credit_predicted, counts.predicted, counts.human) == (1.0, 6, 4)
    assert char_counts(human=h, metric=m, credit="ignore").credit_predicted == 2
    assert char_counts(human=h, metric=m, credit="match").credit_predicted == 0
    # adjacent spans do not overlap: 6-8 touches nothing of people's 0-4
    assert span_counts(human=h, metric=m).credit_predicted == 1
    assert span_counts(human=h, metric=m, severity=True).credit_predicted == 0
    assert span_counts(human=h, metric=Spans.of([0], [4], [6], [MAJOR])).credit_human == 0


def test_empty_sides() -> None:
    empty = Spans.of([], [], [])
    some = Spans.of([0], [1], [3])
    assert math.isnan(char_precision(human=some, metric=empty))
    assert char_recall(human=some, metric=empty) == 0.0
    assert math.isnan(char_f1(human=some, metric=empty))
    assert char_precision(human=empty, metric=some) == 0.0
    assert math.isnan(span_f1(human=empty, metric=empty))
    # another segment's span never matches
    assert span_precision(human=Spans.of([1], [1], [3]), metric=some) == 0.0
    assert char_precision(human=Spans.of([1], [1], [3]), metric=some) == 0.0


def test_bad_spans_are_refused() -> None:
    with pytest.raises(ValueError, match="start <= end"):
        Spans.of([0], [5], [3])
    with pytest.raises(ValueError, match="length"):
        Spans.of([0, 1], [0], [3])
    with pytest.raises(ValueError, match="credit"):
        char_counts(human=Spans.of([0], [0], [1]), metric=Spans.of([0], [0], [1]),
                    credit="half")  # type: ignore[arg-type]


def test_extreme_offsets() -> None:
    big = 2**31 - 3
    h = Spans.of([7], [big], [big + 2])
    m = Spans.of([7], [big + 1], [big + 2])
    assert char_counts(human=h, metric=m).credit_predicted == 1.0
    assert span_recall(human=h, metric=m) == 1.0
