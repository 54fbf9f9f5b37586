"""The statistics meta_eval computes: one table that every caller reads.

Each `Statistic` says how its value is computed, which metric tie threshold the kernel gets,
at which levels it is defined, whether scipy gives it a p-value, how the paired permutation
test resamples it, and what it credits. `evaluate`, `bootstrap_values`, the permutation test,
`check_options`, the audit gate and the CLI help read `STATISTICS`, so a statistic is added
here only.

Kernels (`groups`): the function that computes the statistic per group of padded
(..., G, U) arrays (`meta_eval.correlation`, `agreement`, `deviation`, `reliability`), held
in the entry itself (as mt-metrics-eval passes functions); `kernel` names the entry whose
kernel it is (acc-eq and pairwise-accuracy use acc-23's), or "spa" (no per-group kernel:
`meta_eval.system.spa`). `Statistic.group_values` calls it with the options it takes: the
tie threshold where the statistic has one, the declared domain for the kappa family and
alpha. `p_value`: scipy's ungrouped two-sided
p-value, where it gives one.

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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from meta_eval.agreement import alpha_groups, kappa_groups
from meta_eval.correlation import (
    kendall_groups,
    kendall_p_value,
    pearson_groups,
    pearson_p_value,
    spearman_groups,
    spearman_p_value,
    weighted_tau_groups,
)
from meta_eval.deviation import bias_groups, mae_groups, rmse_groups
from meta_eval.distribution import ckld_groups, wasserstein_groups, wasserstein_real_groups
from meta_eval.reliability import brier_groups, ece_groups

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray

Value = TypeVar("Value", float, "FloatArray")
Kernel = Callable[..., "FloatArray"]
PValue = Callable[..., "float | None"]

EPSILON_MODES = ("none", "given", "zero", "calibrated")
SWAP_MODES = ("units", "pairs")
ALL_LEVELS = ("system", "segment")
PAIR_KERNELS = ("acc-23", "kendall-23")
DIRECTIONS = ("higher", "lower", "zero")  # kernels whose value is a count of right pairs


@dataclass(frozen=True)
class Statistic:
    """One statistic: how it is computed, tested and described."""

    name: str
    kernel: str  # the name of the entry whose kernel (`groups`) this is, or "spa"
    epsilon: str  # one of EPSILON_MODES
    levels: tuple[str, ...]
    description: str  # one line, for CLI help
    paper: str
    groups: Kernel | None = None  # per-group values of padded (..., G, U) arrays
    p_value: PValue | None = None  # ungrouped two-sided p-value from scipy
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
        if (self.groups is None) != self.needs_segments:
            raise ValueError(f"{self.name}: a statistic of segment scores (SPA) has no per-group "
                             "kernel; every other one needs its kernel function (groups=)")
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

    @property
    def scipy_p_value(self) -> bool:
        """Whether scipy gives the statistic an ungrouped two-sided p-value."""
        return self.p_value is not None

    def group_values(self, *, human: FloatArray, metric: FloatArray, epsilon: float = 0.0,
                     domain: Sequence[float] | None = None) -> FloatArray:
        """The kernel's per-group values (..., G) of padded (..., G, U) arrays; `epsilon`:
        the kernel's tie threshold; `domain`: the declared labels or values of a kappa or
        alpha kernel (a ValueError for another statistic on the human scale)."""
        if self.groups is None:
            raise ValueError(f"{self.name} has no per-group kernel")
        options: dict[str, Any] = {}
        if self.epsilon != "none":
            options["epsilon"] = epsilon
        if self.declared:
            options["domain"] = domain
        elif domain is not None and self.on_scale:
            raise ValueError(f"{self.name} takes no declared domain (kappa and alpha do)")
        return self.groups(human=human, metric=metric, **options)

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


_ACC_23 = partial(kendall_groups, variant="acc-23")

_TABLE = (
    Statistic("pearson", "pearson", "none", ALL_LEVELS,
              "Pearson's linear correlation r", "Pearson 1896", groups=pearson_groups,
              p_value=pearson_p_value),
    Statistic("spearman", "spearman", "none", ALL_LEVELS,
              "Spearman's rank correlation rho (average ranks for ties)", "Spearman 1904",
              groups=spearman_groups, p_value=spearman_p_value),
    Statistic("kendall", "kendall", "none", ALL_LEVELS,
              "Kendall's tau-b", "Kendall 1945", groups=partial(kendall_groups, variant="kendall"),
              p_value=kendall_p_value),
    Statistic("kendall-c", "kendall-c", "none", ALL_LEVELS,
              "Kendall's tau-c (Stuart's)", "Stuart 1953",
              groups=partial(kendall_groups, variant="kendall-c")),
    Statistic("kendall-23", "kendall-23", "given", ALL_LEVELS,
              "tau_23: ties count, metric tie |dm| <= --epsilon",
              "Deutsch et al. 2023, Ties Matter", swaps="pairs", credits_ties=True,
              groups=partial(kendall_groups, variant="kendall-23")),
    Statistic("acc-23", "acc-23", "given", ALL_LEVELS,
              "pairwise accuracy with ties, metric tie |dm| <= --epsilon",
              "Deutsch et al. 2023, Ties Matter", swaps="pairs", credits_ties=True,
              groups=_ACC_23),
    Statistic("acc-eq", "acc-23", "calibrated", ALL_LEVELS,
              "acc-23 with the tie threshold calibrated on the data",
              "Deutsch et al. 2023, Ties Matter", swaps="pairs", credits_ties=True,
              groups=_ACC_23),
    Statistic("pairwise-accuracy", "acc-23", "zero", ("system",),
              "share of system pairs ordered as people order them (exact ties)",
              "Kocmi et al. 2021, To Ship or Not to Ship", credits_ties=True, groups=_ACC_23),
    Statistic("spa", "spa", "none", ("system",),
              "soft pairwise accuracy over per-pair permutation p-values",
              "Thompson et al. 2024", needs_segments=True),
    Statistic("weighted-tau", "weighted-tau", "none", ALL_LEVELS,
              "weighted Kendall's tau, scipy.stats.weightedtau's defaults (hyperbolic "
              "weights, top ranks count more)", "Vigna 2015", groups=weighted_tau_groups),
    *(Statistic(name, name, "none", ALL_LEVELS, description, "Vigna 2015", groups=kernel)
      for name, description, kernel in (
          ("weighted-tau-human", "weighted Kendall's tau, the units' importance by people's "
           "ranking (scipy.stats.weightedtau rank=None, x = human): the top-rated by people "
           "count more", partial(weighted_tau_groups, rank="human")),
          ("weighted-tau-metric", "weighted Kendall's tau, the units' importance by the "
           "metric's ranking (rank=None, x = metric)",
           partial(weighted_tau_groups, rank="metric")),
          ("weighted-tau-product", "weighted Kendall's tau, a pair's weight the product of "
           "its two ranks' weights (scipy's additive=False)",
           partial(weighted_tau_groups, additive=False)))),
    Statistic("pdp", "pdp", "none", ALL_LEVELS,
              "pairwise-difference Pearson: r of within-group score differences, pooled "
              "over groups", "mt-metrics-eval stats.py (Pearson, pdp=True)",
              groups=pearson_groups),
    *(Statistic(name, name, "none", ("segment",), description, paper, on_scale=True,
                categorical=True, declared=True, groups=partial(kappa_groups, weights=weights))
      for name, weights, description, paper in (
          ("kappa", None, "Cohen's kappa of rounded (half up) integer scores", "Cohen 1960"),
          ("kappa-linear", "linear", "linearly weighted kappa of rounded integer scores",
           "Cohen 1968"),
          ("qwk", "quadratic", "quadratic weighted kappa of rounded integer scores (essay "
           "scoring)", "Cohen 1968; Williamson et al. 2012"))),
    Statistic("krippendorff", "krippendorff", "none", ("segment",),
              "Krippendorff's alpha, interval, judge and human as two coders",
              "Krippendorff 2011", on_scale=True, declared=True,
              groups=partial(alpha_groups, level="interval")),
    Statistic("krippendorff-ratio", "krippendorff-ratio", "none", ("segment",),
              "Krippendorff's alpha, ratio (values >= 0), judge and human as two coders",
              "Krippendorff 2011", on_scale=True, declared=True, nonnegative=True,
              groups=partial(alpha_groups, level="ratio")),
    Statistic("krippendorff-ordinal", "krippendorff-ordinal", "none", ("segment",),
              "Krippendorff's alpha, ordinal, of rounded integer scores", "Krippendorff 2011",
              on_scale=True, categorical=True, declared=True,
              groups=partial(alpha_groups, level="ordinal")),
    Statistic("krippendorff-nominal", "krippendorff-nominal", "none", ("segment",),
              "Krippendorff's alpha, nominal, of rounded integer scores", "Krippendorff 2011",
              on_scale=True, categorical=True, declared=True,
              groups=partial(alpha_groups, level="nominal")),
    *(Statistic(name, name, "none", ("segment",), description, paper, better="lower",
                on_scale=True, categorical=True, declared=True, groups=kernel)
      for name, description, paper, kernel in (
          ("ckld", "choice KL divergence KL(people || judge) of the rounded verdict "
           "distributions, judge add-1/2 smoothed (lower is better)",
           "Choi et al. 2025, Mitigating Selection Bias (CKLD)", ckld_groups),
          ("ckld-uniform", "choice KL divergence KL(uniform || judge) of the rounded "
           "verdicts: the judge's choice bias (lower is better)",
           "Choi et al. 2025, Mitigating Selection Bias (CKLD)",
           partial(ckld_groups, reference="uniform")),
          ("wasserstein", "Wasserstein-1 between the judge's and people's rating "
           "histograms over ordinal bins, in scale points (lower is better)",
           "Vallender 1974; scipy.stats.wasserstein_distance", wasserstein_groups))),
    Statistic("wasserstein-real", "wasserstein-real", "none", ("segment",),
              "Wasserstein-1 between the judge's and people's real-valued score "
              "distributions, nothing rounded, in score units (lower is better)",
              "Vallender 1974; scipy.stats.wasserstein_distance", better="lower",
              on_scale=True, groups=wasserstein_real_groups),
    Statistic("mae", "mae", "none", ALL_LEVELS, "mean absolute error |judge - human| "
              "(lower is better)", "Willmott and Matsuura 2005", better="lower", on_scale=True,
              groups=mae_groups),
    Statistic("rmse", "rmse", "none", ALL_LEVELS, "root mean squared error (lower is better)",
              "Willmott and Matsuura 2005", better="lower", on_scale=True, groups=rmse_groups),
    Statistic("bias", "bias", "none", ALL_LEVELS, "mean judge - human (positive: more "
              "lenient, best at 0)", "mean signed error", better="zero", on_scale=True,
              groups=bias_groups),
    Statistic("brier", "brier", "none", ("segment",), "Brier score of probabilities against "
              "0/1 labels (lower is better)", "Brier 1950", better="lower", on_scale=True,
              probabilities=True, groups=brier_groups),
    Statistic("ece", "ece", "none", ("segment",), "expected calibration error, 10 equal-width "
              "bins (lower is better)", "Naeini et al. 2015; Guo et al. 2017",
              better="lower", on_scale=True, probabilities=True,
              groups=partial(ece_groups, binning="width")),
    Statistic("ece-mass", "ece-mass", "none", ("segment",), "expected calibration error, 10 "
              "equal-mass bins (lower is better)", "Nixon et al. 2019", better="lower",
              on_scale=True, probabilities=True, groups=partial(ece_groups, binning="mass")),
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


def group_values(kernel: str, *, human: FloatArray, metric: FloatArray, epsilon: float = 0.0,
                 domain: Sequence[float] | None = None) -> FloatArray:
    """Per-group values (..., G) of the kernel named `kernel` (an entry that is its own
    kernel: not acc-eq or pairwise-accuracy, whose threshold is not the caller's) on padded
    (..., G, U) arrays: `Statistic.group_values`."""
    spec = get(kernel)
    if spec.kernel != spec.name:
        raise ValueError(f"{kernel} is not a kernel: it is computed by {spec.kernel!r}")
    return spec.group_values(human=human, metric=metric, epsilon=epsilon, domain=domain)


def help_text() -> str:
    """One entry per statistic ("name: description [system level only]"), joined by "; "
    (click folds newlines in option help), for CLI help."""
    lines = []
    for s in STATISTICS.values():
        where = "" if s.levels == ALL_LEVELS else f" [{'/'.join(s.levels)} level only]"
        lines.append(f"{s.name}: {s.description}{where}")
    return "; ".join(lines)
