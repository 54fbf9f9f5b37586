"""`judgebench compare-judges`: two judge columns of one table, side by side.

The work is `judgebench.services.compare_judges` (statistics in
`meta_eval.judge_comparison`); this module parses the options, calls it and prints the
result: a JSON array with --json, otherwise one line per statistic.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import FINITE, OPEN_UNIT, failed_as_option
from judgebench.display import safe
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.tables import destinations
from meta_eval.pairwise import DEFAULT_TIES as HUMAN_TIES_DEFAULT


@click.command("compare-judges", epilog=examples(
    ("BLEU and chrF as two judges: flips, kappa, KL/JS of their scores",
     "judgebench compare-judges examples/summeval-scores.csv --a lexical.bleu --b lexical.chrf"),
    ("and whether their disagreements go towards or away from people's coherence",
     "judgebench compare-judges examples/summeval-scores.csv --a lexical.bleu --b lexical.chrf "
     "--human human.coherence"),
))
@click.argument("table", type=click.Path(path_type=Path))
@click.option("--a", "judge_a", required=True, metavar="COL",
              help="The first judge's column (the reference side of a flip).")
@click.option("--b", "judge_b", required=True, metavar="COL", help="The second judge's column.")
@click.option("--human", metavar="COL",
              help="Human label column: negative/positive flips, accuracy, kappa.")
@click.option("--human-ties", type=click.Choice(("drop", "class")), default=None,
              help=f"Pairwise tables: pairs people called a tie: drop = left out of the "
                   f"statistics against people; class = tie is a third label a judge must "
                   f"match. [default: {HUMAN_TIES_DEFAULT}, as meta-eval pairwise]")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store the table was scored into: KL/JS between the judges' score "
                   "distributions (G-Eval).")
@click.option("--tolerance", type=FINITE, default=0.0, show_default=True,
              help="Scores (wide tables) that differ by at most this much agree.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Item resamples for each confidence interval (0: none).")
@click.option("--ci", type=OPEN_UNIT,
              default=0.95, show_default=True, help="Confidence level of the interval.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array to stdout.")
@failed_as_option
def command(table: Path, judge_a: str, judge_b: str, human: str | None,
            human_ties: str | None, store_path: Path | None, tolerance: float, bootstrap: int,
            ci: float, seed: int, as_json: bool, failed_as: str) -> None:
    """Compare two judges (columns of a pairwise or wide scores TABLE): flips, kappa, flips
    towards or away from people, and the divergence of their score distributions."""
    from judgebench.services.compare_judges import compare_judges

    destinations.check([destinations.read("TABLE", table),
                        *([destinations.read("--store", store_path)]
                          if store_path is not None else [])])
    result = compare_judges(table, a=judge_a, b=judge_b, human=human, store=store_path,
                            tolerance=tolerance, bootstrap=bootstrap, seed=seed, ci=ci,
                            human_ties=human_ties, failed_as=failed_as)
    for note in result.notes:
        click.echo(f"compare-judges: {safe(note)}", err=True)
    if as_json:
        click.echo(json_out.document(result.to_dict()))
        return
    click.echo(safe(text_out.compare_judges(result, table=table, judge_a=judge_a,
                                            judge_b=judge_b, human=human)))
