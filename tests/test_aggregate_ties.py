"""Tie conventions of the positional rules (`ties=average|low|high`): hand-computed counts,
a brute-force reference from the definitions, Vote'n'Rank's pandas-rank formulas, the
default keeping the old numbers, and the CLI path."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from meta_eval.aggregation import (
    RULES,
    TIES,
    Profile,
    baldwin,
    borda,
    dowdall,
    plurality,
    score_vector,
    tie_points,
    voter_points,
    weights_to_win,
)

# A > B = C > D;  A = B > C > D;  B = C = D > A;  C > A (B and D unscored)
PROFILE = Profile.from_rankings(
    [["A", ("B", "C"), "D"], [("A", "B"), "C", "D"], [("B", "C", "D"), "A"], ["C", "A"]]
)
F = Fraction
# Per ballot (points of A, B, C, D), then the sum. Borda s = (3, 2, 1, 0), the partial
# ballot s = (1, 0); Dowdall s_p = 1/p; plurality s = (1, 0, ...). A tie group takes the
# mean / min / max of its positions' points.
HAND = {
    ("borda", "average"): {"A": F(11, 2), "B": F(6), "C": F(11, 2), "D": F(2)},
    ("borda", "low"): {"A": F(5), "B": F(4), "C": F(4), "D": F(1)},
    ("borda", "high"): {"A": F(6), "B": F(8), "C": F(7), "D": F(3)},
    # average: B = 5/12 + 3/4 + 11/18, C = 5/12 + 1/3 + 11/18 + 1, D = 1/4 + 1/4 + 11/18
    ("dowdall", "average"): {"A": F(5, 2), "B": F(16, 9), "C": F(85, 36), "D": F(10, 9)},
    ("dowdall", "low"): {"A": F(9, 4), "B": F(7, 6), "C": F(2), "D": F(5, 6)},
    ("dowdall", "high"): {"A": F(11, 4), "B": F(5, 2), "C": F(17, 6), "D": F(3, 2)},
    ("plurality", "average"): {"A": F(3, 2), "B": F(5, 6), "C": F(4, 3), "D": F(1, 3)},
    ("plurality", "low"): {"A": F(1), "B": F(0), "C": F(1), "D": F(0)},
    ("plurality", "high"): {"A": F(2), "B": F(2), "C": F(2), "D": F(1)},
}
HAND_TIERS = {
    ("borda", "average"): (("B",), ("A", "C"), ("D",)),
    ("borda", "low"): (("A",), ("B", "C"), ("D",)),
    ("borda", "high"): (("B",), ("C",), ("A",), ("D",)),
    ("plurality", "low"): (("A", "C"), ("B", "D")),
    ("plurality", "high"): (("A", "B", "C"), ("D",)),
    # Baldwin, average: D out (2), then C (A 3.5, B 3.5, C 3), then A = B (1.5 each).
    # low: D out (1), then B and C together (A 3, B 2, C 2). high: D out (3), then A and
    # C together (A 4, B 5, C 4).
    ("baldwin", "average"): (("A", "B"), ("C",), ("D",)),
    ("baldwin", "low"): (("A",), ("B", "C"), ("D",)),
    ("baldwin", "high"): (("B",), ("A", "C"), ("D",)),
}
FUNCTIONS = {"plurality": plurality, "borda": borda, "dowdall": dowdall, "baldwin": baldwin}


@pytest.mark.parametrize(("rule", "ties"), sorted(HAND))
def test_hand_computed_counts(rule: str, ties: str) -> None:
    result = FUNCTIONS[rule](PROFILE, ties=ties)
    expected = HAND[(rule, ties)]
    assert result.scores == pytest.approx({s: float(v) for s, v in expected.items()})
    assert RULES[rule].with_options(ties=ties).rank(PROFILE).scores == result.scores


@pytest.mark.parametrize(("rule", "ties"), sorted(HAND_TIERS))
def test_hand_computed_rankings(rule: str, ties: str) -> None:
    assert FUNCTIONS[rule](PROFILE, ties=ties).tiers == HAND_TIERS[(rule, ties)]


def test_tie_points_of_one_ballot() -> None:
    borda4 = score_vector("borda", 4)
    assert borda4.tolist() == [3, 2, 1, 0]
    # B = C in positions 2-3 of A > B = C > D; a tie of three at the top
    assert tie_points(borda4, 1, 1, "average") == 1.5
    assert tie_points(borda4, 1, 1, "low") == 1 and tie_points(borda4, 1, 1, "high") == 2
    assert tie_points(score_vector("dowdall", 4), 0, 2, "average") == pytest.approx(11 / 18)
    plur = score_vector("plurality", 3)
    assert [float(tie_points(plur, 0, 2, t)) for t in TIES] == [pytest.approx(1 / 3), 0, 1]
    with pytest.raises(ValueError, match="non-increasing"):
        tie_points(np.array([0.0, 1.0]), 0, 0)


# -- an independent implementation, from the definitions ---------------------------------
def _vector(rule: str, m: int) -> list[Fraction]:
    if rule == "plurality":
        return [F(int(p == 1)) for p in range(1, m + 1)]
    if rule == "borda":
        return [F(m - p) for p in range(1, m + 1)]
    return [F(1, p) for p in range(1, m + 1)]


def _ballots(profile: Profile, keep: set[str] | None = None) -> list[tuple[int, dict]]:
    out = []
    for v in range(profile.n_units):
        ballot = {}
        for i, s in enumerate(profile.systems):
            x = profile.scores[v, i]
            if not np.isnan(x) and (keep is None or s in keep):
                ballot[s] = x if profile.higher_is_better[v] else -x
        out.append((int(profile.weights[v]), ballot))
    return out


def reference_count(profile: Profile, rule: str, ties: str,
                    keep: set[str] | None = None) -> dict[str, Fraction]:
    """sum_v w_v * (mean | min | max of s_p over the positions p of i's tie group)."""
    pick = {"average": lambda pts: sum(pts) / len(pts), "low": min, "high": max}[ties]
    totals = {s: F(0) for s in profile.systems if keep is None or s in keep}
    for weight, ballot in _ballots(profile, keep):
        vector = _vector(rule, len(ballot))
        for s, x in ballot.items():
            above = sum(y > x for y in ballot.values())
            group = sum(y == x for y in ballot.values())
            totals[s] += weight * pick([vector[p - 1] for p in range(above + 1,
                                                                     above + group + 1)])
    return totals


def _present(profile: Profile) -> set[str]:
    return {s for i, s in enumerate(profile.systems) if profile.present[i]}


def _tiers(values: dict[str, Fraction]) -> list[tuple[str, ...]]:
    levels = sorted(set(values.values()), reverse=True)
    return [tuple(sorted(s for s, v in values.items() if v == level)) for level in levels]


def reference_baldwin(profile: Profile, ties: str) -> tuple[tuple[str, ...], ...]:
    remaining = _present(profile)
    out: list[tuple[str, ...]] = []
    while remaining:
        count = reference_count(profile, "borda", ties, keep=remaining)
        low = min(count.values())
        losers = {s for s, v in count.items() if v == low}
        out.append(tuple(sorted(losers)))
        remaining -= losers
    absent = tuple(sorted(set(profile.systems) - _present(profile)))
    return tuple(reversed(out)) + ((absent,) if absent else ())


def _random_profile(seed: int) -> Profile:
    rng = np.random.default_rng(seed)
    voters, systems = int(rng.integers(1, 7)), int(rng.integers(2, 7))
    scores = rng.integers(1, 4, size=(voters, systems)).astype(float)  # many ties
    scores[rng.random(scores.shape) < 0.2] = np.nan
    return Profile(systems=tuple(f"s{i}" for i in range(systems)), scores=scores,
                   weights=rng.integers(0, 4, size=voters).astype(float),
                   higher_is_better=rng.random(voters) < 0.7)


@pytest.mark.parametrize("seed", range(40))
def test_positional_rules_match_the_reference(seed: int) -> None:
    profile = _random_profile(seed)
    present = _present(profile)
    for rule in ("plurality", "borda", "dowdall"):
        for ties in TIES:
            result = FUNCTIONS[rule](profile, ties=ties)
            expected = reference_count(profile, rule, ties)
            for s in profile.systems:
                if s in present:
                    assert result.scores[s] == pytest.approx(float(expected[s]), abs=1e-12)
                else:
                    assert np.isnan(result.scores[s])
            ranked = [t for t in result.tiers if set(t) <= present]
            assert ranked == _tiers({s: expected[s] for s in present}), (rule, ties)


@pytest.mark.parametrize("seed", range(40))
def test_baldwin_matches_the_reference(seed: int) -> None:
    profile = _random_profile(seed)
    for ties in TIES:
        assert baldwin(profile, ties=ties).tiers == reference_baldwin(profile, ties), ties


# -- Vote'n'Rank (Rofin et al. 2023): pandas ranks of a complete leaderboard ---------------
def _vote_n_rank(table: pd.DataFrame, weights: pd.Series) -> dict[str, pd.Series]:
    """votenrank/leaderboard/_rules.py: Borda n - max-rank, Dowdall 1 / min-rank, plurality
    [max-rank <= 1], Baldwin eliminating on n_remaining - max-rank."""
    n = len(table)
    low_rank = table.rank(method="max", ascending=False)
    high_rank = table.rank(method="min", ascending=False)
    borda_ = ((n - low_rank) * weights).sum(axis=1)
    current = borda_
    while current.min() != current.max():
        keep = current.index[current != current.min()]
        ranks = table.loc[keep].rank(method="max", ascending=False)
        current = ((len(keep) - ranks) * weights).sum(axis=1)
    return {"borda": borda_, "dowdall": ((1 / high_rank) * weights).sum(axis=1),
            "plurality": ((low_rank <= 1) * weights).sum(axis=1),
            "baldwin": pd.Series(1.0, index=current.index)}


@pytest.mark.parametrize("seed", range(20))
def test_vote_n_rank_conventions(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n_systems, n_tasks = int(rng.integers(2, 7)), int(rng.integers(1, 6))
    table = pd.DataFrame(rng.integers(1, 4, size=(n_systems, n_tasks)).astype(float),
                         index=[f"m{i}" for i in range(n_systems)],
                         columns=[f"t{j}" for j in range(n_tasks)])
    weights = pd.Series(rng.integers(1, 4, size=n_tasks).astype(float), index=table.columns)
    profile = Profile(systems=tuple(table.index), scores=table.to_numpy().T,
                      weights=weights.to_numpy())
    theirs = _vote_n_rank(table, weights)
    for rule, ties in (("borda", "low"), ("dowdall", "high"), ("plurality", "low")):
        ours = FUNCTIONS[rule](profile, ties=ties).scores
        assert ours == pytest.approx(theirs[rule].to_dict(), abs=1e-12), rule
    assert set(baldwin(profile, ties="low").winners) == set(theirs["baldwin"].index)


def test_the_conventions_differ_on_ties_and_agree_without() -> None:
    strict = Profile.from_rankings([["A", "B", "C"], ["C", "A", "B"]])
    for rule in ("plurality", "borda", "dowdall", "baldwin"):
        results = [FUNCTIONS[rule](strict, ties=t) for t in TIES]
        assert all(r.tiers == results[0].tiers and r.scores == results[0].scores
                   for r in results), rule
        on_ties = {FUNCTIONS[rule](PROFILE, ties=t).tiers for t in TIES}
        assert len(on_ties) > 1, rule


# -- the default keeps the old numbers -----------------------------------------------------
def _old_voter_points(p: Profile, rule: str) -> np.ndarray:
    """The closed forms used before the `ties` option (ties counted half / split)."""
    better, tied = p.positions
    n_scored = p.scored.sum(axis=1, keepdims=True)
    if rule == "plurality":
        points = (better == 0) / (tied + 1.0)
    elif rule == "borda":
        points = (n_scored - 1 - better - tied) + 0.5 * tied
    else:
        harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, p.n_systems + 1))))
        first = better + 1
        points = (harmonic[first + tied] - harmonic[first - 1]) / (tied + 1.0)
    return np.where(p.scored, points, 0.0)


@pytest.mark.parametrize("seed", range(20))
def test_default_is_average_and_keeps_the_old_numbers(seed: int) -> None:
    profile = _random_profile(seed)
    for rule in ("plurality", "borda", "dowdall"):
        np.testing.assert_array_equal(voter_points(profile, rule),
                                      _old_voter_points(profile, rule), err_msg=rule)
        assert FUNCTIONS[rule](profile).tiers == FUNCTIONS[rule](profile, ties="average").tiers
    assert baldwin(profile).tiers == reference_baldwin(profile, "average")


@pytest.mark.parametrize("ties", TIES)
def test_weight_w_casts_w_votes_under_every_convention(ties: str) -> None:
    base = Profile(systems=("a", "b", "c", "d"), scores=np.array(
        [[1, 1, 2, np.nan], [2, 2, 2, 1], [3, 1, 1, 3], [np.nan, 2, 1, 1], [1, 2, 2, 3]]))
    counts = np.array([2, 0, 1, 3, 1])
    weighted = base.with_weights(counts.astype(float))
    replicated = base.take(np.repeat(np.arange(base.n_units), counts))
    for name in ("plurality", "borda", "dowdall", "baldwin"):
        rule = RULES[name].with_options(ties=ties)
        a, b = rule.rank(weighted), rule.rank(replicated)
        assert a.tiers == b.tiers, name
        if a.scores is not None:
            np.testing.assert_allclose(list(a.scores.values()), list(b.scores.values()))


def test_unknown_convention_is_a_clear_error() -> None:
    for fn in FUNCTIONS.values():
        with pytest.raises(ValueError, match="ties must be one of average, low, high"):
            fn(PROFILE, ties="lowest")
    for name in ("plurality", "borda", "dowdall", "baldwin"):
        with pytest.raises(ValueError, match="ties must be one of average, low, high"):
            RULES[name].with_options(ties="min")
        assert "ties" in RULES[name].option_names()
        assert "low" in RULES[name].description and "high" in RULES[name].description
    with pytest.raises(ValueError, match="ties must be one of"):
        voter_points(PROFILE, "borda", "median")


def test_weights_to_win_scores_ties_like_the_rule() -> None:
    # A's best lead puts all weight on ballot 1 (A > B = C > D): 3 - 1.5 / 3 - 1 / 3 - 2
    margins = {"average": 1.5, "low": 2.0, "high": 1.0}
    for ties, margin in margins.items():
        found = weights_to_win(PROFILE, "A", "borda", ties=ties)
        assert found.possible and found.verified
        assert found.margin == pytest.approx(margin)
    with pytest.raises(ValueError, match="ties applies to"):
        weights_to_win(PROFILE, "A", "condorcet", ties="low")


# -- the CLI -------------------------------------------------------------------------------
LEADERBOARD = """system,v1,v2,v3,v4
A,3,3,1,1
B,2,3,2,
C,2,2,2,2
D,1,1,2,
"""


def _invoke(*args: str):
    return run_cli("aggregate", *args)


def test_cli_rule_option_ties(tmp_path: Path) -> None:
    table = tmp_path / "board.csv"
    table.write_text(LEADERBOARD, encoding="utf-8")
    specs = ["borda", "borda:ties=low", "borda:ties=high", "dowdall:ties=high",
             "plurality:ties=low", "baldwin:ties=low"]
    result = _invoke(str(table), *[a for s in specs for a in ("--rule", s)], "--json")
    assert result.returncode == 0, result.stderr
    out = {o["rule"]: o for o in json.loads(result.stdout)}
    assert list(out) == specs
    assert out["borda"]["scores"] == {"A": 5.5, "B": 6, "C": 5.5, "D": 2}
    assert out["borda:ties=low"]["scores"] == {"A": 5, "B": 4, "C": 4, "D": 1}
    assert out["borda:ties=low"]["winners"] == ["A"]
    assert out["borda:ties=low"]["ties"] == [["B", "C"]]
    assert out["borda:ties=high"]["winners"] == ["B"]
    assert out["dowdall:ties=high"]["scores"] == pytest.approx(
        {s: float(v) for s, v in HAND[("dowdall", "high")].items()})
    assert out["plurality:ties=low"]["ties"] == [["A", "C"], ["B", "D"]]
    assert out["baldwin:ties=low"]["ranking"] == ["A", "B", "C", "D"]
    assert out["baldwin:ties=low"]["ties"] == [["B", "C"]]


def test_cli_bad_convention_exits_2_and_list_rules_shows_the_option(tmp_path: Path) -> None:
    table = tmp_path / "board.csv"
    table.write_text(LEADERBOARD, encoding="utf-8")
    bad = _invoke(str(table), "--rule", "borda:ties=lowest")
    assert bad.returncode == 2
    assert "ties must be one of average, low, high" in bad.stderr
    listed = _invoke("--list-rules", "--json")
    assert listed.returncode == 0
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    for name in ("plurality", "borda", "dowdall", "baldwin"):
        assert "ties" in rows[name]["options"], name
    text = _invoke("--list-rules").stdout
    assert "[options: ties]" in text and "ties=average" in text
