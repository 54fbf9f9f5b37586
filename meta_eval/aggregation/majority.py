"""Majority (Condorcet-style) rules: they look only at pairwise majorities.

With strict[i, j] the voting weight that prefers i to j and margin[i, j] = strict[i, j] -
strict[j, i] (see profile.PairwiseCounts):

- Condorcet (1785): the system with margin[i, j] > 0 against every other, if any. The
  ranking lists the strongly connected components of the "beats or ties" majority graph
  in order (the first one is the Smith set, Smith 1973); a cycle shares a tier.
- Copeland (1951): wins + tie_score x ties over all pairwise majority contests.
- Minimax / Simpson-Kramer (Simpson 1969, Kramer 1977): the system whose worst defeat is
  smallest; defeat strength is the margin (default), the winning votes, or the pairwise
  opposition (strict[j, i] whatever the result). Score = minus the worst defeat.
- Schulze (2011): strongest beatpath p[i, j] (widest path through the defeat graph, defeat
  strength = winning votes by default, or margins); i beats j iff p[i, j] > p[j, i]. This
  relation is transitive; tiers take the unbeaten systems in turn. Score = #systems beaten.
- Baldwin (1926): repeatedly remove the system(s) with the lowest Borda score among those
  remaining; systems removed together tie. Needs a profile (Borda needs ballots). `ties`
  (average | low | high) scores a voter's ties as Borda does (see positional); Vote'n'Rank
  (Rofin et al. 2023) uses low.

Missing scores: a voter counts in the contest of i and j only if it scored both; a pair
nobody compared has no majority (a tie). A system with no data (no voter of positive weight
scored it; in pairwise data, it is in no comparison) is ranked last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse.csgraph import connected_components

from meta_eval.aggregation.base import RuleResult, layered_result, scored_result
from meta_eval.aggregation.positional import _profile, borda_matrix
from meta_eval.aggregation.profile import PairwiseCounts

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray


def _counts(data: object) -> PairwiseCounts:
    return data.counts  # type: ignore[attr-defined]


def _absent_last(result: RuleResult, systems: tuple[str, ...], present: BoolArray) -> RuleResult:
    absent = tuple(sorted(s for s, ok in zip(systems, present, strict=True) if not ok))
    if not absent:
        return result
    note = f"no data for {list(absent)}: ranked last"
    return RuleResult(
        rule=result.rule,
        tiers=(*result.tiers, absent),
        scores=None if result.scores is None else {**result.scores, **dict.fromkeys(absent,
                                                                                     np.nan)},
        winners=result.winners,
        exact=result.exact,
        note=f"{result.note}; {note}" if result.note else note,
        extra=result.extra,
    )


def _sub(counts: PairwiseCounts, keep: BoolArray) -> PairwiseCounts:
    idx = np.flatnonzero(keep)
    return PairwiseCounts(
        systems=tuple(counts.systems[i] for i in idx),
        strict=counts.strict[np.ix_(idx, idx)],
        ties=counts.ties[np.ix_(idx, idx)],
    )


def copeland(data: object, tie_score: float = 0.5) -> RuleResult:
    """Copeland score: pairwise majority wins plus `tie_score` per tied contest."""
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    wins = (c.margin > 0).sum(axis=1)
    draws = (c.margin == 0).sum(axis=1) - 1
    result = scored_result("copeland", c.systems, wins + float(tie_score) * draws)
    return _absent_last(result, counts.systems, present)


def minimax(data: object, variant: str = "margins") -> RuleResult:
    """Simpson-Kramer minimax: rank by the worst pairwise defeat, smallest first."""
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    against = c.strict.T  # against[i, j] = strict[j, i]: weight preferring j to i
    if variant == "margins":
        defeat = against - c.strict
    elif variant == "winning_votes":
        defeat = np.where(against > c.strict, against, 0.0)
    elif variant == "opposition":
        defeat = against.copy()
    else:
        raise ValueError("minimax variant must be margins, winning_votes or opposition")
    if c.strict.shape[0] < 2:
        worst = np.zeros(c.strict.shape[0])
    else:
        np.fill_diagonal(defeat, -np.inf)
        worst = defeat.max(axis=1)
    result = scored_result("minimax", c.systems, -worst)
    return _absent_last(result, counts.systems, present)


def strongest_paths(defeat: FloatArray) -> FloatArray:
    """Widest-path (bottleneck) strengths between all pairs, Floyd-Warshall style:
    p[i, j] = max over paths i -> j of the weakest link."""
    p = defeat.copy()
    np.fill_diagonal(p, 0.0)
    for k in range(p.shape[0]):
        p = np.maximum(p, np.minimum(p[:, k:k + 1], p[k:k + 1, :]))
    np.fill_diagonal(p, 0.0)
    return p


def schulze(data: object, strength: str = "winning_votes") -> RuleResult:
    """Schulze beatpath method."""
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    if strength == "winning_votes":
        defeat = np.where(c.strict > c.strict.T, c.strict, 0.0)
    elif strength == "margins":
        defeat = np.maximum(c.margin, 0.0)
    else:
        raise ValueError("schulze strength must be winning_votes or margins")
    p = strongest_paths(defeat)
    beats = p > p.T
    result = layered_result("schulze", c.systems, beats, scores=beats.sum(axis=1).astype(float))
    return _absent_last(result, counts.systems, present)


def majority_components(margin: FloatArray) -> list[list[int]]:
    """Strongly connected components of the graph i -> j when margin[i, j] >= 0, best
    first. Every pair has an edge one way or both, so the components are totally ordered;
    the first is the Smith set."""
    n = margin.shape[0]
    if n == 0:
        return []
    weak = margin >= 0
    k, labels = connected_components(weak, directed=True, connection="strong")
    members = [np.flatnonzero(labels == c).tolist() for c in range(k)]
    # a component ahead of another beats it outright; count the components each one beats
    beaten = [sum(bool((~weak[np.ix_(other, mine)]).all()) for other in members if other != mine)
              for mine in members]
    order = sorted(range(k), key=lambda c: -beaten[c])
    return [members[c] for c in order]


def condorcet(data: object) -> RuleResult:
    """The Condorcet winner (beats every other system by a strict majority), or none."""
    counts = _counts(data)
    present = data.present  # type: ignore[attr-defined]
    c = _sub(counts, present)
    components = majority_components(c.margin)
    tiers = tuple(tuple(sorted(c.systems[i] for i in comp)) for comp in components)
    if tiers and len(tiers[0]) == 1:
        winners: tuple[str, ...] = tiers[0]
        note = ""
    else:
        winners = ()
        note = (f"no Condorcet winner: the top set {list(tiers[0])} has a majority cycle "
                "or tie" if tiers else "no systems")
    result = RuleResult("condorcet", tiers, None, winners, note=note)
    return _absent_last(result, counts.systems, present)


def baldwin(data: object, ties: str = "average") -> RuleResult:
    """Baldwin: eliminate the Borda loser(s) round by round, Borda ties scored by `ties`
    (average | low | high); the last left win."""
    p = _profile(data, "baldwin")
    support = borda_matrix(p.counts, ties)
    present = p.present
    remaining = list(np.flatnonzero(present))
    out: list[tuple[str, ...]] = []
    while remaining:
        sub = support[np.ix_(remaining, remaining)]
        score = sub.sum(axis=1)
        low = score.min()
        scale = max(1.0, abs(score).max())
        losers = [remaining[k] for k in np.flatnonzero(score <= low + 1e-9 * scale)]
        if len(losers) == len(remaining):
            out.append(tuple(sorted(p.systems[i] for i in remaining)))
            break
        out.append(tuple(sorted(p.systems[i] for i in losers)))
        remaining = [i for i in remaining if i not in losers]
    tiers = tuple(reversed(out))
    result = RuleResult("baldwin", tiers, None, tiers[0] if tiers else ())
    return _absent_last(result, p.systems, present)
