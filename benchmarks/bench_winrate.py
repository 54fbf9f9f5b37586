"""Speed of the pairwise-verdict rules on an AlpacaEval-sized table (issue 13).

20 systems x 805 items, each compared with one baseline (16,100 soft verdicts with
lengths), the shape of AlpacaEval 2.0's leaderboard:

1. win-rate against the baseline, vs a plain pandas groupby (same numbers checked);
2. lc-win-rate with the instruction term (one joint fit of 845 coefficients, then 20
   three-coefficient fits), vs scikit-learn's LogisticRegression on the same joint design
   (same difficulties checked to 1e-4);
3. bradley-terry with bootstrap=1000 over the compared pairs (arena-hard-auto's bootstrap).

    .venv/bin/python benchmarks/bench_winrate.py
"""

from __future__ import annotations

import os
import platform
import time

import numpy as np
import pandas as pd

from meta_eval.aggregation import RULES
from meta_eval.aggregation.tables import comparisons_from_pairwise
from meta_eval.aggregation.winrate import instruction_difficulty


def table(n_systems: int = 20, n_items: int = 805, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    difficulty = rng.normal(size=n_items)
    for s in range(n_systems):
        skill, verbosity = rng.normal(), rng.uniform(0.5, 2.0)
        for item in range(n_items):
            length_s, length_b = rng.integers(50, 3000) * verbosity, rng.integers(50, 3000)
            logit = skill - difficulty[item] + 0.8 * np.tanh((length_s - length_b) / 1500)
            p = float(np.clip(1 / (1 + np.exp(-logit - rng.normal(scale=0.5))), 0, 1))
            rows.append((item, "base", f"m{s}", 1 - p, length_b, length_s))
    return pd.DataFrame(rows, columns=["item", "system_a", "system_b", "judge", "length_a",
                                       "length_b"])


def main() -> None:
    frame = table()
    comps = comparisons_from_pairwise(frame)
    print(f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"{len(comps.a)} comparisons")

    start = time.perf_counter()
    ours = RULES["win-rate"].with_options(baseline="base").rank(comps)
    t_ours = time.perf_counter() - start
    start = time.perf_counter()
    plain = (1 - frame["judge"]).groupby(frame["system_b"]).mean() * 100
    t_plain = time.perf_counter() - start
    assert all(abs(ours.scores[s] - plain[s]) < 1e-9 for s in plain.index)
    print(f"win-rate: {t_ours:.3f} s; pandas groupby {t_plain:.3f} s; same win rates")

    start = time.perf_counter()
    RULES["lc-win-rate"].with_options(baseline="base").rank(comps)
    t_lc = time.perf_counter() - start
    base = comps.systems.index("base")
    others = [i for i in range(comps.n_systems) if i != base]
    start = time.perf_counter()
    gamma = instruction_difficulty(comps, base, others)
    t_gamma = time.perf_counter() - start

    from sklearn.linear_model import LogisticRegression

    k, n_items = len(others), comps.n_units
    x = np.zeros((len(comps.a), 2 * k + n_items))
    y = 1 - comps.outcome
    for j, s in enumerate(others):
        rows = np.flatnonzero(comps.b == s)
        delta = comps.lengths[rows, 1] - comps.lengths[rows, 0]
        x[rows, j] = 1.0
        x[rows, k + j] = np.tanh(delta / np.std(delta, ddof=1))
        x[rows, 2 * k + comps.groups[rows]] = 1.0
    start = time.perf_counter()
    model = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-10, max_iter=10_000)
    model.fit(np.vstack([x, x]), np.r_[np.ones(len(y)), np.zeros(len(y))],
              sample_weight=np.r_[y, 1 - y])
    t_sklearn = time.perf_counter() - start
    gap = float(np.abs(model.coef_[0][2 * k:] - gamma).max())
    assert gap < 1e-4, gap
    print(f"lc-win-rate (instruction term): {t_lc:.2f} s, of which the joint fit "
          f"{t_gamma:.2f} s; scikit-learn lbfgs on the same joint design {t_sklearn:.2f} s; "
          f"max difficulty difference {gap:.1e}")

    start = time.perf_counter()
    bt = RULES["bradley-terry"].with_options(bootstrap=1000, seed=0).rank(comps)
    t_bt = time.perf_counter() - start
    assert bt.extra is not None
    print(f"bradley-terry bootstrap=1000: {t_bt:.2f} s")


if __name__ == "__main__":
    main()
