"""What the `meta-eval` subcommands share: the log line, the text-or-json printing of a
report, and the views (level, grouping) of a scores table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import click

from judgebench.display import safe
from judgebench.engine import progress_line

LEVELS = ("system", "segment")
GROUPINGS = ("none", "item", "system")
#: The formats of a subcommand that prints one report (not a table per result).
REPORT_FORMATS = ("text", "json")


class Report(Protocol):
    def to_dict(self) -> object: ...


def log(message: str) -> None:
    click.echo(f"meta-eval: {safe(message)}", err=True)
    progress_line.doing(safe(message))


def echo_report(report: Report, output_format: str, as_text: Callable[[Any], str]) -> None:
    """`report` as a JSON document (--format json) or its text (`as_text(report)`)."""
    from judgebench.render import json as json_out

    click.echo(json_out.document(report.to_dict()) if output_format == "json"
               else safe(as_text(report)))


def views(levels: tuple[str, ...], groupings: tuple[str, ...]) -> list[tuple[str, str]]:
    """(level, grouping) pairs: a grouping is of the segment level, so with both levels the
    system level is taken once, ungrouped."""
    levels, groupings = levels or ("segment",), groupings or ("none",)
    both = len(set(levels)) > 1
    return list(dict.fromkeys((level, "none" if both and level == "system" else grouping)
                              for level in levels for grouping in groupings))
