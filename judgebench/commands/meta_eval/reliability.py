"""`judgebench meta-eval reliability TABLE`: judgements against themselves, K draws of a judge
or K raters, from a plain table or from `score --repeats`' store: the intraclass
correlations of the design with their F-tests and intervals, alpha, flakiness, pass@k
(judgebench.services.reliability)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.options import (
    ci_option,
    humans_option,
    metrics_option,
    raters_option,
)
from judgebench.commands.output_format import format_options
from judgebench.services.reliability import DESIGNS, UNITS

EXAMPLES = examples(
    ("a judge's five draws per output, one row per draw: ICC(1), flakiness, pass@k",
     "judgebench meta-eval reliability examples/judge-draws.csv --draw draw --score pass "
     "--score score"),
    ("three people's ratings, one column each: the two-way ICCs",
     "judgebench meta-eval reliability examples/rater-ratings.csv --item item --rater "
     "rater1 --rater rater2 --rater rater3 --icc-design two-way-mixed"),
    ("the same ratings as JSON",
     "judgebench meta-eval reliability examples/rater-ratings.csv --item item --rater "
     "rater1 --rater rater2 --rater rater3 --json"),
)


@click.command("reliability", epilog=EXAMPLES)
@click.argument("table", type=click.Path(path_type=Path))
@click.option("--item", "items", multiple=True, metavar="COL",
              help="A column identifying a unit (an output judged); repeatable. Default: "
                   "item and system, those the table has.")
@click.option("--draw", metavar="COL",
              help="TABLE is long: one row per (unit, draw), the draw index in COL.")
@click.option("--rater-column", metavar="COL",
              help="TABLE is long: one row per (unit, rater), the rater in COL.")
@raters_option("TABLE has a column per rater: one of them; repeatable (two or more).")
@click.option("--score", "scores", multiple=True, metavar="COL",
              help="With --draw or --rater-column: a column of judgements; repeatable. "
                   "Default: every numeric column that is not a key, --human or human.*.")
@humans_option("With --draw (or a scores table of --repeats): a column of people's score of "
               "each unit (the same on each of its rows): the draws' noise ceiling against "
               "it; repeatable.")
@metrics_option("Without --draw, --rater-column or --rater (TABLE a scores table of `score "
                "--repeats`): a repeated column; repeatable. Default: every one.")
@click.option("--icc-design", type=click.Choice(DESIGNS), default=None,
              help="The ICC's design. Default: one-way for draws (exchangeable), "
                   "two-way-random for raters (absolute agreement); two-way-mixed: these "
                   "raters only (consistency).")
@click.option("--icc-unit", type=click.Choice(UNITS), default=None,
              help="The reliability of one judgement (single) or of the mean of the K "
                   "(mean). Default: both.")
@ci_option("Confidence level of the ICC intervals.")
@format_options("Print the report as a JSON list, one object per score column.",
                REPORT_FORMATS)
def command(table: Path, items: tuple[str, ...], draw: str | None, rater_column: str | None,
            raters: tuple[str, ...], scores: tuple[str, ...], humans: tuple[str, ...],
            metrics: tuple[str, ...], icc_design: str | None, icc_unit: str | None, ci: float,
            output_format: str) -> None:
    """Judgements against themselves: a judge's K draws per unit or K raters' judgements,
    from TABLE, a plain table (--draw, --rater-column or --rater) or a scores table of
    `score --repeats K` (the draws read from its store). Per score column: the intraclass
    correlations of the design with their F-tests and intervals (a unit missing a judgement
    is left out, counted), and for draws alpha, spread, flakiness, pass@k / pass^k and the
    noise ceiling against people (--human)."""
    from judgebench.render.reliability import reliability_report
    from judgebench.services.reliability import reliability

    result = reliability(table, draw=draw, rater_column=rater_column, raters=raters,
                         items=items, scores=scores, metrics=metrics, humans=humans,
                         design=icc_design, unit=icc_unit, confidence=ci, log=log)
    echo_report(result, output_format, reliability_report)
