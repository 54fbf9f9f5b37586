"""Pairwise judge statistics (meta_eval.pairwise, meta_eval.pairwise_eval) against independent
computations: plain Python loops over rows, scikit-learn's cohen_kappa_score, scipy's
binomtest, exhaustive sign-flip enumeration, on random tables with ties, missing values and
soft preferences."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.stats
from sklearn.metrics import cohen_kappa_score

from meta_eval.pairwise import (
    LabelError,
    credit,
    hard_labels,
    kappa_from_counts,
    paired_sign_test,
    preferences,
)
from meta_eval.pairwise_eval import CEILING, MACRO, Verdicts, evaluate_pairwise

CHOICES = ["a", "b", "tie", "A", " B ", "Tie", None, float("nan"), "", 0.0, 1.0, 0.5, 0.2,
           0.8, 0.51, 0.49, "0.7", 1e-12, 1 - 1e-12]


def label_of(v: object) -> str | None:
    """The hard label of one value, written out independently of meta_eval."""
    if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
        return None
    if isinstance(v, str):
        word = v.strip().lower()
        if word in ("a", "b", "tie"):
            return word
        v = float(word)
    p = float(v)  # type: ignore[arg-type]
    return "a" if p > 0.5 else "b" if p < 0.5 else "tie"


def random_column(rng: np.random.Generator, n: int, missing: float = 0.1) -> list[object]:
    out: list[object] = []
    for _ in range(n):
        if rng.random() < missing:
            out.append(None)
        else:
            out.append(CHOICES[int(rng.integers(0, len(CHOICES)))])
    return out


def loop_credit(h: str | None, v: str | None, ties: str) -> float | None:
    if h is None or v is None:
        return None
    if ties == "drop":
        return None if h == "tie" else float(v == h)
    if ties == "class":
        return float(v == h)
    if v == h:
        return 1.0
    return 0.5 if "tie" in (v, h) else 0.0


def loop_mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else float("nan")


def loop_combined(ab: str | None, ba: str | None) -> str | None:
    if ab is None:
        return ba
    if ba is None:
        return ab
    return ab if ab == ba else "tie"


def loop_vote(ab: str | None, ba: str | None) -> str | None:
    """JudgeBench's two-order rule: a decided order beats a tie, opposite orders tie."""
    if ab is None or (ab == "tie" and ba is not None):
        return ba
    if ba is None or ba == "tie":
        return ab
    return ab if ab == ba else "tie"


def loop_kappa(x: list[str | None], y: list[str | None]) -> float:
    keep = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    if not keep or len({*(a for a, _ in keep), *(b for _, b in keep)}) < 2:
        return float("nan")
    return float(cohen_kappa_score([a for a, _ in keep], [b for _, b in keep]))


def loop_statistics(human: list[object], ab: list[object], ba: list[object], ties: str
                    ) -> dict[str, float]:
    h = [label_of(v) for v in human]
    x = [label_of(v) for v in ab]
    y = [label_of(v) for v in ba]
    c_ab = [loop_credit(a, b, ties) for a, b in zip(h, x, strict=True)]
    c_ba = [loop_credit(a, b, ties) for a, b in zip(h, y, strict=True)]
    both = [min(p, q) if p is not None and q is not None else None
            for p, q in zip(c_ab, c_ba, strict=True)]
    consistent = [float(p == q) if p is not None and q is not None else None
                  for p, q in zip(x, y, strict=True)]
    verdicts = [v for v in (*x, *y) if v is not None]
    gold = [None if (ties == "drop" and g == "tie") else g for g in h]
    return {
        "accuracy-ab": loop_mean(c_ab), "accuracy-ba": loop_mean(c_ba),
        "accuracy": (loop_mean(c_ab) + loop_mean(c_ba)) / 2,
        "accuracy-combined": loop_mean([loop_credit(a, loop_combined(p, q), ties)
                                        for a, p, q in zip(h, x, y, strict=True)]),
        "accuracy-vote": loop_mean([loop_credit(a, loop_vote(p, q), ties)
                                    for a, p, q in zip(h, x, y, strict=True)]),
        "both-correct": loop_mean(both), "consistency": loop_mean(consistent),
        "tie-rate": sum(v == "tie" for v in verdicts) / len(verdicts),
        "kappa-orders": loop_kappa(x, y),
        "kappa": loop_kappa([loop_combined(p, q) for p, q in zip(x, y, strict=True)], gold),
    }


def values_of(results: list, judge: str = "j", category: str | None = None) -> dict[str, float]:
    return {r.statistic: r.result.value for r in results
            if r.judge == judge and r.category == category and r.human in (None, "h")}


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


@pytest.mark.parametrize("ties", ["drop", "half", "class"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_statistic_matches_row_loops_and_sklearn(ties, seed):
    rng = np.random.default_rng(seed)
    n = 240
    human, ab, ba = (random_column(rng, n) for _ in range(3))
    items = rng.integers(0, 60, size=n)  # several pairs share an item
    got = evaluate_pairwise(judges={"j": Verdicts(ab=preferences(ab), ba=preferences(ba))},
                            humans={"h": preferences(human)}, items=items, ties=ties)
    expected = loop_statistics(human, ab, ba, ties)
    values = values_of(got.results)
    assert set(values) == set(expected)
    for statistic, value in expected.items():
        assert same(values[statistic], value), statistic


@pytest.mark.parametrize("ties", ["drop", "half", "class"])
def test_by_category_and_macro_average_match_loops(ties):
    rng = np.random.default_rng(7)
    n = 300
    human, ab, ba = (random_column(rng, n) for _ in range(3))
    categories = rng.choice(["chat", "code", "math"], size=n)
    got = evaluate_pairwise(judges={"j": Verdicts(ab=preferences(ab), ba=preferences(ba))},
                            humans={"h": preferences(human)}, items=np.arange(n),
                            categories=categories, ties=ties).results
    per = {}
    for c in ("chat", "code", "math"):
        keep = [k for k in range(n) if categories[k] == c]
        per[c] = loop_statistics([human[k] for k in keep], [ab[k] for k in keep],
                                 [ba[k] for k in keep], ties)
        for statistic, value in values_of(got, category=c).items():
            assert same(value, per[c][statistic]), (c, statistic)
    for statistic, value in values_of(got, category=MACRO).items():
        defined = [per[c][statistic] for c in per if not math.isnan(per[c][statistic])]
        assert same(value, sum(defined) / len(defined)), statistic


def test_a_plain_verdict_column_and_a_one_order_judge():
    rng = np.random.default_rng(3)
    n = 150
    human, ab, plain = (random_column(rng, n) for _ in range(3))
    got = evaluate_pairwise(judges={"one": Verdicts(ab=preferences(ab)),
                                    "plain": Verdicts(combined=preferences(plain))},
                            humans={"h": preferences(human)}, items=np.arange(n)).results
    h = [label_of(v) for v in human]
    one = values_of(got, "one")
    assert set(one) == {"accuracy-ab", "accuracy", "accuracy-combined", "accuracy-vote",
                        "tie-rate", "kappa"}
    c = [loop_credit(a, label_of(b), "drop") for a, b in zip(h, ab, strict=True)]
    assert one["accuracy-ab"] == one["accuracy"] == pytest.approx(loop_mean(c))
    assert one["accuracy-combined"] == one["accuracy-vote"] == pytest.approx(loop_mean(c))
    gold = [None if g == "tie" else g for g in h]
    assert one["kappa"] == pytest.approx(loop_kappa([label_of(v) for v in ab], gold))
    flat = values_of(got, "plain")
    assert set(flat) == {"accuracy", "accuracy-combined", "accuracy-vote", "tie-rate", "kappa"}
    labels = [label_of(v) for v in plain]
    expected = loop_mean([loop_credit(a, b, "drop") for a, b in zip(h, labels, strict=True)])
    assert flat["accuracy"] == flat["accuracy-combined"] == flat["accuracy-vote"]
    assert flat["accuracy"] == pytest.approx(expected)
    kept = [v for v in labels if v is not None]
    assert flat["tie-rate"] == pytest.approx(kept.count("tie") / len(kept))


def test_a_given_combined_verdict_is_what_kappa_uses():
    human = preferences(["a", "b", "a", "b", "a", "b"])
    ab = preferences(["a", "b", "b", "b", "a", "a"])
    ba = preferences(["a", "a", "a", "b", "b", "a"])
    combined = preferences(["a", "b", "a", "a", "b", "b"])
    got = evaluate_pairwise(judges={"j": Verdicts(ab=ab, ba=ba, combined=combined)},
                            humans={"h": human}, items=np.arange(6)).results
    expected = cohen_kappa_score(["a", "b", "a", "a", "b", "b"], ["a", "b", "a", "b", "a", "b"])
    assert values_of(got)["kappa"] == pytest.approx(expected)


def test_kappa_from_counts_is_sklearn_and_undefined_for_one_class():
    rng = np.random.default_rng(5)
    for _ in range(20):
        x, y = rng.integers(0, 3, size=50), rng.integers(0, 3, size=50)
        counts = np.zeros((3, 3))
        np.add.at(counts, (x, y), 1)
        assert kappa_from_counts(counts) == pytest.approx(cohen_kappa_score(x, y))
    assert math.isnan(float(kappa_from_counts(np.diag([5.0, 0, 0]))))
    assert math.isnan(float(kappa_from_counts(np.zeros((3, 3)))))


def test_preferences_read_words_numbers_and_refuse_the_rest():
    got = preferences(["a", " B", "TIE", 0.7, "0.25", None, "", float("nan"), 0, 1])
    assert got[:5].tolist() == [1.0, 0.0, 0.5, 0.7, 0.25]
    assert np.isnan(got[5:8]).all() and got[8:].tolist() == [0.0, 1.0]
    assert hard_labels(np.array([0.7, 0.5, 0.3, np.nan, 0.5000001])).tolist()[:3] == [1, 0, -1]
    with pytest.raises(LabelError, match=r"row 2: 1.5 is not in \[0, 1\]") as info:
        preferences([0.2, 0.4, 1.5])
    assert info.value.row == 2
    with pytest.raises(LabelError, match="row 1") as info:
        preferences(["a", -1])
    with pytest.raises(LabelError, match="row 1: unknown label 'maybe'"):
        preferences(["a", "maybe"])
    with pytest.raises(LabelError, match="boolean"):
        preferences(["a", True])
    with pytest.raises(LabelError, match="not in"):
        preferences(["a", "2"])


def test_credit_under_each_tie_policy_by_hand():
    h = np.array([1, 1, 1, 0, 0, -1, np.nan])
    v = np.array([1, 0, -1, 0, 1, 1, 1])
    assert np.allclose(credit(human=h, verdict=v, ties="drop"),
                       [1, 0, 0, np.nan, np.nan, 0, np.nan], equal_nan=True)
    assert np.allclose(credit(human=h, verdict=v, ties="class"),
                       [1, 0, 0, 1, 0, 0, np.nan], equal_nan=True)
    assert np.allclose(credit(human=h, verdict=v, ties="half"),
                       [1, 0.5, 0, 1, 0.5, 0, np.nan], equal_nan=True)


def p_of(v: object) -> float | None:
    """P(A better) of one value, written out independently of meta_eval."""
    label = label_of(v)
    if label is None:
        return None
    if isinstance(v, str) and v.strip().lower() in ("a", "b", "tie"):
        return {"a": 1.0, "b": 0.0, "tie": 0.5}[label]
    return float(v)  # type: ignore[arg-type]


def loop_ceiling(raters: list[list[object]], judge: list[str | None], ties: str
                 ) -> tuple[float, float]:
    """Leave-one-rater-out ceiling and the judge's fraction of it, accuracy, by loops: the
    reference of rater r is the hard label of the mean P(A better) of the others."""
    per_rater, per_judge = [], []
    for r, raw in enumerate(raters):
        own = [label_of(v) for v in raw]
        reference = []
        for k in range(len(own)):
            others = [p for i, o in enumerate(raters) if i != r
                      and (p := p_of(o[k])) is not None]
            mean = sum(others) / len(others) if others else None
            reference.append(None if mean is None else label_of(mean))
        per_rater.append(loop_mean([loop_credit(g, v, ties)
                                    for g, v in zip(reference, own, strict=True)]))
        per_judge.append(loop_mean([loop_credit(g, v, ties)
                                    for g, v in zip(reference, judge, strict=True)]))
    ceiling = sum(per_rater) / len(per_rater)
    return ceiling, (sum(per_judge) / len(per_judge)) / ceiling


@pytest.mark.parametrize("ties", ["drop", "half", "class"])
def test_human_ceiling_leaves_one_annotator_out(ties):
    rng = np.random.default_rng(11)
    n = 200
    raters = [random_column(rng, n, missing=0.2) for _ in range(3)]
    judge = random_column(rng, n)
    got = evaluate_pairwise(judges={"j": Verdicts(combined=preferences(judge))},
                            humans={f"h{k}": preferences(r) for k, r in enumerate(raters)},
                            items=np.arange(n), ties=ties).results
    ceiling, fraction = loop_ceiling(raters, [label_of(v) for v in judge], ties)
    row = next(r for r in got if r.judge == CEILING and r.statistic == "accuracy")
    assert row.result.value == pytest.approx(ceiling)
    accuracy = next(r for r in got if r.judge == "j" and r.statistic == "accuracy"
                    and r.human == "h0")
    assert accuracy.ceiling_fraction == pytest.approx(fraction)


def test_two_annotators_ceiling_kappa_is_their_kappa():
    rng = np.random.default_rng(12)
    a, b = (random_column(rng, 120) for _ in range(2))
    got = evaluate_pairwise(judges={"j": Verdicts(combined=preferences(a))},
                            humans={"x": preferences(a), "y": preferences(b)},
                            items=np.arange(120), ties="class").results
    row = next(r for r in got if r.judge == CEILING and r.statistic == "kappa")
    expected = loop_kappa([label_of(v) for v in a], [label_of(v) for v in b])
    assert row.result.value == pytest.approx(expected)
    assert row.result.extra["per_rater"] == pytest.approx([expected, expected])


def loop_bootstrap_accuracy(items: np.ndarray, human: list[object], ab: list[object],
                            ba: list[object], draws: np.ndarray, ties: str) -> list[float]:
    names = sorted(set(items.tolist()), key=items.tolist().index)
    rows_of = {name: [k for k in range(len(items)) if items[k] == name] for name in names}
    out = []
    for draw in draws:
        rows = [k for i in draw for k in rows_of[names[i]]]
        out.append(loop_statistics([human[k] for k in rows], [ab[k] for k in rows],
                                   [ba[k] for k in rows], ties)["accuracy"])
    return out


def test_bootstrap_resamples_items_as_a_loop_does_and_is_seeded():
    rng = np.random.default_rng(21)
    n = 90
    human, ab, ba = (random_column(rng, n) for _ in range(3))
    items = rng.integers(0, 25, size=n).astype(str)
    judges = {"j": Verdicts(ab=preferences(ab), ba=preferences(ba))}

    def run(seed: int) -> list:
        return evaluate_pairwise(judges=judges, humans={"h": preferences(human)}, items=items,
                                 bootstrap=200, seed=seed, ties="half").results

    first, again, other = run(4), run(4), run(5)
    assert [r.result for r in first] == [r.result for r in again]
    assert [r.result.ci_low for r in first] != [r.result.ci_low for r in other]
    for r in first:
        assert r.result.ci_low <= r.result.value <= r.result.ci_high, r.statistic
    n_items = len(set(items.tolist()))
    draws = np.random.default_rng(4).integers(0, n_items, size=(200, n_items))
    values = loop_bootstrap_accuracy(items, human, ab, ba, draws, "half")
    accuracy = next(r for r in first if r.statistic == "accuracy")
    low, high = np.quantile([v for v in values if not math.isnan(v)], [0.025, 0.975])
    assert accuracy.result.ci_low == pytest.approx(low)
    assert accuracy.result.ci_high == pytest.approx(high)


def test_mcnemar_is_scipy_binomtest_on_the_discordant_pairs():
    a_only, b_only, both, neither = 14, 5, 30, 9
    credit_a = np.r_[np.ones(a_only), np.zeros(b_only), np.ones(both), np.zeros(neither)]
    credit_b = np.r_[np.zeros(a_only), np.ones(b_only), np.ones(both), np.zeros(neither)]
    got = paired_sign_test(credit_a=credit_a, credit_b=credit_b)
    assert got.method == "mcnemar"
    expected = scipy.stats.binomtest(a_only, a_only + b_only, 0.5, alternative="greater")
    assert got.p_value == pytest.approx(expected.pvalue, rel=1e-12)
    assert got.delta == pytest.approx((a_only - b_only) / credit_a.size)
    reverse = paired_sign_test(credit_a=credit_b, credit_b=credit_a)
    assert reverse.p_value == pytest.approx(
        scipy.stats.binomtest(b_only, a_only + b_only, 0.5, alternative="greater").pvalue)
    none = paired_sign_test(credit_a=np.ones(5), credit_b=np.ones(5))
    assert none.p_value == 1.0


def test_sign_flip_test_matches_exhaustive_enumeration():
    d_a = np.array([1, 0.5, 1, 1, 0.5, 0, 1, 0.5, 1, 1, 0, 1])
    d_b = np.array([0, 0, 0.5, 1, 0, 0.5, 0, 1, 0, 0.5, 0, 0])
    diff = (d_a - d_b)[d_a != d_b]
    observed = diff.sum()
    hits = sum(np.dot(signs, diff) >= observed - 1e-12
               for signs in itertools.product((1, -1), repeat=diff.size))
    exact = hits / 2**diff.size
    got = paired_sign_test(credit_a=d_a, credit_b=d_b, resamples=40000, seed=3)
    assert got.method == "sign-flip"
    assert got.p_value == pytest.approx(exact, abs=0.01)


def test_compare_clusters_a_clearly_better_judge_first():
    rng = np.random.default_rng(8)
    n = 400
    gold = rng.choice(["a", "b"], size=n)
    flip = {"a": "b", "b": "a"}

    def judge(error: float) -> np.ndarray:
        return preferences([flip[g] if rng.random() < error else g for g in gold])

    judges = {"good": Verdicts(ab=judge(0.05), ba=judge(0.05)),
              "bad": Verdicts(ab=judge(0.4), ba=judge(0.4)),
              "bad2": Verdicts(ab=judge(0.4), ba=judge(0.41))}
    got = evaluate_pairwise(judges=judges, humans={"h": preferences(gold)},
                            items=np.arange(n), compare=True)
    ranking = got.rankings["h"]
    assert ranking.cluster_of("good") == 1
    assert ranking.cluster_of("bad") == ranking.cluster_of("bad2") == 2
    clusters = {r.judge: r.cluster for r in got.results if r.statistic == "accuracy"}
    assert clusters == {"good": 1, "bad": 2, "bad2": 2}
