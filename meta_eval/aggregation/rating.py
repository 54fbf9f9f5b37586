"""Rating models fitted to pairwise comparisons: Bradley-Terry (with ties) and Elo.

A profile is turned into comparisons first: each voter compares every pair of systems it
scored (a tie when it scored them equal), with the voter's weight.

Bradley-Terry (Bradley & Terry 1952) with ties by Davidson (1970): with strengths
pi_i = exp(theta_i) and a tie parameter nu >= 0,

    P(i beats j) = pi_i / D,   P(tie) = nu sqrt(pi_i pi_j) / D,
    D = pi_i + pi_j + nu sqrt(pi_i pi_j).

Without ties in the data nu = 0 (plain Bradley-Terry). theta is the maximum-likelihood
estimate from the aggregated win and tie counts (trust-region Newton on the exact
log-likelihood, gradient and Hessian; L-BFGS above 1,000 systems), centred to mean 0;
scores are theta in natural-log units. The MLE is finite only when the "won or tied
against" graph is strongly connected (Ford 1957; Hunter 2004). When it
is not (a system that never loses, say), the fit adds an L2 penalty prior/2 * sum theta^2 and
the note says so; `prior` > 0 asks for that penalty always.

Elo (Elo 1978): sequential updates r_a += K w (s - E), E = 1 / (1 + 10^((r_b - r_a)/400)),
which depend on the order of the games. Here the result is order-independent: comparisons
are put in a canonical order, then ratings are averaged over `permutations` random orders
drawn from a seeded generator (the average over permutations, as in Boubdir et al. 2023).
A comparison of weight w counts with K * w / mean(w).

Soft verdicts (a pairwise table's P(A is better)) count as fractional wins in
Bradley-Terry (P to A, 1 - P to B) and as the game score s = P in Elo. Both take
`bootstrap=N` (with `seed`, `level`): percentile intervals of the scores over N resamples of
the compared pairs (`meta_eval.aggregation.intervals`), in the result's extra.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import minimize
from scipy.sparse.csgraph import connected_components

from meta_eval.aggregation.base import RuleResult, scored_result
from meta_eval.aggregation.intervals import with_intervals
from meta_eval.aggregation.majority import _absent_last, _counts, _sub

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray, IntArray

FALLBACK_PRIOR = 0.01
NEWTON_MAX_SYSTEMS = 1000


def _bt_objective(params: FloatArray, wins: FloatArray, ties: FloatArray, n_pair: FloatArray,
                  with_ties: bool, prior: float) -> tuple[float, FloatArray]:
    n = wins.shape[0]
    theta = params[:n]
    half = (theta[:, None] - theta[None, :]) / 2.0
    if with_ties:
        eta = params[n]
        log_d = np.logaddexp(np.logaddexp(half, -half), eta)
    else:
        log_d = np.logaddexp(half, -half)
    ll = (wins * half).sum()  # sum_ij W_ij (theta_i - theta_j) / 2
    ll -= 0.5 * (n_pair * log_d).sum()
    slope = (np.exp(half - log_d) - np.exp(-half - log_d)) / 2.0
    grad_theta = 0.5 * (wins.sum(axis=1) - wins.sum(axis=0)) - (n_pair * slope).sum(axis=1)
    grad = [grad_theta]
    if with_ties:
        total_ties = ties.sum() / 2.0
        ll += eta * total_ties
        grad.append(np.array([total_ties - 0.5 * (n_pair * np.exp(eta - log_d)).sum()]))
    g = -np.concatenate(grad)
    nll = -ll
    # the likelihood ignores a common shift of theta: pin the mean at 0 (changes no estimate)
    centre = theta.sum()
    nll += 0.5 * centre**2
    g[:n] += centre
    if prior > 0:
        nll += 0.5 * prior * (theta**2).sum()
        g[:n] += prior * theta
    return float(nll), g


def _bt_hessian(params: FloatArray, wins: FloatArray, ties: FloatArray, n_pair: FloatArray,
                with_ties: bool, prior: float) -> FloatArray:
    """Exact Hessian of `_bt_objective`: a weighted graph Laplacian in theta (plus the row
    and column of the tie parameter)."""
    n = wins.shape[0]
    theta = params[:n]
    half = (theta[:, None] - theta[None, :]) / 2.0
    if with_ties:
        log_d = np.logaddexp(np.logaddexp(half, -half), params[n])
        q = np.exp(params[n] - log_d)
    else:
        log_d = np.logaddexp(half, -half)
        q = np.zeros_like(half)
    up, down = np.exp(half - log_d), np.exp(-half - log_d)
    curvature = n_pair * 0.25 * ((up + down) - (up - down) ** 2)
    np.fill_diagonal(curvature, 0.0)
    h_theta = np.diag(curvature.sum(axis=1)) - curvature + 1.0 + prior * np.eye(n)
    if not with_ties:
        return h_theta
    slope = (up - down) / 2.0
    cross = -(n_pair * slope * q).sum(axis=1)
    h = np.empty((n + 1, n + 1))
    h[:n, :n] = h_theta
    h[:n, n] = h[n, :n] = cross
    h[n, n] = 0.5 * (n_pair * q * (1.0 - q)).sum()
    return h


def fit_bradley_terry(wins: FloatArray, ties: FloatArray, *, prior: float = 0.0
                      ) -> tuple[FloatArray, float, bool, str]:
    """Fit Davidson's Bradley-Terry model to counts.

    wins[i, j]: weight of i beating j; ties[i, j] = ties[j, i]: weight of ties.
    Returns (theta centred to mean 0, nu, converged, message)."""
    n = wins.shape[0]
    with_ties = bool(ties.sum() > 0)
    n_pair = wins + wins.T + ties
    decided = wins.sum()
    if n == 0:
        return np.zeros(0), 0.0, True, ""
    if decided == 0:
        return np.zeros(n), float("inf") if with_ties else 0.0, True, "no decisive comparison"
    x0 = np.zeros(n + (1 if with_ties else 0))
    if with_ties:
        p_tie = (ties.sum() / 2.0) / (decided + ties.sum() / 2.0)
        x0[n] = np.log(2.0 * p_tie / (1.0 - p_tie))
    args = (wins, ties, n_pair, with_ties, prior)
    if n <= NEWTON_MAX_SYSTEMS:  # Newton steps in a trust region: a few exact iterations
        res = minimize(_bt_objective, x0, args=args, jac=True, hess=_bt_hessian,
                       method="trust-exact", options={"gtol": 1e-9, "maxiter": 1000})
    else:
        res = minimize(_bt_objective, x0, args=args, jac=True, method="L-BFGS-B",
                       options={"maxiter": 20000, "gtol": 1e-10, "ftol": 1e-15, "maxcor": 30})
    theta = res.x[:n] - res.x[:n].mean()
    nu = float(np.exp(res.x[n])) if with_ties else 0.0
    gnorm = float(np.abs(res.jac).max())
    scale = max(1.0, float(n_pair.sum()))
    converged = bool(res.success) or gnorm <= 1e-6 * scale
    return theta, nu, converged, "" if converged else str(res.message)


def bradley_terry_covariance(wins: FloatArray, ties: FloatArray, theta: FloatArray,
                             nu: float = 0.0) -> FloatArray:
    """The observed-information covariance of the estimates (theta, then log nu when there are
    ties): the pseudo-inverse of the Hessian of the negative log-likelihood at them (its
    null direction is the common shift of theta, so this is the covariance of theta centred
    to mean 0; Agresti 2013, "Categorical Data Analysis", 11.6), where the maximum-
    likelihood estimate exists (the won-or-tied graph strongly connected). The counts are taken as
    independent comparisons; meaningful for a maximum-likelihood fit (prior 0), not a
    penalised one. se(theta_i - theta_j) = sqrt(C_ii + C_jj - 2 C_ij)."""
    n = wins.shape[0]
    with_ties = bool(ties.sum() > 0)
    if with_ties and not nu > 0:
        raise ValueError("with ties in the data the tie parameter nu must be > 0")
    params = np.concatenate([theta, [np.log(nu)]]) if with_ties else np.asarray(theta, float)
    h = _bt_hessian(params, wins, ties, wins + wins.T + ties, with_ties, 0.0)
    # h is the objective's Hessian: the information plus the pin of the mean, 1 1' on theta.
    # The information's null space is the common shift v = (1, .., 1, 0) / sqrt(n), so its
    # pseudo-inverse is inv(information + v v') - v v' = inv(h + (1/n - 1) 1 1') - v v'.
    h[:n, :n] += 1.0 / n - 1.0
    shift = np.zeros(len(h))
    shift[:n] = 1.0 / np.sqrt(n)
    cov: FloatArray = (np.linalg.inv(h) - np.outer(shift, shift)).astype(float)
    return cov


def fit_order_effect(first: FloatArray, second: FloatArray
                     ) -> tuple[FloatArray, float, FloatArray]:
    """Bradley-Terry with an order effect (Agresti 2013, 11.6.3, the home-team advantage):
    with i shown first and j second, logit P(first wins) = theta_i - theta_j + h, so h > 0
    is a preference for the response shown first (a judge's position bias, one parameter).
    `first[i, j]`: comparisons with i first and j second that i won; `second[i, j]`: those
    that j won (ties left out). Returns (theta centred to mean 0, h, the observed-
    information covariance of (theta, h), theta's centred). Maximum likelihood by Newton in
    a trust region; ValueError when a system or the order effect has no finite estimate
    (every comparison won by one side)."""
    first = np.asarray(first, dtype=float)
    second = np.asarray(second, dtype=float)
    n = first.shape[0]
    total = first + second
    if n < 2 or not mle_exists(first + second.T, np.zeros((n, n))) or \
            first.sum() == 0 or second.sum() == 0:
        raise ValueError("no finite estimate: every system must have won and lost against "
                         "others (a strongly connected won-against graph) and both the first "
                         "and the second position must have won")

    def objective(params: FloatArray) -> tuple[float, FloatArray, FloatArray]:
        theta, h = params[:n], params[n]
        eta = theta[:, None] - theta[None, :] + h
        p = 1.0 / (1.0 + np.exp(-eta))
        nll = -float((first * -np.logaddexp(0.0, -eta) + second * -np.logaddexp(0.0, eta)
                      ).sum())
        resid = first - total * p
        grad = np.concatenate([-(resid.sum(axis=1) - resid.sum(axis=0)), [-resid.sum()]])
        w = total * p * (1.0 - p)
        hess = np.zeros((n + 1, n + 1))
        sym = w + w.T
        hess[:n, :n] = np.diag(sym.sum(axis=1)) - sym
        hess[:n, n] = hess[n, :n] = w.sum(axis=1) - w.sum(axis=0)
        hess[n, n] = w.sum()
        centre = theta.sum()
        return (nll + 0.5 * centre**2, grad + np.concatenate([np.full(n, centre), [0.0]]),
                hess + np.pad(np.ones((n, n)), ((0, 1), (0, 1))))

    def value_and_gradient(params: FloatArray) -> tuple[float, FloatArray]:
        value, grad, _ = objective(params)
        return value, grad

    def hessian(params: FloatArray) -> FloatArray:
        return objective(params)[2]

    res = minimize(value_and_gradient, np.zeros(n + 1), jac=True, hess=hessian,
                   method="trust-exact", options={"gtol": 1e-10, "maxiter": 1000})
    params = np.asarray(res.x, dtype=float)
    for _ in range(3):  # plain Newton steps from there: quadratic, to machine precision
        _, grad, hess = objective(params)
        params = params - np.linalg.solve(hess, grad)
    if not np.abs(objective(params)[1]).max() <= 1e-8 * max(1.0, float(total.sum())):
        raise RuntimeError(f"the order-effect fit did not converge: {res.message}")
    params[:n] -= params[:n].mean()
    info = objective(params)[2]
    info[:n, :n] -= 1.0  # the pin of the mean is not part of the likelihood
    cov: FloatArray = np.linalg.pinv(info, hermitian=True).astype(float)
    return params[:n], float(params[n]), cov


def mle_exists(wins: FloatArray, ties: FloatArray) -> bool:
    """Ford's condition: every system can be reached from every other along 'won or tied
    against' edges (the graph is strongly connected)."""
    n = wins.shape[0]
    if n <= 1:
        return True
    k, _ = connected_components((wins + ties) > 0, directed=True, connection="strong")
    return k == 1


def bradley_terry(data: object, prior: float = 0.0, bootstrap: int = 0, seed: int = 0,
                  level: float = 0.95) -> RuleResult:
    """Bradley-Terry (Davidson ties) maximum-likelihood strengths; score = log-strength.
    Where the maximum-likelihood estimate exists (prior 0), extra se (the observed-
    information standard error of each centred log-strength, `bradley_terry_covariance`)
    and wald_low / wald_high (estimate -+ z_{(1+level)/2} se). bootstrap=N: percentile
    intervals (`level`) over N seeded resamples of the compared pairs, in extra ci_low /
    ci_high."""
    result = _bradley_terry(data, prior, level=float(level))
    return with_intervals(result, data, lambda sample: _bradley_terry(sample, prior),
                          n=int(bootstrap), seed=int(seed), level=float(level))


def _wald(systems: tuple[str, ...], theta: FloatArray, cov: FloatArray, level: float
          ) -> dict[str, dict[str, float]]:
    """extra se, wald_low, wald_high per system from the covariance of theta."""
    from scipy.stats import norm

    se = np.sqrt(np.clip(np.diag(cov)[: len(theta)], 0.0, None))
    z = float(norm.ppf(0.5 + level / 2.0))
    return {"se": dict(zip(systems, se.tolist(), strict=True)),
            "wald_low": dict(zip(systems, (theta - z * se).tolist(), strict=True)),
            "wald_high": dict(zip(systems, (theta + z * se).tolist(), strict=True))}


def _bradley_terry(data: object, prior: float, level: float | None = None) -> RuleResult:
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    prior = float(prior)
    notes = []
    if prior < 0:
        raise ValueError("bradley-terry prior must be >= 0")
    if prior == 0 and not mle_exists(c.strict, c.ties):
        prior = FALLBACK_PRIOR
        notes.append("the maximum-likelihood estimate does not exist (the won-or-tied graph "
                     f"is not strongly connected): fitted with an L2 penalty {prior:g} on the "
                     "log-strengths")
    elif prior > 0:
        notes.append(f"penalised fit, L2 penalty {prior:g} on the log-strengths")
    theta, nu, converged, message = fit_bradley_terry(c.strict, c.ties, prior=prior)
    if not converged:
        raise RuntimeError(f"bradley-terry fit did not converge: {message}")
    if message:
        notes.append(message)
    notes.append("Davidson tie parameter nu = " + (f"{nu:.4g}" if c.ties.sum() > 0 else
                                                   "0 (no ties)"))
    extra = None
    if level is not None and prior == 0 and len(theta) > NEWTON_MAX_SYSTEMS:
        notes.insert(-1, f"no standard errors above {NEWTON_MAX_SYSTEMS} systems (use "
                         "bootstrap=N)")
    elif level is not None and prior == 0 and len(theta) > 1 and c.strict.sum() > 0:
        cov = bradley_terry_covariance(c.strict, c.ties, theta, nu)
        extra = _wald(c.systems, theta, cov, level)
        notes.insert(-1, f"se: observed information; wald: {level:.0%} Wald intervals")
    result = scored_result("bradley-terry", c.systems, theta, note="; ".join(notes), atol=1e-6)
    if extra is not None:
        result = replace(result, extra=extra)
    return _absent_last(result, counts.systems, present)


def elo_ratings(
    n_systems: int,
    a: IntArray,
    b: IntArray,
    outcome: FloatArray,
    weights: FloatArray,
    *,
    k: float = 4.0,
    scale: float = 400.0,
    initial: float = 1000.0,
    permutations: int = 100,
    seed: int = 0,
) -> FloatArray:
    """Elo ratings averaged over `permutations` seeded random orders of the comparisons,
    which are first put in a canonical order (so the input order does not matter)."""
    swap = a > b
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    outcome = np.where(swap, 1.0 - outcome, outcome)
    canonical = np.lexsort((weights, outcome, b, a))
    a, b, outcome, weights = a[canonical], b[canonical], outcome[canonical], weights[canonical]
    m = len(a)
    n_perm = max(1, int(permutations))
    ratings = np.full(n_perm * n_systems, float(initial))
    if m == 0:
        return ratings.reshape(n_perm, n_systems).mean(axis=0)
    mean_w = weights.mean()
    k_eff = k * (weights / mean_w if mean_w > 0 else weights)
    rng = np.random.default_rng(seed)
    order = np.empty((n_perm, m), dtype=np.int64)
    for r in range(n_perm):
        order[r] = rng.permutation(m)
    rows = np.arange(n_perm) * n_systems
    step = max(1, 1_000_000 // n_perm)
    for start in range(0, m, step):
        idx = order[:, start:start + step].T.copy()  # (games, permutations)
        flat_a = rows + a[idx]
        flat_b = rows + b[idx]
        s = outcome[idx]
        kk = k_eff[idx]
        for t in range(idx.shape[0]):
            ia, ib = flat_a[t], flat_b[t]
            expected = 1.0 / (1.0 + 10.0 ** ((ratings[ib] - ratings[ia]) / scale))
            delta = kk[t] * (s[t] - expected)
            ratings[ia] += delta
            ratings[ib] -= delta
    return ratings.reshape(n_perm, n_systems).mean(axis=0)


def elo(data: object, k: float = 4.0, permutations: int = 100, seed: int = 0,
        initial: float = 1000.0, scale: float = 400.0, bootstrap: int = 0,
        level: float = 0.95) -> RuleResult:
    """Elo ratings averaged over seeded random orders of the comparisons. bootstrap=N:
    percentile intervals (`level`) over N resamples of the compared pairs (seeded by
    `seed`), in extra ci_low / ci_high."""
    def fit(sample: object) -> RuleResult:
        return _elo(sample, k=k, permutations=permutations, seed=seed, initial=initial,
                    scale=scale)

    return with_intervals(fit(data), data, fit, n=int(bootstrap), seed=int(seed),
                          level=float(level))


def _elo(data: object, k: float, permutations: int, seed: int, initial: float,
         scale: float) -> RuleResult:
    comps = data.comparisons()  # type: ignore[attr-defined]
    present = data.present  # type: ignore[attr-defined]
    ratings = elo_ratings(comps.n_systems, comps.a, comps.b, comps.outcome, comps.weights,
                          k=float(k), scale=float(scale), initial=float(initial),
                          permutations=int(permutations), seed=int(seed))
    ratings = np.where(present, ratings, np.nan)
    note = (f"order-independent: mean over {int(permutations)} random orders (seed {int(seed)}) "
            f"of {len(comps.a)} comparisons; K={float(k):g}, scale {float(scale):g}, "
            f"initial {float(initial):g}")
    return scored_result("elo", comps.systems, ratings, note=note)
