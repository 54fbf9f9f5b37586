"""Kappa, Krippendorff's alpha, the human ceiling and pairwise-judge agreement."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from meta_eval import cohen_kappa, human_ceiling, krippendorff_alpha, pairwise_agreement


def test_cohen_kappa_textbook():
    # 50 items: 20 both yes, 5 yes/no, 10 no/yes, 15 both no -> p_o 0.7, p_e 0.5, kappa 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    got = cohen_kappa(human=a, metric=b)
    assert got.value == pytest.approx(0.4) and got.n == 50


def test_weighted_kappa_by_hand():
    # Joint counts over categories 0,1,2: rows 1/3 each, columns 1/6, 2/6, 3/6.
    a = [0, 0, 1, 1, 2, 2]
    b = [0, 1, 1, 2, 2, 2]
    assert cohen_kappa(human=a, metric=b).value == pytest.approx(0.5)
    assert cohen_kappa(human=a, metric=b, weights="linear").value == pytest.approx(0.625)
    assert cohen_kappa(human=a, metric=b, weights="quadratic").value == pytest.approx(0.75)


def test_kappa_drops_missing_and_is_undefined_for_one_category():
    got = cohen_kappa(human=[1, 2, np.nan, 2], metric=[1, 2, 2, np.nan])
    assert got.n == 2 and got.value == pytest.approx(1.0)
    assert np.isnan(cohen_kappa(human=[1, 1, 1], metric=[1, 1, 1]).value)
    with pytest.raises(ValueError):
        cohen_kappa(human=[1, 2], metric=[1, 2], weights="cubic")


def test_krippendorff_alpha_published_example():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 coders, 12 units.
    nan = np.nan
    data = np.array([
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ])
    assert krippendorff_alpha(ratings=data, level="nominal").value == pytest.approx(0.743,
                                                                                   abs=5e-4)
    assert krippendorff_alpha(ratings=data, level="ordinal").value == pytest.approx(0.815,
                                                                                   abs=5e-4)
    assert krippendorff_alpha(ratings=data, level="interval").value == pytest.approx(0.849,
                                                                                    abs=5e-4)
    # Unit 12 has one value: not pairable. 40 values remain.
    assert krippendorff_alpha(ratings=data).n == 40


def test_krippendorff_alpha_extremes():
    assert krippendorff_alpha(ratings=[[1, 2, 1, 2], [1, 2, 1, 2]],
                              level="nominal").value == 1.0
    # Every unit holds one 1 and one 2: o_12 = o_21 = 4, n_1 = n_2 = 4, n = 8,
    # alpha = 1 - 7 * 8 / 32.
    assert krippendorff_alpha(ratings=[[1, 2, 1, 2], [2, 1, 2, 1]],
                              level="nominal").value == pytest.approx(-0.75)


def test_human_ceiling_with_two_raters_is_their_correlation():
    rng = np.random.default_rng(0)
    quality = rng.normal(size=(20, 6))
    r1 = quality + rng.normal(size=quality.shape)
    r2 = quality + rng.normal(size=quality.shape)
    metric = quality + rng.normal(size=quality.shape) * 2
    got = human_ceiling("pearson", raters=[r1, r2], metric=metric)
    expected = scipy.stats.pearsonr(r1.ravel(), r2.ravel())[0]
    assert got.value == pytest.approx(expected)
    assert got.per_rater == pytest.approx([expected, expected])
    metric_value = np.mean([scipy.stats.pearsonr(r2.ravel(), metric.ravel())[0],
                            scipy.stats.pearsonr(r1.ravel(), metric.ravel())[0]])
    assert got.metric_value == pytest.approx(metric_value)
    assert got.fraction == pytest.approx(metric_value / expected)
    with pytest.raises(ValueError):
        human_ceiling("pearson", raters=[r1])


def test_human_ceiling_leaves_one_rater_out_of_the_mean():
    r = [np.array([[1.0, 2.0, 3.0, 4.0]]), np.array([[1.0, 3.0, 2.0, 4.0]]),
         np.array([[2.0, 1.0, 3.0, 5.0]])]
    got = human_ceiling("kendall", raters=r)
    expected = [scipy.stats.kendalltau((r[1] + r[2]).ravel(), r[0].ravel())[0],
                scipy.stats.kendalltau((r[0] + r[2]).ravel(), r[1].ravel())[0],
                scipy.stats.kendalltau((r[0] + r[1]).ravel(), r[2].ravel())[0]]
    assert got.per_rater == pytest.approx(expected)
    assert got.value == pytest.approx(np.mean(expected))


def test_pairwise_agreement_by_hand():
    human = ["a", "B", "tie", "a", "b", None]
    ab = ["a", "a", "tie", "A", "b", "a"]
    ba = ["a", "b", "a", "b", "b", "b"]
    got = pairwise_agreement(human=human, verdict_ab=ab, verdict_ba=ba)
    assert got.n == 5
    assert got.accuracy_ab == pytest.approx(4 / 5)
    assert got.accuracy_ba == pytest.approx(3 / 5)
    assert got.accuracy_both == pytest.approx(2 / 5)
    assert got.consistency == pytest.approx(2 / 6)
    assert got.judge_tie_rate == pytest.approx(1 / 12)
    assert got.human_tie_rate == pytest.approx(1 / 5)
    # The same verdicts given by position (first/second shown) and as numbers: P(A better)
    # in [0, 1] (0.5 = tie; a soft 0.7 is a hard A).
    positional = ["b", "a", "b", "a", "a", "a"]
    numeric = [1, 0.7, 0.5, 1, 0, 0.9]
    same = pairwise_agreement(human=human, verdict_ab=numeric, verdict_ba=positional,
                              ba_positional=True)
    assert same == got


def test_pairwise_agreement_rejects_unknown_labels():
    with pytest.raises(ValueError, match="verdict_ab row 1"):
        pairwise_agreement(human=["a", "b"], verdict_ab=["a", "maybe"], verdict_ba=["a", "b"])
    # A number is P(A is better): a sign (-1) is outside [0, 1] and refused, naming the row.
    with pytest.raises(ValueError, match=r"human row 1: -1(\.0)? is not in \[0, 1\]"):
        pairwise_agreement(human=[1, -1], verdict_ab=["a", "b"], verdict_ba=["a", "b"])


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_sklearn_on_skewed_marginals(seed: int, weights: str | None) -> None:
    """Random 1-5 ratings whose two raters have different, skewed marginals (a uniform one
    hides an expected-agreement table built from the wrong margins), missing pairs dropped."""
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 200))
    human = rng.choice([1.0, 2.0, 3.0, 4.0, 5.0], size=n, p=rng.dirichlet(np.ones(5) * 0.7))
    noise = rng.choice([-2, -1, 0, 0, 0, 1], size=n)
    metric = np.clip(human + noise, 1, 5)
    human[rng.random(n) < 0.1] = np.nan
    both = ~np.isnan(human)
    labels = sorted(set(human[both]) | set(metric[both]))
    assert len(labels) >= 2  # the seeds give two or more categories
    expected = cohen_kappa_score(human[both], metric[both], weights=weights, labels=labels)
    found = cohen_kappa(human=human.tolist(), metric=metric.tolist(), weights=weights)
    assert found.value == pytest.approx(expected, abs=1e-12)
    assert found.n == int(both.sum())
