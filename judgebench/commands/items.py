"""`judgebench items`: item response theory on one metric column of a scores table.

The work is `judgebench.services.items` (statistics in meta_eval.irt); this module parses the
options, calls it and prints: a JSON array of typed objects with --json (`fit`, one `system`
per system best first, one `item` per item, and `subset` / `power` where asked), otherwise a
readable report.
"""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import FINITE, OPEN_UNIT, direction_options
from judgebench.display import safe
from judgebench.engine import progress_line
from judgebench.render import json as json_out
from judgebench.render import text as text_out


def _log(message: str) -> None:
    click.echo(f"items: {safe(message)}", err=True)
    progress_line.doing(safe(message))


@click.command("items", epilog=examples(
    ("Rasch and 2PL models of whether each summary reaches ROUGE-L 0.3",
     "judgebench items examples/summeval-scores.csv --metric lexical.rougeL --threshold 0.3"),
    ("of whether ROUGE-L agrees with people's coherence",
     "judgebench items examples/summeval-scores.csv --metric lexical.rougeL --human "
     "human.coherence"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--metric", required=True, metavar="COL", help="The metric column to model.")
@click.option("--threshold", type=FINITE, metavar="T",
              help="Outcome 1 where the metric reaches T (at most T if lower is better).")
@click.option("--human", metavar="COL",
              help="Instead of --threshold: outcome 1 where the metric orders the system as "
                   "people do in at least half of its pairs within the item.")
@click.option("--model", type=click.Choice(("rasch", "2pl")), default="2pl",
              show_default=True, help="The model behind abilities, ranking and subset (both "
                                      "are fitted; flags always come from the 2PL).")
@click.option("--subset", type=click.IntRange(min=1), metavar="N",
              help="Recommend N items that best keep the system ranking.")
@click.option("--power", "power", is_flag=True,
              help="How many items would separate the top-k systems.")
@click.option("--top-k", type=click.IntRange(min=1), default=3, show_default=True)
@click.option("--alpha", type=OPEN_UNIT,
              default=0.05, show_default=True, help="Significance level for --power.")
@click.option("--target-power", type=OPEN_UNIT,
              default=0.8, show_default=True, help="Power asked of each separation.")
@click.option("--ci", type=OPEN_UNIT,
              default=0.95, show_default=True, help="Confidence level of ability intervals.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the random subsets the recommended one is compared with.")
@direction_options
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of results.")
def command(scores: Path, metric: str, threshold: float | None, human: str | None, model: str,
            subset: int | None, power: bool, top_k: int, alpha: float, target_power: float,
            ci: float, seed: int, lower: tuple[str, ...], higher: tuple[str, ...],
            as_json: bool) -> None:
    """Fit Rasch and 2PL models to the item x system outcomes of one metric of SCORES."""
    from judgebench.cli import context_host
    from judgebench.services.items import items

    result = items(scores, metric=metric, threshold=threshold, human=human, model=model,
                   subset=subset, power=power, top_k=top_k, alpha=alpha,
                   target_power=target_power, ci=ci, seed=seed, lower=lower, higher=higher,
                   log=_log, host=context_host())
    if as_json:
        click.echo(json_out.document(result.to_dict()))
    else:
        click.echo(safe(text_out.items(result)))
