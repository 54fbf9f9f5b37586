"""How long `judgebench estimate` takes (the service, in process: the table read once, checks,
every system's estimates, `--compare`), against a plain reference timed in the same run:
pandas reads the CSV, groups it by system and calls `meta_eval.estimation.ppi_mean` per
system. The script checks that both give the same PPI++ points before printing the times.
Synthetic table: ITEMS items x SYSTEMS systems, 10% of rows labelled.

    python benchmarks/bench_estimate_command.py [--items 10000 100000] [--systems 10]

Prints one JSON line per (items, case), with the peak resident memory of the process so far.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from judgebench.services.estimate import estimate
from meta_eval.estimation import ppi_mean

T = TypeVar("T")


def write_table(path: Path, items: int, systems: int) -> None:
    rng = np.random.default_rng(0)
    rows = items * systems
    length = rng.random(rows)
    human = 1 + length + rng.normal(size=rows)
    judge = human + 0.8 * length + rng.normal(size=rows)
    pd.DataFrame({
        "item": np.tile([f"i{i}" for i in range(items)], systems),
        "system": np.repeat([f"s{s}" for s in range(systems)], items),
        "judge": judge,
        "human": np.where(rng.random(rows) < 0.1, human, np.nan),
    }).to_csv(path, index=False)


def reference(path: Path) -> dict[str, float]:
    frame = pd.read_csv(path)
    return {str(system): ppi_mean(judge=rows["judge"], human=rows["human"]).point
            for system, rows in frame.groupby("system")}


def timed(call: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    began = time.perf_counter()
    out = call(*args, **kwargs)
    return out, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--systems", type=int, default=10)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        warm = Path(folder) / "warm.csv"  # imports and first calls, timed by neither side
        write_table(warm, 2000, 2)
        reference(warm)
        estimate(warm, judge="judge", human="human", compare=True, target_width=0.05)
        for items in options.items:
            path = Path(folder) / f"t{items}.csv"
            write_table(path, items, options.systems)
            plain, plain_s = timed(reference, path)
            result, ours_s = timed(estimate, path, judge="judge", human="human")
            points = {r.group: r.estimate.point for r in result.rows
                      if r.method == "ppi++" and r.estimate is not None}
            assert points.keys() == plain.keys()
            assert all(abs(points[k] - plain[k]) <= 1e-12 * max(1.0, abs(plain[k]))
                       for k in plain), "the service and the reference disagree"
            _, compare_s = timed(estimate, path, judge="judge", human="human", compare=True,
                                 target_width=0.05)
            peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            for case, seconds in (("reference: read_csv + groupby + ppi_mean", plain_s),
                                  ("estimate", ours_s),
                                  ("estimate --compare --target-width", compare_s)):
                print(json.dumps({"items": items, "systems": options.systems,
                                  "rows": items * options.systems, "case": case,
                                  "seconds": round(seconds, 3),
                                  "peak_rss_mib": round(peak_mib)}), flush=True)


if __name__ == "__main__":
    main()
