"""Property tests: invariances, symmetry and bounds of the meta-evaluation statistics."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from meta_eval import (
    calibrate_epsilon,
    cohen_kappa,
    evaluate,
    krippendorff_alpha,
    pair_counts,
)

RANK_STATISTICS = ("spearman", "kendall", "kendall-c", "acc-23", "kendall-23")
small_ints = st.integers(min_value=-4, max_value=4).map(float)


@st.composite
def score_matrices(draw, max_items=5, max_systems=5):
    items = draw(st.integers(1, max_items))
    systems = draw(st.integers(2, max_systems))
    human = draw(arrays(float, (items, systems), elements=small_ints))
    metric = draw(arrays(float, (items, systems), elements=small_ints))
    holes = draw(arrays(bool, (items, systems)))
    metric = np.where(holes & (np.arange(systems) % 3 == 2), np.nan, metric)
    return human, metric


grouping = st.sampled_from(["none", "item", "system"])
fast = settings(max_examples=60, deadline=None)


def same(a, b):
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) < 1e-9


@fast
@given(score_matrices(), grouping, st.sampled_from(RANK_STATISTICS))
def test_rank_statistics_ignore_monotone_transforms(data, group, statistic):
    human, metric = data
    base = evaluate(statistic, human=human, metric=metric, grouping=group)
    moved = evaluate(statistic, human=human, metric=metric**3 + 2 * metric + 7,
                     grouping=group)
    assert same(base.value, moved.value)
    assert base.n == moved.n and base.skipped == moved.skipped


@fast
@given(score_matrices(), grouping, st.sampled_from(("pearson", "spearman", "kendall")))
def test_correlations_are_symmetric_and_odd(data, group, statistic):
    human, metric = data
    value = evaluate(statistic, human=human, metric=metric, grouping=group).value
    swapped = evaluate(statistic, human=metric, metric=human, grouping=group).value
    negated = evaluate(statistic, human=human, metric=-metric, grouping=group).value
    assert same(value, swapped)
    assert same(value, -negated) or (np.isnan(value) and np.isnan(negated))
    assert np.isnan(value) or -1 - 1e-12 <= value <= 1 + 1e-12


@fast
@given(score_matrices(), grouping, st.sampled_from([0.0, 0.5, 1.0, 3.0]))
def test_tie_aware_statistics_are_bounded_and_linked(data, group, eps):
    human, metric = data
    acc = evaluate("acc-23", human=human, metric=metric, grouping=group, epsilon=eps).value
    tau = evaluate("kendall-23", human=human, metric=metric, grouping=group, epsilon=eps).value
    if np.isnan(acc):
        assert np.isnan(tau)
        return
    assert 0 <= acc <= 1
    assert abs(tau - (2 * acc - 1)) < 1e-9  # tau_23 = 2 acc_23 - 1
    eq = evaluate("acc-eq", human=human, metric=metric, grouping=group)
    assert eq.epsilon is not None and eq.value >= acc - 1e-12 and eq.epsilon >= 0


@fast
@given(arrays(float, st.integers(0, 30), elements=small_ints),
       st.data(), st.sampled_from([0.0, 0.5, 2.0]))
def test_pair_counts_partition_all_pairs(human, data, eps):
    metric = data.draw(arrays(float, human.shape, elements=small_ints))
    c = pair_counts(human=human, metric=metric, epsilon=eps)
    n = human.size
    assert int(c.pairs[0]) == n * (n - 1) // 2
    flipped = pair_counts(human=human, metric=-metric, epsilon=eps)
    assert (flipped.concordant, flipped.discordant) == (c.discordant, c.concordant)


@fast
@given(arrays(float, st.integers(2, 25), elements=small_ints), st.data())
def test_calibrated_epsilon_is_optimal_among_candidates(human, data):
    metric = data.draw(arrays(float, human.shape, elements=small_ints)) / 2
    best = calibrate_epsilon(human=human, metric=metric)
    for eps in {0.0, *np.abs(metric[:, None] - metric[None, :]).ravel().tolist()}:
        c = pair_counts(human=human, metric=metric, epsilon=eps)
        value = float((c.concordant + c.ties_both)[0] / c.pairs[0])
        assert value <= best.value + 1e-12
        if eps < best.epsilon:
            assert value < best.value - 1e-12


@fast
@given(arrays(np.int64, st.integers(1, 30), elements=st.integers(0, 3)), st.data(),
       st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_is_symmetric_and_at_most_one(a, data, weights):
    b = data.draw(arrays(np.int64, a.shape, elements=st.integers(0, 3)))
    one = cohen_kappa(human=a, metric=b, weights=weights).value
    other = cohen_kappa(human=b, metric=a, weights=weights).value
    assert same(one, other)
    assert np.isnan(one) or one <= 1 + 1e-12
    self_agreement = cohen_kappa(human=a, metric=a, weights=weights).value
    assert np.isnan(self_agreement) or abs(self_agreement - 1) < 1e-12


@fast
@given(arrays(float, st.tuples(st.integers(2, 4), st.integers(1, 8)),
              elements=st.one_of(small_ints, st.just(np.nan))),
       st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_is_at_most_one_and_ignores_rater_order(ratings, level):
    a = krippendorff_alpha(ratings=ratings, level=level).value
    b = krippendorff_alpha(ratings=ratings[::-1], level=level).value
    assert same(a, b)
    assert np.isnan(a) or a <= 1 + 1e-12
