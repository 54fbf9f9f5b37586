"""`judgebench meta-eval SCORES --human COL`: the default of the `meta-eval` group, how well
each metric column of a scores table follows each human column.

The work is `judgebench.services.meta_eval` (statistics in meta_eval); this module parses the
options, calls it and prints the results (judgebench.render): a readable table per human
column and statistic, metrics sorted best first; a JSON array with --json (--format json); one
csv, markdown or latex table with --format. The missingness bounds, system sensitivity and
sequential replay are sections of this report, so they stay options here.
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.meta_eval._shared import GROUPINGS, LEVELS, log, views
from judgebench.commands.options import (
    alpha_option,
    bootstrap_option,
    ci_option,
    direction_options,
    epsilon_option,
    exclude_system_option,
    failed_as_option,
    finite_float,
    humans_option,
    metrics_option,
    raters_option,
    resamples_option,
    seed_option,
    statistics_option,
    test_option,
)
from judgebench.commands.output_format import format_options
from judgebench.display import safe

EXAMPLES = examples(
    ("how well each metric column follows people's coherence (Pearson, segment level)",
     "judgebench meta-eval examples/summeval-scores.csv --human human.coherence"),
    ("Kendall's tau at the system level, the metrics ranked into significance clusters",
     "judgebench meta-eval examples/summeval-scores.csv --human human.relevance --level system "
     "--statistic kendall --compare --resamples 200"),
    ("within each document, with 200-resample bootstrap intervals",
     "judgebench meta-eval examples/summeval-scores.csv --human human.consistency --grouping "
     "item --bootstrap 200"),
)


@click.command("meta-eval", epilog=EXAMPLES)
@click.argument("scores", type=click.Path(path_type=Path))
@humans_option("Human judgment column; repeatable (required).", required=True)
@metrics_option("Metric column; repeatable. Default: every numeric column that is not a "
                "human column (nor item, system, human.*).")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True,
              help="Repeatable: both levels from one read of the table.  [default: segment]")
@click.option("--grouping", "groupings", type=click.Choice(GROUPINGS), multiple=True,
              help="segment level: correlate within each item or system, then average. "
                   "Repeatable: each grouping from one read of the table.  [default: none]")
@statistics_option()
@epsilon_option
@click.option("--labels", callback=lambda _ctx, _param, value: parse_labels(value),
              metavar="VALUES", help="Declared categories of the kappa family (weights by "
              "position, as scikit-learn's labels=) and value domain of Krippendorff's "
              "alpha: comma-separated numbers (1,2,3,4,5) or an integer range (1..5). A "
              "value outside them is an input error.")
@click.option("--average", type=click.Choice(("macro", "micro")), default="macro",
              show_default=True, help="--grouping item|system: the plain mean of the "
              "groups' values (macro) or weighted by their units (micro, mt-metrics-eval's "
              "macro=False).")
@click.option("--replace-nans-with-zeros", is_flag=True,
              help="An undefined group of 2 or more units (a constant side) counts as 0 in "
                   "the average instead of being skipped (mt-metrics-eval's option).")
@bootstrap_option(0, "Item resamples for a confidence interval (0: none).")
@ci_option()
@click.option("--interval", type=click.Choice(("bootstrap", "analytic", "both")),
              default="bootstrap", show_default=True,
              help="Which confidence interval: the item bootstrap (--bootstrap N), the "
                   "analytic one of an ungrouped pearson (Fisher z), spearman "
                   "(Bonett-Wright) or kendall (Fieller), or both.")
@direction_options
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path),
              help="Corpus scores (system, metric, value), as `judgebench score --corpus` "
                   "writes them; default: those in the table's .meta.json.")
@click.option("--system-score", type=click.Choice(("auto", "mean")), default="auto",
              show_default=True,
              help="System level: auto = a metric's corpus score where it has one (corpus "
                   "BLEU, MAUVE), else the mean of its segment scores; mean = always the mean.")
@exclude_system_option
@click.option("--compare", is_flag=True,
              help="Rank the metrics into significance clusters (per human and statistic).")
@test_option("Test used by --compare: permutation (any statistic), or the closed-form "
             "williams (Williams' t) or steiger (Steiger's Z on Fisher z) for one ungrouped "
             "pearson or spearman correlation.",
             choices=("permutation", "williams", "steiger"))
@click.option("--williams-sided", type=click.Choice(("one", "two")), default="one",
              show_default=True,
              help="--test williams|steiger: one-sided (H1: the better-ranked metric "
                   "correlates more) or two-sided p (psych::r.test's).")
@click.option("--compare-abs", is_flag=True,
              help="--test williams|steiger: compare |r| as psych::r.test does, not the "
                   "signed r (the default: a negative correlation with people is worse).")
@resamples_option
@alpha_option("Significance level for --compare.")
@click.option("-v", "--verbose", is_flag=True,
              help="Text output with --compare: every pairwise test's p-value too (--json "
                   "always has them).")
@raters_option("Individual rater columns (two or more) for the leave-one-rater-out human "
               "ceiling; each metric is also reported as a fraction of it.")
@click.option("--permutations", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Permutations per system pair inside SPA.")
@seed_option()
@format_options("Print a JSON array of result objects.")
@failed_as_option
@click.option("--missing-bounds", is_flag=True,
              help="Each statistic's worst and best case (Manski bounds) over every way its "
                   "missing human values and failed scores could have come out, and the "
                   "tipping point: how many failed rows against a metric would put it at or "
                   "below the next one.")
@click.option("--system-sensitivity", is_flag=True,
              help="How often the winning metric, the order and (with --compare) each "
                   "cluster change when systems leave (--leave-out K) or are resampled "
                   "(--system-bootstrap N).")
@click.option("--leave-out", type=click.IntRange(min=0), default=1, show_default=True,
              help="--system-sensitivity: systems left out at a time (0: none).")
@click.option("--system-bootstrap", type=click.IntRange(min=0), default=0, show_default=True,
              help="--system-sensitivity: system resamples with replacement.")
@click.option("--sequential", is_flag=True,
              help="Replay the study taking items in batches and report when anytime-valid "
                   "confidence sequences would have settled the clusters (or --top-k), and "
                   "the items, labels and judge calls saved (--grouping item).")
@click.option("--order", "sequential_order", type=click.Choice(("random", "greedy")),
              default="random", show_default=True,
              help="--sequential: items in seeded random order (anytime-valid) or the "
                   "metrics' most disagreed-about items first.")
@click.option("--batch", type=click.IntRange(min=1), default=10, show_default=True,
              help="--sequential: items per batch (the stopping rule is checked after each).")
@click.option("--margin", type=finite_float(min=0), default=0.0, show_default=True,
              help="--sequential: two metrics closer than this are decided equivalent.")
@click.option("--top-k", type=click.IntRange(min=1), default=None,
              help="--sequential: stop once the k best are settled against the rest.")
def command(scores: Path, humans: tuple[str, ...], metrics: tuple[str, ...],
            levels: tuple[str, ...], groupings: tuple[str, ...],
            statistics: tuple[str, ...], epsilon: float, labels: tuple[float, ...] | None,
            average: str, replace_nans_with_zeros: bool, bootstrap: int, ci: float,
            interval: str,
            lower: tuple[str, ...], higher: tuple[str, ...], corpus_path: Path | None,
            system_score: str, excluded: tuple[str, ...], compare: bool, method: str,
            williams_sided: str, compare_abs: bool,
            resamples: int, alpha: float, verbose: bool, raters: tuple[str, ...],
            permutations: int, seed: int, output_format: str, failed_as: str,
            missing_bounds: bool, system_sensitivity: bool, leave_out: int,
            system_bootstrap: int, sequential: bool, sequential_order: str, batch: int,
            margin: float, top_k: int | None) -> None:
    """Correlate metric columns of SCORES (a wide scores table) with human judgments; the
    subcommands below answer the other questions (pairwise judges, error spans, ...)."""
    from judgebench.cli import given_host
    from judgebench.render import json as json_out
    from judgebench.render import text as text_out
    from judgebench.render.formats import render as render_table
    from judgebench.render.table import meta_eval_table
    from judgebench.services.meta_eval import from_options as meta_eval

    chosen = views(levels, groupings)
    level, grouping = chosen[0]
    result = meta_eval(scores, humans=humans, metrics=metrics, level=level, grouping=grouping,
                       statistics=statistics, epsilon=epsilon, bootstrap=bootstrap, ci=ci,
                       lower=lower, higher=higher, corpus_path=corpus_path,
                       system_score=system_score, exclude_systems=excluded, compare=compare,
                       method=method, resamples=resamples, alpha=alpha, raters=raters,
                       permutations=permutations, seed=seed, labels=labels,
                       average=average, replace_nans_with_zeros=replace_nans_with_zeros,
                       failed_as=failed_as, log=log, host=given_host(),
                       missing_bounds=missing_bounds,
                       leave_systems_out=leave_out if system_sensitivity else 0,
                       system_bootstrap=system_bootstrap if system_sensitivity else 0,
                       sequential={"order": sequential_order, "batch": batch, "margin": margin,
                                   "top_k": top_k} if sequential else None,
                       views=chosen, interval=interval,
                       alternative="greater" if williams_sided == "one" else "two-sided",
                       absolute=compare_abs)
    if output_format == "json":
        click.echo(json_out.document(result.to_dict()))
    elif output_format == "text":
        root = click.get_current_context().find_root().params  # `judgebench -v meta-eval`
        click.echo(safe(text_out.meta_eval(result, verbose=verbose or bool(root.get("verbose")))))
    else:
        click.echo(safe(render_table(meta_eval_table(result, output_format), output_format)))


def parse_labels(value: str | None) -> tuple[float, ...] | None:
    """`--labels`: "1,2,3" or "1..5" -> the sorted values; BadParameter otherwise."""
    if value is None:
        return None
    text = value.strip()
    try:
        if ".." in text:
            low, high = (int(part) for part in text.split("..", 1))
            if high < low or high - low > 10_000:
                raise ValueError
            return tuple(float(v) for v in range(low, high + 1))
        values = sorted({float(part) for part in text.split(",")})
    except ValueError:
        raise click.BadParameter(f"{value!r}: use comma-separated numbers (1,2,3,4,5) or an "
                                 "integer range (1..5)", param_hint="--labels") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise click.BadParameter(f"{value!r}: the labels must be finite numbers",
                                 param_hint="--labels")
    return tuple(values)
