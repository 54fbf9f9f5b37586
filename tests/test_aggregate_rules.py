"""Social-choice rules on textbook profiles whose results are known."""

from __future__ import annotations

import numpy as np
import pytest
from profiles import TENNESSEE

from meta_eval.aggregation import (
    RULES,
    Comparisons,
    Profile,
    baldwin,
    borda,
    condorcet,
    copeland,
    dowdall,
    geometric_mean,
    kemeny,
    mean,
    median,
    minimax,
    plurality,
    schulze,
    weighted_median,
)
from meta_eval.aggregation.base import PROFILE, NotApplicable

PROFILE_RULES = {name: rule for name, rule in RULES.items() if PROFILE in rule.inputs}

CYCLE = Profile.from_rankings([["A", "B", "C"], ["B", "C", "A"], ["C", "A", "B"]])


def test_tennessee_plurality_picks_memphis() -> None:
    result = plurality(TENNESSEE)
    assert result.winners == ("Memphis",)
    assert result.scores == {"Memphis": 42, "Nashville": 26, "Chattanooga": 15, "Knoxville": 17}


def test_tennessee_borda_scores() -> None:
    result = borda(TENNESSEE)
    assert result.winners == ("Nashville",)
    assert result.scores == {"Memphis": 126, "Nashville": 194, "Chattanooga": 173,
                             "Knoxville": 107}
    assert result.ranking == ["Nashville", "Chattanooga", "Memphis", "Knoxville"]


def test_tennessee_majority_rules_pick_nashville() -> None:
    expected = ["Nashville", "Chattanooga", "Knoxville", "Memphis"]
    assert condorcet(TENNESSEE).winners == ("Nashville",)
    assert condorcet(TENNESSEE).ranking == expected  # a transitive majority: its own order
    result = copeland(TENNESSEE)
    assert result.ranking == expected
    assert result.scores == {"Nashville": 3, "Chattanooga": 2, "Knoxville": 1, "Memphis": 0}
    assert schulze(TENNESSEE).ranking == expected
    assert kemeny(TENNESSEE).ranking == expected
    assert "agreement 393" in kemeny(TENNESSEE).note  # Wikipedia's Kemeny-Young score
    for variant in ("margins", "winning_votes", "opposition"):
        assert minimax(TENNESSEE, variant=variant).winners == ("Nashville",)
    # Nashville's worst contest is a win by 16 (58 to 42 against Memphis)
    assert minimax(TENNESSEE).scores["Nashville"] == 16
    assert minimax(TENNESSEE).scores["Knoxville"] == -66  # loses to Nashville 17 to 83


def test_tennessee_baldwin_and_dowdall() -> None:
    # Baldwin drops Knoxville (Borda 107), then Memphis, then Chattanooga
    assert baldwin(TENNESSEE).ranking == ["Nashville", "Chattanooga", "Memphis", "Knoxville"]
    result = dowdall(TENNESSEE)
    assert result.winners == ("Nashville",)
    assert result.scores["Nashville"] == pytest.approx(26 + 42 / 2 + 32 / 3)
    assert result.scores["Memphis"] == pytest.approx(42 + 58 / 4)


def test_condorcet_cycle_has_no_winner() -> None:
    result = condorcet(CYCLE)
    assert result.winners == ()
    assert result.tiers == (("A", "B", "C"),)
    assert "no Condorcet winner" in result.note
    for rule in (copeland, schulze, borda, minimax, baldwin):
        assert rule(CYCLE).tiers == (("A", "B", "C"),), rule.__name__
    k = kemeny(CYCLE)
    assert "3 optimal orderings" in k.note
    assert k.winners == ("A", "B", "C")


def test_borda_and_condorcet_winners_differ() -> None:
    profile = Profile.from_rankings([["A", "B", "C"], ["B", "C", "A"]], weights=[3, 2])
    assert condorcet(profile).winners == ("A",)  # A beats B and C 3 to 2
    assert borda(profile).winners == ("B",)  # B: 3*1 + 2*2 = 7 > A: 3*2 = 6
    assert borda(profile).scores == {"A": 6, "B": 7, "C": 2}


def test_schulze_wikipedia_example() -> None:
    ballots = {"ACBED": 5, "ADECB": 5, "BEDAC": 8, "CABED": 3, "CAEBD": 7, "CBADE": 2,
               "DCEBA": 7, "EBADC": 8}
    profile = Profile.from_rankings([list(b) for b in ballots], weights=list(ballots.values()))
    assert schulze(profile).ranking == ["E", "A", "C", "B", "D"]
    assert condorcet(profile).winners == ()  # the example has no Condorcet winner


def test_ties_in_a_ballot_are_kept_and_counted_half() -> None:
    profile = Profile.from_rankings([[("A", "B"), "C"], ["C", "A", "B"]])
    result = borda(profile)
    assert result.scores == {"A": 1.5 + 1, "B": 1.5 + 0, "C": 0 + 2}
    assert plurality(profile).scores == {"A": 0.5, "B": 0.5, "C": 1}
    # a tie across all voters stays a tie
    tied = Profile.from_rankings([[("A", "B"), "C"]])
    for rule in (borda, copeland, schulze, kemeny, condorcet, mean, dowdall):
        assert tied.systems and rule(tied).tiers[0] == ("A", "B"), rule.__name__
    assert borda(tied).ties == [["A", "B"]]


def test_missing_scores_rank_only_the_scored_systems() -> None:
    nan = np.nan
    profile = Profile(systems=("A", "B", "C", "D"),
                      scores=[[3, 2, 1, nan], [nan, 1, 2, nan], [1, nan, 2, nan]])
    # Borda: voter 1 gives A 2, B 1; voter 2 gives C 1; voter 3 gives C 1
    scores = borda(profile).scores
    assert (scores["A"], scores["B"], scores["C"]) == (2, 1, 2)
    assert np.isnan(scores["D"])
    assert borda(profile).tiers[-1] == ("D",)  # never scored: last, with a note
    assert "no score" in borda(profile).note
    assert mean(profile).scores["A"] == pytest.approx(2.0)  # over the voters that scored it
    counts = profile.counts
    assert counts.strict[0, 1] == 1 and counts.strict[1, 0] == 0  # only voter 1 saw A and B
    assert copeland(profile).tiers[-1] == ("D",)


def _random_profile(rng: np.random.Generator, voters: int, systems: int, *, ties: bool = True,
                    missing: float = 0.0) -> Profile:
    scores = rng.integers(1, 5 if ties else 1000, size=(voters, systems)).astype(float)
    scores[rng.random(scores.shape) < missing] = np.nan
    return Profile(systems=tuple(f"s{i}" for i in range(systems)), scores=scores)


@pytest.mark.parametrize("seed", range(5))
def test_weight_w_casts_w_votes(seed: int) -> None:
    rng = np.random.default_rng(seed)
    base = _random_profile(rng, 5, 5, missing=0.15)
    weights = rng.integers(0, 4, size=5)
    weighted = base.with_weights(weights.astype(float))
    replicated = base.take(np.repeat(np.arange(5), weights))
    for name, rule in PROFILE_RULES.items():
        if name in ("elo", "median"):  # Elo is sequential; the weighted median is checked below
            continue
        a, b = rule.rank(weighted), rule.rank(replicated)
        assert a.tiers == b.tiers, name
        if a.scores is not None:
            np.testing.assert_allclose(list(a.scores.values()), list(b.scores.values()),
                                       atol=1e-5, err_msg=name)


def test_weighted_median_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    for size in range(1, 12):
        x = rng.normal(size=size)
        assert weighted_median(x, np.ones(size)) == pytest.approx(np.median(x))
        w = rng.integers(0, 4, size=size).astype(float)
        if w.sum() == 0:
            continue
        assert weighted_median(x, w) == pytest.approx(np.median(np.repeat(x, w.astype(int))))


def test_median_rule() -> None:
    profile = Profile(systems=("A", "B"), scores=[[1, 5], [2, 0], [3, 1]])
    assert median(profile).scores == {"A": 2, "B": 1}


def test_lower_is_better_voters_are_reversed() -> None:
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(6, 5))
    up = Profile(systems=tuple("abcde"), scores=scores)
    down = Profile(systems=tuple("abcde"), scores=-scores, higher_is_better=[False] * 6)
    for name, rule in PROFILE_RULES.items():
        if name == "geometric-mean":
            continue
        assert rule.rank(up).tiers == rule.rank(down).tiers, name


def test_geometric_mean() -> None:
    profile = Profile(systems=("A", "B"), scores=[[1.0, 4.0], [16.0, 2.0]],
                      higher_is_better=[True, False])
    # A: sqrt(1 * 1/16), B: sqrt(4 * 1/2)
    result = geometric_mean(profile)
    assert result.scores["A"] == pytest.approx(0.25)
    assert result.scores["B"] == pytest.approx(np.sqrt(2.0))
    with pytest.raises(ValueError, match="positive"):
        geometric_mean(Profile(systems=("A", "B"), scores=[[0.0, 1.0]]))


def test_majority_rules_accept_pairwise_data_and_positional_rules_refuse_it() -> None:
    comps = TENNESSEE.comparisons()
    assert comps.counts.strict.tolist() == TENNESSEE.counts.strict.tolist()
    for name in ("copeland", "schulze", "kemeny", "condorcet", "minimax"):
        assert RULES[name].rank(comps).tiers == RULES[name].rank(TENNESSEE).tiers, name
    for name in ("borda", "plurality", "mean", "baldwin"):
        with pytest.raises(NotApplicable):
            RULES[name].rank(comps)


def test_pairwise_ties_and_unseen_systems() -> None:
    comps = Comparisons(systems=("A", "B", "C", "D"), a=[0, 0, 1], b=[1, 2, 2],
                        outcome=[1.0, 0.5, 0.0])
    assert comps.counts.ties[0, 2] == comps.counts.ties[2, 0] == 1
    result = copeland(comps)
    assert result.tiers[-1] == ("D",)  # compared with nobody
    assert result.scores["A"] == 1.5 and result.scores["C"] == 1.5  # A~C tie, both beat B


def test_rule_options() -> None:
    rule = RULES["minimax"].with_options(variant="winning_votes")
    assert rule.rank(TENNESSEE).winners == ("Nashville",)
    with pytest.raises(ValueError, match="no option"):
        RULES["borda"].with_options(colour="red")
    with pytest.raises(ValueError, match="variant"):
        RULES["minimax"].with_options(variant="nope").rank(TENNESSEE)


def test_profile_validation() -> None:
    with pytest.raises(ValueError, match="unique"):
        Profile(systems=("A", "A"), scores=[[1, 2]])
    with pytest.raises(ValueError, match="non-negative"):
        Profile(systems=("A", "B"), scores=[[1, 2]], weights=[-1])
    with pytest.raises(ValueError, match="outcome"):
        Comparisons(systems=("A", "B"), a=[0], b=[1], outcome=[2])
    with pytest.raises(ValueError, match="itself"):
        Comparisons(systems=("A", "B"), a=[0], b=[0], outcome=[1])


@pytest.mark.parametrize("name", sorted(PROFILE_RULES))
def test_degenerate_profiles(name: str) -> None:
    rule = RULES[name]
    alone = Profile(systems=("A",), scores=[[1.0], [2.0]])
    assert rule.rank(alone).winners == ("A",)
    # nothing scored (or only by voters of weight 0): everyone shares the last tier, no winner
    for empty in (Profile(systems=("A", "B"), scores=[[np.nan, np.nan]]),
                  Profile(systems=("A", "B"), scores=[[1.0, 2.0]], weights=[0.0]),
                  Profile(systems=("A", "B"), scores=np.zeros((0, 2)))):
        result = rule.rank(empty)
        assert result.tiers == (("A", "B"),) and result.winners == (), name
