"""bias_variants' numbers against a direct computation: on random verdicts with ties and
failed calls, label_scheme's share of pairs whose verdict changes with the labels and its
interval equal scipy's one-sample t interval of the change indicators, clipped to [0, 1];
on random scores with ties, failures and extreme magnitudes, scale_inversion's shift (the
signs of the oriented mapped-back changes), its interval and mean change."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats

from judgebench.auditing.bias_variants import LABEL_SCHEMES, label_scheme, scale_inversion
from judgebench.models import Sample


def pairs(n: int) -> list[Sample]:
    return [Sample(item=str(k), system="x vs y", system_a="x", system_b="y", output_a="a",
                   output_b="b") for k in range(n)]


def answering(values: Sequence[float | None]):
    def score(batch: Sequence[Sample]) -> list[float | None]:
        assert len(batch) == len(values)
        return list(values)

    return score


@pytest.mark.parametrize("seed", range(8))
def test_the_change_share_and_its_interval_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    center = float(rng.choice([0.5, 0.0, 1e9]))
    # values on the judge's scale: above, at or below the center; None a failed call
    table = {s: [None if rng.random() < 0.1 else center + float(rng.choice([-1.0, 0.0, 1.0]))
                 * float(rng.choice([1e-3, 1.0, 1e6])) for _ in range(n)]
             for s in LABEL_SCHEMES}
    result = label_scheme(pairs(n), {s: answering(v) for s, v in table.items()},
                          judge="j", center=center, seed=seed, confidence=0.9)
    signs = np.array([[np.nan if v is None else np.sign(v - center) for v in table[s]]
                      for s in LABEL_SCHEMES])
    known = ~np.isnan(signs).any(axis=0)
    changed = np.array([len(set(signs[:, k])) > 1 for k in range(n)])[known].astype(float)
    assert result.n == known.sum() and result.extra["failed"] == n - known.sum()
    assert result.value == pytest.approx(changed.mean(), abs=1e-12)
    if changed.std() > 0:
        low, high = stats.ttest_1samp(changed, 0).confidence_interval(0.9)
        assert result.extra["ci_low"] == pytest.approx(max(-1.0, low), abs=1e-12)
        assert result.extra["ci_high"] == pytest.approx(min(1.0, high), abs=1e-12)
    for k, s in enumerate(LABEL_SCHEMES):
        row = signs[k][known]
        assert result.extra[f"verdicts_{s}"] == {"first": int((row > 0).sum()),
                                                 "second": int((row < 0).sum()),
                                                 "tie": int((row == 0).sum())}


def test_all_equal_verdicts_are_not_a_bias_and_all_changed_are() -> None:
    """Nothing changed on 5 pairs: not a bias, and not ruled out either (the unseen share's
    Clopper-Pearson bound, 0.52, is wider than the threshold); all changed on 10: biased."""
    same = label_scheme(pairs(5), {s: answering([1.0, 0.0, 0.5, 1.0, 0.0])
                                   for s in LABEL_SCHEMES},
                        judge="j", center=0.5, seed=0, confidence=0.95)
    assert (same.value, same.extra["verdict"]) == (0.0, "inconclusive")
    assert same.extra["ci_high"] == pytest.approx(1 - 0.025 ** (1 / 5))
    flipped = label_scheme(pairs(10), {"ab": answering([1.0] * 10),
                                       "12": answering([0.0] * 10),
                                       "random-ids": answering([1.0] * 10)},
                           judge="j", center=0.5, seed=0, confidence=0.95, threshold=0.3)
    assert (flipped.value, flipped.extra["verdict"], flipped.extra["threshold"]) == (
        1.0, "biased", 0.3)
    lone = label_scheme(pairs(2), {s: answering([1.0, None]) for s in LABEL_SCHEMES},
                        judge="j", center=0.5, seed=0, confidence=0.95)
    assert (lone.n, lone.extra["verdict"], lone.extra["ci_low"]) == (1, "undetermined", None)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("higher_is_better", [True, False])
def test_the_scale_inversion_shift_matches_a_direct_computation(seed: int,
                                                                higher_is_better: bool) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 60))
    scale = float(rng.choice([1e-6, 1.0, 1e8]))
    plain = [None if rng.random() < 0.1 else float(rng.integers(1, 6)) * scale
             for _ in range(n)]
    # the inverted answers, mapped back: often the same score (ties), else another
    back = [None if rng.random() < 0.1 else (p if p is not None and rng.random() < 0.4
                                             else float(rng.integers(1, 6)) * scale)
            for p in plain]
    result = scale_inversion(pairs(n), answering(plain), answering(back), judge="j",
                             higher_is_better=higher_is_better, seed=seed, confidence=0.95)
    sign = 1 if higher_is_better else -1
    moves, deltas = [], []
    for p, b in zip(plain, back, strict=True):
        if p is not None and b is not None:
            moves.append(0.0 if b == p else float(np.sign(sign * (b - p))))
            deltas.append(sign * (b - p))
    assert result.n == len(moves) and result.extra["failed"] == n - len(moves)
    assert result.value == pytest.approx(np.mean(moves), abs=1e-12)
    assert result.extra["mean_delta"] == pytest.approx(np.mean(deltas), rel=1e-12)
    if np.std(moves) > 0:
        low, high = stats.ttest_1samp(moves, 0).confidence_interval(0.95)
        assert result.extra["ci_low"] == pytest.approx(max(-1.0, low), abs=1e-12)
        assert result.extra["ci_high"] == pytest.approx(min(1.0, high), abs=1e-12)
