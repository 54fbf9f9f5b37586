"""The alternative-annotator test: can this judge replace a human annotator here?

Calderon, Reichart and Dror (2025), "The Alternative Annotator Test for LLM-as-a-Judge: How to
Statistically Justify Replacing Human Annotators with LLMs", ACL 2025 (arXiv:2501.10970).

Leave one annotator j out at a time. On every item i that j labelled (and that at least
`min_annotators` annotators and the judge labelled), score how well the judge f and the
held-out annotator h_j agree with the remaining annotators R_ij = {k != j labelled i}:

    accuracy:  S(x, i, j) = mean_{k in R_ij} 1[x = h_k(i)]
    neg-rmse:  S(x, i, j) = -sqrt(mean_{k in R_ij} (x - h_k(i))^2)

W^f_i = 1[S(f) >= S(h_j)], W^h_i = 1[S(h_j) >= S(f)] (a tie counts for both). The judge's
advantage probability over j is rho^f_j = mean_i W^f_i. Per annotator a one-sided one-sample
t-test of d_i = W^h_i - W^f_i, H0: E[d] >= epsilon against H1: E[d] < epsilon (the judge is
at least as good as j, up to the cost-benefit margin epsilon); the annotators' p-values are
corrected together with Benjamini-Yekutieli at level q (`alpha`). The winning rate omega is
the share of annotators whose H0 is rejected (the judge passes at omega >= 0.5) and the
advantage probability rho is the mean of rho^f_j. An annotator with fewer than `min_items`
items is left out (the t-test's normality, the paper's 30).

Where d has no variance the t statistic is +-inf: p = 0 when mean(d) < epsilon, else 1.
neg-rmse compares the sums of squared differences (the same order as S, exact on integer
labels); accuracy compares labels for exact equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SCORES = ("accuracy", "neg-rmse")


@dataclass(frozen=True)
class AnnotatorTest:
    """One held-out annotator: its items, the two advantage probabilities and its test."""

    annotator: str
    n: int
    judge_advantage: float  # rho^f_j
    annotator_advantage: float  # rho^h_j
    p_value: float
    rejected: bool

    def to_dict(self) -> dict[str, Any]:
        return {"annotator": self.annotator, "n": self.n,
                "judge_advantage": self.judge_advantage,
                "annotator_advantage": self.annotator_advantage,
                "p_value": self.p_value, "rejected": self.rejected}


@dataclass(frozen=True)
class AltTestResult:
    """The alt-test of one judge: omega, rho, each tested annotator and those left out."""

    winning_rate: float  # NaN when no annotator was tested
    advantage_probability: float
    annotators: list[AnnotatorTest]
    #: annotator -> why it was not tested
    skipped: dict[str, str] = field(default_factory=dict)
    items: int = 0

    @property
    def passed(self) -> bool:
        return bool(self.winning_rate >= 0.5)


def benjamini_yekutieli(p_values: np.ndarray, q: float) -> np.ndarray:
    """Which hypotheses Benjamini and Yekutieli (2001) reject at FDR `q` under any dependence:
    the k smallest p-values, k = max{i : p_(i) <= i q / (m H_m)}, H_m = sum_{l<=m} 1/l."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    rejected = np.zeros(m, dtype=bool)
    if m == 0:
        return rejected
    order = np.argsort(p, kind="stable")
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    below = np.nonzero(p[order] <= np.arange(1, m + 1) * q / (m * harmonic))[0]
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    return rejected


def one_sided_t(d: np.ndarray, epsilon: float) -> float:
    """P-value of H1: E[d] < epsilon by Student's one-sample t-test (n - 1 degrees of
    freedom); a constant d gives 0 when its mean is below epsilon, else 1."""
    from scipy.stats import t as student

    n = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if not sd > 0:
        return 0.0 if mean < epsilon else 1.0
    return float(student.cdf((mean - epsilon) / (sd / np.sqrt(n)), n - 1))


def alt_test(*, humans: np.ndarray, judge: np.ndarray, epsilon: float,
             score: str = "accuracy", alpha: float = 0.05, min_items: int = 30,
             min_annotators: int = 2, names: list[str] | None = None) -> AltTestResult:
    """The alt-test of `judge` (n items; NaN: no answer) against `humans` (n items x m
    annotators; NaN: that annotator did not label the item); see the module docstring."""
    if score not in SCORES:
        raise ValueError(f"score must be one of {SCORES}, not {score!r}")
    h = np.asarray(humans, dtype=float)
    f = np.asarray(judge, dtype=float)
    if h.ndim != 2 or f.shape != (h.shape[0],):
        raise ValueError("humans must be items x annotators and judge one value per item")
    names = names or [f"annotator {j}" for j in range(h.shape[1])]
    labelled = np.isfinite(h)
    keep = np.isfinite(f) & (labelled.sum(axis=1) >= min_annotators)
    h, f, labelled = h[keep], f[keep], labelled[keep]
    filled = np.where(labelled, h, 0.0)
    tests: list[AnnotatorTest] = []
    p_values: list[float] = []
    skipped: dict[str, str] = {}
    for j, name in enumerate(names):
        rows = labelled[:, j]
        if int(rows.sum()) < min_items:
            skipped[name] = f"{int(rows.sum())} items, fewer than {min_items}"
            continue
        others = labelled[rows].copy()
        others[:, j] = False
        values, mine, theirs = f[rows], filled[rows, j], filled[rows]
        if score == "accuracy":  # more agreement is better
            s_judge = ((theirs == values[:, None]) & others).sum(axis=1)
            s_human = ((theirs == mine[:, None]) & others).sum(axis=1)
            judge_wins, human_wins = s_judge >= s_human, s_human >= s_judge
        else:  # a smaller sum of squares is better
            s_judge = (np.where(others, theirs - values[:, None], 0.0) ** 2).sum(axis=1)
            s_human = (np.where(others, theirs - mine[:, None], 0.0) ** 2).sum(axis=1)
            judge_wins, human_wins = s_judge <= s_human, s_human <= s_judge
        d = human_wins.astype(float) - judge_wins.astype(float)
        p_values.append(one_sided_t(d, epsilon))
        tests.append(AnnotatorTest(name, int(rows.sum()), float(judge_wins.mean()),
                                   float(human_wins.mean()), p_values[-1], False))
    rejected = benjamini_yekutieli(np.asarray(p_values), alpha)
    tests = [AnnotatorTest(t.annotator, t.n, t.judge_advantage, t.annotator_advantage,
                           t.p_value, bool(r)) for t, r in zip(tests, rejected, strict=True)]
    if not tests:
        return AltTestResult(float("nan"), float("nan"), [], skipped, int(keep.sum()))
    return AltTestResult(float(rejected.mean()),
                         float(np.mean([t.judge_advantage for t in tests])), tests, skipped,
                         int(keep.sum()))


def epsilon_to_pass(*, humans: np.ndarray, judge: np.ndarray, score: str = "accuracy",
                    alpha: float = 0.05, min_items: int = 30, min_annotators: int = 2,
                    high: float = 1.0, tol: float = 1e-3) -> float | None:
    """The smallest epsilon (a multiple of `tol`) at which `judge` passes the alt-test: how
    much cost-benefit margin the replacement needs. The winning rate does not fall as
    epsilon grows (each annotator's p-value falls, and Benjamini-Yekutieli rejects more as
    p-values fall), so bisection on [0, `high`] finds it; the multiple of `tol` returned
    passes and the one below does not. 0.0: it passes at epsilon 0; None: not even at
    `high` (or no annotator has `min_items` items)."""
    import math

    def passes(epsilon: float) -> bool:
        result = alt_test(humans=humans, judge=judge, epsilon=epsilon, score=score,
                          alpha=alpha, min_items=min_items, min_annotators=min_annotators)
        return bool(result.annotators) and result.passed

    if passes(0.0):
        return 0.0
    steps = math.ceil(high / tol)
    if not passes(steps * tol):
        return None
    low, up = 0, steps  # passes(up * tol), not passes(low * tol)
    while up - low > 1:
        mid = (low + up) // 2
        if passes(mid * tol):
            up = mid
        else:
            low = mid
    return round(up * tol, 12)
