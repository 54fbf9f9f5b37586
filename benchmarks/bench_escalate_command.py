"""How long `judgebench escalate` takes (the service, in process: the table read, checks, the
agreement of every verdict, each judge's threshold, held-out agreement and AUGRC), against a
plain reference timed in the same run: pandas reads the CSV and calls
`meta_eval.escalation.calibrate_threshold` and `augrc` for each judge of a two-judge cascade.
The script checks that both choose the same thresholds before printing the times.
Synthetic scores table: ROWS rows (items x 10 systems), integer verdicts 1-5, 10% labelled.

    python benchmarks/bench_escalate_command.py [--rows 100000 1000000]

Prints one JSON line per (rows, case), with the peak resident memory of the process so far.
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
from judgebench.services.escalate import escalate
from meta_eval.escalation import augrc, calibrate_threshold

T = TypeVar("T")
SYSTEMS = 10


def write_table(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, rows).astype(float)
    columns: dict[str, Any] = {
        "item": np.tile([f"i{i}" for i in range(rows // SYSTEMS)], SYSTEMS),
        "system": np.repeat([f"s{s}" for s in range(SYSTEMS)], rows // SYSTEMS),
        "human": np.where(rng.random(rows) < 0.1, truth, np.nan)}
    for judge, base in (("cheap", 0.5), ("strong", 0.8)):
        sure = np.round(rng.random(rows), 3)
        right = rng.random(rows) < base + (1 - base) * sure
        columns[judge] = np.where(right, truth, rng.integers(1, 6, rows))
        columns[f"{judge}.sure"] = sure
    pd.DataFrame(columns).to_csv(path, index=False)


def reference(path: Path) -> list[float | None]:
    frame = pd.read_csv(path)
    human = frame["human"].to_numpy()
    undecided = np.ones(len(frame), dtype=bool)
    thresholds = []
    for judge in ("cheap", "strong"):
        sure = frame[f"{judge}.sure"].to_numpy()
        cal = undecided & ~np.isnan(human)
        agree = frame[judge].to_numpy()[cal] == human[cal]
        chosen = calibrate_threshold(confidence=sure[cal], agree=agree, alpha=0.1, delta=0.1)
        augrc(confidence=sure[cal], correct=agree)
        thresholds.append(chosen.threshold)
        if chosen.threshold is not None:
            undecided &= sure < chosen.threshold
    return thresholds


def timed(call: Callable[..., T], *args: Any, **kwargs: Any) -> tuple[T, float]:
    began = time.perf_counter()
    out = call(*args, **kwargs)
    return out, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000])
    options = parser.parse_args()
    arguments: dict[str, Any] = {"judge": "cheap", "confidence_column": "cheap.sure",
                                 "human": "human", "cascade": [("strong", "strong.sure")]}
    with tempfile.TemporaryDirectory() as folder:
        warm = Path(folder) / "warm.csv"  # imports and first calls, timed by neither side
        write_table(warm, 2000)
        reference(warm)
        escalate(warm, **arguments)
        for rows in options.rows:
            path = Path(folder) / f"t{rows}.csv"
            write_table(path, rows)
            plain, plain_s = timed(reference, path)
            result, ours_s = timed(escalate, path, **arguments)
            assert [s.threshold for s in result.stages] == plain, (
                "the service and the reference disagree")
            _, held_s = timed(escalate, path, holdout=0.3, **arguments)
            peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            for case, seconds in (("reference: read_csv + calibrate_threshold + augrc",
                                   plain_s), ("escalate", ours_s),
                                  ("escalate --holdout 0.3", held_s)):
                print(json.dumps({"rows": rows, "case": case, "seconds": round(seconds, 3),
                                  "thresholds": plain, "peak_rss_mib": round(peak_mib)}),
                      flush=True)


if __name__ == "__main__":
    main()
