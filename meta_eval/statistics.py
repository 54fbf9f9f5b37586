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

EPSILON_MODES = ("none", "given", "zero", "calibrated")
SWAP_MODES = ("units", "pairs")
ALL_LEVELS = ("system", "segment")
PAIR_KERNELS = ("acc-23", "kendall-23")  # kernels whose value is a count of right pairs


@dataclass(frozen=True)
class Statistic:
    """One statistic: how it is computed, tested and described."""

    name: str
    kernel: str  # meta_eval.correlation kernel name, or "spa"
    epsilon: str  # one of EPSILON_MODES
    levels: tuple[str, ...]
    description: str  # one line, for CLI help
    paper: str
    scipy_p_value: bool = False  # ungrouped two-sided p-value from scipy
    swaps: str = "units"  # one of SWAP_MODES
    credits_ties: bool = False  # a metric tie can count as right (defined for a constant)
    needs_segments: bool = False  # computed from segment scores, not from system scores

    def __post_init__(self) -> None:
        if self.epsilon not in EPSILON_MODES:
            raise ValueError(f"{self.name}: epsilon must be one of {EPSILON_MODES}")
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
