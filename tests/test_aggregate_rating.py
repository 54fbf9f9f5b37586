"""Bradley-Terry (with Davidson ties) and order-independent Elo."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from meta_eval.aggregation import (
    Comparisons,
    Profile,
    bradley_terry,
    elo,
    elo_ratings,
    fit_bradley_terry,
)


def simulate(n: int, m: int, *, nu: float, seed: int) -> tuple[Comparisons, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    pa, pb = np.exp(theta[a]), np.exp(theta[b])
    tie = nu * np.sqrt(pa * pb)
    u = rng.random(m) * (pa + pb + tie)
    outcome = np.where(u < pa, 1.0, np.where(u < pa + tie, 0.5, 0.0))
    systems = tuple(f"s{i}" for i in range(n))
    return Comparisons(systems=systems, a=a, b=b, outcome=outcome), theta - theta.mean()


def hunter_mm(wins: np.ndarray, iterations: int = 20000) -> np.ndarray:
    """Plain Bradley-Terry by Hunter's (2004) MM iteration: the reference."""
    n = wins.shape[0]
    games = wins + wins.T
    p = np.ones(n)
    for _ in range(iterations):
        denom = (games / (p[:, None] + p[None, :])).sum(axis=1)
        p = wins.sum(axis=1) / denom
        p /= np.exp(np.log(p).mean())
    return np.log(p)


def test_plain_bradley_terry_matches_hunter_mm() -> None:
    comps, _ = simulate(8, 2000, nu=0.0, seed=1)
    counts = comps.counts
    assert counts.ties.sum() == 0
    theta, nu, converged, _ = fit_bradley_terry(counts.strict, counts.ties)
    assert converged and nu == 0.0
    np.testing.assert_allclose(theta, hunter_mm(counts.strict), atol=1e-6)


def test_davidson_ties_match_a_generic_optimiser() -> None:
    comps, _ = simulate(5, 1500, nu=0.6, seed=2)
    counts = comps.counts
    theta, nu, converged, _ = fit_bradley_terry(counts.strict, counts.ties)
    assert converged and counts.ties.sum() > 0

    def nll(params: np.ndarray) -> float:
        th, log_nu = params[:5], params[5]
        total = 0.0
        for i in range(5):
            for j in range(5):
                if i == j:
                    continue
                d = np.exp(th[i]) + np.exp(th[j]) + np.exp(log_nu + (th[i] + th[j]) / 2)
                total -= counts.strict[i, j] * (th[i] - np.log(d))
                if i < j:
                    total -= counts.ties[i, j] * (log_nu + (th[i] + th[j]) / 2 - np.log(d))
        return total

    ref = minimize(nll, np.zeros(6), method="Nelder-Mead",
                   options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 40000, "maxfev": 40000})
    np.testing.assert_allclose(theta, ref.x[:5] - ref.x[:5].mean(), atol=1e-4)
    assert nu == pytest.approx(np.exp(ref.x[5]), rel=1e-3)


def test_bradley_terry_recovers_strengths_and_ignores_duplication() -> None:
    comps, theta = simulate(20, 40000, nu=0.3, seed=3)
    result = bradley_terry(comps)
    est = np.array([result.scores[s] for s in comps.systems])
    assert np.corrcoef(est, theta)[0, 1] > 0.99
    assert float(result.note.split("nu = ")[1]) == pytest.approx(0.3, abs=0.05)
    doubled = Comparisons(systems=comps.systems, a=np.tile(comps.a, 2), b=np.tile(comps.b, 2),
                          outcome=np.tile(comps.outcome, 2))
    again = bradley_terry(doubled)
    np.testing.assert_allclose([again.scores[s] for s in comps.systems], est, atol=1e-5)


def test_bradley_terry_without_an_mle_says_so() -> None:
    # A beats everyone: the likelihood grows without bound as A's strength does
    comps = Comparisons(systems=("A", "B", "C"), a=[0, 0, 1, 2], b=[1, 2, 2, 1],
                        outcome=[1.0, 1.0, 1.0, 1.0])
    result = bradley_terry(comps)
    assert result.winners == ("A",)
    assert "does not exist" in result.note and "penalty" in result.note


def test_bradley_terry_on_a_profile_uses_each_ballot_pair() -> None:
    profile = Profile.from_rankings([["a", "b", "c"]] * 3 + [["c", "b", "a"]])
    result = bradley_terry(profile)
    assert result.ranking == ["a", "b", "c"]
    assert result.scores["b"] == pytest.approx(0.0, abs=1e-6)  # symmetric middle


def plain_elo(n: int, games: list[tuple[int, int, float, float]], k: float) -> np.ndarray:
    r = np.full(n, 1000.0)
    for a, b, s, w in games:
        e = 1 / (1 + 10 ** ((r[b] - r[a]) / 400))
        r[a] += k * w * (s - e)
        r[b] -= k * w * (s - e)
    return r


def test_elo_one_permutation_is_plain_sequential_elo() -> None:
    comps, _ = simulate(6, 300, nu=0.2, seed=4)
    a, b, s = comps.a.copy(), comps.b.copy(), comps.outcome.copy()
    swap = a > b
    a, b, s = np.where(swap, b, a), np.where(swap, a, b), np.where(swap, 1 - s, s)
    canon = np.lexsort((np.ones(len(a)), s, b, a))
    order = np.random.default_rng(5).permutation(len(a))
    games = [(a[canon][i], b[canon][i], s[canon][i], 1.0) for i in order]
    got = elo_ratings(6, comps.a, comps.b, comps.outcome, comps.weights, k=16,
                      permutations=1, seed=5)
    np.testing.assert_allclose(got, plain_elo(6, games, 16), atol=1e-9)


def test_elo_is_order_independent_and_ranks_the_strong_first() -> None:
    comps, theta = simulate(8, 4000, nu=0.1, seed=6)
    shuffle = np.random.default_rng(0).permutation(len(comps.a))
    shuffled = Comparisons(systems=comps.systems, a=comps.a[shuffle], b=comps.b[shuffle],
                           outcome=comps.outcome[shuffle])
    first, second = elo(comps, permutations=20), elo(shuffled, permutations=20)
    assert first.scores == second.scores
    assert first.ranking[0] == comps.systems[int(np.argmax(theta))]
    assert "order-independent" in first.note


@pytest.mark.parametrize("with_ties", [True, False])
def test_bradley_terry_gradient_and_hessian_are_exact(with_ties: bool) -> None:
    from scipy.optimize import approx_fprime

    from meta_eval.aggregation.rating import _bt_hessian, _bt_objective

    rng = np.random.default_rng(0)
    n = 5
    wins = rng.integers(0, 5, (n, n)).astype(float)
    np.fill_diagonal(wins, 0)
    ties = rng.integers(0, 3, (n, n)).astype(float)
    ties = ties + ties.T
    np.fill_diagonal(ties, 0)
    n_pair = wins + wins.T + ties
    args = (wins, ties, n_pair, with_ties, 0.1)
    x = rng.normal(size=n + 1 if with_ties else n)
    grad = _bt_objective(x, *args)[1]
    numeric = approx_fprime(x, lambda y: _bt_objective(y, *args)[0], 1e-7)
    np.testing.assert_allclose(grad, numeric, atol=1e-5)
    hess = _bt_hessian(x, *args)
    numeric = np.array([approx_fprime(x, lambda y, i=i: _bt_objective(y, *args)[1][i], 1e-6)
                        for i in range(len(x))])
    np.testing.assert_allclose(hess, numeric, atol=1e-4)
