"""Options shared by the commands that read a scores table, spelt alike everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

F = TypeVar("F", bound=Callable[..., object])


def direction_options(command: F) -> F:
    """`--lower-is-better COL` and `--higher-is-better COL` (parameters `lower`, `higher`):
    the user's word on a column's direction, which outranks the sidecar and the registered
    metric (judgebench.scores_table)."""
    command = click.option(
        "--higher-is-better", "higher", multiple=True, metavar="COL",
        help="A metric column where higher is better, whatever the sidecar or the registered "
             "metric say; repeatable.")(command)
    return click.option(
        "--lower-is-better", "lower", multiple=True, metavar="COL",
        help="A metric column where lower is better (negated, so that higher always means "
             "better); repeatable. Known without it from the table's .meta.json or the "
             "registered metric the column names (lexical.ter).")(command)
