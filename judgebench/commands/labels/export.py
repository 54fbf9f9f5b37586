"""`judgebench labels export --store S -o human.csv`: a store's labels as the human table
(`judgebench.services.label_export`)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.output_format import format_options
from judgebench.display import safe


@click.command("export", epilog=examples(
    ("the labels as a human table: human.relevance (the mean) and one column per annotator",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 && judgebench labels export --store runs.db -o human.csv"),
    ("one criterion, as JSONL",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 && judgebench labels export --store runs.db --criterion "
     "relevance -o human.jsonl"),
))
@click.option("--store", "store_path", required=True, type=click.Path(path_type=Path),
              help="The store holding the labels.")
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path, writable=True),
              help="The human table to write (.csv, .jsonl or .parquet).")
@click.option("--criterion", "criteria", multiple=True, metavar="NAME",
              help="Export this criterion (repeatable; default: every one, all of one kind).")
@format_options("Print what was written as one JSON object.", formats=("text", "json"))
def command(store_path: Path, output: Path, criteria: tuple[str, ...],
            output_format: str) -> None:
    """Write the labels of a store as a human table: one row per item and system (or pair),
    human.<criterion> (people's value: the annotators' mean, the choice most gave, a pair's
    agreed answer) and human.<criterion>.<annotator> per annotator, each answer as given (a
    number, a choice's name, a/b/tie); can't tell and skip are empty cells."""
    from judgebench.render import json as json_out
    from judgebench.render import labels as render
    from judgebench.services.label_export import export_labels

    result = export_labels(store_path, output, names=criteria)
    if output_format == "json":
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    else:
        click.echo(safe(render.exported(result)), err=True)
