"""Paired tests (PERM-BOTH, pair-outcome swaps, Williams), significance clusters, SPA."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.stats

from meta_eval import (
    compare,
    evaluate,
    pairwise_accuracy,
    permutation_test,
    significance_clusters,
    spa,
    williams,
    williams_test,
)
from meta_eval.significance import pair_disagreements


def synthetic(seed=0, items=30, systems=8, noise=(0.3, 0.35, 1.0, 3.0)):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(items, systems))
    human = quality + rng.normal(size=quality.shape) * 0.3
    metrics = {f"m{k}": quality + rng.normal(size=quality.shape) * s
               for k, s in enumerate(noise)}
    return human, metrics


def test_williams_matches_mt_metrics_eval_example():
    # mt-metrics-eval stats_test.WilliamsSigDiffTest.testSigDiff
    human = np.array([[1, 2, 3, 4, 5]], dtype=float)
    a = np.array([[1.1, 2, 3.1, 4, 5.1]])
    b = np.array([[1.5, 2, 3.1, 4, 5.5]])
    got = williams(human=human, metric_a=a, metric_b=b)
    assert got.p_value == pytest.approx(0.019, abs=5e-4)
    assert got.value_a == pytest.approx(0.999, abs=5e-4)
    assert got.value_b == pytest.approx(0.987, abs=5e-4)
    # One-sided: the other direction is the complement.
    back = williams(human=human, metric_a=b, metric_b=a)
    assert back.p_value == pytest.approx(1 - got.p_value)


def test_williams_formula():
    r12, r13, r23, n = 0.6, 0.4, 0.5, 50
    k = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23)) / np.sqrt(
        2 * (n - 1) / (n - 3) * k + ((r12 + r13) / 2) ** 2 * (1 - r23) ** 3)
    assert williams_test(r_ha=r12, r_hb=r13, r_ab=r23, n=n) == pytest.approx(
        scipy.stats.t.sf(t, n - 3))


def test_williams_refuses_grouped_and_non_pearson():
    human, metrics = synthetic()
    with pytest.raises(ValueError):
        williams(human=human, metric_a=metrics["m0"], metric_b=metrics["m1"], grouping="item")
    with pytest.raises(ValueError):
        compare("kendall", human=human, metric_a=metrics["m0"], metric_b=metrics["m1"],
                method="williams")


@pytest.mark.parametrize("statistic,level,grouping", [
    ("pearson", "segment", "item"), ("kendall", "segment", "none"),
    ("spearman", "system", "none"), ("pairwise-accuracy", "system", "none"),
    ("acc-eq", "segment", "item"), ("acc-23", "segment", "none"),
])
def test_permutation_separates_good_from_bad(statistic, level, grouping):
    human, metrics = synthetic(1, items=40, systems=12)
    good = metrics["m0"]
    bad = np.random.default_rng(9).normal(size=human.shape)  # unrelated to quality
    better = permutation_test(statistic, human=human, metric_a=good, metric_b=bad,
                              level=level, grouping=grouping, resamples=400, seed=1)
    worse = permutation_test(statistic, human=human, metric_a=bad, metric_b=good,
                             level=level, grouping=grouping, resamples=400, seed=1)
    assert better.delta > 0 and better.p_value < 0.05
    assert worse.p_value > 0.5


def test_identical_metrics_are_never_significant():
    human, metrics = synthetic(2)
    got = permutation_test("pearson", human=human, metric_a=metrics["m1"],
                           metric_b=metrics["m1"], grouping="item", resamples=100)
    assert got.delta == 0 and got.p_value == 1.0


def test_early_stopping_when_decided():
    human, metrics = synthetic(3)
    got = permutation_test("pearson", human=human, metric_a=metrics["m0"],
                           metric_b=metrics["m3"], grouping="item", resamples=1000, block=100)
    # No hit in 100 draws: the 99% interval [0, 0.052] still holds alpha 0.05; in 200 draws
    # it is [0, 0.026], and the test is decided.
    assert got.resamples == 200 and got.p_value == 0.0 and got.p_value_early
    full = permutation_test("pearson", human=human, metric_a=metrics["m0"],
                            metric_b=metrics["m3"], grouping="item", resamples=300,
                            early_stop=False)
    assert full.resamples == 300 and not full.p_value_early


def test_units_missing_any_score_are_left_out_of_the_comparison():
    human, metrics = synthetic(4)
    a, b = metrics["m0"].copy(), metrics["m2"].copy()
    a[0, 0] = np.nan
    got = permutation_test("pearson", human=human, metric_a=a, metric_b=b, resamples=50)
    assert got.n == human.size - 1
    b_common = b.copy()
    b_common[0, 0] = np.nan
    assert got.value_b == pytest.approx(evaluate("pearson", human=human, metric=b_common).value)


def test_pair_disagreements_by_hand():
    h = np.array([[1.0, 2.0, 3.0]])
    a = np.array([[1.0, 3.0, 2.0]])  # pairs: (0,1) ok, (0,2) ok, (1,2) wrong
    b = np.array([[3.0, 2.0, 1.0]])  # all wrong
    only_a, only_b, pairs = pair_disagreements(human=h, metric_a=a, metric_b=b, eps_a=0.0,
                                               eps_b=0.0)
    assert (only_a.tolist(), only_b.tolist(), pairs.tolist()) == ([2], [0], [3])


def test_pair_swap_test_is_exact_binomial_with_equal_groups():
    human, metrics = synthetic(5, items=20, systems=6)
    a, b = np.round(metrics["m1"], 1), np.round(metrics["m2"], 1)
    got = permutation_test("acc-23", human=np.round(human), metric_a=a, metric_b=b,
                           grouping="item")
    only_a = only_b = 0
    for r in range(human.shape[0]):
        h = np.round(human[r])
        for i, j in itertools.combinations(range(human.shape[1]), 2):
            right = []
            for m in (a[r], b[r]):
                tie_h, tie_m = h[i] == h[j], m[i] == m[j]
                right.append((tie_h and tie_m) or (not tie_h and not tie_m
                                                   and (h[i] > h[j]) == (m[i] > m[j])))
            only_a += right[0] and not right[1]
            only_b += right[1] and not right[0]
    assert got.resamples == 0
    assert got.p_value == pytest.approx(scipy.stats.binom.sf(only_a - 1, only_a + only_b, 0.5))
    # With unequal groups the binomials are sampled; the sampled p agrees.
    b_missing = b.copy()
    b_missing[0, :2] = np.nan
    sampled = permutation_test("acc-23", human=np.round(human), metric_a=a, metric_b=b_missing,
                               grouping="item", resamples=4000)
    assert sampled.resamples == 4000 and 0 <= sampled.p_value <= 1


def assign_ranks(p, alpha):
    """mt-metrics-eval data.AssignRanks over a full p-value matrix (sorted metrics)."""
    ranks, current, start = [], 1, 0
    for i in range(p.shape[0]):
        if any(p[j, i] <= alpha for j in range(start, i)):
            current += 1
            start = i
        ranks.append(current)
    return ranks


def test_clusters_follow_wmt_assign_ranks():
    human, metrics = synthetic(6, items=40)
    # m1: m0 with a negligible perturbation, so the two cannot be told apart.
    metrics["m1"] = metrics["m0"] + np.random.default_rng(1).normal(size=human.shape) * 1e-3
    ranking = significance_clusters("pearson", human=human, metrics=metrics,
                                    grouping="item", resamples=300, seed=2)
    names = [m.metric for m in ranking.metrics]
    values = [m.value for m in ranking.metrics]
    assert values == sorted(values, reverse=True)
    assert set(names[:2]) == {"m0", "m1"} and names[-1] == "m3"
    # The full upper triangle of p-values, from the same tests, ranked the WMT way.
    full = np.ones((4, 4))
    for i, j in itertools.combinations(range(4), 2):
        x, y = names[i], names[j]
        if (x, y) in ranking.p_values:
            full[i, j] = ranking.p_values[(x, y)]
        else:
            full[i, j] = compare("pearson", human=human, metric_a=metrics[x],
                                 metric_b=metrics[y], grouping="item", resamples=300,
                                 seed=2 + i + 10 * j).p_value
    clusters = [m.cluster for m in ranking.metrics]
    assert clusters == assign_ranks(full, 0.05)
    assert clusters[0] == clusters[1] == 1 and clusters[-1] > clusters[1]


def test_spa_matches_mt_metrics_eval_example():
    # mt-metrics-eval stats_test.testPairwiseConfidenceError: 2 systems x 3 segments.
    human = np.array([[1, 2, 3], [2, 3, 4]], dtype=float).T
    metric = np.array([[2, 2, 4], [1, 3, 5]], dtype=float).T
    assert spa(human=human, metric=metric, seed=4).value == pytest.approx(0.872, abs=5e-4)


def test_spa_of_a_perfect_metric_is_one_and_handles_missing_cells():
    human, _ = synthetic(7, items=20, systems=5)
    assert spa(human=human, metric=human * 2 + 1).value == 1.0
    holey = human.copy()
    holey[0, 0] = np.nan
    got = evaluate("spa", human=human, metric=holey, level="system")
    assert got.n == 10 and 0.9 < got.value <= 1.0


def test_pairwise_accuracy_counts_system_pairs():
    got = pairwise_accuracy(human=[1.0, 2.0, 3.0], metric=[0.3, 0.2, 0.9])
    assert got.value == pytest.approx(2 / 3) and got.n == 3


@pytest.mark.parametrize("grouping", ["none", "item", "system"])
def test_pearson_swaps_by_sufficient_statistics_equal_recomputation(grouping):
    from meta_eval.levels import arrange
    from meta_eval.significance import (
        _batch,
        _common,
        _group_layout,
        _PearsonSwaps,
        _zscore,
        random_swaps,
    )

    rng = np.random.default_rng(0)
    human = rng.normal(size=(30, 6))
    a, b = human + rng.normal(size=human.shape), human + 2 * rng.normal(size=human.shape)
    a[0, 1], human[2, 3] = np.nan, np.nan
    human[4] = 1.0  # a constant item
    human, a, b = _common(human, a, b)
    za, zb = _zscore(a), _zscore(b)
    layout = {"level": "segment", "grouping": grouping}
    fast = _PearsonSwaps(*arrange(human=human, metric=za, **layout),
                         arrange(human=human, metric=zb, **layout)[1], grouping != "none")
    swaps = random_swaps(rng, (40, *human.shape))
    got_a, got_b = fast(_group_layout(swaps, grouping))
    options = {**layout, "epsilon": 0.0, "permutations": 0, "seed": 0}
    want_a = _batch("pearson", human=human, metric=np.where(swaps, zb, za), **options)
    want_b = _batch("pearson", human=human, metric=np.where(swaps, za, zb), **options)
    assert got_a == pytest.approx(want_a, abs=1e-12)
    assert got_b == pytest.approx(want_b, abs=1e-12)


@pytest.mark.parametrize("cells", [1, 37, 1 << 19])
def test_swap_dots_are_the_plain_products(cells, monkeypatch):
    # Chunks of any size (the last one partial) give exactly einsum's products.
    import meta_eval.significance as significance

    monkeypatch.setattr(significance, "_SWAP_CELLS", cells)
    rng = np.random.default_rng(cells)
    swaps = rng.random((23, 7, 5)) < 0.5
    vectors = rng.integers(-50, 50, size=(7, 5, 4)).astype(float)
    got = significance.swap_dots(swaps, vectors)
    assert np.array_equal(got, np.einsum("kgu,guv->vkg", swaps.astype(float), vectors))
