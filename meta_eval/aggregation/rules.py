"""The built-in rules, as registered by the judgebench_socialchoice plugin."""

from __future__ import annotations

from meta_eval.aggregation.base import PAIRWISE, PROFILE, FunctionRule
from meta_eval.aggregation.intervals import check_bootstrap
from meta_eval.aggregation.kemeny import kemeny
from meta_eval.aggregation.majority import baldwin, condorcet, copeland, minimax, schulze
from meta_eval.aggregation.positional import (
    TIES,
    borda,
    dowdall,
    geometric_mean,
    mean,
    median,
    plurality,
)
from meta_eval.aggregation.rating import bradley_terry, elo
from meta_eval.aggregation.winrate import check_baseline, check_lengths, lc_win_rates, win_rates

_AVERAGE = "a system is averaged over the voters that scored it"
_BALLOT = "a voter ranks only the systems it scored; the others get no points from it"
_PAIRS = ("a voter counts in a pairwise contest only if it scored both systems; a pair "
          "nobody compared is a tie; a system with no data is ranked last")
BOTH = frozenset({PROFILE, PAIRWISE})
ONLY_PROFILE = frozenset({PROFILE})
ONLY_PAIRWISE = frozenset({PAIRWISE})
_VERDICTS = ("each comparison counts from the system's side (P(A better) if it is A, 1 - P "
             "if B); rows without a verdict are left out; a system with none is ranked last")
_TIE_CHOICES = {"ties": TIES}

BUILTIN_RULES: tuple[FunctionRule, ...] = (
    FunctionRule("mean", mean, "weighted arithmetic mean of the scores", _AVERAGE,
                 supports_make_win=True),
    FunctionRule("geometric-mean", geometric_mean,
                 "weighted geometric mean (positive scores; lower-is-better voters give 1/x)",
                 _AVERAGE),
    FunctionRule("median", median, "weighted median of the scores", _AVERAGE),
    FunctionRule("plurality", plurality,
                 "weighted count of first places; a tie of k at the top gives each 1/k "
                 "(ties=average), 0 (low) or 1 (high)", _BALLOT, choices=_TIE_CHOICES,
                 supports_make_win=True),
    FunctionRule("borda", borda,
                 "Borda count: #systems ranked below; tied systems get the mean "
                 "(ties=average), lowest (low) or highest (high) of their positions' points",
                 _BALLOT, choices=_TIE_CHOICES, supports_make_win=True),
    FunctionRule("dowdall", dowdall,
                 "Dowdall count: 1/position; ties=average|low|high as for borda", _BALLOT,
                 choices=_TIE_CHOICES, supports_make_win=True),
    FunctionRule("copeland", copeland,
                 "pairwise majority wins + tie_score (0.5) per tied contest", _PAIRS, BOTH),
    FunctionRule("minimax", minimax,
                 "Simpson-Kramer: smallest worst pairwise defeat (variant=margins|"
                 "winning_votes|opposition)", _PAIRS, BOTH,
                 choices={"variant": ("margins", "winning_votes", "opposition")}),
    FunctionRule("schulze", schulze,
                 "Schulze beatpath (strength=winning_votes|margins)", _PAIRS, BOTH,
                 choices={"strength": ("winning_votes", "margins")}),
    FunctionRule("baldwin", baldwin,
                 "eliminate the Borda loser round by round; ties=average|low|high as for "
                 "borda", _BALLOT, choices=_TIE_CHOICES),
    FunctionRule("condorcet", condorcet,
                 "the Condorcet winner, or none when the top is a cycle; ranking by the "
                 "majority graph's components", _PAIRS, BOTH, supports_make_win=True),
    FunctionRule("kemeny", kemeny,
                 "Kemeny-Young: exact dynamic programme up to 16 systems, integer programme "
                 "up to max_exact (64) systems, else Borda start + local search (reported "
                 "approximate)", _PAIRS, BOTH),
    FunctionRule("bradley-terry", bradley_terry,
                 "Bradley-Terry maximum likelihood, Davidson ties, soft verdicts as fractional "
                 "wins; score = log-strength; bootstrap=N: CIs over resampled pairs",
                 "each voter's ballot becomes the comparisons of the pairs it scored", BOTH,
                 validate=check_bootstrap),
    FunctionRule("elo", elo,
                 "Elo ratings averaged over seeded random orders of the comparisons; "
                 "bootstrap=N: CIs over resampled pairs",
                 "each voter's ballot becomes the comparisons of the pairs it scored", BOTH,
                 validate=check_bootstrap),
    FunctionRule("win-rate", win_rates,
                 "win rate in percent against baseline=NAME (ties 0.5, soft verdicts as "
                 "they are; no baseline: all opponents pooled), with standard error, discrete "
                 "win rate and counts (AlpacaEval); baseline_row=true: the baseline's own "
                 "row too (50, as AlpacaEval's leaderboard)", _VERDICTS, ONLY_PAIRWISE,
                 choices={"baseline_row": (True, False)}, validate=check_baseline),
    FunctionRule("lc-win-rate", lc_win_rates,
                 "length-controlled win rate against baseline=NAME (Dubois et al. 2024): "
                 "logistic fit with a tanh length term [+ instruction difficulty], predicted "
                 "at equal length; needs length_a/length_b or output_a/output_b; "
                 "baseline_row=true: the baseline's own row too (50)",
                 _VERDICTS, ONLY_PAIRWISE, choices={"instruction": ("auto", True, False),
                                                    "baseline_row": (True, False)},
                 validate=check_lengths),
)

RULES: dict[str, FunctionRule] = {rule.name: rule for rule in BUILTIN_RULES}
