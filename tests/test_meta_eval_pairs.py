"""Sort-based pair counts and exact tie calibration against plain pair loops."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pytest

import meta_eval.pairs
from meta_eval import calibrate_epsilon, pair_counts


def loop_counts(h, m, eps):
    """(concordant, discordant, ties_human, ties_metric, ties_both) by a loop over pairs."""
    c = d = th = tm = tb = 0
    for i, j in itertools.combinations(range(len(h)), 2):
        ht, mt = h[i] == h[j], abs(m[i] - m[j]) <= eps
        if ht and mt:
            tb += 1
        elif ht:
            th += 1
        elif mt:
            tm += 1
        elif (h[i] > h[j]) == (m[i] > m[j]):
            c += 1
        else:
            d += 1
    return c, d, th, tm, tb


def loop_calibration(h, m, groups):
    """Smallest epsilon maximising group-averaged acc-23, by trying every candidate."""
    rows = [list(itertools.combinations(np.flatnonzero(groups == g), 2))
            for g in np.unique(groups)]
    rows = [r for r in rows if r]

    def acc(eps):
        total = 0.0
        for pairs in rows:
            right = sum(1 for i, j in pairs
                        if (h[i] == h[j] and abs(m[i] - m[j]) <= eps)
                        or (h[i] != h[j] and abs(m[i] - m[j]) > eps
                            and (h[i] > h[j]) == (m[i] > m[j])))
            total += right / len(pairs)
        return total / len(rows)

    candidates = sorted({0.0} | {abs(m[i] - m[j]) for r in rows for i, j in r})
    values = [acc(e) for e in candidates]
    best = max(values)
    k = next(k for k, v in enumerate(values) if v >= best - 1e-12)
    return candidates[k], values[k]


@pytest.fixture(params=["tables", "merge-sort tree"])
def index_kind(request, monkeypatch):
    if request.param == "merge-sort tree":
        monkeypatch.setattr(meta_eval.pairs, "_TABLE_LIMIT", 0)
    return request.param


def test_counts_match_pair_loop(index_kind):
    rng = np.random.default_rng(1)
    for _ in range(150):
        n = int(rng.integers(0, 25))
        h = rng.integers(0, 4, n).astype(float)
        m = np.round(rng.random(n) * rng.integers(1, 5), 1)
        eps = float(rng.choice([0.0, 0.1, 0.2, 0.35, 1.0]))
        groups = rng.integers(0, 3, n)
        counts = pair_counts(human=h, metric=m, epsilon=eps, groups=groups)
        for k, g in enumerate(np.unique(groups)):
            sel = groups == g
            got = (counts.concordant[k], counts.discordant[k], counts.ties_human[k],
                   counts.ties_metric[k], counts.ties_both[k])
            assert tuple(int(x) for x in got) == loop_counts(h[sel], m[sel], eps)


def test_epsilon_applies_to_the_computed_difference(index_kind):
    # 0.1 steps are not exact in binary: m_j - m_i can differ from the rounding of m_i + eps.
    rng = np.random.default_rng(3)
    for _ in range(100):
        n = int(rng.integers(2, 25))
        h = rng.integers(0, 3, n).astype(float)
        m = rng.integers(0, 10, n) * 0.1 + rng.integers(0, 3, n) * 0.7
        for eps in (0.1, 0.2, 0.3, 0.7, 0.8):
            c = pair_counts(human=h, metric=m, epsilon=eps)
            got = (c.concordant[0], c.discordant[0], c.ties_human[0], c.ties_metric[0],
                   c.ties_both[0])
            assert tuple(int(x) for x in got) == loop_counts(h, m, eps)


def test_missing_values_drop_units_and_empty_groups_count_zero():
    h = np.array([1.0, 2.0, np.nan, 4.0, 5.0])
    m = np.array([1.0, np.nan, 3.0, 2.0, 5.0])
    g = np.array([0, 0, 1, 1, 1])
    c = pair_counts(human=h, metric=m, groups=g)
    assert c.units.tolist() == [1, 2]
    assert c.pairs.tolist() == [0, 1]
    assert c.concordant.tolist() == [0, 1]


def test_calibration_matches_exhaustive_search(index_kind):
    rng = np.random.default_rng(2)
    for _ in range(120):
        n = int(rng.integers(2, 30))
        h = rng.integers(0, 3, n).astype(float)
        m = np.round(rng.random(n) * 3, int(rng.integers(0, 3)))
        groups = rng.integers(0, int(rng.integers(1, 4)), n)
        # Tiny budgets force the branch-and-bound splits; a big one sweeps at once.
        budget = int(rng.choice([1, 5, 20, 10**6]))
        eps, value = loop_calibration(h, m, groups)
        got = calibrate_epsilon(human=h, metric=m, groups=groups, budget=budget)
        assert got.epsilon == eps
        assert got.value == pytest.approx(value, abs=1e-12)


def test_calibration_examples_from_mt_metrics_eval():
    # tau_optimization_test: zero threshold best, non-zero threshold best.
    best = calibrate_epsilon(human=[1, 2, 3, 4], metric=[0, 2, 6, 8])
    assert (best.epsilon, best.value) == (0.0, 1.0)
    best = calibrate_epsilon(human=[1, 1, 1, 4], metric=[0, 2, 6, 8])
    assert best.epsilon == 4.0 and best.value == pytest.approx(4 / 6)
    # stats_test.testKendallWithTiesOpt
    assert calibrate_epsilon(human=[1, 2, 2, 3, 4], metric=[2, 1, 1.5, 5, 3]).value == 0.7
    # tau_optimization_test.test_regression_example: rows are groups, None is missing.
    nan = np.nan
    metric = np.array([[0, 5, 2, 3, 2], [nan, 2, 1, 5, 3], [9, 1, 5, 3, 8], [9, 3, 4, 4, 1],
                       [nan] * 5])
    human = np.array([[1, 5, 2, 1, 1], [4, 2, 2, 1, 4], [5, 9, 2, 8, 7], [7, 6, nan, 3, 2],
                      [nan] * 5])
    rows = np.repeat(np.arange(5), 5)
    best = calibrate_epsilon(human=human.ravel(), metric=metric.ravel(), groups=rows)
    assert best.epsilon == 1.0
    assert best.value == pytest.approx(0.4916666666666668, abs=1e-15)
    assert best.groups == 4


def test_calibration_holds_no_quadratic_memory():
    # 20,000 units = 2e8 pairs (1.6 GB as float64 differences); ties in the human scores
    # make the search work. The index needs O(n log n).
    rng = np.random.default_rng(0)
    n = 20_000
    q = rng.normal(size=n)
    human = np.clip(np.round(q + rng.normal(size=n) + 3), 1, 5)
    metric = q + rng.normal(size=n)
    tracemalloc.start()
    try:
        result = calibrate_epsilon(human=human, metric=metric, budget=1 << 18)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.pairs == n * (n - 1) // 2
    assert peak < 80e6
    # The value at the chosen epsilon is what acc-23 gives there.
    c = pair_counts(human=human, metric=metric, epsilon=result.epsilon)
    assert result.value == pytest.approx(float((c.concordant + c.ties_both)[0] / c.pairs[0]))


def _search(h, m, groups, budget):
    """The branch-and-bound search, whatever the pair count (the path past the budget)."""
    from meta_eval.calibration import _Search
    from meta_eval.pairs import SortedUnits, snap

    ok = np.isfinite(h) & np.isfinite(m)
    gid = np.unique(groups, return_inverse=True)[1].reshape(-1)[ok]
    h, m = snap(h[ok], groups=gid), snap(m[ok], groups=gid)
    with np.errstate(over="ignore"):
        return _Search(SortedUnits(human=h, metric=m, groups=gid), budget, 0).run()


@pytest.mark.parametrize("equal_sizes", [True, False])
def test_calibration_of_many_small_groups_sweeps_in_chunks(equal_sizes):
    # Past the pair budget, groups that each fit are swept a budget of pairs at a time: the
    # same answer as the branch-and-bound search and as a loop over every candidate.
    rng = np.random.default_rng(5)
    for trial in range(40):
        n_groups, size = int(rng.integers(2, 40)), int(rng.integers(2, 9))
        groups = np.repeat(np.arange(n_groups), size)
        if not equal_sizes:
            groups = np.sort(rng.integers(0, n_groups, groups.size))
        n = groups.size
        h = rng.integers(0, 3, n).astype(float)
        m = np.round(rng.normal(size=n) * 3, int(rng.integers(0, 3)))
        if trial % 4 == 1:
            m = m * 1e300  # differences overflow to inf
        elif trial % 4 == 2:
            m, h = m * 1e-300, h * 1e-300
        h[rng.random(n) < 0.05] = np.nan
        m[rng.random(n) < 0.05] = np.nan
        sizes = np.bincount(groups[np.isfinite(h) & np.isfinite(m)])
        pairs = sizes * (sizes - 1) // 2
        budget = max(int(pairs.max(initial=1)), int(pairs.sum()) // int(rng.integers(2, 6)), 1)
        got = calibrate_epsilon(human=h, metric=m, groups=groups, budget=budget)
        assert got.evaluations == 0  # swept, not searched
        ref = _search(h, m, groups, budget)
        assert (got.epsilon, got.groups, got.pairs) == (ref.epsilon, ref.groups, ref.pairs)
        assert got.value == pytest.approx(ref.value, rel=1e-12, abs=0)
        if n <= 60:
            ok = np.isfinite(h) & np.isfinite(m)
            eps, value = loop_calibration(h[ok], m[ok], groups[ok])
            assert got.epsilon == eps
            assert got.value == pytest.approx(value, abs=1e-12)


def test_calibration_of_small_groups_is_linear_in_pairs():
    # 8,000 items x 20 systems = 1.5M pairs (past the budget): swept in chunks, never searched,
    # the same answer as the search.
    rng = np.random.default_rng(0)
    items, systems = 8_000, 20
    q = rng.normal(size=(items, systems))
    human = np.clip(np.round(q[None] + 3 + rng.normal(size=(3, items, systems))), 1, 5)
    human = human.mean(axis=0).reshape(-1)
    metric = (q + rng.normal(size=q.shape) * 0.8).reshape(-1)
    groups = np.repeat(np.arange(items), systems)
    got = calibrate_epsilon(human=human, metric=metric, groups=groups)
    assert got.evaluations == 0 and got.pairs == items * 190
    ref = _search(human, metric, groups, 1 << 20)
    assert (got.epsilon, got.value) == (ref.epsilon, pytest.approx(ref.value, rel=1e-12))
