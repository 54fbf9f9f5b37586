"""`judgebench combine`: a learned, cross-fitted combination of metric columns.

The work is `judgebench.services.combine`; this module parses the options, calls it and
prints what it did: the new column (a signature naming inputs, model, folds and seed), and
the out-of-fold correlation of the combination next to each component's and the best one's.
`--json` prints a JSON array: one `combination` object, then one `correlation` per setting.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import FINITE, direction_options
from judgebench.display import safe
from judgebench.engine import progress_line
from judgebench.render import json as json_out
from judgebench.render import text as text_out


def _log(message: str) -> None:
    click.echo(f"combine: {safe(message)}", err=True)
    progress_line.doing(safe(message))


@click.command("combine", epilog=examples(
    ("a cross-fitted ridge combination of BLEU, chrF and ROUGE-L for coherence",
     "judgebench combine examples/summeval-scores.csv --human human.coherence --metric "
     "lexical.bleu --metric lexical.chrf --metric lexical.rougeL --folds 4 -o combined.csv"),
    ("an increasing (isotonic) combination for relevance",
     "judgebench combine examples/summeval-scores.csv --human human.relevance --metric "
     "lexical.bleu --metric lexical.chrf --metric lexical.rougeL --folds 4 --model isotonic -o "
     "combined.csv"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--human", required=True, metavar="COL", help="The human column to fit.")
@click.option("--metric", "metrics", multiple=True, required=True, metavar="COL",
              help="A metric column to combine; repeatable.")
@click.option("--model", type=click.Choice(("ridge", "isotonic", "gp")), default="ridge",
              show_default=True,
              help="ridge; isotonic = ridge then an increasing isotonic map; gp = Gaussian "
                   "process regression (ARD RBF + white noise kernel).")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Folds over items for cross-fitting.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--alpha", type=FINITE, default=1.0, show_default=True,
              help="Ridge penalty (ridge, isotonic).")
@click.option("--gp-max-rows", type=click.IntRange(min=10), default=600, show_default=True,
              help="gp: at most this many training rows per fit (a seeded sample).")
@click.option("--statistic", default="kendall", show_default=True,
              help="Statistic of the out-of-fold report.")
@direction_options
@click.option("-o", "--output", "out", required=True,
              type=click.Path(path_type=Path, writable=True),
              help="The table with the combined column (CSV, JSONL or Parquet), and its "
                   ".meta.json.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of results.")
def command(scores: Path, human: str, metrics: tuple[str, ...], model: str, folds: int,
            seed: int, alpha: float, gp_max_rows: int, statistic: str,
            lower: tuple[str, ...], higher: tuple[str, ...], out: Path,
            as_json: bool) -> None:
    """Fit a combination of metric columns of SCORES to a human column, out of fold."""
    from judgebench.cli import context_host
    from judgebench.services.combine import combine

    _check_statistic(statistic)
    result = combine(scores, human=human, metrics=metrics, out=out, model=model, folds=folds,
                     seed=seed, alpha=alpha, gp_max_rows=gp_max_rows, statistic=statistic,
                     lower=lower, higher=higher, log=_log, host=context_host())
    if as_json:
        click.echo(json_out.document(result.to_dict()))
    else:
        click.echo(safe(text_out.combine(result)))


def _check_statistic(statistic: str) -> None:
    from judgebench.errors import InputError
    from meta_eval.levels import check_options

    try:
        for level, grouping in (("segment", "none"), ("segment", "item"), ("system", "none")):
            check_options(statistic, level, grouping)
    except ValueError as exc:
        raise InputError(str(exc), field="--statistic") from None
