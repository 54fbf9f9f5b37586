"""Whole-command time and peak memory of `judgebench items` and `judgebench combine`.

Data (synthetic, seeded):
  items    100 systems x 10,000 items; a metric in [0, 1] whose value >= 0.5 follows a 2PL
           (abilities N(0, 1), slopes U(0.5, 2.5), difficulties U(-2, 2)); run as
           `judgebench items T --metric m --threshold 0.5 --subset 100 --power --json`
           (both models fitted, ML abilities, flags, the greedy subset with 20 random-subset
           baselines, top-3 power).
  combine  40,000 rows (2,000 items x 20 systems), four metrics and a human score that is a
           noisy linear function of two of them; `judgebench combine T --human h --metric
           m1 ... --metric m4 --model ridge|isotonic -o out.csv --json` (5 folds over items,
           the out-of-fold Kendall at three settings for the combination and each metric).
           gp is not run at this size: a GP trains on at most --gp-max-rows rows per fold.

Each command runs as a fresh `python -m`-style process (start-up, reading the CSV, writing
the output included); peak RSS is `ru_maxrss` of that child (each under its own launcher, so
the value is its own). Before a time is printed the output is checked: items must rank the
systems with Kendall tau > 0.95 against the true abilities; combine must report a finite
out-of-fold value for every setting.

    .venv/bin/python benchmarks/bench_items_combine.py [--repeat 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
LAUNCH = ("import resource, subprocess, sys; "
          "code = subprocess.call(sys.argv[1:]); "
          "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
          "sys.exit(code)")
CLI = "from judgebench.cli import main; main()"


def items_table(path: Path, *, systems: int = 100, items: int = 10_000, seed: int = 0
                ) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=systems)
    a, b = rng.uniform(0.5, 2.5, items), rng.uniform(-2, 2, items)
    p = 1 / (1 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    y = rng.random(p.shape) < p
    value = np.where(y, 0.5 + 0.5 * rng.random(p.shape), 0.5 * rng.random(p.shape))
    pd.DataFrame({"item": np.repeat([f"i{i}" for i in range(items)], systems),
                  "system": np.tile([f"s{j}" for j in range(systems)], items),
                  "m": value.reshape(-1)}).to_csv(path, index=False)
    return theta


def combine_table(path: Path, *, items: int = 2_000, systems: int = 20, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    n = items * systems
    m = rng.normal(size=(n, 4))
    human = 1.5 * m[:, 0] - 0.5 * m[:, 1] + rng.normal(0, 1.0, n)
    pd.DataFrame({"item": np.repeat([f"i{i}" for i in range(items)], systems),
                  "system": np.tile([f"s{j}" for j in range(systems)], items),
                  **{f"m{k + 1}": m[:, k] for k in range(4)}, "h": human}
                 ).to_csv(path, index=False)


def run(args: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB, stdout) of one judgebench command in a fresh process."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'plugins'}"}
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", LAUNCH, sys.executable, "-c", CLI, *args],
                          capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{proc.stderr}")
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    return seconds, peak_kib / 1024, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    from scipy.stats import kendalltau

    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        table = folder / "items.csv"
        theta = items_table(table)
        truth = {f"s{j}": theta[j] for j in range(len(theta))}
        best = None
        for _ in range(options.repeat):
            seconds, rss, out = run(["items", str(table), "--metric", "m", "--threshold",
                                     "0.5", "--subset", "100", "--power", "--json"])
            rows = json.loads(out)
            systems = [r for r in rows if r["type"] == "system"]
            tau = kendalltau([truth[r["system"]] for r in systems],
                             [r["ability"] for r in systems]).statistic
            assert tau > 0.95, tau
            best = min(best or (seconds, rss), (seconds, rss))
        assert best is not None
        results.append({"case": "items 100 systems x 10,000 items (2pl, --subset 100, "
                                "--power)", "seconds": best[0], "peak_rss_mib": best[1],
                        "check": f"Kendall tau vs true abilities {tau:.3f}"})
        table = folder / "combine.csv"
        combine_table(table)
        for model in ("ridge", "isotonic"):
            best = None
            for _ in range(options.repeat):
                out_path = folder / f"out_{model}.csv"
                out_path.unlink(missing_ok=True)
                Path(f"{out_path}.meta.json").unlink(missing_ok=True)
                seconds, rss, out = run(["combine", str(table), "--human", "h",
                                         *[a for k in range(4) for a in ("--metric", f"m{k+1}")],
                                         "--model", model, "-o", str(out_path), "--json"])
                rows = json.loads(out)
                values = [r["combined"] for r in rows[1:]]
                assert all(v is not None and np.isfinite(v) for v in values), values
                best = min(best or (seconds, rss), (seconds, rss))
            assert best is not None
            results.append({"case": f"combine 40,000 rows, 4 metrics, {model}",
                            "seconds": best[0], "peak_rss_mib": best[1],
                            "check": f"out-of-fold segment Kendall {values[0]:.3f}"})
    print("| case | seconds | peak RSS (MiB) | check |")
    print("|---|---:|---:|---|")
    for r in results:
        print(f"| {r['case']} | {r['seconds']:.2f} | {r['peak_rss_mib']:.0f} | {r['check']} |")
    if options.json:
        options.json.write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
