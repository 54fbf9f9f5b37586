"""`judgebench metrics`: every registered metric with what it needs and how to read it."""

from __future__ import annotations

import json

import click

from judgebench.plugins import get_host


def _range(low: float | None, high: float | None) -> str:
    return f"[{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"


@click.command("metrics")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def command(as_json: bool) -> None:
    """List every metric: name, kind, required fields, direction, range and level."""
    host = get_host()
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
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        direction = "higher" if row["higher_is_better"] else "lower"
        level = row["level"] + ("+corpus" if row["has_corpus"] else "")
        click.echo(
            f"{row['name']:<24} {row['kind']:<9} needs {','.join(row['requires']):<18} "
            f"{direction:<6} {_range(*row['value_range']):<12} {level:<14} "
            f"options: {', '.join(row['options']) or '-'}"
        )
