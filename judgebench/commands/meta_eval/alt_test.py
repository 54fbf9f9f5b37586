"""`judgebench meta-eval alt-test SCORES --epsilon E`: can a metric replace an annotator? The
alternative-annotator test of Calderon et al. 2025 (judgebench.services.alt_test)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.options import (
    FINITE,
    alpha_option,
    alt_test_options,
    humans_option,
    metrics_option,
)
from judgebench.commands.output_format import format_options


@click.command("alt-test", epilog=examples(
    ("can BLEU or chrF stand in for one of the four SummEval criteria's experts?",
     "judgebench meta-eval alt-test examples/summeval-scores.csv --epsilon 0.2 --alt-score "
     "neg-rmse --alt-min-items 10"),
    ("the same as JSON, at the crowd-workers' margin",
     "judgebench meta-eval alt-test examples/summeval-scores.csv --epsilon 0.1 --alt-score "
     "neg-rmse --alt-min-items 10 --json"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@humans_option("Annotator column; repeatable. Default: every human.* column.")
@metrics_option("Candidate judge column; repeatable. Default: every numeric column that is "
                "not a human column (nor item, system, human.*).")
@click.option("--epsilon", type=FINITE, default=None, metavar="EPSILON",
              help="The annotators' cost-benefit margin (required; the paper: 0.2 experts, "
                   "0.15 skilled, 0.1 crowd).")
@alt_test_options("How an answer agrees with the other annotators (categorical or numeric "
                  "labels).")
@alpha_option("Significance level of each annotator's test.")
@format_options("Print the report as a JSON object.", REPORT_FORMATS)
def command(scores: Path, humans: tuple[str, ...], metrics: tuple[str, ...],
            epsilon: float | None, alt_score: str, alt_min_items: int, alpha: float,
            output_format: str) -> None:
    """The alternative-annotator test (Calderon et al. 2025) on SCORES: each human.* column
    is one annotator, each metric a candidate judge that may replace one."""
    from judgebench.render import text as text_out
    from judgebench.services.alt_test import alt_test

    if epsilon is None:
        raise click.UsageError("alt-test needs --epsilon, the annotators' cost-benefit "
                               "margin (the paper: 0.2 experts, 0.15 skilled, 0.1 crowd)")
    report = alt_test(scores, humans=humans, metrics=metrics, epsilon=epsilon,
                      score=alt_score, alpha=alpha, min_items=alt_min_items, log=log)
    echo_report(report, output_format, text_out.alt_test_report)
