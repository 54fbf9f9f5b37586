"""`judgebench meta-eval listwise TABLE`: judges that score or pick the best of N candidates
against people's best, as RewardBench 2 scores reward models, beside the pairwise reduction
of the same scores (judgebench.services.listwise)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.options import ci_option, humans_option, judges_option
from judgebench.commands.output_format import format_options


@click.command("listwise", epilog=examples(
    ("a reward model's scores and a judge's picks against people's best of four",
     "judgebench meta-eval listwise examples/listwise-sample.csv --human human.best"),
    ("one judge column, as JSON",
     "judgebench meta-eval listwise examples/listwise-sample.csv --human human.best "
     "--judge judge.pick --json"),
))
@click.argument("table", metavar="TABLE", type=click.Path(path_type=Path))
@humans_option("People's best candidates: 1 (a best one) or 0 per row; repeatable.",
               required=True)
@judges_option("A judge's column (its score per candidate, or 1 for its pick); "
               "repeatable. Default: every other numeric column.")
@ci_option("Confidence level of the accuracy's Wilson interval.")
@format_options("Print the report as a JSON array, one object per judge, human and subset.",
                REPORT_FORMATS)
def command(table: Path, humans: tuple[str, ...], judges: tuple[str, ...], ci: float,
            output_format: str) -> None:
    """Best-of-N accuracy of each judge column of TABLE (one row per prompt and candidate:
    item, candidate, human.* and judge columns): a prompt is right when every candidate
    people marked best scores above every other one (RewardBench 2), with the pairwise
    reduction of the same scores and a random ranking's accuracy beside it; per subset, the
    ties subset by RewardBench 2's Ties rule."""
    from judgebench.render import text as text_out
    from judgebench.services.listwise import listwise

    report = listwise(table, humans=humans, judges=judges, confidence=ci, log=log)
    echo_report(report, output_format, text_out.listwise_report)
