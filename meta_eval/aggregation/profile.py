"""The data rules rank: a profile of voters scoring systems, or pairwise comparisons.

Profile: `scores[v, i]` is voter v's score of system i (NaN: v did not score i). A voter is a
task or metric column of a leaderboard, or an item of an item x system scores table. A voter
of weight w casts w votes (Vote'n'Rank, Rofin et al. 2023). `higher_is_better[v]` orients
each voter; rules see `oriented` scores, where higher is always better.

Comparisons: one row per judged pair (a, b) with outcome 1 (a wins), 0.5 (tie) or 0 (b
wins), or a soft preference in between (P(a is better)), a weight, a group (the item it came
from) that the bootstrap resamples, and optionally the two outputs' lengths.

A soft outcome P (not 0, 0.5 or 1) counts as fractional wins: weight P for a over b and 1 - P
for b over a; exactly 0.5 is a tie, as a "tie" verdict is.

Both give `counts`: `strict[i, j]`, the voting weight that strictly prefers i to j, and
`ties[i, j]`, the weight that judged i and j equal. Majority rules and Bradley-Terry need
only these; positional rules (Borda, plurality, ...) need a profile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import numpy.typing as npt

from meta_eval.aggregation.base import PAIRWISE, PROFILE

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray, IntArray

_BLOCK = 2_000_000  # cells of a voters x systems x systems block held at once


@dataclass(frozen=True)
class PairwiseCounts:
    """strict[i, j]: weight preferring i to j; ties[i, j] = ties[j, i]: weight judging them
    equal. support = strict + ties / 2 (a tie is half a vote each way)."""

    systems: tuple[str, ...]
    strict: FloatArray
    ties: FloatArray

    @cached_property
    def support(self) -> FloatArray:
        return self.strict + 0.5 * self.ties

    @cached_property
    def margin(self) -> FloatArray:
        """margin[i, j] = strict[i, j] - strict[j, i]: i's majority over j (negative: j's)."""
        return self.strict - self.strict.T

    @cached_property
    def compared(self) -> FloatArray:
        """Total weight of the judgements of each pair."""
        return self.strict + self.strict.T + self.ties


@dataclass(frozen=True, eq=False, init=False)
class Profile:
    """Voters (rows) scoring systems (columns). See the module docstring.

    weights (default 1), higher_is_better (default True) and voters (default "0", "1", ...)
    may be omitted; once constructed every field is set.
    """

    systems: tuple[str, ...]
    scores: FloatArray
    weights: FloatArray
    higher_is_better: BoolArray
    voters: tuple[str, ...]

    kind: ClassVar[str] = PROFILE

    def __init__(
        self,
        systems: Sequence[str],
        scores: npt.ArrayLike,
        weights: npt.ArrayLike | None = None,
        higher_is_better: npt.ArrayLike | None = None,
        voters: Iterable[str] | None = None,
    ) -> None:
        scores = np.asarray(scores, dtype=float)
        if scores.ndim != 2 or scores.shape[1] != len(systems):
            raise ValueError(
                f"scores must be voters x systems ({len(systems)} systems), "
                f"got shape {scores.shape}"
            )
        if len(set(systems)) != len(systems):
            raise ValueError("system names must be unique")
        if np.isinf(scores).any():
            raise ValueError("scores must be finite or NaN (missing)")
        n_voters = scores.shape[0]
        weights = np.ones(n_voters) if weights is None else np.asarray(weights, float)
        if weights.shape != (n_voters,):
            raise ValueError(f"weights must have one value per voter ({n_voters})")
        if not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError("weights must be finite and non-negative")
        hib = (np.ones(n_voters, dtype=bool) if higher_is_better is None
               else np.asarray(higher_is_better, dtype=bool))
        if hib.shape != (n_voters,):
            raise ValueError(f"higher_is_better must have one value per voter ({n_voters})")
        names = (tuple(str(v) for v in range(n_voters)) if voters is None
                 else tuple(voters))
        if len(names) != n_voters:
            raise ValueError(f"voters must name each of the {n_voters} voters")
        object.__setattr__(self, "systems", tuple(systems))
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "higher_is_better", hib)
        object.__setattr__(self, "voters", names)

    @classmethod
    def from_rankings(
        cls,
        rankings: Sequence[Sequence[str | Sequence[str]]],
        weights: Sequence[float] | None = None,
        systems: Sequence[str] | None = None,
    ) -> Profile:
        """A profile from ballots, best first. A ballot entry may be a list of tied systems;
        systems a ballot leaves out are unscored by that voter."""
        if systems is None:
            seen: dict[str, None] = {}
            for ballot in rankings:
                for entry in ballot:
                    for s in [entry] if isinstance(entry, str) else entry:
                        seen.setdefault(s, None)
            systems = list(seen)
        index = {s: i for i, s in enumerate(systems)}
        scores = np.full((len(rankings), len(systems)), np.nan)
        for v, ballot in enumerate(rankings):
            for position, entry in enumerate(ballot):
                for s in [entry] if isinstance(entry, str) else entry:
                    if not np.isnan(scores[v, index[s]]):
                        raise ValueError(f"ballot {v} lists '{s}' twice")
                    scores[v, index[s]] = len(ballot) - position
        return cls(systems=tuple(systems), scores=scores, weights=weights)

    # -- views ----------------------------------------------------------------------------
    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def n_units(self) -> int:
        """Resampling units for the bootstrap: the voters."""
        return self.scores.shape[0]

    @cached_property
    def oriented(self) -> FloatArray:
        """Scores with every voter oriented so that higher is better."""
        return np.where(self.higher_is_better[:, None], self.scores, -self.scores)

    @cached_property
    def scored(self) -> BoolArray:
        return ~np.isnan(self.scores)

    @cached_property
    def present(self) -> BoolArray:
        """Systems some voter of positive weight scored; rules rank the others last."""
        return np.asarray((self.scored & (self.weights[:, None] > 0)).any(axis=0))

    @cached_property
    def counts(self) -> PairwiseCounts:
        n = self.n_systems
        strict: FloatArray = np.zeros(n * n)
        ties: FloatArray = np.zeros(n * n)
        for o, w in _blocks(self.oriented, self.weights, n):
            # Compare, never subtract: o_i - o_j can overflow for huge scores.
            above = o[:, :, None] > o[:, None, :]
            equal = o[:, :, None] == o[:, None, :]
            strict += w @ above.reshape(len(w), n * n).astype(float)
            ties += w @ equal.reshape(len(w), n * n).astype(float)
        strict = strict.reshape(n, n)
        ties = ties.reshape(n, n)
        np.fill_diagonal(ties, 0.0)
        return PairwiseCounts(self.systems, strict, ties)

    @cached_property
    def positions(self) -> tuple[IntArray, IntArray]:
        """(better, tied): per voter and system, how many systems the voter scored strictly
        higher, and how many it scored equal (the system itself excluded). Unscored: 0."""
        n = self.n_systems
        better = np.zeros(self.scores.shape, dtype=np.int64)
        tied = np.zeros(self.scores.shape, dtype=np.int64)
        start = 0
        for o, _ in _blocks(self.oriented, self.weights, n):
            # [v, i, j]: o_j above / equal to o_i, by comparison (no overflow)
            better[start:start + len(o)] = (o[:, None, :] > o[:, :, None]).sum(axis=2)
            tied[start:start + len(o)] = ((o[:, None, :] == o[:, :, None]).sum(axis=2)
                                          - (~np.isnan(o)))
            start += len(o)
        return better, tied

    # -- derived data ---------------------------------------------------------------------
    def take(self, voters: IntArray) -> Profile:
        """The profile of the given voters (with repetition: a bootstrap resample)."""
        voters = np.asarray(voters)
        return Profile(
            systems=self.systems,
            scores=self.scores[voters],
            weights=self.weights[voters],
            higher_is_better=self.higher_is_better[voters],
            voters=tuple(self.voters[v] for v in voters),
        )

    def with_weights(self, weights: FloatArray) -> Profile:
        return Profile(self.systems, self.scores, weights, self.higher_is_better, self.voters)

    def comparisons(self) -> Comparisons:
        """Each voter's ballot as pairwise comparisons (pairs it scored both of), grouped by
        voter, with the voter's weight."""
        n = self.n_systems
        first, second = np.triu_indices(n, 1)
        oa = self.oriented[:, first]
        ob = self.oriented[:, second]
        valid = ~(np.isnan(oa) | np.isnan(ob))
        voter, pair = np.nonzero(valid)
        outcome = np.where(oa > ob, 1.0, np.where(oa == ob, 0.5, 0.0))[voter, pair]
        return Comparisons(
            systems=self.systems,
            a=first[pair],
            b=second[pair],
            outcome=outcome,
            weights=self.weights[voter],
            groups=voter,
        )


def _blocks(oriented: FloatArray, weights: FloatArray, n: int
            ) -> Iterator[tuple[FloatArray, FloatArray]]:
    size = max(1, _BLOCK // max(1, n * n))
    for start in range(0, oriented.shape[0], size):
        yield oriented[start:start + size], weights[start:start + size]


@dataclass(frozen=True, eq=False, init=False)
class Comparisons:
    """Pairwise judgements. See the module docstring.

    weights (default 1) and groups (default: one group per comparison) may be omitted;
    once constructed every field is set, groups renumbered 0, 1, ... `lengths` (optional):
    an (m, 2) array of the lengths of a's and b's outputs (NaN: missing), None when the
    table has none.
    """

    systems: tuple[str, ...]
    a: IntArray
    b: IntArray
    outcome: FloatArray
    weights: FloatArray
    groups: IntArray
    lengths: FloatArray | None

    kind: ClassVar[str] = PAIRWISE

    def __init__(
        self,
        systems: Sequence[str],
        a: npt.ArrayLike,
        b: npt.ArrayLike,
        outcome: npt.ArrayLike,
        weights: npt.ArrayLike | None = None,
        groups: npt.ArrayLike | None = None,
        lengths: npt.ArrayLike | None = None,
    ) -> None:
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        outcome = np.asarray(outcome, dtype=float)
        m = len(a)
        if b.shape != (m,) or outcome.shape != (m,):
            raise ValueError("a, b and outcome must have the same length")
        n = len(systems)
        if m and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n):
            raise ValueError("a and b must index systems")
        if (a == b).any():
            raise ValueError("a system cannot be compared with itself")
        if not ((outcome >= 0.0) & (outcome <= 1.0)).all():
            raise ValueError("outcome must be in [0, 1]: 1 (a wins), 0.5 (tie), 0 (b wins) "
                             "or P(a is better)")
        weights = np.ones(m) if weights is None else np.asarray(weights, float)
        if weights.shape != (m,) or not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError("weights must be finite, non-negative, one per comparison")
        groups = np.arange(m) if groups is None else np.asarray(groups)
        if groups.shape != (m,):
            raise ValueError("groups must have one value per comparison")
        _, groups = np.unique(groups, return_inverse=True)
        if lengths is not None:
            lengths = np.asarray(lengths, dtype=float)
            if (lengths.shape != (m, 2) or np.isinf(lengths).any()
                    or (lengths < 0).any()):
                raise ValueError("lengths must be non-negative (NaN: missing), two per "
                                 "comparison")
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "systems", tuple(systems))
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "groups", np.asarray(groups, dtype=np.int64))

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def n_units(self) -> int:
        """Resampling units for the bootstrap: the groups (items)."""
        return int(self.groups.max()) + 1 if len(self.groups) else 0

    @cached_property
    def present(self) -> BoolArray:
        """Systems in some comparison of positive weight; rules rank the others last."""
        return self.counts.compared.sum(axis=1) > 0

    @cached_property
    def counts(self) -> PairwiseCounts:
        n = self.n_systems
        strict = np.zeros((n, n))
        ties = np.zeros((n, n))
        win_a = self.outcome == 1.0
        win_b = self.outcome == 0.0
        tie = self.outcome == 0.5
        np.add.at(strict, (self.a[win_a], self.b[win_a]), self.weights[win_a])
        np.add.at(strict, (self.b[win_b], self.a[win_b]), self.weights[win_b])
        np.add.at(ties, (self.a[tie], self.b[tie]), self.weights[tie])
        soft = ~(win_a | win_b | tie)
        p, w = self.outcome[soft], self.weights[soft]
        np.add.at(strict, (self.a[soft], self.b[soft]), w * p)
        np.add.at(strict, (self.b[soft], self.a[soft]), w * (1.0 - p))
        ties = ties + ties.T
        return PairwiseCounts(self.systems, strict, ties)

    @cached_property
    def _group_slices(self) -> tuple[IntArray, IntArray]:
        order = np.argsort(self.groups, kind="stable")
        bounds = np.searchsorted(self.groups[order], np.arange(self.n_units + 1))
        return order, bounds

    def take(self, units: IntArray) -> Comparisons:
        """The comparisons of the given groups (with repetition: a bootstrap resample)."""
        order, bounds = self._group_slices
        units = np.asarray(units)
        starts, ends = bounds[units], bounds[units + 1]
        lengths = ends - starts
        # positions start..end-1 of every chosen group, concatenated without a Python loop
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        index = order[np.arange(lengths.sum()) + offsets]
        new_groups = np.repeat(np.arange(len(units)), lengths)
        return Comparisons(
            systems=self.systems,
            a=self.a[index],
            b=self.b[index],
            outcome=self.outcome[index],
            weights=self.weights[index],
            groups=new_groups,
            lengths=None if self.lengths is None else self.lengths[index],
        )

    def comparisons(self) -> Comparisons:
        return self
