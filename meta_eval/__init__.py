"""meta_eval: how well do metrics agree with people? Pure numpy/scipy/pandas statistics.

Nothing here imports judgebench. Human and metric values are keyword-only arguments
everywhere (`human=`, `metric=`), scores are (items, systems) matrices with NaN for missing
values (a unit missing either score is dropped for that pair of columns only), and every
function returns a small result object. Each module's docstring gives the formulas and the
papers they follow.

Correlation with human judgments (`levels`, `correlation`, `system`, `calibration`)
    evaluate(statistic, *, human, metric, level="segment", grouping="none", epsilon=0.0,
             bootstrap=0, ci=0.95, seed=0, permutations=1000, average="macro",
             replace_nans_with_zeros=False, domain=None) -> Result
        One statistic for one metric/human pair. statistic: pearson, spearman, kendall
        (tau-b), kendall-c, kendall-23, acc-23 (tie threshold `epsilon`), acc-eq (acc-23 with
        the epsilon calibrated on the data, reported in Result.epsilon), weighted-tau
        (scipy.stats.weightedtau), pdp (mt-metrics-eval's pairwise-difference Pearson),
        pairwise-accuracy and spa (system level). average ("macro" | "micro") and
        replace_nans_with_zeros: how groups are averaged (mt-metrics-eval's
        AverageCorrelation); domain: declared labels (kappa) or values (alpha).
        level: system | segment; grouping: none | item | system.
        Result: value, n (units or groups averaged), skipped (undefined groups), ci_low,
        ci_high (bootstrap over items), p_value (ungrouped pearson/spearman/kendall),
        epsilon (the tie threshold given, or chosen by acc-eq).
    STATISTICS: {name: Statistic} (`meta_eval.statistics`), the one table of statistics:
        kernel, tie threshold (none | given | zero | calibrated), levels, description,
        paper, scipy p-value, permutation swaps (units | pairs), credits_ties,
        needs_segments. Iterating it gives the names; statistic_help() is one line each.
    LEVELS, GROUPINGS: the accepted names.
    Ties: rank statistics treat values within relative 1e-12 as ties (`snap`); system
    means are exact, order-independent sums.
    calibrate_epsilon(*, human, metric, groups=None) -> Calibration(epsilon, value, ...)
        Exact tie calibration over 1-D arrays, sort-based, memory O(n log n).
    calibrate_groups(*, human, metric) -> Calibration   (padded (groups, units) arrays)
    pair_counts(*, human, metric, epsilon=0.0, groups=None) -> PairCounts
        Concordant/discordant/tie counts per group in O(n log^2 n).
    spa(*, human, metric, permutations=1000, seed=0) -> Result
    pairwise_accuracy(*, human, metric) -> Result   (system-level vectors)
    group_values(kernel, *, human, metric, epsilon=0.0) -> per-group values of padded arrays.
    system_means(*, human, metric), arrange(*, human, metric, level, grouping) (levels).
    score_matrices(frame, columns, item="item", system="system") -> ScoreMatrices
        Pivot a wide scores table into matrices.

Comparing metrics (`significance`)
    compare(statistic, *, human, metric_a, metric_b, level, grouping,
            method="permutation" | "williams", **options) -> Comparison
        One-sided p-value for "metric_a is better than metric_b": PERM-BOTH permutation test
        (pair-outcome swaps for kendall-23/acc-23/acc-eq; exact binomial tail where group
        weights are equal; early stopping once p <= alpha is decided, marked by
        Comparison.p_value_early) or Williams' test for Pearson.
    permutation_test(...), williams(...), williams_test(*, r_ha, r_hb, r_ab, n) -> float
    significance_clusters(statistic, *, human, metrics, level, grouping, alpha=0.05,
                          method="permutation", **options) -> Ranking
        WMT-style ranking: sorted by the statistic; a new cluster starts when a metric is
        significantly worse than a member of the current cluster.

Agreement (`agreement`, `pairwise`)
    cohen_kappa(*, human, metric, weights=None | "linear" | "quadratic" | (k, k) matrix) -> Result
    krippendorff_alpha(*, ratings, level="nominal" | "ordinal" | "interval" | "ratio",
                       domain=None) -> Result
        (`domain`: the declared values; a rating outside it is a ValueError)
    human_ceiling(statistic, *, raters, metric=None, level, grouping) -> Ceiling
        Leave-one-rater-out agreement, and the metric as a fraction of it.
    Judge against people on the human scale (also `--statistic` entries: kappa,
    kappa-linear, qwk, krippendorff[-ratio|-ordinal|-nominal], mae, rmse, bias, brier, ece,
    ece-mass; `Statistic.better` says which way is better):
    categories(x) -> x rounded half up to integers (the kappa family's one rounding rule)
    confusion_table(*, human, metric) -> Confusion (judge x human category counts)
    brier_score(*, human, metric), expected_calibration_error(*, human, metric, bins=10,
        binning="width" | "mass") -> Result; reliability_curve(...) -> Reliability
        (`reliability`: probabilities in [0, 1] against 0/1 labels)
    pairwise_agreement(*, human, verdict_ab, verdict_ba) -> PairwiseAgreement
        Judge accuracy per presentation order, in both orders, positional consistency,
        tie rates.
    preferences(values, *, name) -> P(A better) in [0, 1] (a, b, tie or a number in [0, 1]).
    evaluate_pairwise(*, judges={name: Verdicts(ab=, ba=, combined=)}, humans, items,
                      categories=None, ties="drop" | "half" | "class", bootstrap=0, ci=0.95,
                      seed=0, compare=False) -> PairwiseEvaluation
        accuracy-ab/-ba, accuracy, both-correct, consistency, tie-rate, kappa-orders and
        kappa of every judge, per category and macro-averaged, item-bootstrap CIs, the
        leave-one-annotator-out ceiling, McNemar / sign-flip significance clusters.
    paired_sign_test(*, credit_a, credit_b) -> Comparison (exact McNemar where credit is
        binary, else a sign-flip permutation test).

How far a conclusion can be trusted (import from the modules; issue 27)
    alt_test.alt_test(*, humans, judge, epsilon, score="accuracy" | "neg-rmse", alpha=0.05,
                      min_items=30) -> AltTestResult (winning_rate, advantage_probability)
        The alternative-annotator test (Calderon, Reichart and Dror 2025).
    missingness.manski_bounds(value, *, human, metric, present, human_domain,
                              metric_domain) -> Bounds;  missingness.tipping_point(...)
        A statistic's worst and best case over its missing cells (Manski); how many failed
        cells against a metric reach a threshold.
    construct.construct_validity(*, criteria, metrics, intended, ...) -> [ConstructResult]
        Campbell and Fiske's multitrait-multimethod tests.
    transitivity.transitivity(*, items, system_a, system_b, preference) -> Transitivity
        Cyclic majority triples and the Bradley-Terry likelihood-ratio misfit test.
    power.power_plan(delta, *, r_a, r_ab, rho=None, ...) -> PowerPlan
        Items (and annotators) to separate two correlations by delta (Williams' test).
    system_sensitivity.system_sensitivity(*, human, metrics, values, systems, leave_out=1,
                                          bootstrap=0) -> [Sensitivity]
        Leave-k-systems-out and system bootstrap of the winner, order and clusters.
    sequential.sequential_clusters(values, names, *, alpha, margin, batch, top_k, order)
        -> SequentialResult;  sequential.eb_confidence_sequence(x, alpha)
        Anytime-valid empirical-Bernstein confidence sequences; when a study is settled.

Error spans against people's (import from `spans`; issue 30)
    Spans.of(segment, start, end, severity) -> Spans (parallel arrays of [start, end) spans)
    char_counts / char_precision / char_recall / char_f1(*, human, metric,
        credit="partial" | "match" | "ignore") (WMT23 QE task 2, xCOMET: per character)
    span_counts / span_precision / span_recall / span_f1(*, human, metric,
        match="overlap" | "exact", severity=False) (per span; any-match, micro)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from meta_eval.agreement import categories, cohen_kappa, confusion_table, krippendorff_alpha
    from meta_eval.calibration import Calibration, calibrate_epsilon, calibrate_groups
    from meta_eval.ceiling import Ceiling, human_ceiling
    from meta_eval.levels import GROUPINGS, LEVELS, bootstrap_values, evaluate
    from meta_eval.pairs import TIE_RTOL, PairCounts, pair_counts, snap
    from meta_eval.pairwise import (
        PairwiseAgreement,
        paired_sign_test,
        pairwise_agreement,
        preferences,
    )
    from meta_eval.pairwise_eval import PairwiseEvaluation, Verdicts, evaluate_pairwise
    from meta_eval.reliability import brier_score, expected_calibration_error, reliability_curve
    from meta_eval.results import Comparison, RankedMetric, Ranking, Result
    from meta_eval.significance import (
        compare,
        permutation_test,
        significance_clusters,
        williams,
        williams_test,
    )
    from meta_eval.statistics import STATISTICS, Statistic, group_values
    from meta_eval.statistics import help_text as statistic_help
    from meta_eval.system import pairwise_accuracy, spa
    from meta_eval.table import ScoreMatrices, score_matrices

__all__ = [
    "GROUPINGS",
    "LEVELS",
    "STATISTICS",
    "TIE_RTOL",
    "Calibration",
    "Ceiling",
    "Comparison",
    "PairCounts",
    "PairwiseAgreement",
    "PairwiseEvaluation",
    "RankedMetric",
    "Ranking",
    "Result",
    "ScoreMatrices",
    "Statistic",
    "Verdicts",
    "bootstrap_values",
    "brier_score",
    "calibrate_epsilon",
    "calibrate_groups",
    "categories",
    "cohen_kappa",
    "compare",
    "confusion_table",
    "evaluate",
    "evaluate_pairwise",
    "expected_calibration_error",
    "group_values",
    "human_ceiling",
    "krippendorff_alpha",
    "pair_counts",
    "paired_sign_test",
    "pairwise_accuracy",
    "pairwise_agreement",
    "permutation_test",
    "preferences",
    "reliability_curve",
    "score_matrices",
    "significance_clusters",
    "snap",
    "spa",
    "statistic_help",
    "williams",
    "williams_test",
]

# Each name loads its module on first use, so `import meta_eval` (or one submodule, as the CLI's
# help text does) does not import scipy and pandas.
_WHERE = {
    "Calibration": ("meta_eval.calibration", "Calibration"),
    "Ceiling": ("meta_eval.ceiling", "Ceiling"),
    "Comparison": ("meta_eval.results", "Comparison"),
    "GROUPINGS": ("meta_eval.levels", "GROUPINGS"),
    "LEVELS": ("meta_eval.levels", "LEVELS"),
    "PairCounts": ("meta_eval.pairs", "PairCounts"),
    "PairwiseAgreement": ("meta_eval.pairwise", "PairwiseAgreement"),
    "PairwiseEvaluation": ("meta_eval.pairwise_eval", "PairwiseEvaluation"),
    "Verdicts": ("meta_eval.pairwise_eval", "Verdicts"),
    "evaluate_pairwise": ("meta_eval.pairwise_eval", "evaluate_pairwise"),
    "paired_sign_test": ("meta_eval.pairwise", "paired_sign_test"),
    "preferences": ("meta_eval.pairwise", "preferences"),
    "RankedMetric": ("meta_eval.results", "RankedMetric"),
    "Ranking": ("meta_eval.results", "Ranking"),
    "Result": ("meta_eval.results", "Result"),
    "STATISTICS": ("meta_eval.statistics", "STATISTICS"),
    "ScoreMatrices": ("meta_eval.table", "ScoreMatrices"),
    "Statistic": ("meta_eval.statistics", "Statistic"),
    "TIE_RTOL": ("meta_eval.pairs", "TIE_RTOL"),
    "bootstrap_values": ("meta_eval.levels", "bootstrap_values"),
    "calibrate_epsilon": ("meta_eval.calibration", "calibrate_epsilon"),
    "calibrate_groups": ("meta_eval.calibration", "calibrate_groups"),
    "brier_score": ("meta_eval.reliability", "brier_score"),
    "categories": ("meta_eval.agreement", "categories"),
    "cohen_kappa": ("meta_eval.agreement", "cohen_kappa"),
    "confusion_table": ("meta_eval.agreement", "confusion_table"),
    "expected_calibration_error": ("meta_eval.reliability", "expected_calibration_error"),
    "reliability_curve": ("meta_eval.reliability", "reliability_curve"),
    "compare": ("meta_eval.significance", "compare"),
    "evaluate": ("meta_eval.levels", "evaluate"),
    "group_values": ("meta_eval.statistics", "group_values"),
    "human_ceiling": ("meta_eval.ceiling", "human_ceiling"),
    "krippendorff_alpha": ("meta_eval.agreement", "krippendorff_alpha"),
    "pair_counts": ("meta_eval.pairs", "pair_counts"),
    "pairwise_accuracy": ("meta_eval.system", "pairwise_accuracy"),
    "pairwise_agreement": ("meta_eval.pairwise", "pairwise_agreement"),
    "permutation_test": ("meta_eval.significance", "permutation_test"),
    "score_matrices": ("meta_eval.table", "score_matrices"),
    "significance_clusters": ("meta_eval.significance", "significance_clusters"),
    "snap": ("meta_eval.pairs", "snap"),
    "spa": ("meta_eval.system", "spa"),
    "statistic_help": ("meta_eval.statistics", "help_text"),
    "williams": ("meta_eval.significance", "williams"),
    "williams_test": ("meta_eval.significance", "williams_test"),
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module, attribute = _WHERE[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'meta_eval' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
