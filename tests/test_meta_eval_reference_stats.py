"""Statistics a user reproducing published work needs (issue 23, item 5), each checked
against its reference implementation on random data with ties, NaN and extreme magnitudes:

- Krippendorff's alpha at the ratio level and with a declared value domain: against the
  coincidence-matrix formula of Krippendorff (2011), written out here in exact rationals
  (`kripp_reference`), and against the `krippendorff` PyPI package where it is installed;
- Cohen's kappa with declared labels: scikit-learn's cohen_kappa_score(labels=...);
- pairwise-difference Pearson, micro-averaging and replace_nans_with_zeros: ports of
  mt-metrics-eval's stats.py (`AverageCorrelation.Corr` and `_enumerate_pairwise_diffs`,
  google-research/mt-metrics-eval; the package is not on PyPI), written here from its
  source over scipy's pearsonr, spearmanr and kendalltau;
- weighted tau: scipy.stats.weightedtau with its defaults.
"""

from __future__ import annotations

import itertools
import json
import math
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import run_cli
from sklearn.metrics import cohen_kappa_score

from meta_eval import evaluate, krippendorff_alpha
from meta_eval.agreement import categories, kappa_groups
from meta_eval.significance import significance_clusters

GROUPINGS = ("none", "item", "system")


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


# -- Krippendorff's alpha: the coincidence-matrix formula, exactly ------------------------
def kripp_reference(ratings: np.ndarray, level: str, domain=None) -> float:
    """Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", sections A-E:
    the coincidence matrix o_ck = sum_u (c-k pairs in unit u) / (m_u - 1), n_c its row sums,
    alpha = 1 - (n - 1) sum o_ck d_ck / sum n_c n_k d_ck, in exact rationals."""
    values = sorted({Fraction(v) for v in ratings[np.isfinite(ratings)]} |
                    {Fraction(v) for v in (domain or ())})
    o = {(c, k): Fraction(0) for c in values for k in values}
    for unit in ratings.T:
        coded = [Fraction(v) for v in unit if np.isfinite(v)]
        if len(coded) < 2:
            continue
        for i, j in itertools.permutations(range(len(coded)), 2):
            o[coded[i], coded[j]] += Fraction(1, len(coded) - 1)
    n_c = {c: sum(o[c, k] for k in values) for c in values}
    n = sum(n_c.values())

    def delta(c: Fraction, k: Fraction) -> Fraction:
        if level == "nominal":
            return Fraction(c != k)
        if level == "interval":
            return (c - k) ** 2
        if level == "ratio":
            return ((c - k) / (c + k)) ** 2 if c + k else Fraction(0)
        lo, hi = min(c, k), max(c, k)
        return Fraction(sum(n_c[g] for g in values if lo <= g <= hi) - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(o[c, k] * delta(c, k) for c in values for k in values)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in values for k in values)
    if expected == 0:
        return math.nan
    return float(1 - (n - 1) * observed / expected)


def ratio_ratings(seed: int, raters: int = 3, units: int = 25, scale: float = 1.0
                  ) -> np.ndarray:
    """Non-negative integer ratings 0..6 (ties, zeros) times `scale`, with NaN holes."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 7, units)
    data = np.clip(truth + rng.integers(-1, 2, (raters, units)), 0, 6).astype(float) * scale
    data[rng.random(data.shape) < 0.15] = np.nan
    return data


@pytest.mark.parametrize("scale", [1.0, 1e300, 1e-300, 0.37])
@pytest.mark.parametrize("seed", range(4))
def test_ratio_alpha_matches_the_coincidence_formula(seed: int, scale: float) -> None:
    data = ratio_ratings(seed, scale=scale)
    got = krippendorff_alpha(ratings=data, level="ratio").value
    assert close(got, kripp_reference(data, "ratio")), (got, seed, scale)


def test_ratio_alpha_mixed_magnitudes() -> None:
    rng = np.random.default_rng(7)
    data = rng.choice([0.0, 1e-300, 3e-300, 1.0, 2.5, 1e300, 1.7e308], size=(4, 30))
    data[rng.random(data.shape) < 0.1] = np.nan
    got = krippendorff_alpha(ratings=data, level="ratio").value
    assert close(got, kripp_reference(data, "ratio"))


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize("seed", range(3))
def test_declared_domain_counts_unobserved_values(level: str, seed: int) -> None:
    data = ratio_ratings(seed, units=20)
    domain = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]  # 7, 8 and 10 nobody used
    got = krippendorff_alpha(ratings=data, level=level, domain=domain).value
    assert close(got, kripp_reference(data, level, domain))
    assert close(got, krippendorff_alpha(ratings=data, level=level).value)


def test_values_outside_the_declared_domain_are_errors() -> None:
    data = np.array([[1.0, 2.0, 9.0], [1.0, 3.0, 2.0]])
    with pytest.raises(ValueError, match=r"rating 9 is not in the declared values \(1, 2, 3"):
        krippendorff_alpha(ratings=data, level="ordinal", domain=[1, 2, 3, 4, 5])
    with pytest.raises(ValueError, match="value 9 is not in the declared values"):
        evaluate("krippendorff", human=data[:1], metric=data[1:], domain=[1, 2, 3])
    with pytest.raises(ValueError, match="ratio level needs values >= 0"):
        krippendorff_alpha(ratings=-data, level="ratio")
    with pytest.raises(ValueError, match="ratio level needs values >= 0"):
        evaluate("krippendorff-ratio", human=data, metric=-data)


def judge_against_people(seed: int, items: int = 12, systems: int = 5, scale: float = 1.0
                         ) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = rng.integers(0, 6, (items, systems))
    human = np.clip(quality + rng.integers(-1, 2, quality.shape), 0, 5).astype(float)
    metric = np.clip(quality + rng.integers(-2, 3, quality.shape), 0, 5).astype(float)
    human[rng.random(human.shape) < 0.1] = np.nan
    metric[rng.random(metric.shape) < 0.1] = np.nan
    return human * scale, metric * scale


def groups_of(x: np.ndarray, grouping: str) -> list[np.ndarray]:
    if grouping == "none":
        return [x.reshape(-1)]
    return list(x) if grouping == "item" else list(x.T)


@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("scale", [1.0, 1e300, 1e-300])
@pytest.mark.parametrize("seed", range(3))
def test_ratio_statistic_is_alpha_of_judge_and_human_as_two_coders(
        seed: int, scale: float, grouping: str) -> None:
    human, metric = judge_against_people(seed, scale=scale)
    refs = [kripp_reference(np.stack([h, m]), "ratio")
            for h, m in zip(groups_of(human, grouping), groups_of(metric, grouping),
                            strict=True)
            if (np.isfinite(h) & np.isfinite(m)).sum() >= 2]
    refs = [r for r in refs if not math.isnan(r)]
    result = evaluate("krippendorff-ratio", human=human, metric=metric, grouping=grouping)
    assert close(result.value, float(np.mean(refs)))


def test_ratio_statistic_on_long_groups() -> None:
    # More pooled values than the broadcasting path takes: the distinct-value path.
    rng = np.random.default_rng(3)
    human = rng.integers(0, 40, (1, 150)).astype(float)
    metric = np.clip(human + rng.integers(-3, 4, human.shape), 0, None)
    human[0, :5] = np.nan
    ok = np.isfinite(human[0])
    ref = kripp_reference(np.stack([human[0][ok], metric[0][ok]]), "ratio")
    assert close(evaluate("krippendorff-ratio", human=human, metric=metric).value, ref)


def test_against_the_krippendorff_package() -> None:
    """The PyPI package (in the `dev` extra; not a dependency of judgebench itself)."""
    import krippendorff
    for seed in range(4):
        data = ratio_ratings(seed, raters=4)
        domain = [float(v) for v in range(9)]
        for level in ("nominal", "ordinal", "interval", "ratio"):
            ours = krippendorff_alpha(ratings=data, level=level, domain=domain).value
            theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level,
                                        value_domain=domain)
            assert close(ours, float(theirs)), (seed, level)


# -- Cohen's kappa with declared labels: scikit-learn ---------------------------------------
LABELS = (-(10 ** 15), -3, 0, 1, 2, 7, 10 ** 15)  # uneven steps, huge magnitudes


def labelled(seed: int, items: int = 10, systems: int = 6) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    used = np.array(LABELS[1:], dtype=float)  # -10**15 is never used
    human = rng.choice(used, (items, systems))
    metric = np.where(rng.random(human.shape) < 0.6, human, rng.choice(used, human.shape))
    human[rng.random(human.shape) < 0.1] = np.nan
    metric[rng.random(metric.shape) < 0.1] = np.nan
    return human, metric


def sk_kappa(h: np.ndarray, m: np.ndarray, weights: str | None) -> float:
    ok = np.isfinite(h) & np.isfinite(m)
    if ok.sum() < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(h[ok].astype(np.int64), m[ok].astype(np.int64),
                                  labels=list(LABELS), weights=weights)
    return float(value) if np.isfinite(value) else math.nan


@pytest.mark.parametrize(("statistic", "weights"),
                         [("kappa", None), ("kappa-linear", "linear"), ("qwk", "quadratic")])
@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("seed", range(4))
def test_kappa_with_declared_labels_is_sklearns(statistic: str, weights: str | None,
                                                grouping: str, seed: int) -> None:
    human, metric = labelled(seed)
    refs = [sk_kappa(h, m, weights) for h, m in zip(groups_of(human, grouping),
                                                    groups_of(metric, grouping), strict=True)]
    refs = [r for r in refs if not math.isnan(r)]
    got = evaluate(statistic, human=human, metric=metric, grouping=grouping, domain=LABELS)
    assert close(got.value, float(np.mean(refs)) if refs else math.nan)


def test_kappa_labels_refuse_other_categories() -> None:
    human = np.array([[1.0, 2.0, 3.5]])
    with pytest.raises(ValueError, match="category 4 is not in the declared values"):
        kappa_groups(human=human, metric=np.array([[1.0, 2.0, 3.0]]), domain=[1, 2, 3])
    assert categories(np.array([3.5]))[0] == 4  # the human mean rounds half up first


# -- mt-metrics-eval: AverageCorrelation and pairwise-difference Pearson, ported -------------
def mtme_reshape(vector: list, num_sys: int, average_by: str) -> np.ndarray:
    if average_by == "none":
        return np.asarray(vector, dtype=object).reshape(1, -1)
    if average_by == "sys":
        return np.asarray(vector, dtype=object).reshape(num_sys, -1)
    return np.asarray(vector, dtype=object).reshape(num_sys, -1).transpose()


def mtme_pairwise_diffs(gold: np.ndarray, metric: np.ndarray) -> tuple[list, list]:
    g = np.array(gold, dtype=float)
    m = np.array(metric, dtype=float)
    dg = (g[:, np.newaxis, :] - g[:, :, np.newaxis]).reshape(g.shape[0], -1)
    dm = (m[:, np.newaxis, :] - m[:, :, np.newaxis]).reshape(m.shape[0], -1)
    dg_obj = dg.astype(object)
    dg_obj[np.isnan(dg)] = None
    return dg_obj.tolist(), dm.tolist()


def mtme_corr(corr_fcn, gold: list, metric: list, num_sys: int, average_by: str,
              macro: bool = True, replace_nans_with_zeros: bool = False,
              pdp: bool = False, **args) -> float:
    """mt-metrics-eval stats.AverageCorrelation.Corr (google-research/mt-metrics-eval)."""
    mat1 = mtme_reshape(gold, num_sys, average_by)
    mat2 = mtme_reshape(metric, num_sys, average_by)
    if pdp:
        d1, d2 = mtme_pairwise_diffs(mat1, mat2)
        mat1 = np.asarray(d1, dtype=object).reshape(1, -1)
        mat2 = np.asarray(d2, dtype=object).reshape(1, -1)
    tot, n, k = 0.0, 0, 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r1, r2 in zip(mat1, mat2, strict=True):
            filt = [(v1, v2) for v1, v2 in zip(r1, r2, strict=True) if v1 is not None]
            if not filt or len(filt) == 1:
                continue
            r1, r2 = zip(*filt, strict=True)
            a1, a2 = np.array(r1, dtype=float), np.array(r2, dtype=float)
            value = float(corr_fcn(a1, a2, **args)[0])
            if corr_fcn in (scipy.stats.pearsonr, scipy.stats.spearmanr) and (
                    np.all(a1 == a1[0]) or np.all(a2 == a2[0])):
                value = math.nan
            if not macro:
                k = len(r1)
            if not math.isnan(value):
                tot += k * value
                n += k
            elif replace_nans_with_zeros:
                n += k
    return tot / n if n else 0.0


def mtme_vectors(human: np.ndarray, metric: np.ndarray) -> tuple[list, list]:
    """(items, systems) -> mt-metrics-eval's system-major vectors, None for missing gold."""
    gold = [None if math.isnan(v) else float(v) for v in human.T.reshape(-1)]
    return gold, [float(v) for v in metric.T.reshape(-1)]


AVERAGE_BY = {"none": "none", "item": "item", "system": "sys"}


def gold_with_holes(seed: int, items: int = 9, systems: int = 5, scale: float = 1.0
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Integer human scores (ties) with NaN holes and one constant item (an undefined
    group), a complete metric with ties; both times `scale`."""
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, (items, systems)).astype(float)
    metric = np.round(human + rng.normal(0, 1.5, human.shape), 1)
    human[0] = 3.0
    human[1, 1:] = np.nan  # one unit left: skipped, even with replace_nans_with_zeros
    human[rng.random(human.shape) < 0.1] = np.nan
    return human * scale, metric / scale


def ours_or_zero(value: float) -> float:
    """mt-metrics-eval returns 0 where no group is defined; meta_eval returns NaN."""
    return 0.0 if math.isnan(value) else value


@pytest.mark.parametrize("scale", [1.0, 1e150])
@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("seed", range(4))
def test_pdp_is_mt_metrics_evals(seed: int, grouping: str, scale: float) -> None:
    human, metric = gold_with_holes(seed, scale=scale)
    gold, vector = mtme_vectors(human, metric)
    ref = mtme_corr(scipy.stats.pearsonr, gold, vector, human.shape[1], AVERAGE_BY[grouping],
                    pdp=True)
    got = evaluate("pdp", human=human, metric=metric, grouping=grouping).value
    assert close(got, ref, 1e-9), (got, ref)


def test_pdp_is_scale_free_at_the_extremes() -> None:
    human, metric = gold_with_holes(5)
    base = evaluate("pdp", human=human, metric=metric, grouping="item").value
    for h, m in ((human * 1e300, metric), (human * 1e-300, metric * 1e300)):
        assert close(evaluate("pdp", human=h, metric=m, grouping="item").value, base)


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("average", ["macro", "micro"])
@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize(("statistic", "corr_fcn"),
                         [("pearson", scipy.stats.pearsonr),
                          ("spearman", scipy.stats.spearmanr),
                          ("kendall", scipy.stats.kendalltau)])
@pytest.mark.parametrize("seed", range(3))
def test_averaging_is_mt_metrics_evals(seed: int, statistic: str, corr_fcn, grouping: str,
                                       average: str, replace: bool) -> None:
    human, metric = gold_with_holes(seed, scale=1e100 if statistic == "pearson" else 1.0)
    gold, vector = mtme_vectors(human, metric)
    ref = mtme_corr(corr_fcn, gold, vector, human.shape[1], AVERAGE_BY[grouping],
                    macro=average == "macro", replace_nans_with_zeros=replace)
    got = evaluate(statistic, human=human, metric=metric, grouping=grouping, average=average,
                   replace_nans_with_zeros=replace).value
    assert close(ours_or_zero(got), ref, 1e-9), (got, ref)


def test_replace_nans_with_zeros_without_grouping() -> None:
    human = np.array([[3.0, 3.0, 3.0, 3.0]])
    metric = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert math.isnan(evaluate("pearson", human=human, metric=metric).value)
    gold, vector = mtme_vectors(human, metric)
    ref = mtme_corr(scipy.stats.pearsonr, gold, vector, 4, "none", replace_nans_with_zeros=True)
    assert evaluate("pearson", human=human, metric=metric,
                    replace_nans_with_zeros=True).value == ref == 0.0


def test_averaging_options_reach_bootstrap_and_permutation_test() -> None:
    human, metric = gold_with_holes(2)
    other = metric[::-1].copy()
    for options in ({"average": "micro"}, {"replace_nans_with_zeros": True}, {}):
        result = evaluate("pearson", human=human, metric=metric, grouping="system",
                          bootstrap=200, **options)
        assert result.ci_low is not None and result.ci_high is not None
        assert result.ci_low <= result.value <= result.ci_high
        ranking = significance_clusters("pearson", human=human,
                                        metrics={"a": metric, "b": other},
                                        grouping="system", resamples=100, **options)
        values = {r.metric: r.value for r in ranking.metrics}
        assert close(values["a"], result.value)
    with pytest.raises(ValueError, match="pdp pools"):
        evaluate("pdp", human=human, metric=metric, grouping="item", average="micro")
    with pytest.raises(ValueError, match="acc-eq averages on its own"):
        evaluate("acc-eq", human=human, metric=metric, grouping="item", average="micro")


# -- weighted tau: scipy.stats.weightedtau ------------------------------------------------------
def wild(seed: int, items: int = 8, systems: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Ties, NaN on both sides, values from 1e-300 to 1e300 of both signs, a constant item."""
    rng = np.random.default_rng(seed)
    pool = np.array([-1e300, -2.5, -1e-300, 0.0, 1e-300, 1.0, 1.0, 2.0, 7.5, 1e300])
    human = rng.choice(pool, (items, systems))
    metric = np.where(rng.random(human.shape) < 0.5, human, rng.choice(pool, human.shape))
    human[0] = 2.0
    human[rng.random(human.shape) < 0.1] = np.nan
    metric[rng.random(metric.shape) < 0.1] = np.nan
    return human, metric


def sp_weightedtau(h: np.ndarray, m: np.ndarray) -> float:
    ok = np.isfinite(h) & np.isfinite(m)
    if ok.sum() < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(scipy.stats.weightedtau(h[ok], m[ok]).statistic)


@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("seed", range(5))
def test_weighted_tau_is_scipys(seed: int, grouping: str) -> None:
    human, metric = wild(seed)
    refs = [sp_weightedtau(h, m) for h, m in zip(groups_of(human, grouping),
                                                  groups_of(metric, grouping), strict=True)]
    refs = [r for r in refs if not math.isnan(r)]
    got = evaluate("weighted-tau", human=human, metric=metric, grouping=grouping)
    assert close(got.value, float(np.mean(refs)) if refs else math.nan, 1e-12)


def test_weighted_tau_at_system_level() -> None:
    rng = np.random.default_rng(11)
    human = rng.integers(1, 6, (30, 7)).astype(float)
    metric = human + rng.normal(0, 2, human.shape)
    got = evaluate("weighted-tau", human=human, metric=metric, level="system").value
    ref = scipy.stats.weightedtau(human.mean(axis=0), metric.mean(axis=0)).statistic
    assert close(got, float(ref), 1e-12)


# -- the command --------------------------------------------------------------------------------
def write_table(path: Path, human: np.ndarray, metric: np.ndarray) -> Path:
    rows = [{"item": f"i{i}", "system": f"s{s}", "human.q": human[i, s],
             "judge.q": metric[i, s]}
            for i in range(human.shape[0]) for s in range(human.shape[1])]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def cli_json(*args: str) -> list[dict]:
    proc = run_cli("meta-eval", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_new_statistics_against_their_references(tmp_path: Path) -> None:
    human, metric = judge_against_people(4, items=10, systems=4)
    table = write_table(tmp_path / "scores.csv", human, metric)
    rows = cli_json(str(table), "--human", "human.q", "--metric", "judge.q",
                    "--grouping", "item", "--statistic", "krippendorff-ratio",
                    "--statistic", "pdp", "--statistic", "weighted-tau",
                    "--labels", "0..5", "--statistic", "krippendorff-ordinal")
    got = {r["statistic"]: r["value"] for r in rows}
    pairs = list(zip(list(human), list(metric), strict=True))
    ratio = [kripp_reference(np.stack([h, m]), "ratio") for h, m in pairs
             if (np.isfinite(h) & np.isfinite(m)).sum() >= 2]
    assert close(got["krippendorff-ratio"], float(np.nanmean(ratio)))
    ordinal = [kripp_reference(np.stack([h, m]), "ordinal", range(6)) for h, m in pairs
               if (np.isfinite(h) & np.isfinite(m)).sum() >= 2]
    assert close(got["krippendorff-ordinal"], float(np.nanmean(ordinal)))
    weighted = [sp_weightedtau(h, m) for h, m in pairs]
    assert close(got["weighted-tau"], float(np.nanmean(weighted)))
    ok = np.isfinite(metric)
    masked = np.where(ok, human, np.nan)  # the table drops a unit the judge missed
    gold, vector = mtme_vectors(masked, np.where(ok, metric, 0.0))
    assert close(got["pdp"], mtme_corr(scipy.stats.pearsonr, gold, vector, 4, "item",
                                       pdp=True))


def test_cli_micro_average_and_zeros(tmp_path: Path) -> None:
    human, metric = gold_with_holes(1)
    table = write_table(tmp_path / "scores.csv", human, metric)
    gold, vector = mtme_vectors(human, metric)
    for flags, macro, replace in (([], True, False), (["--average", "micro"], False, False),
                                  (["--replace-nans-with-zeros"], True, True),
                                  (["--average", "micro", "--replace-nans-with-zeros"], False,
                                   True)):
        rows = cli_json(str(table), "--human", "human.q", "--metric", "judge.q",
                        "--grouping", "system", "--statistic", "spearman", *flags)
        ref = mtme_corr(scipy.stats.spearmanr, gold, vector, human.shape[1], "sys",
                        macro=macro, replace_nans_with_zeros=replace)
        assert close(rows[0]["value"], ref), flags


def test_cli_compare_and_bootstrap_take_the_new_statistics(tmp_path: Path) -> None:
    human, metric = judge_against_people(2, items=10, systems=4)
    frame = pd.read_csv(write_table(tmp_path / "s.csv", human, metric))
    frame["judge.r"] = frame["judge.q"].iloc[::-1].to_numpy()
    frame.to_csv(tmp_path / "s.csv", index=False)
    rows = cli_json(str(tmp_path / "s.csv"), "--human", "human.q", "--grouping", "item",
                    "--statistic", "pdp", "--statistic", "weighted-tau", "--statistic",
                    "krippendorff-ratio", "--compare", "--resamples", "50", "--bootstrap",
                    "50", "--replace-nans-with-zeros", "--statistic", "pearson")
    assert {r["statistic"] for r in rows} == {"pdp", "weighted-tau", "krippendorff-ratio",
                                              "pearson"}
    assert all(r["cluster"] >= 1 and r["ci_low"] <= r["value"] <= r["ci_high"] for r in rows)


def test_cli_input_errors(tmp_path: Path) -> None:
    human, metric = judge_against_people(0, items=6, systems=3)
    metric[2, 1] = 9.0  # line 2 + 2 * 3 + 1 = 9
    table = write_table(tmp_path / "scores.csv", human, metric)
    proc = run_cli("meta-eval", str(table), "--human", "human.q", "--metric", "judge.q",
                   "--statistic", "qwk", "--labels", "0,1,2,3,4,5")
    assert proc.returncode == 2
    assert "scores.csv" in proc.stderr and "line 9" in proc.stderr
    assert "judge.q" in proc.stderr and "9.0 is not one of --labels 0, 1, 2, 3, 4, 5" in (
        proc.stderr)
    assert proc.stderr.count("\n") <= 2

    metric[2, 1] = -1.0
    table = write_table(tmp_path / "scores.csv", human, metric)
    proc = run_cli("meta-eval", str(table), "--human", "human.q", "--metric", "judge.q",
                   "--statistic", "krippendorff-ratio")
    assert proc.returncode == 2 and "line 9" in proc.stderr and ">= 0" in proc.stderr

    for args, needle in ((["--statistic", "pearson", "--labels", "1..5"], "--labels"),
                         (["--statistic", "qwk", "--labels", "a,b"], "--labels"),
                         (["--statistic", "pdp", "--grouping", "item", "--average", "micro"],
                          "pdp pools"),
                         (["--statistic", "acc-23", "--compare", "--average", "micro"],
                          "--compare")):
        proc = run_cli("meta-eval", str(table), "--human", "human.q", *args)
        assert proc.returncode == 2, (args, proc.stderr)
        assert needle in proc.stderr, (args, proc.stderr)


# -- several human coders: --rater columns as coders of Krippendorff's alpha ----------------
def panel(seed: int, raters: int = 3, items: int = 8, systems: int = 4
          ) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 6, (items, systems))
    coders = [np.clip(quality + rng.integers(-1, 2, quality.shape), 1, 5).astype(float)
              for _ in range(raters)]
    for c in coders:
        c[rng.random(c.shape) < 0.15] = np.nan
    judge = np.clip(quality + rng.integers(-2, 3, quality.shape), 1, 5).astype(float)
    return coders, judge


def reference_panel_alpha(coders: list[np.ndarray], level: str, grouping: str) -> float:
    values = []
    for group in zip(*(groups_of(c, grouping) for c in coders), strict=True):
        ratings = np.stack(group)
        if ((np.isfinite(ratings).sum(axis=0) >= 2).sum()) >= 2:
            value = kripp_reference(ratings, level)
            if not math.isnan(value):
                values.append(value)
    return float(np.mean(values)) if values else math.nan


@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize(("statistic", "level"),
                         [("krippendorff", "interval"), ("krippendorff-ratio", "ratio"),
                          ("krippendorff-ordinal", "ordinal"),
                          ("krippendorff-nominal", "nominal")])
@pytest.mark.parametrize("seed", range(2))
def test_raters_as_coders(seed: int, statistic: str, level: str, grouping: str) -> None:
    from meta_eval import human_ceiling

    coders, judge = panel(seed)
    ceiling = human_ceiling(statistic, raters=coders, metric=judge, grouping=grouping)
    assert close(ceiling.value, reference_panel_alpha(coders, level, grouping))
    for r in range(3):
        others = coders[:r] + coders[r + 1:]
        assert close(ceiling.per_rater[r], reference_panel_alpha(others, level, grouping))
    stand_ins = [reference_panel_alpha([*coders[:r], judge, *coders[r + 1:]], level, grouping)
                 for r in range(3)]
    assert ceiling.metric_value is not None and ceiling.fraction is not None
    assert close(ceiling.metric_value, float(np.nanmean(stand_ins)))
    assert close(ceiling.fraction, float(np.nanmean(stand_ins)) / ceiling.value)


def test_two_coders_agree_with_the_statistic() -> None:
    from meta_eval.ceiling import coder_alpha

    coders, judge = panel(3)
    for statistic in ("krippendorff", "krippendorff-ratio", "krippendorff-ordinal"):
        for grouping in GROUPINGS:
            two = coder_alpha(statistic, coders=[coders[0], judge], grouping=grouping)
            one = evaluate(statistic, human=coders[0], metric=judge, grouping=grouping).value
            assert close(two, one), (statistic, grouping)


def test_cli_raters_as_coders(tmp_path: Path) -> None:
    coders, judge = panel(5, items=10)
    table = write_table(tmp_path / "scores.csv", coders[0], judge)
    frame = pd.read_csv(table)
    for r, c in enumerate(coders):
        frame[f"human.r{r}"] = c.reshape(-1)
    frame.to_csv(table, index=False)
    rows = cli_json(str(table), "--human", "human.q", "--metric", "judge.q", "--statistic",
                    "krippendorff", "--rater", "human.r0", "--rater", "human.r1", "--rater",
                    "human.r2")
    ceiling = next(r for r in rows if r["metric"] == "(human ceiling)")
    assert ceiling["ceiling"] == "raters as coders"
    assert close(ceiling["value"], reference_panel_alpha(coders, "interval", "none"))
    metric = next(r for r in rows if r["metric"] == "judge.q")
    stand_ins = [reference_panel_alpha([*coders[:r], judge, *coders[r + 1:]], "interval",
                                       "none") for r in range(3)]
    assert close(metric["ceiling_fraction"], float(np.mean(stand_ins)) / ceiling["value"])


def test_replace_nans_with_zeros_reaches_given_system_scores() -> None:
    from meta_eval.corpus import evaluate_given

    human, _ = gold_with_holes(4)
    given = np.full(human.shape[1], 0.25)  # a constant corpus score: Pearson undefined
    means = [float(np.nanmean(column)) for column in human.T]
    ref = mtme_corr(scipy.stats.pearsonr, means, list(given), human.shape[1], "none",
                    replace_nans_with_zeros=True)
    assert math.isnan(evaluate_given("pearson", human=human, metric=given).value)
    assert evaluate_given("pearson", human=human, metric=given,
                          replace_nans_with_zeros=True).value == ref == 0.0


def test_audit_leaves_out_a_negative_sentinel_for_the_ratio_level(tmp_path: Path) -> None:
    human, metric = judge_against_people(6, items=10, systems=4)
    table = write_table(tmp_path / "scores.csv", human, metric)
    proc = run_cli("audit", str(table), "--human", "human.q", "--statistic",
                   "krippendorff-ratio", "--level", "segment", "--grouping", "none",
                   "--report", str(tmp_path / "audit.json"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "audit.json").read_text())
    assert "sentinel.random is not non-negative: left out of the krippendorff-ratio blocks" in (
        report["warnings"])
    rows = {r["metric"]: r["value"] for r in report["blocks"][0]["rows"]}
    assert "sentinel.random" not in rows
    ok = np.isfinite(human) & np.isfinite(metric)
    ref = kripp_reference(np.stack([human[ok], metric[ok]]), "ratio")
    assert close(rows["judge.q"], ref)
