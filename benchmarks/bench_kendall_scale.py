"""Ungrouped Kendall tau-b at 1e5 and 1e6 units against scipy.stats.kendalltau (issue 29).

Three kinds of data: "ratings" (human = mean of three 1-5 ratings, 13 values; metric rounded
to 2 decimals), "few" (human on a 0.25 grid; metric continuous), "continuous" (both). Each
is timed as `meta_eval.correlation.kendall_groups` (what `evaluate("kendall")` and the
bootstrap call), as the path it replaced (snap both sides, then `exact_pair_counts`: ranks
by `np.unique`, one more sort and the radix inversion count), and as
`scipy.stats.kendalltau` (its p-value included: the function a user would call). CPU time,
best of --repeat, in this process; values checked equal (ours and the old path bit for bit,
scipy to 1e-12) before printing.

    .venv/bin/python benchmarks/bench_kendall_scale.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def data(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    q = rng.normal(size=n)
    if kind == "ratings":
        h = np.clip(np.round(q[None] + 3 + rng.normal(size=(3, n))), 1, 5).mean(axis=0)
        return h, np.round(q + rng.normal(size=n), 2)
    if kind == "few":
        return np.round(q * 4) / 4, q + rng.normal(size=n)
    return q + rng.normal(size=n), q + rng.normal(size=n)


def best(call, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        start = time.process_time()
        out = call()
        times.append(time.process_time() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import scipy.stats

    from meta_eval.correlation import kendall_groups
    from meta_eval.pairs import exact_pair_counts, snap

    def old_path(h: np.ndarray, m: np.ndarray) -> float:
        c = exact_pair_counts(human=snap(h), metric=snap(m))
        con, dis, th, tm, tb = (float(x[0]) for x in (c.concordant, c.discordant,
                                                       c.ties_human, c.ties_metric,
                                                       c.ties_both))
        pairs = con + dis + th + tm + tb
        return (con - dis) / np.sqrt((pairs - th - tb) * (pairs - tm - tb))

    print(f"load {os.getloadavg()}; numpy {np.__version__}, scipy {scipy.__version__}")
    print("| data | units | meta_eval (ms) | before (ms) | scipy.stats.kendalltau (ms) | "
          "meta_eval / scipy |")
    print("|---|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for kind in ("ratings", "few", "continuous"):
        for n in (10**5, 10**6):
            h, m = data(kind, n, rng)
            t_new, new = best(lambda h=h, m=m: float(kendall_groups(human=h[None],
                                                                    metric=m[None])[0]),
                              args.repeat)
            t_old, old = best(lambda h=h, m=m: old_path(h, m), args.repeat)
            t_sp, sp = best(lambda h=h, m=m: float(scipy.stats.kendalltau(h, m).statistic),
                            args.repeat)
            assert new == old and abs(new - sp) <= 1e-12, (new, old, sp)
            print(f"| {kind} | {n:,} | {t_new * 1e3:.1f} | {t_old * 1e3:.1f} | "
                  f"{t_sp * 1e3:.1f} | {t_new / t_sp:.2f} |", flush=True)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
