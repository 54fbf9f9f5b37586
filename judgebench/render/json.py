"""JSON: what every command prints with --json (a result's `to_dict()`, indented by 2), and
a `Table` (judgebench.render.table) as an array of one object per row."""

from __future__ import annotations

import json
from typing import Any

from judgebench.render.table import Table


def document(data: Any, *, allow_nan: bool = True, ensure_ascii: bool = True) -> str:
    """`data` as a command prints it with --json."""
    return json.dumps(data, indent=2, allow_nan=allow_nan, ensure_ascii=ensure_ascii)


def table(table: Table, digits: int = 4) -> str:
    """`table` as an array of one object per row, values as they are (None as null;
    `digits` is unused)."""
    return json.dumps([dict(zip(table.columns, row, strict=True)) for row in table.rows],
                      indent=2, allow_nan=False, default=str)
