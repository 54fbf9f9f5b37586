"""`-f/--format text|json|csv|markdown|latex`, with `--json` kept as `--format json`.

`@format_options(json_help)` adds both options to a command and hands its function one
keyword, `output_format` (one of judgebench.render.table.FORMATS; text when neither is given).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from judgebench.render.table import FORMATS

F = TypeVar("F", bound=Callable[..., Any])

FORMAT_HELP = ("Output: text (default, for reading), json, csv, markdown or latex (a booktabs "
               "tabular); csv/markdown/latex print one table, one row per result.")


def format_options(json_help: str, formats: tuple[str, ...] = FORMATS) -> Callable[[F], F]:
    """`formats`: the ones this command prints (a report that is no table: text and json)."""
    def decorate(command: F) -> F:
        @functools.wraps(command)
        def merged(*args: Any, output_format: str | None, as_json: bool, **kwargs: Any) -> Any:
            return command(*args, output_format=chosen_format(output_format, as_json),
                           **kwargs)

        with_json = click.option("--json", "as_json", is_flag=True,
                                 help=f"Same as --format json. {json_help}")(merged)
        return click.option("-f", "--format", "output_format", type=click.Choice(formats),
                            default=None, help=FORMAT_HELP if formats == FORMATS else
                            f"Output: {' or '.join(formats)}.")(with_json)  # type: ignore[return-value]

    return decorate


def chosen_format(output_format: str | None, as_json: bool) -> str:
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json means --format json; it cannot go with --format "
                               f"{output_format}")
    return "json" if as_json else output_format or "text"
