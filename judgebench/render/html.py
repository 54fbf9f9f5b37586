"""The audit's report card as one self-contained HTML page.

No scripts, no stylesheets, fonts or images from anywhere: the CSS is inline, the plots are
inline SVG (judgebench.render.svg), links are fragments within the page, and a
Content-Security-Policy meta tag forbids the browser to load anything else.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from html import escape
from typing import Any

from judgebench.auditing.report import Report
from judgebench.auditing.verdict import STATE_WORDS, heading, of_report
from judgebench.render import svg
from judgebench.render.card import (
    AGREEMENT_INTRO,
    COEFFICIENT_HEADER,
    GATE_RULE,
    REPORTABLE_HEADER,
    STYLE_HEADER,
    STYLE_INTRO,
    analytic_cell,
    analytic_forms,
    confusion_rows,
    fmt,
    gate_matrix,
    grids,
    intervals,
    money,
    notes,
    probe_matrix,
    rate,
    reportable_cells,
    reportable_intro,
    setting_label,
    statuses,
    style_cells,
)
from meta_eval import statistics

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
       "base-uri 'none'; form-action 'none'")

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;
background:#fff;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:1.6rem;margin:.4em 0}h2{font-size:1.25rem;margin-top:2em;border-bottom:1px solid
#d0d7de;padding-bottom:.2em}h3{font-size:1.05rem;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.86rem}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.sentinel td:first-child{font-style:italic;color:#57606a}
code{font-size:.78rem;word-break:break-all;color:#57606a}
.pass{color:#1e8449;font-weight:600}.fail{color:#c0392b;font-weight:600}
.muted{color:#57606a;font-size:.88rem}.marks{letter-spacing:.2em;white-space:nowrap}
.scroll{overflow-x:auto;max-width:100%}
.grid{display:flex;flex-wrap:wrap;gap:10px 18px}
.note{background:#fff8c5;border-left:4px solid #d4a72c;padding:4px 10px;margin:4px 0;
font-size:.88rem}
.warn{background:#ffebe9;border-left:4px solid #c0392b;padding:4px 10px;margin:4px 0;
font-size:.88rem}
nav a{margin-right:14px}
.verdict-pass{border-left:5px solid #1e8449;background:#e9f7ef}
.verdict-partial{border-left:5px solid #d4a72c;background:#fff8c5}
.verdict-fail{border-left:5px solid #c0392b;background:#ffebe9}
.verdict-info{border-left:5px solid #1f6feb;background:#ddf4ff}
div.criterion{padding:6px 12px;margin:8px 0}div.criterion h3{margin:.2em 0}
div.criterion table{background:#fff}.state{text-transform:uppercase;font-size:.85rem}
ul.reasons{margin:0;padding-left:1.1em}.reason{color:#57606a;font-size:.82rem}
span.metric-state{display:inline-block;padding:0 6px;margin:2px 4px 2px 0;font-size:.85rem}
svg{background:#fff;overflow:visible}
svg .t{font-size:12px;font-weight:600;fill:#1f2328}
svg .lab{font-size:11px;fill:#1f2328}svg .lab.s{font-style:italic;fill:#57606a}
svg .tick{font-size:10px;fill:#57606a}svg .mark{font-size:13px;font-weight:700}
svg .grid{stroke:#eaeef2}svg .zero{stroke:#8c959f}
svg .frame{fill:none;stroke:#d0d7de}svg .seg{fill:#b8bec5;opacity:.6}
svg .sys{fill:#1f6feb;stroke:#fff;stroke-width:.8}
table.confusion td.num{min-width:2.2em}
"""


def _anchor(*parts: str) -> str:
    return "-".join("".join(c if c.isalnum() else "-" for c in p.lower()) for p in parts)


def table_html(header: Sequence[str], rows: Sequence[Sequence[str]],
           classes: Sequence[str] | None = None) -> str:
    """Cells are HTML already (escape text before passing it)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for k, row in enumerate(rows):
        cls = f' class="{classes[k]}"' if classes and classes[k] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _statuses(counts: dict[str, int] | None) -> str:
    return escape(statuses(counts))


def render_html(report: Report | dict[str, Any], *,
                links: Sequence[tuple[str, str]] = ()) -> str:
    """The report card as one self-contained page; `links` (href, text) are put above its
    title (the viewer's way back to its other pages)."""
    data = report.to_dict() if isinstance(report, Report) else report
    back = ('<nav class="back">' + "".join(
        f'<a href="{escape(href)}">{escape(label)}</a>' for href, label in links) + "</nav>"
        if links else "")
    # The title, then the answer: the verdict is the page's first content.
    if data["inputs"].get("table") == "pairwise":
        parts = [f"<h1>{escape(data['title'])}</h1>", _pairwise(data),
                 _style(data.get("style", [])), _bias(data), _warnings(data)]
    else:
        parts = [f"<h1>{escape(data['title'])}</h1>", _verdict(data), _header(data),
                 _gate(data), _comparison(data), _agreement(data),
                 _reportable(data.get("reportable", [])),
                 section_html(data.get("scales", [])), _repeats(data.get("repeats", [])),
                 _spans(data.get("spans", [])), _scatter(data), _cards(data),
                 _probes(data), _bias(data), _combinations(data), _warnings(data)]
    title = escape(data["title"])
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="judgebench {escape(data["judgebench"])}">'
        f"<title>{title}</title><style>{CSS}</style></head><body><main>{back}"
        + "".join(p for p in parts if p)
        + '<p class="muted">Self-contained report: no scripts and no external resources.</p>'
        + "</main></body></html>\n"
    )


def _header(data: dict[str, Any]) -> str:
    inputs, settings = data["inputs"], data["settings"]
    levels = ", ".join(setting_label(x["level"], x["grouping"]) for x in settings["levels"])
    samples = (f", generations <code>{escape(inputs['samples'])}</code>" if inputs.get("samples")
               else ", no generations (text sentinels and probes skipped)")
    nav = ['<a href="#gate">Gate</a>', '<a href="#comparison">Sentinel comparison</a>',
           '<a href="#agreement">Agreement</a>', '<a href="#scatter">Scatter plots</a>',
           '<a href="#cards">Metrics and sentinels</a>']
    if data["probes"]:
        nav.append('<a href="#probes">Probes</a>')
    if data["bias"]:
        nav.append('<a href="#bias">Judge bias</a>')
    if data["warnings"]:
        nav.append('<a href="#warnings">Warnings</a>')
    return (f"<p>Scores <code>{escape(inputs['scores'])}</code> ({inputs['rows']} rows: "
            f"{inputs['items']} items × {inputs['systems']} systems){samples}.</p>"
            f'<p class="muted">Statistics: {escape(", ".join(settings["statistics"]))}; '
            f"settings: {escape(levels)}; {escape(intervals(settings))}; clusters by "
            f"{escape(settings['test'])} test "
            f"at α = {settings['alpha']}; seed {settings['seed']}. judgebench "
            f"{escape(data['judgebench'])}, {escape(data['created'])}.</p>"
            f"<nav>{''.join(nav)}</nav>")


def _verdict(data: dict[str, Any]) -> str:
    """The answer first: per human criterion, which metrics pass the gate where, and why
    not elsewhere (judgebench.auditing.verdict); the --fail-on failures after it."""
    parts = ['<section id="verdict"><h2>Verdict</h2>']
    for v in of_report(data):
        rows, classes = [], []
        for st in v["settings"]:
            failed = "".join(f'<li>{escape(f["metric"])} <span class="reason">'
                             f'{escape(f["reason"])}</span></li>' for f in st["failed"])
            rows.append([escape(st["where"]), escape(STATE_WORDS[st["state"]]),
                         escape(", ".join(st["passed"])) or "none",
                         f'<ul class="reasons">{failed}</ul>' if failed else "none",
                         escape(st["reason"])
                         + (f' <span class="reason">(not gated: '
                            f'{escape(", ".join(st["ungated"]))})</span>'
                            if st["ungated"] else "")])
            classes.append(f"verdict-{st['state']}")
        metrics = "".join(f'<span class="metric-state verdict-{m["state"]}">'
                          f'{escape(m["metric"])}: {escape(STATE_WORDS[m["state"]])}</span>'
                          for m in v["metrics"])
        parts.append(f'<div class="criterion verdict-{v["state"]}">'
                     f'<h3>{escape(v["human"])}: <span class="state">'
                     f'{escape(heading(v))}</span></h3>'
                     f'<p class="summary">{escape(v["summary"])}</p>'
                     + table_html(["setting", "verdict", "passes the gate",
                               "does not beat the sentinel (why)", "reason"], rows, classes)
                     + (f"<p>{metrics}</p>" if metrics else "") + _replacement(v)
                     + "</div>")
    if data.get("failures"):
        parts.append('<div class="warn"><strong>--fail-on: '
                     f'{len(data["failures"])} failure(s)</strong><ul class="reasons">'
                     + "".join(f'<li>FAIL {escape(f["metric"])}: {escape(f["message"])}</li>'
                               for f in data["failures"]) + "</ul></div>")
    return "".join(parts) + "</section>"


def _replacement(verdict: dict[str, Any]) -> str:
    """`audit --alt-test`: whether each metric can replace an annotator of the criterion."""
    rows = verdict.get("replacement") or []
    if not rows:
        return ""

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    return '<div class="replacement">' + table_html(
        ["can replace an annotator?", "winning rate", "advantage probability", "epsilon",
         "annotators"],
        [[escape(r["metric"]), "yes" if r["passed"] else "no", number(r["winning_rate"]),
          number(r["advantage_probability"]), f"{r['epsilon']:g}",
          escape(", ".join(r["annotators"]))] for r in rows],
        ["verdict-pass" if r["passed"] else "verdict-fail" for r in rows]) + "</div>"


def _gate(data: dict[str, Any]) -> str:
    header, rows, order = gate_matrix(data)
    marks = {"✓": '<span class="pass">✓</span>', "✗": '<span class="fail">✗</span>',
             "·": '<span class="muted">·</span>'}
    body = []
    for r in rows:
        passed, total = (int(x) for x in r["passed"].split("/"))
        cls = "pass" if total and passed == total else "fail"
        body.append([escape(r["metric"]), f'<span class="{cls}">{r["passed"]}</span>',
                     *(f'<span class="marks">{" ".join(marks[m] for m in cell)}</span>'
                       for cell in r["cells"])])
    return (f'<h2 id="gate">Gate</h2><p>{escape(GATE_RULE)}</p>'
            f'<p class="muted">Marks per cell, in this order: {escape(", ".join(order))}.</p>'
            + table_html([escape(h) for h in header], body))


def margins(blocks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per metric: per setting label, its statistic minus the gate's sentinel's, oriented
    so that positive is better (for mae, the sentinel's minus the metric's)."""
    out: dict[str, dict[str, Any]] = {}
    for b in blocks:
        goodness = statistics.get(b["statistic"]).goodness
        values = {r["metric"]: None if r["value"] is None else goodness(r["value"])
                  for r in b["rows"]}
        label = setting_label(b["level"], b["grouping"])
        for g in b["gate"]:
            mine, theirs = values.get(g["metric"]), values.get(g["sentinel"])
            margin = (mine - theirs if mine is not None and theirs is not None
                      and math.isfinite(mine) and math.isfinite(theirs) else None)
            out.setdefault(g["metric"], {"metric": g["metric"]})[label] = {
                "margin": margin, "passed": g["passed"], "sentinel": g["sentinel"]}
    return list(out.values())


def _views(data: dict[str, Any]) -> Iterator[tuple[str, str, list[dict[str, Any]]]]:
    """(human, statistic, blocks) for each view of the report that has blocks."""
    for human in data["humans"]:
        for statistic in data["settings"]["statistics"]:
            blocks = [b for b in data["blocks"]
                      if b["human"] == human and b["statistic"] == statistic]
            if blocks:
                yield human, statistic, blocks


def _comparison(data: dict[str, Any]) -> str:
    parts = ['<h2 id="comparison">Sentinel comparison</h2>'
             '<p class="muted">Each bar: the metric\'s statistic minus that of the sentinel '
             "it had to beat (the best-placed one), the other way round where lower is "
             "better (mae, brier, ece; for bias: closeness to 0); green: passed the gate, "
             "red: failed. A positive bar can still fail when the difference is not "
             "significant.</p>"]
    charts: list[str] = []
    for human, statistic, blocks in _views(data):
        labels = [setting_label(b["level"], b["grouping"]) for b in blocks]
        charts.append(svg.margin_chart(margins(blocks), settings=labels, width=560,
                                       title=f"{human} · {statistic}: margin over the "
                                             "best sentinel"))
    return "".join(parts) + f'<div class="grid">{"".join(charts)}</div>'



def _agreement(data: dict[str, Any]) -> str:
    ci = ("with its bootstrap CI" if data["settings"]["bootstrap"]
          else "(no interval: --bootstrap 0)")
    parts = ['<h2 id="agreement">Agreement with people</h2>'
             f'<p class="muted">Dots: the statistic {ci}, coloured by '
             "significance cluster (c1 is the best); hollow diamonds are sentinels; ✓/✗ is "
             "the gate.</p>"]
    for human, statistic, blocks in _views(data):
        parts.append(f'<h3 id="{_anchor(human, statistic)}">{escape(human)} · '
                     f"{escape(statistic)}</h3>")
        charts = []
        for b in blocks:
            verdicts = {g["metric"]: g["passed"] for g in b["gate"]}
            rows = [{"label": r["metric"], "value": r["value"], "ci_low": r.get("ci_low"),
                     "ci_high": r.get("ci_high"), "cluster": r.get("cluster"),
                     "kind": r["kind"], "gate": verdicts.get(r["metric"])}
                    for r in b["rows"]]
            label = setting_label(b["level"], b["grouping"])
            charts.append(svg.ci_chart(rows, title=f"{label} (n = "
                                       f"{_units(b)})", width=560))
        parts.append(f'<div class="grid">{"".join(charts)}</div>')
        parts.append(_agreement_table(blocks))
        forms = analytic_forms(blocks)
        if forms:
            parts.append('<div class="note">a[...]: the analytic interval, '
                         f'{escape("; ".join(forms))}</div>')
        parts += [f'<div class="note">{escape(text)} <span class="muted">('
                  f'{escape(", ".join(where))})</span></div>'
                  for text, where in notes(blocks).items()]
    return "".join(parts)


def _units(block: dict[str, Any]) -> str:
    ns = [r.get("n") for r in block["rows"] if r.get("n")]
    return str(max(ns)) if ns else "0"


def _agreement_table(blocks: Sequence[dict[str, Any]]) -> str:
    names = [r["metric"] for r in blocks[0]["rows"]]
    kinds = {r["metric"]: r["kind"] for r in blocks[0]["rows"]}
    rows, classes = [], []
    for name in names:
        line = [escape(name)]
        for b in blocks:
            row = next(r for r in b["rows"] if r["metric"] == name)
            verdict = next((g for g in b["gate"] if g["metric"] == name), None)
            text = fmt(row["value"])
            if row.get("ci_low") is not None:
                text += f' <span class="muted">[{fmt(row["ci_low"])}, {fmt(row["ci_high"])}]</span>'
            if analytic_cell(row):
                text += f' <span class="muted">{escape(analytic_cell(row).strip())}</span>'
            if row.get("cluster") is not None:
                text += f" c{row['cluster']}"
            if verdict is not None:
                text += (' <span class="pass">✓</span>' if verdict["passed"]
                         else f' <span class="fail" title="{escape(verdict["reason"])}">✗</span>')
            line.append(text)
        rows.append(line)
        classes.append("sentinel" if kinds[name] == "sentinel" else "")
    header = ["metric", *(escape(setting_label(b["level"], b["grouping"])) for b in blocks)]
    return table_html(header, rows, classes)


def _scatter(data: dict[str, Any]) -> str:
    parts = ['<h2 id="scatter">Metric against human</h2>'
             '<p class="muted">Blue: one dot per system (means over items); grey: a sample '
             "of segments. Lower-is-better metrics are shown negated.</p>"]
    for human in data["humans"]:
        by_column = data["scatter"].get(human, {})
        system_values = {}
        for b in data["blocks"]:
            if b["human"] == human and b["level"] == "system":
                system_values = {r["metric"]: r["value"] for r in b["rows"]}
                statistic = b["statistic"]
                break
        else:
            statistic = None
        plots = []
        for column, points in by_column.items():
            value = system_values.get(column)
            subtitle = "" if statistic is None else \
                f"system-level {statistic}: {fmt(value, 3)}"
            plots.append(svg.scatter(human=points["human"], metric=points["metric"],
                                     labels=points["systems"],
                                     segment_human=points.get("segment_human", ()),
                                     segment_metric=points.get("segment_metric", ()),
                                     title=column, subtitle=subtitle, x_label=human,
                                     y_label=column))
        parts.append(f"<h3>{escape(human)}</h3><div class=\"grid\">{''.join(plots)}</div>")
    return "".join(parts)


def _cards(data: dict[str, Any]) -> str:
    metric_rows = [[escape(c["column"]) + ("" if c["higher_is_better"] else " (negated)"),
                    escape(c.get("kind") or "–"), _statuses(c.get("statuses")),
                    rate(c.get("parse_failure_rate")), money(c.get("cost_usd")),
                    fmt(c.get("time_s"), 1),
                    f"<code>{escape(c['signature'])}</code>" if c.get("signature")
                    else "unknown (no .meta.json beside the table)"]
                   for c in data["metrics"]]
    sentinel_rows = [[escape(s["column"]), escape(s["description"]),
                      "<br>".join(f"{escape(h)}: {_statuses(v)}"
                                  for h, v in s["statuses"].items()) if s["trained"]
                      else _statuses(next(iter(s["statuses"].values()), {})),
                      f"<code>{escape(s['signature'])}</code>"] for s in data["sentinels"]]
    return ('<h2 id="cards">Metrics and sentinels</h2>'
            + table_html(["column", "kind", "statuses", "parse failures", "cost (USD)",
                      "time (s)", "signature"], metric_rows)
            + table_html(["sentinel", "what it sees", "statuses", "signature"], sentinel_rows))


def _probes(data: dict[str, Any]) -> str:
    if not data["probes"]:
        return ""
    header, rows, counts = probe_matrix(data["probes"])
    details = {(p["metric"], p["probe"]): p for p in data["probes"]}
    names = [h.split(" (")[0] for h in header[1:]]
    body = []
    for row in rows:
        cells = [escape(row[0])]
        for name, text in zip(names, row[1:], strict=True):
            p = details.get((row[0], name))
            rate = None if p is None else p.get("rate")
            shade = "" if rate is None else (
                f' style="background:hsl({int(120 * rate)},60%,88%)"')
            title = "" if p is None else (f' title="{escape(p["description"])}: n={p["n"]}, '
                                          f'mean change {fmt(p.get("mean_delta"), 4)}"')
            cells.append(f"<span{title}{shade}>{escape(text)}</span>")
        body.append(cells)
    return ('<h2 id="probes">Metamorphic probes</h2><p class="muted">Share of changed '
            "outputs whose score moved the right way (expected move in brackets; "
            "<em>same</em>: must not move; <em>best</em>: the reference as output scores at "
            "least the item's best system). Hover a cell for n and the mean change.</p>"
            + table_html([escape(h) for h in header], body)
            + f'<p class="muted">Scored pairs per probe: {escape(counts)}.</p>')


def _pairwise(data: dict[str, Any]) -> str:
    """An audit of pairwise judges: the summary per human column first, then every
    statistic per judge (and category)."""
    inputs, settings = data["inputs"], data["settings"]
    summary = "".join(f'<div class="criterion verdict-info"><h3>{escape(s["human"])}</h3>'
                      f'<p>{escape(s["text"])}</p></div>'
                      for s in data.get("pairwise_summary", []))
    parts = ['<section id="verdict"><h2>Verdict</h2>', summary,
             f'<p class="muted">{inputs["rows"]} pairs over {inputs["items"]} items; human '
             f'ties: {escape(settings["human_ties"])}; {escape(intervals(settings))}; '
             'c&lt;n&gt;: significance cluster '
             f'of accuracy (paired test on per-pair credit at alpha {settings["alpha"]}).'
             "</p></section>", '<h2 id="pairwise">Pairwise judges</h2>']
    for grid in grids(data["pairwise"], data["humans"]):
        title = escape(grid.human) + (f" · {escape(str(settings['by']))} = "
                                      f"{escape(str(grid.category))}"
                                      if grid.category is not None else "")
        parts.append(f"<h3>{title}</h3>")
        parts.append(table_html(["judge", *grid.statistics],
                            [[escape(j), *(escape(c) for c in cells)]
                             for j, cells in zip(grid.judges, grid.cells, strict=True)]))
    return "".join(parts)


def _style(rows: list[dict[str, Any]]) -> str:
    """Each judge's raw and style-controlled rankings and the covariates' coefficients."""
    if not rows:
        return ""
    parts = ['<h2 id="style">Rankings with style controlled</h2>',
             f'<p class="muted">{escape(STYLE_INTRO)}</p>']
    for row in rows:
        caption, systems, coefficients = style_cells(row)
        parts.append(f"<h3>{escape(caption)}</h3>")
        if systems:
            parts.append(table_html(STYLE_HEADER, [[escape(c) for c in r] for r in systems]))
            parts.append(table_html(COEFFICIENT_HEADER,
                                    [[escape(c) for c in r] for r in coefficients]))
    return "".join(parts)


def _bias(data: dict[str, Any]) -> str:
    if not data["bias"]:
        return ""
    rows = [[escape(b["judge"]), escape(b["probe"]), escape(b["measure"]), fmt(b.get("value")),
             str(b["n"]), escape(b.get("note", ""))] for b in data["bias"]]
    return ('<h2 id="bias">Judge bias</h2>'
            + table_html(["judge", "probe", "measure", "value", "n", "note"], rows))


def _reportable(rows: Sequence[dict[str, Any]]) -> str:
    """What you can report (as the Markdown card)."""
    if not rows:
        return ""
    return ('<h2 id="reportable">What you can report</h2>'
            f"<p>{escape(reportable_intro(rows))}</p>"
            + table_html([escape(h) for h in REPORTABLE_HEADER],
                         [[escape(c) for c in cells] for cells in reportable_cells(rows)]))


def _repeats(rows: Sequence[dict[str, Any]]) -> str:
    """The judges drawn with `score --repeats K` against themselves (as the Markdown card)."""
    if not rows:
        return ""
    k = [str(r["repeats"]) for r in rows]
    cells = [[escape(r["metric"]), escape(n), str(r["n"]), _num(r.get("icc")),
              _num(r.get("icc_mean")), _num(r.get("alpha")), _num(r.get("spread")),
              rate(r.get("flip_share")), _num((r.get("pass_at_k") or {}).get(n)),
              _num((r.get("pass_hat_k") or {}).get(n))] for r, n in zip(rows, k, strict=True)]
    noise = [[escape(r["metric"]), escape(h), _num(c.get("agreement")), _num(c.get("ceiling")),
              _num(c.get("disattenuated")), rate(c.get("noise_share"))]
             for r in rows for h, c in (r.get("noise_ceiling") or {}).items()]
    return ('<h2 id="repeats">Repeats</h2><p>A judge against itself over K draws per item: '
            "ICC(1) of one draw, ICC(K) of their mean, Krippendorff's alpha, the mean spread "
            "per item, the share of items whose verdict flips; pass@K and pass^K for binary "
            "judges; per human column the ceiling its own noise puts on agreement.</p>"
            + table_html(["judge", "K", "n", "ICC(1)", "ICC(K)", "alpha", "spread", "flips",
                          "pass@K", "pass^K"], cells)
            + (table_html(["judge", "human", "r (mean of draws)", "ceiling", "disattenuated",
                           "gap its noise explains"], noise) if noise else ""))


def _spans(rows: Sequence[dict[str, Any]]) -> str:
    """The span-marking judges' error spans against people's (as the Markdown card)."""
    overall = [r for r in rows if r.get("system") is None]
    if not overall:
        return ""
    cells = [[escape(r["metric"]), escape(r["level"]), escape(r["variant"]),
              _num(r.get("precision")), _num(r.get("recall")), _num(r.get("f1")), str(r["n"])]
             for r in overall]
    return ('<h2 id="spans">Error spans</h2><p>Each span-marking judge\'s error spans against '
            "people's MQM spans, micro over the segments both rated: character level (WMT23 "
            "QE task 2: severity as half credit, must match, or ignored) and span level "
            "(overlap or exact match, with or without the same severity).</p>"
            + table_html(["judge", "level", "variant", "P", "R", "F1", "segments"], cells))


def _combinations(data: dict[str, Any]) -> str:
    found = data.get("combinations") or []
    if not found:
        return ""
    rows = [[escape(c["metric"]), escape(c["human"]),
             escape(f"{c['statistic']} · {c['level']}/{c['grouping']}"),
             escape(f"{_num(c.get('value'))} (cluster {c.get('cluster')})"),
             escape(f"{c.get('best_component') or '-'} {_num(c.get('best_component_value'))}"
                    f" (cluster {c.get('best_component_cluster')})"),
             escape(c["verdict"]), escape(c["reason"])] for c in found]
    return ('<h2 id="combinations">Learned combinations</h2><p>A combination improves on its '
            "metrics only if it beats every sentinel and its best component lands in a worse "
            "significance cluster.</p>"
            + table_html(["combination", "human", "setting", "value", "best component", "verdict",
                      "reason"], rows))


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _warnings(data: dict[str, Any]) -> str:
    if not data["warnings"]:
        return ""
    return ('<h2 id="warnings">Warnings</h2>'
            + "".join(f'<div class="warn">{escape(w)}</div>' for w in data["warnings"]))


def section_html(entries: Sequence[dict[str, Any]]) -> str:
    """The "Agreement, error and calibration" section (judgebench.auditing.agreement) as
    HTML (empty without entries)."""
    if not entries:
        return ""
    parts = ['<h2 id="agreement-error-calibration">Agreement, error and calibration</h2>',
             f'<p class="muted">{escape(AGREEMENT_INTRO)}</p>']
    for e in (e for e in entries if e["type"] == "confusion"):
        header, rows = confusion_rows(e)
        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join("<tr>" + "".join(f'<td class="num">{escape(c)}</td>' if k else
                                        f"<th>{escape(c)}</th>" for k, c in enumerate(row))
                       + "</tr>" for row in rows)
        parts.append(f"<h3>{escape(e['metric'])} · {escape(e['human'])}: confusion</h3>"
                     f'<div class="scroll"><table class="confusion"><thead><tr>{head}</tr>'
                     f"</thead><tbody>{body}</tbody></table></div>")
    diagrams = [svg.reliability_svg(e) for e in entries if e["type"] == "reliability"]
    if diagrams:
        parts.append('<h3>Reliability</h3><div class="grid" id="reliability-diagrams">'
                     f'{"".join(diagrams)}</div>')
    return "".join(parts)
