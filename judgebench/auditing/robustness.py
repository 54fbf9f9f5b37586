"""`audit --robustness`: could a block's gate verdict be overturned by its failed or missing
cells, or by which systems are in the study?

Per block, for each gated metric (meta_eval.missingness, meta_eval.system_sensitivity):

- `missing`: its Manski bounds over the block's missing human values and failed scores, and
  for a metric that passes, the tipping point against the best sentinel's value: how many
  of its failed rows, scored against it, would put it at or below the sentinel. A pass is
  `overturnable` by failures when its worst case is at or below the sentinel's value.
- `systems`: leaving one system out at a time, the share of subsets in which the block's
  best metric changes, and in which a passing metric falls to or below the best sentinel's
  value, with the systems whose leaving does either.

These compare values, not re-run significance tests: they say when a conclusion *could*
change, which is what the verdict then says first.

- `gate_without`: the gate itself (clusters with the permutation or Williams test, then the
  sentinel gate) re-run without each system in turn: `changed`, the share of systems whose
  leaving changes some metric's pass or fail, and `flips`, per such system the metrics
  whose verdict changes.
- `construct` (two or more human criteria, a symmetric statistic): per metric the
  multitrait-multimethod tests of `meta_eval.construct` with the block's criterion as the
  metric's own: `discriminant` when it agrees significantly more with this criterion than
  with every other, `general` when no test rejects and it agrees at least as well with the
  criteria's mean. A pass by a `general` metric gets a sentence in the verdict: it measures
  overall quality, not this criterion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from meta_eval.statistics import get


def block_robustness(block: Any, *, human: np.ndarray, columns: Mapping[str, np.ndarray],
                     present: np.ndarray, systems: Sequence[str], limit: int = 4096
                     ) -> dict[str, Any]:
    """The robustness of one audit block (`judgebench.auditing.blocks.Block`)."""
    from meta_eval.levels import evaluate
    from meta_eval.missingness import domain, manski_bounds, tipping_point
    from meta_eval.system_sensitivity import system_sensitivity

    spec = get(block.statistic)
    goodness = spec.goodness
    values = {r.column: r.result.value for r in block.rows}
    gate = {g.metric: g for g in block.gate}
    sentinel = next((g.sentinel for g in block.gate if g.sentinel), None)
    bar = values.get(sentinel, math.nan) if sentinel else math.nan
    out: dict[str, Any] = {"sentinel": sentinel,
                           "sentinel_value": bar if math.isfinite(bar) else None,
                           "metrics": {}}
    if spec.kernel == "spa":
        out["note"] = "SPA resamples in every evaluation: no robustness analysis"
        return out

    def value(h: np.ndarray, m: np.ndarray) -> float:
        return evaluate(block.statistic, human=h, metric=m, level=block.level,
                        grouping=block.grouping, with_p_value=False).value

    gated = [m for m in gate if m in columns]
    for name in gated:
        metric = columns[name]
        bounds = manski_bounds(value, human=human, metric=metric, present=present,
                               human_domain=domain(human), metric_domain=domain(metric),
                               goodness=goodness, limit=limit)
        entry: dict[str, Any] = {"missing_bounds": bounds.to_dict()}
        worst = min((goodness(v) for v in (bounds.low, bounds.high) if math.isfinite(v)),
                    default=math.nan)
        if gate[name].passed and math.isfinite(bar) and bounds.cells:
            tip = tipping_point(value, human=human, metric=metric, present=present,
                                metric_domain=domain(metric), threshold=bar,
                                goodness=goodness, limit=limit)
            entry["tipping_point"] = tip.to_dict()
            entry["overturnable"] = bool(math.isfinite(worst) and worst <= goodness(bar))
        out["metrics"][name] = entry
    n_systems = human.shape[1]
    if n_systems >= (5 if block.level == "system" else 3) and len(gated) >= 1:
        names = [*gated, *([sentinel] if sentinel and sentinel in columns else [])]
        result = system_sensitivity(
            human=human, metrics={m: columns[m] for m in names},
            values=lambda h, ms: {m: value(h, x) for m, x in ms.items()},
            systems=list(systems), leave_out=1, goodness=goodness)[0]
        flips = [subset[0] for subset in result.flips]
        passing = [m for m in gated if gate[m].passed]
        falls: dict[str, list[str]] = {}
        if sentinel and sentinel in columns and passing:
            for j, system in enumerate(systems):
                keep = [k for k in range(n_systems) if k != j]
                h = human[:, keep]
                bar_j = value(h, columns[sentinel][:, keep])
                for m in passing:
                    v = value(h, columns[m][:, keep])
                    if math.isfinite(bar_j) and (not math.isfinite(v)
                                                 or goodness(v) <= goodness(bar_j)):
                        falls.setdefault(m, []).append(system)
        out["systems"] = {"left_out": 1, "resamples": result.resamples,
                          "winner_changed": result.winner_changed, "winner_flips": flips,
                          "falls_to_sentinel": falls}
    return out


def gate_without(block: Any, *, human: np.ndarray, columns: Mapping[str, np.ndarray],
                 sentinels: Sequence[str], options: Any, given: Mapping[str, np.ndarray],
                 systems: Sequence[str]) -> dict[str, Any]:
    """The block's gate re-run without each system (module docstring)."""
    import dataclasses

    from judgebench.auditing.blocks import evaluate_block

    n = human.shape[1]
    if n < (5 if block.level == "system" else 3):
        return {"changed": None, "flips": {}, "note": "too few systems to leave one out"}
    passed = {g.metric: g.passed for g in block.gate}
    quick = dataclasses.replace(options, bootstrap=0, robustness=False)
    flips: dict[str, list[str]] = {}
    for j, system in enumerate(systems):
        keep = [k for k in range(n) if k != j]
        again = evaluate_block(human=human[:, keep], human_name=block.human,
                               columns={c: m[:, keep] for c, m in columns.items()},
                               sentinels=[s for s in sentinels if s in columns],
                               statistic=block.statistic, level=block.level,
                               grouping=block.grouping, options=quick,
                               given={c: np.asarray(v)[keep] for c, v in given.items()})
        now = {g.metric: g.passed for g in again.gate}
        changed = sorted(m for m in passed if now.get(m) != passed[m])
        if changed:
            flips[system] = changed
    return {"changed": len(flips) / n, "flips": flips}


def add_construct(blocks: Sequence[Any], criteria: Mapping[str, np.ndarray],
                  columns: Mapping[str, np.ndarray], *, method: str, alpha: float,
                  resamples: int, seed: int) -> None:
    """Put `construct` into the robustness of each block (in place; module docstring)."""
    from meta_eval.construct import SYMMETRIC, construct_validity

    if len(criteria) < 2:
        return
    for block in blocks:
        if block.statistic not in SYMMETRIC or block.robustness is None:
            continue
        metrics = [g.metric for g in block.gate if g.metric in columns]
        williams = method == "williams" and block.statistic == "pearson" \
            and (block.level == "system" or block.grouping == "none")
        rows = construct_validity(
            criteria=criteria, metrics={m: columns[m] for m in metrics},
            intended={m: block.human for m in metrics}, statistic=block.statistic,
            level=block.level, grouping=block.grouping,
            method="williams" if williams else "permutation", alpha=alpha,
            resamples=resamples, seed=seed)
        block.robustness["construct"] = {r.metric: r.to_dict() for r in rows}


def caveats(block: dict[str, Any], at: str) -> list[str]:
    """Sentences for a block (as data) whose conclusion is not robust."""
    robust = block.get("robustness")
    if not robust:
        return []
    passed = {g["metric"] for g in block.get("gate", []) if g["passed"]}
    out = []
    for name, entry in robust.get("metrics", {}).items():
        if name in passed and entry.get("overturnable"):
            tip = entry.get("tipping_point") or {}
            many = (f"{tip['cells']} of its {tip['of']} failed rows"
                    if tip.get("cells") is not None else "its failed rows")
            out.append(f"{name}'s pass at {at} could be overturned by its failures "
                       f"({many}, scored against it, would put it at "
                       f"{robust.get('sentinel')}'s value)")
    gate_flips = (robust.get("gate_without") or {}).get("flips") or {}
    if gate_flips:
        named = [f"{s} ({', '.join(ms)})" for s, ms in list(gate_flips.items())[:3]]
        out.append(f"the gate's verdict at {at} changes without "
                   f"{'; '.join(named)}{' ...' if len(gate_flips) > 3 else ''}")
    systems = robust.get("systems") or {}
    if systems.get("winner_flips"):
        left = systems["winner_flips"]
        out.append(f"the best metric at {at} changes without {', '.join(left[:3])}"
                   f"{' ...' if len(left) > 3 else ''}")
    for name, left in (systems.get("falls_to_sentinel") or {}).items():
        out.append(f"{name}'s pass at {at} rests on the systems: without "
                   f"{', '.join(left[:3])} it falls to {robust.get('sentinel')}'s value")
    for name, entry in (robust.get("construct") or {}).items():
        if name in passed and entry.get("general"):
            out.append(f"{name} passes at {at} but measures overall quality, not "
                       f"{block['human']} (no closer to it than to the other criteria)")
    return out
