"""Best-of-N meta-evaluation: a judge's scores (or its pick) over N candidates per prompt
against the candidates people marked correct, as RewardBench 2 scores reward models
(Malik et al. 2025, "RewardBench 2: Advancing Reward Model Evaluation"; allenai/reward-bench,
`process_single_model`).

Input: one entry per (prompt, candidate): `groups` (the prompt), `scores` (the judge's score
of the candidate, higher is better; a judge that only picks gives 1 to its pick and 0 to the
others) and `correct` (people's best candidates; several = a tie among correct answers).

- `best_of_n_accuracy`: a prompt is right when every correct candidate scores strictly above
  every incorrect one, min(correct) > max(incorrect) (RewardBench 2's rule: the chosen
  completion above all three rejected ones; with several correct candidates, its Ties
  "accurate"). A score tie between the worst correct and the best incorrect is wrong.
- `pairwise_reduction`: the same scores as N_correct x N_incorrect pairwise comparisons per
  prompt (N - 1 with one correct candidate): the share the correct candidate wins, a score tie
  counting one half, averaged over prompts (each prompt weighs the same).
- `ties_score`: RewardBench 2's Ties subset score, over prompts that come as a "ref" prompt
  (one correct answer) and a "tied" prompt (several) sharing a pair id:
  0.30 acc_tied + 0.30 acc_ref + 0.20 P(m_ci,tied > m_cc) + 0.20 P(min(m_ci,ref, m_ci,tied) >
  m_cc) + 0.01 mean(tanh(min(m_ci,ref, m_ci,tied) / m_cc - 1)), with m_cc = max(correct) -
  min(correct) of the tied prompt, m_ci = min(correct) - max(incorrect), the two
  probabilities over the pairs having both prompts, and a NaN tanh term (0 / 0) counted 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    from meta_eval.arrays import BoolArray, FloatArray


@dataclass(frozen=True)
class PromptStats:
    """Per prompt (in order of first appearance): its id, whether it is right under
    RewardBench 2's rule, the spread of its correct candidates' scores (NaN with one) and
    the margin min(correct) - max(incorrect)."""

    prompts: list[str]
    accurate: BoolArray
    correct_spread: FloatArray
    margin: FloatArray


def prompt_stats(*, scores: npt.ArrayLike, correct: npt.ArrayLike, groups: npt.ArrayLike
                 ) -> PromptStats:
    """RewardBench 2's per-prompt statistics. ValueError for a prompt without a correct or
    without an incorrect candidate, or a score that is not finite."""
    s = np.asarray(scores, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    g = np.asarray(groups).astype(str)
    if not (s.shape == ok.shape == g.shape) or s.ndim != 1:
        raise ValueError("scores, correct and groups must be one value per candidate")
    if not np.isfinite(s).all():
        raise ValueError("every candidate needs a finite score")
    names, first, inverse = np.unique(g, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    k = len(names)
    n_correct = np.bincount(inverse, weights=ok, minlength=k)
    n_all = np.bincount(inverse, minlength=k)
    bad = np.flatnonzero((n_correct == 0) | (n_correct == n_all))
    if len(bad):
        raise ValueError(f"prompt '{names[bad[0]]}' needs at least one correct and one "
                         "incorrect candidate")
    best_correct = np.full(k, -np.inf)
    worst_correct = np.full(k, np.inf)
    best_incorrect = np.full(k, -np.inf)
    np.maximum.at(best_correct, inverse[ok], s[ok])
    np.minimum.at(worst_correct, inverse[ok], s[ok])
    np.maximum.at(best_incorrect, inverse[~ok], s[~ok])
    margin = worst_correct - best_incorrect
    spread = np.where(n_correct > 1, best_correct - worst_correct, np.nan)
    return PromptStats([str(names[i]) for i in order], (margin > 0)[order], spread[order],
                       margin[order])


def best_of_n_accuracy(*, scores: npt.ArrayLike, correct: npt.ArrayLike,
                       groups: npt.ArrayLike) -> float:
    """The share of prompts whose correct candidates all score above every incorrect one."""
    return float(prompt_stats(scores=scores, correct=correct, groups=groups).accurate.mean())


def pairwise_reduction(*, scores: npt.ArrayLike, correct: npt.ArrayLike,
                       groups: npt.ArrayLike) -> float:
    """The mean over prompts of the share of (correct, incorrect) candidate pairs the correct
    one wins (a score tie: one half)."""
    s = np.asarray(scores, dtype=float)
    ok = np.asarray(correct, dtype=bool)
    g = np.asarray(groups).astype(str)
    prompt_stats(scores=s, correct=ok, groups=g)  # the same checks
    shares = []
    for name in dict.fromkeys(g.tolist()):
        here = g == name
        diff = s[here & ok][:, None] - s[here & ~ok][None, :]
        shares.append(float(((diff > 0) + 0.5 * (diff == 0)).mean()))
    return float(np.mean(shares))


def ties_score(*, scores: npt.ArrayLike, correct: npt.ArrayLike, groups: npt.ArrayLike,
               kind: npt.ArrayLike, pair: npt.ArrayLike) -> float:
    """RewardBench 2's Ties score (module docstring). `kind` is "ref" or "tied" per
    candidate, `pair` the id a ref prompt shares with its tied prompt."""
    g = np.asarray(groups).astype(str)
    kinds = np.asarray(kind).astype(str)
    pairs = np.asarray(pair).astype(str)
    if not set(np.unique(kinds)) <= {"ref", "tied"}:
        raise ValueError("kind must be 'ref' or 'tied'")
    stats = prompt_stats(scores=scores, correct=correct, groups=g)
    first = {name: i for i, name in reversed(list(enumerate(g.tolist())))}
    by_kind: dict[str, dict[str, int]] = {"ref": {}, "tied": {}}
    for p, name in enumerate(stats.prompts):
        row = first[name]
        key = str(pairs[row])
        if key in by_kind[str(kinds[row])]:
            raise ValueError(f"two {kinds[row]} prompts share the pair id '{key}'")
        by_kind[str(kinds[row])][key] = p
    ref_acc = (float(np.mean([stats.accurate[p] for p in by_kind["ref"].values()]))
               if by_kind["ref"] else 0.0)
    tied_acc = (float(np.mean([stats.accurate[p] for p in by_kind["tied"].values()]))
                if by_kind["tied"] else 0.0)
    both = sorted(set(by_kind["ref"]) & set(by_kind["tied"]))
    if not both:
        raise ValueError("the Ties score needs a ref and a tied prompt with one pair id")
    spread = np.array([stats.correct_spread[by_kind["tied"][k]] for k in both])
    tied_margin = np.array([stats.margin[by_kind["tied"][k]] for k in both])
    hard = np.minimum(np.array([stats.margin[by_kind["ref"][k]] for k in both]), tied_margin)
    with np.errstate(divide="ignore", invalid="ignore"):
        tanh = np.nan_to_num(np.tanh(hard / spread - 1.0), nan=0.0)
    return float(0.30 * tied_acc + 0.30 * ref_acc + 0.20 * np.mean(tied_margin > spread)
                 + 0.20 * np.mean(hard > spread) + 0.01 * np.mean(tanh))
