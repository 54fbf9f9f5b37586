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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from meta_eval.statistics import get

Evaluate = Callable[[np.ndarray, np.ndarray], float]


@dataclass(frozen=True)
class _Study:
    """What every analysis of one block evaluates on: the block's statistic at its level and
    grouping (`value(human, metric)`), its goodness, the human values and the metrics'."""

    value: Evaluate
    goodness: Callable[[float], float]
    human: np.ndarray
    columns: Mapping[str, np.ndarray]
    systems: Sequence[str]


def block_robustness(block: Any, *, human: np.ndarray, columns: Mapping[str, np.ndarray],
                     present: np.ndarray, systems: Sequence[str], limit: int = 4096
                     ) -> dict[str, Any]:
    """The robustness of one audit block (`judgebench.auditing.blocks.Block`)."""
    spec = get(block.statistic)
    gate = {g.metric: g for g in block.gate}
    sentinel = next((g.sentinel for g in block.gate if g.sentinel), None)
    bar = _sentinel_value(block, sentinel)
    out: dict[str, Any] = {"sentinel": sentinel,
                           "sentinel_value": bar if math.isfinite(bar) else None,
                           "metrics": {}}
    if spec.kernel == "spa":
        out["note"] = "SPA resamples in every evaluation: no robustness analysis"
        return out
    study = _Study(_evaluator(block), spec.goodness, human, columns, systems)
    gated = [m for m in gate if m in columns]
    for name in gated:
        out["metrics"][name] = _missing_cells(study, name, present=present,
                                              passed=gate[name].passed, bar=bar, limit=limit)
    if human.shape[1] >= (5 if block.level == "system" else 3) and gated:
        passing = [m for m in gated if gate[m].passed]
        out["systems"] = _leaving_systems_out(study, gated, passing, sentinel)
    return out


def _sentinel_value(block: Any, sentinel: str | None) -> float:
    """The block's value of its best sentinel (NaN without one)."""
    values = {r.column: r.result.value for r in block.rows}
    return values.get(sentinel, math.nan) if sentinel else math.nan


def _evaluator(block: Any) -> Evaluate:
    """The block's statistic at its level and grouping, without a p-value."""
    from meta_eval.levels import evaluate

    def value(h: np.ndarray, m: np.ndarray) -> float:
        return evaluate(block.statistic, human=h, metric=m, level=block.level,
                        grouping=block.grouping, with_p_value=False).value

    return value


def _missing_cells(study: _Study, name: str, *, present: np.ndarray, passed: bool,
                   bar: float, limit: int) -> dict[str, Any]:
    """A metric's Manski bounds over the missing cells and, for a pass with a sentinel to
    beat, the tipping point and whether its worst case is at or below the sentinel."""
    from meta_eval.missingness import domain, manski_bounds, tipping_point

    human, metric, goodness = study.human, study.columns[name], study.goodness
    bounds = manski_bounds(study.value, human=human, metric=metric, present=present,
                           human_domain=domain(human), metric_domain=domain(metric),
                           goodness=goodness, limit=limit)
    entry: dict[str, Any] = {"missing_bounds": bounds.to_dict()}
    if not (passed and math.isfinite(bar) and bounds.cells):
        return entry
    worst = min((goodness(v) for v in (bounds.low, bounds.high) if math.isfinite(v)),
                default=math.nan)
    tip = tipping_point(study.value, human=human, metric=metric, present=present,
                        metric_domain=domain(metric), threshold=bar, goodness=goodness,
                        limit=limit)
    entry["tipping_point"] = tip.to_dict()
    entry["overturnable"] = bool(math.isfinite(worst) and worst <= goodness(bar))
    return entry


def _leaving_systems_out(study: _Study, gated: list[str], passing: list[str],
                         sentinel: str | None) -> dict[str, Any]:
    """Leaving one system out at a time: whether the best metric changes, and which passing
    metrics fall to the sentinel's value without which system."""
    from meta_eval.system_sensitivity import system_sensitivity

    beaten = sentinel if sentinel and sentinel in study.columns else None
    names = [*gated, *([beaten] if beaten else [])]
    result = system_sensitivity(
        human=study.human, metrics={m: study.columns[m] for m in names},
        values=lambda h, ms: {m: study.value(h, x) for m, x in ms.items()},
        systems=list(study.systems), leave_out=1, goodness=study.goodness)[0]
    falls = _falls_to_sentinel(study, passing, beaten) if beaten and passing else {}
    return {"left_out": 1, "resamples": result.resamples,
            "winner_changed": result.winner_changed,
            "winner_flips": [subset[0] for subset in result.flips],
            "falls_to_sentinel": falls}


def _falls_to_sentinel(study: _Study, passing: list[str], sentinel: str
                       ) -> dict[str, list[str]]:
    """Per passing metric, the systems without which it is at or below the sentinel's value
    (or has none)."""
    goodness, n_systems = study.goodness, study.human.shape[1]
    falls: dict[str, list[str]] = {}
    for j, system in enumerate(study.systems):
        keep = [k for k in range(n_systems) if k != j]
        h = study.human[:, keep]
        bar_j = study.value(h, study.columns[sentinel][:, keep])
        for m in passing:
            v = study.value(h, study.columns[m][:, keep])
            if math.isfinite(bar_j) and (not math.isfinite(v)
                                         or goodness(v) <= goodness(bar_j)):
                falls.setdefault(m, []).append(system)
    return falls


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
