"""`judgebench logs [RUN]`: each score a run wrote, with its status and reason, and for judges
the prompt, the raw answer, the parsed verdict, tokens, cost and latency."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.display import SafeWriter
from judgebench.engine.store import DEFAULT_STORE, FAILED_STATUSES
from judgebench.models import Status
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.services.runs import logs

STATUSES = [str(s) for s in Status]


@click.command("logs", epilog=examples(
    ("score 4 rows, then show what the latest run wrote",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu --limit 4 -o scores.csv "
     "&& judgebench logs"),
    ("only the failed scores of the latest run",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu --limit 4 -o scores.csv "
     "&& judgebench logs --failed"),
    ("one system's scores, as JSON",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu --limit 4 -o scores.csv "
     "&& judgebench logs --system M0 --json"),
))
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
        click.echo(json_out.document(result.to_dict(), ensure_ascii=False))
        return
    # ids, prompts and answers come from users and models
    print(text_out.logs(result), end="", file=SafeWriter(sys.stdout))
    note = text_out.logs_note(result)
    if note is not None:
        print(note, file=SafeWriter(sys.stderr))
