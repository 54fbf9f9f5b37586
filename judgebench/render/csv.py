"""CSV: a `Table` (judgebench.render.table) by the `csv` module (RFC 4180 quoting), every
digit kept, so reading it back gives the numbers --json gives."""

from __future__ import annotations

import csv
import io

from judgebench.render.table import Table, exact


def table(table: Table, digits: int = 4) -> str:
    """`table` as CSV (`digits` is unused: csv keeps every digit)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows([exact(v) for v in row] for row in table.rows)
    return out.getvalue().rstrip("\n")
