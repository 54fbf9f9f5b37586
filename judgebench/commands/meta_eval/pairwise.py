"""`judgebench meta-eval pairwise PAIRS`: pairwise judges against people on a table of compared
pairs (judgebench.services.pairwise); a JSON array with --json, otherwise one judge x
statistic table per human column (and category): value [CI], the human ceiling last."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, log
from judgebench.commands.options import (
    alpha_option,
    bootstrap_option,
    ci_option,
    failed_as_option,
    humans_option,
    judges_option,
    pairwise_options,
    resamples_option,
    seed_option,
)
from judgebench.commands.output_format import format_options
from judgebench.display import safe

JUDGES_HELP = ("Judge (columns SPEC, SPEC.ab, SPEC.ba); repeatable. Default: every .ab/.ba "
               "pair and every other column holding verdicts only.")


@click.command("pairwise", epilog=examples(
    ("chrF and ROUGE-L as pairwise judges: accuracy and kappa against people's relevance",
     "judgebench meta-eval pairwise examples/summeval-pairs.csv --human human.relevance"),
    ("against two human columns, with 200-resample bootstrap intervals and significance "
     "clusters, as JSON",
     "judgebench meta-eval pairwise examples/summeval-pairs.csv --human human.relevance "
     "--human human.coherence --bootstrap 200 --compare --resamples 200 --json"),
))
@click.argument("scores", metavar="PAIRS", type=click.Path(path_type=Path))
@humans_option("Human preference column; repeatable.")
@judges_option(JUDGES_HELP)
@pairwise_options
@bootstrap_option(0, "Item resamples for a confidence interval (0: none).")
@ci_option()
@click.option("--compare", is_flag=True,
              help="Rank the judges into significance clusters (per human column).")
@resamples_option
@alpha_option("Significance level for --compare.")
@seed_option()
@failed_as_option
@format_options("Print a JSON array of result objects.", REPORT_FORMATS)
def command(scores: Path, humans: tuple[str, ...], judges: tuple[str, ...], by: str | None,
            human_ties: str, bootstrap: int, ci: float, compare: bool, resamples: int,
            alpha: float, seed: int, failed_as: str, output_format: str) -> None:
    """Meta-evaluate pairwise judges on PAIRS, a table of compared pairs (item, system_a,
    system_b, human.* preferences, <judge>, <judge>.ab, <judge>.ba verdicts): each judge's
    accuracy per order, consistency, tie rate and kappas."""
    from judgebench.render import json as json_out
    from judgebench.render import text as text_out
    from judgebench.services.pairwise import pairwise_meta_eval

    result = pairwise_meta_eval(scores, humans=humans, judges=judges, by=by,
                                human_ties=human_ties, bootstrap=bootstrap, ci=ci, seed=seed,
                                compare=compare, resamples=resamples, alpha=alpha,
                                failed_as=failed_as, log=log)
    if output_format == "json":
        click.echo(json_out.document(result.to_dict()))
    else:
        click.echo(safe(text_out.pairwise_meta_eval(result)))
