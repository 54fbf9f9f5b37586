"""`judgebench plugins`: every plugin with its version and hooks, and why a broken one failed."""

from __future__ import annotations

import click

from judgebench.cli import context_host
from judgebench.commands.examples import examples
from judgebench.render import json as json_out
from judgebench.render import text as text_out


@click.command("plugins", epilog=examples(
    ("the installed plugins, their versions and hooks",
     "judgebench plugins"),
    ("with a local plugin file loaded too",
     "judgebench -p examples/judgebench-wordcount/judgebench_wordcount.py plugins"),
))
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def command(as_json: bool) -> None:
    """List installed plugins, their versions and the hooks they implement."""
    rows = context_host().describe()
    if as_json:
        click.echo(json_out.document(rows))
    elif rows:
        click.echo(text_out.plugins(rows))
