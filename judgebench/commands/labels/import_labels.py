"""`judgebench labels import FILE --store S --criterion NAME`: a file of labels into a store
(`judgebench.services.label_import`)."""

from __future__ import annotations

import re
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import criterion_options
from judgebench.commands.output_format import format_options
from judgebench.display import safe
from judgebench.errors import InputError

_SCALE = re.compile(r"^\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*-\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)"
                    r"\s*$")


def parse_scale(text: str) -> tuple[float, float]:
    """`--scale LOW-HIGH` as (low, high)."""
    found = _SCALE.match(text)
    if found is None:
        raise InputError(f"{text!r} is not LOW-HIGH (such as 1-5)", field="--scale")
    try:
        return float(found.group(1)), float(found.group(2))
    except ValueError:
        raise InputError(f"{text!r} is not LOW-HIGH (such as 1-5)", field="--scale") from None


def parse_step(text: str) -> float | None:
    """`--step S|any` (any: every value between the scale's ends)."""
    if text.strip().lower() == "any":
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{text!r} is not a number or 'any'", field="--step") from None


def criterion_kind(scale: str | None, binary: bool, choices: str | None, pairwise: bool
                   ) -> str | None:
    given = [n for n, on in (("--scale", scale is not None), ("--binary", binary),
                             ("--choices", choices is not None), ("--pairwise", pairwise))
             if on]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)}: a criterion has one kind", field=given[1])
    return {"--scale": "scale", "--binary": "binary", "--choices": "choices",
            "--pairwise": "pairwise"}[given[0]] if given else None


@click.command("import", epilog=examples(
    ("two annotators' relevance labels (1-5) of the SummEval sample into a store",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 --description 'Does the summary keep the important content?'"),
    ("the same file again: nothing changes",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 && judgebench labels import examples/summeval-labels.csv "
     "--store runs.db --criterion relevance"),
))
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--store", "store_path", required=True,
              type=click.Path(path_type=Path, writable=True),
              help="The store the labels go into (created, or upgraded in place).")
@click.option("--criterion", required=True, metavar="NAME",
              help="What the labels judge (no dots or colons in the name).")
@click.option("--annotator", metavar="NAME",
              help="Who gave every label of the file (else the file's annotator column).")
@criterion_options("Whether the labelling page shows the reference.")
@click.option("--column", metavar="COL",
              help="The column of values (default: value, else human.<criterion>, else "
                   "<criterion>).")
@format_options("Print what was imported as one JSON object.", formats=("text", "json"))
def command(file: Path, store_path: Path, criterion: str, annotator: str | None,
            scale: str | None, step: str, binary: bool, choices: str | None, pairwise: bool,
            description: str | None, show_reference: bool | None, column: str | None,
            output_format: str) -> None:
    """Import people's labels from FILE (CSV, JSONL or Parquet: item, system, or system_a and
    system_b for a pairwise criterion, and a value column; optionally annotator, status,
    critique) into a store. Every row is checked first: one bad row writes nothing."""
    from judgebench.render import json as json_out
    from judgebench.render import labels as render
    from judgebench.services.label_import import import_labels
    from judgebench.tables import destinations

    destinations.check([destinations.read("FILE", file),
                        destinations.database("--store", store_path)])
    kind = criterion_kind(scale, binary, choices, pairwise)
    low, high = parse_scale(scale) if scale is not None else (None, None)
    result = import_labels(
        file, store=store_path, criterion=criterion, annotator=annotator, kind=kind,
        low=low, high=high, step=parse_step(step),
        choices=tuple(c.strip() for c in choices.split(",")) if choices else (),
        description=description, show_reference=show_reference, column=column)
    if output_format == "json":
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    else:
        click.echo(safe(render.imported(result)))
