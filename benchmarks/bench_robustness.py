"""Benchmark the robustness analyses of issue 27 at SummEval and WMT size.

Synthetic tables with the shapes of the two studies (values: noisy views of one latent
quality; 1-5 ratings from three annotators, averaged, as SummEval; 2% failed judge cells):

  summeval   100 items x 16 systems, 4 criteria, 6 metrics, 3 annotators
  wmt        1,500 items x 15 systems (WMT23 zh-en has 1,976 segments x 15 systems),
             1 criterion (MQM), 12 metrics

Cases, each the pure kernel in `meta_eval` on the (items, systems) matrices (what the
command adds on top is reading the table):

  alt-test        every metric as a judge against the 3 annotators (rounded to 1-5; accuracy)
  missing-bounds  one metric's Manski bounds (segment Pearson, no grouping) and its tipping
                  point against the next metric
  construct       (summeval) 4 metrics x 4 criteria, Williams' test, then the permutation test
                  with 1,000 resamples
  transitivity    a pairwise judge on every pair of systems per item, 200 item resamples
  power           items needed for delta 0.05 (2,000 simulated studies per size)
  systems         leave-one-system-out and 200 system resamples, system-level Pearson
  sequential      item-grouped Pearson, every pair of metrics, batches of 10, margin 0.05

Time is wall-clock of one call, in this process, on whatever the machine is doing.

    .venv/bin/python benchmarks/bench_robustness.py [--size summeval|wmt|both]
        [--json benchmarks/out/robustness.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = {"summeval": {"items": 100, "systems": 16, "criteria": 4, "metrics": 6},
         "wmt": {"items": 1500, "systems": 15, "criteria": 1, "metrics": 12}}


def synthetic(items: int, systems: int, criteria: int, metrics: int, seed: int = 0
              ) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(items, systems)) + rng.normal(size=systems) * 0.5
    traits = [quality + rng.normal(scale=0.7, size=quality.shape) for _ in range(criteria)]
    ratings = np.clip(np.round(3 + traits[0][None] + rng.normal(size=(3, items, systems))),
                      1, 5)
    human = ratings.mean(axis=0)
    ms = {f"m{k:02d}": traits[k % criteria] + rng.normal(scale=0.5 + 0.1 * k,
                                                         size=quality.shape)
          for k in range(metrics)}
    failed = rng.random(quality.shape) < 0.02
    ms["m00"] = np.where(failed, np.nan, ms["m00"])
    return {"human": human, "ratings": ratings, "traits": traits, "metrics": ms,
            "quality": quality}


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    out = fn()
    return time.perf_counter() - began, out


def cases(size: str) -> list[dict[str, Any]]:
    from meta_eval.alt_test import alt_test
    from meta_eval.construct import construct_validity
    from meta_eval.levels import evaluate
    from meta_eval.missingness import domain, manski_bounds, tipping_point
    from meta_eval.power import power_plan
    from meta_eval.sequential import sequential_clusters
    from meta_eval.statistics import group_values
    from meta_eval.system_sensitivity import system_sensitivity
    from meta_eval.transitivity import transitivity

    shape = SIZES[size]
    data = synthetic(**shape)
    human, ms = data["human"], data["metrics"]
    items, systems = human.shape
    out = []

    def record(case: str, seconds: float, note: str) -> None:
        out.append({"size": size, "case": case, "seconds": round(seconds, 3), "note": note})
        print(f"{size:9s} {case:15s} {seconds:8.2f} s  {note}", flush=True)

    annotators = data["ratings"].reshape(3, -1).T
    judges = {m: np.clip(np.round(3 + x.ravel()), 1, 5) for m, x in ms.items()}
    t, res = timed(lambda: [alt_test(humans=annotators, judge=j, epsilon=0.15)
                            for j in judges.values()])
    record("alt-test", t, f"{len(judges)} judges x 3 annotators x {items * systems} items; "
                          f"best winning rate {max(r.winning_rate for r in res):.2f}")

    def value(h: np.ndarray, m: np.ndarray) -> float:
        return evaluate("pearson", human=h, metric=m, with_p_value=False).value

    present = np.ones_like(human, dtype=bool)
    m = ms["m00"]
    t, bounds = timed(lambda: manski_bounds(value, human=human, metric=m, present=present,
                                            human_domain=domain(human),
                                            metric_domain=domain(m)))
    record("missing-bounds", t, f"{bounds.cells} failed cells, [{bounds.low:.4f}, "
                                f"{bounds.high:.4f}], exact={bounds.exact}, "
                                f"{bounds.evaluations} evaluations")
    other = value(human, ms["m01"])
    t, tip = timed(lambda: tipping_point(value, human=human, metric=m, present=present,
                                         metric_domain=domain(m), threshold=other))
    record("tipping-point", t, f"{tip.cells} of {tip.of} against m01 (exact={tip.exact})")

    if shape["criteria"] > 1:
        criteria = {f"c{k}": x for k, x in enumerate(data["traits"])}
        intended = {f"m{k:02d}": f"c{k}" for k in range(shape["criteria"])}
        for method in ("williams", "permutation"):
            t, res = timed(lambda method=method: construct_validity(
                criteria=criteria, metrics=ms, intended=intended, method=method,
                resamples=1000))
            record(f"construct-{method[:4]}", t,
                   f"{len(intended)} metrics x {len(criteria)} criteria; discriminant: "
                   f"{sum(r.discriminant for r in res)}")

    rng = np.random.default_rng(1)
    rows = [(i, a, b) for i in range(items) for a, b in itertools.combinations(range(systems), 2)]
    item_of = np.array([f"i{i}" for i, _, _ in rows])
    sa = np.array([f"s{a}" for _, a, _ in rows])
    sb = np.array([f"s{b}" for _, _, b in rows])
    q = data["quality"]
    diff = np.array([q[i, a] - q[i, b] for i, a, b in rows]) + rng.normal(size=len(rows))
    pref = np.where(np.abs(diff) < 0.1, 0.5, (diff > 0).astype(float))
    t, tr = timed(lambda: transitivity(items=item_of, system_a=sa, system_b=sb,
                                       preference=pref, bootstrap=200))
    record("transitivity", t, f"{len(rows)} pairs, {tr.cyclic}/{tr.triples} cyclic, BT "
                              f"p={tr.p_value:.3g}")

    r_a = value(human, ms["m01"])
    r_ab = value(ms["m01"], ms["m02"])
    t, plan = timed(lambda: power_plan(0.05, r_a=r_a, r_ab=r_ab, rho=0.5,
                                       pilot_annotators=3, annotators=(1, 3, 5)))
    record("power", t, "items needed with 1/3/5 annotators: "
                       + "/".join(str(n) for n, _, _ in plan.needed.values()))

    def system_values(h: np.ndarray, xs: dict[str, np.ndarray]) -> dict[str, float]:
        return {k: evaluate("pearson", human=h, metric=x, level="system",
                            with_p_value=False).value
                for k, x in xs.items()}

    t, sens = timed(lambda: system_sensitivity(
        human=human, metrics=ms, values=system_values, systems=[f"s{j}" for j in range(systems)],
        leave_out=1, bootstrap=200))
    record("systems", t, f"winner changes in {sens[0].winner_changed:.0%} (leave one out), "
                         f"{sens[1].winner_changed:.0%} (system bootstrap)")

    values = np.column_stack([group_values("pearson", human=human, metric=x)
                              for x in ms.values()])
    t, seq = timed(lambda: sequential_clusters(values, list(ms), batch=10, margin=0.05))
    record("sequential", t, f"{seq.items_used}/{seq.items_total} items, settled="
                            f"{seq.settled}, {len(seq.decisions)} pairs")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=("summeval", "wmt", "both"), default="both")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    sizes = ("summeval", "wmt") if args.size == "both" else (args.size,)
    results = [r for s in sizes for r in cases(s)]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"python": platform.python_version(),
                                         "results": results}, indent=2))


if __name__ == "__main__":
    main()
