"""`bench`'s cards and `suites`' listing and card, as text, Markdown, JSON and HTML.

With several suites, a summary comes first (`services.bench_summary`): one row per metric,
one column per suite (the suite's headline value), wrapped to the terminal's 100 columns,
then a line per suite naming its headline protocol, the n and the best comparable published
baseline. A bench card starts with its verdict sentences, then one table per protocol and subset:
the user's metrics, the published baselines (the printed value, and the recomputed one where
the suite stores the baseline's verdicts) and the human ceiling, each with its bootstrap CI
and significance cluster (a listwise suite: best-of-N accuracy with its Wilson interval, and a
random ranking's accuracy, marked `~`). The HTML page reuses the audit's self-contained page (CSS,
Content-Security-Policy, tables: judgebench.render.html).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from judgebench.render.card import COEFFICIENT_HEADER, STYLE_HEADER, STYLE_INTRO, style_cells

if TYPE_CHECKING:
    from judgebench.services.bench import BenchResult, Card, CardRow
    from judgebench.services.bench_summary import SummaryCell
    from judgebench.suite import Suite

FORMATS = ("text", "markdown", "json", "html")
HEADER = ("", "metric", "value", "CI", "cluster", "published", "n", "source")


def _num(value: float | None, digits: int = 3) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _cells(row: CardRow) -> list[str]:
    digits = row.precision if row.precision is not None else 3
    mark = {"yours": "*", "published": "", "ceiling": "=", "random": "~"}[row.kind]
    ci = f"[{_num(row.ci[0], digits)}, {_num(row.ci[1], digits)}]" if row.ci else ""
    if row.analytic is not None:  # --interval analytic|both
        ci = (f"{ci} " if ci else "") + (f"a[{_num(row.analytic[0], digits)}, "
                                         f"{_num(row.analytic[1], digits)}]")
    printed = _num(row.printed, digits)
    if row.reproduces is not None:
        printed += " (reproduced)" if row.reproduces else " (not reproduced)"
    if row.comparable is False and row.printed is not None:
        printed += " (published on the full set, not comparable)"
    return [mark, row.label, _num(row.value, digits), ci,
            "" if row.cluster is None else str(row.cluster), printed,
            "" if row.n is None else str(row.n), row.table or ""]


def analytic_forms(rows: Sequence[CardRow]) -> list[str]:
    """The signatures of a group's analytic intervals without each row's n."""
    return list(dict.fromkeys("|".join(p for p in r.analytic_method.split("|")
                                       if not p.startswith("n="))
                              for r in rows if r.analytic_method))


def analytic_note(rows: Sequence[CardRow]) -> str | None:
    """What a[...] in a group's CI cells is: the analytic intervals' forms, None where no
    row has one."""
    forms = analytic_forms(rows)
    return f"a[...]: the analytic interval, {'; '.join(forms)}" if forms else None


def _groups(card: Card) -> list[tuple[str, list[CardRow]]]:
    """(heading, rows) per protocol, statistic and subset, in the suite's order; the user's
    metrics first, then the published baselines by value, the ceiling last."""
    order = {"yours": 0, "published": 1, "ceiling": 2, "random": 3}
    seen: dict[tuple[str, str, str | None], list[CardRow]] = {}
    for row in card.rows:
        seen.setdefault((row.protocol, row.statistic, row.subset), []).append(row)
    out = []
    for (protocol, statistic, subset), rows in seen.items():
        rows.sort(key=lambda r: (order[r.kind], -(r.value if r.value is not None else
                                                  r.printed if r.printed is not None
                                                  else -1e300)))
        where = f", {subset}" if subset else ""
        out.append((f"{protocol}: {statistic}{where}", rows))
    return out


def coverage_entries(card: Card) -> tuple[str, list[tuple[bool, str]]]:
    """Each judge's coverage at 1 - alpha = 0.9 (judgebench.services.bench_coverage): the
    heading that says what it is, and per judge (whether it is yours, its sentence)."""
    if not card.coverage:
        return "", []
    first = card.coverage[0].to_dict()
    heading = (f"coverage at 1 - alpha = {1 - first['alpha']:g} (trust or escalate on the "
               f"suite's labels, at probability {1 - first['delta']:g}; confidence: a "
               "pairwise judge's two orders agree)")
    out = []
    for c in card.coverage:
        if c.note is not None and not c.kept:
            out.append((c.kind == "yours", f"{c.label}: {c.note}"))
            continue
        at = "both orders agree" if c.threshold == 1.0 else (
            "every verdict" if c.threshold is not None and c.threshold <= 0.5
            else f"confidence >= {c.threshold:g}")
        out.append((c.kind == "yours",
                    f"{c.label}: {100 * (c.coverage or 0.0):.1f}% ({c.kept} of {c.items} "
                    f"kept: {at}; agreement on them {_num(c.agreement)})"))
    return heading, out


WIDTH = 100


def _value(value: float | None, statistic: str | None) -> str:
    if value is None:
        return "n/a"
    if statistic is not None and statistic.startswith("accuracy"):
        return f"{100 * value:.1f}%"
    return f"{value:.3f}"


def summary_table(result: BenchResult) -> tuple[list[str], list[list[str]], list[str]]:
    """The summary as (header, rows, one line per suite): a row per metric, a column per
    suite; the lines name each suite's headline protocol, its n and the best published
    baseline comparable with the rows scored."""
    cells = result.summary()
    suites = [card.suite.name for card in result.cards]
    header = ["metric", *suites]
    rows = []
    for spec in result.specs:
        row = [spec]
        for suite in suites:
            cell = next((c for c in cells if c.suite == suite and c.kind == "yours"
                         and c.metric == spec), None)
            row.append("skipped" if cell is None or cell.status == "skipped"
                       else _value(cell.value, cell.statistic))
        rows.append(row)
    return header, rows, [_summary_line(card, cells) for card in result.cards]


def _summary_line(card: Card, cells: Sequence[SummaryCell]) -> str:
    """One suite's line under the summary: its headline protocol and n, and the best
    published baseline comparable with the rows scored."""
    from judgebench.services.bench import protocol_words

    head = card.suite.protocols[0]
    statistic = head.statistics[0]
    mine = [c for c in cells if c.suite == card.suite.name and c.kind == "yours"
            and c.status != "skipped"]
    if not mine:
        return f"{card.suite.name}: skipped (no metric fits it)"
    line = (f"{card.suite.name}: {statistic} ({protocol_words(head, mine[0].n)}"
            + ("" if card.full else f", --limit: {card.scored} of the suite's "
               f"{'prompts' if card.suite.kind == 'listwise' else 'rows'}") + ")")
    best = next((c for c in cells if c.suite == card.suite.name and c.kind == "published"),
                None)
    if best is not None and card.full and best.printed is not None:
        return line + f"; best published {best.metric} {_value(best.printed, statistic)}"
    if best is not None:
        return line + (f"; best published judge {best.metric} "
                       f"{_value(best.value, statistic)}, recomputed from its stored outputs "
                       "on the same rows")
    if any(r.kind == "published" for r in card.rows) and not card.full:
        return line + "; published numbers are for the full set: not comparable"
    return line


def _summary_text(result: BenchResult) -> str:
    header, table, lines = summary_table(result)
    blocks = []
    first = max(len(r[0]) for r in [header, *table])
    columns = list(range(1, len(header)))
    while columns:
        width, chunk = first, list[int]()
        for k in columns:
            need = max(len(r[k]) for r in [header, *table]) + 2
            if chunk and width + need > WIDTH:
                break
            chunk.append(k)
            width += need
        blocks.append(_aligned([[r[0], *(r[k] for k in chunk)] for r in [header, *table]]))
        columns = columns[len(chunk):]
    return ("summary: each suite's headline statistic (below: protocol, n, best comparable "
            "baseline)\n" + "\n\n".join(blocks) + "\n"
            + "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="  ") for line in lines))


def render_text(result: BenchResult) -> str:
    parts = [_summary_text(result)] if len(result.cards) > 1 else []
    for card in result.cards:
        lines = [f"== {card.suite.title} ({card.suite.name}, {card.suite.kind}) =="]
        lines += [textwrap.fill(v, 100) for v in card.verdicts]
        for heading, rows in _groups(card):
            lines.append(f"\n{heading}")
            lines.append(_aligned([list(HEADER), *(_cells(r) for r in rows)]))
            note = analytic_note(rows)
            if note:
                lines.append(note)
        heading, entries = coverage_entries(card)
        if entries:
            lines += ["", f"{heading}:"]
            lines += [f"{'*' if yours else ' '} {line}" for yours, line in entries]
        lines += _style_text(card)
        lines += [f"note: {n}" for n in card.notes]
        legend = ("* = yours" + (", = = human ceiling" if _has_ceiling(card) else "")
                  + (", ~ = random ranking" if _has_random(card) else ""))
        lines.append(f"licence: {card.suite.licence}; {legend}; cite the suite's source "
                     f"(`judgebench suites {card.suite.name}`)")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _style_text(card: Card) -> list[str]:
    """The card's style-controlled rankings (render.card.style_cells), as text lines."""
    if not card.style:
        return []
    lines = ["", "Rankings with style controlled:", textwrap.fill(STYLE_INTRO, 100)]
    for caption, systems, coefficients in (style_cells(row) for row in card.style):
        lines += ["", caption]
        if systems:
            lines += [_aligned([STYLE_HEADER, *systems]),
                      _aligned([COEFFICIENT_HEADER, *coefficients])]
    return lines


def _style_markdown(card: Card) -> list[str]:
    if not card.style:
        return []
    lines = ["### Rankings with style controlled", "", _md(STYLE_INTRO), ""]
    for caption, systems, coefficients in (style_cells(row) for row in card.style):
        lines += [f"#### {_md(caption)}", ""]
        for header, cells in ((STYLE_HEADER, systems), (COEFFICIENT_HEADER, coefficients)):
            if cells:
                lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                lines += ["| " + " | ".join(_md(c) for c in r) + " |" for r in cells]
                lines.append("")
    return lines


def _style_html(card: Card) -> list[str]:
    from judgebench.render.html import table_html

    if not card.style:
        return []
    body = ["<h3>Rankings with style controlled</h3>"
            f'<p class="muted">{escape(STYLE_INTRO)}</p>']
    for caption, systems, coefficients in (style_cells(row) for row in card.style):
        body.append(f"<h4>{escape(caption)}</h4>")
        for header, cells in ((STYLE_HEADER, systems), (COEFFICIENT_HEADER, coefficients)):
            if cells:
                body.append(table_html([escape(h) for h in header],
                                       [[escape(c) for c in r] for r in cells]))
    return body


def _has_ceiling(card: Card) -> bool:
    """The card has a human-ceiling row (only suites with several annotators do)."""
    return any(row.kind == "ceiling" for row in card.rows)


def _has_random(card: Card) -> bool:
    """The card has a random ranking's row (listwise suites do)."""
    return any(row.kind == "random" for row in card.rows)


def _aligned(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[k]) for r in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)


def _md(text: str) -> str:
    from judgebench.render.markdown import markdown_escape

    return markdown_escape(text)


def render_markdown(result: BenchResult) -> str:
    parts = []
    if len(result.cards) > 1:
        header, table, lines = summary_table(result)
        parts.append("\n".join(["## Summary", "", "| " + " | ".join(_md(h) for h in header)
                                 + " |", "|" + "---|" * len(header),
                                 *("| " + " | ".join(_md(c) for c in r) + " |" for r in table),
                                 "", *(f"- {_md(line)}" for line in lines)]))
    for card in result.cards:
        lines = [f"## {_md(card.suite.title)}", ""]
        lines += [f"**{_md(v)}**" for v in card.verdicts] + [""]
        for heading, rows in _groups(card):
            lines += [f"### {_md(heading)}", "", "| " + " | ".join(HEADER) + " |",
                      "|" + "---|" * len(HEADER)]
            lines += ["| " + " | ".join(_md(c) for c in _cells(r)) + " |" for r in rows]
            forms = analytic_forms(rows)
            if forms:
                from judgebench.render.markdown import code

                lines += ["", "a[...]: the analytic interval, "
                          + "; ".join(code(f) for f in forms)]
            lines.append("")
        heading, entries = coverage_entries(card)
        if entries:
            lines += [f"**{_md(heading)}**", ""]
            lines += [f"- {_md(line)}{' (yours)' if yours else ''}" for yours, line in entries]
            lines.append("")
        lines += _style_markdown(card)
        lines += [f"- {_md(n)}" for n in card.notes]
        legend = ("`*` yours" + (", `=` human ceiling" if _has_ceiling(card) else "")
                  + (", `~` random ranking" if _has_random(card) else ""))
        lines.append(f"\nLicence: {_md(card.suite.licence)}. {legend}.")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def render_json(result: BenchResult) -> str:
    return json.dumps(result.to_dict(), indent=2, allow_nan=False)


def render_html(result: BenchResult) -> str:
    from judgebench._version import __version__
    from judgebench.render.html import CSP, CSS, table_html

    body = ["<h1>judgebench bench</h1>"]
    if len(result.cards) > 1:
        header, table, lines = summary_table(result)
        body.append("<h2>Summary</h2>")
        body.append(table_html([escape(h) for h in header],
                               [[escape(c) for c in r] for r in table], ["" for _ in table]))
        body.append("<ul>" + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>")
    for card in result.cards:
        body.append(f"<h2>{escape(card.suite.title)}</h2>")
        body += [f'<div class="criterion verdict-info"><p>{escape(v)}</p></div>'
                 for v in card.verdicts]
        for heading, rows in _groups(card):
            body.append(f"<h3>{escape(heading)}</h3>")
            body.append(table_html([escape(h) for h in HEADER],
                               [[escape(c) for c in _cells(r)] for r in rows],
                               ["sentinel" if r.kind != "yours" else "" for r in rows]))
            note = analytic_note(rows)
            if note:
                body.append(f'<p class="muted">{escape(note)}</p>')
        heading, entries = coverage_entries(card)
        if entries:
            body.append(f"<h3>{escape(heading)}</h3><ul>"
                        + "".join(f"<li>{escape(line)}{' (yours)' if yours else ''}</li>"
                                  for yours, line in entries) + "</ul>")
        body += _style_html(card)
        body += [f'<p class="note">{escape(n)}</p>' for n in card.notes]
        body.append(f'<p class="muted">Licence: {escape(card.suite.licence)}.</p>'
                    f"<pre><code>{escape(card.suite.citation)}</code></pre>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="judgebench {escape(__version__)}">'
            f"<title>judgebench bench</title><style>{CSS}</style></head><body><main>"
            + "".join(body)
            + '<p class="muted">Self-contained report: no scripts and no external resources.</p>'
            + "</main></body></html>\n")


def render(result: BenchResult, fmt: str) -> str:
    renderers = {"text": render_text, "markdown": render_markdown, "json": render_json,
                 "html": render_html}
    return renderers[fmt](result)


# -- `judgebench suites` ---------------------------------------------------------------------
def listing(suites: Sequence[Suite]) -> list[dict[str, Any]]:
    """One row per suite: name, kind, size, criteria, protocols, licence, origin."""
    return [{"name": s.name, "kind": s.info.kind, "size": s.size(),
             "criteria": s.info.criteria,
             "protocols": [f"{p.name} ({p.level}, {', '.join(p.statistics)})"
                           for p in s.info.protocols],
             "subsets": list(s.info.subsets), "licence": s.info.licence,
             "origin": s.origin, "title": s.info.title} for s in suites]


def render_listing(rows: Sequence[dict[str, Any]]) -> str:
    from judgebench.render.formats import render as render_table
    from judgebench.render.table import Table

    table = Table(["name", "kind", "size", "criteria", "protocols", "licence"],
                  [[r["name"], r["kind"], r["size"], ", ".join(r["criteria"]),
                    str(len(r["protocols"])), r["licence"]] for r in rows])
    return render_table(table, "text")


def suite_card(suite: Suite) -> dict[str, Any]:
    info = suite.info
    return {**info.model_dump(mode="json"), "size": suite.size(), "folder": str(suite.folder),
            "origin": suite.origin}


def _run_line(kind: str, name: str) -> str:
    """How to bench a judge on a suite of this kind."""
    spec = {"pointwise": "lexical.rouge2", "pairwise": "judge.pairwise",
            "listwise": "judge.listwise"}[kind]
    return f"run: judgebench bench {spec} --suite {name}" + (
        "" if kind == "pointwise" else " --limit 5")


def render_suite_card(suite: Suite) -> str:
    info = suite.info
    lines = [f"{info.name}: {info.title}", "", textwrap.fill(info.description, 100), "",
             f"kind: {info.kind}; {suite.size()} rows; criteria: {', '.join(info.criteria)}"]
    if info.subsets:
        lines.append("subsets:")
        lines += [f"  {k}: {v}" for k, v in info.subsets.items()]
    if info.annotators:
        lines.append("annotators: " + "; ".join(f"{c}: {len(a)}"
                                                for c, a in info.annotators.items()))
    else:
        lines.append("annotators: one label per row (no human ceiling)")
    lines.append("protocols:")
    for p in info.protocols:
        extra = ", ".join(f"{k} {v}" for k, v in (("grouping", p.grouping), ("ties", p.ties),
                                                  ("failed as", p.failed_as), ("by", p.by))
                          if v)
        lines.append(f"  {p.name}: {p.criterion}, level {p.level}, "
                     f"{', '.join(p.statistics)} against {p.human}"
                     + (f" ({extra})" if extra else ""))
    if info.published:
        lines.append("published:")
        for r in info.published:
            where = f" on {r.subset}" if r.subset else ""
            how = (f"spec {r.spec}" if r.spec else f"stored verdicts {r.verdicts_column}"
                   if r.verdicts_column else "not reproducible here")
            lines.append(f"  {r.metric}: {r.statistic} {r.value:.{r.precision}f}{where} "
                         f"({r.protocol}; {r.table}; {how})")
    lines += ["", f"licence: {info.licence}" + (f" ({info.licence_url})" if info.licence_url
                                                 else ""),
              f"source: {info.source.repository} at {info.source.commit}",
              f"folder: {suite.folder} (from {suite.origin})", "", "cite:", info.citation, "",
              _run_line(info.kind, info.name)]
    return "\n".join(lines) + "\n"
