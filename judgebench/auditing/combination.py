"""Is a learned combination of metrics (`judgebench combine`) a significant improvement?

A combination column carries, in the table's `.meta.json`, its inputs and the human column
it was fitted to. In each block of that human column the audit says it improves on its
components only when both hold:

1. it passes the sentinel gate (a strictly better cluster than every defined sentinel), and
2. its best component in that block (highest statistic among the inputs that have a
   cluster) lands in a strictly worse significance cluster, i.e. the combination is
   significantly better than the best single metric it was built from;

otherwise the report says "not a significant improvement" with the reason. Components the
block did not rank (not audited, or scored by a corpus score at system level) cannot be
compared and are named.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from judgebench.auditing.blocks import Block

IMPROVEMENT = "significant improvement"
NO_IMPROVEMENT = "not a significant improvement"


def combination_of(described: Mapping[str, Any]) -> dict[str, Any] | None:
    """The `combination` entry of a sidecar column description, if the column is one."""
    entry = described.get("combination")
    if isinstance(entry, dict) and isinstance(entry.get("inputs"), list):
        return entry
    return None


def combinations_in(sidecar: Mapping[str, Any] | None, columns: Sequence[str]
                    ) -> dict[str, dict[str, Any]]:
    """Column -> its `combination` entry, for the audited `columns` that the scores table's
    `sidecar` describes as combinations."""
    described = (sidecar or {}).get("columns")
    if not isinstance(described, dict):
        return {}
    out = {}
    for column in columns:
        entry = described.get(column)
        combo = combination_of(entry) if isinstance(entry, dict) else None
        if combo is not None:
            out[column] = combo
    return out


def combination_verdicts(blocks: Sequence[Block], combinations: Mapping[str, Mapping[str, Any]]
                         ) -> list[dict[str, Any]]:
    """One verdict per combination column and block of the human column it was fitted to."""
    out = []
    for block in blocks:
        rows = {r.column: r for r in block.rows}
        verdicts = {g.metric: g for g in block.gate}
        for column, combo in combinations.items():
            if combo.get("human") != block.human or column not in rows:
                continue
            out.append(_verdict(block, column, [str(c) for c in combo["inputs"]], rows,
                                verdicts.get(column)))
    return out


def _verdict(block: Block, column: str, inputs: list[str], rows: Mapping[str, Any],
             gate: Any) -> dict[str, Any]:
    own = rows[column]
    value = own.result.value
    ranked = [c for c in inputs if c in rows and rows[c].cluster is not None
              and math.isfinite(rows[c].result.value)]
    unranked = [c for c in inputs if c not in ranked]
    best = max(ranked, key=lambda c: rows[c].result.value, default=None)
    base = {"metric": column, "human": block.human, "statistic": block.statistic,
            "level": block.level, "grouping": block.grouping,
            "value": value if math.isfinite(value) else None, "cluster": own.cluster,
            "beats_sentinels": bool(gate.passed) if gate is not None else None,
            "gate_reason": gate.reason if gate is not None else None,
            "best_component": best,
            "best_component_value": rows[best].result.value if best else None,
            "best_component_cluster": rows[best].cluster if best else None,
            "not_compared": unranked}
    if gate is None or own.cluster is None:
        return {**base, "improvement": False, "verdict": NO_IMPROVEMENT,
                "reason": "the combination has no cluster in this block"}
    if best is None:
        return {**base, "improvement": False, "verdict": NO_IMPROVEMENT,
                "reason": "no component of the combination was ranked in this block"}
    better = rows[best].cluster > own.cluster
    if gate.passed and better:
        reason = (f"beats every sentinel ({gate.reason}) and is significantly better than "
                  f"its best component {best} (cluster {own.cluster} vs "
                  f"{rows[best].cluster})")
        return {**base, "improvement": True, "verdict": IMPROVEMENT, "reason": reason}
    why = []
    if not gate.passed:
        why.append(f"does not beat the sentinels ({gate.reason})")
    if not better:
        why.append(f"is not significantly better than its best component {best} "
                   f"(same cluster {own.cluster})" if rows[best].cluster == own.cluster
                   else f"ranks below its best component {best} (cluster {own.cluster} vs "
                        f"{rows[best].cluster})")
    return {**base, "improvement": False, "verdict": NO_IMPROVEMENT,
            "reason": "; ".join(why)}
