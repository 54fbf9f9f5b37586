"""One table, five ways to print it: text, json, csv, markdown, latex.

A `Table` is plain data: column names and rows of cells (str, int, float, bool, None, or a
list/dict, which is written as JSON text in a cell). `judgebench.render.formats.render(table,
fmt)` is the only place a command turns rows into one of those formats (`meta-eval`,
`aggregate` and `metrics NAME` all use it; each format's own module of judgebench.render
writes it), so escaping is decided once:

- text: aligned columns for the terminal; None as "-".
- json: an array of one object per row, values as they are (None as null).
- csv: the `csv` module (RFC 4180 quoting); None as an empty cell, floats at full precision
  (`repr`), booleans as true/false, so reading it back gives the numbers --json gives.
- markdown: a GitHub-flavoured pipe table; `\\`, `|`, `*`, backticks, `<` and `>` are escaped
  and a newline becomes `<br>`; number columns are right-aligned.
- latex: a booktabs `tabular` (needs `\\usepackage{booktabs}`); the ten special characters
  `\\ & % $ # _ { } ~ ^` (and `<`, `>`, `|`, which the default font encoding garbles) are
  escaped; number columns are right-aligned.

Text, markdown and latex show floats with `digits` decimals; csv and json keep every digit.

A result of several tables (`aggregate`'s rankings, order effect, style control) is printed
by `judgebench.render.formats.render_tables`: the tables one after another, separated by a
blank line, the first (the rankings) as a lone table prints; markdown puts each further
table's title above it as a paragraph, latex as a `%` comment, csv prints none (each table's
header names its fields).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgebench.services.aggregate import AggregateResult, RuleInfo
    from judgebench.services.meta_eval_results import MetaEvalResult

FORMATS = ("text", "json", "csv", "markdown", "latex")


@dataclass(frozen=True)
class Table:
    columns: list[str]
    rows: list[list[Any]]

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]],
                     columns: Sequence[str] | None = None, *, first: Sequence[str] = ()
                     ) -> Table:
        """A table of `records` (dicts). Columns: `columns` if given (a key a record lacks is
        None), else `first` (those any record has) then every other key in order of first
        appearance."""
        records = list(records)
        if columns is None:
            seen = dict.fromkeys(key for record in records for key in record)
            columns = [*(c for c in first if c in seen), *(c for c in seen if c not in first)]
        return cls(list(columns), [[record.get(c) for c in columns] for record in records])


def results_table(records: Sequence[Mapping[str, Any]], fmt: str, shown: Sequence[str]
                  ) -> Table:
    """The table a command prints its result objects as: for csv every field of `records`,
    the `shown` ones first (nothing --json has is lost); for the other formats only the
    `shown` fields some record has (a table for a paper or a pull request). No records: the
    `shown` header alone."""
    if not records:
        return Table(list(shown), [])
    if fmt == "csv":
        return Table.from_records(records, first=shown)
    return Table.from_records(records, [c for c in shown if any(c in r for r in records)])


#: The fields of a meta-eval result a markdown or latex table shows (csv has them first, then
#: the rest).
META_EVAL_COLUMNS = ("metric", "human", "statistic", "level", "grouping", "value", "ci_low",
                     "ci_high", "p_value", "n", "cluster")
#: What a csv, markdown or latex table of an aggregate result holds (its system_rows).
AGGREGATE_COLUMNS = ("rule", "rank", "system", "score", "winner", "rank_low", "rank_high",
                     "p_win")
RULE_COLUMNS = ("name", "inputs", "description", "missing", "options")


def meta_eval_table(result: MetaEvalResult, fmt: str) -> Table:
    """`meta-eval -f csv|markdown|latex`: one row per result object; `failed_as` shown where
    a failed cell was counted (or the convention is not the default)."""
    records = result.to_dict()
    counted = result.failed_as.kind != "missing" or any(
        (r.get("failed") or {}).get("rows") for r in records)
    return results_table(records, fmt,
                         (*META_EVAL_COLUMNS, "failed_as") if counted else META_EVAL_COLUMNS)


def aggregate_table(result: AggregateResult, fmt: str) -> Table:
    """`aggregate -f csv|markdown|latex`'s first table: one row per (rule, system), then
    each rule's per-system figures (bradley-terry's se and Wald interval, win-rate's
    standard error and counts)."""
    rows = result.system_rows()
    extras = dict.fromkeys(k for r in rows for k in r if k not in AGGREGATE_COLUMNS)
    return results_table(rows, fmt, (*AGGREGATE_COLUMNS, *extras))


#: The further tables of an aggregate result (bradley-terry on a pairwise table), with the
#: title markdown and latex print above each and the fields they show.
ORDER_EFFECT_COLUMNS = ("rule", "h", "se", "ci_low", "ci_high", "level", "judgements",
                        "ties_left_out", "orders", "status", "reason", "signature")
STYLE_COLUMNS = ("rule", "system", "rank", "controlled", "se", "ci_low", "ci_high",
                 "raw_rank", "raw", "raw_se", "raw_ci_low", "raw_ci_high", "level",
                 "controls", "status", "reason", "signature")
COEFFICIENT_COLUMNS = ("rule", "covariate", "coefficient", "se", "ci_low", "ci_high", "level",
                       "signature")


def aggregate_tables(result: AggregateResult, fmt: str) -> list[tuple[str, Table]]:
    """Every table of `aggregate -f csv|markdown|latex`, each with its title: the rankings
    (`aggregate_table`), then where bradley-terry has them the order effect, the style-
    controlled ranking and the style covariates' coefficients, as the text format shows."""
    tables = [("rankings", aggregate_table(result, fmt))]
    further = (
        ("order effect (position bias: logit P(first wins) = theta_first - theta_second + h; "
         "h > 0 favours the response shown first)", result.order_effect_rows(),
         ORDER_EFFECT_COLUMNS),
        ("style control: controlled and raw Bradley-Terry strengths (ties as half a win)",
         result.style_rows(), STYLE_COLUMNS),
        ("style control: coefficients (log-odds per standard deviation of A's minus B's "
         "feature)", result.coefficient_rows(), COEFFICIENT_COLUMNS))
    tables += [(title, results_table(rows, fmt, columns))
               for title, rows, columns in further if rows]
    return tables


def rules_table(rules: Sequence[RuleInfo], fmt: str) -> Table:
    """`aggregate --list-rules -f csv|markdown|latex`: one row per rule."""
    return results_table([r.to_dict() for r in rules], fmt, RULE_COLUMNS)


# -- cells ----------------------------------------------------------------------------------
def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def numeric(table: Table) -> list[bool]:
    """Per column: every non-empty cell is a number."""
    columns = [[row[i] for row in table.rows] for i in range(len(table.columns))]
    return [any(v is not None for v in cells) and all(v is None or _is_number(v) for v in cells)
            for cells in columns]


def _whole(table: Table) -> list[bool]:
    """Per column: every number in it is a whole number (ranks, counts, Borda points), so it
    is shown without decimals."""
    return [all(float(row[i]).is_integer() for row in table.rows
                if _is_number(row[i]) and math.isfinite(row[i]))
            for i in range(len(table.columns))]


def shown_cells(table: Table, digits: int, empty: str) -> list[list[str]]:
    whole = _whole(table)
    return [[_shown(v, digits, empty, whole[i]) for i, v in enumerate(row)]
            for row in table.rows]


def _shown(value: Any, digits: int, empty: str, whole: bool = False) -> str:
    """A cell as people read it: floats rounded to `digits` decimals (a tiny one, such as a
    p-value of 1e-29, in scientific notation), None as `empty`."""
    if value is None:
        return empty
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if whole:
            return f"{value:.0f}"
        if value and abs(value) < 0.5 * 10.0 ** -digits:
            return f"{value:.{max(digits - 2, 1)}e}"
        return f"{value:.{digits}f}"
    if isinstance(value, list | tuple):
        return ", ".join(_shown(v, digits, empty) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, default=str)
    return str(value)


def exact(value: Any) -> str:
    """A cell as a machine reads it back: every digit, true/false, JSON for lists."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, default=str)
    return str(value)
