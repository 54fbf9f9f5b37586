"""Intransitivity and Bradley-Terry misfit of a pairwise judge's verdicts.

Verdicts are P(A better) per compared pair (1 a, 0 b, 0.5 tie, soft in between; NaN
missing), counted per unordered pair of systems as fractional wins: w_ij = sum of P over the
pairs where i was A plus sum of 1 - P where i was B.

- Cyclic triples: i beats j by majority when w_ij > w_ji. Of the triples of systems whose
  three pairs all have a majority, the share that form a directed 3-cycle (i > j > k > i):
  the "circular triads" of Kendall and Babington Smith (1940), here over majority
  preferences. The CI is the percentile interval over item resamples (pairs of one item
  resampled together).
- The pairs that make the cycles: each pair with the number of cyclic triples it is in.
- Bradley-Terry misfit: the likelihood-ratio test of Bradley-Terry (Bradley and Terry 1952,
  P(i beats j) = pi_i / (pi_i + pi_j), fitted by `meta_eval.aggregation.fit_bradley_terry`)
  against the unconstrained model with one probability per compared pair, p_ij = w_ij / n_ij:
  G = 2 (LL_free - LL_BT), chi-squared with (compared pairs) - (systems - components) degrees
  of freedom (Agresti 2013, Categorical Data Analysis, section 11.6; the deviance of the BT
  logit model). A tie counts as half a win to each side. Undefined (None) when the
  Bradley-Terry maximum-likelihood estimate does not exist (Ford 1957: the "beat" graph is not
  strongly connected) or there are no degrees of freedom.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Transitivity:
    systems: list[str]
    cyclic: int
    triples: int  # triples whose three pairs all have a majority
    ci: tuple[float, float] | None
    lr_statistic: float | None
    df: int
    p_value: float | None
    note: str = ""
    cycle_pairs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.cyclic / self.triples if self.triples else math.nan

    def to_dict(self) -> dict[str, Any]:
        return {"systems": len(self.systems), "cyclic_triples": self.cyclic,
                "triples": self.triples,
                "cyclic_share": self.share if self.triples else None,
                "ci_low": self.ci[0] if self.ci else None,
                "ci_high": self.ci[1] if self.ci else None,
                "bt_lr_statistic": self.lr_statistic, "bt_df": self.df,
                "bt_p_value": self.p_value, "note": self.note or None,
                "cycle_pairs": self.cycle_pairs}


def win_matrix(system_a: np.ndarray, system_b: np.ndarray, p: np.ndarray,
               systems: list[str]) -> np.ndarray:
    """wins[i, j]: the fractional wins of system i over system j."""
    index = {s: k for k, s in enumerate(systems)}
    wins = np.zeros((len(systems), len(systems)))
    ok = np.isfinite(p)
    a = np.array([index[s] for s in system_a[ok]], dtype=int)
    b = np.array([index[s] for s in system_b[ok]], dtype=int)
    np.add.at(wins, (a, b), p[ok])
    np.add.at(wins, (b, a), 1 - p[ok])
    return wins


def cyclic_triples(wins: np.ndarray) -> tuple[int, int, np.ndarray]:
    """(cyclic triples, triples with three majorities, per pair the cycles it is in)."""
    beats = wins > wins.T  # majority
    decided = beats | beats.T
    n = wins.shape[0]
    in_cycles = np.zeros((n, n), dtype=int)
    if n < 3:
        return 0, 0, in_cycles
    b = beats.astype(np.int64)
    d = decided.astype(np.int64)
    # a 3-cycle i>j>k>i is counted once per starting point: trace(B^3) = 3 * cycles
    cyclic = int(np.trace(b @ b @ b)) // 3
    triples = int(np.trace(d @ d @ d)) // 6
    cycle_edges = b * (b @ b).T  # edge i>j closed by some k with j>k>i: count of such k
    in_cycles = cycle_edges + cycle_edges.T
    return cyclic, triples, in_cycles


def bt_misfit(wins: np.ndarray) -> tuple[float | None, int, float | None, str]:
    """(G, df, p, note) of the Bradley-Terry likelihood-ratio test (module docstring)."""
    from scipy.sparse.csgraph import connected_components
    from scipy.stats import chi2

    from meta_eval.aggregation.rating import fit_bradley_terry, mle_exists

    n_pair = wins + wins.T
    compared = np.triu(n_pair > 0, 1)
    pairs = int(compared.sum())
    components, _ = connected_components(n_pair > 0, directed=False)
    used = n_pair.sum(axis=1) > 0
    alone = int((~used).sum())
    df = pairs - (int(used.sum()) - (components - alone))
    if df <= 0:
        return None, max(df, 0), None, "no degrees of freedom left for the test"
    sub = wins[np.ix_(used, used)]
    if not mle_exists(sub, np.zeros_like(sub)):
        return None, df, None, ("the Bradley-Terry estimate is infinite (a system never "
                                "loses or never wins against some group): no test")
    theta, _, converged, message = fit_bradley_terry(sub, np.zeros_like(sub))
    if not converged:
        return None, df, None, f"the Bradley-Terry fit did not converge: {message}"
    nsub = sub + sub.T
    p_bt = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_free = np.where(nsub > 0, sub / nsub, 0.0)
        ll_free = np.where(sub > 0, sub * np.log(p_free), 0.0).sum()
        ll_bt = np.where(sub > 0, sub * np.log(p_bt), 0.0).sum()
    g = max(0.0, float(2 * (ll_free - ll_bt)))
    return g, df, float(chi2.sf(g, df)), ""


def transitivity(*, items: np.ndarray, system_a: np.ndarray, system_b: np.ndarray,
                 preference: np.ndarray, bootstrap: int = 1000, ci: float = 0.95,
                 seed: int = 0, top: int = 10) -> Transitivity:
    """Cyclic triples (with an item-bootstrap CI), the pairs in cycles and the BT misfit
    test of one judge's (or person's) verdicts (module docstring)."""
    system_a = np.asarray(system_a).astype(str)
    system_b = np.asarray(system_b).astype(str)
    p = np.asarray(preference, dtype=float)
    systems = sorted(set(system_a) | set(system_b))
    wins = win_matrix(system_a, system_b, p, systems)
    cyclic, triples, in_cycles = cyclic_triples(wins)
    interval = None
    if bootstrap and triples:
        rng = np.random.default_rng(seed)
        codes, groups = np.unique(np.asarray(items).astype(str), return_inverse=True)
        index = {s: k for k, s in enumerate(systems)}
        ok = np.isfinite(p)
        a = np.array([index[s] for s in system_a[ok]], dtype=int)
        b = np.array([index[s] for s in system_b[ok]], dtype=int)
        pa, rows = p[ok], groups[ok]
        shares = []
        for _ in range(bootstrap):
            draw = np.bincount(rng.integers(0, codes.size, codes.size), minlength=codes.size)
            weight = draw[rows].astype(float)
            w = np.zeros_like(wins)
            np.add.at(w, (a, b), weight * pa)
            np.add.at(w, (b, a), weight * (1 - pa))
            c, t, _ = cyclic_triples(w)
            if t:
                shares.append(c / t)
        if shares:
            tail = (1 - ci) / 2
            low, high = np.quantile(shares, [tail, 1 - tail])
            interval = (float(low), float(high))
    g, df, p_value, note = bt_misfit(wins)
    pairs = [(int(in_cycles[i, j]), systems[i], systems[j])
             for i, j in itertools.combinations(range(len(systems)), 2) if in_cycles[i, j]]
    pairs.sort(key=lambda t: (-t[0], t[1], t[2]))
    cycle_pairs = [{"system_a": a, "system_b": b, "cycles": c,
                    "winner": a if wins[systems.index(a), systems.index(b)]
                    > wins[systems.index(b), systems.index(a)] else b}
                   for c, a, b in pairs[:top]]
    return Transitivity(systems, cyclic, triples, interval, g, df, p_value, note, cycle_pairs)
