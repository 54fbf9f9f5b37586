"""`judgebench labels stats --store S [--scores TABLE]`: labels per item, agreement between
annotators, and judges against the labels (`judgebench.services.label_stats`)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import finite_float
from judgebench.commands.output_format import format_options
from judgebench.display import safe


@click.command("stats", epilog=examples(
    ("how often two annotators agree on relevance",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 && judgebench labels stats --store runs.db"),
    ("and how well ROUGE-L and chrF follow them, as JSON",
     "judgebench labels import examples/summeval-labels.csv --store runs.db --criterion "
     "relevance --scale 1-5 && judgebench labels stats --store runs.db --scores "
     "examples/summeval-scores.csv --judge lexical.rougeL --judge lexical.chrf -f json"),
))
@click.option("--store", "store_path", required=True, type=click.Path(path_type=Path),
              help="The store holding the labels.")
@click.option("--criterion", "criteria", multiple=True, metavar="NAME",
              help="This criterion only (repeatable; default: every one).")
@click.option("--scores", type=click.Path(path_type=Path),
              help="A scores or pairwise table: each judge column against the labels.")
@click.option("--judge", "judges", multiple=True, metavar="COL",
              help="A judge column of --scores (repeatable; default: every one that fits).")
@click.option("--threshold", type=finite_float(), metavar="T",
              help="Binary criteria: a judge score >= T is 1 (else scores must be 0/1).")
@click.option("--scale-level", type=click.Choice(("interval", "ordinal")),
              default="interval", show_default=True,
              help="Krippendorff's alpha of a scale at this level of measurement.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Key resamples of each bootstrap interval (0: none).")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Confidence level of every interval.")
@click.option("--seed", type=int, default=0, show_default=True, help="The bootstrap's seed.")
@click.option("--weights", metavar="none|linear|quadratic|FILE.csv",
              help="Cohen's kappa of each annotator pair with these disagreement weights, or "
                   "a CSV matrix (no header; row i, column j: the cost of codes i and j over "
                   "the criterion's declared codes: asymptotic interval only). Default: "
                   "quadratic for a scale, none otherwise.")
@format_options("Print one JSON object: per criterion its coverage, agreement and judges.",
                formats=("text", "json"))
def command(store_path: Path, criteria: tuple[str, ...], scores: Path | None,
            judges: tuple[str, ...], threshold: float | None, scale_level: str,
            bootstrap: int, confidence: float, seed: int, weights: str | None,
            output_format: str) -> None:
    """Per criterion: items with 1, 2, 3+ labels; Krippendorff's alpha, Cohen's kappa per
    annotator pair (asymptotic se, interval and p beside the bootstrap), Fleiss' kappa,
    Randolph's free-marginal kappa and the human ceiling; with --scores, each judge column
    against the labels (accuracy, kappa, TPR/TNR, confusion; or correlations for a scale)."""
    from judgebench.render import json as json_out
    from judgebench.render import labels as render
    from judgebench.services.label_stats import label_stats

    result = label_stats(store_path, names=criteria, scores=scores, judges=judges,
                         threshold=threshold, scale_level=scale_level, bootstrap=bootstrap,
                         confidence=confidence, seed=seed, weights=weights)
    if output_format == "json":
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    else:
        click.echo(safe(render.stats(result)))
