"""Two-sided p-values of 'no association', as scipy.stats computes them, without importing
scipy.stats (0.4 s of a command's start-up; scipy.special, which these need, is a third of
it).

    pearsonr    r has the Beta(n/2 - 1, n/2 - 1) distribution on (-1, 1) under the null:
                p = 2 betaincc(n/2 - 1, n/2 - 1, (|r| + 1) / 2)
    spearmanr   rho of the average ranks (np.corrcoef, as scipy), Student's t with n - 2
                degrees of freedom: t = rho sqrt((n - 2) / ((rho + 1)(1 - rho))),
                p = 2 stdtr(n - 2, -|t|)
    kendalltau  without ties, n <= 33 or min(D, N - D) <= 1: the exact distribution of the
                concordant count (Kendall, "Rank Correlation Methods", 4th ed. 1970; scipy's
                `_kendall_p_exact`); otherwise z = (C - D) / sqrt(var) with the
                tie-corrected variance (Kendall 1970, ch. 4; scipy's [3])
                    var = (v0 - vt - vu) / 18 + 2 T U / m + t2 u2 / (9 m (n - 2)),
                m = n(n - 1), v0 = m(2n + 5), vt = sum t(t - 1)(2t + 5), t2 = sum t(t - 1)(t - 2)
                over the tie groups of size t of x (u likewise of y), T and U the pairs
                tied in x and in y; p = 2 ndtr(-|z|)

Each takes the units both sides scored (finite, at least 3, neither side constant: the
callers in `meta_eval.correlation` check) and is tested against scipy.stats on random data
with ties, n = 3 upwards and extreme magnitudes (tests/test_meta_eval_p_values.py).

betaincc, stdtr and ndtr are scipy.special's compiled ufuncs, loaded without running
scipy.special's `__init__` where that is safe (`_ufuncs`): the package's array-API layer
clones numpy's namespace, which imports numpy.testing and numpy.f2py (0.13 s of the 0.26 s
import). They are the same function objects `scipy.special` exports.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray


def _ufuncs() -> Any:
    """scipy.special's compiled ufuncs (scipy.special._ufuncs). Where scipy.special is not
    imported yet and no other thread runs (none could import it meanwhile), the extension
    is loaded below a stand-in for its package, so the package's `__init__` does not run;
    a later `import scipy.special` reuses the loaded extension. Anything unexpected: the
    plain import."""
    import threading

    loaded = sys.modules.get("scipy.special._ufuncs")
    if loaded is not None:
        return loaded
    if "scipy.special" not in sys.modules and threading.active_count() == 1:
        import importlib.util
        import types

        try:
            spec = importlib.util.find_spec("scipy.special")
            if spec is not None and spec.submodule_search_locations is not None:
                stand_in = types.ModuleType("scipy.special")
                stand_in.__path__ = list(spec.submodule_search_locations)
                stand_in.__spec__ = spec
                sys.modules["scipy.special"] = stand_in
                try:
                    import scipy.special._ufuncs as ufuncs
                finally:
                    if sys.modules.get("scipy.special") is stand_in:
                        del sys.modules["scipy.special"]
                return ufuncs
        except Exception:  # a scipy laid out otherwise: the plain import
            for name in [k for k in sys.modules if k.startswith("scipy.special.")]:
                del sys.modules[name]
    import scipy.special

    return scipy.special


def pearson_p(x: FloatArray, y: FloatArray) -> float:
    """scipy.stats.pearsonr(x, y).pvalue, r computed as scipy computes it."""
    betaincc = _ufuncs().betaincc

    # scipy's steps; sums pairwise, not by BLAS (whose threads cost more than the sums)
    xm, ym = x - x.mean(), y - y.mean()
    xs, ys = xm / np.abs(xm).max(), ym / np.abs(ym).max()
    xs /= np.sqrt(np.add.reduce(xs * xs))
    ys /= np.sqrt(np.add.reduce(ys * ys))
    r = float(np.clip(np.add.reduce(xs * ys), -1.0, 1.0))
    ab = x.size / 2 - 1
    return float(2 * betaincc(ab, ab, (abs(r) + 1) / 2))


def average_ranks(x: FloatArray) -> FloatArray:
    """Ranks from 1, ties given the mean of their positions (scipy.stats.rankdata)."""
    order = np.argsort(x, kind="mergesort")
    s = x[order]
    new = np.r_[True, s[1:] != s[:-1]]
    starts = np.flatnonzero(new)
    ends = np.r_[starts[1:], s.size]  # one past each run
    ranks = np.empty(s.size)
    ranks[order] = np.repeat((starts + 1 + ends) / 2, ends - starts)
    return ranks


def spearman_p(x: FloatArray, y: FloatArray) -> float:
    """scipy.stats.spearmanr(x, y).pvalue."""
    stdtr = _ufuncs().stdtr

    rs = np.asarray(np.corrcoef(np.vstack([average_ranks(x), average_ranks(y)])))[1, 0]
    dof = x.size - 2
    with np.errstate(divide="ignore"):  # |rho| = 1: t is infinite, p is 0
        t = rs * np.sqrt(np.maximum(dof / ((rs + 1.0) * (1.0 - rs)), 0.0))
    return float(2 * stdtr(dof, -abs(t)))


def _tie_terms(runs: np.ndarray) -> tuple[int, int, int]:
    """Pairs tied, sum t(t - 1)(t - 2) and sum t(t - 1)(2t + 5) over tie groups of size t."""
    cnt = runs[runs > 1]
    return (int((cnt * (cnt - 1) // 2).sum()), int((cnt * (cnt - 1.0) * (cnt - 2)).sum()),
            int((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum()))


def kendall_p(x: FloatArray, y: FloatArray) -> float:
    """scipy.stats.kendalltau(snap(x), snap(y)).pvalue (method 'auto'), from the counts the
    Kendall value of the same units used (`meta_eval.pairs.snapped_counts_and_ties`)."""
    from meta_eval.pairs import snapped_counts_and_ties

    counts, runs_x, runs_y = snapped_counts_and_ties(human=x, metric=y)
    con, dis = int(counts.concordant[0]), int(counts.discordant[0])
    size = x.size
    xtie, x0, x1 = _tie_terms(runs_x)
    ytie, y0, y1 = _tie_terms(runs_y)
    tot = size * (size - 1) // 2
    if xtie == tot or ytie == tot:  # constant once snapped
        return math.nan
    if xtie == 0 and ytie == 0 and (size <= 33 or min(dis, tot - dis) <= 1):
        return kendall_exact_p(size, tot - dis)
    ndtr = _ufuncs().ndtr

    m = size * (size - 1.0)
    var = ((m * (2 * size + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m
           + x0 * y0 / (9 * m * (size - 2)))
    return float(2 * ndtr(-abs((con - dis) / np.sqrt(var))))


def kendall_exact_p(n: int, c: int) -> float:
    """Two-sided p of c concordant pairs among n units without ties: the exact null
    distribution of Kendall's statistic by its generating-function recursion (Kendall
    1970), as scipy.stats._mstats_basic._kendall_p_exact computes it."""
    c = min(c, n * (n - 1) // 2 - c)
    if n <= 2:
        prob = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    elif n < 171:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[:c + 1 - j]
        prob = 2.0 * float(np.sum(new)) / math.factorial(n)
    else:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new) / j
            if j <= c:
                new[j:] -= new[:c + 1 - j]
        prob = float(np.sum(new))
    return float(np.clip(prob, 0, 1))
