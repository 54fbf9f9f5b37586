"""The whole `judgebench meta-eval` command against mt-metrics-eval in process (issue 18).

Data: the synthetic table of benchmarks/bench_meta_eval.py (20 systems x 2,000 items, human
score = mean of three 1-5 ratings, so many ties), its first 5 metrics (m00 and m03 rounded to
2 decimals: ties of their own), written as a CSV with the `.meta.json` sidecar that
`judgebench score` writes (each column's direction), and again without a sidecar.

Cases:
  acc-eq   segment level, grouped by item, acc-eq (acc-23 with tie calibration):
           `judgebench meta-eval T --human human --level segment --grouping item
           --statistic acc-eq` against mt-metrics-eval `stats.KendallWithTiesOpt(gold,
           metric, variant='acc23', num_sys=20, average_by='item', sample_rate=1.0)` per
           metric (every pair: its default samples 10% of them and is not exact)
  system   system level, Pearson and Kendall tau-b of the system means:
           `... --level system --statistic pearson --statistic kendall` against
           `stats.Correlation(20, gold, metric).Pearson()` and `.Kendall()` on the system
           means (numpy means of the same matrices)

Ours is the command a user runs, as a fresh process (start-up, CSV read, sidecar, output
included); mt-metrics-eval is its functions called in this process on data already in the
vectors it takes (import and data preparation not timed). Before printing any time the
script checks that both give the same value (to 1e-9) and, for acc-eq, the same epsilon.
Each time is the best of `--repeat` runs (the machine is shared). The floor is what every
command pays: `python -c "import judgebench.cli"` and `judgebench --help`.

mt-metrics-eval is not a dependency: give a checkout (or its bare git directory, which is
extracted to a temporary folder) with --mtme or MTME_PATH:

    .venv/bin/python benchmarks/bench_meta_eval_command.py \
        --mtme /work/.mirror/google-research+mt-metrics-eval/repo [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_meta_eval import synthetic  # noqa: E402

METRICS = 5
TOLERANCE = 1e-9
CASES = {
    "acc-eq": ["--level", "segment", "--grouping", "item", "--statistic", "acc-eq"],
    "system": ["--level", "system", "--statistic", "pearson", "--statistic", "kendall"],
}


def mtme_on_path(location: Path, scratch: Path) -> None:
    """Put mt-metrics-eval on sys.path: a checkout as it is, a bare git directory
    extracted (`git archive HEAD`) into `scratch`."""
    if not (location / "mt_metrics_eval").is_dir():
        if not (location / "HEAD").is_file():
            raise SystemExit(f"{location}: neither a checkout of mt-metrics-eval nor its git "
                             "directory")
        archive = scratch / "mtme.tar"
        with archive.open("wb") as out:
            subprocess.run(["git", "--git-dir", str(location), "archive", "HEAD"], stdout=out,
                           check=True)
        with tarfile.open(archive) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.11.4+
                tar.extractall(scratch / "mtme", filter="data")
            else:
                tar.extractall(scratch / "mtme")  # our own git archive
        location = scratch / "mtme"
    sys.path.insert(0, str(location))


def write_table(folder: Path) -> tuple[Path, Path, np.ndarray, dict[str, np.ndarray]]:
    """The table with a sidecar and a copy without one; the matrices it holds."""
    import pandas as pd

    from judgebench.tables.io import write_table as write

    human, all_metrics = synthetic()
    metrics = dict(list(all_metrics.items())[:METRICS])
    items, systems = human.shape
    frame = pd.DataFrame({
        "item": np.repeat([f"doc{i:04d}" for i in range(items)], systems),
        "system": np.tile([f"sys{s:02d}" for s in range(systems)], items),
        "human": human.ravel(),
        **{name: m.ravel() for name, m in metrics.items()},
    })
    with_sidecar, plain = folder / "scores.csv", folder / "plain.csv"
    for path in (with_sidecar, plain):
        write(frame, path)  # every float reads back bit for bit
    sidecar = {"columns": {name: {"metric": name, "higher_is_better": True, "level": "segment"}
                           for name in metrics}}
    Path(f"{with_sidecar}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    return with_sidecar, plain, human, metrics


def judgebench_command() -> list[str]:
    script = Path(sys.executable).parent / "judgebench"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "from judgebench.cli import main; main()"]


def environment() -> dict[str, str]:
    """The environment of a user's shell: our source on the path, and Python's bytecode cache
    on (PYTHONDONTWRITEBYTECODE unset), as it is by default. With it set, every command
    compiles judgebench and meta_eval from source, which no installed tool pays."""
    paths = [str(ROOT), str(ROOT / "plugins")]
    if os.environ.get("PYTHONPATH"):
        paths.append(os.environ["PYTHONPATH"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


def best_wall(command: list[str], repeat: int) -> float:
    """The best of `repeat` timed runs, after one untimed run (which writes the bytecode
    cache, as a user's first run does)."""
    subprocess.run(command, capture_output=True, check=True, env=environment(), cwd=ROOT)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=environment(), cwd=ROOT)
        times.append(time.perf_counter() - start)
    return min(times)


def best_call(call: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return min(times), result


def ours_values(table: Path, case: str) -> dict[tuple[str, str], tuple[float, float | None]]:
    proc = subprocess.run([*judgebench_command(), "meta-eval", str(table), "--human", "human",
                           *CASES[case], "--json"], capture_output=True, text=True, check=True,
                          env=environment(), cwd=ROOT)
    return {(row["statistic"], row["metric"]): (row["value"], row.get("epsilon"))
            for row in json.loads(proc.stdout)}


def mtme_case(case: str, human: np.ndarray, metrics: dict[str, np.ndarray]
              ) -> Callable[[], dict[tuple[str, str], tuple[float, float | None]]]:
    """mt-metrics-eval's calls for `case`, on its own layout: vectors packed system by
    system (num_sys rows of items)."""
    from mt_metrics_eval import stats

    systems = human.shape[1]
    if case == "acc-eq":
        gold = human.T.ravel().tolist()
        packed = {name: m.T.ravel().tolist() for name, m in metrics.items()}

        def run() -> dict[tuple[str, str], tuple[float, float | None]]:
            out = {}
            for name, metric in packed.items():
                value, epsilon, _ = stats.KendallWithTiesOpt(
                    gold, metric, variant="acc23", num_sys=systems, average_by="item",
                    sample_rate=1.0)
                out["acc-eq", name] = (float(value), float(epsilon))
            return out
        return run

    gold_means = human.mean(axis=0).tolist()
    means = {name: m.mean(axis=0).tolist() for name, m in metrics.items()}

    def run_system() -> dict[tuple[str, str], tuple[float, float | None]]:
        out: dict[tuple[str, str], tuple[float, float | None]] = {}
        for name, metric in means.items():
            corr = stats.Correlation(systems, gold_means, metric)
            out["pearson", name] = (float(corr.Pearson()[0]), None)
            out["kendall", name] = (float(corr.Kendall()[0]), None)
        return out
    return run_system


def check_same(case: str, ours: dict, theirs: dict) -> float:
    """The largest difference of values; raise if any value or epsilon differs."""
    assert ours.keys() == theirs.keys(), (case, sorted(ours), sorted(theirs))
    worst = 0.0
    for key, (value, epsilon) in theirs.items():
        our_value, our_epsilon = ours[key]
        worst = max(worst, abs(our_value - value))
        assert abs(our_value - value) <= TOLERANCE, (case, key, our_value, value)
        if epsilon is not None:
            assert our_epsilon is not None and abs(our_epsilon - epsilon) <= TOLERANCE, (
                case, key, our_epsilon, epsilon)
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mtme", type=Path, default=os.environ.get("MTME_PATH"),
                        help="mt-metrics-eval checkout or git directory (or MTME_PATH)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.mtme is None:
        raise SystemExit("give mt-metrics-eval's location with --mtme or MTME_PATH")

    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        mtme_on_path(args.mtme, scratch)
        table, plain, human, metrics = write_table(scratch)
        command = [*judgebench_command(), "meta-eval", str(table), "--human", "human"]
        plain_command = [*judgebench_command(), "meta-eval", str(plain), "--human", "human"]
        results: dict[str, Any] = {"floor": {
            "import judgebench.cli": best_wall([sys.executable, "-c", "import judgebench.cli"],
                                               args.repeat),
            "judgebench --help": best_wall([*judgebench_command(), "--help"], args.repeat),
        }}
        start = time.perf_counter()
        import mt_metrics_eval.stats  # noqa: F401

        results["mtme import s"] = time.perf_counter() - start
        for case in CASES:
            print(f"running {case} ...", file=sys.stderr, flush=True)
            theirs_s, theirs = best_call(mtme_case(case, human, metrics), args.repeat)
            worst = max(check_same(case, ours_values(t, case), theirs) for t in (table, plain))
            results[case] = {
                "command": " ".join(["judgebench", *command[len(judgebench_command()):],
                                     *CASES[case]]).replace(str(table), "scores.csv"),
                "ours s": best_wall([*command, *CASES[case]], args.repeat),
                "ours s, no sidecar": best_wall([*plain_command, *CASES[case]], args.repeat),
                "mtme s": theirs_s,
                "max abs difference": worst,
            }

    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} CPUs, Python "
          f"{platform.python_version()}, numpy {np.__version__}; load {os.getloadavg()}")
    print(f"values identical to {TOLERANCE:g} (largest difference "
          f"{max(results[c]['max abs difference'] for c in CASES):.1e}); best of "
          f"{args.repeat}")
    print("| case | ours: whole command (s) | same, no sidecar (s) | mt-metrics-eval in "
          "process (s) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for case in CASES:
        r = results[case]
        print(f"| {case} | {r['ours s']:.3f} | {r['ours s, no sidecar']:.3f} | "
              f"{r['mtme s']:.3f} | {r['mtme s'] / r['ours s']:.1f}x |")
    for name, seconds in results["floor"].items():
        print(f"floor: {name}: {seconds:.3f} s")
    print(f"mt-metrics-eval import (not counted): {results['mtme import s']:.3f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
