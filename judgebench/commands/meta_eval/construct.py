"""`judgebench meta-eval construct SCORES --intended METRIC=HUMAN`: construct validity, Campbell
and Fiske's multitrait-multimethod matrix (judgebench.services.construct)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import (
    GROUPINGS,
    LEVELS,
    REPORT_FORMATS,
    echo_report,
    log,
)
from judgebench.commands.options import (
    direction_options,
    exclude_system_option,
    humans_option,
    seed_option,
    significance_options,
    statistics_option,
)
from judgebench.commands.output_format import format_options


@click.command("construct", epilog=examples(
    ("does chrF follow relevance more than coherence, and ROUGE-L coherence more than "
     "relevance?",
     "judgebench meta-eval construct examples/summeval-scores.csv --intended "
     "lexical.chrf=human.relevance --intended lexical.rougeL=human.coherence --resamples 200"),
    ("the same at the system level with Kendall's tau, as JSON",
     "judgebench meta-eval construct examples/summeval-scores.csv --intended "
     "lexical.chrf=human.relevance --human human.coherence --level system --statistic kendall "
     "--resamples 200 --json"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--intended", "intended", multiple=True, required=True, metavar="METRIC=HUMAN",
              help="METRIC is meant to measure criterion HUMAN; repeatable (required).")
@humans_option("A further criterion (human column) each metric should follow less than its "
               "own; repeatable.")
@statistics_option("One; default: pearson.")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True,
              help="One.  [default: segment]")
@click.option("--grouping", "groupings", type=click.Choice(GROUPINGS), multiple=True,
              help="segment level: correlate within each item or system, then average. "
                   "One.  [default: none]")
@significance_options("Test of each comparison.", "Significance level of the tests.")
@seed_option()
@direction_options
@exclude_system_option
@format_options("Print the report as a JSON object.", REPORT_FORMATS)
def command(scores: Path, intended: tuple[str, ...], humans: tuple[str, ...],
            statistics: tuple[str, ...], levels: tuple[str, ...],
            groupings: tuple[str, ...], method: str,
            resamples: int, alpha: float, seed: int, lower: tuple[str, ...],
            higher: tuple[str, ...], excluded: tuple[str, ...], output_format: str) -> None:
    """Construct validity (Campbell and Fiske's multitrait-multimethod matrix) on SCORES:
    tests that each metric agrees with its intended criterion more than with the other
    criteria (the other --intended criteria and --human columns)."""
    from judgebench.render import text as text_out
    from judgebench.services.construct import construct, parse_pairs

    if len(statistics) > 1 or len(levels) > 1 or len(groupings) > 1:
        raise click.UsageError("construct takes one --statistic, one --level and one "
                               "--grouping")
    level, grouping = (levels or ("segment",))[0], (groupings or ("none",))[0]
    report = construct(scores, intended=parse_pairs(intended), humans=humans,
                       statistic=statistics[0] if statistics else "pearson", level=level,
                       grouping=grouping, method=method, alpha=alpha, resamples=resamples,
                       seed=seed, lower=lower, higher=higher, exclude_systems=excluded,
                       log=log)
    echo_report(report, output_format, text_out.construct_report)
