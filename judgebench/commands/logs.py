"""`judgebench logs [RUN]`: each score a run wrote, with its status and reason, and for judges
the prompt, the raw answer, the parsed verdict, tokens, cost and latency."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import click

from judgebench.display import SafeWriter
from judgebench.models import Status
from judgebench.services.runs import Call, LogEntry, logs
from judgebench.store import DEFAULT_STORE, FAILED_STATUSES

STATUSES = [str(s) for s in Status]


@click.command("logs")
@click.argument("run", type=int, required=False)
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True,
              type=click.Path(path_type=Path), help="The SQLite store `score` wrote.")
@click.option("--metric", metavar="M",
              help="Only this metric: a column as given to -m, a metric name or a signature.")
@click.option("--status", "statuses", multiple=True, type=click.Choice(STATUSES),
              help="Only scores with this status (repeatable).")
@click.option("--failed", is_flag=True, help="Only failed scores (error, parse_error, refused).")
@click.option("--item", metavar="I", help="Only this item.")
@click.option("--system", metavar="S", help="Only this system.")
@click.option("-n", "limit", type=click.IntRange(min=0), default=50, show_default=True,
              help="At most this many scores, in the order the run wrote them (0: all).")
@click.option("--cache", "cache_path", type=click.Path(path_type=Path),
              help="Judge cache to read prompts and answers from (default: the run's).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of scores.")
def command(run: int | None, store_path: Path, metric: str | None, statuses: tuple[str, ...],
            failed: bool, item: str | None, system: str | None, limit: int,
            cache_path: Path | None, as_json: bool) -> None:
    """Show the scores RUN wrote (default: the latest run): status, reason, value and, for
    judges, the prompt, the answer, the verdict, tokens, cost and latency."""
    chosen = list(statuses) + ([str(s) for s in FAILED_STATUSES] if failed else [])
    result = logs(store_path, run, metric=metric, statuses=list(dict.fromkeys(chosen)),
                  item=item, system=system, limit=limit, cache=cache_path)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
        return
    out = SafeWriter(sys.stdout)  # ids, prompts and answers come from users and models
    for entry in result.entries:
        print(block(entry), file=out)
    shown = len(result.entries)
    err = SafeWriter(sys.stderr)
    if shown < result.matched:
        print(f"showing {shown} of {result.matched} scores of run {result.run.id}: -n 0 shows "
              "them all", file=err)
    elif not shown:
        reused = (f" (it reused {result.run.reused} scores of earlier runs)"
                  if result.run.reused else "")
        print(f"run {result.run.id} wrote no score that matches{reused}", file=err)


def block(entry: LogEntry) -> str:
    """One score as a block of lines: a head line, then what the judge was asked and said."""
    where = (f"item {entry.item!r} system {entry.system!r}" if entry.item is not None
             else f"corpus, system {entry.system!r}")
    head = f"run {entry.run_id} | {entry.column or entry.metric} | {where} | {entry.status}"
    if entry.reason:
        head += f": {entry.reason}"
    lines = [head]
    facts = [f"value {'-' if entry.value is None else f'{entry.value:g}'}"]
    if entry.tokens_in is not None or entry.tokens_out is not None:
        facts.append(f"tokens {_n(entry.tokens_in)} in / {_n(entry.tokens_out)} out")
    if entry.cost_usd is not None:
        facts.append(f"cost ${entry.cost_usd:.6f}")
    if entry.latency_s is not None:
        facts.append(f"latency {entry.latency_s:.2f}s")
    lines.append("  " + "   ".join(facts))
    for number, call in enumerate(entry.calls, start=1):
        lines += _call_lines(call, number, len(entry.calls))
    if entry.raw and not any(call.answer for call in entry.calls):
        lines += ["  answer:", _indent(entry.raw)]
    if entry.rationale:
        lines += ["  rationale:", _indent(entry.rationale)]
    if entry.extra:
        lines.append(f"  extra: {json.dumps(entry.extra, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def _call_lines(call: Call, number: int, total: int) -> list[str]:
    title = f"  call {number} of {total} ({call.key[:12]})"
    if not call.found:
        return [f"{title}: not in the judge cache (another --cache, or cache=false)"]
    lines = [f"{title}:"]
    if call.messages:
        for message in call.messages:
            lines += [f"    [{message.get('role', '?')}]", _indent(message.get("content", ""), 6)]
    elif call.prompt is not None:
        lines += ["    [prompt]", _indent(call.prompt, 6)]
    if call.error:
        lines.append(f"    failed: {call.error}")
    elif call.answer is not None:
        lines += ["    [answer]", _indent(call.answer, 6)]
    return lines


def _indent(text: str, spaces: int = 4) -> str:
    return textwrap.indent(text.rstrip("\n") or "(empty)", " " * spaces, lambda _: True)


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)
