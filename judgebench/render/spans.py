"""`meta-eval --spans` and the audit's `spans` section as text: per span-marking column,
precision, recall and F1 of each view (character level: severity as partial credit, must
match, ignored; span level: overlap or exact match, with or without severity), then the
character-level F1 (partial credit) per system."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgebench.services.spans import SpansResult


def _num(value: float) -> str:
    return "   n/a" if math.isnan(value) else f"{value:6.3f}"


def spans_lines(result: SpansResult) -> list[str]:
    lines = [f"error spans · against {result.human}"]
    for metric in dict.fromkeys(row.metric for row in result.rows):
        note = result.notes.get(metric, {})
        lines += ["", f"{metric}",
                  f"  {note.get('segments', 0)} segments rated and scored "
                  f"({note.get('not_scored', 0)} rated, not scored ok); not counted: "
                  f"{note.get('unlocated', 0)} predicted span(s) not in the output,",
                  f"  people's {note.get('source_side', 0)} marked in the source and "
                  f"{note.get('neutral', 0)} Neutral",
                  f"  {'level':<10} {'variant':<17} {'P':>6} {'R':>6} {'F1':>6}  "
                  f"{'pred':>7} {'human':>7}"]
        rows = [r for r in result.rows if r.metric == metric]
        for row in rows:
            if row.system is None:
                lines.append(f"  {row.level:<10} {row.variant:<17} {_num(row.precision)} "
                             f"{_num(row.recall)} {_num(row.f1)}  {row.predicted:7g} "
                             f"{row.human:7g}")
        per_system = [r for r in rows if r.system is not None
                      and (r.level, r.variant) == ("character", "partial")]
        if per_system:
            lines.append("  per system (character level, partial credit):")
            width = max(len(r.system or "") for r in per_system)
            lines += [f"    {r.system:<{width}}  P {_num(r.precision)}  R {_num(r.recall)}  "
                      f"F1 {_num(r.f1)}  n={r.segments}" for r in per_system]
    return lines


def spans_report(result: SpansResult) -> str:
    return "\n".join(spans_lines(result))


def marked(output: str, spans: list[dict[str, Any]]) -> str:
    """`output` with span n (1-based, located ones only) marked ``[text](n)``."""
    marks: list[tuple[int, int, str]] = []  # position, closes before opens, text
    for n, span in enumerate(spans, 1):
        start, end = span.get("start"), span.get("end")
        if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(output):
            marks += [(start, 1, "["), (end, 0, f"]({n})")]
    out, at = [], 0
    for position, _, text in sorted(marks, key=lambda m: (m[0], m[1])):
        out += [output[at:position], text]
        at = position
    return "".join(out) + output[at:]


def span_log_lines(extra: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """For `logs`: a span-marking judge's output with its spans marked and the list of
    spans, and the rest of `extra` (empty lines and `extra` itself when it has no spans)."""
    spans, output = extra.get("spans"), extra.get("output")
    if not isinstance(spans, list) or not isinstance(output, str):
        return [], extra
    lines = ["  spans:", "    " + (marked(output, spans) or "(empty output)")]
    for n, span in enumerate(spans, 1):
        where = (f"{span.get('start')}-{span.get('end')}" if span.get("start") is not None
                 else "not in the output")
        lines.append(f"    ({n}) {span.get('severity')} {span.get('category')} "
                     f"weight {span.get('weight')} [{where}]: {span.get('text')!r}")
    if not spans:
        lines.append("    no error marked")
    rest = {k: v for k, v in extra.items() if k not in ("spans", "output")}
    return lines, rest
