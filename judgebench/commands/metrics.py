"""`judgebench metrics [NAME]`: every registered metric, or one metric's card.

The card (judgebench.metric_card) comes from the metric's own declaration: its MetricInfo and
its Options model.
"""

from __future__ import annotations

import click

from judgebench.cli import context_host
from judgebench.commands.examples import examples
from judgebench.display import safe
from judgebench.metric_card import metric_card
from judgebench.render import json as json_out
from judgebench.render import text as text_out


@click.command("metrics", epilog=examples(
    ("every registered metric",
     "judgebench metrics"),
    ("BLEU's card: what it measures, its options and defaults, what to cite",
     "judgebench metrics lexical.bleu"),
    ("the card of a local plugin's metric",
     "judgebench -p examples/judgebench-wordcount/judgebench_wordcount.py metrics "
     "wordcount.ratio"),
))
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array (one object per metric), or with NAME the card as one "
                   "JSON object.")
def command(name: str | None, as_json: bool) -> None:
    """List every metric: its name, kind and what it is, one line each.

    With NAME (e.g. lexical.bleu), show that metric's card: what it measures, what it needs,
    how to read it, every option with its type, default and allowed values, what to cite, and
    a command that runs it.
    """
    host = context_host()
    if name is not None:
        card = metric_card(host.metric(name))
        click.echo(json_out.document(card.to_dict()) if as_json
                   else safe(text_out.metric_card(card)))
        return
    entries = sorted((host.metrics() | host.sentinels()).values(), key=lambda e: e.name)
    rows = []
    for entry in entries:
        info = entry.info
        options = entry.options_model
        rows.append({
            **info.model_dump(mode="json"),
            "plugin": entry.plugin,
            "options": sorted(options.model_fields) if options is not None else [],
        })
    if as_json:
        click.echo(json_out.document(rows))
    elif rows:
        click.echo(safe(text_out.metrics(rows)))
