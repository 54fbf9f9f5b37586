"""`judgebench runs`: the recent runs in a store, one line each (or a JSON array)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from judgebench.display import SafeWriter
from judgebench.services.runs import RunRow, runs
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
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    out = SafeWriter(sys.stdout)  # commands and column names come from the user's files
    if not result.runs:
        print(f"no runs in {store_path}", file=out)
        return
    print(f"{'ID':>4}  {'STARTED (UTC)':<19}  {'TIME':>7}  {'ENDED':<11}  {'OK':>6}  "
          f"{'FAILED':>6}  {'COST':>9}  METRICS | COMMAND", file=out)
    for run in result.runs:
        print(line(run), file=out)
        for warning in run.warnings:
            print(f"      warning: {warning}", file=out)


def line(run: RunRow) -> str:
    """One run on one line: id, start, duration, how it ended, ok and failed scores, cost,
    its columns and its command line."""
    started = run.started[:19].replace("T", " ")
    metrics = ", ".join(run.metrics or {}) or "-"
    return (f"{run.id:>4}  {started:<19}  {duration(run.wall_s):>7}  "
            f"{run.outcome or 'unrecorded':<11}  {_count(run.ok):>6}  {_count(run.failed):>6}  "
            f"{cost(run.cost_usd):>9}  {metrics} | {run.command or '-'}")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def cost(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:.4f}"


def _count(n: int | None) -> str:
    return "-" if n is None else str(n)
