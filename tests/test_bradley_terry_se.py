"""Bradley-Terry's observed-information covariance against statsmodels' binomial GLM (the
plain model is a logistic regression on e_i - e_j) and, with Davidson's ties, the coverage of
its Wald intervals in a seeded simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm

from meta_eval.aggregation.rating import (
    bradley_terry_covariance,
    fit_bradley_terry,
    fit_order_effect,
)


def _glm(wins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta (system 0 the reference, 0) and the covariance of theta_i - theta_0."""
    n = wins.shape[0]
    rows, outcome = [], []
    for i in range(n):
        for j in range(i + 1, n):
            if wins[i, j] + wins[j, i] == 0:
                continue
            x = np.zeros(n)
            x[i], x[j] = 1.0, -1.0
            rows.append(x[1:])
            outcome.append([wins[i, j], wins[j, i]])
    fit = sm.GLM(np.array(outcome), np.array(rows), family=sm.families.Binomial()).fit(
        tol=1e-14, maxiter=200)
    # the covariance from the model's Hessian at the estimate (cov_params carries the weights
    # of IRLS's last step, one iteration behind the estimate)
    info = -np.asarray(fit.model.hessian(fit.params))
    return np.concatenate([[0.0], fit.params]), np.linalg.inv(info)


@pytest.mark.parametrize("seed", range(8))
def test_plain_covariance_matches_the_glm(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    strength = rng.normal(scale=[0.5, 2.0, 0.1][seed % 3], size=n)
    games = rng.integers(1, [5, 40, 2000][seed % 3], size=(n, n))
    p = 1.0 / (1.0 + np.exp(-(strength[:, None] - strength[None, :])))
    wins = np.triu(rng.binomial(np.triu(games, 1), p), 1).astype(float)
    wins = wins + np.triu(np.triu(games, 1) - wins, 1).T
    wins += 1.0 - np.eye(n)  # every pair won both ways: the MLE exists
    theta_glm, cov_glm = _glm(wins)
    theta, _, converged, _ = fit_bradley_terry(wins, np.zeros((n, n)))
    assert converged
    assert theta - theta[0] == pytest.approx(theta_glm, abs=1e-6)
    cov = bradley_terry_covariance(wins, np.zeros((n, n)), theta_glm - theta_glm.mean())
    contrast = cov[1:, 1:] - cov[1:, :1] - cov[:1, 1:] + cov[0, 0]  # of theta_i - theta_0
    assert contrast == pytest.approx(cov_glm, rel=1e-9, abs=1e-15)
    assert cov.sum(axis=0) == pytest.approx(np.zeros(n), abs=1e-9)  # centred theta


def test_davidson_interval_coverage() -> None:
    rng = np.random.default_rng(1970)
    theta_true = np.array([0.6, 0.0, -0.6])
    nu = 0.8
    n, games, reps = 3, 40, 800
    covered = 0
    for _ in range(reps):
        wins, ties = np.zeros((n, n)), np.zeros((n, n))
        for i in range(n):
            for j in range(i + 1, n):
                a, b = math.exp(theta_true[i]), math.exp(theta_true[j])
                d = a + b + nu * math.sqrt(a * b)
                w, t, lose = rng.multinomial(games, [a / d, nu * math.sqrt(a * b) / d, b / d])
                wins[i, j], wins[j, i], ties[i, j] = w, lose, t
                ties[j, i] = t
        theta, fitted_nu, converged, _ = fit_bradley_terry(wins, ties)
        assert converged
        cov = bradley_terry_covariance(wins, ties, theta, fitted_nu)
        se = math.sqrt(cov[0, 0] + cov[2, 2] - 2 * cov[0, 2])
        covered += abs(theta[0] - theta[2] - 1.2) <= 1.959963984540054 * se
    assert abs(covered / reps - 0.95) < 4 * math.sqrt(0.05 * 0.95 / reps) + 0.01


def test_ties_need_a_tie_parameter() -> None:
    with pytest.raises(ValueError, match="nu"):
        bradley_terry_covariance(np.ones((2, 2)), np.ones((2, 2)), np.zeros(2), 0.0)


def _order_glm(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """theta (system 0 the reference), h, and the covariance of (theta_1.. - theta_0, h)."""
    n = first.shape[0]
    rows, outcome = [], []
    for i in range(n):
        for j in range(n):
            if i != j and first[i, j] + second[i, j] > 0:
                x = np.zeros(n)
                x[i], x[j] = 1.0, -1.0
                rows.append(np.concatenate([x[1:], [1.0]]))
                outcome.append([first[i, j], second[i, j]])
    fit = sm.GLM(np.array(outcome), np.array(rows), family=sm.families.Binomial()).fit(
        tol=1e-14, maxiter=200)
    cov = np.linalg.inv(-np.asarray(fit.model.hessian(fit.params)))
    return np.concatenate([[0.0], fit.params[:-1]]), float(fit.params[-1]), cov


@pytest.mark.parametrize("seed", range(6))
def test_order_effect_matches_the_glm(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    strength = rng.normal(size=n)
    bias = [0.0, 0.8, -1.5][seed % 3]
    games = rng.integers(3, 60, size=(n, n)) * (1 - np.eye(n, dtype=int))
    p = 1.0 / (1.0 + np.exp(-(strength[:, None] - strength[None, :] + bias)))
    first = rng.binomial(games, p).astype(float)
    second = games - first
    first += 1.0 - np.eye(n)  # both positions win, every system wins and loses
    second += 1.0 - np.eye(n)
    theta, h, cov = fit_order_effect(first, second)
    theta_glm, h_glm, cov_glm = _order_glm(first, second)
    assert h == pytest.approx(h_glm, rel=1e-9, abs=1e-12)
    assert theta - theta[0] == pytest.approx(theta_glm, rel=1e-9, abs=1e-12)
    # (theta_i - theta_0, h) = A (theta, h) with A the contrast map
    a = np.zeros((n, n + 1))
    a[: n - 1, 1:n] = np.eye(n - 1)
    a[: n - 1, 0] = -1.0
    a[n - 1, n] = 1.0
    assert a @ cov @ a.T == pytest.approx(cov_glm, rel=1e-9, abs=1e-15)


def test_order_effect_without_an_estimate() -> None:
    with pytest.raises(ValueError, match="no finite estimate"):
        fit_order_effect(np.array([[0.0, 3.0], [2.0, 0.0]]), np.zeros((2, 2)))


def test_order_effect_interval_coverage() -> None:
    rng = np.random.default_rng(2013)
    strength, bias, reps = np.array([0.5, 0.0, -0.5]), 0.4, 800
    games = 25 * (1 - np.eye(3, dtype=int))
    p = 1.0 / (1.0 + np.exp(-(strength[:, None] - strength[None, :] + bias)))
    covered = 0
    for _ in range(reps):
        first = rng.binomial(games, p).astype(float)
        _, h, cov = fit_order_effect(first, games - first)
        covered += abs(h - bias) <= 1.959963984540054 * math.sqrt(cov[3, 3])
    assert abs(covered / reps - 0.95) < 4 * math.sqrt(0.05 * 0.95 / reps) + 0.01
