"""Speed of meta_eval.aggregation on the sizes issue 4 names, each against a plain reference.

1. Exact Kemeny-Young, 12 (and 16) systems x 1,000 voters: our vectorised subset DP vs the
   same DP written as plain Python loops (brute force over 12! = 479M orderings is out of
   reach; tests check the DP against brute force up to 8 systems).
2. Bradley-Terry, 100 systems x 100,000 comparisons: our L-BFGS fit on aggregated counts vs
   Hunter's (2004) MM iteration in plain numpy, run to the same tolerance (no ties, so both
   fit the same model); also the Davidson (ties) fit and order-independent Elo.
3. Bootstrap, 1,000 resamples of 50 tasks, borda and copeland, 30 systems: ours vs plain
   Python loops over voters and pairs on the same resamples.

Each reference must agree with ours (checked here) before its time means anything.

    .venv/bin/python benchmarks/bench_aggregate.py [--json benchmarks/out/aggregate.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from meta_eval.aggregation import (
    RULES,
    Comparisons,
    Profile,
    bootstrap,
    bradley_terry,
    elo,
    kemeny_dp,
)


def timed(fn, repeat: int = 3):
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


# -- 1. Kemeny ---------------------------------------------------------------------------------
def plain_kemeny(support: list[list[float]]) -> float:
    """The subset DP with Python loops: f(S) = max_k f(S - k) + sum_{j not in S} s[k][j]."""
    n = len(support)
    best = [float("-inf")] * (1 << n)
    best[0] = 0.0
    for mask in range(1, 1 << n):
        for k in range(n):
            if mask >> k & 1:
                before = mask ^ (1 << k)
                gain = sum(support[k][j] for j in range(n) if not mask >> j & 1)
                if best[before] + gain > best[mask]:
                    best[mask] = best[before] + gain
    return best[(1 << n) - 1]


def bench_kemeny(n: int) -> dict:
    rng = np.random.default_rng(0)
    voters = 1000
    scores = rng.normal(size=(voters, n)) + np.linspace(0, 0.5, n)
    systems = tuple(f"s{i:02d}" for i in range(n))

    def ours():
        profile = Profile(systems=systems, scores=scores)
        return RULES["kemeny"].rank(profile), profile.counts.support

    t_ours, (result, support) = timed(ours)
    _, value, ways, _ = kemeny_dp(support)
    t_plain, plain_value = timed(lambda: plain_kemeny(support.tolist()), repeat=1)
    assert abs(plain_value - value) <= 1e-6 * value, (plain_value, value)
    assert result.exact
    return {"case": f"kemeny exact, {n} systems x 1,000 voters", "ours_s": t_ours,
            "reference": "same DP, plain Python loops", "reference_s": t_plain,
            "check": f"same optimum {value:.1f}; {ways} optimal ordering(s)"}


# -- 2. Bradley-Terry -------------------------------------------------------------------------
def simulate(n: int, m: int, nu: float, seed: int) -> tuple[Comparisons, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    pa, pb = np.exp(theta[a]), np.exp(theta[b])
    tie = nu * np.sqrt(pa * pb)
    u = rng.random(m) * (pa + pb + tie)
    outcome = np.where(u < pa, 1.0, np.where(u < pa + tie, 0.5, 0.0))
    systems = tuple(f"s{i:03d}" for i in range(n))
    return Comparisons(systems=systems, a=a, b=b, outcome=outcome), theta


def hunter_mm(wins: np.ndarray, tol: float = 1e-10, max_iter: int = 100000) -> tuple[np.ndarray,
                                                                                       int]:
    games = wins + wins.T
    w = wins.sum(axis=1)
    theta = np.zeros(wins.shape[0])
    for it in range(1, max_iter + 1):
        p = np.exp(theta)
        new = np.log(w / (games / (p[:, None] + p[None, :])).sum(axis=1))
        new -= new.mean()
        if np.abs(new - theta).max() < tol:
            return new, it
        theta = new
    return theta, max_iter


def bench_bradley_terry() -> list[dict]:
    n, m = 100, 100_000
    plain, _ = simulate(n, m, nu=0.0, seed=1)

    def ours():
        comps = Comparisons(systems=plain.systems, a=plain.a, b=plain.b, outcome=plain.outcome)
        return bradley_terry(comps)

    t_ours, result = timed(ours)
    est = np.array([result.scores[s] for s in plain.systems])

    def reference():
        wins = np.zeros((n, n))
        np.add.at(wins, (np.where(plain.outcome == 1, plain.a, plain.b),
                         np.where(plain.outcome == 1, plain.b, plain.a)), 1.0)
        return hunter_mm(wins)

    t_ref, (ref, iterations) = timed(reference, repeat=1)
    diff = float(np.abs(est - ref).max())
    assert diff < 1e-5, diff
    with_ties, _ = simulate(n, m, nu=0.3, seed=2)

    def ours_ties():
        comps = Comparisons(systems=with_ties.systems, a=with_ties.a, b=with_ties.b,
                            outcome=with_ties.outcome)
        return bradley_terry(comps)

    t_ties, tie_result = timed(ours_ties)
    t_elo, _ = timed(lambda: elo(with_ties), repeat=1)
    return [
        {"case": "bradley-terry, 100 systems x 100,000 comparisons (no ties)", "ours_s": t_ours,
         "reference": f"Hunter MM, numpy ({iterations} iterations to 1e-10)",
         "reference_s": t_ref, "check": f"max |theta difference| {diff:.1e}"},
        {"case": "bradley-terry (Davidson ties), 100 x 100,000", "ours_s": t_ties,
         "reference": "-", "reference_s": None,
         "check": tie_result.note.split("; ")[-1]},
        {"case": "elo, 100 permutations, 100 x 100,000", "ours_s": t_elo, "reference": "-",
         "reference_s": None, "check": "order-independent mean of 100 orders"},
    ]


# -- 3. Bootstrap -----------------------------------------------------------------------------
def plain_borda_copeland(rows: list[list[float]], n: int) -> tuple[list[float], list[float]]:
    borda = [0.0] * n
    for row in rows:
        for i in range(n):
            borda[i] += sum(1.0 if row[i] > row[j] else 0.5 if row[i] == row[j] else 0.0
                            for j in range(n) if j != i)
    copeland = [0.0] * n
    for i, j in itertools.combinations(range(n), 2):
        pro = sum(1 for row in rows if row[i] > row[j])
        con = sum(1 for row in rows if row[j] > row[i])
        if pro > con:
            copeland[i] += 1
        elif con > pro:
            copeland[j] += 1
        else:
            copeland[i] += 0.5
            copeland[j] += 0.5
    return borda, copeland


def plain_bootstrap(scores: np.ndarray, n_boot: int, seed: int) -> tuple[list[float],
                                                                          list[float]]:
    """P(win) per system for borda and copeland (ties split), plain Python."""
    voters, n = scores.shape
    rows = scores.tolist()
    rng = np.random.default_rng(seed)
    wins_b, wins_c = [0.0] * n, [0.0] * n
    for _ in range(n_boot):
        pick = rng.integers(0, voters, size=voters).tolist()
        borda, copeland = plain_borda_copeland([rows[v] for v in pick], n)
        for score, wins in ((borda, wins_b), (copeland, wins_c)):
            top = max(score)
            best = [i for i in range(n) if score[i] == top]
            for i in best:
                wins[i] += 1.0 / len(best)
    return [w / n_boot for w in wins_b], [w / n_boot for w in wins_c]


def bench_bootstrap() -> dict:
    rng = np.random.default_rng(3)
    n, tasks, n_boot = 30, 50, 1000
    # integer-valued scores so that float sums of Borda points tie exactly in both codes
    scores = np.round(rng.normal(size=(tasks, n)) * 4 + np.linspace(0, 4, n))
    systems = tuple(f"s{i:02d}" for i in range(n))
    profile = Profile(systems=systems, scores=scores)

    def ours():
        return bootstrap(profile, [RULES["borda"], RULES["copeland"]], n=n_boot, seed=0)

    t_ours, out = timed(ours, repeat=1)
    t_ref, (ref_b, ref_c) = timed(lambda: plain_bootstrap(scores, n_boot, 0), repeat=1)
    for result, ref in zip(out, (ref_b, ref_c), strict=True):
        got = {s.system: s.p_win for s in result.systems}
        assert all(abs(got[systems[i]] - ref[i]) < 1e-9 for i in range(n)), result.rule
    return {"case": "bootstrap 1,000 resamples, borda + copeland, 30 systems x 50 tasks",
            "ours_s": t_ours, "reference": "plain Python loops, same resamples",
            "reference_s": t_ref,
            "check": "same P(win) for every system; borda top-1 stability "
                     f"{out[0].top1_stability:.2f}, copeland {out[1].top1_stability:.2f}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    rows = [bench_kemeny(12), bench_kemeny(16), *bench_bradley_terry(), bench_bootstrap()]
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    print("| case | ours (s) | reference | reference (s) | check |")
    print("|---|---:|---|---:|---|")
    for r in rows:
        ref = "-" if r["reference_s"] is None else f"{r['reference_s']:.2f}"
        print(f"| {r['case']} | {r['ours_s']:.3f} | {r['reference']} | {ref} | {r['check']} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
