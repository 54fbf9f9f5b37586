"""`judgebench plugins`: every plugin with its version and hooks, and why a broken one failed."""

from __future__ import annotations

import json

import click

from judgebench.cli import context_host


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def command(as_json: bool) -> None:
    """List installed plugins, their versions and the hooks they implement."""
    rows = context_host().describe()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        status = f"FAILED: {row['error']}" if row["error"] else ", ".join(row["hooks"])
        click.echo(f"{row['name']:<24} {row['version']:<10} {status}")
