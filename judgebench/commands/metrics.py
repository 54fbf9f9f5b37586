"""`judgebench metrics [NAME]`: every registered metric, or one metric's card.

The card (judgebench.metric_card) comes from the metric's own declaration: its MetricInfo and
its Options model.
"""

from __future__ import annotations

import json
import textwrap

import click

from judgebench.cli import context_host
from judgebench.display import safe
from judgebench.metric_card import MetricCard, metric_card
from judgebench.tables import Table, render


def _range(low: float | None, high: float | None) -> str:
    return f"[{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"


@click.command("metrics")
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array (one object per metric), or with NAME the card as one "
                   "JSON object.")
def command(name: str | None, as_json: bool) -> None:
    """List every metric: name, kind, required fields, direction, range and level.

    With NAME (e.g. lexical.bleu), show that metric's card: what it measures, what it needs,
    how to read it, every option with its type, default and allowed values, what to cite, and
    a command that runs it.
    """
    host = context_host()
    if name is not None:
        card = metric_card(host.metric(name))
        click.echo(json.dumps(card.to_dict(), indent=2) if as_json else safe(render_card(card)))
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


def render_card(card: MetricCard) -> str:
    """The card as text for the terminal."""
    d = card.to_dict()
    level = d["level"] + (", with a corpus score (not the mean of its segment scores)"
                          if d["has_corpus"] else "")
    facts = Table(["", ""], [
        ["kind", d["kind"]],
        ["needs", ", ".join(d["requires"]) or "nothing"],
        ["direction", "higher is better" if d["higher_is_better"] else "lower is better"],
        ["range", _range(*d["value_range"])],
        ["level", level],
        ["deterministic", "yes" if d["deterministic"] else "no"],
    ])
    empty_text = card.entry.info.empty_text
    empty = empty_text.describe() if empty_text is not None else "(not declared)"
    lines = [f"{d['name']} (version {d['version']}; plugin {d['plugin']} "
             f"{d['plugin_version']})".replace(" )", ")"),
             *_wrapped(d["description"] or "(no description)", ""), "",
             *render(facts, "text").splitlines()[1:], "", "options:",
             *_options(card), "", "empty text:", *_wrapped(empty, "  "),
             "", "citation:", *_wrapped(d["citation"] or "(none given)", "  "),
             "", "example:", f"  {d['example']}"]
    return "\n".join(lines)


def _options(card: MetricCard) -> list[str]:
    if card.options is None:
        return ["  not declared (registered as a factory function)"]
    lines = ["  none"] if not card.options else []
    if card.options:
        described = any(o.description for o in card.options)
        table = Table(["name", "type", "default", "values", *(["description"] * described)], [
            [o.name, o.type, "(required)" if o.required else _default(o.default),
             o.allowed, *([o.description] * described)] for o in card.options])
        lines = ["  " + line for line in render(table, "text").splitlines()]
    if card.extra_options:
        lines.append("  any other option is passed on (see the description)")
    return lines


def _default(value: object) -> str:
    """A default as it is written in a spec: 13a, true, 0.5; '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _wrapped(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent=indent, subsequent_indent=indent)
