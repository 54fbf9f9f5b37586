"""Issue 18, the meta-evaluation half: each fix timed against the path it replaces, in the
same run, after checking that both give the same answer.

  clusters   significance clusters of bench_meta_eval.py's 20 metrics (20 systems x 2,000
             items, item-grouped Pearson, 1,000 resamples, early stopping on), with the
             early-stopping check as it is and as it was (`done % block == 0`, which never
             fired at this size); the old rule is run from this source, edited in memory
  kendall    ungrouped Kendall tau-b at 40,000 units (human: 13 values, metric rounded to 2
             decimals): meta_eval, the O(n log^2 n) tie-threshold counter it used at
             epsilon 0 (`SortedUnits`), and scipy.stats.kendalltau; plus a 200-resample
             bootstrap
  kemeny     exact Kemeny by the linear-ordering integer programme at 18 to 30 systems,
             against the local search that served above 16 systems
  kemeny-sizes  the rule a user calls (`aggregate -r kemeny`: Profile built from the
             scores, then `kemeny` with its winners and uniqueness), CPU time, with the
             dynamic programme and with the integer programme at 4 to 18 systems, on
             bench_aggregate.py's profile (1,000 voters) and this script's (100 voters,
             integer scores: ties, several optimal orderings), three seeds each; the
             tiers and winners of the two compared

    .venv/bin/python benchmarks/bench_speed.py [clusters] [kendall] [kemeny] [kemeny-sizes]
        [--repeats 3]

Times are the best of --repeats runs in this process (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def best(f: Callable[[], object], repeats: int) -> tuple[float, object]:
    out, times = None, []
    for _ in range(repeats):
        start = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - start)
    return min(times), out


def old_significance() -> types.ModuleType:
    """meta_eval.significance with the early-stopping check before the fix."""
    import meta_eval.significance as current

    source = Path(current.__file__).read_text()
    old = source.replace("if early_stop and done >= next_look and done < resamples:",
                         "if early_stop and done % block == 0 and done < resamples:")
    assert old != source
    module = types.ModuleType("significance_old")
    exec(compile(old, "significance_old", "exec"), module.__dict__)
    return module


def clusters(repeats: int) -> None:
    from bench_meta_eval import synthetic

    import meta_eval

    human, metrics = synthetic()
    old = old_significance()
    print("| significance clusters, 20 metrics, 1,000 resamples | seconds | tests | "
          "resamples used | early-stopped tests |")
    print("|---|---:|---:|---:|---:|")
    results = {}
    for label, module, early in (("early stopping, fixed check", meta_eval, True),
                                 ("early stopping, old check", old, True),
                                 ("no early stopping", meta_eval, False)):
        seconds, ranking = best(lambda m=module, e=early: m.significance_clusters(
            "pearson", human=human, metrics=metrics, grouping="item", resamples=1000,
            seed=0, early_stop=e), repeats)
        tests = ranking.tests.values()
        results[label] = [(m.metric, m.cluster) for m in ranking.metrics]
        print(f"| {label} | {seconds:.2f} | {len(tests)} | "
              f"{sum(t.resamples for t in tests)} | {sum(t.p_value_early for t in tests)} |")
    same = len({tuple(v) for v in results.values()}) == 1
    print(f"same clusters in all three: {same}")


def kendall(repeats: int) -> None:
    import scipy.stats

    import meta_eval
    from meta_eval.correlation import kendall_groups
    from meta_eval.pairs import SortedUnits, snap

    rng = np.random.default_rng(0)
    quality = rng.normal(size=40000)
    human = np.clip(np.round(quality[None] + 3 + rng.normal(size=(3, 40000))), 1, 5).mean(0)
    metric = np.round(quality + rng.normal(size=40000), 2)

    def old_path() -> float:
        h, m = snap(human), snap(metric)
        c = SortedUnits(human=h, metric=m).counts(0.0)
        con, dis, th, tm, tb = (float(x[0]) for x in (c.concordant, c.discordant,
                                                       c.ties_human, c.ties_metric,
                                                       c.ties_both))
        pairs = con + dis + th + tm + tb
        return (con - dis) / np.sqrt((pairs - th - tb) * (pairs - tm - tb))

    t_new, v_new = best(lambda: float(kendall_groups(human=human[None], metric=metric[None])[0]),
                        repeats)
    t_old, v_old = best(old_path, repeats)
    t_sp, v_sp = best(lambda: float(scipy.stats.kendalltau(human, metric).statistic), repeats)
    assert abs(v_new - v_sp) <= 1e-12 and v_new == v_old, (v_new, v_old, v_sp)
    index = np.random.default_rng(1).integers(0, 40000, size=(200, 40000))
    t_boot, boot = best(lambda: meta_eval.bootstrap_values(
        "kendall", human=human[:, None], metric=metric[:, None], level="segment",
        grouping="none", index=index), 1)
    t_sboot, sboot = best(lambda: [scipy.stats.kendalltau(human[ix], metric[ix]).statistic
                                   for ix in index], 1)
    assert np.max(np.abs(np.asarray(boot) - np.asarray(sboot))) <= 1e-12
    print(f"tau-b = {v_new!r} (scipy {v_sp!r}, old path {v_old!r})")
    print("| ungrouped tau-b, 40,000 units | seconds |")
    print("|---|---:|")
    print(f"| meta_eval (O(n log n) counts at epsilon 0) | {t_new * 1000:.1f} ms |")
    print(f"| old path (SortedUnits, O(n log^2 n)) | {t_old * 1000:.1f} ms |")
    print(f"| scipy.stats.kendalltau | {t_sp * 1000:.1f} ms |")
    print(f"| meta_eval bootstrap, 200 resamples | {t_boot:.2f} s |")
    print(f"| scipy.stats.kendalltau loop, same 200 resamples | {t_sboot:.2f} s |")


def kemeny(repeats: int) -> None:
    from meta_eval.aggregation.kemeny import (
        MILP_SECONDS,
        _LinearOrdering,
        agreement,
        kemeny_dp,
        kemeny_local_search,
        kemeny_milp,
    )

    print("| systems | voters | optimum (s) | with winners and uniqueness (s) | MILP "
          "agreement | local search agreement | DP agreement (s) |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n, seed in ((18, 0), (18, 1), (20, 0), (24, 0), (30, 0), (30, 1), (30, 2)):
        rng = np.random.default_rng(seed)
        scores = np.round(rng.normal(size=n) * 0.05 + rng.normal(size=(100, n)))
        wins = (scores[:, :, None] > scores[:, None, :]).sum(0).astype(float)
        ties = (scores[:, :, None] == scores[:, None, :]).sum(0).astype(float)
        np.fill_diagonal(ties, 0)
        support = wins + ties / 2
        program = _LinearOrdering(support, MILP_SECONDS)
        free = (np.zeros(program.iu.size), np.ones(program.iu.size))
        t_opt, _ = best(lambda p=program, f=free: p.solve(*f), repeats)
        seconds, solved = best(lambda s=support: kemeny_milp(s), repeats)
        assert solved is not None
        order, value = solved[0], solved[1]
        assert value == agreement(support, order)
        start = list(np.argsort(-support.sum(axis=1), kind="stable"))
        _, local = kemeny_local_search(support, start)
        dp = "-"
        if n <= 20:
            t_dp, exact = best(lambda s=support: kemeny_dp(s), 1)
            assert exact[1] == value
            dp = f"{exact[1]:g} ({t_dp:.2f})"
        print(f"| {n} | 100 | {t_opt:.3f} | {seconds:.3f} | {value:g} | {local:g} | {dp} |")


def kemeny_sizes(repeats: int) -> None:
    import importlib
    from typing import Any

    from meta_eval.aggregation.profile import Profile

    rule: Any = importlib.import_module("meta_eval.aggregation.kemeny")  # the package's
    # `kemeny` attribute is the function

    def cpu(call: Callable[[], object]) -> tuple[float, object]:
        times, out = [], None
        for _ in range(repeats):
            start = time.process_time()
            out = call()
            times.append(time.process_time() - start)
        return min(times), out

    def profiles(n: int):
        for seed in range(3):
            rng = np.random.default_rng(seed)
            yield "1,000 voters", rng.normal(size=(1000, n)) + np.linspace(0, 0.5, n)
        for seed in range(3):
            rng = np.random.default_rng(seed)
            yield "100 voters, integer", np.round(rng.normal(size=n) * 0.05
                                                  + rng.normal(size=(100, n)))

    chosen = rule.DP_SYSTEMS
    print(f"CPU ms, best of {repeats}; the rule's choice: the dynamic programme up to "
          f"{chosen} systems")
    print("| systems | profile | DP, 3 seeds (ms) | MILP, 3 seeds (ms) | DP / MILP (median) | "
          "same tiers and winners | chosen |")
    print("|---:|---|---|---|---:|---|---|")
    try:
        for n in range(4, 19):
            systems = tuple(f"s{i:02d}" for i in range(n))
            rows: dict[str, list[tuple[float, float, bool]]] = {}
            for name, scores in profiles(n):
                def run(scores=scores, systems=systems):
                    return rule.kemeny(Profile(systems=systems, scores=scores))
                rule.DP_SYSTEMS = rule.HARD_LIMIT
                t_dp, dp = cpu(run)
                rule.DP_SYSTEMS = 0
                t_milp, milp = cpu(run)
                assert dp.exact and milp.exact  # type: ignore[attr-defined]
                same = (dp.tiers, dp.winners) == (milp.tiers, milp.winners)  # type: ignore
                rows.setdefault(name, []).append((t_dp, t_milp, same))
            for name, got in rows.items():
                ratio = float(np.median([d / m for d, m, _ in got]))
                dps = ", ".join(f"{d * 1e3:.1f}" for d, _, _ in got)
                milps = ", ".join(f"{m * 1e3:.1f}" for _, m, _ in got)
                n_same = sum(s for _, _, s in got)
                print(f"| {n} | {name} | {dps} | {milps} | {ratio:.2f} | {n_same} of {len(got)} "
                      f"| {'DP' if n <= chosen else 'MILP'} |", flush=True)
    finally:
        rule.DP_SYSTEMS = chosen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="*", default=["clusters", "kendall", "kemeny"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}, load {os.getloadavg()}")
    for case in args.cases:
        {"clusters": clusters, "kendall": kendall, "kemeny": kemeny,
         "kemeny-sizes": kemeny_sizes}[case](args.repeats)


if __name__ == "__main__":
    main()
