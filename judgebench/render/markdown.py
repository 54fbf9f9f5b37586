"""Markdown: a `Table` as a pipe table (`pipe_table`), and the audit's report card
(`render_markdown`, GitHub-flavoured tables)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from judgebench.auditing.verdict import STATE_WORDS, heading, of_report
from judgebench.display import safe
from judgebench.render.card import (
    AGREEMENT_INTRO,
    COEFFICIENT_HEADER,
    GATE_RULE,
    REPORTABLE_HEADER,
    STYLE_HEADER,
    STYLE_INTRO,
    analytic_cell,
    analytic_forms,
    bin_label,
    confusion_rows,
    fmt,
    gate_matrix,
    grids,
    intervals,
    money,
    notes,
    number,
    probe_matrix,
    rate,
    reportable_cells,
    reportable_intro,
    setting_label,
    statuses,
    style_cells,
)
from judgebench.render.table import Table, numeric, shown_cells

if TYPE_CHECKING:
    from judgebench.auditing.report import Report

_PIPE_CELL = re.compile(r"[\\|*`<>]")


def markdown_escape(text: str) -> str:
    """`text` for one cell of a Markdown pipe table."""
    escaped = _PIPE_CELL.sub(lambda m: "\\" + m.group(), text)
    return escaped.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")


def pipe_table(table: Table, digits: int = 4) -> str:
    """A `Table` (judgebench.render.table) as a GitHub-flavoured pipe table: number columns
    right-aligned, floats to `digits` decimals, None empty."""
    numbers = numeric(table)
    header = "| " + " | ".join(markdown_escape(c) for c in table.columns) + " |"
    rule = "|" + "|".join("---:" if n else "---" for n in numbers) + "|"
    rows = ["| " + " | ".join(markdown_escape(v) for v in row) + " |"
            for row in shown_cells(table, digits, "")]
    return "\n".join([header, rule, *rows])


# -- the audit's report card ------------------------------------------------------------------
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


def cell(row: dict[str, Any], verdict: dict[str, Any] | None) -> str:
    text = fmt(row.get("value"))
    if row.get("ci_low") is not None:
        text += f" [{fmt(row['ci_low'])}, {fmt(row['ci_high'])}]"
    text += analytic_cell(row)
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
    data = report if isinstance(report, dict) else report.to_dict()
    if data["inputs"].get("table") == "pairwise":
        return pairwise_markdown(data)
    out: list[str] = [f"# {text(data['title'])}", "", *verdict_lines(data)]
    out += _inputs_markdown(data)
    out += _gate_markdown(data)
    out += _metrics_markdown(data["metrics"])
    out += _sentinels_markdown(data["sentinels"])
    out += _agreement_markdown(data)
    out += reportable_markdown(data.get("reportable", []))
    out += section_markdown(data.get("scales", []))
    out += repeats_markdown(data.get("repeats", []))
    out += spans_markdown(data.get("spans", []))
    out += _probes_markdown(data["probes"])
    out += _bias_and_warnings(data)
    return "\n".join(out).rstrip() + "\n"


def _inputs_markdown(data: dict[str, Any]) -> list[str]:
    """What was audited (the scores, the generations, the version) and with which settings."""
    inputs, settings = data["inputs"], data["settings"]
    generations = (f", generations {code(inputs['samples'])}" if inputs.get("samples") else
                   ", no generations (text sentinels skipped)")
    levels = ", ".join(setting_label(x["level"], x["grouping"]) for x in settings["levels"])
    return [f"Scores {code(inputs['scores'])} ({inputs['rows']} rows: {inputs['items']} "
            f"items x {inputs['systems']} systems){generations}. judgebench "
            f"{text(data['judgebench'])}, {text(data['created'])}.",
            "", f"Statistics: {text(', '.join(settings['statistics']))}; settings: {levels}; "
                f"{text(intervals(settings))}; clusters by {text(settings['test'])} test at alpha "
                f"{settings['alpha']}; seed {settings['seed']}.", ""]


def _gate_markdown(data: dict[str, Any]) -> list[str]:
    """The gate: per metric, whether it passes and its marks per setting."""
    header, gate_rows, order = gate_matrix(data)
    out = ["## Gate", "", GATE_RULE, "",
           f"Marks per cell, in this order: {', '.join(order)} (✓ pass, ✗ fail).", ""]
    return out + table([text(h) for h in header],
                       [[text(r["metric"]), r["passed"], *(" ".join(c) for c in r["cells"])]
                        for r in gate_rows])


def _metric_signature(column: dict[str, Any]) -> str:
    if column.get("signature"):
        return code(column["signature"])
    return "unknown (no .meta.json beside the table)"


def _metrics_markdown(columns: list[dict[str, Any]]) -> list[str]:
    """One row per metric column: its kind, statuses, failures, cost, time and signature."""
    return ["", "## Metrics", "", *table(
        ["column", "kind", "statuses", "parse failures", "cost (USD)", "time (s)",
         "signature"],
        [[text(c["column"]) + ("" if c["higher_is_better"] else " (negated)"),
          text(c.get("kind") or "-"), text(statuses(c.get("statuses"))),
          rate(c.get("parse_failure_rate")), money(c.get("cost_usd")),
          fmt(c.get("time_s"), 1), _metric_signature(c)]
         for c in columns])]


def _sentinel_statuses(sentinel: dict[str, Any]) -> str:
    """A trained sentinel's statuses per human column; another's, of its one run."""
    if sentinel["trained"]:
        return "; ".join(f"{h}: {statuses(v)}" for h, v in sentinel["statuses"].items())
    return statuses(next(iter(sentinel["statuses"].values()), {}))


def _sentinels_markdown(sentinels: list[dict[str, Any]]) -> list[str]:
    return ["", "## Sentinels", "", *table(
        ["sentinel", "sees", "statuses", "signature"],
        [[text(s["column"]), text(s["description"]), text(_sentinel_statuses(s)),
          code(s["signature"])] for s in sentinels])]


def _agreement_markdown(data: dict[str, Any]) -> list[str]:
    """Per human column and statistic, a table of every metric's value in every setting."""
    analytic = data["settings"].get("interval", "bootstrap") != "bootstrap"
    out = ["", "## Agreement with people", "",
           "Each cell: statistic [CI]" + (" a[analytic interval]" if analytic else "")
           + " c<cluster>, and ✓/✗ for the gate. Sentinels in italics.", ""]
    for human in data["humans"]:
        for statistic in data["settings"]["statistics"]:
            blocks = [b for b in data["blocks"]
                      if b["human"] == human and b["statistic"] == statistic]
            if blocks:
                out += _agreement_block(human, statistic, blocks)
    return out


def _agreement_block(human: str, statistic: str, blocks: list[dict[str, Any]]) -> list[str]:
    """One human column and statistic: a row per metric, a column per setting, the notes."""
    out = [f"### {text(human)} · {text(statistic)}", ""]
    rows = [_agreement_row(r["metric"], blocks) for r in blocks[0]["rows"]]
    out += table(["metric", *(setting_label(b["level"], b["grouping"]) for b in blocks)], rows)
    block_notes = _notes(blocks)
    forms = analytic_forms(blocks)
    if forms:
        out += ["", "a[...]: the analytic interval, " + "; ".join(code(f) for f in forms)]
    if block_notes:
        out += ["", *(f"- {text(n)}" for n in block_notes)]
    out.append("")
    return out


def _agreement_row(name: str, blocks: list[dict[str, Any]]) -> list[str]:
    """A metric's name (in italics for a sentinel) and its cell in each block."""
    kind = next(r["kind"] for r in blocks[0]["rows"] if r["metric"] == name)
    line = [f"*{text(name)}*" if kind == "sentinel" else text(name)]
    for b in blocks:
        row = next(r for r in b["rows"] if r["metric"] == name)
        verdict = next((g for g in b["gate"] if g["metric"] == name), None)
        line.append(cell(row, verdict))
    return line


def _probes_markdown(probes: list[dict[str, Any]]) -> list[str]:
    """The metamorphic probes: per metric and probe, the share that moved the right way."""
    if not probes:
        return []
    out = ["## Metamorphic probes", "",
           "Share of changed outputs whose score moved the right way (expected move in "
           "brackets; `same`: must not move; `best`: the reference as output scores at "
           "least the item's best system).", ""]
    header, probe_rows, counts = probe_matrix(probes)
    out += table([text(h) for h in header], [[text(v) for v in row] for row in probe_rows])
    return [*out, "", f"Scored pairs per probe: {text(counts)}.", ""]


def spans_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The span-marking judges' error spans against people's (every system)."""
    overall = [r for r in rows if r.get("system") is None]
    if not overall:
        return []
    out = ["## Error spans", "",
           "Each span-marking judge's error spans against people's MQM spans, micro over "
           "the segments both rated: character level (WMT23 QE task 2: severity as half "
           "credit, must match, or ignored) and span level (overlap or exact match, with or "
           "without the same severity).", ""]
    out += table(["judge", "level", "variant", "P", "R", "F1", "segments"],
                 [[text(r["metric"]), r["level"], r["variant"], fmt(r.get("precision")),
                   fmt(r.get("recall")), fmt(r.get("f1")), r["n"]] for r in overall])
    return [*out, ""]


def reportable_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """What you can report: people's mean per system with each metric as the judge, where a
    human column labels a subset (judgebench.auditing.reportable)."""
    if not rows:
        return []
    out = ["## What you can report", "", text(reportable_intro(rows)), ""]
    out += table(REPORTABLE_HEADER, [[text(c) for c in cells]
                                     for cells in reportable_cells(rows)])
    return [*out, ""]


def repeats_markdown(rows: list[dict[str, Any]]) -> list[str]:
    """The judges drawn with `score --repeats K` against themselves."""
    if not rows:
        return []
    out = ["## Repeats", "",
           "A judge against itself over K draws per item: ICC(1) of one draw, ICC(K) of their "
           "mean (Spearman-Brown), Krippendorff's alpha, the mean spread (sd) per item, the "
           "share of items whose verdict flips; pass@K and pass^K for binary judges; per "
           "human column the noise ceiling sqrt(ICC(K)) and the share of the gap to "
           "perfect agreement the judge's own noise explains.", ""]
    out += table(["judge", "K", "n", "ICC(1)", "ICC(K)", "alpha", "spread", "flips",
                  "pass@K", "pass^K"],
                 [[text(r["metric"]), r["repeats"], r["n"], fmt(r.get("icc")),
                   fmt(r.get("icc_mean")), fmt(r.get("alpha")), fmt(r.get("spread")),
                   rate(r.get("flip_share")),
                   fmt((r.get("pass_at_k") or {}).get(str(r["repeats"]))),
                   fmt((r.get("pass_hat_k") or {}).get(str(r["repeats"])))] for r in rows])
    noise = [[text(r["metric"]), text(h), fmt(n.get("agreement")), fmt(n.get("ceiling")),
              fmt(n.get("disattenuated")), rate(n.get("noise_share"))]
             for r in rows for h, n in (r.get("noise_ceiling") or {}).items()]
    if noise:
        out += ["", *table(["judge", "human", "r (mean of draws)", "ceiling",
                            "disattenuated", "gap its noise explains"], noise)]
    return [*out, ""]


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
    inputs, settings = data["inputs"], data["settings"]
    out = [f"# {text(data['title'])}", "", "## Verdict", ""]
    out += [f"- **{text(s['human'])}**: {text(s['text'])}" for s in data["pairwise_summary"]]
    out += ["", f"{inputs['rows']} pairs over {inputs['items']} items; human ties: "
                f"{text(settings['human_ties'])}; {text(intervals(settings))}; c<n>: "
                "significance cluster of accuracy "
                f"(alpha {settings['alpha']}).", "", "## Pairwise judges", ""]
    for grid in grids(data["pairwise"], data["humans"]):
        title = text(grid.human) + (f" · {text(settings['by'])} = {text(grid.category)}"
                                    if grid.category is not None else "")
        out += [f"### {title}", ""]
        out += table(["judge", *grid.statistics], [[text(j), *(text(c) for c in cells)]
                                               for j, cells in zip(grid.judges, grid.cells,
                                                                   strict=True)])
        out.append("")
    out += _style(data.get("style", []))
    out += _bias_and_warnings(data)
    return "\n".join(out).rstrip() + "\n"


def _style(rows: list[dict[str, Any]]) -> list[str]:
    """Each judge's raw and style-controlled rankings and the covariates' coefficients."""
    if not rows:
        return []
    out = ["## Rankings with style controlled", "", text(STYLE_INTRO), ""]
    for row in rows:
        caption, systems, coefficients = style_cells(row)
        out += [f"### {text(caption)}", ""]
        if systems:
            out += [*table(STYLE_HEADER, [[text(c) for c in r] for r in systems]), ""]
            out += table(COEFFICIENT_HEADER, [[text(c) for c in r] for r in coefficients])
            out.append("")
    return out


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
        if v.get("replacement"):
            out += ["", *table(["can replace an annotator?", "winning rate",
                                "advantage probability", "epsilon", "annotators"],
                               [[text(r["metric"]), "yes" if r["passed"] else "no",
                                 _number(r["winning_rate"]), _number(r["advantage_probability"]),
                                 f"{r['epsilon']:g}", text(", ".join(r["annotators"]))]
                                for r in v["replacement"]])]
        if v["metrics"]:
            out += ["", "Per metric: " + "; ".join(
                f"{text(m['metric'])} {STATE_WORDS[m['state']]}" for m in v["metrics"]) + "."]
        out.append("")
    if data.get("failures"):
        out += [f"**--fail-on: {len(data['failures'])} failure(s).**", "",
                *(f"- FAIL {text(f['metric'])}: {text(f['message'])}"
                  for f in data["failures"]), ""]
    return out


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _notes(blocks: Sequence[dict[str, Any]]) -> list[str]:
    """Notes of these blocks, each text once, with the settings it applies to."""
    return [f"{text} ({', '.join(where)})" for text, where in notes(blocks).items()]


def section_markdown(entries: Sequence[dict[str, Any]]) -> list[str]:
    """The "Agreement, error and calibration" section (judgebench.auditing.agreement) as
    Markdown lines (none without entries)."""
    if not entries:
        return []
    out = ["## Agreement, error and calibration", "", AGREEMENT_INTRO, ""]
    for e in (e for e in entries if e["type"] == "confusion"):
        header, rows = confusion_rows(e)
        out += [f"### {text(e['metric'])} · {text(e['human'])}: confusion", ""]
        out += table(header, rows)
        out.append("")
    for e in (e for e in entries if e["type"] == "reliability"):
        out += [f"### {text(e['metric'])} · {text(e['human'])}: reliability "
                f"({text(e['binning'])} bins)", "",
                f"ECE {number(e['ece'])}, Brier {number(e['brier'])}, n = {e['n']}.", ""]
        out += table(["bin", "units", "mean p", "observed"],
                     [[bin_label(e["binning"], lo, hi), c, f"{p:.3f}", f"{f:.3f}"]
                      for lo, hi, c, p, f in zip(e["low"], e["high"], e["count"],
                                                 e["mean_probability"], e["frequency"],
                                                 strict=True)])
        out.append("")
    return out
