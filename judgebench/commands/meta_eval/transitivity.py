"""`judgebench meta-eval transitivity PAIRS`: cycles in pairwise verdicts and Bradley-Terry's
misfit, per judge and human column (judgebench.services.transitivity)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.meta_eval.pairwise import JUDGES_HELP
from judgebench.commands.options import ci_option, humans_option, judges_option, seed_option
from judgebench.commands.output_format import format_options


@click.command("transitivity", epilog=examples(
    ("the share of system triples whose majority preferences go round in a cycle",
     "judgebench meta-eval transitivity examples/summeval-pairs.csv --human human.relevance "
     "--bootstrap 100"),
    ("the same as JSON, with the pairs in the cycles",
     "judgebench meta-eval transitivity examples/summeval-pairs.csv --human human.relevance "
     "--bootstrap 100 --json"),
))
@click.argument("scores", metavar="PAIRS", type=click.Path(path_type=Path))
@humans_option("Human preference column; repeatable.")
@judges_option(JUDGES_HELP)
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000,
              show_default=True, help="Item resamples for the interval of the cyclic share "
                                      "(0: the default, 1000).")
@ci_option()
@seed_option()
@format_options("Print the report as a JSON object.", REPORT_FORMATS)
def command(scores: Path, humans: tuple[str, ...], judges: tuple[str, ...], bootstrap: int,
            ci: float, seed: int, output_format: str) -> None:
    """The share of system triples with cyclic majority preferences in PAIRS (a table of
    compared pairs; item-bootstrap CI), the pairs in the cycles and a likelihood-ratio test
    of Bradley-Terry, per judge and human column."""
    from judgebench.render import text as text_out
    from judgebench.services import transitivity as cycles

    report = cycles.transitivity(scores, humans=humans, judges=judges,
                                 bootstrap=bootstrap or 1000, ci=ci, seed=seed, log=log)
    echo_report(report, output_format, text_out.transitivity_report)
