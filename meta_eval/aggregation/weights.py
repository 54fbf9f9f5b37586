"""Which voter (task) weights make a chosen system win? A linear programme.

Following Vote'n'Rank (Rofin et al. 2023, the Condorcet-winner search), for rules whose
score is linear in the voter weights: each voter v gives system i a contribution c_vi
(mean: the oriented score; borda, dowdall, plurality: the voter's points, its ties scored
by `ties` = average | low | high as in the rules; condorcet: for each rival j, +1/-1/0 as
v prefers the target t / j / neither). Solve

    maximise m  over w >= 0, sum_v w_v = 1,
    subject to  sum_v w_v (c_vt - c_vj) >= m   for every rival j

with HiGHS (scipy.optimize.linprog). m* > 0: some weighting makes t the sole winner, and the
solution is one; m* = 0: t can at best tie for first; m* < 0: no weighting makes it win.
The weighting found is checked by rerunning the rule with it.

mean needs a complete table (with missing scores the mean over available voters is not
linear in the weights); the positional and Condorcet contributions handle partial ballots
the way the rules do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import linprog

from meta_eval.aggregation.base import RuleResult
from meta_eval.aggregation.majority import condorcet
from meta_eval.aggregation.positional import (
    POSITIONAL,
    borda,
    check_ties,
    dowdall,
    mean,
    plurality,
    voter_points,
)
from meta_eval.aggregation.profile import Profile

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray

SUPPORTED = ("mean", "borda", "dowdall", "plurality", "condorcet")
_RULES = {"mean": mean, "borda": borda, "dowdall": dowdall, "plurality": plurality,
          "condorcet": condorcet}


@dataclass(frozen=True)
class WinningWeights:
    system: str
    rule: str
    possible: bool
    can_tie: bool
    margin: float
    weights: dict[str, float] | None
    verified: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"system": self.system, "rule": self.rule, "possible": self.possible,
                "can_tie": self.can_tie, "margin": self.margin, "weights": self.weights,
                "verified": self.verified, "note": self.note}


def _advantage(p: Profile, target: int, rule: str, ties: str) -> FloatArray:
    """A[j, v]: how much voter v favours the target over rival j (per unit weight)."""
    rivals = [j for j in range(p.n_systems) if j != target]
    if rule == "condorcet":
        o = p.oriented
        diff = o[:, [target]] - o[:, rivals]  # voters x rivals; NaN where either is missing
        return np.nan_to_num(np.sign(diff)).T
    if rule == "mean":
        if not p.scored.all():
            raise ValueError("which-weights for 'mean' needs a complete table (the mean over "
                             "available voters is not linear in the weights); drop incomplete "
                             "systems or voters first")
        contribution = p.oriented
    elif rule in POSITIONAL:
        contribution = voter_points(p, rule, ties)
    else:
        raise ValueError(f"which-weights supports {', '.join(SUPPORTED)}, not '{rule}'")
    return (contribution[:, [target]] - contribution[:, rivals]).T


def weights_to_win(profile: Profile, system: str, rule: str = "borda", *,
                   ties: str = "average", tol: float = 1e-9) -> WinningWeights:
    """Find non-negative voter weights (summing to 1) that make `system` win under `rule`
    (a positional rule's ballot ties scored by `ties`), maximising its lead over the best
    rival. See the module docstring."""
    if system not in profile.systems:
        raise ValueError(f"unknown system '{system}'")
    if rule not in SUPPORTED:
        raise ValueError(f"which-weights supports {', '.join(SUPPORTED)}, not '{rule}'")
    check_ties(ties)
    if ties != "average" and rule not in POSITIONAL:
        raise ValueError(f"ties applies to {', '.join(POSITIONAL)}, not '{rule}'")
    options = {"ties": ties} if rule in POSITIONAL else {}
    target = profile.systems.index(system)
    n_voters = profile.n_units
    if profile.n_systems == 1:
        weights = dict(zip(profile.voters, profile.weights / profile.weights.sum(), strict=True))
        return WinningWeights(system, rule, True, True, 0.0, weights, True, "the only system")
    adv = _advantage(profile, target, rule, ties)
    scale = float(np.abs(adv).max()) or 1.0
    # variables: w_1..w_V, m ; minimise -m
    cost = np.zeros(n_voters + 1)
    cost[-1] = -1.0
    a_ub = np.hstack([-adv / scale, np.ones((adv.shape[0], 1))])  # m - sum w A <= 0
    b_ub = np.zeros(adv.shape[0])
    a_eq = np.concatenate([np.ones(n_voters), [0.0]])[None, :]
    bounds = [(0.0, None)] * n_voters + [(None, None)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=bounds,
                  method="highs")
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"the weights linear programme failed: {res.message}")
    margin = float(res.x[-1]) * scale
    w = np.clip(res.x[:-1], 0.0, None)
    w = w / w.sum()
    possible = margin > tol * scale
    can_tie = margin >= -tol * scale
    weights = {v: float(x) for v, x in zip(profile.voters, w, strict=True)}
    verified = False
    note = ""
    if can_tie:
        check: RuleResult = _RULES[rule](profile.with_weights(w), **options)
        if possible:
            verified = check.winners == (system,)
        elif rule == "condorcet":  # a tie at best: the target loses no majority contest
            weighted = profile.with_weights(w).counts.margin[target]
            verified = bool((weighted >= -tol * max(1.0, np.abs(weighted).max())).all())
        else:
            verified = system in check.winners
        if not verified:
            note = f"rerunning {rule} with these weights gives winners {list(check.winners)}"
    else:
        note = f"no weighting makes '{system}' win under {rule}: the best still trails"
    return WinningWeights(system=system, rule=rule, possible=possible, can_tie=can_tie,
                          margin=margin, weights=weights if can_tie else None,
                          verified=verified, note=note)
