"""Bradley-Terry with covariates: rankings with style controlled (Li et al. 2024, LMSYS's
"Does style matter? Disentangling style and substance in Chatbot Arena"; arena-hard-auto's
`show_result.py`).

Comparison k, system a_k against b_k, outcome y_k in [0, 1] (1: a won, 0: b won, 0.5: a tie,
another value: a soft verdict P(a better)), weight w_k, covariates z_k (A's style minus B's):

    logit P(a_k beats b_k) = theta_{a_k} - theta_{b_k} + z_k . gamma.

theta and gamma maximise sum_k w_k [y_k log p_k + (1 - y_k) log(1 - p_k)], the Bernoulli
log-likelihood with fractional targets that arena-hard-auto's Bradley-Terry loss is (a tie
counts as half a win for each side, not Davidson's tie model). theta is centred to mean 0.
The covariance of (theta, gamma) is the inverse observed information (for the logit link
equal to the expected one: X' diag(w p (1 - p)) X, Agresti 2013, "Categorical Data
Analysis", 5.5), mapped to centred theta; Wald intervals are estimate +- z se. Without
covariates this is the raw ranking in the same model, so the two are comparable.

Style features (`style_features`), arena-hard-auto v2's definition: with lengths L and
markdown densities d = count / L (headers `^#{1,6}\\s`, list items `^\\s*\\d+\\.\\s` and
`^\\s*[-*+]\\s`, bold `\\*\\*[^*\\n]+\\*\\*` and `__[^_\\n]+__`, counted after removing
fenced code blocks),

    length:   (L_a - L_b) / (L_a + L_b)        (0 when both are 0),
    markdown: (d_a - d_b) / (d_a + d_b + 1)    one feature each for headers, lists, bold,

each then standardised over the comparisons, (x - mean) / sd (ddof 1), so a coefficient is
the change in log-odds per standard deviation of its feature, and theta is a system's
strength at the comparisons' mean style difference (not at equal style), as in
arena-hard-auto.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit, log_expit
from scipy.stats import norm

from meta_eval.aggregation.winrate import separation

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy.typing as npt

    from meta_eval.arrays import FloatArray

MARKDOWN_FEATURES = ("headers", "lists", "bold")
_CODE_BLOCK = re.compile(r"```([^`]*)```")
_PATTERNS = {
    "headers": [re.compile(rf"^#{{{k}}}\s", re.MULTILINE) for k in range(1, 7)],
    "lists": [re.compile(r"^\s*\d+\.\s", re.MULTILINE), re.compile(r"^\s*[-*+]\s", re.MULTILINE)],
    "bold": [re.compile(r"\*\*[^*\n]+\*\*"), re.compile(r"__[^_\n]+__")],
}
#: |coefficient| beyond which a fit is taken to run off to infinity (separation)
_DIVERGED = 40.0
_SEPARATED = ("no finite estimate: the comparisons are separated (a system that never loses "
              "or never wins, or a covariate that decides them; decided by a linear programme)")


def markdown_counts(text: str) -> tuple[int, int, int]:
    """(headers, list items, bold spans) in `text`, fenced code blocks removed first, with
    arena-hard-auto's patterns (`utils/add_markdown_info.py`)."""
    for block in _CODE_BLOCK.findall(text):
        text = text.replace(block, "")
    headers, lists, bold = (sum(len(p.findall(text)) for p in _PATTERNS[name])
                            for name in MARKDOWN_FEATURES)
    return headers, lists, bold


def length_feature(*, length_a: npt.ArrayLike, length_b: npt.ArrayLike) -> FloatArray:
    """(L_a - L_b) / (L_a + L_b), 0 where both lengths are 0 (not standardised)."""
    la, lb = np.asarray(length_a, float), np.asarray(length_b, float)
    total = la + lb
    out: FloatArray = np.divide(la - lb, total, out=np.zeros_like(total), where=total > 0)
    return out


def markdown_feature(*, count_a: npt.ArrayLike, count_b: npt.ArrayLike,
                     length_a: npt.ArrayLike, length_b: npt.ArrayLike) -> FloatArray:
    """(d_a - d_b) / (d_a + d_b + 1) with densities d = count / length (0 for an empty
    output), arena-hard-auto's markdown feature (not standardised)."""
    la, lb = np.asarray(length_a, float), np.asarray(length_b, float)
    ca, cb = np.asarray(count_a, float), np.asarray(count_b, float)
    da = np.divide(ca, la, out=np.zeros_like(la), where=la > 0)
    db = np.divide(cb, lb, out=np.zeros_like(lb), where=lb > 0)
    out: FloatArray = (da - db) / (da + db + 1.0)
    return out


def standardise(values: npt.ArrayLike, *, name: str) -> FloatArray:
    """(x - mean) / sd (ddof 1) over the comparisons; ValueError when the feature does not
    vary (its coefficient has no estimate)."""
    x = np.asarray(values, float)
    if not np.isfinite(x).all():
        raise ValueError(f"covariate '{name}' has a missing or infinite value")
    sd = float(x.std(ddof=1)) if len(x) > 1 else 0.0
    if not sd > 0:
        raise ValueError(f"covariate '{name}' is the same on every comparison: its "
                         "coefficient cannot be estimated")
    out: FloatArray = (x - x.mean()) / sd
    return out


@dataclass(frozen=True)
class CovariateFit:
    """theta (centred, one per system), gamma (one per covariate), their joint covariance
    (systems first), the Wald interval's level, the log-likelihood and Newton's iterations."""

    theta: FloatArray
    gamma: FloatArray
    covariance: FloatArray
    level: float
    log_likelihood: float
    iterations: int

    @property
    def se(self) -> FloatArray:
        out: FloatArray = np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))
        return out

    def intervals(self) -> tuple[FloatArray, FloatArray]:
        """Wald intervals of (theta, gamma): estimate -+ z_{(1+level)/2} se."""
        z = float(norm.ppf(0.5 + self.level / 2.0))
        estimate = np.concatenate([self.theta, self.gamma])
        return estimate - z * self.se, estimate + z * self.se


def fit_covariate_bt(*, a: npt.ArrayLike, b: npt.ArrayLike, outcome: npt.ArrayLike,
                     n_systems: int, covariates: npt.ArrayLike | None = None,
                     weights: npt.ArrayLike | None = None, level: float = 0.95
                     ) -> CovariateFit:
    """Maximum likelihood of logit P(a beats b) = theta_a - theta_b + z . gamma (module
    docstring) by Newton-Raphson with step halving from 0. ValueError when a system is in
    no comparison, or the estimate is not finite (separation, decided exactly by
    `winrate.separation`'s linear programme: a system, or a covariate, that decides every
    comparison it is in)."""
    a_idx, b_idx = np.asarray(a, np.int64), np.asarray(b, np.int64)
    y = np.asarray(outcome, float)
    m = len(y)
    w = np.ones(m) if weights is None else np.asarray(weights, float)
    z = np.zeros((m, 0)) if covariates is None else np.asarray(covariates, float).reshape(m, -1)
    if not 0 < level < 1:
        raise ValueError("level must be between 0 and 1")
    seen = np.bincount(np.concatenate([a_idx, b_idx]), weights=np.concatenate([w, w]),
                       minlength=n_systems)
    if n_systems < 2 or not (seen > 0).all():
        raise ValueError("every system needs a comparison, and there must be two systems")
    design = np.zeros((m, n_systems))
    rows = np.arange(m)
    design[rows, a_idx] += 1.0
    design[rows, b_idx] -= 1.0
    # each covariate divided by a power of two near its largest |value| (exact, undone below)
    peak = np.abs(z).max(axis=0, initial=0.0) if len(z) else np.ones(z.shape[1])
    if not np.isfinite(z).all():
        raise ValueError("a covariate has a missing or infinite value")
    unit = np.exp2(np.round(np.log2(np.where(peak > 0, peak, 1.0))))
    x = np.hstack([design[:, 1:], z / unit])  # system 0 the reference; centred below

    if separation(design=x[w > 0], target=y[w > 0]):
        raise ValueError(_SEPARATED)

    def log_likelihood(beta: FloatArray) -> float:
        eta = x @ beta
        return float((w * (y * log_expit(eta) + (1.0 - y) * log_expit(-eta))).sum())

    beta = np.zeros(x.shape[1])
    current = log_likelihood(beta)
    scale = max(1.0, float(w.sum()))
    iterations = 0
    while iterations < 200:
        iterations += 1
        p = expit(x @ beta)
        grad = x.T @ (w * (y - p))
        info = x.T @ (x * (w * p * (1.0 - p))[:, None])
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            raise ValueError("the design is singular: a covariate is collinear with the "
                             "systems or with another covariate") from None
        t = 1.0
        while t > 1e-10:
            trial = log_likelihood(beta + t * step)
            if trial >= current - 1e-12 * scale:
                break
            t /= 2.0
        beta, current = beta + t * step, log_likelihood(beta + t * step)
        if np.abs(x.T @ (w * (y - expit(x @ beta)))).max() <= 1e-10 * scale:
            break
    if not np.abs(beta).max(initial=0.0) < _DIVERGED or \
            np.abs(x.T @ (w * (y - expit(x @ beta)))).max() > 1e-6 * scale:
        raise ValueError(_SEPARATED)
    p = expit(x @ beta)
    cov_ref = np.linalg.inv(x.T @ (x * (w * p * (1.0 - p))[:, None]))
    n, k = n_systems, z.shape[1]
    embed = np.zeros((n + k, n - 1 + k))  # (theta centred, gamma) from (theta_1.. - theta_0, gamma)
    embed[1:n, : n - 1] = np.eye(n - 1)
    embed[:n] -= embed[:n].mean(axis=0)
    embed[n:, n - 1:] = np.diag(1.0 / unit)
    estimate = embed @ beta
    covariance = embed @ cov_ref @ embed.T
    return CovariateFit(estimate[:n], estimate[n:], covariance, float(level), current,
                        iterations)


def ranking_order(theta: Sequence[float]) -> list[int]:
    """Indices of systems by theta, best first (stable on ties)."""
    return sorted(range(len(theta)), key=lambda i: -theta[i])
