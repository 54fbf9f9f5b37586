"""The audit's report card as cells of text, shared by its Markdown and HTML renderers: the
gate and probe matrices, the pairwise judges' grids, the confusion tables, and the words and
numbers both print alike. Each function takes the report as data (`Report.to_dict()`) and
returns plain strings, unescaped: each renderer escapes them for its own format."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

GATE_RULE = ("A metric passes the gate in a setting when it lands in a strictly better "
             "significance cluster than every sentinel (Perrella et al. 2024). Cluster 1 is "
             "the best; a new cluster starts where a metric is significantly worse than a "
             "member of the one above.")

AGREEMENT_INTRO = (
    "Computed on the metric values as they are (not negated). Confusion tables: judge "
    "category (rows) against the human score rounded half up to an integer (columns). "
    "Reliability diagrams: per bin, the mean predicted probability against the share of "
    "label 1; the dashed diagonal is perfect calibration.")


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


def intervals(settings: dict[str, Any]) -> str:
    """What a report's settings line says of its intervals: the bootstrap CI and its
    resamples, or that there are none (`--bootstrap 0`); the analytic interval where asked
    (`--interval analytic|both`)."""
    analytic = settings.get("interval", "bootstrap") != "bootstrap"
    also = (f"{settings['ci']:.0%} analytic interval (a: Fisher z for pearson, "
            "Bonett-Wright for spearman, Fieller for kendall; ungrouped only)")
    if not settings["bootstrap"]:
        return also if analytic else "no confidence intervals (--bootstrap 0)"
    boot = (f"{settings['ci']:.0%} bootstrap CI over items ({settings['bootstrap']} "
            "resamples)")
    return f"{boot}; {also}" if analytic else boot


def analytic_cell(row: dict[str, Any]) -> str:
    """A row's analytic interval as a card cell shows it after the value: " a[low, high]",
    or "" where it has none (`meta_eval.task.analytic_interval`)."""
    low, high = row.get("analytic_ci_low"), row.get("analytic_ci_high")
    if low is None or high is None:
        return ""
    return f" a[{fmt(low)}, {fmt(high)}]"


def analytic_forms(blocks: Sequence[dict[str, Any]]) -> list[str]:
    """The signatures of the analytic intervals in `blocks`, without each row's n."""
    found = [r["analytic_ci_method"] for b in blocks for r in b["rows"]
             if r.get("analytic_ci_method")]
    return list(dict.fromkeys("|".join(p for p in m.split("|") if not p.startswith("n="))
                              for m in found))


def setting_label(level: str, grouping: str) -> str:
    return "system" if level == "system" else f"segment/{grouping}"


def statuses(counts: dict[str, int] | None) -> str:
    if not counts:
        return "unknown"
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def rate(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"


_MARKS: dict[bool | None, str] = {True: "✓", False: "✗", None: "·"}


def gate_matrix(data: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]], list[str]]:
    """The gate as a matrix: one row per metric, one column per (human, statistic), and in
    each cell one mark per setting ("✓", "✗", or "·" where not computed)."""
    order = [setting_label(x["level"], x["grouping"]) for x in data["settings"]["levels"]]
    columns = [(h, st) for h in data["humans"] for st in data["settings"]["statistics"]]
    verdict: dict[tuple[str, str, str, str], bool | None] = {}
    for b in data["blocks"]:
        for g in b["gate"]:
            key = (g["metric"], b["human"], b["statistic"],
                   setting_label(b["level"], b["grouping"]))
            verdict[key] = g["passed"]
    rows = []
    for summary in data["gate_summary"]:
        name = summary["metric"]
        cells = [[_MARKS[verdict.get((name, h, st, label))]
                  for label in order] for h, st in columns]
        rows.append({"metric": name, "passed": f"{summary['passed']}/{summary['total']}",
                     "cells": cells})
    header = ["metric", "passed", *(f"{h} · {st}" for h, st in columns)]
    return header, rows, order


def probe_matrix(probes: Sequence[dict[str, Any]]
                 ) -> tuple[list[str], list[list[str]], str]:
    """Metrics x probes, each cell the share moved the right way."""
    names = list(dict.fromkeys(p["probe"] for p in probes))
    expect = {p["probe"]: p["expect"] for p in probes}
    by_metric: dict[str, dict[str, dict[str, Any]]] = {}
    for p in probes:
        by_metric.setdefault(p["metric"], {})[p["probe"]] = p
    rows = [[metric, *(rate(cells[n].get("rate")) if n in cells else "-" for n in names)]
            for metric, cells in by_metric.items()]
    first = next(iter(by_metric.values()))
    counts = ", ".join(f"{n} {first[n]['n']}" + (f" ({first[n]['skipped']} not applicable)"
                                                  if first[n].get("skipped") else "")
                       for n in names if n in first)
    return ["metric", *(f"{n} ({expect[n]})" for n in names)], rows, counts


def notes(blocks: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Notes of these blocks, each text once, with the settings it applies to."""
    seen: dict[str, list[str]] = {}
    for b in blocks:
        for note in b["notes"]:
            seen.setdefault(note["text"], []).append(setting_label(b["level"], b["grouping"]))
    return seen


@dataclass(frozen=True)
class Grid:
    """One table of the report: a row per judge, a column per statistic, for one human
    column and category (None: all pairs)."""

    human: str
    category: str | None
    judges: list[str]
    statistics: list[str]
    cells: list[list[str]]  # per judge, per statistic: "value [ci_low, ci_high] c<cluster>"


def grids(rows: Sequence[dict[str, Any]], humans: Sequence[str]) -> list[Grid]:
    """The report's tables of `rows` (meta-eval --pairwise's result objects)."""
    from meta_eval.pairwise_eval import CALIBRATION, CEILING, HUMAN_FREE, STATISTICS

    judges = list(dict.fromkeys(r["metric"] for r in rows if r["metric"] != CEILING))
    if any(r["metric"] == CEILING for r in rows):
        judges.append(CEILING)
    categories = list(dict.fromkeys(r.get("category") for r in rows))
    statistics = [*STATISTICS, *(c for c in CALIBRATION if any(r["statistic"] == c
                                                                for r in rows))]
    found = {(r["metric"], r["statistic"], r.get("category"), r["human"]): r for r in rows}
    out = []
    for human in humans:
        for category in categories:
            cells = []
            for judge in judges:
                line = []
                for statistic in statistics:
                    want = None if statistic in HUMAN_FREE and judge != CEILING else human
                    row = found.get((judge, statistic, category, want))
                    line.append("" if row is None else pairwise_cell(row))
                cells.append(line)
            out.append(Grid(human, category, judges, statistics, cells))
    return out


def pairwise_cell(row: dict[str, Any]) -> str:
    value = row.get("value")
    text = "n/a" if value is None else f"{value:.3f}"
    if row.get("ci_low") is not None and row.get("ci_high") is not None:
        text += f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
    if row.get("cluster") is not None:
        text += f" c{row['cluster']}"
    return text


def number(value: float) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.3f}"


def confusion_rows(entry: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["judge \\ human", *(str(h) for h in entry["human_labels"]), "total"]
    rows = [[str(label), *(str(c) for c in counts), str(sum(counts))]
            for label, counts in zip(entry["metric_labels"], entry["counts"], strict=True)]
    totals = [sum(col) for col in zip(*entry["counts"], strict=True)] if entry["counts"] else []
    rows.append(["total", *(str(t) for t in totals), str(entry["n"])])
    return header, rows


def bin_label(binning: str, low: float, high: float) -> str:
    """Equal-width bins are [low, high) but the last, [low, 1]; equal-mass ones are named by
    the lowest and highest probability in them."""
    close = "]" if binning == "mass" or high >= 1 else ")"
    return f"[{low:.3g}, {high:.3g}{close}"


REPORTABLE_HEADER = ("human", "metric", "system", "labelled", "human-only",
                     "PPI++ with the metric", "effective labels", "worth")


def reportable_intro(rows: Sequence[dict[str, Any]]) -> str:
    """The sentence above "What you can report": what each row is and how it was made."""
    level = rows[0]["confidence"] if rows else 0.95
    humans = ", ".join(dict.fromkeys(r["human"] for r in rows))
    return (f"People labelled only some rows of {humans}. Per system, people's mean "
            "estimated with each metric as the judge on the unlabelled rows (PPI++, "
            f"Angelopoulos, Duchi, Zrnic 2023) and its {100 * level:g}% interval, beside the "
            "interval of the labelled rows alone; "
            "'effective labels': how many human labels alone would give the same interval, "
            "'worth': that minus the labels used (what the metric saved). The command "
            "judgebench estimate gives pass rates, stratified and weighted forms and target "
            "widths.")


def reportable_cells(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    """One line per (human, metric, system): the estimates, or why there is none."""
    out = []
    for r in rows:
        labelled = f"{r['labels']}/{r['items']}"
        if r.get("undefined"):
            out.append([r["human"], r["metric"], r["system"], labelled, "n/a",
                        f"n/a: {r['undefined']}", "", ""])
            continue
        alone = r["human_only"]
        out.append([r["human"], r["metric"], r["system"], labelled,
                    f"{fmt(alone['point'])} [{fmt(alone['lower'])}, {fmt(alone['upper'])}]",
                    f"{fmt(r['point'])} [{fmt(r['lower'])}, {fmt(r['upper'])}]",
                    fmt(r.get("effective_labels"), 1), f"{r['labels_worth']:+.1f}"
                    if r.get("labels_worth") is not None else "n/a"])
    return out


STYLE_INTRO = (
    "Each judge's verdicts ranked by Bradley-Terry as given (raw) and with the outputs' "
    "style controlled (Li et al. 2024; arena-hard-auto's length and markdown features, "
    "standardised), as `aggregate -r bradley-terry --control ...` ranks them: strengths "
    "with their Wald intervals, the rank in each, and each covariate's coefficient (log-odds "
    "per standard deviation of its feature) with its interval.")


def style_cells(row: dict[str, Any]) -> tuple[str, list[list[str]], list[list[str]]]:
    """(the caption, the systems' rows, the coefficients' rows) of one judge's style
    control (`audit --pairwise`, judgebench.services.pairwise_style); an error row has only
    its caption with the reason. Systems by raw strength, best first."""
    controls = ", ".join(row.get("controls", []))
    if row.get("status") != "ok":
        return (f"{row['judge']} (controls: {controls}): no ranking: {row.get('reason')}",
                [], [])
    level = float(row.get("level", 0.95))

    def shown(cell: dict[str, Any]) -> str:
        return f"{fmt(cell['estimate'])} [{fmt(cell['low'])}, {fmt(cell['high'])}]"

    systems = sorted(row["systems"].items(),
                     key=lambda kv: (-(kv[1]["raw"]["estimate"] or -math.inf), kv[0]))
    rows = [[name, shown(s["raw"]), str(s["raw"]["rank"]), shown(s["controlled"]),
             str(s["controlled"]["rank"])] for name, s in systems]
    coefficients = [[name, shown(c)] for name, c in row["coefficients"].items()]
    caption = (f"{row['judge']} (controls: {controls}; {row['comparisons']} comparisons; "
               f"{level:.0%} Wald intervals) · {row['signature']}")
    return caption, rows, coefficients


STYLE_HEADER = ["system", "raw strength [CI]", "raw rank", "controlled strength [CI]",
                "controlled rank"]
COEFFICIENT_HEADER = ["covariate", "coefficient [CI]"]
