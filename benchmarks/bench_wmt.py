"""A WMT-sized meta-evaluation, the whole `judgebench meta-eval` commands against
mt-metrics-eval in one run (issue 29).

Data (synthetic, seeded): three language pairs, each 15 systems x 2,000 segments with an
MQM-like human score (0 for a clean segment, else minus the error penalties: 1 per minor
error, 5 per major, 25 for a non-translation; about 60% of the segments tie at 0) and 30
metrics (noisy views of the same latent quality, every third rounded to 2 decimals and every
fifth to 1 decimal, so they tie too). One CSV per language pair, with the `.meta.json`
sidecar that `judgebench score` writes, and a copy without one.

What is computed per language pair, as mt-metrics-eval computes it for a WMT table. Ours:
what a WMT user runs, two commands per language pair,

    meta-eval T --human mqm --level system --level segment --grouping none --grouping item
        --grouping system --statistic pearson --statistic kendall       ("levels")
    meta-eval T --human mqm --level segment --grouping item --statistic acc-eq  ("acc-eq")

(--separate: the one command per line below, 12 in all, as before meta-eval took several
--level and --grouping values):

  system   --level system --statistic pearson --statistic kendall
           stats.Correlation(15, gold_means, metric_means).Pearson() / .Kendall()
  none     --level segment --statistic pearson --statistic kendall
           .Pearson() / .Kendall() on the flattened segment scores
  item     --level segment --grouping item --statistic pearson --statistic kendall
           --statistic acc-eq
           .Pearson('item') / .Kendall('item'), and stats.KendallWithTiesOpt(variant=
           'acc23', average_by='item', sample_rate=1.0) (every pair: exact)
  sys      --level segment --grouping system --statistic pearson --statistic kendall
           .Pearson('sys') / .Kendall('sys')
  clusters (with --clusters; not in the default run)
           --level system --statistic pearson --compare (permutation test, 1,000 resamples)
           data.CompareMetrics(corrs, scipy.stats.pearsonr, 'none', k=1000): every pair of
           metrics, PERM-BOTH, then AssignRanks (restated from its code: data.py imports
           apache_beam and dacite at the top). Not like for like: mt-metrics-eval's
           system-level test swaps the 15 system scores of the two metrics, ours swaps the
           30,000 segment scores and recomputes the system means (PERM-BOTH over units)

Ours: each command a fresh process, as a user runs it (start-up, CSV read, sidecar,
output); the best of --repeat for each command, CPU time of the child
(`resource.getrusage(RUSAGE_CHILDREN)`) and wall time. mt-metrics-eval: its functions
called in this process on its own vectors (import and packing not timed), one run, CPU
(`time.process_time`) and wall. Before any time is printed, every value (and every acc-eq
epsilon) of ours is checked against mt-metrics-eval's to 1e-9, with and without the
sidecar. Cluster ranks come from random resamples on both sides (different generators),
so they are compared, not asserted: the table gives how many metrics get the same rank.
The `uptime` load is recorded before and after each phase.

    .venv/bin/python benchmarks/bench_wmt.py \
        --mtme /work/.mirror/google-research+mt-metrics-eval/repo [--repeat 2] [--separate]
        [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_meta_eval_command import environment, judgebench_command, mtme_on_path  # noqa: E402

PAIRS = ("en-de", "zh-en", "he-en")
SYSTEMS, SEGMENTS, METRICS = 15, 2000, 30
TOLERANCE = 1e-9
# What a WMT user runs per language pair: every level and grouping from one read of the
# table, and acc-eq where WMT reports it (segment level, item grouping).
COMMANDS = {
    "levels": ["--level", "system", "--level", "segment", "--grouping", "none",
               "--grouping", "item", "--grouping", "system", "--statistic", "pearson",
               "--statistic", "kendall"],
    "acc-eq": ["--level", "segment", "--grouping", "item", "--statistic", "acc-eq"],
}
SEPARATE = {  # --separate: one command per level and grouping (the figure before)
    "system": ["--level", "system", "--statistic", "pearson", "--statistic", "kendall"],
    "none": ["--level", "segment", "--statistic", "pearson", "--statistic", "kendall"],
    "item": ["--level", "segment", "--grouping", "item", "--statistic", "pearson",
             "--statistic", "kendall", "--statistic", "acc-eq"],
    "sys": ["--level", "segment", "--grouping", "system", "--statistic", "pearson",
            "--statistic", "kendall"],
}
CLUSTERS = ["--level", "system", "--statistic", "pearson", "--compare", "--resamples", "1000"]
Values = dict[tuple[str, str, str], tuple[float, float | None]]  # (case, stat, metric)
TIES: list[tuple[str, str, float, float]] = []  # acc-eq epsilons that tie (check_same)


def language_pair(seed: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(segments, systems) MQM-like human scores and 30 metrics."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(SEGMENTS, SYSTEMS)) + rng.normal(size=SYSTEMS) * 0.4
    errors = rng.poisson(np.exp(-0.9 - quality))
    major = rng.binomial(errors, 0.3)
    human = -(5.0 * major + (errors - major)) - 25.0 * (rng.random(quality.shape) < 0.003)
    metrics = {}
    for k in range(METRICS):
        m = quality + rng.normal(size=quality.shape) * (0.5 + 0.03 * k)
        if k % 5 == 0:
            m = np.round(m, 1)
        elif k % 3 == 0:
            m = np.round(m, 2)
        metrics[f"metric{k:02d}"] = m
    return human, metrics


def compare_metrics(corrs: dict[str, Any], k: int = 1000, pval: float = 0.05
                    ) -> dict[str, tuple[float, int]]:
    """mt-metrics-eval `data.CompareMetrics(corrs, scipy.stats.pearsonr, 'none', k)` as its
    code runs it (sort by decreasing correlation, name second; `stats.PermutationSigDiff`
    for every pair, as `ComputeSigMatrix`; then `AssignRanks`), restated because
    mt_metrics_eval.data imports apache_beam and dacite at the top."""
    import scipy.stats
    from mt_metrics_eval import stats

    first = next(iter(corrs.values()))
    wrapper = stats.AverageCorrelation(scipy.stats.pearsonr, first.num_sys, average_by="none",
                                       filter_nones=first.none_count)
    ranked = dict(sorted(((m, wrapper(c.gold_scores, c.metric_scores)[0])
                          for m, c in corrs.items()), key=lambda x: (-x[1], x[0])))
    names = list(ranked)
    n = len(names)
    sig = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            sig[i, j] = stats.PermutationSigDiff(corrs[names[j]], corrs[names[i]],
                                                 scipy.stats.pearsonr, "none", k)[0]
    ranks, current, start = [], 1, 0
    for i in range(n):  # AssignRanks
        if any(sig[:, i][start:i] <= pval):
            current, start = current + 1, i
        ranks.append(current)
    return {m: (float(ranked[m]), r) for m, r in zip(names, ranks, strict=True)}


def write_tables(folder: Path) -> dict[str, dict[str, Any]]:
    import pandas as pd

    from judgebench.tables.io import write_table

    out = {}
    for index, pair in enumerate(PAIRS):
        human, metrics = language_pair(29 + index)
        frame = pd.DataFrame({
            "item": np.repeat([f"{pair}:seg{i:04d}" for i in range(SEGMENTS)], SYSTEMS),
            "system": np.tile([f"{pair}:sys{s:02d}" for s in range(SYSTEMS)], SEGMENTS),
            "mqm": human.ravel(), **{name: m.ravel() for name, m in metrics.items()}})
        table, plain = folder / f"{pair}.csv", folder / f"{pair}-plain.csv"
        for path in (table, plain):
            write_table(frame, path)
        sidecar = {"columns": {name: {"metric": name, "higher_is_better": True,
                                      "level": "segment"} for name in metrics}}
        Path(f"{table}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
        out[pair] = {"table": table, "plain": plain, "human": human, "metrics": metrics}
    return out


def run_ours(table: Path, case: str) -> tuple[float, float, list[dict[str, Any]]]:
    """(CPU s, wall s, rows) of one command in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([*judgebench_command(), "meta-eval", str(table), "--human", "mqm",
                           *COMMANDS[case], "--json"], capture_output=True, text=True,
                          env=environment(), cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{table} {case}: {proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, json.loads(proc.stdout)


VIEWS = {("system", "none"): "system", ("segment", "none"): "none",
         ("segment", "item"): "item", ("segment", "system"): "sys"}


def ours_values(case: str, rows: list[dict[str, Any]]) -> tuple[Values, dict[str, int]]:
    """Each row's value keyed by mt-metrics-eval's case (from its level and grouping)."""
    values = {(case if case == "clusters" else VIEWS[r["level"], r["grouping"]],
               r["statistic"], r["metric"]): (r["value"], r.get("epsilon")) for r in rows}
    return values, {r["metric"]: r["cluster"] for r in rows if "cluster" in r}


def mtme_pair(human: np.ndarray, metrics: dict[str, np.ndarray]
              ) -> Callable[[], tuple[Values, dict[str, int]]]:
    """mt-metrics-eval's calls for one language pair, on vectors packed system by system."""
    from mt_metrics_eval import stats

    gold = human.T.ravel().tolist()
    packed = {name: m.T.ravel().tolist() for name, m in metrics.items()}
    gold_means = human.mean(axis=0).tolist()
    means = {name: m.mean(axis=0).tolist() for name, m in metrics.items()}

    def run() -> tuple[Values, dict[str, int]]:
        out: Values = {}
        for name, metric in packed.items():
            sys_corr = stats.Correlation(SYSTEMS, gold_means, means[name])
            out["system", "pearson", name] = (float(sys_corr.Pearson()[0]), None)
            out["system", "kendall", name] = (float(sys_corr.Kendall()[0]), None)
            corr = stats.Correlation(SYSTEMS, gold, metric)
            for case, by in (("none", "none"), ("item", "item"), ("sys", "sys")):
                out[case, "pearson", name] = (float(corr.Pearson(by)[0]), None)
                out[case, "kendall", name] = (float(corr.Kendall(by)[0]), None)
            value, epsilon, _ = stats.KendallWithTiesOpt(
                gold, metric, variant="acc23", num_sys=SYSTEMS, average_by="item",
                sample_rate=1.0)
            out["item", "acc-eq", name] = (float(value), float(epsilon))
        if "clusters" not in COMMANDS:
            return out, {}
        corrs = {name: stats.Correlation(SYSTEMS, gold_means, means[name]) for name in means}
        np.random.seed(0)
        ranked = compare_metrics(corrs)
        for name, (value, _) in ranked.items():
            out["clusters", "pearson", name] = (float(value), None)
        return out, {name: int(rank) for name, (_, rank) in ranked.items()}
    return run


def check_same(pair: str, ours: Values, theirs: Values, d: dict[str, Any]) -> float:
    """The largest difference of values; raise if a value differs, or an acc-eq epsilon
    differs other than as a tie: mt-metrics-eval takes the first maximum of its float
    averages, ours the smallest epsilon reaching the maximum of exact counts, so where two
    epsilons give the same acc-23, ours must be the smaller and give the same value at
    theirs."""
    import meta_eval

    assert ours.keys() == theirs.keys(), (pair, sorted(set(ours) ^ set(theirs))[:5])
    worst = 0.0
    for key, (value, epsilon) in theirs.items():
        our_value, our_epsilon = ours[key]
        worst = max(worst, abs(our_value - value))
        assert abs(our_value - value) <= TOLERANCE, (pair, key, our_value, value)
        if epsilon is not None:
            assert our_epsilon is not None
            if abs(our_epsilon - epsilon) > TOLERANCE:
                at_theirs = meta_eval.evaluate("acc-23", human=d["human"],
                                               metric=d["metrics"][key[2]], grouping="item",
                                               epsilon=epsilon).value
                assert our_epsilon < epsilon and abs(at_theirs - our_value) <= 1e-12, (
                    pair, key, our_epsilon, epsilon, at_theirs, our_value)
                TIES.append((pair, key[2], our_epsilon, epsilon))
    return worst


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mtme", type=Path, default=os.environ.get("MTME_PATH"))
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--clusters", action="store_true",
                        help="also the system-level significance clusters (see the docstring)")
    parser.add_argument("--separate", action="store_true",
                        help="one command per level and grouping (12 in all), as before "
                             "meta-eval took several --level and --grouping")
    parser.add_argument("--quick", action="store_true",
                        help="4 metrics x 200 segments: a check of the script, not a figure")
    args = parser.parse_args()
    global SEGMENTS, METRICS
    if args.quick:
        SEGMENTS, METRICS = 200, 4
    if args.separate:
        COMMANDS.clear()
        COMMANDS.update(SEPARATE)
    if args.clusters:
        COMMANDS["clusters"] = CLUSTERS
    if args.mtme is None:
        raise SystemExit("give mt-metrics-eval's location with --mtme or MTME_PATH")
    results: dict[str, Any] = {"machine": f"{platform.machine()}, "
                               f"{len(os.sched_getaffinity(0))} CPUs, Python "
                               f"{platform.python_version()}, numpy {np.__version__}",
                               "load": {}}
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        mtme_on_path(args.mtme, scratch)
        pairs = write_tables(scratch)
        import mt_metrics_eval.stats  # noqa: F401

        ours: dict[str, dict[str, list[float]]] = {"sidecar": {}, "plain": {}}
        worst, agree, total = 0.0, 0, 0
        results["load"]["ours start"] = load()
        for pair, d in pairs.items():
            found: dict[str, tuple[Values, dict[str, int]]] = {}
            for kind in ("sidecar", "plain"):
                table = d["table"] if kind == "sidecar" else d["plain"]
                values: Values = {}
                for case in COMMANDS:
                    print(f"ours {pair} {kind} {case} ...", file=sys.stderr, flush=True)
                    run_ours(table, case)  # untimed: writes the bytecode cache
                    timed = [run_ours(table, case) for _ in range(args.repeat)]
                    cpu = min(t[0] for t in timed)
                    wall = min(t[1] for t in timed)
                    ours[kind].setdefault(case, [0.0, 0.0])
                    ours[kind][case][0] += cpu
                    ours[kind][case][1] += wall
                    got, clusters = ours_values(case, timed[-1][2])
                    values |= got
                    if clusters:
                        found[kind] = (values, clusters)
                found[kind] = (values, found.get(kind, (values, {}))[1])
            d["ours"] = found
        results["load"]["ours end"] = load()
        mtme = {"cpu": 0.0, "wall": 0.0}
        results["load"]["mt-metrics-eval start"] = load()
        for pair, d in pairs.items():
            print(f"mt-metrics-eval {pair} ...", file=sys.stderr, flush=True)
            call = mtme_pair(d["human"], d["metrics"])
            cpu0, wall0 = time.process_time(), time.perf_counter()
            theirs, ranks = call()
            mtme["cpu"] += time.process_time() - cpu0
            mtme["wall"] += time.perf_counter() - wall0
            for kind in ("sidecar", "plain"):
                values, clusters = d["ours"][kind]
                worst = max(worst, check_same(pair, values, theirs, d))
            clusters = d["ours"]["sidecar"][1]
            agree += sum(clusters.get(m) == ranks[m] for m in ranks)
            total += len(ranks)
        results["load"]["mt-metrics-eval end"] = load()

    results["ours"] = ours
    results["mtme"] = mtme
    results["max abs difference"] = worst
    results["cluster ranks equal"] = [agree, total]
    print(f"machine: {results['machine']}; load (1/5/15 min): {results['load']}")
    print(f"values identical to {TOLERANCE:g} with and without the sidecar (largest "
          f"difference {worst:.1e}); cluster ranks equal for {agree} of {total} metrics")
    ties = list(dict.fromkeys(TIES))  # each found with and without the sidecar
    print(f"acc-eq epsilons: {len(ties)} of {len(PAIRS) * METRICS} tie (ours the smallest "
          f"maximiser, the same acc-23 at mt-metrics-eval's): {ties}")
    results["acc-eq epsilon ties"] = ties
    print("| what (3 language pairs) | ours CPU s | ours wall s | no sidecar CPU s | "
          "no sidecar wall s |")
    print("|---|---:|---:|---:|---:|")
    for case in COMMANDS:
        s, p = ours["sidecar"][case], ours["plain"][case]
        print(f"| {case} | {s[0]:.2f} | {s[1]:.2f} | {p[0]:.2f} | {p[1]:.2f} |")
    total_s = [sum(v[i] for v in ours["sidecar"].values()) for i in (0, 1)]
    total_p = [sum(v[i] for v in ours["plain"].values()) for i in (0, 1)]
    print(f"| all {len(COMMANDS) * len(PAIRS)} commands | {total_s[0]:.2f} | {total_s[1]:.2f} "
          f"| {total_p[0]:.2f} | {total_p[1]:.2f} |")
    print(f"mt-metrics-eval, the same statistics in process: CPU {mtme['cpu']:.1f} s, wall "
          f"{mtme['wall']:.1f} s")
    print(f"ratio (CPU): {mtme['cpu'] / total_s[0]:.1f}x with sidecars, "
          f"{mtme['cpu'] / total_p[0]:.1f}x without; (wall): "
          f"{mtme['wall'] / total_s[1]:.1f}x / {mtme['wall'] / total_p[1]:.1f}x")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
