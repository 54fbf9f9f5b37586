"""A `Table` in the format a user asked for: the one place that knows every table renderer
(text, json, csv, markdown, latex), so `table.py`, which they all import, imports none of them."""

from __future__ import annotations

from collections.abc import Sequence

from judgebench.render.table import FORMATS, Table


def render(table: Table, fmt: str, *, digits: int = 4) -> str:
    """`table` as text, json, csv, markdown or latex (`judgebench.render.table` says how)."""
    from judgebench.render import csv, json, latex, markdown, text

    renderers = {"json": json.table, "csv": csv.table, "text": text.table,
                 "markdown": markdown.pipe_table, "latex": latex.table}
    if fmt not in renderers:
        raise ValueError(f"unknown table format {fmt!r}; use one of {', '.join(FORMATS)}")
    return renderers[fmt](table, digits)


def render_tables(tables: Sequence[tuple[str, Table]], fmt: str, *, digits: int = 4) -> str:
    """Several (title, table) pairs as csv, markdown or latex, one after another with a blank
    line between; every table after the first under its title (`judgebench.render.table`
    says how each format shows it), so a result of one table prints as `render` prints it."""
    from judgebench.render.latex import latex_escape
    from judgebench.render.markdown import text

    if fmt not in ("csv", "markdown", "latex"):
        raise ValueError(f"several tables print as csv, markdown or latex, not {fmt!r}")
    parts = []
    for index, (title, table) in enumerate(tables):
        body = render(table, fmt, digits=digits)
        if index and fmt == "markdown":
            body = f"{text(title)}\n\n{body}"
        elif index and fmt == "latex":
            body = f"% {latex_escape(title)}\n{body}"
        parts.append(body)
    return "\n\n".join(parts)
