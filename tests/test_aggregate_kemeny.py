"""Exact Kemeny-Young against brute force over every ordering."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from meta_eval.aggregation import Profile, agreement, kemeny, kemeny_dp, kemeny_local_search


def brute_force(support: np.ndarray) -> tuple[float, int, set[int]]:
    """Best agreement, number of optimal orderings, systems heading an optimal ordering."""
    n = support.shape[0]
    perms = np.array(list(itertools.permutations(range(n))))
    values = np.zeros(len(perms))
    for i, j in itertools.combinations(range(n), 2):
        values += support[perms[:, i], perms[:, j]]
    best = values.max()
    optimal = np.isclose(values, best, rtol=0, atol=1e-9)
    return float(best), int(optimal.sum()), set(perms[optimal, 0].tolist())


@pytest.mark.parametrize("n", range(1, 9))
def test_dp_matches_brute_force(n: int) -> None:
    rng = np.random.default_rng(n)
    for trial in range(3):
        # few score levels and integer weights: ties and several optimal orderings happen
        scores = rng.integers(0, 3 + trial, size=(7, n)).astype(float)
        scores[rng.random(scores.shape) < 0.1] = np.nan
        profile = Profile(systems=tuple(f"s{i}" for i in range(n)), scores=scores,
                          weights=rng.integers(1, 4, size=7).astype(float))
        support = profile.counts.support
        order, value, ways, heads = kemeny_dp(support)
        best, count, firsts = brute_force(support)
        assert sorted(order) == list(range(n))
        assert value == pytest.approx(best)
        assert agreement(support, order) == pytest.approx(best)
        assert ways == count
        assert set(heads) == firsts


def test_kemeny_rule_reports_exact_and_ties() -> None:
    profile = Profile(systems=("a", "b", "c"), scores=[[3, 2, 2], [3, 2, 2]])
    result = kemeny(profile)
    assert result.exact
    assert result.tiers == (("a",), ("b", "c"))  # b and c equal for every voter
    assert "2 optimal orderings" in result.note


def test_local_search_beyond_max_exact() -> None:
    rng = np.random.default_rng(7)
    n = 9
    scores = rng.normal(size=(15, n)) + np.linspace(0, 1.5, n)
    profile = Profile(systems=tuple(f"s{i}" for i in range(n)), scores=scores)
    approx = kemeny(profile, max_exact=5)
    assert not approx.exact and "approximate" in approx.note
    support = profile.counts.support
    best, _, _ = brute_force(support)
    start = list(np.argsort(-support.sum(axis=1), kind="stable"))
    order, value = kemeny_local_search(support, start)
    assert agreement(support, start) <= value <= best + 1e-9
    # a local optimum: no single move of one system improves the agreement
    for x in range(n):
        rest = [y for y in order if y != x]
        for q in range(n):
            moved = [*rest[:q], x, *rest[q:]]
            assert agreement(support, moved) <= value + 1e-9


def test_twelve_systems_exact_recovers_the_planted_order() -> None:
    rng = np.random.default_rng(12)
    scores = rng.normal(size=(200, 12)) + np.linspace(0, 2, 12)
    result = kemeny(Profile(systems=tuple(f"s{i:02d}" for i in range(12)), scores=scores))
    assert result.exact
    # a strong signal: the Kemeny order is the planted one, best (s11) first
    assert result.ranking[0] == "s11"
