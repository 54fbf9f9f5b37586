"""`judgebench meta-eval power PILOT --human COL --delta D`: how many items (and annotators) a
study needs to separate metrics whose correlation with people differs by D
(judgebench.services.power)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.options import (
    FINITE,
    alpha_option,
    direction_options,
    exclude_system_option,
    humans_option,
    metrics_option,
    raters_option,
    seed_option,
    target_power_option,
)
from judgebench.commands.output_format import format_options


@click.command("power", epilog=examples(
    ("how many items separate the best metric from each other one at a difference of 0.1 in r",
     "judgebench meta-eval power examples/summeval-scores.csv --human human.relevance --delta "
     "0.1"),
    ("the same for 90% power, as JSON",
     "judgebench meta-eval power examples/summeval-scores.csv --human human.relevance --delta "
     "0.1 --target-power 0.9 --json"),
))
@click.argument("scores", metavar="PILOT", type=click.Path(path_type=Path))
@humans_option("The human column (one, required).", required=True)
@click.option("--delta", type=FINITE, required=True, metavar="DELTA",
              help="The difference in Pearson r with --human to detect (required).")
@metrics_option("Metric column; repeatable. Default: every numeric column that is not a "
                "human column (nor item, system, human.*).")
@raters_option("Individual rater columns: the plan then says how many annotators too; "
               "repeatable.")
@alpha_option("Significance level of the simulated Williams tests.")
@target_power_option("The power to reach.")
@seed_option()
@direction_options
@exclude_system_option
@format_options("Print the plan as a JSON object.", REPORT_FORMATS)
def command(scores: Path, humans: tuple[str, ...], delta: float, metrics: tuple[str, ...],
            raters: tuple[str, ...], alpha: float, target_power: float, seed: int,
            lower: tuple[str, ...], higher: tuple[str, ...], excluded: tuple[str, ...],
            output_format: str) -> None:
    """From the pilot table PILOT: how many items (and, with --rater, annotators) a study
    needs to separate the best metric from each other one if their Pearson r with --human
    differ by DELTA (simulated Williams tests)."""
    from judgebench.render import text as text_out
    from judgebench.services import power as planning

    if len(humans) != 1:
        raise click.UsageError("power takes one --human")
    plan = planning.power_for(scores, delta, human=humans[0], metrics=metrics, raters=raters,
                              alpha=alpha, target=target_power, seed=seed, lower=lower,
                              higher=higher, exclude_systems=excluded, log=log)
    echo_report(plan, output_format, text_out.power_report)
