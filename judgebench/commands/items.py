"""`judgebench items`: item response theory on one metric column of a scores table.

The work is `judgebench.services.items` (statistics in meta_eval.irt); this module parses the
options, calls it and prints: a JSON array of typed objects with --json (`fit`, one `system`
per system best first, one `item` per item, and `subset` / `power` where asked), otherwise a
readable report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgebench.commands.options import direction_options
from judgebench.display import safe

if TYPE_CHECKING:
    from judgebench.services.items import ItemsResult

SHOWN_FLAGS = 20


def _log(message: str) -> None:
    click.echo(f"items: {safe(message)}", err=True)


@click.command("items")
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--metric", required=True, metavar="COL", help="The metric column to model.")
@click.option("--threshold", type=float, metavar="T",
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
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Significance level for --power.")
@click.option("--target-power", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.8, show_default=True, help="Power asked of each separation.")
@click.option("--ci", type=click.FloatRange(0, 1, min_open=True, max_open=True),
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
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(safe(render(result)))


def _num(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


def render(result: ItemsResult) -> str:
    summary = result.summary()
    lines = [f"{result.metric} · {result.model} · outcome: {result.outcome}",
             f"{summary['informative_items']} of {summary['items']} items informative, "
             f"{summary['systems']} systems; EM {summary['iterations']} cycles, converged "
             f"{summary['converged']}; log-likelihood Rasch {result.rasch_loglik:.2f}, "
             f"2PL {result.two_pl.loglik:.2f}", ""]
    rows = result.system_rows()
    width = max(len(r["system"]) for r in rows)
    lines.append(f"  {'rank':>4}  {'system':<{width}}  ability  [{int(result.ci * 100)}% CI]"
                 "        raw")
    for r in rows:
        interval = (f"[{_num(r['ci_low'])}, {_num(r['ci_high'])}]" if r["ci_low"] is not None
                    else f"({r['extreme']})")
        lines.append(f"  {r['rank']:>4}  {r['system']:<{width}}  {_num(r['ability']):>7}  "
                     f"{interval:<20}  {r['raw_score']}/{r['answered']}")
    flags = [r for r in result.item_rows() if r["flag"]]
    lines += ["", f"flagged items: {len(flags)}"]
    lines += [f"  {r['item']}: {r['flag']}" for r in flags[:SHOWN_FLAGS]]
    if len(flags) > SHOWN_FLAGS:
        lines.append(f"  ... and {len(flags) - SHOWN_FLAGS} more (--json lists all)")
    sub = result.subset_row()
    if sub is not None:
        lines += ["", f"recommended subset: {sub['size']} items ({sub['method']}); Kendall "
                      f"tau with the full ranking {_num(sub['kendall_tau'])} (random subsets "
                      f"of that size: {_num(sub['random_kendall_tau'])} ± "
                      f"{_num(sub['random_kendall_tau_sd'])}, {sub['random_draws']} draws)",
                  "  " + ", ".join(sub["items"])]
    pw = result.power_row()
    if pw is not None:
        needed = pw["items_needed"]
        lines += ["", f"power (top {pw['top_k']}, alpha {pw['alpha']}, power {pw['power']}; "
                      f"{pw['method']}): {pw['items_now']} informative items now; "
                      f"{'n/a (tied abilities)' if needed is None else int(needed)} needed"]
        for p in pw["pairs"]:
            lines.append(f"  {p['better']} > {p['worse']}: difference {p['difference']:.3f}, "
                         f"z {p['z']:.2f}, p {p['p_value']:.3g}, "
                         f"{'separated' if p['separated'] else 'not separated'}; items "
                         f"needed {_num(p['items_needed'], '.0f')}")
    if summary["notes"]:
        lines += ["", *[f"note: {n}" for n in summary["notes"]]]
    return "\n".join(lines)
