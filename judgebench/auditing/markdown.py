"""The report card as Markdown (GitHub-flavoured tables)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from judgebench.auditing.agreement import section_markdown
from judgebench.auditing.report import Report
from judgebench.auditing.verdict import STATE_WORDS, heading, of_report
from judgebench.display import safe

GATE_RULE = ("A metric passes the gate in a setting when it lands in a strictly better "
             "significance cluster than every sentinel (Perrella et al. 2024). Cluster 1 is "
             "the best; a new cluster starts where a metric is significantly worse than a "
             "member of the one above.")


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or value != value else f"{value:.{digits}f}"


# Markdown syntax a name could carry into the card: escapes, code spans, emphasis (an
# underscore only at a word's edge: inside a word it is literal), links and images,
# strikethrough. HTML (<, >, &) is written as entities.
_SYNTAX = re.compile(r"[\\`*\[\]~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def text(value: Any) -> str:
    """User-provided text (a name, a path, a note) as Markdown that shows it literally: no
    raw HTML, link, image, code span or emphasis can come out of it, control characters are
    visible escapes and a newline is a space (it cannot start a block)."""
    plain = safe(value).replace("\n", " ")
    return _SYNTAX.sub(lambda m: "\\" + m.group(), html.escape(plain, quote=False))


def code(value: Any) -> str:
    """Text as a code span, shown literally (HTML is not interpreted in a code span): the
    fence is one backtick longer than the longest run inside."""
    plain = safe(value).replace("\n", " ")
    fence = "`" * (max((len(run) for run in re.findall("`+", plain)), default=0) + 1)
    pad = " " if plain.startswith("`") or plain.endswith("`") else ""
    return f"{fence}{pad}{plain}{pad}{fence}"


def setting_label(level: str, grouping: str) -> str:
    return "system" if level == "system" else f"segment/{grouping}"


def cell(row: dict[str, Any], verdict: dict[str, Any] | None) -> str:
    text = fmt(row.get("value"))
    if row.get("ci_low") is not None:
        text += f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]"
    if row.get("cluster") is not None:
        text += f" c{row['cluster']}"
    if verdict is not None:
        text += " ✓" if verdict["passed"] else " ✗"
    return text


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    def esc(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(h) for h in header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in rows]
    return lines


def render_markdown(report: Report | dict[str, Any]) -> str:
    """The card as Markdown. Every name, path and note from the user's data goes through
    `text` (or `code`), so none of it is read as HTML or Markdown syntax."""
    data = report.to_dict() if isinstance(report, Report) else report
    if data["inputs"].get("table") == "pairwise":
        return pairwise_markdown(data)
    out: list[str] = [f"# {text(data['title'])}", "", *verdict_lines(data)]
    inputs, settings = data["inputs"], data["settings"]
    out.append(f"Scores {code(inputs['scores'])} ({inputs['rows']} rows: {inputs['items']} "
               f"items x {inputs['systems']} systems)"
               + (f", generations {code(inputs['samples'])}" if inputs.get("samples") else
                  ", no generations (text sentinels skipped)")
               + f". judgebench {text(data['judgebench'])}, {text(data['created'])}.")
    levels = ", ".join(setting_label(x["level"], x["grouping"]) for x in settings["levels"])
    out += ["", f"Statistics: {text(', '.join(settings['statistics']))}; settings: {levels}; "
                f"{settings['ci']:.0%} bootstrap CI over items ({settings['bootstrap']} "
                f"resamples); clusters by {text(settings['test'])} test at alpha "
                f"{settings['alpha']}; seed {settings['seed']}.", ""]

    out += ["## Gate", "", GATE_RULE, ""]
    header, gate_rows, order = gate_matrix(data)
    out += [f"Marks per cell, in this order: {', '.join(order)} (✓ pass, ✗ fail).", ""]
    out += table([text(h) for h in header],
                 [[text(r["metric"]), r["passed"], *(" ".join(c) for c in r["cells"])]
                  for r in gate_rows])

    out += ["", "## Metrics", ""]
    out += table(["column", "kind", "statuses", "parse failures", "cost (USD)", "time (s)",
                  "signature"],
                 [[text(c["column"]) + ("" if c["higher_is_better"] else " (negated)"),
                   text(c.get("kind") or "-"), text(_statuses(c.get("statuses"))),
                   _rate(c.get("parse_failure_rate")), _money(c.get("cost_usd")),
                   fmt(c.get("time_s"), 1), code(c["signature"]) if c.get("signature")
                   else "unknown (no .meta.json beside the table)"]
                  for c in data["metrics"]])

    out += ["", "## Sentinels", ""]
    out += table(["sentinel", "sees", "statuses", "signature"],
                 [[text(s["column"]), text(s["description"]),
                   text("; ".join(f"{h}: {_statuses(v)}" for h, v in s["statuses"].items())
                        if s["trained"] else _statuses(next(iter(s["statuses"].values()), {}))),
                   code(s["signature"])] for s in data["sentinels"]])

    out += ["", "## Agreement with people", "",
            "Each cell: statistic [CI] c<cluster>, and ✓/✗ for the gate. Sentinels in "
            "italics.", ""]
    for human in data["humans"]:
        for statistic in settings["statistics"]:
            blocks = [b for b in data["blocks"]
                      if b["human"] == human and b["statistic"] == statistic]
            if not blocks:
                continue
            out += [f"### {text(human)} · {text(statistic)}", ""]
            names = [r["metric"] for r in blocks[0]["rows"]]
            rows: list[list[str]] = []
            for name in names:
                kind = next(r["kind"] for r in blocks[0]["rows"] if r["metric"] == name)
                line = [f"*{text(name)}*" if kind == "sentinel" else text(name)]
                for b in blocks:
                    row = next(r for r in b["rows"] if r["metric"] == name)
                    verdict = next((g for g in b["gate"] if g["metric"] == name), None)
                    line.append(cell(row, verdict))
                rows.append(line)
            out += table(["metric", *(setting_label(b["level"], b["grouping"])
                                      for b in blocks)], rows)
            notes = _notes(blocks)
            if notes:
                out += ["", *(f"- {text(n)}" for n in notes)]
            out.append("")

    out += section_markdown(data.get("scales", []), text=text, table=table)
    if data["probes"]:
        out += ["## Metamorphic probes", "",
                "Share of changed outputs whose score moved the right way (expected move in "
                "brackets; `same`: must not move; `best`: the reference as output scores at "
                "least the item's best system).", ""]
        header, probe_rows, counts = probe_matrix(data["probes"])
        out += table([text(h) for h in header], [[text(v) for v in row] for row in probe_rows])
        out += ["", f"Scored pairs per probe: {text(counts)}.", ""]
    out += _bias_and_warnings(data)
    return "\n".join(out).rstrip() + "\n"


def _bias_and_warnings(data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if data["bias"]:
        out += ["## Judge bias", ""]
        out += table(["judge", "probe", "measure", "value", "n", "note"],
                     [[text(b["judge"]), text(b["probe"]), text(b["measure"]),
                       fmt(b.get("value")), b["n"], text(b.get("note", ""))]
                      for b in data["bias"]])
        out.append("")
    if data.get("combinations"):
        out += ["## Learned combinations", "",
                "A combination improves on its metrics only if it beats every sentinel and "
                "its best component lands in a worse significance cluster.", ""]
        out += table(["combination", "human", "setting", "value", "best component",
                      "verdict", "reason"],
                     [[text(c["metric"]), text(c["human"]),
                       text(f"{c['statistic']} · {setting_label(c['level'], c['grouping'])}"),
                       f"{fmt(c.get('value'))} c{c.get('cluster')}",
                       (f"{text(c['best_component'])} {fmt(c.get('best_component_value'))} "
                        f"c{c.get('best_component_cluster')}") if c.get("best_component")
                       else "-", text(c["verdict"]), text(c["reason"])]
                      for c in data["combinations"]])
        out.append("")
    if data["warnings"]:
        out += ["## Warnings", "", *(f"- {text(w)}" for w in data["warnings"]), ""]
    return out


def pairwise_markdown(data: dict[str, Any]) -> str:
    """An audit of pairwise judges: the summary per human column, every statistic per judge
    (and category), the bias probes."""
    from judgebench.auditing.pairwise import grids

    inputs, settings = data["inputs"], data["settings"]
    out = [f"# {text(data['title'])}", "", "## Verdict", ""]
    out += [f"- **{text(s['human'])}**: {text(s['text'])}" for s in data["pairwise_summary"]]
    out += ["", f"{inputs['rows']} pairs over {inputs['items']} items; human ties: "
                f"{text(settings['human_ties'])}; {settings['ci']:.0%} bootstrap CI over items "
                f"({settings['bootstrap']} resamples); c<n>: significance cluster of accuracy "
                f"(alpha {settings['alpha']}).", "", "## Pairwise judges", ""]
    for grid in grids(data["pairwise"], data["humans"]):
        title = text(grid.human) + (f" · {text(settings['by'])} = {text(grid.category)}"
                                    if grid.category is not None else "")
        out += [f"### {title}", ""]
        out += table(["judge", *grid.statistics], [[text(j), *(text(c) for c in cells)]
                                               for j, cells in zip(grid.judges, grid.cells,
                                                                   strict=True)])
        out.append("")
    out += _bias_and_warnings(data)
    return "\n".join(out).rstrip() + "\n"


def verdict_lines(data: dict[str, Any]) -> list[str]:
    """The answer first (judgebench.auditing.verdict): per human criterion, its state in words,
    the summary, and per setting who passes, who does not beat the sentinel and why; then
    the --fail-on failures."""
    out = ["## Verdict", ""]
    for v in of_report(data):
        out += [f"**{text(v['human'])}: {text(heading(v).upper())}.** "
                f"{text(v['summary'])}", ""]
        out += table(["setting", "verdict", "passes the gate",
                      "does not beat the sentinel (why)", "reason"],
                     [[text(st["where"]), STATE_WORDS[st["state"]],
                       text(", ".join(st["passed"])) or "none",
                       "; ".join(f"{text(f['metric'])} ({text(f['reason'])})"
                                 for f in st["failed"]) or "none",
                       text(st["reason"]) + (f" (not gated: {text(', '.join(st['ungated']))})"
                                             if st["ungated"] else "")]
                      for st in v["settings"]])
        if v["metrics"]:
            out += ["", "Per metric: " + "; ".join(
                f"{text(m['metric'])} {STATE_WORDS[m['state']]}" for m in v["metrics"]) + "."]
        out.append("")
    if data.get("failures"):
        out += [f"**--fail-on: {len(data['failures'])} failure(s).**", "",
                *(f"- FAIL {text(f['metric'])}: {text(f['message'])}"
                  for f in data["failures"]), ""]
    return out


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
    rows = [[metric, *(_rate(cells[n].get("rate")) if n in cells else "-" for n in names)]
            for metric, cells in by_metric.items()]
    first = next(iter(by_metric.values()))
    counts = ", ".join(f"{n} {first[n]['n']}" + (f" ({first[n]['skipped']} not applicable)"
                                                  if first[n].get("skipped") else "")
                       for n in names if n in first)
    return ["metric", *(f"{n} ({expect[n]})" for n in names)], rows, counts


def _notes(blocks: Sequence[dict[str, Any]]) -> list[str]:
    """Notes of these blocks, each text once, with the settings it applies to."""
    seen: dict[str, list[str]] = {}
    for b in blocks:
        for note in b["notes"]:
            seen.setdefault(note["text"], []).append(setting_label(b["level"], b["grouping"]))
    return [f"{text} ({', '.join(where)})" for text, where in seen.items()]


def _statuses(counts: dict[str, int] | None) -> str:
    if not counts:
        return "unknown"
    return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4f}"
