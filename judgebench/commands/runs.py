"""`judgebench runs`: the recent runs in a store, one line each (or a JSON array)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.display import SafeWriter
from judgebench.engine.store import DEFAULT_STORE
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.services.runs import runs


@click.command("runs", epilog=examples(
    ("score 8 rows, then list the runs in the store (judgebench.db)",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu --limit 8 -o scores.csv "
     "&& judgebench runs"),
    ("the last 5 runs of another store, as JSON",
     "judgebench score examples/summeval-sample.jsonl -m lexical.chrf --limit 8 -o scores.csv "
     "--store my.db && judgebench runs --store my.db -n 5 --json"),
))
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True,
              type=click.Path(path_type=Path), help="The SQLite store `score` wrote.")
@click.option("-n", "limit", type=click.IntRange(min=0), default=20, show_default=True,
              help="How many runs, newest first (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of runs.")
def command(store_path: Path, limit: int, as_json: bool) -> None:
    """List the recent runs in a store: when, how long, what ran, how it ended."""
    result = runs(store_path, limit=limit)
    if as_json:
        click.echo(json_out.document(result.to_dict()))
        return
    # commands and column names come from the user's files
    print(text_out.runs(result, store_path), file=SafeWriter(sys.stdout))
