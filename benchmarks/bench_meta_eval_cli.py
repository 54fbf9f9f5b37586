"""The whole `judgebench meta-eval` command on a 40,000-row table with 3 metrics (issue 18).

Writes a wide CSV (2,000 items x 20 systems, one human column, three metric columns) and
times `judgebench meta-eval TABLE --human human.score` as a fresh process (start-up,
reading, checking, statistic and report), best of --repeats, for this checkout and,
with --reference DIR, for another checkout (e.g. a copy taken before a change) in the same
run, after checking that both print the same report.

    .venv/bin/python benchmarks/bench_meta_eval_cli.py [--reference DIR] [--repeats 3]
        [--statistic pearson] [--statistic kendall ...] [--grouping item]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ITEMS, SYSTEMS = 2000, 20


def write_table(path: Path) -> None:
    rng = np.random.default_rng(0)
    quality = rng.normal(size=(ITEMS, SYSTEMS))
    human = np.clip(np.round(quality[None] + 3 + rng.normal(size=(3, ITEMS, SYSTEMS))),
                    1, 5).mean(axis=0)
    lines = ["item,system,human.score,m1,m2,m3"]
    metrics = [quality + rng.normal(size=quality.shape) * s for s in (0.6, 0.9, 1.2)]
    for i in range(ITEMS):
        for s in range(SYSTEMS):
            values = ",".join(repr(float(m[i, s])) for m in metrics)
            lines.append(f"d{i:04d},sys{s:02d},{float(human[i, s])!r},{values}")
    path.write_text("\n".join(lines) + "\n")


def run(root: Path, args: list[str]) -> tuple[float, str]:
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{root / 'plugins'}")
    code = ("import sys; from judgebench.cli import main; sys.argv[0] = 'judgebench'; "
            "sys.exit(main())")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, "meta-eval", *args], env=env,
                          capture_output=True, text=True, cwd=root)
    if proc.returncode:
        raise SystemExit(f"{root}: exit {proc.returncode}\n{proc.stderr}")
    return time.perf_counter() - start, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reference", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--statistic", action="append")
    parser.add_argument("--grouping", default="none")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "scores.csv"
        write_table(table)
        options = [str(table), "--human", "human.score", "--grouping", args.grouping]
        for statistic in args.statistic or []:
            options += ["--statistic", statistic]
        roots = {"this checkout": ROOT}
        if args.reference:
            roots["reference"] = args.reference.resolve()
        times: dict[str, list[float]] = {name: [] for name in roots}
        outputs: dict[str, str] = {}
        for _ in range(args.repeats):  # interleaved: both sides see the same load
            for name, root in roots.items():
                seconds, out = run(root, options)
                times[name].append(seconds)
                outputs[name] = out
        if len(set(outputs.values())) != 1:
            raise SystemExit("the reports differ:\n" + "\n---\n".join(outputs.values()))
        print(f"load {os.getloadavg()}; {ITEMS * SYSTEMS} rows, 3 metrics, "
              f"statistics {args.statistic or ['pearson']}, grouping {args.grouping}")
        for name, values in times.items():
            print(f"{name}: best {min(values):.2f} s of {[round(v, 2) for v in values]}")
        print(outputs["this checkout"])


if __name__ == "__main__":
    main()
