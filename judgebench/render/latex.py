"""LaTeX: a `Table` (judgebench.render.table) as a booktabs `tabular`."""

from __future__ import annotations

import re
from collections.abc import Iterable

from judgebench.render.table import Table, numeric, shown_cells

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
          "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
          "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
          "|": r"\textbar{}", "\n": " ", "\r": " "}
_LATEX_SPECIAL = re.compile("|".join(re.escape(c) for c in _LATEX))


def latex_escape(text: str) -> str:
    """`text` as LaTeX source that prints it literally (one pass, so nothing is escaped
    twice)."""
    return _LATEX_SPECIAL.sub(lambda m: _LATEX[m.group()], text)


def table(table: Table, digits: int = 4) -> str:
    """`table` as a booktabs tabular: number columns right-aligned, floats to `digits`
    decimals, None as `--`."""
    numbers = numeric(table)

    def line(values: Iterable[str]) -> str:
        return " & ".join(latex_escape(v) for v in values) + r" \\"

    return "\n".join([
        r"\begin{tabular}{" + "".join("r" if n else "l" for n in numbers) + "}",
        r"\toprule",
        line(table.columns),
        r"\midrule",
        *(line(row) for row in shown_cells(table, digits, "--")),
        r"\bottomrule",
        r"\end{tabular}",
    ])
