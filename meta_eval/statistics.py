"""The statistics meta_eval computes: one table that every caller reads.

Each `Statistic` says how its value is computed (a correlation kernel of
`meta_eval.correlation`, or SPA), which metric tie threshold the kernel gets, at which levels
it is defined, whether scipy gives it a p-value, how the paired permutation test resamples
it, and what it credits. `evaluate`, `bootstrap_values`, the permutation test, `check_options`,
the audit gate and the CLI help read `STATISTICS`, so a statistic is added here only.

Tie thresholds (`epsilon`):
    none        the kernel has no metric tie threshold (exact ties where it counts ties);
    given       the caller's `epsilon` (a metric tie is |m_i - m_j| <= epsilon);
    zero        always 0, whatever `epsilon` says (pairwise accuracy is defined with exact
                ties: Kocmi et al. 2021);
    calibrated  chosen on the data as the epsilon maximising acc-23 (tie calibration,
                Deutsch et al. 2023); resamples keep the full data's epsilon.

Direction (`better`): "higher" (correlations, kappa, alpha), "lower" (mae, rmse, brier, ece:
errors) or "zero" (bias: signed, best at 0). `goodness(value)` is value, -value or -|value|,
higher always better; clusters, the permutation test (H1: goodness(A) > goodness(B)), "best
first" and the audit gate rank by it, so a lower-MAE metric comes first.

On the human scale (`on_scale`): agreement, error and calibration statistics compare the
metric's values with the human scores themselves (a 1-5 judge with 1-5 ratings), so nothing
is z-scored (the permutation test swaps raw scores) or negated (a lower-is-better column keeps
its values). `categorical`: the values are rounded half up to integer categories
(`meta_eval.agreement.categories`); `probabilities`: the metric is a probability in [0, 1]
and the human column a 0/1 label (`meta_eval.reliability`).

Permutation swaps (`swaps`):
    units  every (item, system) unit swaps its two metrics' (z-scored) scores (PERM-BOTH,
           Deutsch et al. 2021);
    pairs  pair outcomes are swapped, each metric keeping its own tie threshold
           (mt-metrics-eval `PairwisePermutationSigDiff`); needs an acc-23-type kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

Value = TypeVar("Value", float, "np.ndarray")

EPSILON_MODES = ("none", "given", "zero", "calibrated")
SWAP_MODES = ("units", "pairs")
ALL_LEVELS = ("system", "segment")
PAIR_KERNELS = ("acc-23", "kendall-23")
DIRECTIONS = ("higher", "lower", "zero")  # kernels whose value is a count of right pairs


@dataclass(frozen=True)
class Statistic:
    """One statistic: how it is computed, tested and described."""

    name: str
    kernel: str  # meta_eval.correlation.group_values kernel name, or "spa"
    epsilon: str  # one of EPSILON_MODES
    levels: tuple[str, ...]
    description: str  # one line, for CLI help
    paper: str
    scipy_p_value: bool = False  # ungrouped two-sided p-value from scipy
    swaps: str = "units"  # one of SWAP_MODES
    credits_ties: bool = False  # a metric tie can count as right (defined for a constant)
    needs_segments: bool = False  # computed from segment scores, not from system scores
    better: str = "higher"  # one of DIRECTIONS
    on_scale: bool = False  # compares values on the human scale: never z-scored or negated
    categorical: bool = False  # values rounded half up to integer categories
    probabilities: bool = False  # metric in [0, 1], human labels 0/1
    declared: bool = False  # takes declared labels / a value domain (kappa family, alpha)
    nonnegative: bool = False  # values >= 0 (Krippendorff's ratio level)

    def __post_init__(self) -> None:
        if self.epsilon not in EPSILON_MODES:
            raise ValueError(f"{self.name}: epsilon must be one of {EPSILON_MODES}")
        if self.better not in DIRECTIONS:
            raise ValueError(f"{self.name}: better must be one of {DIRECTIONS}")
        if (self.categorical or self.probabilities) and not self.on_scale:
            raise ValueError(f"{self.name}: categories and probabilities are on the human scale")
        if self.swaps not in SWAP_MODES:
            raise ValueError(f"{self.name}: swaps must be one of {SWAP_MODES}")
        if not self.levels or any(level not in ALL_LEVELS for level in self.levels):
            raise ValueError(f"{self.name}: levels must be among {ALL_LEVELS}")
        if self.swaps == "pairs" and self.kernel not in PAIR_KERNELS:
            raise ValueError(f"{self.name}: pair swaps need a kernel in {PAIR_KERNELS}")
        if self.epsilon == "calibrated" and self.kernel != "acc-23":
            raise ValueError(f"{self.name}: tie calibration maximises acc-23; use that kernel")
        if self.epsilon == "calibrated" and self.swaps != "pairs":
            raise ValueError(f"{self.name}: a calibrated epsilon needs pair swaps (unit "
                             "swaps would mix the two metrics' thresholds)")

    def tie_threshold(self, epsilon: float) -> float:
        """The epsilon the kernel gets, given the caller's (or the calibrated) one."""
        return float(epsilon) if self.epsilon in ("given", "calibrated") else 0.0

    def goodness(self, value: Value) -> Value:
        """`value` oriented so that higher is better (see the module docstring)."""
        if self.better == "lower":
            return -value
        if self.better == "zero":
            return -abs(value)
        return value

    def reports_epsilon(self) -> bool:
        """Whether a Result carries the epsilon (given or calibrated)."""
        return self.epsilon in ("given", "calibrated")


_TABLE = (
    Statistic("pearson", "pearson", "none", ALL_LEVELS,
              "Pearson's linear correlation r", "Pearson 1896", scipy_p_value=True),
    Statistic("spearman", "spearman", "none", ALL_LEVELS,
              "Spearman's rank correlation rho (average ranks for ties)", "Spearman 1904",
              scipy_p_value=True),
    Statistic("kendall", "kendall", "none", ALL_LEVELS,
              "Kendall's tau-b", "Kendall 1945", scipy_p_value=True),
    Statistic("kendall-c", "kendall-c", "none", ALL_LEVELS,
              "Kendall's tau-c (Stuart's)", "Stuart 1953"),
    Statistic("kendall-23", "kendall-23", "given", ALL_LEVELS,
              "tau_23: ties count, metric tie |dm| <= --epsilon",
              "Deutsch et al. 2023, Ties Matter", swaps="pairs", credits_ties=True),
    Statistic("acc-23", "acc-23", "given", ALL_LEVELS,
              "pairwise accuracy with ties, metric tie |dm| <= --epsilon",
              "Deutsch et al. 2023, Ties Matter", swaps="pairs", credits_ties=True),
    Statistic("acc-eq", "acc-23", "calibrated", ALL_LEVELS,
              "acc-23 with the tie threshold calibrated on the data",
              "Deutsch et al. 2023, Ties Matter", swaps="pairs", credits_ties=True),
    Statistic("pairwise-accuracy", "acc-23", "zero", ("system",),
              "share of system pairs ordered as people order them (exact ties)",
              "Kocmi et al. 2021, To Ship or Not to Ship", credits_ties=True),
    Statistic("spa", "spa", "none", ("system",),
              "soft pairwise accuracy over per-pair permutation p-values",
              "Thompson et al. 2024", needs_segments=True),
    Statistic("weighted-tau", "weighted-tau", "none", ALL_LEVELS,
              "weighted Kendall's tau, scipy.stats.weightedtau's defaults (hyperbolic "
              "weights, top ranks count more)", "Vigna 2015"),
    Statistic("pdp", "pdp", "none", ALL_LEVELS,
              "pairwise-difference Pearson: r of within-group score differences, pooled "
              "over groups", "mt-metrics-eval stats.py (Pearson, pdp=True)"),
    *(Statistic(name, name, "none", ("segment",), description, paper, on_scale=True,
                categorical=True, declared=True)
      for name, description, paper in (
          ("kappa", "Cohen's kappa of rounded (half up) integer scores", "Cohen 1960"),
          ("kappa-linear", "linearly weighted kappa of rounded integer scores", "Cohen 1968"),
          ("qwk", "quadratic weighted kappa of rounded integer scores (essay scoring)",
           "Cohen 1968; Williamson et al. 2012"))),
    Statistic("krippendorff", "krippendorff", "none", ("segment",),
              "Krippendorff's alpha, interval, judge and human as two coders",
              "Krippendorff 2011", on_scale=True, declared=True),
    Statistic("krippendorff-ratio", "krippendorff-ratio", "none", ("segment",),
              "Krippendorff's alpha, ratio (values >= 0), judge and human as two coders",
              "Krippendorff 2011", on_scale=True, declared=True, nonnegative=True),
    Statistic("krippendorff-ordinal", "krippendorff-ordinal", "none", ("segment",),
              "Krippendorff's alpha, ordinal, of rounded integer scores", "Krippendorff 2011",
              on_scale=True, categorical=True, declared=True),
    Statistic("krippendorff-nominal", "krippendorff-nominal", "none", ("segment",),
              "Krippendorff's alpha, nominal, of rounded integer scores", "Krippendorff 2011",
              on_scale=True, categorical=True, declared=True),
    *(Statistic(name, name, "none", ("segment",), description, paper, better="lower",
                on_scale=True, categorical=True, declared=True)
      for name, description, paper in (
          ("ckld", "choice KL divergence KL(people || judge) of the rounded verdict "
           "distributions, judge add-1/2 smoothed (lower is better)",
           "Choi et al. 2025, Mitigating Selection Bias (CKLD)"),
          ("ckld-uniform", "choice KL divergence KL(uniform || judge) of the rounded "
           "verdicts: the judge's choice bias (lower is better)",
           "Choi et al. 2025, Mitigating Selection Bias (CKLD)"),
          ("wasserstein", "Wasserstein-1 between the judge's and people's rating "
           "histograms over ordinal bins, in scale points (lower is better)",
           "Vallender 1974; scipy.stats.wasserstein_distance"))),
    Statistic("mae", "mae", "none", ALL_LEVELS, "mean absolute error |judge - human| "
              "(lower is better)", "Willmott and Matsuura 2005", better="lower", on_scale=True),
    Statistic("rmse", "rmse", "none", ALL_LEVELS, "root mean squared error (lower is better)",
              "Willmott and Matsuura 2005", better="lower", on_scale=True),
    Statistic("bias", "bias", "none", ALL_LEVELS, "mean judge - human (positive: more "
              "lenient, best at 0)", "mean signed error", better="zero", on_scale=True),
    Statistic("brier", "brier", "none", ("segment",), "Brier score of probabilities against "
              "0/1 labels (lower is better)", "Brier 1950", better="lower", on_scale=True,
              probabilities=True),
    Statistic("ece", "ece", "none", ("segment",), "expected calibration error, 10 equal-width "
              "bins (lower is better)", "Naeini et al. 2015; Guo et al. 2017",
              better="lower", on_scale=True, probabilities=True),
    Statistic("ece-mass", "ece-mass", "none", ("segment",), "expected calibration error, 10 "
              "equal-mass bins (lower is better)", "Nixon et al. 2019", better="lower",
              on_scale=True, probabilities=True),
)

#: name -> Statistic, in CLI order. Iterating gives the names (as the old tuple did).
STATISTICS: Mapping[str, Statistic] = MappingProxyType({s.name: s for s in _TABLE})


def get(name: str) -> Statistic:
    """The registered statistic `name`; ValueError naming the known ones otherwise."""
    try:
        return STATISTICS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown statistic {name!r}; use one of "
                         f"{', '.join(STATISTICS)}") from None


def help_text() -> str:
    """One entry per statistic ("name: description [system level only]"), joined by "; "
    (click folds newlines in option help), for CLI help."""
    lines = []
    for s in STATISTICS.values():
        where = "" if s.levels == ALL_LEVELS else f" [{'/'.join(s.levels)} level only]"
        lines.append(f"{s.name}: {s.description}{where}")
    return "; ".join(lines)
