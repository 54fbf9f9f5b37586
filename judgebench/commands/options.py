"""Options shared by the commands that read a scores table, spelt alike everywhere."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from meta_eval.pairwise import DEFAULT_TIES as HUMAN_TIES_DEFAULT

F = TypeVar("F", bound=Callable[..., object])


def direction_options(command: F) -> F:
    """`--lower-is-better COL` and `--higher-is-better COL` (parameters `lower`, `higher`):
    the user's word on a column's direction, which outranks the sidecar and the registered
    metric (judgebench.tables.scores_table)."""
    command = click.option(
        "--higher-is-better", "higher", multiple=True, metavar="COL",
        help="A metric column where higher is better, whatever the sidecar or the registered "
             "metric say; repeatable.")(command)
    return click.option(
        "--lower-is-better", "lower", multiple=True, metavar="COL",
        help="A metric column where lower is better (negated, so that higher always means "
             "better); repeatable. Known without it from the table's .meta.json or the "
             "registered metric the column names (lexical.ter).")(command)


def pairwise_options(command: F) -> F:
    """`--by COL` and `--human-ties drop|half|class` (parameters `by`, `human_ties`): how a
    pairwise table's judges are read against people (`meta-eval --pairwise`, `audit
    --pairwise`; meta_eval.pairwise)."""
    command = click.option(
        "--human-ties", type=click.Choice(("drop", "half", "class")),
        default=HUMAN_TIES_DEFAULT,
        show_default=True, help="--pairwise: pairs people called a tie: drop = left out of "
        "accuracy; half = a tie on one side earns 0.5; class = a third class.")(command)
    return click.option(
        "--by", metavar="COL", help="--pairwise: every statistic per value of COL (e.g. "
        "category) and macro-averaged.")(command)


def failed_as_option(command: F) -> F:
    """`--failed-as` (parameter `failed_as`): how a failed verdict (a cell reading `failed`,
    or one the sidecar's statuses say failed) is counted (judgebench.tables.failed)."""
    return click.option(
        "--failed-as", "failed_as", default="missing", show_default=True,
        metavar="missing|wrong|tie|min|max|VALUE",
        help="A failed verdict: pairwise missing (dropped), wrong (in the denominator, never "
             "the human label; LLMBar) or tie; numeric missing, min, max (the column's) or a "
             "number. Told from a never-judged cell by the sidecar's statuses or a cell "
             "reading 'failed'.")(command)
