"""The report card: plain data, one object per run, rendered as JSON, Markdown or HTML.

`Report.to_dict()` is the JSON report (for machines); `Report.results()` is the flat list of
result objects that `judgebench audit --json` prints (DESIGN.md: a JSON array on stdout),
each with a `type`: "correlation" (one metric or sentinel in one block), "pairwise" (one
statistic of one pairwise judge, `audit --pairwise`), "probe" (one
metamorphic probe of one metric), "bias" (one judge-bias probe of one judge), "alt-test"
(one judge on one criterion), "power" (one criterion), "sequential" (one block),
"reportable" (one system's people's mean with one metric as the judge, where a human column
labels a subset) or "failure" (one finding of a `--fail-on` check). The JSON report opens
with the `verdict` (judgebench.auditing.verdict) and the `--fail-on` failures.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from judgebench.auditing.blocks import Block
from judgebench.results import Result

FORMAT_VERSION = 1


@dataclass
class MetricCard:
    """What is known about one metric column besides its agreement with people."""

    column: str
    metric: str | None = None
    kind: str | None = None
    signature: str | None = None
    higher_is_better: bool = True
    rows: int = 0
    missing: int = 0
    statuses: dict[str, int] | None = None
    parse_failure_rate: float | None = None
    failure_rate: float | None = None
    cost_usd: float | None = None
    time_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    source: str = "table"  # where the signature and statuses came from

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


@dataclass
class Report(Result):
    title: str
    created: str
    version: str
    inputs: dict[str, Any]
    settings: dict[str, Any]
    humans: list[str]
    metrics: list[MetricCard]
    sentinels: list[dict[str, Any]]
    blocks: list[Block]
    #: human -> column -> {"systems", "human", "metric"} system means, and a segment sample.
    scatter: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: Learned combinations: is each a significant improvement (judgebench.auditing.combination)
    combinations: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    bias: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The --fail-on checks asked for, and each failure they found (judgebench.auditing.checks).
    fail_on: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    #: confusion tables and reliability curves (judgebench.auditing.agreement.scale_section)
    scales: list[dict[str, Any]] = field(default_factory=list)
    #: The pairwise judges' statistics (`audit --pairwise`): meta-eval --pairwise's rows.
    pairwise: list[dict[str, Any]] = field(default_factory=list)
    #: Per metric column: its failed scores and how they were counted (judgebench.tables.failed).
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: `audit --pairwise --robustness`: each judge's cyclic triples and Bradley-Terry misfit
    #: (judgebench.services.transitivity)
    transitivity: list[dict[str, Any]] = field(default_factory=list)
    #: `audit --pairwise` on a table with the outputs' texts or lengths: each judge's raw
    #: and style-controlled Bradley-Terry rankings (judgebench.services.pairwise_style)
    style: list[dict[str, Any]] = field(default_factory=list)
    #: `audit --alt-test`, `--power-for`, `--sequential` (judgebench.auditing.conclusions):
    #: per judge and criterion the alt-test, per criterion the study's power, per
    #: segment-level item-grouped block the sequential replay.
    alt_test: list[dict[str, Any]] = field(default_factory=list)
    power: list[dict[str, Any]] = field(default_factory=list)
    sequential: list[dict[str, Any]] = field(default_factory=list)
    #: Per judge drawn with `score --repeats K`: the judge against itself
    #: (judgebench.services.repeats: ICC, alpha, spread, flips, pass@k, the noise ceiling).
    repeats: list[dict[str, Any]] = field(default_factory=list)
    #: `audit --spans HUMAN`: the span-marking judges' error spans against people's
    #: (judgebench.services.spans: one row per judge, system and view).
    spans: list[dict[str, Any]] = field(default_factory=list)
    #: "What you can report" (judgebench.auditing.reportable): where a human column labels
    #: a subset, per metric and system people's mean estimated with the metric as the judge.
    reportable: list[dict[str, Any]] = field(default_factory=list)

    # -- views ----------------------------------------------------------------------------
    def gate_summary(self) -> list[dict[str, Any]]:
        """Per metric: how many blocks it passed, and which it failed."""
        out = []
        for card in self.metrics:
            verdicts = [(b, g) for b in self.blocks for g in b.gate if g.metric == card.column]
            failed = [_where(b) for b, g in verdicts if not g.passed]
            out.append({"metric": card.column, "passed": len(verdicts) - len(failed),
                        "total": len(verdicts), "failed": failed})
        return out

    def results(self) -> list[dict[str, Any]]:
        signatures = {c.column: c.signature for c in self.metrics}
        signatures |= {s["column"]: s["signature"] for s in self.sentinels}
        rows: list[dict[str, Any]] = []
        for block in self.blocks:
            verdicts = {g.metric: g for g in block.gate}
            for row in block.rows:
                out = {"type": "correlation", "human": block.human, **row.to_dict()}
                verdict = verdicts.get(row.column)
                out["gate"] = None if verdict is None else ("pass" if verdict.passed
                                                            else "fail")
                out["gate_reason"] = None if verdict is None else verdict.reason
                out["signature"] = signatures.get(row.column)
                if row.column in self.failed:
                    out["failed_as"] = self.settings.get("failed_as", "missing")
                    out["failed"] = self.failed[row.column]
                rows.append({k: _clean(v) for k, v in out.items()})
        rows += [{"type": "pairwise", **p} for p in _clean_tree(self.pairwise)]
        rows += [{"type": "style", **s} for s in _clean_tree(self.style)]
        rows += [{"type": "combination", **_clean_tree(c)} for c in self.combinations]
        rows += [{"type": "probe", **p} for p in self.probes]
        rows += [{"type": "bias", **b} for b in self.bias]
        rows += [{"type": "alt-test", **r} for r in _clean_tree(self.alt_test)]
        rows += [{"type": "power", **p} for p in _clean_tree(self.power)]
        rows += [{"type": "sequential", **s} for s in _clean_tree(self.sequential)]
        rows += [{"type": "repeats", **r} for r in self.repeats]
        rows += [{"type": "spans", **r} for r in self.spans]
        rows += [{"type": "reportable", **r} for r in _clean_tree(self.reportable)]
        rows += [{"type": "failure", **f} for f in self.failures]
        return rows

    def to_dict(self) -> dict[str, Any]:
        from judgebench.auditing.verdict import verdicts

        data = {
            "format": "judgebench-audit", "format_version": FORMAT_VERSION,
            "title": self.title, "created": self.created, "judgebench": self.version,
            "fail_on": self.fail_on, "failures": _clean_tree(self.failures),
            "inputs": self.inputs, "settings": self.settings, "humans": self.humans,
            "metrics": [c.to_dict() for c in self.metrics],
            "sentinels": self.sentinels,
            "gate_summary": self.gate_summary(),
            "blocks": [_clean_tree(b.to_dict()) for b in self.blocks],
            "scatter": _clean_tree(self.scatter),
            "probes": _clean_tree(self.probes), "bias": _clean_tree(self.bias),
            "combinations": _clean_tree(self.combinations),
            "warnings": self.warnings,
            "scales": _clean_tree(self.scales),
            "failed": _clean_tree(self.failed),
        }
        for key in ("alt_test", "power", "sequential"):
            if getattr(self, key):
                data[key] = _clean_tree(getattr(self, key))
        if self.repeats:
            data["repeats"] = _clean_tree(self.repeats)
        if self.spans:
            data["spans"] = _clean_tree(self.spans)
        if self.reportable:
            data["reportable"] = _clean_tree(self.reportable)
        if self.pairwise:
            from judgebench.auditing.pairwise import summaries

            data["pairwise"] = _clean_tree(self.pairwise)
            if self.transitivity:
                data["transitivity"] = _clean_tree(self.transitivity)
            if self.style:
                data["style"] = _clean_tree(self.style)
            data["pairwise_summary"] = [s.to_dict() for s in summaries(
                data["pairwise"], self.humans, data.get("transitivity"),
                float(self.settings.get("alpha", 0.05)))]
        head = {k: data[k] for k in ("format", "format_version", "title")}
        return head | {"verdict": [v.to_dict() for v in verdicts(data)]} | data


def _where(block: Block) -> str:
    return f"{block.human} {block.statistic} {block.label}"


def _clean(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, list | dict | str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _clean_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _clean_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean_tree(v) for v in value]
    if hasattr(value, "tolist"):
        return _clean_tree(value.tolist())
    return _clean(value)
