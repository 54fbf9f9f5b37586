"""Agreement and error of a judge against people: kappa, weighted kappa, qwk, Krippendorff's
alpha, MAE, RMSE, bias (issue 15, part 1).

References are independent of meta_eval: scikit-learn's cohen_kappa_score,
mean_absolute_error and mean_squared_error, Krippendorff's (2011) published worked examples,
pandas group means, and exact rationals (fractions.Fraction) for extreme magnitudes.
"""

from __future__ import annotations

import json
import math
import warnings
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from conftest import SUMMEVAL, run_cli
from conftest import write_wide_table as write_table
from sklearn.metrics import cohen_kappa_score, mean_absolute_error, mean_squared_error

import meta_eval
from meta_eval import evaluate, significance_clusters
from meta_eval.agreement import alpha_groups, categories, confusion_table, krippendorff_alpha
from meta_eval.task import Task

WEIGHTS = {"kappa": None, "kappa-linear": "linear", "qwk": "quadratic"}


def sk_kappa(h: np.ndarray, m: np.ndarray, weights: str | None) -> float:
    """scikit-learn's kappa over the units where both are present, with the integer scale
    from the lowest to the highest value as labels; NaN where it is undefined (fewer than 2
    units, one category)."""
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = h[ok].astype(int), m[ok].astype(int)
    if h.size < 2:
        return math.nan
    labels = list(range(min(h.min(), m.min()), max(h.max(), m.max()) + 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(h, m, weights=weights, labels=labels)
    return float(value) if np.isfinite(value) else math.nan


def close(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def judge_data(seed: int, items: int = 20, systems: int = 6, holes: float = 0.1):
    """Integer judge scores on 1..5 against human means of three raters (k/3), with ties
    everywhere and NaN holes."""
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 6, (items, systems))
    raters = np.clip(quality[None] + rng.integers(-1, 2, (3, items, systems)), 1, 5)
    human = raters.sum(axis=0) / 3
    judge = np.clip(quality + rng.integers(-1, 2, (items, systems)), 1, 5).astype(float)
    judge[rng.random(judge.shape) < holes] = np.nan
    human[rng.random(human.shape) < holes / 2] = np.nan
    return human, judge


def half_up(x: float) -> float:
    """Independent rounding reference: exact decimal arithmetic, floor(x + 1/2)."""
    if math.isnan(x):
        return math.nan
    return float(math.floor(Fraction(x) + Fraction(1, 2)))


# -- the rounding rule ---------------------------------------------------------------------
def test_rounding_is_half_up_in_one_place():
    x = np.array([3.5, 2.5, -2.5, 3.667, 3.333, 4 + 2 / 3, 1.0, np.nan, 1e300, -0.5])
    got = categories(x)
    assert list(got[:7]) == [4, 3, -2, 4, 3, 5, 1]
    assert np.isnan(got[7]) and got[8] == 1e300 and got[9] == 0
    # means of raters computed in float that land a hair below a half still round up
    assert categories(np.array([(2 + 3) / 2, 0.1 * 3 + 2.2]))[0] == 3
    thirds = np.arange(3, 16) / 3
    assert list(categories(thirds)) == [half_up(v) for v in thirds]


# -- kappa family against scikit-learn -----------------------------------------------------
@pytest.mark.parametrize("name", list(WEIGHTS))
@pytest.mark.parametrize("seed", range(6))
def test_kappa_matches_sklearn_at_every_grouping(name, seed):
    human, judge = judge_data(seed)
    h_cat = np.vectorize(half_up)(human)
    weights = WEIGHTS[name]
    got = evaluate(name, human=human, metric=judge)
    assert close(got.value, sk_kappa(h_cat.ravel(), judge.ravel(), weights)), (got, name)
    ok = np.isfinite(human) & np.isfinite(judge)
    assert got.n == ok.sum()
    for grouping, axis in (("item", 0), ("system", 1)):
        per = [sk_kappa(np.take(h_cat, g, axis), np.take(judge, g, axis), weights)
               for g in range(human.shape[axis])]
        defined = [v for v in per if not math.isnan(v)]
        res = evaluate(name, human=human, metric=judge, grouping=grouping)
        assert close(res.value, float(np.mean(defined)))
        assert res.n == len(defined) and res.skipped == len(per) - len(defined)


@pytest.mark.parametrize("name", list(WEIGHTS))
def test_kappa_on_wide_sparse_scales_and_extreme_magnitudes(name):
    rng = np.random.default_rng(7)
    h = rng.integers(-40, 40, 300).astype(float)
    m = np.where(rng.random(300) < 0.5, h, rng.integers(-40, 40, 300)).astype(float)
    m[::17] = np.nan
    value = evaluate(name, human=h[None], metric=m[None]).value
    assert close(value, sk_kappa(h, m, WEIGHTS[name]), 1e-11)
    # kappa depends on score differences only through their ratios: scaling by a power of
    # two (exact) near 1e300 changes nothing and overflows nothing
    big = evaluate(name, human=h[None] * 2.0**950, metric=m[None] * 2.0**950).value
    assert close(big, value, 1e-11)
    # categories at +-1e300 (integers as floats): no overflow in differences or squares
    huge = evaluate(name, human=np.array([[-1e300, 1e300, 1e300, -1e300]]),
                    metric=np.array([[-1e300, 1e300, -1e300, -1e300]])).value
    assert close(huge, sk_kappa(np.array([-1.0, 1, 1, -1]), np.array([-1.0, 1, -1, -1]),
                                WEIGHTS[name]))


def test_kappa_is_undefined_for_one_category_and_one_unit():
    ones = np.ones((1, 5))
    assert np.isnan(evaluate("qwk", human=ones, metric=ones).value)
    assert np.isnan(evaluate("kappa", human=np.array([[1.0]]), metric=np.array([[2.0]])).value)


# -- Krippendorff's alpha ------------------------------------------------------------------
def test_krippendorff_two_coder_published_examples():
    # Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability", A: binary data, two
    # observers, no missing data (alpha = 0.095); B: nominal data, two observers (0.692).
    a = np.array([[0, 1, 0, 0, 0, 0, 0, 0, 1, 0.]])
    b = np.array([[1, 1, 1, 0, 0, 1, 0, 0, 0, 0.]])
    assert evaluate("krippendorff-nominal", human=a, metric=b).value == pytest.approx(
        0.095, abs=5e-4)
    code = {c: i for i, c in enumerate("abcde")}
    obs_a = np.array([[code[c] for c in "aabbdcccedda"]], dtype=float)
    obs_b = np.array([[code[c] for c in "babbbccceddd"]], dtype=float)
    assert evaluate("krippendorff-nominal", human=obs_a, metric=obs_b).value == pytest.approx(
        0.692, abs=5e-4)


def test_krippendorff_general_function_matches_the_four_observer_example():
    # The reference the two-coder kernel is checked against below: Krippendorff 2011, C.
    nan = np.nan
    data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                     [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]])
    for level, want in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)):
        assert krippendorff_alpha(ratings=data, level=level).value == pytest.approx(want,
                                                                                   abs=5e-4)


@pytest.mark.parametrize("seed", range(8))
def test_krippendorff_kernel_matches_the_coincidence_matrix(seed):
    human, judge = judge_data(seed, holes=0.2)
    rng = np.random.default_rng(seed)
    cont = human + rng.normal(size=human.shape) * 0.3  # interval alpha takes any values
    for name, level, h in (("krippendorff", "interval", cont),
                           ("krippendorff-ordinal", "ordinal", human),
                           ("krippendorff-nominal", "nominal", human)):
        got = evaluate(name, human=h, metric=judge)
        h_ref = h if level == "interval" else np.vectorize(half_up)(h)
        ok = np.isfinite(h_ref) & np.isfinite(judge)
        want = krippendorff_alpha(ratings=np.stack([h_ref[ok], judge[ok]]), level=level).value
        assert close(got.value, want), (name, got.value, want)
        per = [krippendorff_alpha(ratings=np.stack([h_ref[i][ok[i]], judge[i][ok[i]]]),
                                  level=level).value if ok[i].sum() >= 2 else math.nan
               for i in range(h.shape[0])]
        res = evaluate(name, human=h, metric=judge, grouping="item")
        assert close(res.value, float(np.nanmean(per)))


def test_interval_alpha_extreme_magnitudes():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(1, 50))
    m = h + rng.normal(size=(1, 50)) * 0.5
    base = float(alpha_groups(human=h, metric=m)[0])
    for scale in (2.0**-1000, 2.0**1000):
        assert close(float(alpha_groups(human=h * scale, metric=m * scale)[0]), base, 1e-12)


# -- MAE, RMSE, bias against scikit-learn --------------------------------------------------
def errors_ref(h: np.ndarray, m: np.ndarray) -> dict[str, float]:
    ok = np.isfinite(h) & np.isfinite(m)
    if not ok.any():
        return {"mae": math.nan, "rmse": math.nan, "bias": math.nan}
    return {"mae": mean_absolute_error(h[ok], m[ok]),
            "rmse": math.sqrt(mean_squared_error(h[ok], m[ok])),
            "bias": float(np.mean(m[ok] - h[ok]))}


@pytest.mark.parametrize("seed", range(6))
def test_errors_match_sklearn_at_every_level_and_grouping(seed):
    human, judge = judge_data(seed, holes=0.25)
    for name in ("mae", "rmse", "bias"):
        got = evaluate(name, human=human, metric=judge)
        assert close(got.value, errors_ref(human.ravel(), judge.ravel())[name], 1e-12)
        for grouping, axis in (("item", 0), ("system", 1)):
            per = [errors_ref(np.take(human, g, axis), np.take(judge, g, axis))[name]
                   for g in range(human.shape[axis])]
            res = evaluate(name, human=human, metric=judge, grouping=grouping)
            assert close(res.value, float(np.nanmean(per)), 1e-12)
        # system level: the error of the system means over the items both scored
        ok = np.isfinite(human) & np.isfinite(judge)
        frame = pd.DataFrame({"s": np.broadcast_to(np.arange(human.shape[1]), human.shape)[ok],
                              "h": human[ok], "m": judge[ok]})
        means = frame.groupby("s").mean()
        res = evaluate(name, human=human, metric=judge, level="system")
        assert close(res.value, errors_ref(means["h"].to_numpy(), means["m"].to_numpy())[name],
                     1e-12)


def exact_errors(h: np.ndarray, m: np.ndarray) -> dict[str, float]:
    getcontext().prec = 60
    d = [Fraction(float(b)) - Fraction(float(a)) for a, b in zip(h, m, strict=True)]
    n = len(d)
    ms = sum((x * x for x in d), Fraction(0)) / n
    rmse = (Decimal(ms.numerator) / Decimal(ms.denominator)).sqrt()
    return {"mae": float(sum((abs(x) for x in d), Fraction(0)) / n), "rmse": float(rmse),
            "bias": float(sum(d, Fraction(0)) / n)}


@pytest.mark.parametrize("seed", range(5))
def test_errors_from_1e_minus_300_to_1e300_without_overflow(seed):
    rng = np.random.default_rng(seed)
    exp = rng.uniform(-300, 300, 40)
    h = rng.choice([-1, 1], 40) * 10.0**exp
    m = h * rng.uniform(0.5, 1.5, 40) if seed % 2 else rng.choice([-1, 1], 40) * 10.0**exp[::-1]
    want = exact_errors(h, m)
    for name in ("mae", "rmse", "bias"):
        got = evaluate(name, human=h[None], metric=m[None]).value
        assert close(got, want[name], 1e-12), (name, got, want[name])
    # the case squaring would overflow (1e200^2 = inf) and the one it would underflow
    assert evaluate("rmse", human=np.zeros((1, 2)), metric=np.full((1, 2), 1e200)).value \
        == pytest.approx(1e200, rel=1e-15)
    assert evaluate("rmse", human=np.zeros((1, 2)), metric=np.array([[3e-200, 4e-200]])).value \
        == pytest.approx(math.sqrt(12.5) * 1e-200, rel=1e-14)
    assert evaluate("mae", human=np.array([[-1e308]]), metric=np.array([[1e307]])).value \
        == pytest.approx(1.1e308, rel=1e-15)


def test_bias_sign_says_who_is_more_lenient():
    human = np.full((4, 3), 3.0)
    assert evaluate("bias", human=human, metric=human + 0.5).value == 0.5
    assert evaluate("bias", human=human, metric=human - 1).value == -1.0


# -- direction: clusters, best first, the gate ---------------------------------------------
def scale_data(seed: int = 0, items: int = 40, systems: int = 6):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, (items, systems)).astype(float)
    good = np.clip(human + rng.integers(-1, 2, human.shape) * (rng.random(human.shape) < 0.3),
                   1, 5)
    bad = np.clip(human + rng.integers(-2, 3, human.shape), 1, 5)
    lenient = np.clip(human + 1, 1, 5)
    return human, good, bad, lenient


@pytest.mark.parametrize("name", ["mae", "rmse"])
def test_clusters_put_the_lower_error_first(name):
    human, good, bad, _ = scale_data()
    metrics = {"bad": bad, "good": good}
    ranking = significance_clusters(name, human=human, metrics=metrics, grouping="item",
                                    resamples=300, seed=1)
    first, second = ranking.metrics
    assert first.metric == "good" and first.value < second.value
    assert first.cluster == 1 and second.cluster == 2
    assert ranking.p_values[("good", "bad")] <= 0.05
    test = meta_eval.permutation_test(name, human=human, metric_a=bad, metric_b=good,
                                      grouping="item", resamples=300, seed=1)
    assert test.delta < 0 and test.p_value > 0.5  # "bad is better" is not supported
    result = Task(human="h", statistic=name, grouping="item").run(
        {"h": human, **metrics}, ["bad", "good"])
    assert [o.metric for o in result.best_first()] == ["good", "bad"]


def test_bias_ranks_closest_to_zero_first_and_the_gate_follows():
    from judgebench.auditing.gate import gate

    human, good, _, lenient = scale_data(2)
    harsh = np.clip(human - 2, 1, 5)
    ranking = significance_clusters("bias", human=human,
                                    metrics={"lenient": lenient, "harsh": harsh, "good": good},
                                    resamples=300, seed=0)
    assert [m.metric for m in ranking.metrics] == ["good", "lenient", "harsh"]
    assert ranking.metrics[0].cluster == 1 < ranking.metrics[1].cluster
    # the gate compares with the best-placed sentinel by the same direction
    mae = significance_clusters("mae", human=human,
                                metrics={"good": good, "s1": harsh, "s2": lenient},
                                resamples=300, seed=0)
    verdict = gate(mae, metrics=["good"], sentinels=["s1", "s2"])[0]
    assert verdict.passed and verdict.sentinel == "s2"  # lenient: MAE 1 < harsh's ~2


def test_on_scale_statistics_swap_raw_scores():
    # b = 2 a: identical after z-scoring, so a z-scored swap could not tell them apart;
    # on the human scale b is far worse and the test must say so.
    rng = np.random.default_rng(4)
    human = rng.normal(size=(30, 5))
    a = human + rng.normal(size=human.shape) * 0.1
    test = meta_eval.permutation_test("mae", human=human, metric_a=a, metric_b=2 * a,
                                      resamples=200, seed=0, early_stop=False)
    assert test.p_value < 0.01 and test.delta > 0
    reverse = meta_eval.permutation_test("mae", human=human, metric_a=2 * a, metric_b=a,
                                         resamples=200, seed=0, early_stop=False)
    assert reverse.p_value > 0.99


def test_categorical_statistics_have_no_system_level():
    for name in ("kappa", "kappa-linear", "qwk", "krippendorff", "krippendorff-ordinal",
                 "krippendorff-nominal"):
        with pytest.raises(ValueError, match="segment-level"):
            meta_eval.levels.check_options(name, "system", "none")
    for name in ("mae", "rmse", "bias"):
        meta_eval.levels.check_options(name, "system", "none")


def test_confusion_table_by_hand():
    table = confusion_table(human=np.array([1.0, 2.0, 3.667, 3.5, np.nan, 5]),
                            metric=np.array([1.0, 3, 4, 4, 2, np.nan]))
    assert table.metric_labels == table.human_labels == [1, 2, 3, 4]
    assert table.counts == [[1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 2]]
    assert table.n == 4


# -- the command ---------------------------------------------------------------------------
def test_cli_agreement_statistics_json(tmp_path):
    human, judge = judge_data(11, holes=0.0)
    rng = np.random.default_rng(0)
    other = np.clip(judge + rng.integers(-2, 3, judge.shape), 1, 5)
    path = write_table(tmp_path / "s.csv", human, {"judge": judge, "other": other})
    proc = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "qwk",
                   "--statistic", "mae", "--statistic", "kappa", "--grouping", "item",
                   "--bootstrap", "50", "--compare", "--resamples", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    by = {(r["statistic"], r["metric"]): r for r in rows}
    h_cat = np.vectorize(half_up)(human)
    per_item = [sk_kappa(h_cat[i], judge[i], "quadratic") for i in range(human.shape[0])]
    assert close(by[("qwk", "judge")]["value"], float(np.nanmean(per_item)))
    assert by[("qwk", "judge")]["ci_low"] <= by[("qwk", "judge")]["value"] \
        <= by[("qwk", "judge")]["ci_high"]
    confusion = by[("kappa", "judge")]["confusion"]
    assert sum(map(sum, confusion["counts"])) == human.size
    want = pd.crosstab(judge.ravel(), h_cat.ravel())
    for i, ml in enumerate(confusion["metric_labels"]):
        for j, hl in enumerate(confusion["human_labels"]):
            have = want.loc[ml, hl] if ml in want.index and hl in want.columns else 0
            assert confusion["counts"][i][j] == have
    assert "confusion" not in by[("mae", "judge")]
    mae_rows = [r for r in rows if r["statistic"] == "mae"]
    assert mae_rows[0]["value"] <= mae_rows[1]["value"]  # best (lowest) first
    assert mae_rows[0]["better"] == "lower" and mae_rows[0]["cluster"] == 1


def test_cli_lower_is_better_column_is_not_negated_for_errors(tmp_path):
    human, judge = judge_data(12, holes=0.0)
    path = write_table(tmp_path / "s.csv", human, {"judge": judge})
    proc = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "mae",
                   "--statistic", "pearson", "--lower-is-better", "judge", "--json")
    assert proc.returncode == 0, proc.stderr
    by = {r["statistic"]: r for r in json.loads(proc.stdout)}
    assert close(by["mae"]["value"], errors_ref(human.ravel(), judge.ravel())["mae"])
    assert by["mae"]["flipped"] is False and by["pearson"]["flipped"] is True


def test_cli_refuses_a_continuous_metric_for_kappa(tmp_path):
    human, judge = judge_data(13, holes=0.0)
    judge = judge.copy()
    judge[2, 1] = 3.42  # e.g. G-Eval's probability-weighted mean
    path = write_table(tmp_path / "s.csv", human, {"judge": judge})
    proc = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "qwk")
    assert proc.returncode == 2
    line = 2 + 2 * human.shape[1] + 1  # header, then rows in item-major order
    assert f"line {line}" in proc.stderr and "'judge'" in proc.stderr and "3.42" in proc.stderr
    system = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "kappa",
                     "--level", "system")
    assert system.returncode == 2 and "segment" in system.stderr


def test_summeval_qwk_and_mae_on_a_common_scale(tmp_path):
    # A scale-matched case on real data: the experts' coherence rating, rounded half up to
    # the 1-5 scale, as a "judge" of their relevance rating (both 1-5 means of 3 experts).
    # How far one criterion's score goes as a judge of another is the level a judge that
    # confuses the criteria would reach.
    records = [json.loads(line) for line in SUMMEVAL.read_text().splitlines()]
    frame = pd.DataFrame({"item": [r["item"] for r in records],
                          "system": [r["system"] for r in records],
                          "human.relevance": [r["human"]["relevance"] for r in records],
                          "judge.coherence": [half_up(r["human"]["coherence"])
                                              for r in records]})
    path = tmp_path / "summeval.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("meta-eval", str(path), "--human", "human.relevance", "--statistic", "qwk",
                   "--statistic", "mae", "--level", "segment", "--grouping", "item", "--json")
    assert proc.returncode == 0, proc.stderr
    by = {r["statistic"]: r for r in json.loads(proc.stdout)}
    h = np.vectorize(half_up)(frame["human.relevance"].to_numpy())
    qwk, mae = [], []
    for item in frame["item"].unique():
        rows = (frame["item"] == item).to_numpy()
        qwk.append(sk_kappa(h[rows], frame["judge.coherence"].to_numpy()[rows], "quadratic"))
        mae.append(mean_absolute_error(frame["human.relevance"][rows],
                                       frame["judge.coherence"][rows]))
    assert close(by["qwk"]["value"], float(np.nanmean(qwk)))
    assert close(by["mae"]["value"], float(np.mean(mae)))
    assert by["qwk"]["n"] + by["qwk"].get("skipped", 0) == 100
    assert 0.0 < by["qwk"]["value"] < 1.0 and 0.0 < by["mae"]["value"] < 2.0


def test_cli_text_shows_the_confusion_table(tmp_path):
    human = np.array([[1.0, 2.0, 3.667], [3.5, 2.4, 1.2]])
    judge = np.array([[1.0, 3.0, 4.0], [4.0, 2.0, 1.0]])
    path = write_table(tmp_path / "s.csv", human, {"judge": judge})
    proc = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "kappa")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("  confusion of judge")))
    assert lines[start + 1].split() == ["1", "2", "3", "4"]
    # judge 1: human 1 (twice: 1.0 and 1.2); judge 2: human 2 (2.4); judge 3: human 2 (2.0);
    # judge 4: human 4 (3.667 and 3.5, both rounded up)
    assert [r.split() for r in lines[start + 2:start + 6]] == [
        ["1", "2", "0", "0", "0"], ["2", "0", "1", "0", "0"], ["3", "0", "1", "0", "0"],
        ["4", "0", "0", "0", "2"]]
