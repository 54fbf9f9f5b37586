"""Agreement between rankings, the bootstrap, and which weights make a system win."""

from __future__ import annotations

import numpy as np
import pytest
from profiles import TENNESSEE
from scipy import stats

from meta_eval.aggregation import (
    RULES,
    Comparisons,
    Profile,
    against_human,
    bootstrap,
    borda,
    kendall_tau_b,
    mean,
    pairwise_accuracy,
    ranking_scores,
    rule_agreement,
    weights_to_win,
)


def test_kendall_tau_b_matches_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 4, size=12).astype(float)
        y = rng.integers(0, 4, size=12).astype(float)
        assert kendall_tau_b(x=x, y=y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert np.isnan(kendall_tau_b(x=[1, 1, 1], y=[1, 2, 3]))


def test_pairwise_accuracy() -> None:
    assert pairwise_accuracy(x=[1, 2, 3], y=[10, 20, 30]) == 1.0
    assert pairwise_accuracy(x=[1, 2, 3], y=[30, 20, 10]) == 0.0
    # pairs: (1,2) agree, (1,3) agree, (2,3) tie vs order: disagree
    assert pairwise_accuracy(x=[1, 2, 2], y=[1, 2, 3]) == pytest.approx(2 / 3)


def test_rule_agreement_and_human_check() -> None:
    results = {name: RULES[name].rank(TENNESSEE) for name in ("borda", "plurality", "kemeny")}
    table = rule_agreement(results)
    assert (np.diag(table.to_numpy()) == 1).all()
    assert table.loc["borda", "kemeny"] == table.loc["kemeny", "borda"]
    # borda N > C > M > K vs kemeny N > C > K > M: one discordant pair of six
    assert table.loc["borda", "kemeny"] == pytest.approx(4 / 6)
    human = ranking_scores(["Nashville", "Chattanooga", "Knoxville", "Memphis"])
    check = against_human(results["kemeny"], human=human)
    assert (check.kendall_tau, check.pairwise_accuracy, check.n_systems) == (1.0, 1.0, 4)
    reverse = against_human(results["kemeny"], human={k: -v for k, v in human.items()})
    assert (reverse.kendall_tau, reverse.pairwise_accuracy) == (-1.0, 0.0)
    partial = against_human(results["borda"], human={"Nashville": 2.0, "Memphis": 1.0})
    assert partial.n_systems == 2 and partial.kendall_tau == 1.0


def test_bootstrap_of_a_unanimous_profile_is_certain() -> None:
    profile = Profile.from_rankings([["a", "b", "c", "d"]] * 5)
    out = bootstrap(profile, [RULES["borda"], RULES["copeland"]], n=50, seed=1)
    for b in out:
        assert b.top1_stability == 1.0 and b.topk_stability == 1.0 and b.mean_tau == 1.0
        first = b.systems[0]
        assert (first.system, first.rank_low, first.rank_high, first.p_win) == ("a", 1, 1, 1.0)


def test_bootstrap_is_seeded_and_probabilities_add_up() -> None:
    rng = np.random.default_rng(2)
    scores = rng.normal(size=(30, 6)) + np.linspace(0, 3, 6)
    profile = Profile(systems=tuple("abcdef"), scores=scores)
    rules = [RULES["borda"], RULES["condorcet"]]
    one = bootstrap(profile, rules, n=200, seed=7)
    two = bootstrap(profile, rules, n=200, seed=7)
    assert one == two
    for b in one:
        total = sum(s.p_win for s in b.systems)
        assert total <= 1.0 + 1e-9
        assert all(s.rank_low <= s.rank_median <= s.rank_high for s in b.systems)
        assert 0.0 <= b.top1_stability <= 1.0
    assert sum(s.p_win for s in one[0].systems) == pytest.approx(1.0)  # borda always has one
    assert one[0].systems[0].system == "f"  # the planted best


def test_bootstrap_resamples_pairwise_items() -> None:
    comps = Comparisons(systems=("A", "B", "C"), a=[0, 0, 1, 0, 1], b=[1, 2, 2, 1, 2],
                        outcome=[1, 1, 1, 1, 0.5], groups=["x", "x", "x", "y", "y"])
    assert comps.n_units == 2
    sample = comps.take(np.array([1, 1]))
    assert len(sample.a) == 4 and sample.n_units == 2
    assert sample.a.tolist() == [0, 1, 0, 1]
    out = bootstrap(comps, [RULES["copeland"]], n=20, seed=0)
    assert out[0].n == 20


def test_weights_that_make_memphis_win_borda() -> None:
    found = weights_to_win(TENNESSEE, "Memphis", "borda")
    assert found.possible and found.verified
    w = np.array([found.weights[v] for v in TENNESSEE.voters])
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
    assert borda(TENNESSEE.with_weights(w)).winners == ("Memphis",)


def test_a_dominated_system_cannot_win() -> None:
    # B is worse than A on every column: no weighting of the columns makes it win
    profile = Profile(systems=("A", "B", "C"), scores=[[3, 2, 1], [2, 1, 3], [5, 4, 0]])
    for rule in ("mean", "borda", "condorcet", "plurality", "dowdall"):
        found = weights_to_win(profile, "B", rule)
        assert not found.possible and found.weights is None, rule
    found = weights_to_win(profile, "C", "mean")
    assert found.possible and found.verified  # C wins column 2 alone
    assert mean(profile.with_weights(np.array(list(found.weights.values())))).winners == ("C",)


def test_weights_can_only_tie_and_mean_needs_complete_data() -> None:
    twins = Profile(systems=("A", "B"), scores=[[1, 1], [2, 2]])
    found = weights_to_win(twins, "A", "borda")
    assert not found.possible and found.can_tie and found.verified
    gappy = Profile(systems=("A", "B"), scores=[[1, np.nan], [2, 3]])
    with pytest.raises(ValueError, match="complete"):
        weights_to_win(gappy, "A", "mean")
    assert weights_to_win(gappy, "A", "borda").possible is False
