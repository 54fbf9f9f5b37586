"""`judgebench meta-eval spans SCORES HUMAN`: each span-marking judge's (judge.mqm) stored
error spans against people's: character- and span-level precision, recall and F1
(judgebench.services.spans)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import REPORT_FORMATS, echo_report, log
from judgebench.commands.options import metrics_option
from judgebench.commands.output_format import format_options

EXAMPLES = examples(
    ("two TED segments marked by the embedded MQM judge, its spans against people's",
     "judgebench score examples/ted-mqm-sample.jsonl -m judge.mqm:examples=false,max_errors=2 "
     "--limit 2 -o mqm.csv --store mqm.db && judgebench meta-eval spans mqm.csv "
     "examples/ted-mqm-spans.jsonl --store mqm.db"),
    ("one segment, the report as JSON",
     "judgebench score examples/ted-mqm-sample.jsonl -m judge.mqm:examples=false,max_errors=2 "
     "--limit 1 -o mqm.csv --store mqm.db && judgebench meta-eval spans mqm.csv "
     "examples/ted-mqm-spans.jsonl --store mqm.db --json"),
    ("another system's spans from a plain JSONL file against people's",
     "judgebench meta-eval spans examples/ted-mqm-predicted.jsonl "
     "examples/ted-mqm-spans.jsonl --spans-column spans"),
)


@click.command("spans", epilog=EXAMPLES)
@click.argument("scores", type=click.Path(path_type=Path))
@click.argument("human", metavar="HUMAN")
@metrics_option("Span-marking metric column; repeatable. Default: every column whose "
                "stored scores carry spans.")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="The store `score` wrote the spans to (default: the one the sidecar "
                   "names, else judgebench.db).")
@click.option("--spans-column", "spans_columns", multiple=True, metavar="COL",
              help="SCORES is a plain table of predicted spans (no sidecar, no store): one "
                   "row per (item, system), COL a JSON list of span objects (start, end, "
                   "severity: the schema judge.mqm writes); repeatable.")
@format_options("Print the report as a JSON object.", REPORT_FORMATS)
def command(scores: Path, human: str, metrics: tuple[str, ...], store_path: Path | None,
            spans_columns: tuple[str, ...], output_format: str) -> None:
    """Error spans: each span-marking judge's (judge.mqm) spans, stored when SCORES was
    scored (or in SCORES' --spans-column columns), against people's in HUMAN, a JSONL file
    (item, system, start, end, severity) or a suite name: character- and span-level
    precision, recall and F1."""
    from judgebench.cli import given_host
    from judgebench.render.spans import spans_report
    from judgebench.services.spans import span_meta_eval

    if spans_columns and (metrics or store_path):
        raise click.UsageError("--spans-column reads the spans from SCORES itself: "
                               f"{'--metric' if metrics else '--store'} does not go with it")
    result = span_meta_eval(scores, human, metrics=metrics, store=store_path,
                            host=given_host(), log=log, spans_columns=spans_columns)
    echo_report(result, output_format, spans_report)
