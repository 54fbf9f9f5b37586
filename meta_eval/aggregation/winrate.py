"""Win rates from pairwise verdicts (AlpacaEval; Li et al. 2023, Dubois et al. 2024).

Each comparison of system s with an opponent is oriented to s's side, whichever of A and B
s was: p = P(s is better) (the verdict if s is A, 1 - the verdict if s is B). A "tie" is
0.5, a soft preference stays as it is. Over the n comparisons of s (with the baseline, or
with every opponent when there is no baseline):

    win rate            = 100 * mean(p)
    standard error      = 100 * sd(p) / sqrt(n),  sd with ddof = 1 (pandas' sem, as
                          AlpacaEval reports it); undefined (NaN) for n < 2
    discrete win rate   = 100 * (n_wins + n_draws / 2) / n, a win when p > 0.5, a draw when
                          p = 0.5, a loss when p < 0.5 (AlpacaEval's discrete_win_rate)

The standard error treats the comparisons as independent draws, as AlpacaEval does.

Length-controlled win rate (Dubois et al. 2024, "Length-Controlled AlpacaEval"): per system
s compared with the baseline, a logistic regression of p on

    logit p = theta_s + phi_s * tanh(delta / sd(delta)) [+ psi_s * gamma_x],

delta = len(s's output) - len(baseline's output), sd with ddof = 1 over s's comparisons
(alpaca_eval's glm_winrate; their delta is baseline minus model, which flips phi's sign only).
gamma_x is the instruction difficulty of item x, used when several systems were compared
with the baseline on common items: the item coefficients of one joint, L2-penalised fit
logit p = theta_s + phi_s * tanh(...) + gamma_x over every system (as alpaca_eval's notebook
computes instruction_difficulty). Soft targets count as weights p on "win" and 1 - p on
"loss" (the log-likelihood alpaca_eval optimises). The LC win rate is 100 * mean over s's
comparisons of the prediction with delta = 0, and its standard error, as alpaca_eval
reports it, 100 * sem of those predictions: with no instruction term they are all equal, so
it is undefined (NaN with a note) rather than a 0 that would look like certainty.
alpaca_eval itself fits with an L1 penalty chosen by cross-validation and fixed difficulties
from all its models; here the per-system fit is unpenalised by default (`penalty`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from meta_eval.aggregation.base import RuleResult, scored_result
from meta_eval.aggregation.tables import LENGTH_COLUMNS, TableError

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray, IntArray


# -- the statistics of one system's oriented preferences ---------------------------------------
def win_rate(*, preferences: FloatArray) -> float:
    """100 * mean P(system is better); NaN when there is no comparison."""
    p = np.asarray(preferences, dtype=float)
    return float(100.0 * p.mean()) if len(p) else float("nan")


def standard_error(*, preferences: FloatArray) -> float:
    """100 * sd(p, ddof=1) / sqrt(n) (AlpacaEval's standard_error); NaN when n < 2."""
    p = np.asarray(preferences, dtype=float)
    if len(p) < 2:
        return float("nan")
    return float(100.0 * p.std(ddof=1) / np.sqrt(len(p)))


def outcome_counts(*, preferences: FloatArray) -> tuple[int, int, int, int]:
    """(n_wins, n_draws, n_losses, n_total): p > 0.5, p == 0.5, p < 0.5, all."""
    p = np.asarray(preferences, dtype=float)
    return int((p > 0.5).sum()), int((p == 0.5).sum()), int((p < 0.5).sum()), len(p)


def discrete_win_rate(*, preferences: FloatArray) -> float:
    """100 * (n_wins + n_draws / 2) / n (AlpacaEval's discrete_win_rate); NaN when n = 0."""
    wins, draws, _, total = outcome_counts(preferences=preferences)
    return float(100.0 * (wins + 0.5 * draws) / total) if total else float("nan")


# -- orienting comparisons ------------------------------------------------------------------
@dataclass(frozen=True)
class Oriented:
    """The comparisons of one system, from its side: P(it is better), the opponent's index,
    the item group, and its length minus the opponent's (NaN without lengths)."""

    preferences: FloatArray
    opponents: IntArray
    groups: IntArray
    length_delta: FloatArray


def oriented(data: object, system: int, *, opponent: int | None = None) -> Oriented:
    """The comparisons of `system` (against `opponent` only, if given), from its side."""
    a = data.a  # type: ignore[attr-defined]
    b = data.b  # type: ignore[attr-defined]
    outcome = data.outcome  # type: ignore[attr-defined]
    lengths = data.lengths  # type: ignore[attr-defined]
    as_a, as_b = a == system, b == system
    if opponent is not None:
        as_a &= b == opponent
        as_b &= a == opponent
    rows = np.flatnonzero(as_a | as_b)
    first = as_a[rows]
    p = np.where(first, outcome[rows], 1.0 - outcome[rows])
    other = np.where(first, b[rows], a[rows])
    if lengths is None:
        delta = np.full(len(rows), np.nan)
    else:
        delta = np.where(first, lengths[rows, 0] - lengths[rows, 1],
                         lengths[rows, 1] - lengths[rows, 0])
    return Oriented(p, other, data.groups[rows], delta)  # type: ignore[attr-defined]


def _system_index(data: object, baseline: str | None) -> int | None:
    if baseline is None:
        return None
    systems = list(data.systems)  # type: ignore[attr-defined]
    if baseline not in systems:
        raise TableError(f"baseline '{baseline}' is not in the table; systems: {systems}",
                         field="baseline")
    return systems.index(baseline)


def check_baseline(data: object, baseline: str | None = None, *, required: bool = False,
                   baseline_row: object = False, **_: object) -> None:
    """TableError when the baseline is needed (or `baseline_row` asks for its row) but not
    given, is not a system of the data, or no comparison involves it; or when the
    comparisons carry weights (not supported)."""
    weights = data.weights  # type: ignore[attr-defined]
    if len(weights) and not np.all(weights == 1.0):
        raise TableError("win rates take unweighted comparisons: drop --pair-weight",
                         field="--pair-weight")
    if baseline is None:
        if required:
            raise TableError("give the baseline: lc-win-rate:baseline=NAME", field="baseline")
        if baseline_row:
            raise TableError("baseline_row=true is the baseline's own row: give "
                             "baseline=NAME", field="baseline_row")
        return
    index = _system_index(data, str(baseline))
    if not ((data.a == index) | (data.b == index)).any():  # type: ignore[attr-defined]
        raise TableError(f"no compared pair (with a verdict) involves the baseline "
                         f"'{baseline}'", field="baseline")


# -- win-rate --------------------------------------------------------------------------------
def win_rates(data: object, baseline: str | None = None,
              baseline_row: bool = False) -> RuleResult:
    """Win rate of each system against `baseline` (every opponent pooled when None), with
    standard error, discrete win rate and counts in `extra`; the baseline is not ranked,
    unless `baseline_row`: then it is, with its win rate against itself (`baseline_row_of`)."""
    check_baseline(data, baseline, baseline_row=baseline_row)
    systems = list(data.systems)  # type: ignore[attr-defined]
    base = _system_index(data, None if baseline is None else str(baseline))
    ranked = [i for i in range(len(systems)) if i != base]
    names = [systems[i] for i in ranked]
    keys = ("standard_error", "discrete_win_rate", "n_wins", "n_draws", "n_losses", "n_total")
    extra: dict[str, dict[str, float | int]] = {k: {} for k in keys}
    scores = np.full(len(ranked), np.nan)
    single = []
    for k, i in enumerate(ranked):
        p = oriented(data, i, opponent=base).preferences
        scores[k] = win_rate(preferences=p)
        wins, draws, losses, total = outcome_counts(preferences=p)
        values = (standard_error(preferences=p), discrete_win_rate(preferences=p), wins, draws,
                  losses, total)
        for key, value in zip(keys, values, strict=True):
            extra[key][systems[i]] = value
        if total == 1:
            single.append(systems[i])
    own = "its own row: 50, against itself" if baseline_row else "not ranked"
    against = (f"against baseline '{baseline}' ({own})" if baseline is not None
               else "against every opponent, all of a system's comparisons pooled")
    notes = [f"win rate in percent {against}; ties count 0.5"]
    if single:
        notes.append(f"one comparison only for {single}: standard error undefined")
    if baseline_row and base is not None:
        n = baseline_row_of(data, base)
        names.append(systems[base])
        scores = np.append(scores, 50.0)
        for key, value in zip(keys, (0.0, 50.0, 0, n, 0, n), strict=True):
            extra[key][systems[base]] = value
    result = scored_result("win-rate", names, scores, note="; ".join(notes))
    return _with_extra(result, extra)


def baseline_row_of(data: object, baseline: int) -> int:
    """The number of self-comparisons of the baseline's own row: one per item it was
    compared on. AlpacaEval's leaderboard gives the reference model the row of its outputs
    judged against themselves: every comparison a draw (identical outputs), so win rate =
    discrete win rate = LC win rate = 50, standard error 0, n_draws = n_total = the items."""
    a, b = data.a, data.b  # type: ignore[attr-defined]
    groups = data.groups[(a == baseline) | (b == baseline)]  # type: ignore[attr-defined]
    return len(np.unique(groups))


def _with_extra(result: RuleResult, extra: dict[str, dict[str, float | int]]) -> RuleResult:
    return replace(result, extra=extra)


# -- logistic regression with soft targets ----------------------------------------------------
@dataclass(frozen=True)
class LogisticFit:
    coef: FloatArray
    converged: bool
    separated: bool
    message: str


def _nll(beta: FloatArray, x: Any, y: FloatArray, penalty: FloatArray
         ) -> tuple[float, FloatArray]:
    eta = x @ beta
    value = float(np.logaddexp(0.0, eta).sum() - y @ eta + 0.5 * (penalty * beta) @ beta)
    grad = x.T @ (expit(eta) - y) + penalty * beta
    return value, np.asarray(grad)


def _hessp(beta: FloatArray, v: FloatArray, x: Any, y: FloatArray, penalty: FloatArray
           ) -> FloatArray:
    p = expit(x @ beta)
    return np.asarray(x.T @ ((p * (1.0 - p)) * (x @ v))) + penalty * v


def fit_soft_logistic(*, design: Any, target: FloatArray, penalty: float = 0.0
                      ) -> LogisticFit:
    """Maximise sum_i [y_i log s(x_i b) + (1 - y_i) log(1 - s(x_i b))] - penalty/2 |b|^2
    for targets y in [0, 1] (no intercept unless `design` has one; a dense array or a
    scipy sparse matrix), by Newton-CG on the exact gradient and Hessian-vector products,
    columns rescaled to unit size first (the penalty is on the original coefficients).
    `separated`: unpenalised, the maximum-likelihood estimate does not exist
    (`separation`)."""
    from scipy import sparse

    y = np.asarray(target, dtype=float)
    is_sparse = sparse.issparse(design)
    x: Any = (sparse.csr_matrix(design).astype(float) if is_sparse
              else np.asarray(design, dtype=float))
    squares = x.multiply(x) if is_sparse else x * x
    size = np.sqrt(np.asarray(squares.mean(axis=0)).ravel())
    size = np.where(size > 0, size, 1.0)
    scaled = x @ sparse.diags(1.0 / size) if is_sparse else x / size
    # beta = gamma / size: the penalty on beta is penalty / size^2 on gamma
    weights = float(penalty) / size**2
    res = minimize(_nll, np.zeros(x.shape[1]), args=(scaled, y, weights), jac=True,
                   hessp=_hessp, method="Newton-CG",
                   options={"xtol": 1e-12, "maxiter": 1000})
    beta = res.x / size
    gnorm = float(np.abs(res.jac).max()) if len(res.x) else 0.0
    converged = bool(res.success) or gnorm <= 1e-8 * max(1.0, len(y))
    separated = float(penalty) == 0.0 and separation(design=x, target=y)
    return LogisticFit(beta, converged, separated, "" if converged else str(res.message))


def separation(*, design: Any, target: FloatArray) -> bool:
    """Whether the soft-target log-likelihood keeps increasing to infinity along some
    direction d (so no finite maximum): X d >= 0 where y = 1, X d <= 0 where y = 0, X d = 0
    where 0 < y < 1, and X d != 0 somewhere. Decided exactly by a linear programme
    (maximise sum_{y=1} x d - sum_{y=0} x d over |d| <= 1; positive: separation), as for
    0/1 labels (Albert & Anderson 1984; Konis 2007)."""
    from scipy.optimize import linprog

    x = np.asarray(design.toarray() if hasattr(design, "toarray") else design, dtype=float)
    y = np.asarray(target, dtype=float)
    one, zero = y == 1.0, y == 0.0
    middle = ~(one | zero)
    if not (one.any() or zero.any()):
        return False
    size = np.abs(x).max(axis=0)
    x = x / np.where(size > 0, size, 1.0)
    objective = -(x[one].sum(axis=0) - x[zero].sum(axis=0))
    upper = np.vstack([-x[one], x[zero]])
    res = linprog(objective, A_ub=upper if len(upper) else None,
                  b_ub=np.zeros(len(upper)) if len(upper) else None,
                  A_eq=x[middle] if middle.any() else None,
                  b_eq=np.zeros(int(middle.sum())) if middle.any() else None,
                  bounds=[(-1.0, 1.0)] * x.shape[1], method="highs")
    return bool(res.status == 0 and res.fun is not None
                and -float(res.fun) > 1e-9 * max(1, len(y)))


# -- lc-win-rate -----------------------------------------------------------------------------
def _length_feature(delta: FloatArray) -> FloatArray | None:
    """tanh(delta / sd(delta)), None when the spread is 0 (fewer than two, or all equal)."""
    if len(delta) < 2:
        return None
    spread = float(np.std(delta, ddof=1))
    if not spread > 0:
        return None
    return np.tanh(delta / spread)


def instruction_difficulty(data: object, baseline: int, systems: list[int], *,
                           penalty: float = 1.0) -> FloatArray:
    """gamma per item group: the item coefficients of the joint fit logit p = theta_s +
    phi_s tanh(delta_s / sd_s) + gamma_x over the systems' comparisons with the baseline,
    L2 penalty `penalty` on every coefficient (identifies theta and gamma together)."""
    from scipy import sparse

    n_groups = data.n_units  # type: ignore[attr-defined]
    rows, cols, values, targets = [], [], [], []
    k, start = len(systems), 0
    for j, s in enumerate(systems):
        o = oriented(data, s, opponent=baseline)
        m = len(o.preferences)
        feature = _length_feature(o.length_delta)
        here = np.arange(start, start + m)
        rows += [here, here]
        cols += [np.full(m, j), 2 * k + o.groups]
        values += [np.ones(m), np.ones(m)]
        if feature is not None:
            rows.append(here)
            cols.append(np.full(m, k + j))
            values.append(feature)
        targets.append(o.preferences)
        start += m
    design = sparse.csr_matrix((np.concatenate(values),
                                (np.concatenate(rows), np.concatenate(cols))),
                               shape=(start, 2 * k + n_groups))
    fit = fit_soft_logistic(design=design, target=np.concatenate(targets), penalty=penalty)
    if not fit.converged:
        raise RuntimeError(f"the instruction-difficulty fit did not converge: {fit.message}")
    return np.asarray(fit.coef[2 * k:])


def _shares_items(data: object, baseline: int, systems: list[int]) -> bool:
    """Whether two systems or more were compared with the baseline on some common item."""
    if len(systems) < 2:
        return False
    per_group: dict[int, set[int]] = {}
    for s in systems:
        for g in oriented(data, s, opponent=baseline).groups.tolist():
            per_group.setdefault(g, set()).add(s)
    return any(len(v) >= 2 for v in per_group.values())


def lc_win_rates(data: object, baseline: str | None = None, instruction: object = "auto",
                 penalty: float = 0.0, difficulty_penalty: float = 1.0,
                 baseline_row: bool = False) -> RuleResult:
    """Length-controlled win rate against `baseline` (see the module docstring); extra:
    standard_error, win_rate (raw), length_coefficient, n_total. `baseline_row`: the
    baseline ranked too, at 50 (`baseline_row_of`; no standard error, as AlpacaEval)."""
    check_lengths(data, baseline)
    systems = list(data.systems)  # type: ignore[attr-defined]
    base = _system_index(data, str(baseline))
    assert base is not None
    compared = [i for i in range(len(systems)) if i != base
                and len(oriented(data, i, opponent=base).preferences)]
    if instruction == "auto":
        use_instruction = _shares_items(data, base, compared)
    elif isinstance(instruction, bool):
        use_instruction = instruction
    else:
        raise ValueError("instruction must be auto, true or false")
    gamma = (instruction_difficulty(data, base, compared, penalty=float(difficulty_penalty))
             if use_instruction else None)
    ranked = [i for i in range(len(systems)) if i != base]
    keys = ("standard_error", "win_rate", "length_coefficient", "n_total")
    extra: dict[str, dict[str, float | int]] = {key: {} for key in keys}
    scores = np.full(len(ranked), np.nan)
    undefined: dict[str, list[str]] = {}  # reason -> systems
    for k, i in enumerate(ranked):
        o = oriented(data, i, opponent=base)
        name = systems[i]
        extra["win_rate"][name] = win_rate(preferences=o.preferences)
        extra["n_total"][name] = len(o.preferences)
        extra["standard_error"][name] = float("nan")
        extra["length_coefficient"][name] = float("nan")
        feature = _length_feature(o.length_delta)
        if feature is None:
            undefined.setdefault("no spread in length differences", []).append(name)
            continue
        columns = [np.ones(len(feature)), feature]
        if gamma is not None:
            columns.append(gamma[o.groups])
        if len(feature) <= len(columns):
            undefined.setdefault(f"{len(feature)} comparisons for {len(columns)} "
                                 "coefficients", []).append(name)
            continue
        fit = fit_soft_logistic(design=np.column_stack(columns), target=o.preferences,
                                penalty=float(penalty))
        logit = fit.coef[0] + (fit.coef[2] * gamma[o.groups] if gamma is not None else 0.0)
        if not fit.converged or fit.separated:
            why = ("separation: no finite maximum-likelihood estimate (e.g. a system "
                   "that never wins)" if fit.separated else "did not converge")
            undefined.setdefault(f"the fit {why}; lc-win-rate:penalty=L fits with an L2 "
                                 "penalty", []).append(name)
            continue
        predicted = expit(np.broadcast_to(logit, o.preferences.shape))
        scores[k] = 100.0 * predicted.mean()
        extra["length_coefficient"][name] = float(fit.coef[1])
        if gamma is not None:
            extra["standard_error"][name] = standard_error(preferences=predicted)
    own = "its own row: 50, against itself" if baseline_row else "not ranked"
    notes = [f"length-controlled win rate in percent against baseline '{baseline}' ({own}): "
             "logit p = theta + phi tanh(delta len / sd)"
             + (" + psi gamma_item (instruction difficulty from a joint fit, L2 penalty "
                f"{float(difficulty_penalty):g})" if gamma is not None else
                "; no instruction term, so its standard error is undefined")]
    if float(penalty) > 0:
        notes.append(f"L2 penalty {float(penalty):g}")
    if undefined:  # each reason once, with the systems it holds for
        notes.append("undefined for " + "; ".join(f"{_names(names)} ({why})"
                                                  for why, names in undefined.items()))
    names = [systems[i] for i in ranked]
    if baseline_row:
        n = baseline_row_of(data, base)
        names.append(systems[base])
        scores = np.append(scores, 50.0)
        for key, value in zip(keys, (float("nan"), 50.0, float("nan"), n), strict=True):
            extra[key][systems[base]] = value
    result = scored_result("lc-win-rate", names, scores, note="; ".join(notes))
    return _with_extra(result, extra)


def _names(names: list[str]) -> str:
    """a, b and c."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def check_lengths(data: object, baseline: str | None = None, **options: object) -> None:
    """TableError when lc-win-rate cannot run: no baseline, no output lengths, a negative
    penalty."""
    check_baseline(data, baseline, required=True)
    for name in ("penalty", "difficulty_penalty"):
        value = options.get(name, 0.0)
        if not (isinstance(value, int | float) and float(value) >= 0):
            raise TableError(f"{name} must be a number >= 0, got {value!r}", field=name)
    lengths = data.lengths  # type: ignore[attr-defined]
    if lengths is None:
        raise TableError("lc-win-rate needs the outputs' lengths: no column 'length_a' and "
                         "'length_b' (numbers) or 'output_a' and 'output_b' (texts)",
                         field=LENGTH_COLUMNS[0])
    index = _system_index(data, str(baseline))
    used = (data.a == index) | (data.b == index)  # type: ignore[attr-defined]
    missing = np.isnan(lengths[used]).any(axis=1)
    if missing.any():
        column = LENGTH_COLUMNS[int(np.isnan(lengths[used][missing][0, 1]))]
        raise TableError(f"lc-win-rate needs every output's length: {int(missing.sum())} "
                         "comparison(s) with the baseline have an empty length cell",
                         field=column)
