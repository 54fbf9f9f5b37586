"""Item-grouped acc-eq (tie calibration) from 2,000 to 20,000 items x 20 systems (issue 29):
the function, the code before (HEAD~ of the fix, `git show`), mt-metrics-eval's
`KendallWithTiesOpt` (sample_rate=1.0, exact), and the whole `meta-eval` command.

Data: bench_meta_eval.py's generator at each size (human = mean of three 1-5 ratings, 13
values; one metric, noise 0.8). CPU time (`time.process_time`, or the child's rusage for
the command), best of --repeat (the code before and mt-metrics-eval: one run); the script
checks that all give the same epsilon and value before printing.

    .venv/bin/python benchmarks/bench_acc_eq_scale.py \
        --mtme /work/.mirror/google-research+mt-metrics-eval/repo [--before ed9b280]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_meta_eval_command import environment, judgebench_command, mtme_on_path  # noqa: E402

SYSTEMS = 20


def table(items: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(items, SYSTEMS)) + rng.normal(size=SYSTEMS) * 0.5
    ratings = np.clip(np.round(quality[None] + 3 + rng.normal(size=(3, items, SYSTEMS))), 1, 5)
    return ratings.mean(axis=0), quality + rng.normal(size=quality.shape) * 0.8


def before_module(commit: str) -> types.ModuleType:
    source = subprocess.run(["git", "show", f"{commit}:meta_eval/calibration.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType("calibration_before")
    sys.modules[module.__name__] = module  # its dataclass looks its module up
    exec(compile(source, "calibration_before", "exec"), module.__dict__)
    return module


def cpu(call, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        out = call()
        best = min(best, time.process_time() - start)
    return best, out


def command_cpu(path: Path, repeat: int) -> tuple[float, tuple[float, float]]:
    argv = [*judgebench_command(), "meta-eval", str(path), "--human", "human", "--level",
            "segment", "--grouping", "item", "--statistic", "acc-eq", "--json"]
    subprocess.run(argv, capture_output=True, check=True, env=environment(), cwd=ROOT)
    best, row = float("inf"), None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.run(argv, capture_output=True, text=True, check=True,
                              env=environment(), cwd=ROOT)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        row = json.loads(proc.stdout)[0]
    return best, (row["epsilon"], row["value"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mtme", type=Path, default=os.environ.get("MTME_PATH"))
    parser.add_argument("--before", default="ed9b280")
    parser.add_argument("--items", type=int, nargs="+", default=[2000, 5000, 8000, 20000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import pandas as pd

    import meta_eval
    from judgebench.tables.io import write_table

    old = before_module(args.before)
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        if args.mtme:
            mtme_on_path(args.mtme, scratch)
            from mt_metrics_eval import stats
        print(f"load {os.getloadavg()}; numpy {np.__version__}")
        print("| items x 20 systems | pairs | ours (s) | before (s) | mt-metrics-eval (s) | "
              "whole command (s) | epsilon | acc-eq |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for items in args.items:
            human, metric = table(items)
            groups = np.repeat(np.arange(items), SYSTEMS)
            t_ours, res = cpu(lambda h=human, m=metric: meta_eval.evaluate(
                "acc-eq", human=h, metric=m, grouping="item"), args.repeat)
            t_old, ref = cpu(lambda h=human, m=metric, g=groups: old.calibrate_epsilon(
                human=h.ravel(), metric=m.ravel(), groups=g), 1)
            assert (ref.epsilon, ref.value) == (res.epsilon, res.value) or (
                ref.epsilon == res.epsilon and abs(ref.value - res.value) <= 1e-12), (ref, res)
            t_mtme = float("nan")
            if args.mtme:
                t_mtme, theirs = cpu(lambda h=human, m=metric: stats.KendallWithTiesOpt(
                    h.T.ravel().tolist(), m.T.ravel().tolist(), variant="acc23",
                    num_sys=SYSTEMS, average_by="item", sample_rate=1.0), 1)
                assert abs(theirs[0] - res.value) <= 1e-9 and abs(
                    theirs[1] - res.epsilon) <= 1e-9, (theirs[:2], res)
            path = scratch / f"t{items}.csv"
            write_table(pd.DataFrame({
                "item": np.repeat([f"i{i}" for i in range(items)], SYSTEMS),
                "system": np.tile([f"s{s}" for s in range(SYSTEMS)], items),
                "human": human.ravel(), "m": metric.ravel()}), path)
            t_cmd, (eps, value) = command_cpu(path, args.repeat)
            assert eps == res.epsilon and abs(value - res.value) <= 1e-12
            print(f"| {items:,} | {items * SYSTEMS * (SYSTEMS - 1) // 2:,} | {t_ours:.3f} | "
                  f"{t_old:.3f} | {t_mtme:.2f} | {t_cmd:.2f} | {res.epsilon:.3g} | "
                  f"{res.value:.6f} |", flush=True)
        print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
