"""How long the issue-40 statistics take as the item count grows: PPI++ (uniform, stratified,
weighted), the active-sampling priority, the Trust-or-Escalate threshold and AUGRC, on synthetic
data with 10% of items labelled (best of `--repeat` calls each, the machine's load beside).

    python benchmarks/bench_estimation.py [--items 10000 100000 1000000] [--repeat 3]

Prints one JSON line per (function, items).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from meta_eval.escalation import augrc, calibrate_threshold
from meta_eval.estimation import (
    active_label_priority,
    ppi_mean,
    stratified_ppi_mean,
    weighted_ppi_mean,
)


def best(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return min(times)


def cases(items: int) -> dict[str, Callable[[], object]]:
    """Each function's call on one synthetic data set of `items` items."""
    rng = np.random.default_rng(0)
    length = rng.random(items)
    human = 1 + length + rng.normal(size=items)
    judge = human + 0.8 * length + rng.normal(size=items)
    pi = np.full(items, 0.1)
    shown = np.where(rng.random(items) < pi, human, np.nan)
    strata = np.minimum((length * 4).astype(int), 3)
    confidence = np.round(rng.random(items), 3)
    agree = (rng.random(items) < (1 + confidence) / 2).astype(int)
    return {
        "ppi_mean": lambda: ppi_mean(judge=judge, human=shown),
        "stratified_ppi_mean": lambda: stratified_ppi_mean(
            judge=judge, human=shown, strata=strata),
        "weighted_ppi_mean": lambda: weighted_ppi_mean(
            judge=judge, human=shown, inclusion_probability=pi),
        "active_label_priority": lambda: active_label_priority(
            judge=judge, human=shown, lam=0.5),
        "calibrate_threshold": lambda: calibrate_threshold(
            confidence=confidence, agree=agree, alpha=0.1, delta=0.1),
        "augrc": lambda: augrc(confidence=confidence, correct=agree),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for items in args.items:
        for name, call in cases(items).items():
            seconds = best(call, args.repeat)
            print(json.dumps({"function": name, "items": items, "seconds": round(seconds, 5),
                              "load_1min": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
