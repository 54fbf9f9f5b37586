"""`judgebench estimate`: what a judge's scores say about people's, corrected by a few labels.

The work is `judgebench.services.estimate` (statistics in `meta_eval.estimation` and
`meta_eval.rogan_gladen`); this module parses the options, calls it and prints the result:
per system, human-only, judge-only (biased) and the corrected estimates, each with its
signature; `-f json` the result's objects, `-f csv|markdown|latex` one row per object.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import direction_options
from judgebench.commands.output_format import format_options
from judgebench.display import safe
from judgebench.render import json as json_out
from judgebench.render import text as text_out

#: The fields a markdown or latex table shows (csv has every field, these first).
COLUMNS = ("type", "system", "against", "method", "point", "lower", "upper", "labels",
           "items", "effective_labels", "labels_worth", "moved", "undefined",
           "labels_to_reach", "rank", "rank_low", "rank_high", "cluster", "signature")


def _log(message: str) -> None:
    click.echo(f"estimate: {safe(message)}", err=True)


@click.command("estimate", epilog=examples(
    ("a pass rate (ROUGE-L >= 0.3 against relevance >= 4) with the sensitivity/specificity "
     "correction", "judgebench estimate examples/summeval-scores.csv --judge lexical.rougeL "
     "--human human.relevance --statistic pass-rate --threshold 0.3 --human-threshold 4 "
     "--by none"),
    ("paired differences between systems and the ranking with its uncertainty, as JSON",
     "judgebench estimate examples/summeval-scores.csv --judge lexical.chrf --human "
     "human.relevance --compare -f json"),
    ("each system's win rate against each other one from chrF's pairwise verdicts",
     "judgebench estimate examples/summeval-pairs.csv --judge lexical.chrf --human "
     "human.relevance --statistic win-rate"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--judge", required=True, metavar="COL",
              help="The judge's column: a score for every row.")
@click.option("--human", required=True, metavar="COL",
              help="The human column: labels on a subset (a missing value = not labelled).")
@click.option("--by", type=click.Choice(("system", "none")), default="system",
              show_default=True, help="One estimate per system, or one over every row.")
@click.option("--statistic", type=click.Choice(("mean", "pass-rate", "win-rate")),
              default="mean", show_default=True,
              help="Estimate the human mean, the human pass rate, or (SCORES a pairwise "
                   "table) each system's win rate against each other one.")
@click.option("--threshold", type=float, metavar="T",
              help="pass-rate: a judge score >= T passes (without it the judge must be 0/1).")
@click.option("--human-threshold", type=float, metavar="T",
              help="pass-rate: a human label >= T passes (without it labels must be 0/1).")
@click.option("--method", "methods", multiple=True,
              type=click.Choice(("ppi", "stratified", "weighted", "rogan-gladen")),
              help="Corrected estimates (repeatable): ppi = PPI++; stratified (with "
                   "--strata); weighted (with --inclusion-probability); rogan-gladen "
                   "(pass-rate). [default: ppi, and rogan-gladen for a pass rate]")
@click.option("--strata", metavar="COL",
              help="The column of strata labels were sampled uniformly within.")
@click.option("--inclusion-probability", metavar="COL",
              help="The column of each item's probability of being labelled.")
@click.option("--compare", is_flag=True,
              help="Paired differences between every two systems on their common items, "
                   "and the ranking with each rank's interval and significance cluster.")
@click.option("--target-width", type=float, metavar="W",
              help="How many more labels bring each interval to width W, and which items "
                   "to label next.")
@click.option("--next", "next_items", type=click.IntRange(min=1), default=10,
              show_default=True, help="With --target-width: at most this many items named.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Confidence level of every interval.")
@direction_options
@format_options("Print a JSON array: one `estimate` object per (system, method) (a win "
                "rate: per (system, against, method)), then with --compare one `difference` "
                "per pair of systems and one `rank` per system.")
def command(scores: Path, judge: str, human: str, by: str, statistic: str,
            threshold: float | None, human_threshold: float | None, methods: tuple[str, ...],
            strata: str | None, inclusion_probability: str | None, compare: bool,
            target_width: float | None, next_items: int, confidence: float,
            lower: tuple[str, ...], higher: tuple[str, ...], output_format: str) -> None:
    """Estimate people's mean (or pass rate) per system from a JUDGE column that scored every
    row of SCORES and the human labels on a subset: human-only, judge-only (biased), and the
    corrected PPI++ estimates, with what the judge was worth in labels. With --statistic
    win-rate, SCORES is a pairwise table and each system's win rate against each other one
    is estimated from the judge's verdicts and people's on a subset of the pairs."""
    from judgebench.cli import context_host
    from judgebench.render.formats import render
    from judgebench.render.table import results_table
    from judgebench.services.estimate import estimate

    result = estimate(scores, judge=judge, human=human, by=None if by == "none" else by,
                      statistic=statistic, threshold=threshold,
                      human_threshold=human_threshold, methods=methods, strata=strata,
                      inclusion_probability=inclusion_probability, compare=compare,
                      target_width=target_width, next_items=next_items,
                      confidence=confidence, lower=lower, higher=higher, log=_log,
                      host=context_host())
    if output_format == "json":
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    elif output_format == "text":
        click.echo(safe(text_out.estimate(result)))
    else:
        table = results_table(result.to_dict(), output_format, COLUMNS)
        click.echo(safe(render(table, output_format)))
