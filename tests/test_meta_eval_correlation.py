"""Correlations at every level and grouping: scipy, hand-computed cases, ties, NaN."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from meta_eval import evaluate
from meta_eval.levels import check_options

SCIPY = {
    "pearson": lambda h, m: scipy.stats.pearsonr(h, m).statistic,
    "spearman": lambda h, m: scipy.stats.spearmanr(h, m).statistic,
    "kendall": lambda h, m: scipy.stats.kendalltau(h, m).statistic,
    "kendall-c": lambda h, m: scipy.stats.kendalltau(h, m, variant="c").statistic,
}


def row(values):
    return np.array([values], dtype=float)


def tied_data(seed, items=12, systems=7):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, (items, systems)).astype(float)
    metric = np.round(human + rng.normal(size=(items, systems)), 1)
    human[rng.random(human.shape) < 0.1] = np.nan
    metric[rng.random(metric.shape) < 0.1] = np.nan
    return human, metric


def scipy_value(name, h, m):
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = h[ok], m[ok]
    if h.size < 2 or np.ptp(h) == 0 or np.ptp(m) == 0:
        return np.nan
    return SCIPY[name](h, m)


@pytest.mark.parametrize("name", list(SCIPY))
@pytest.mark.parametrize("seed", range(3))
def test_ungrouped_matches_scipy(name, seed):
    human, metric = tied_data(seed)
    got = evaluate(name, human=human, metric=metric, level="segment", grouping="none")
    assert got.value == pytest.approx(scipy_value(name, human.ravel(), metric.ravel()))
    assert got.n == int((np.isfinite(human) & np.isfinite(metric)).sum())


@pytest.mark.parametrize("name", list(SCIPY))
@pytest.mark.parametrize("grouping", ["item", "system"])
def test_grouped_is_the_mean_of_defined_groups(name, grouping):
    human, metric = tied_data(7, items=30, systems=5)
    human[3] = 2.0  # a constant item: undefined for every statistic here
    h, m = (human, metric) if grouping == "item" else (human.T, metric.T)
    per_group = np.array([scipy_value(name, a, b) for a, b in zip(h, m, strict=True)])
    got = evaluate(name, human=human, metric=metric, level="segment", grouping=grouping)
    assert got.value == pytest.approx(np.nanmean(per_group))
    assert got.n == int(np.isfinite(per_group).sum())
    assert got.skipped == int(np.isnan(per_group).sum())
    if grouping == "item":
        assert got.skipped >= 1


@pytest.mark.parametrize("units_per_call", [1 << 19, 70])
def test_large_groups_use_the_sort_based_counts(units_per_call, monkeypatch):
    # 60 units per group: the sort-based path, not the broadcast one, whole or in chunks.
    import meta_eval.correlation

    monkeypatch.setattr(meta_eval.correlation, "_SORTED_UNITS", units_per_call)
    human, metric = tied_data(11, items=60, systems=3)
    for name in ("kendall", "kendall-c"):
        got = evaluate(name, human=human, metric=metric, level="segment", grouping="system")
        expected = np.nanmean([scipy_value(name, a, b)
                               for a, b in zip(human.T, metric.T, strict=True)])
        assert got.value == pytest.approx(expected)


def test_kendall_variants_from_mt_metrics_eval():
    # mt-metrics-eval stats_test.testKendallVariants.
    h, m = row([1, 2, 2, 3, 4]), row([2, 1, 1.5, 5, 3])
    assert evaluate("kendall", human=h, metric=m).value == pytest.approx(0.316227766)
    assert evaluate("kendall-c", human=h, metric=m).value == pytest.approx(0.32)
    assert evaluate("kendall-23", human=h, metric=m).value == pytest.approx(0.2)
    assert evaluate("acc-23", human=h, metric=m).value == pytest.approx(0.6)
    assert evaluate("acc-23", human=h, metric=m, epsilon=2).value == pytest.approx(0.4)
    eq = evaluate("acc-eq", human=h, metric=m)
    assert (eq.value, eq.epsilon) == (pytest.approx(0.7), 0.5)


def test_kendall_23_by_hand():
    # Pairs of x=[1,1,1,2,2,3,4] (human) and y=[1,1,2,2,4,3,3] (metric), epsilon 1:
    # 21 pairs; metric ties |dy| <= 1: 13, of which 3 are human ties too; 1 more human tie;
    # untied: concordant 7, discordant 0. tau_23 = (7 + 3 - 0 - 1 - 10) / 21.
    h, m = row([1, 1, 1, 2, 2, 3, 4]), row([1, 1, 2, 2, 4, 3, 3])
    assert evaluate("kendall-23", human=h, metric=m, epsilon=1.0).value == pytest.approx(-1 / 21)
    assert evaluate("acc-23", human=h, metric=m, epsilon=1.0).value == pytest.approx(10 / 21)


def test_constant_side_is_undefined_for_rank_correlations_only():
    h, m = row([3, 3, 3, 3]), row([1, 2, 3, 4])
    for name in ("pearson", "spearman", "kendall", "kendall-c"):
        got = evaluate(name, human=h, metric=m)
        assert np.isnan(got.value) and got.skipped == 1 and got.n == 0
    # All pairs tied in the human, none in the metric: acc-23 is 0, tau-23 is -1.
    assert evaluate("acc-23", human=h, metric=m).value == 0.0
    assert evaluate("kendall-23", human=h, metric=m).value == -1.0
    # A single unit has no pair at all.
    assert np.isnan(evaluate("acc-23", human=row([1]), metric=row([2])).value)


def test_missing_values_drop_only_the_affected_units():
    h = row([1.0, 2.0, 3.0, 4.0, 5.0, np.nan])
    m = row([2.0, 1.0, np.nan, 3.0, 5.0, 9.0])
    got = evaluate("pearson", human=h, metric=m)
    assert got.n == 4
    assert got.value == pytest.approx(scipy.stats.pearsonr([1, 2, 4, 5], [2, 1, 3, 5])[0])


def test_system_level_means_over_items_where_both_are_present():
    nan = np.nan
    human = np.array([[1.0, 2.0, 3.0], [3.0, nan, 5.0], [2.0, 4.0, 4.0]])
    metric = np.array([[0.1, 0.5, 0.2], [0.3, 0.9, nan], [0.2, 0.4, 0.6]])
    # System means over items with both: h = [2, 3, 3.5], m = [0.2, 0.45, 0.4].
    got = evaluate("pearson", human=human, metric=metric, level="system")
    assert got.n == 3
    assert got.value == pytest.approx(scipy.stats.pearsonr([2, 3, 3.5], [0.2, 0.45, 0.4])[0])
    assert got.p_value == pytest.approx(scipy.stats.pearsonr([2, 3, 3.5],
                                                             [0.2, 0.45, 0.4]).pvalue)


def test_pairwise_accuracy_is_share_of_system_pairs_ordered_alike():
    human = np.array([[1.0, 2.0, 3.0, 3.0]])
    metric = np.array([[0.1, 0.3, 0.2, 0.4]])
    # pairs (0,1) ok, (0,2) ok, (0,3) ok, (1,2) wrong, (1,3) ok, (2,3) human tie -> wrong.
    got = evaluate("pairwise-accuracy", human=human, metric=metric, level="system")
    assert got.value == pytest.approx(4 / 6)


def test_p_values_for_ungrouped_correlations():
    human, metric = tied_data(5)
    ok = np.isfinite(human) & np.isfinite(metric)
    got = evaluate("kendall", human=human, metric=metric)
    assert got.p_value == pytest.approx(scipy.stats.kendalltau(human[ok], metric[ok]).pvalue)
    assert evaluate("kendall", human=human, metric=metric, grouping="item").p_value is None


@pytest.mark.parametrize("args", [
    ("nope", "segment", "none"), ("pearson", "corpus", "none"), ("pearson", "segment", "x"),
    ("pearson", "system", "item"), ("spa", "segment", "none"),
    ("pairwise-accuracy", "segment", "item"),
])
def test_bad_options_are_refused(args):
    with pytest.raises(ValueError):
        check_options(*args)
