"""Exact Kemeny beyond the dynamic programme: the linear-ordering integer programme (issue
18), checked against the dynamic programme where both run and the local search above."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from meta_eval.aggregation import (
    Profile,
    agreement,
    kemeny,
    kemeny_dp,
    kemeny_local_search,
    kemeny_milp,
)

KEMENY = sys.modules["meta_eval.aggregation.kemeny"]


def noisy_profile(n: int, voters: int, seed: int, noise: float = 0.1) -> Profile:
    """Close systems, scores rounded to integers (many ties), some missing."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.normal(size=n) * noise + rng.normal(size=(voters, n)))
    scores[rng.random(scores.shape) < 0.05] = np.nan
    return Profile(systems=tuple(f"s{i:02d}" for i in range(n)), scores=scores)


@pytest.mark.parametrize("n", range(2, 13))
def test_milp_equals_the_dynamic_programme(n):
    for seed in range(4):
        support = noisy_profile(n, voters=(5, 40)[seed % 2], seed=100 * n + seed).counts.support
        order, value, unique, decided, heads = kemeny_milp(support)
        dp_order, dp_value, ways, dp_heads = kemeny_dp(support)
        assert sorted(order) == list(range(n)) and decided
        assert value == dp_value == agreement(support, order)
        assert unique == (ways == 1)
        assert heads == sorted(dp_heads)
        if ways == 1:
            assert order == dp_order


@pytest.mark.parametrize("seed", range(3))
def test_milp_equals_the_dynamic_programme_at_18_systems(seed):
    support = noisy_profile(18, voters=15, seed=seed).counts.support
    _, value, unique, _, heads = kemeny_milp(support)
    _, dp_value, ways, dp_heads = kemeny_dp(support)
    assert value == dp_value and unique == (ways == 1) and heads == sorted(dp_heads)
    start = list(np.argsort(-support.sum(axis=1), kind="stable"))
    assert value >= kemeny_local_search(support, start)[1]


def test_milp_beats_the_local_search_on_a_noisy_profile():
    rng = np.random.default_rng(2)
    quality = rng.normal(size=18) * 0.1
    scores = np.round(quality[None] + rng.normal(size=(15, 18)))
    support = Profile(systems=tuple(f"s{i}" for i in range(18)), scores=scores).counts.support
    start = list(np.argsort(-support.sum(axis=1), kind="stable"))
    _, local = kemeny_local_search(support, start)
    _, value, *_ = kemeny_milp(support)
    assert value > local
    assert value == kemeny_dp(support)[1]


@pytest.mark.parametrize("seed", range(3))
def test_the_rule_beyond_16_systems_is_exact_and_reports_as_the_dp(seed, monkeypatch):
    profile = noisy_profile(17, voters=30, seed=50 + seed)
    got = kemeny(profile)
    assert got.exact and "integer programme" in got.note
    monkeypatch.setattr(KEMENY, "DP_SYSTEMS", 20)
    want = kemeny(profile)
    assert want.exact and "dynamic programme" in want.note
    assert got.winners == want.winners
    value = float(got.note.split("agreement ")[1].split(";")[0])
    assert value == float(want.note.split("agreement ")[1].split(";")[0])
    if "1 optimal ordering" in want.note:
        assert "1 optimal ordering" in got.note and got.tiers == want.tiers
    else:
        assert "several optimal orderings" in got.note


def test_tied_systems_share_a_tier_as_in_the_dp(monkeypatch):
    # s00 and s01 score alike for every voter: one tier, both winners.
    rng = np.random.default_rng(4)
    scores = np.round(rng.normal(size=(30, 18)) + np.linspace(0, 3, 18))
    scores[:, 0] = scores[:, 1] = scores.max(axis=1) + 1
    profile = Profile(systems=tuple(f"s{i:02d}" for i in range(18)), scores=scores)
    got = kemeny(profile)
    monkeypatch.setattr(KEMENY, "DP_SYSTEMS", 20)
    want = kemeny(profile)
    assert got.exact and got.tiers[0] == ("s00", "s01") == want.tiers[0]
    assert got.winners == want.winners == ("s00", "s01")
    assert "several optimal orderings" in got.note and "1 optimal ordering" not in want.note


def test_a_programme_that_does_not_finish_falls_back_to_the_labelled_approximation(
        monkeypatch):
    profile = noisy_profile(30, voters=100, seed=1)
    monkeypatch.setattr(KEMENY, "MILP_SECONDS", 1e-6)
    got = kemeny(profile)
    assert not got.exact and got.note.startswith("approximate: the integer programme")
    assert kemeny_milp(profile.counts.support, seconds=1e-6) is None


def test_past_max_exact_the_approximation_is_labelled_as_before():
    profile = noisy_profile(20, voters=20, seed=3)
    got = kemeny(profile, max_exact=18)
    assert not got.exact and "20 systems > max_exact=18" in got.note


def test_thirty_systems_are_solved_exactly():
    support = noisy_profile(30, voters=100, seed=2).counts.support
    order, value, _, decided, heads = kemeny_milp(support)
    assert decided and value == agreement(support, order) and order[0] in heads
    start = list(np.argsort(-support.sum(axis=1), kind="stable"))
    _, local = kemeny_local_search(support, start)
    assert value >= local
    # No single move improves on it (a necessary condition of optimality).
    assert kemeny_local_search(support, order)[1] == value
