"""`judgebench diff A B`: two runs of the same judges (tables or stores), what changed.

The work is `judgebench.services.diff`; this module parses the options, calls it, prints
the result (judgebench.render: a JSON object with --json, otherwise a block per column) and applies
`--fail-on` (exit 4 when a check fails, as `audit --fail-on`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import FINITE, OPEN_UNIT
from judgebench.display import safe
from judgebench.errors import InputError
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.tables import destinations

if TYPE_CHECKING:
    from judgebench.services.diff import DiffResult

#: Exit status when a --fail-on check fails (as `audit`).
CHECKS_FAILED = 4
_CHECK = re.compile(r"^(flips|negative_flips)>([0-9]*\.?[0-9]+)$")


@click.command("diff", epilog=examples(
    ("does lowercasing change BLEU's conclusions? score again, then compare the two runs",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu:lowercase=true -o "
     "lower.csv && judgebench diff examples/summeval-scores.csv lower.csv --column-a "
     "lexical.bleu --column-b lexical.bleu:lowercase=true --human human.coherence"),
    ("two runs with the same columns, as JSON",
     "judgebench score examples/summeval-sample.jsonl -m lexical.chrf -o again.csv && "
     "judgebench diff examples/summeval-scores.csv again.csv --metric lexical.chrf --json"),
))
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option("--metric", "metrics", multiple=True, metavar="COL",
              help="A column both have (repeatable; default: every shared column).")
@click.option("--column-a", metavar="COL", help="A's column of one pair of differently named "
              "columns (e.g. two signatures of one metric in one store).")
@click.option("--column-b", metavar="COL", help="B's column of that pair.")
@click.option("--human", metavar="COL", help="Human column: negative flips, statistics "
              "against people, clusters.")
@click.option("--human-table", type=click.Path(path_type=Path),
              help="Where --human is (a scores table keyed as A); default A itself.")
@click.option("--statistic", "statistics", multiple=True, metavar="NAME",
              help="Statistic against people whose change is reported (repeatable; "
                   "default kendall).")
@click.option("--level", type=click.Choice(("segment", "system")), default="segment",
              show_default=True)
@click.option("--grouping", type=click.Choice(("none", "item", "system")), default="none",
              show_default=True)
@click.option("--tolerance", type=FINITE, default=0.0, show_default=True,
              help="Scores that differ by at most this much do not flip.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Item resamples for each interval (0: none).")
@click.option("--ci", type=OPEN_UNIT,
              default=0.95, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--fail-on", "fail_on", multiple=True, metavar="CHECK",
              help="drift (a conclusion moved or a statistic changed significantly), "
                   "flips>X or negative_flips>X (a rate of any column); exit 4 when one "
                   "holds.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object to stdout.")
def command(a: Path, b: Path, metrics: tuple[str, ...], column_a: str | None,
            column_b: str | None, human: str | None, human_table: Path | None,
            statistics: tuple[str, ...], level: str, grouping: str, tolerance: float,
            bootstrap: int, ci: float, seed: int, fail_on: tuple[str, ...],
            as_json: bool) -> None:
    """Compare two runs A and B of the same judges (scores tables or stores): per-item
    flips and negative flips against people, KL/JS between score distributions, the change
    of each statistic with a paired CI, whether a winner or cluster moved, and what
    answered each side (fingerprints)."""
    from judgebench.services.diff import DEFAULT_STATISTICS, diff

    checks = [_check(text) for text in fail_on]
    destinations.check([destinations.read("A", a), destinations.read("B", b),
                        *([destinations.read("--human-table", human_table)]
                          if human_table is not None else [])])
    result = diff(a, b, columns=metrics, column_a=column_a, column_b=column_b, human=human,
                  human_table=human_table, statistics=statistics or DEFAULT_STATISTICS,
                  level=level, grouping=grouping, tolerance=tolerance, bootstrap=bootstrap,
                  seed=seed, ci=ci)
    for note in result.notes:
        click.echo(f"diff: {safe(note)}", err=True)
    failed = [text for text, check in zip(fail_on, checks, strict=True) if check(result)]
    if as_json:
        click.echo(json_out.document({**result.to_dict(), "failed_checks": failed}))
    else:
        click.echo(safe(text_out.diff(result)))
    for text in failed:
        click.echo(f"diff: check failed: {safe(text)}", err=True)
    if failed:
        click.get_current_context().exit(CHECKS_FAILED)


def _check(text: str) -> Callable[[DiffResult], bool]:
    if text == "drift":
        return lambda result: result.drift
    found = _CHECK.match(text.replace(" ", ""))
    if found is None:
        raise InputError(f"{text!r} is not drift, flips>X or negative_flips>X",
                         field="--fail-on")
    name, limit = ("flip_rate" if found[1] == "flips" else "negative_flips"), float(found[2])

    def check(result: DiffResult) -> bool:
        return any((e := c.estimate(name)) is not None and e.value > limit
                   for c in result.columns)

    return check
