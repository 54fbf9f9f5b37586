"""Kendall counts at epsilon 0 in O(n log n) (issue 18): against scipy.stats.kendalltau and
against the tie-threshold counter (`SortedUnits`) that served them before."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from meta_eval import evaluate, pair_counts
from meta_eval.correlation import kendall_groups
from meta_eval.pairs import SortedUnits, exact_pair_counts, inversions, snap

FIELDS = ("concordant", "discordant", "ties_human", "ties_metric", "ties_both", "units")


def tied_data(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Human ratings with few values; a metric with heavy ties of its own, some NaN, and
    magnitudes from 1e-300 to 1e300 (thirds times powers of ten: some values a few ulps
    apart, which the statistics snap into ties)."""
    h = rng.integers(1, 6, size=n) / 3 + rng.integers(0, 2, size=n)
    m = h * rng.choice([1.0, 2.0, -1.0], size=n) + rng.integers(0, 4, size=n)
    m = m * 10.0 ** rng.choice([-300, -150, 0, 150, 300], size=n)
    h[rng.random(n) < 0.03] = np.nan
    m[rng.random(n) < 0.03] = np.nan
    return h, m


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 33, 200, 1023, 1024, 1025])
def test_inversions_are_the_brute_force_count(n):
    values = np.random.default_rng(n).permutation(n)
    want = sum(int((values[:j] > values[j]).sum()) for j in range(n))
    assert inversions(values)[0] == want


@pytest.mark.parametrize("seed", range(40))
def test_exact_counts_equal_the_tie_threshold_counter(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    h = rng.integers(0, rng.integers(1, 8), size=n).astype(float)
    m = rng.integers(0, rng.integers(1, 60), size=n).astype(float)
    if seed % 4 == 0:
        m = rng.normal(size=n)  # no ties in the metric
    groups = rng.integers(0, int(rng.integers(1, 6)), size=n)
    _, labels = np.unique(groups, return_inverse=True)
    for g in (None, labels):
        got = exact_pair_counts(human=h, metric=m, groups=g)
        want = SortedUnits(human=h, metric=m, groups=g).counts(0.0)
        for field in FIELDS:
            assert np.array_equal(getattr(got, field), getattr(want, field)), field


@pytest.mark.parametrize("seed", range(10))
def test_pair_counts_at_epsilon_zero_equal_brute_force_with_nan_and_empty_groups(seed):
    rng = np.random.default_rng(100 + seed)
    n = 120
    h, m = tied_data(rng, n)
    groups = rng.choice([3, 7, 9, 11], size=n)
    h[groups == 9] = np.nan  # a group that loses every unit
    got = pair_counts(human=h, metric=m, groups=groups)
    for k, label in enumerate(np.unique(groups)):
        ok = (groups == label) & np.isfinite(h) & np.isfinite(m)
        hh, mm = h[ok], m[ok]
        i, j = np.triu_indices(hh.size, 1)
        ht, mt = hh[i] == hh[j], mm[i] == mm[j]
        agree = (hh[i] > hh[j]) == (mm[i] > mm[j])
        want = (~ht & ~mt & agree, ~ht & ~mt & ~agree, ht & ~mt, mt & ~ht, ht & mt)
        for field, mask in zip(FIELDS, want, strict=False):
            assert getattr(got, field)[k] == mask.sum(), (label, field)
        assert got.units[k] == hh.size


@pytest.mark.parametrize("seed", range(20))
def test_ungrouped_tau_b_equals_scipy(seed):
    rng = np.random.default_rng(200 + seed)
    n = int(rng.integers(40, 5000))
    h, m = tied_data(rng, n)
    got = evaluate("kendall", human=h.reshape(-1, 1), metric=m.reshape(-1, 1)).value
    ok = np.isfinite(h) & np.isfinite(m)
    want = scipy.stats.kendalltau(snap(h[ok]), snap(m[ok]), variant="b").statistic
    assert abs(got - want) <= 1e-12


def test_tau_b_at_40000_units_equals_scipy_and_the_old_counter():
    rng = np.random.default_rng(7)
    h, m = tied_data(rng, 40000)
    got = kendall_groups(human=h[None], metric=m[None])[0]
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = snap(np.where(ok, h, np.nan)), snap(np.where(ok, m, np.nan))
    assert abs(got - scipy.stats.kendalltau(h[ok], m[ok]).statistic) <= 1e-12
    old = SortedUnits(human=h[ok], metric=m[ok]).counts(0.0)
    new = pair_counts(human=h, metric=m)
    for field in FIELDS:
        assert np.array_equal(getattr(new, field), getattr(old, field)), field


def test_near_ties_are_still_snapped():
    # Values 1e-13 apart (relative) are one value: tau-b is scipy's on the exact ties.
    rng = np.random.default_rng(3)
    n = 3000
    h = rng.integers(0, 5, size=n).astype(float)
    base = rng.integers(0, 50, size=n).astype(float) + 0.1
    nudged = base * (1 + rng.choice([0.0, 1e-13, -2e-13], size=n))
    assert np.unique(nudged).size > np.unique(base).size
    got = kendall_groups(human=h[None], metric=nudged[None])[0]
    assert abs(got - scipy.stats.kendalltau(h, base).statistic) <= 1e-12
    assert abs(got - scipy.stats.kendalltau(h, snap(nudged)).statistic) <= 1e-12
    assert abs(got - scipy.stats.kendalltau(h, nudged).statistic) > 1e-6


@pytest.mark.parametrize("variant", ["kendall", "kendall-c", "kendall-23", "acc-23"])
def test_every_variant_at_epsilon_zero_is_unchanged_grouped(variant):
    rng = np.random.default_rng(11)
    h = rng.integers(1, 4, size=(6, 300)).astype(float)
    m = np.round(h + rng.normal(size=h.shape), 1)
    m[rng.random(m.shape) < 0.05] = np.nan
    got = kendall_groups(human=h, metric=m, variant=variant)
    want = []
    for row_h, row_m in zip(h, m, strict=True):
        ok = np.isfinite(row_m)
        c = SortedUnits(human=row_h[ok], metric=row_m[ok]).counts(0.0)
        con, dis, th, tm, tb = (float(getattr(c, f)[0]) for f in FIELDS[:5])
        pairs = con + dis + th + tm + tb
        if variant == "kendall":
            want.append((con - dis) / np.sqrt((pairs - th - tb) * (pairs - tm - tb)))
        elif variant == "kendall-c":
            k = min(np.unique(row_h[ok]).size, np.unique(row_m[ok]).size)
            want.append(2 * (con - dis) / (ok.sum() ** 2 * (k - 1) / k))
        elif variant == "kendall-23":
            want.append((con + tb - dis - th - tm) / pairs)
        else:
            want.append((con + tb) / pairs)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    if variant == "kendall":
        for value, row_h, row_m in zip(got, h, m, strict=True):
            ok = np.isfinite(row_m)
            assert abs(value - scipy.stats.kendalltau(row_h[ok], row_m[ok]).statistic) < 1e-12


def brute_counts(h: np.ndarray, m: np.ndarray) -> tuple[int, ...]:
    i, j = np.triu_indices(h.size, 1)
    ht, mt = h[i] == h[j], m[i] == m[j]
    agree = (h[i] > h[j]) == (m[i] > m[j])
    return tuple(int(x.sum()) for x in (~ht & ~mt & agree, ~ht & ~mt & ~agree, ht & ~mt,
                                        mt & ~ht, ht & mt))


@pytest.mark.parametrize("fenwick", [True, False])
@pytest.mark.parametrize("seed", range(30))
def test_snapped_counts_equal_brute_force_on_snapped_values(seed, fenwick, monkeypatch):
    # Two sorts, scipy's Fenwick count (or the radix fallback), joint ties from a histogram
    # (few values) or from the tied runs (many): the counts of a loop over the snapped pairs.
    import sys

    from meta_eval.pairs import snapped_exact_counts

    if not fenwick:
        monkeypatch.setitem(sys.modules, "scipy.stats._stats", None)
    rng = np.random.default_rng(300 + seed)
    n = int(rng.integers(0, 900))
    if seed % 3 == 0:
        h, m = tied_data(rng, n)
    elif seed % 3 == 1:  # many distinct values on both sides, ties in runs
        h = rng.integers(0, max(n // 2, 1), size=n) * 0.1
        m = rng.integers(0, max(n // 3, 1), size=n) * (1 + 1e-14 * rng.integers(0, 3, size=n))
    else:
        h = rng.normal(size=n) * 1e300
        m = np.round(rng.normal(size=n), 1) * 1e-300
        h[rng.random(n) < 0.2] = 1e300 * (1 + 3e-16)  # near-ties of the human side
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = h[ok], m[ok]
    got, n_h, n_m = snapped_exact_counts(human=h, metric=m)
    sh, sm = snap(h), snap(m)
    assert tuple(int(getattr(got, f)[0]) for f in FIELDS[:5]) == brute_counts(sh, sm)
    assert (got.units[0], n_h, n_m) == (h.size, np.unique(sh).size, np.unique(sm).size)
    old = exact_pair_counts(human=sh, metric=sm)
    for field in FIELDS:
        assert np.array_equal(getattr(got, field), getattr(old, field)), field


@pytest.mark.parametrize("units", [5000, 700])
@pytest.mark.parametrize("variant", ["kendall", "kendall-c", "kendall-23", "acc-23"])
def test_long_rows_give_the_values_of_the_general_path(variant, units, monkeypatch):
    import meta_eval.correlation as correlation

    rng = np.random.default_rng(12)
    h, m = tied_data(rng, 3 * units)
    h, m = h.reshape(3, units), m.reshape(3, units)
    m[1] = np.nan  # a row with no unit
    got = kendall_groups(human=h, metric=m, variant=variant)
    monkeypatch.setattr(correlation, "_ROW_UNITS", 1 << 30)
    want = kendall_groups(human=h, metric=m, variant=variant)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.isnan(got[1]) and np.isfinite(got[[0, 2]]).all()


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 33, 200, 1023, 1025])
@pytest.mark.parametrize("n_values", [1, 2, 5, 64])
def test_few_value_inversions_are_the_brute_force_count(n, n_values):
    # Blocks of 16 compared directly, pairs across blocks from histograms: a loop's count
    # and the radix count, with ties, on every block boundary.
    from meta_eval.pairs import few_value_inversions

    values = np.random.default_rng(n * 100 + n_values).integers(0, n_values, size=n)
    want = sum(int((values[:j] > values[j]).sum()) for j in range(n))
    assert few_value_inversions(values, n_values) == want == inversions(values)[0]
    descending = np.sort(values)[::-1]
    want = sum(int((descending[:j] > descending[j]).sum()) for j in range(n))
    assert few_value_inversions(descending, n_values) == want


def test_a_kept_human_sort_is_the_sort_of_the_values_given():
    # The sort of a human row is kept for the next metrics (by its bytes): a row changed in
    # place, a row equal but for the sign of a zero, and more rows than are kept.
    from meta_eval.pairs import snapped_exact_counts

    rng = np.random.default_rng(5)
    h = np.asarray(rng.integers(0, 5, size=700), dtype=np.float64)
    h[:10] = 0.0
    for k in range(20):
        m = np.asarray(rng.integers(0, 40, size=700) * 0.5, dtype=np.float64)
        if k % 7 == 3:
            h[rng.integers(0, 700, size=5)] += 1.0  # in place
        if k % 7 == 5:
            h[:10] = -0.0
        for row in (h, h[: 300 + k]):
            got, _, _ = snapped_exact_counts(human=row, metric=m[: row.size])
            want = brute_counts(snap(row), snap(m[: row.size]))
            assert tuple(int(getattr(got, f)[0]) for f in FIELDS[:5]) == want
