"""A `Table` in the format a user asked for: the one place that knows every table renderer
(text, json, csv, markdown, latex), so `table.py`, which they all import, imports none of them."""

from __future__ import annotations

from judgebench.render.table import FORMATS, Table


def render(table: Table, fmt: str, *, digits: int = 4) -> str:
    """`table` as text, json, csv, markdown or latex (`judgebench.render.table` says how)."""
    from judgebench.render import csv, json, latex, markdown, text

    renderers = {"json": json.table, "csv": csv.table, "text": text.table,
                 "markdown": markdown.pipe_table, "latex": latex.table}
    if fmt not in renderers:
        raise ValueError(f"unknown table format {fmt!r}; use one of {', '.join(FORMATS)}")
    return renderers[fmt](table, digits)
