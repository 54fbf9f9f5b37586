"""`judgebench runs`: the recent runs in a store, one line each (or a JSON array)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judgebench.display import SafeWriter
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.services.runs import runs
from judgebench.store import DEFAULT_STORE


@click.command("runs")
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
