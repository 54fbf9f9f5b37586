"""Item response theory for benchmarks and metrics: which items rank the systems, and how well.

Responses are an (items, systems) matrix of 0/1 outcomes with NaN for missing, the layout of
every score matrix in meta_eval. Systems are the respondents ("persons") and items the items:
each system answers every item, and the model explains its outcomes by one ability per
system and a difficulty (and discrimination) per item.

Models (logistic, slope-intercept form z = a_i theta_j + c_i, difficulty b_i = -c_i / a_i):

    2PL (Birnbaum 1968):  P(y_ij = 1) = 1 / (1 + exp(-a_i (theta_j - b_i)))
    Rasch / 1PL (Rasch 1960): a_i = a for every item. Reported on the Rasch logit scale
        (discrimination 1, ability a theta, difficulty a b), where the raw score of a system
        is a sufficient statistic for its ability: equal raw scores give equal abilities.

Estimation: marginal maximum likelihood by EM with Gauss-Hermite quadrature (Bock & Aitkin
1981, "Marginal maximum likelihood estimation of item parameters: application of an EM
algorithm"), as mirt and girth do: abilities are integrated out against N(0, 1) on
`quadrature` nodes, the E-step gives each system's posterior over the nodes, and the M-step
fits each item's (a_i, c_i) to the expected counts by Newton steps (Fisher scoring, exact for
the logistic link). With few respondents (a benchmark has ~20 systems) an item whose outcomes
the systems' order separates perfectly has an infinite ML slope, so the M-step maximises the
posterior under weak priors (Bayes modal estimation, Mislevy 1986):

    a_i ~ N(1, PRIOR_SLOPE_SD^2)  (normal, not log-normal: a negative slope must be able to
                                   show, it flags a broken or mislabelled item)
    c_i ~ N(0, PRIOR_INTERCEPT_SD^2)

Abilities given the items: maximum likelihood by Newton, with standard error
1 / sqrt(I(theta)), I(theta) = sum_i a_i^2 P_i (1 - P_i) over the items the system answered
(test information; Lord 1980), and a Wald interval theta +- z SE.

Stated rules for degenerate input (never a silent NaN):
- an item every system answered alike (all 1 or all 0, or answered by fewer than 2 systems)
  has no finite difficulty and carries no information about the ranking: it is left out of
  the fit (`informative` False) and reported as such;
- a system whose outcomes on the informative items are perfectly separable (all 1, or all 0;
  for a 2PL, 1 exactly on the positive-slope items) has an infinite ML ability: `extreme` is
  +1 or -1, its ability and SE are NaN by design, and it ranks above (below) every finite one;
- no informative item at all (a constant metric) is a ValueError.

Item selection (a subset of n items that keeps the system ranking; the aim of tinyBenchmarks,
Polo et al. 2024, and metabench, Kipnis et al. 2024): greedy D-optimal design on the Fisher
information at the systems' fitted abilities: add the item that most increases
sum_j log(eps + I_S(theta_j)), i.e. most shrinks the sum of the log variances of the ability
estimates, so every system (not only the average one) is measured. The ranking on the subset
(abilities re-estimated from the subset's items only) is compared with the full ranking by
Kendall's tau-b.

Power (from the fitted model, not a bootstrap): with n items like these, SE_j(n) =
1 / sqrt(n i_j), i_j the mean item information at theta_j, so two systems d = theta_j - theta_k
apart are separated by a two-sided Wald test at level alpha with power 1 - beta when

    n >= (z_{1 - alpha/2} + z_{1 - beta})^2 (1/i_j + 1/i_k) / d^2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.numerics import finite_or_none

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray, IntArray


MODELS = ("rasch", "2pl")
PRIOR_SLOPE_MEAN = 1.0
PRIOR_SLOPE_SD = 2.0
PRIOR_INTERCEPT_SD = 4.0
#: A 2PL slope below this flags an item: it barely (or wrongly) separates the systems.
FLAG_DISCRIMINATION = 0.2


@dataclass(frozen=True)
class ItemFit:
    """Item parameters of one fitted model (arrays over all items; NaN where not informative)."""

    model: str
    difficulty: FloatArray
    discrimination: FloatArray
    informative: BoolArray  # entered the fit
    loglik: float  # marginal log-likelihood (without the priors) at the estimate
    iterations: int
    converged: bool
    #: Rasch: the standard deviation of abilities in logits (the common slope of the 1PL).
    scale: float = 1.0


@dataclass(frozen=True)
class Abilities:
    """ML abilities of the systems with standard errors; see the module for `extreme`."""

    ability: FloatArray
    se: FloatArray
    extreme: IntArray  # +1 all right, -1 all wrong, 0 finite
    information: FloatArray  # test information at the estimate

    def interval(self, ci: float = 0.95) -> tuple[FloatArray, FloatArray]:
        z = _z(0.5 + ci / 2)
        return self.ability - z * self.se, self.ability + z * self.se

    def order(self) -> IntArray:
        """System indices best first: +inf extremes, finite abilities, -inf extremes."""
        return np.argsort(-self.sort_key(), kind="stable")

    def sort_key(self) -> FloatArray:
        big = np.nanmax(np.abs(self.ability)) + 1 if np.isfinite(self.ability).any() else 1.0
        return np.where(self.extreme == 0, self.ability, self.extreme * big)


def _z(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def binary_responses(*, metric: FloatArray, threshold: float) -> FloatArray:
    """y = 1 where metric >= threshold, 0 below, NaN where the metric is missing."""
    metric = np.asarray(metric, dtype=float)
    out = (metric >= threshold).astype(float)
    out[~np.isfinite(metric)] = np.nan
    return out


def agreement_responses(*, human: FloatArray, metric: FloatArray) -> FloatArray:
    """y_ij = 1 where, within item i, the metric orders system j against the other systems as
    people do in at least half of j's pairs (pairs people rate equal, or with a missing score,
    do not count; a metric tie counts as a disagreement); NaN where j has no such pair."""
    human = np.asarray(human, dtype=float)
    metric = np.asarray(metric, dtype=float)
    if human.shape != metric.shape or human.ndim != 2:
        raise ValueError("human and metric must be (items, systems) matrices of one shape")
    out = np.empty(human.shape)
    step = max(1, 2_000_000 // max(1, human.shape[1] ** 2))  # items per chunk: bounded memory
    for start in range(0, human.shape[0], step):
        hh, mm = human[start:start + step], metric[start:start + step]
        h = hh[:, :, None] - hh[:, None, :]
        m = mm[:, :, None] - mm[:, None, :]
        usable = np.isfinite(h) & np.isfinite(m) & (h != 0)
        agree = (np.sign(h) == np.sign(m)) & usable
        pairs = usable.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = agree.sum(axis=2) / pairs
        chunk = (share >= 0.5).astype(float)
        chunk[pairs == 0] = np.nan
        out[start:start + step] = chunk
    return out


def _check_responses(responses: FloatArray) -> FloatArray:
    y = np.asarray(responses, dtype=float)
    if y.ndim != 2:
        raise ValueError(f"responses must be an (items, systems) matrix, got shape {y.shape}")
    seen = y[np.isfinite(y)]
    if seen.size and not np.isin(seen, (0.0, 1.0)).all():
        raise ValueError("responses must be 0, 1 or NaN")
    if np.isinf(y).any():
        raise ValueError("responses must be 0, 1 or NaN")
    return y


def informative_items(*, responses: FloatArray) -> BoolArray:
    """Items answered by at least 2 systems, not all alike."""
    y = _check_responses(responses)
    ok = np.isfinite(y)
    n = ok.sum(axis=1)
    ones = np.where(ok, y, 0).sum(axis=1)
    return (n >= 2) & (ones > 0) & (ones < n)


def quadrature(points: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Hermite nodes and weights (summing to 1) for a standard normal."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(points)
    return nodes, weights / weights.sum()


def _log_sigmoid(z: FloatArray) -> tuple[FloatArray, FloatArray]:
    """log P and log (1 - P) for P = 1 / (1 + exp(-z))."""
    return -np.logaddexp(0.0, -z), -np.logaddexp(0.0, z)


def _posterior(y1: FloatArray, y0: FloatArray, slope: FloatArray, intercept: FloatArray,
               nodes: FloatArray, log_weights: FloatArray) -> tuple[FloatArray, float]:
    """Each system's posterior over the nodes (systems, nodes) and the marginal loglik."""
    z = slope[:, None] * nodes[None, :] + intercept[:, None]
    log_p, log_q = _log_sigmoid(z)
    joint = y1.T @ log_p + y0.T @ log_q + log_weights[None, :]
    top = joint.max(axis=1, keepdims=True)
    marginal = top[:, 0] + np.log(np.exp(joint - top).sum(axis=1))
    return np.exp(joint - marginal[:, None]), float(marginal.sum())


def log_posterior(*, responses: FloatArray, slope: FloatArray, intercept: FloatArray,
                  points: int = 41, common: bool = False) -> float:
    """The objective `fit_items` maximises: the marginal log-likelihood of `responses`
    (informative items only) under slope-intercept parameters, plus the log priors of the
    module (`common`: one slope shared by all items, as in the Rasch fit, counted once)."""
    y = _check_responses(responses)
    nodes, weights = quadrature(points)
    _, loglik = _posterior(np.where(y == 1, 1.0, 0.0), np.where(y == 0, 1.0, 0.0),
                           np.asarray(slope, float), np.asarray(intercept, float), nodes,
                           np.log(weights))
    return loglik + _log_prior(np.asarray(slope, float), np.asarray(intercept, float),
                               common=common)


def _log_prior(slope: FloatArray, intercept: FloatArray, *, common: bool) -> float:
    slopes = slope[:1] if common else slope
    return float(-0.5 * (((slopes - PRIOR_SLOPE_MEAN) / PRIOR_SLOPE_SD) ** 2).sum()
                 - 0.5 * ((intercept / PRIOR_INTERCEPT_SD) ** 2).sum())


def fit_items(*, responses: FloatArray, model: str = "2pl", points: int = 41,
              max_iter: int = 5000, tol: float = 1e-8) -> ItemFit:
    """Item parameters by MML-EM (Bock & Aitkin 1981) with the priors of the module.

    `responses`: (items, systems) of 0/1/NaN. `model`: "2pl" (Birnbaum 1968) or "rasch"
    (Rasch 1960; one common slope, reported on the logit scale). Stops when no parameter
    moves by more than `tol` in an EM cycle. Items that are not informative are left out
    (NaN parameters)."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; use one of {MODELS}")
    y_all = _check_responses(responses)
    keep = informative_items(responses=y_all)
    if not keep.any():
        raise ValueError("no informative item: every item was answered alike by every "
                         "system (or by fewer than 2)")
    y = y_all[keep]
    y1 = np.where(y == 1, 1.0, 0.0)
    y0 = np.where(y == 0, 1.0, 0.0)
    seen = y1 + y0
    nodes, weights = quadrature(points)
    log_weights = np.log(weights)
    # Start: slope 1, intercept from the item's share of ones.
    share = (y1.sum(axis=1) + 0.5) / (seen.sum(axis=1) + 1.0)
    intercept = np.log(share / (1 - share)) * 1.7
    slope = np.ones(len(y))
    loglik = -np.inf
    converged = False
    iteration = 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 (reported after the loop)
        post, loglik = _posterior(y1, y0, slope, intercept, nodes, log_weights)
        right = y1 @ post  # expected count of ones at each node (items, nodes)
        total = seen @ post  # expected count of answers at each node
        new_slope, new_intercept = _m_step(right, total, slope, intercept, nodes,
                                           common=model == "rasch")
        change = max(np.abs(new_slope - slope).max(), np.abs(new_intercept - intercept).max())
        slope, intercept = new_slope, new_intercept
        if change < tol:
            converged = True
            break
    _, loglik = _posterior(y1, y0, slope, intercept, nodes, log_weights)
    difficulty = np.full(len(y_all), np.nan)
    discrimination = np.full(len(y_all), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        difficulty[keep] = -intercept / slope
    discrimination[keep] = slope
    scale = 1.0
    if model == "rasch":
        scale = float(slope[0])
        difficulty[keep] = -intercept  # a (theta - b) = a theta - a b: logit scale
        discrimination[keep] = 1.0
    return ItemFit(model=model, difficulty=difficulty, discrimination=discrimination,
                   informative=keep, loglik=loglik, iterations=iteration,
                   converged=converged, scale=scale)


def _m_step(right: FloatArray, total: FloatArray, slope: FloatArray, intercept: FloatArray,
            nodes: FloatArray, *, common: bool, steps: int = 3
            ) -> tuple[FloatArray, FloatArray]:
    """Newton (Fisher scoring) steps on each item's expected complete-data log posterior."""
    slope, intercept = slope.copy(), intercept.copy()
    inv_va, inv_vc = PRIOR_SLOPE_SD ** -2.0, PRIOR_INTERCEPT_SD ** -2.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(slope[:, None] * nodes[None, :] + intercept[:, None])))
        resid = right - total * p
        w = total * p * (1 - p)
        g_c = resid.sum(axis=1) - intercept * inv_vc
        h_cc = w.sum(axis=1) + inv_vc
        g_a_items = resid @ nodes
        h_aa_items = w @ nodes ** 2
        h_ac_items = w @ nodes
        if common:
            # Slope shared: update the intercepts, then the slope (a block coordinate step).
            intercept = intercept + np.clip(g_c / h_cc, -2, 2)
            g_a = g_a_items.sum() - (slope[0] - PRIOR_SLOPE_MEAN) * inv_va
            h_aa = h_aa_items.sum() + inv_va
            slope = np.full_like(slope, slope[0] + float(np.clip(g_a / h_aa, -1, 1)))
            continue
        g_a = g_a_items - (slope - PRIOR_SLOPE_MEAN) * inv_va
        h_aa = h_aa_items + inv_va
        det = h_aa * h_cc - h_ac_items ** 2
        step_a = (h_cc * g_a - h_ac_items * g_c) / det
        step_c = (h_aa * g_c - h_ac_items * g_a) / det
        slope = slope + np.clip(step_a, -1, 1)
        intercept = intercept + np.clip(step_c, -2, 2)
    return slope, intercept


def _slope_intercept(fit: ItemFit) -> tuple[FloatArray, FloatArray]:
    """(slope, intercept) of every item on the fit's own scale (NaN where not informative)."""
    return fit.discrimination, -fit.discrimination * fit.difficulty


def item_information(*, ability: FloatArray, discrimination: FloatArray,
                     difficulty: FloatArray) -> FloatArray:
    """Fisher information of each item at each ability: a_i^2 P_ij (1 - P_ij), (items,
    systems); 0 for an item with NaN parameters."""
    a = np.nan_to_num(np.asarray(discrimination, float))[:, None]
    b = np.nan_to_num(np.asarray(difficulty, float))[:, None]
    p = 1.0 / (1.0 + np.exp(-a * (np.asarray(ability, float)[None, :] - b)))
    return a ** 2 * p * (1 - p)


def estimate_abilities(*, responses: FloatArray, discrimination: FloatArray,
                       difficulty: FloatArray, max_iter: int = 100,
                       tol: float = 1e-10) -> Abilities:
    """ML ability of each system given the item parameters, with SE = 1/sqrt(I(theta)).

    Items with NaN parameters and missing responses are ignored. A system whose outcomes
    are separable (see the module) is `extreme` with NaN ability and SE."""
    y = _check_responses(responses)
    a = np.asarray(discrimination, dtype=float)
    b = np.asarray(difficulty, dtype=float)
    usable = np.isfinite(a) & np.isfinite(b) & (a != 0)
    y = y[usable]
    a, b = a[usable], b[usable]
    seen = np.isfinite(y)
    ones = np.where(seen, y, 0.0)
    positive = (a > 0)[:, None]
    # +inf: 1 on every positive-slope item and 0 on every negative one answered; -inf: reverse
    high = np.all(~seen | ((ones == 1) == positive), axis=0)
    low = np.all(~seen | ((ones == 1) != positive), axis=0)
    answered = seen.any(axis=0)
    extreme = np.where(high & answered, 1, np.where(low & answered, -1, 0))
    theta = np.zeros(y.shape[1])
    mask = seen.astype(float)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
        grad = (mask * (ones - p) * a[:, None]).sum(axis=0)
        info = (mask * p * (1 - p) * a[:, None] ** 2).sum(axis=0)
        step = np.where((extreme == 0) & (info > 0), grad / np.where(info > 0, info, 1), 0.0)
        step = np.clip(step, -1.0, 1.0)
        theta = theta + step
        if np.abs(step).max(initial=0.0) < tol:
            break
    p = 1.0 / (1.0 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    info = (mask * p * (1 - p) * a[:, None] ** 2).sum(axis=0)
    finite = (extreme == 0) & (info > 0)
    ability = np.where(finite, theta, np.nan)
    with np.errstate(divide="ignore"):
        se = np.where(finite, 1.0 / np.sqrt(np.where(info > 0, info, 1)), np.nan)
    return Abilities(ability=ability, se=se, extreme=extreme.astype(int),
                     information=np.where(finite, info, 0.0))


def kendall_tau(x: FloatArray, y: FloatArray) -> float:
    """Kendall's tau-b between two score vectors (scipy)."""
    from scipy.stats import kendalltau

    value = kendalltau(x, y).statistic
    return float(value)


@dataclass(frozen=True)
class Selection:
    """A recommended item subset and how well it keeps the ranking."""

    items: IntArray  # indices into all items, in the order chosen
    tau: float  # Kendall tau-b of the subset's ranking against the full one
    random_tau: float  # mean over `draws` random subsets of the same size
    random_tau_sd: float
    draws: int


def select_items(*, responses: FloatArray, fit: ItemFit, abilities: Abilities, size: int,
                 seed: int = 0, draws: int = 20, eps: float = 1e-3,
                 exclude: BoolArray | None = None) -> Selection:
    """Greedy D-optimal subset of `size` informative items (see the module), with Kendall
    tau-b between the subset's ranking and the full ranking, and the same for random subsets
    of the same candidates (the baseline a selection must beat). Items where `exclude` is
    True (e.g. flagged ones) are never chosen."""
    y = _check_responses(responses)
    allowed = fit.informative if exclude is None else fit.informative & ~np.asarray(exclude)
    candidates = np.flatnonzero(allowed)
    if candidates.size == 0:
        raise ValueError("no candidate item to select from")
    if size < 1:
        raise ValueError("subset size must be at least 1")
    size = min(size, candidates.size)
    finite = abilities.extreme == 0
    a, b = _scale_params(fit)
    info = item_information(ability=abilities.ability[finite], discrimination=a[candidates],
                            difficulty=b[candidates])
    current = np.full(info.shape[1], eps)
    chosen: list[int] = []
    free = np.ones(candidates.size, dtype=bool)
    for _ in range(size):
        gain = np.log(current[None, :] + info).sum(axis=1)
        gain[~free] = -np.inf
        best = int(np.argmax(gain))
        chosen.append(best)
        free[best] = False
        current = current + info[best]
    items = candidates[np.array(chosen, dtype=int)]
    full = abilities.sort_key()
    tau = _subset_tau(y, a, b, items, full)
    rng = np.random.default_rng(seed)
    taus = [_subset_tau(y, a, b, rng.choice(candidates, size, replace=False), full)
            for _ in range(draws)]
    return Selection(items=items, tau=tau, random_tau=float(np.nanmean(taus)),
                     random_tau_sd=float(np.nanstd(taus)), draws=draws)


def _scale_params(fit: ItemFit) -> tuple[FloatArray, FloatArray]:
    """Discrimination and difficulty on the scale abilities are estimated on (the fit's own:
    for a Rasch fit, the logit scale with slope 1)."""
    return fit.discrimination, fit.difficulty


def _subset_tau(y: FloatArray, a: FloatArray, b: FloatArray, items: IntArray,
                full: FloatArray) -> float:
    sub = estimate_abilities(responses=y[items], discrimination=a[items], difficulty=b[items])
    return kendall_tau(sub.sort_key(), full)


@dataclass(frozen=True)
class PairPower:
    better: int
    worse: int
    difference: float
    z: float
    p_value: float
    separated: bool
    items_needed: float  # inf when the two abilities are equal


@dataclass
class Power:
    alpha: float
    power: float
    top_k: int
    items_now: int
    pairs: list[PairPower] = field(default_factory=list)

    @property
    def items_needed(self) -> float:
        """Items (like the present ones) needed for every pair: the largest pair's need."""
        return max((p.items_needed for p in self.pairs), default=0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": self.alpha, "power": self.power, "top_k": self.top_k,
                "items_now": self.items_now, "items_needed": finite_or_none(self.items_needed),
                "pairs": [{**p.__dict__, "items_needed": finite_or_none(p.items_needed)}
                          for p in self.pairs]}




def top_k_power(*, fit: ItemFit, abilities: Abilities, top_k: int, alpha: float = 0.05,
                power: float = 0.8) -> Power:
    """Items needed to separate each adjacent pair among the top `top_k` systems, and the
    k-th from the (k+1)-th (so the top-k set is told apart from the rest), by the fitted
    model's Wald test (formula in the module). Systems with an extreme (infinite) ability
    are left out: no finite difference is defined for them."""
    from scipy.stats import norm

    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must lie in (0, 1)")
    a, b = _scale_params(fit)
    finite = np.flatnonzero(abilities.extreme == 0)
    order = finite[np.argsort(-abilities.ability[finite], kind="stable")]
    info = item_information(ability=abilities.ability, discrimination=a[fit.informative],
                            difficulty=b[fit.informative])
    mean_info = info.mean(axis=0)
    z_need = norm.ppf(1 - alpha / 2) + norm.ppf(power)
    out = Power(alpha=alpha, power=power, top_k=top_k, items_now=int(fit.informative.sum()))
    for rank in range(min(top_k, order.size - 1)):
        j, k = int(order[rank]), int(order[rank + 1])
        diff = float(abilities.ability[j] - abilities.ability[k])
        se = float(np.hypot(abilities.se[j], abilities.se[k]))
        z = diff / se
        p_value = float(2 * norm.sf(abs(z)))
        spread = 1 / mean_info[j] + 1 / mean_info[k]
        needed = float(np.ceil(z_need ** 2 * spread / diff ** 2)) if diff > 0 else np.inf
        out.pairs.append(PairPower(j, k, diff, z, p_value, p_value < alpha, needed))
    return out
