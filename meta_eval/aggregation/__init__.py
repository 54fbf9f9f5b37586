"""Social-choice aggregation of system rankings (Colombo et al. 2022; Rofin et al. 2023).

Voters (benchmark tasks, metrics, or items) score systems; a rule turns their scores, or a
set of pairwise comparisons, into one ranking with ties kept. Pure numpy/scipy/pandas.

    from meta_eval.aggregation import Profile, RULES
    profile = Profile.from_rankings([["a", "b", "c"], ["b", "c", "a"]], weights=[3, 2])
    RULES["borda"].rank(profile).ranking
"""

from meta_eval.aggregation.agreement import (
    HumanAgreement,
    against_human,
    kendall_tau_b,
    pairwise_accuracy,
    ranking_scores,
    rule_agreement,
    tier_scores,
)
from meta_eval.aggregation.base import (
    PAIRWISE,
    PROFILE,
    AggregationRule,
    FunctionRule,
    NotApplicable,
    Rule,
    RuleResult,
    as_rule,
    data_kind,
)
from meta_eval.aggregation.bootstrap import BootstrapResult, SystemUncertainty, bootstrap
from meta_eval.aggregation.intervals import score_intervals
from meta_eval.aggregation.kemeny import (
    agreement,
    kemeny,
    kemeny_dp,
    kemeny_local_search,
    kemeny_milp,
)
from meta_eval.aggregation.majority import baldwin, condorcet, copeland, minimax, schulze
from meta_eval.aggregation.positional import (
    TIES,
    borda,
    borda_matrix,
    dowdall,
    geometric_mean,
    mean,
    median,
    plurality,
    score_vector,
    tie_points,
    voter_points,
    weighted_median,
)
from meta_eval.aggregation.profile import Comparisons, PairwiseCounts, Profile
from meta_eval.aggregation.rating import (
    bradley_terry,
    bradley_terry_covariance,
    elo,
    elo_ratings,
    fit_bradley_terry,
    fit_order_effect,
)
from meta_eval.aggregation.rules import BUILTIN_RULES, RULES
from meta_eval.aggregation.tables import (
    KINDS,
    TableError,
    comparisons_from_pairwise,
    detect_kind,
    drop_incomplete,
    human_system_scores,
    profile_from_leaderboard,
    profile_from_scores,
)
from meta_eval.aggregation.weights import SUPPORTED as WEIGHTS_RULES
from meta_eval.aggregation.weights import WinningWeights, weights_to_win
from meta_eval.aggregation.winrate import (
    discrete_win_rate,
    fit_soft_logistic,
    lc_win_rates,
    outcome_counts,
    standard_error,
    win_rate,
    win_rates,
)

__all__ = [
    "BUILTIN_RULES",
    "KINDS",
    "PAIRWISE",
    "PROFILE",
    "RULES",
    "TIES",
    "WEIGHTS_RULES",
    "AggregationRule",
    "BootstrapResult",
    "Comparisons",
    "FunctionRule",
    "HumanAgreement",
    "NotApplicable",
    "PairwiseCounts",
    "Profile",
    "Rule",
    "RuleResult",
    "SystemUncertainty",
    "TableError",
    "WinningWeights",
    "against_human",
    "agreement",
    "as_rule",
    "baldwin",
    "bootstrap",
    "borda",
    "borda_matrix",
    "bradley_terry",
    "bradley_terry_covariance",
    "comparisons_from_pairwise",
    "condorcet",
    "copeland",
    "data_kind",
    "detect_kind",
    "discrete_win_rate",
    "dowdall",
    "drop_incomplete",
    "elo",
    "elo_ratings",
    "fit_bradley_terry",
    "fit_order_effect",
    "fit_soft_logistic",
    "geometric_mean",
    "human_system_scores",
    "kemeny",
    "kemeny_dp",
    "kemeny_local_search",
    "kemeny_milp",
    "kendall_tau_b",
    "lc_win_rates",
    "mean",
    "median",
    "minimax",
    "outcome_counts",
    "pairwise_accuracy",
    "plurality",
    "profile_from_leaderboard",
    "profile_from_scores",
    "ranking_scores",
    "rule_agreement",
    "schulze",
    "score_intervals",
    "score_vector",
    "standard_error",
    "tie_points",
    "tier_scores",
    "voter_points",
    "weighted_median",
    "weights_to_win",
    "win_rate",
    "win_rates",
]
