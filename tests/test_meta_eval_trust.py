"""Issue 10, items 7-11: one table of statistics, ties after arithmetic, numerically robust
correlations, early stopping that follows alpha, keyword-only gold/metric arguments.

References are independent of meta_eval: scipy, exact rationals (fractions.Fraction) and
plain loops over pairs.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import itertools
import pkgutil
import warnings
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import meta_eval
from meta_eval import (
    bootstrap_values,
    evaluate,
    permutation_test,
    significance_clusters,
    williams,
)

fast = settings(max_examples=40, deadline=None)
SCIPY = {
    "pearson": lambda h, m: scipy.stats.pearsonr(h, m).statistic,
    "spearman": lambda h, m: scipy.stats.spearmanr(h, m).statistic,
    "kendall": lambda h, m: scipy.stats.kendalltau(h, m).statistic,
}


def same(a: float, b: float, tol: float = 1e-12) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tol


# -- 7: one table of statistics ------------------------------------------------------------
def system_data(seed: int = 0, items: int = 30, systems: int = 8):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(items, systems))
    human = quality + rng.normal(size=quality.shape) * 0.5
    a = quality + rng.normal(size=quality.shape)
    b = quality + rng.normal(size=quality.shape) * 2
    return human, a, b


def test_pairwise_accuracy_p_values_do_not_depend_on_epsilon():
    # pairwise-accuracy is defined with exact ties: --epsilon changes neither its value
    # nor the statistic its permutation null is computed for.
    human, a, b = system_data()
    got = [permutation_test("pairwise-accuracy", human=human, metric_a=a, metric_b=b,
                            level="system", epsilon=eps, resamples=400, seed=3,
                            early_stop=False)
           for eps in (0.0, 0.05, 0.2, 0.5)]
    assert {g.value_a for g in got} == {got[0].value_a}
    assert {g.p_value for g in got} == {got[0].p_value}
    # ... and it is the p-value of acc-23 with epsilon 0, the statistic it ranks by.
    ranking = significance_clusters("pairwise-accuracy", human=human, metrics={"a": a, "b": b},
                                    level="system", epsilon=0.5, resamples=400, seed=3,
                                    early_stop=False)
    exact = significance_clusters("pairwise-accuracy", human=human,
                                  metrics={"a": a, "b": b}, level="system", epsilon=0.0,
                                  resamples=400, seed=3, early_stop=False)
    assert ranking.p_values == exact.p_values


def settings_of(name: str) -> list[tuple[str, str]]:
    spec = meta_eval.STATISTICS[name]
    out = [("system", "none")] if "system" in spec.levels else []
    if "segment" in spec.levels:
        out += [("segment", g) for g in ("none", "item", "system")]
    return out


small = st.integers(min_value=-3, max_value=3).map(float)


@st.composite
def three_matrices(draw):
    items = draw(st.integers(2, 5))
    systems = draw(st.integers(3, 5))
    human = draw(arrays(float, (items, systems), elements=small))
    a = draw(arrays(float, (items, systems), elements=small)) / 2
    b = draw(arrays(float, (items, systems), elements=small)) / 3
    holes = draw(arrays(bool, (items, systems)))
    a = np.where(holes & (np.arange(systems) == 1), np.nan, a)
    b = np.where(np.isnan(a) | np.isnan(human), np.nan, b)  # the same units as (human, a)
    return human, a, b


@fast
@given(three_matrices(), st.sampled_from(list(meta_eval.STATISTICS)), st.data(),
       st.sampled_from([0.0, 0.5, 1.0]))
def test_every_statistic_has_one_value_in_evaluate_permutation_and_bootstrap(
        data, name, choice, eps):
    human, a, b = data
    if meta_eval.STATISTICS[name].probabilities:  # their domain: 0/1 labels, p in [0, 1]
        human, a, b = (human > 0).astype(float), (a + 1.5) / 3, (b + 1) / 2
    if meta_eval.STATISTICS[name].nonnegative:  # the ratio level: values >= 0
        human, a, b = np.abs(human), np.abs(a), np.abs(b)
    level, grouping = choice.draw(st.sampled_from(settings_of(name)))
    common = {"level": level, "grouping": grouping, "epsilon": eps, "permutations": 20,
              "seed": 1}
    value = evaluate(name, human=human, metric=a, **common)
    test = permutation_test(name, human=human, metric_a=a, metric_b=b, resamples=4,
                            early_stop=False, **common)
    identity = np.arange(human.shape[0])[None, :]
    spec = meta_eval.STATISTICS[name]
    boot = bootstrap_values(name, human=human, metric=a, level=level, grouping=grouping,
                            epsilon=None if spec.epsilon == "calibrated" else eps,
                            permutations=20, seed=1, index=identity)
    assert same(value.value, test.value_a), (value, test)
    assert same(value.value, float(boot[0])), (value, boot)


def test_a_statistic_is_added_in_one_place(monkeypatch):
    import meta_eval.statistics as table
    from judgebench.auditing.gate import credits_ties

    extra = table.Statistic("acc-23-exact", "acc-23", "zero", table.ALL_LEVELS,
                            "acc-23 with exact metric ties", "Deutsch et al. 2023",
                            swaps="pairs", credits_ties=True,
                            groups=table.get("acc-23").groups)
    monkeypatch.setattr(table, "STATISTICS",
                        MappingProxyType({**table.STATISTICS, extra.name: extra}))
    human, a, b = system_data(1)
    human, a, b = np.round(human), np.round(a), np.round(b, 1)
    meta_eval.levels.check_options("acc-23-exact", "segment", "item")
    for eps in (0.0, 1.0):
        got = evaluate("acc-23-exact", human=human, metric=a, grouping="item", epsilon=eps)
        want = evaluate("acc-23", human=human, metric=a, grouping="item", epsilon=0.0)
        assert got.value == want.value and got.epsilon is None
        test = permutation_test("acc-23-exact", human=human, metric_a=a, metric_b=b,
                                grouping="item", epsilon=eps)
        ref = permutation_test("acc-23", human=human, metric_a=a, metric_b=b,
                               grouping="item", epsilon=0.0)
        assert (test.value_a, test.p_value) == (ref.value_a, ref.p_value)
    assert credits_ties("acc-23-exact") and not credits_ties("pearson")
    assert "acc-23-exact: acc-23 with exact metric ties" in table.help_text()


def test_the_table_is_what_callers_accept():
    names = list(meta_eval.STATISTICS)
    assert names == ["pearson", "spearman", "kendall", "kendall-c", "kendall-23", "acc-23",
                     "acc-eq", "pairwise-accuracy", "spa", "weighted-tau", "weighted-tau-human",
                     "weighted-tau-metric", "weighted-tau-product", "pdp", "kappa",
                     "kappa-linear", "qwk", "krippendorff", "krippendorff-ratio",
                     "krippendorff-ordinal", "krippendorff-nominal", "ckld",
                     "ckld-uniform", "wasserstein", "wasserstein-real", "mae",
                     "rmse", "bias", "brier", "ece", "ece-mass"]
    for name in names:
        for level in ("system", "segment"):
            ok = level in meta_eval.STATISTICS[name].levels
            try:
                meta_eval.levels.check_options(name, level, "none")
                accepted = True
            except ValueError:
                accepted = False
            assert accepted == ok, (name, level)
    help_lines = meta_eval.statistic_help().split("; ")
    assert [line.split(":")[0] for line in help_lines] == names


def test_each_entry_holds_the_kernel_it_names():
    from meta_eval import agreement, correlation, deviation, distribution, reliability
    from meta_eval.statistics import STATISTICS, Statistic, get, group_values

    rng = np.random.default_rng(3)
    human = rng.integers(0, 2, (4, 7)).astype(float)
    metric = np.round(rng.random((4, 7)), 1)
    human[0, 1] = metric[2, 3] = np.nan
    expected = {
        "pearson": correlation.pearson_groups(human=human, metric=metric),
        "pdp": correlation.pearson_groups(human=human, metric=metric),
        "spearman": correlation.spearman_groups(human=human, metric=metric),
        "weighted-tau": correlation.weighted_tau_groups(human=human, metric=metric),
        **{f"weighted-tau-{rank}": correlation.weighted_tau_groups(human=human, metric=metric,
                                                                   rank=rank)
           for rank in ("human", "metric")},
        "weighted-tau-product": correlation.weighted_tau_groups(human=human, metric=metric,
                                                                additive=False),
        **{v: correlation.kendall_groups(human=human, metric=metric, variant=v, epsilon=0.25)
           for v in ("kendall-23", "acc-23")},
        **{v: correlation.kendall_groups(human=human, metric=metric, variant=v)
           for v in ("kendall", "kendall-c")},
        **{k: agreement.kappa_groups(human=human, metric=metric, weights=w)
           for k, w in (("kappa", None), ("kappa-linear", "linear"), ("qwk", "quadratic"))},
        **{k: agreement.alpha_groups(human=human, metric=metric, level=level)
           for k, level in (("krippendorff", "interval"), ("krippendorff-ratio", "ratio"),
                            ("krippendorff-ordinal", "ordinal"),
                            ("krippendorff-nominal", "nominal"))},
        "mae": deviation.mae_groups(human=human, metric=metric),
        "rmse": deviation.rmse_groups(human=human, metric=metric),
        "bias": deviation.bias_groups(human=human, metric=metric),
        "brier": reliability.brier_groups(human=human, metric=metric),
        "ece": reliability.ece_groups(human=human, metric=metric, binning="width"),
        "ece-mass": reliability.ece_groups(human=human, metric=metric, binning="mass"),
        "ckld": distribution.ckld_groups(human=human, metric=metric),
        "ckld-uniform": distribution.ckld_groups(human=human, metric=metric,
                                                 reference="uniform"),
        "wasserstein": distribution.wasserstein_groups(human=human, metric=metric),
        "wasserstein-real": distribution.wasserstein_real_groups(human=human, metric=metric),
    }
    kernels = [s.name for s in STATISTICS.values() if s.kernel == s.name and s.groups]
    assert sorted(kernels) == sorted(expected)
    for name in kernels:
        got = group_values(name, human=human, metric=metric, epsilon=0.25)
        np.testing.assert_array_equal(got, expected[name], err_msg=name)
    for spec in STATISTICS.values():
        if spec.groups is not None:
            assert spec.groups is get(spec.kernel).groups, spec.name
    assert get("pearson").p_value is correlation.pearson_p_value
    assert [s.name for s in STATISTICS.values() if s.scipy_p_value] == [
        "pearson", "spearman", "kendall"]
    for name in ("acc-eq", "pairwise-accuracy", "spa"):
        with pytest.raises(ValueError, match=f"{name} is not a kernel|{name} has no"):
            group_values(name, human=human, metric=metric)
    with pytest.raises(ValueError, match="mae takes no declared domain"):
        group_values("mae", human=human, metric=metric, domain=[0, 1])
    np.testing.assert_array_equal(  # a correlation has no domain to check: as before
        group_values("pearson", human=human, metric=metric, domain=[0, 1]),
        expected["pearson"])
    with pytest.raises(ValueError, match="needs its kernel function"):
        Statistic("acc-23-exact", "acc-23", "zero", ("system",), "d", "p")


# -- 8: ties are ties after arithmetic -----------------------------------------------------
def thirds(seed: int, items: int = 96, systems: int = 5):
    """Human scores in thirds where systems 0 and 1 have equal rational means but their
    float means, summed in item order, differ."""
    rng = np.random.default_rng(seed)
    k = rng.integers(3, 16, (items, systems))
    k[:, 1] = rng.permutation(k[:, 0])
    up = np.flatnonzero(k[:, 1] < 15)[0]
    down = next(i for i in np.flatnonzero(k[:, 1] > 3) if i != up)
    k[up, 1] += 1
    k[down, 1] -= 1
    metric = np.round(rng.normal(size=(items, systems)) + k / 3, 2)
    return k, k / 3, metric


def tied_thirds():
    for seed in range(100):
        k, human, metric = thirds(seed)
        sums = human.sum(axis=0)  # summed down the items, in their order
        if sums[0] != sums[1]:
            return k, human, metric
    raise AssertionError("no float rounding difference found")


def exact_means(k: np.ndarray, metric: np.ndarray) -> tuple[list[Fraction], list[Fraction]]:
    n = k.shape[0]
    h = [Fraction(int(k[:, s].sum()), 3 * n) for s in range(k.shape[1])]
    m = [sum((Fraction(float(x)) for x in metric[:, s]), Fraction(0)) / n
         for s in range(k.shape[1])]
    return h, m


def sign(x: Fraction) -> int:
    return (x > 0) - (x < 0)


def exact_kendall(h: list[Fraction], m: list[Fraction]) -> tuple[float, float]:
    """tau-b and pairwise accuracy (exact ties) over exact values."""
    con = dis = th = tm = right = pairs = 0
    for i, j in itertools.combinations(range(len(h)), 2):
        sh, sm = sign(h[i] - h[j]), sign(m[i] - m[j])
        pairs += 1
        right += sh == sm
        if sh == 0:
            th += 1
        if sm == 0:
            tm += 1
        if sh and sm:
            con += sh == sm
            dis += sh != sm
    return (con - dis) / np.sqrt((pairs - th) * (pairs - tm)), right / pairs


RANK = ("spearman", "kendall", "kendall-c", "kendall-23", "acc-23", "acc-eq",
        "pairwise-accuracy")


def test_system_means_equal_in_rationals_tie_in_every_rank_statistic():
    k, human, metric = tied_thirds()
    h, m = exact_means(k, metric)
    assert h[0] == h[1]
    tau, accuracy = exact_kendall(h, m)
    got = {s: evaluate(s, human=human, metric=metric, level="system").value for s in RANK}
    assert got["kendall"] == pytest.approx(tau, abs=1e-12)
    assert got["pairwise-accuracy"] == pytest.approx(accuracy, abs=1e-12)
    rounded_h, rounded_m = np.array([float(x) for x in h]), np.array([float(x) for x in m])
    assert got["spearman"] == pytest.approx(
        scipy.stats.spearmanr(rounded_h, rounded_m).statistic, abs=1e-12)
    assert got["kendall-c"] == pytest.approx(
        scipy.stats.kendalltau(rounded_h, rounded_m, variant="c").statistic, abs=1e-12)
    # The order of the rows changes nothing, bit for bit.
    rng = np.random.default_rng(0)
    for _ in range(20):
        order = rng.permutation(human.shape[0])
        for s in RANK:
            assert evaluate(s, human=human[order], metric=metric[order],
                            level="system").value == got[s], s


def tenths_sums(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """Sums of three ratings in tenths, added in a random order (floats), and the exact
    sums rounded once (the floats they should be)."""
    ratings = rng.permuted(rng.integers(1, 6, (*shape, 3)), axis=-1)
    floats = (ratings[..., 0] / 10 + ratings[..., 1] / 10) + ratings[..., 2] / 10
    return floats, ratings.sum(axis=-1) / 10


def test_segment_scores_equal_up_to_rounding_tie():
    rng = np.random.default_rng(4)
    human, human_exact = tenths_sums(rng, (20, 6))
    metric, metric_exact = tenths_sums(rng, (20, 6))
    assert (human != human_exact).any() and (metric != metric_exact).any()
    for name in ("spearman", "kendall"):
        got = evaluate(name, human=human, metric=metric).value
        assert got == pytest.approx(SCIPY[name](human_exact.ravel(), metric_exact.ravel()),
                                    abs=1e-12)
        per_item = np.nanmean([SCIPY[name](a, b) for a, b in
                               zip(human_exact, metric_exact, strict=True)])
        assert evaluate(name, human=human, metric=metric,
                        grouping="item").value == pytest.approx(per_item, abs=1e-12)
    # acc-eq's epsilon search sees the same ties: the exact values' smallest maximiser.
    eq = evaluate("acc-eq", human=human, metric=metric)
    want_eps, want_value = loop_acc_eq(human_exact.ravel(), metric_exact.ravel())
    assert eq.value == pytest.approx(want_value, abs=1e-12)
    assert eq.epsilon == pytest.approx(want_eps, rel=1e-9, abs=1e-300)


def loop_acc_eq(h: np.ndarray, m: np.ndarray) -> tuple[float, float]:
    pairs = list(itertools.combinations(range(h.size), 2))
    candidates = sorted({0.0} | {abs(m[i] - m[j]) for i, j in pairs})

    def acc(eps: float) -> float:
        return sum((h[i] == h[j] and abs(m[i] - m[j]) <= eps)
                   or (h[i] != h[j] and abs(m[i] - m[j]) > eps
                       and (h[i] > h[j]) == (m[i] > m[j])) for i, j in pairs) / len(pairs)

    values = [acc(e) for e in candidates]
    best = max(values)
    k = values.index(best)
    return candidates[k], best


@fast
@given(arrays(np.int64, st.tuples(st.integers(1, 12), st.integers(2, 6)),
              elements=st.integers(3, 15)),
       st.randoms(use_true_random=False), st.sampled_from((*RANK, "pearson")))
def test_system_level_statistics_do_not_depend_on_row_order(k, rand, name):
    human = k / 3
    human[0, 0] = np.nan
    metric = (k % 4) / 7 + k / 3
    order = list(range(k.shape[0]))
    rand.shuffle(order)
    one = evaluate(name, human=human, metric=metric, level="system").value
    two = evaluate(name, human=human[order], metric=metric[order], level="system").value
    assert one == two or (np.isnan(one) and np.isnan(two))


@fast
@given(arrays(float, st.integers(0, 30), elements=st.integers(-4, 4).map(float)),
       st.randoms(use_true_random=False), st.sampled_from([1e-300, 1e-5, 1.0, 1e300]))
def test_snap_joins_rounding_noise_only_and_ignores_order(base, rand, scale):
    noisy = base * scale * (1 + np.linspace(0, 4e-16, base.size))
    snapped = meta_eval.snap(noisy)
    # Equal bases are one value again; different bases stay apart.
    for i, j in itertools.combinations(range(base.size), 2):
        assert (snapped[i] == snapped[j]) == (base[i] == base[j])
    assert set(snapped.tolist()) <= set(noisy.tolist())
    order = list(range(base.size))
    rand.shuffle(order)
    assert np.array_equal(meta_eval.snap(noisy[order]), snapped[order])
    assert np.array_equal(meta_eval.snap(snapped), snapped)


# -- 9: numerically robust correlations ----------------------------------------------------
@st.composite
def magnitudes(draw):
    items = draw(st.integers(1, 5))
    systems = draw(st.integers(2, 6))
    shape = (items, systems)
    out = []
    for _ in range(2):
        base = draw(arrays(float, shape, elements=st.integers(-5, 5).map(float)))
        low = draw(st.integers(-300, 300))
        high = min(300, low + draw(st.sampled_from([0, 3, 200])))
        exponent = draw(arrays(np.int64, shape, elements=st.integers(low, high)))
        values = base * 10.0 ** exponent.astype(float)
        holes = draw(arrays(bool, shape))
        out.append(np.where(holes & (np.arange(systems) == systems - 1), np.nan, values))
    if draw(st.booleans()):
        out[0][0] = out[0][0, 0] if np.isfinite(out[0][0, 0]) else 7.0  # a constant item
    return out


def scipy_groups(name: str, human: np.ndarray, metric: np.ndarray) -> list[float]:
    out = []
    for h, m in zip(human, metric, strict=True):
        ok = np.isfinite(h) & np.isfinite(m)
        h, m = h[ok], m[ok]
        if h.size < 2 or np.all(h == h[0]) or np.all(m == m[0]):
            out.append(np.nan)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(float(SCIPY[name](h, m)))
    return out


@settings(max_examples=150, deadline=None)
@given(magnitudes(), st.sampled_from(list(SCIPY)), st.sampled_from(["none", "item", "system"]))
def test_correlations_match_scipy_from_1e_minus_300_to_1e300(data, name, grouping):
    human, metric = data
    h, m = {"none": (human.reshape(1, -1), metric.reshape(1, -1)),
            "item": (human, metric), "system": (human.T, metric.T)}[grouping]
    want = scipy_groups(name, h, m)
    got = evaluate(name, human=human, metric=metric, grouping=grouping)
    defined = [w for w in want if np.isfinite(w)]
    assert got.skipped == len(want) - len(defined)
    if grouping != "none":
        assert got.n == len(defined)
    if not defined:
        assert np.isnan(got.value)
        return
    assert got.value == pytest.approx(np.mean(defined), abs=1e-9), (want, got)


def test_huge_values_do_not_overflow():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = x + rng.normal(size=50)
    y[0] = 1e308
    y[1] = -1.7e308  # the difference of the two overflows
    down = np.ldexp(y, -1000)  # exact: scipy works on these
    got = evaluate("pearson", human=x[None], metric=y[None]).value
    assert got == pytest.approx(scipy.stats.pearsonr(x, down).statistic, abs=1e-12)
    assert got != 0
    for name in ("spearman", "kendall"):
        assert evaluate(name, human=x[None], metric=y[None]).value == pytest.approx(
            SCIPY[name](x, y), abs=1e-12)
    concordant = np.mean([(x[i] > x[j]) == (y[i] > y[j])
                          for i, j in itertools.combinations(range(50), 2)])
    assert evaluate("acc-23", human=x[None], metric=y[None]).value == pytest.approx(
        concordant, abs=1e-12)
    assert evaluate("acc-eq", human=x[None], metric=y[None]).value >= concordant


def test_system_means_of_huge_values():
    rng = np.random.default_rng(1)
    human = rng.normal(size=(10, 6))
    metric = rng.uniform(0.5, 1.7, size=(10, 6)) * 1e308
    exact = [float(sum((Fraction(float(v)) for v in metric[:, s]), Fraction(0)) / 10)
             for s in range(6)]
    got = evaluate("pearson", human=human, metric=metric, level="system").value
    want = scipy.stats.pearsonr(human.mean(axis=0), np.ldexp(np.array(exact), -1000))
    assert got == pytest.approx(want.statistic, abs=1e-12)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
def test_williams_does_not_depend_on_the_scale(scale):
    human, a, b = system_data(2, items=20)
    want = williams(human=human, metric_a=a, metric_b=b)
    got = williams(human=human, metric_a=a * scale, metric_b=b * scale)
    assert got.value_a == pytest.approx(scipy.stats.pearsonr(human.ravel(),
                                                             a.ravel()).statistic, abs=1e-12)
    assert got.value_a == pytest.approx(want.value_a, abs=1e-12)
    assert got.p_value == pytest.approx(want.p_value, abs=1e-9)


@pytest.mark.parametrize("offset,scale", [(1e8, 1.0), (0.0, 1e-300), (1e3, 1e300)])
def test_pearson_swaps_are_exact_for_far_offsets_and_magnitudes(offset, scale):
    from meta_eval.significance import _PearsonSwaps, random_swaps

    rng = np.random.default_rng(5)
    items, systems = 12, 6
    human = rng.normal(size=(items, systems))
    human[3] = 2.0  # a constant item
    a = (rng.normal(size=(items, 1)) * offset + human + rng.normal(size=human.shape)) * scale
    b = (rng.normal(size=(items, 1)) * offset + human + 2 * rng.normal(size=human.shape)) * scale
    a[0, 1] = np.nan
    b[0, 1] = np.nan
    human[0, 1] = np.nan
    fast_path = _PearsonSwaps(human, a, b, True)  # item grouping: items are the groups
    swaps = random_swaps(rng, (8, items, systems))
    got_a, got_b = fast_path(swaps)
    for s, ga, gb in zip(swaps, got_a, got_b, strict=True):
        for hybrid, got in ((np.where(s, b, a), ga), (np.where(s, a, b), gb)):
            want = np.nanmean(scipy_groups("pearson", human, hybrid))
            assert got == pytest.approx(want, abs=1e-9)


# -- 10: early stopping follows alpha ------------------------------------------------------
def near_alpha(seed: int):
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(30, 8))
    human = quality + rng.normal(size=quality.shape) * 0.5
    a = quality + rng.normal(size=quality.shape)
    b = quality + rng.normal(size=quality.shape) * 1.4
    return human, {"a": a, "b": b}


@pytest.mark.parametrize("seed", [5, 6, 26, 28, 32, 55])
def test_early_stopping_decides_as_the_full_test_does(seed):
    # True p near 0.01: stopping at fixed thresholds (p < 0.02) decided these against
    # the full 1,000 resamples at alpha 0.01.
    human, metrics = near_alpha(seed)
    common: dict[str, Any] = {"grouping": "item", "alpha": 0.01, "resamples": 1000, "seed": 0}
    early = significance_clusters("pearson", human=human, metrics=metrics, **common)
    full = significance_clusters("pearson", human=human, metrics=metrics, early_stop=False,
                                 **common)
    (p_early,), (p_full,) = early.p_values.values(), full.p_values.values()
    assert (p_early <= 0.01) == (p_full <= 0.01), (p_early, p_full)
    assert [m.cluster for m in early.metrics] == [m.cluster for m in full.metrics]


def test_an_early_stopped_p_value_is_marked():
    human, a, b = system_data(3)
    got = permutation_test("pearson", human=human, metric_a=a, metric_b=b, grouping="item",
                           resamples=1000, alpha=0.05)
    assert got.resamples < 1000 and got.p_value_early
    assert got.to_dict()["p_value_early"] is True
    full = permutation_test("pearson", human=human, metric_a=a, metric_b=b, grouping="item",
                            resamples=300, early_stop=False)
    assert full.resamples == 300
    assert not full.p_value_early and full.to_dict()["p_value_early"] is False
    ranking = significance_clusters("pearson", human=human, metrics={"a": a, "b": b},
                                    grouping="item", resamples=1000)
    assert ranking.tests[("a", "b")].p_value_early


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_the_stopping_rule_is_the_clopper_pearson_interval(alpha):
    from meta_eval.significance import early_decision

    for done in (50, 200, 1000):
        for hits in sorted({0, 1, 2, 5, done // 100, done // 20, done // 10, done // 2, done}):
            ci = scipy.stats.binomtest(hits, done).proportion_ci(0.99, method="exact")
            outside = ci.high < alpha or ci.low > alpha
            assert early_decision(hits, done, alpha) == outside, (hits, done)


# -- 11: keyword-only gold and metric ------------------------------------------------------
GOLD_OR_METRIC = {"human", "metric", "metric_a", "metric_b", "metrics", "raters", "ratings",
                  "verdict_ab", "verdict_ba"}


def public_functions():
    for info in pkgutil.iter_modules(meta_eval.__path__):
        if info.name == "aggregation":
            continue
        module = importlib.import_module(f"meta_eval.{info.name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{info.name}.{name}", obj
            elif inspect.isclass(obj) and not dataclasses.is_dataclass(obj):
                for attr, method in vars(obj).items():
                    if inspect.isfunction(method) and (attr == "__init__"
                                                       or not attr.startswith("_")):
                        yield f"{info.name}.{name}.{attr}", method


def test_gold_and_metric_are_keyword_only_everywhere():
    # Every public function taking two or more score arrays (which could be swapped).
    checked, positional = 0, []
    for where, fn in public_functions():
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.name in GOLD_OR_METRIC]
        if len(params) >= 2:
            checked += 1
            positional += [f"{where}({p.name})" for p in params if p.kind != p.KEYWORD_ONLY]
    assert checked >= 20
    assert positional == []


def test_swapped_positional_pair_disagreements_is_refused():
    from meta_eval.significance import pair_disagreements

    h = np.array([[1.0, 2.0, 3.0]])
    a = np.array([[1.0, 3.0, 2.0]])
    b = np.array([[3.0, 2.0, 1.0]])
    with pytest.raises(TypeError):
        pair_disagreements(h, b, a, 0.0, 0.0)  # type: ignore[call-arg]
    from meta_eval.levels import arrange, system_means
    from meta_eval.statistics import group_values
    for call in (lambda: group_values("pearson", h, a),  # type: ignore[call-arg]
                 lambda: system_means(h, a),  # type: ignore[call-arg]
                 lambda: arrange(h, a, "segment", "none")):  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            call()


# -- exact system means on resamples and swaps (the fast paths agree with recomputing) -----
@pytest.mark.parametrize("name", ["pearson", "kendall", "pairwise-accuracy", "acc-eq"])
def test_system_level_bootstrap_equals_recomputing_on_resampled_items(name):
    human, a, _ = system_data(4, items=25, systems=7)
    human = np.round(human * 3) / 3  # thirds: many tied system means in resamples
    a[0, 0] = np.nan
    index = np.random.default_rng(2).integers(0, 25, size=(30, 25))
    eps = evaluate(name, human=human, metric=a, level="system").epsilon
    got = bootstrap_values(name, human=human, metric=a, level="system", grouping="none",
                           epsilon=eps, index=index)
    fixed = "acc-23" if name == "acc-eq" else name  # the CI keeps the full data's epsilon
    want = [evaluate(fixed, human=human[ix], metric=a[ix], level="system",
                     epsilon=eps or 0.0).value for ix in index]
    assert got == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("name", ["pearson", "spearman", "kendall", "pairwise-accuracy"])
def test_system_level_permutation_fast_path_equals_recomputing(name, monkeypatch):
    import meta_eval.significance

    human, a, b = system_data(5, items=20, systems=6)
    human = np.round(human * 3) / 3
    a[1, 2] = np.nan
    fast_path = permutation_test(name, human=human, metric_a=a, metric_b=b, level="system",
                                 resamples=300, seed=4, early_stop=False)
    monkeypatch.setattr(meta_eval.significance, "EXACT_ITEMS", 0)  # recompute each hybrid
    slow = permutation_test(name, human=human, metric_a=a, metric_b=b, level="system",
                            resamples=300, seed=4, early_stop=False)
    assert (fast_path.value_a, fast_path.value_b) == (slow.value_a, slow.value_b)
    assert fast_path.p_value == slow.p_value
