"""Bootstrap confidence intervals (items resampled) and acc-eq with groupings."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from meta_eval import bootstrap_values, calibrate_epsilon, evaluate


def data(seed=0, items=40, systems=6):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(items, systems))
    human = np.clip(np.round(quality + 3 + rng.normal(size=quality.shape) * 0.5), 1, 5)
    metric = quality + rng.normal(size=quality.shape)
    metric[rng.random(metric.shape) < 0.05] = np.nan
    return human, metric


@pytest.mark.parametrize("statistic,level,grouping", [
    ("pearson", "segment", "item"), ("kendall", "segment", "none"),
    ("spearman", "segment", "system"), ("pearson", "system", "none"),
    ("acc-eq", "segment", "item"), ("pairwise-accuracy", "system", "none"),
])
def test_ci_brackets_the_value_and_is_seeded(statistic, level, grouping):
    human, metric = data()
    first = evaluate(statistic, human=human, metric=metric, level=level, grouping=grouping,
                     bootstrap=200, seed=3)
    again = evaluate(statistic, human=human, metric=metric, level=level, grouping=grouping,
                     bootstrap=200, seed=3)
    other = evaluate(statistic, human=human, metric=metric, level=level, grouping=grouping,
                     bootstrap=200, seed=4)
    assert first.ci_low is not None and first.ci_high is not None
    assert first.ci_low <= first.value <= first.ci_high
    assert first.ci_low < first.ci_high
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)


@pytest.mark.parametrize("grouping", ["item", "system", "none"])
def test_bootstrap_equals_recomputing_on_resampled_items(grouping):
    human, metric = data(1, items=15, systems=5)
    got = bootstrap_values("kendall", human=human, metric=metric, level="segment",
                           grouping=grouping, epsilon=0.0, resamples=20, seed=9)
    index = np.random.default_rng(9).integers(0, 15, size=(20, 15))
    expected = [evaluate("kendall", human=human[ix], metric=metric[ix], level="segment",
                         grouping=grouping).value for ix in index]
    assert got == pytest.approx(expected)


def test_acc_eq_chooses_one_epsilon_for_the_averaged_statistic():
    human, metric = data(2, items=8, systems=5)
    metric = np.round(metric, 1)
    got = evaluate("acc-eq", human=human, metric=metric, level="segment", grouping="item")
    # Exhaustive search over every candidate epsilon of the item-averaged acc-23.
    candidates = {0.0}
    for r in range(human.shape[0]):
        ok = np.isfinite(metric[r]) & np.isfinite(human[r])
        candidates |= {abs(a - b) for a, b in itertools.combinations(metric[r][ok], 2)}
    values = {e: evaluate("acc-23", human=human, metric=metric, grouping="item",
                          epsilon=e).value for e in sorted(candidates)}
    best = max(values.values())
    assert got.value == pytest.approx(best)
    assert got.epsilon == min(e for e, v in values.items() if v >= best - 1e-12)
    rows = np.repeat(np.arange(human.shape[0]), human.shape[1])
    assert calibrate_epsilon(human=human.ravel(), metric=metric.ravel(),
                             groups=rows).epsilon == got.epsilon


def test_acc_eq_is_never_below_acc_23():
    human, metric = data(4)
    for grouping in ("none", "item", "system"):
        eq = evaluate("acc-eq", human=human, metric=metric, grouping=grouping)
        for eps in (0.0, 0.1, 0.5):
            assert eq.value >= evaluate("acc-23", human=human, metric=metric,
                                        grouping=grouping, epsilon=eps).value - 1e-12
