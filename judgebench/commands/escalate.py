"""`judgebench escalate`: trust a judge where its confidence earns it, escalate the rest.

The work is `judgebench.services.escalate` (statistics in `meta_eval.escalation`); this module
parses the options, calls it and prints the result: per judge of the cascade its threshold,
coverage, guaranteed and held-out agreement and AUGRC, then the labelling queue; `-f json`
the result's object, with the queue's items listed.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.output_format import format_options
from judgebench.display import safe
from judgebench.render import json as json_out
from judgebench.render import text as text_out


def _log(message: str) -> None:
    click.echo(f"escalate: {safe(message)}", err=True)


@click.command("escalate", epilog=examples(
    ("the margin above which ROUGE-L's pairwise verdicts agree with people >= 0.7, if any",
     "judgebench escalate examples/summeval-verdicts.csv --judge rougeL --confidence-column "
     "rougeL.margin --human human.relevance --decimals 1 --alpha 0.3"),
    ("ROUGE-L, then chrF on what it escalates, checked on half the labels held out, priced "
     "per item, as JSON",
     "judgebench escalate examples/summeval-verdicts.csv --judge rougeL --confidence-column "
     "rougeL.margin --cascade chrf=chrf.margin --human human.relevance --decimals 1 --alpha "
     "0.3 --holdout 0.5 --seed 1 --cost rougeL=0.0001,chrf=0.002 -f json"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--judge", required=True, metavar="COL",
              help="The first judge's verdict column (missing: the judge did not score it).")
@click.option("--confidence-column", required=True, metavar="COL",
              help="The first judge's confidence: higher = surer (needed wherever it scored).")
@click.option("--human", required=True, metavar="COL",
              help="The human labels on a subset (a missing value = not labelled).")
@click.option("--cascade", "cascade", multiple=True, metavar="JUDGE=CONF[,JUDGE=CONF]",
              help="The judges after --judge, in order, each with its confidence column "
                   "(repeatable); each decides what the ones before it escalated.")
@click.option("--alpha", type=float, default=0.1, show_default=True,
              help="Kept verdicts agree with people on at least 1 - alpha of the items...")
@click.option("--delta", type=float, default=0.1, show_default=True,
              help="...with probability at least 1 - delta over the calibration labels.")
@click.option("--holdout", type=float, metavar="FRACTION",
              help="Hold out this share of the labelled rows to measure the agreement on.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="The seed of the --holdout split.")
@click.option("--decimals", type=int, default=0, show_default=True,
              help="A verdict agrees when it equals the label, both rounded to this many "
                   "places (halves away from zero).")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store the judges were scored into: each judge's recorded cost per "
                   "item prices the cascade against the strongest (last) judge on every item.")
@click.option("--cost", "costs", multiple=True, metavar="JUDGE=USD[,JUDGE=USD]",
              help="A judge's price per item in USD (repeatable; before the store's): the "
                   "cascade's cost per item against the strongest judge on every item.")
@format_options("Print one JSON object: the judges in cascade order, then the queue with "
                "its items and the cost.", formats=("text", "json"))
def command(scores: Path, judge: str, confidence_column: str, human: str,
            cascade: tuple[str, ...], alpha: float, delta: float, holdout: float | None,
            seed: int, decimals: int, store_path: Path | None, costs: tuple[str, ...],
            output_format: str) -> None:
    """Choose each judge's confidence threshold on the labelled rows of SCORES so that the
    verdicts it keeps agree with people at least 1 - alpha of the time, with probability at
    least 1 - delta (Trust or Escalate, Jung et al. 2025); rows below it go to the next judge
    of the cascade, and the rows no judge keeps to the labelling queue."""
    from judgebench.cli import context_host
    from judgebench.services.escalate import escalate, parse_cascade
    from judgebench.services.escalate_cost import parse_costs
    pairs = parse_cascade(cascade)
    result = escalate(scores, judge=judge, confidence_column=confidence_column, human=human,
                      cascade=pairs, alpha=alpha, delta=delta,
                      holdout=holdout, seed=seed, decimals=decimals, store=store_path,
                      costs=parse_costs(costs, [judge, *(j for j, _ in pairs)]),
                      log=_log, host=context_host())
    if output_format == "json":
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    else:
        click.echo(safe(text_out.escalate(result)))
