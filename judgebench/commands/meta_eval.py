"""`judgebench meta-eval`: correlate metric columns of a scores table with human columns.

The work is `judgebench.services.meta_eval` (statistics in meta_eval); this module parses the
options, calls it and prints the results (judgebench.render): a readable table per human
column and statistic, metrics sorted best first; a JSON array with --json (--format json); one
csv, markdown or latex table with --format.
"""

from __future__ import annotations

import math
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import direction_options, failed_as_option, pairwise_options
from judgebench.commands.output_format import format_options
from judgebench.display import safe
from judgebench.engine import progress_line
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.render.table import meta_eval_table
from judgebench.render.table import render as render_table
from meta_eval.statistics import help_text as statistic_help

LEVELS = ("system", "segment")
GROUPINGS = ("none", "item", "system")


def _views(levels: tuple[str, ...], groupings: tuple[str, ...]) -> list[tuple[str, str]]:
    """(level, grouping) pairs: a grouping is of the segment level, so with both levels the
    system level is taken once, ungrouped."""
    levels, groupings = levels or ("segment",), groupings or ("none",)
    both = len(set(levels)) > 1
    return list(dict.fromkeys((level, "none" if both and level == "system" else grouping)
                              for level in levels for grouping in groupings))


def _log(message: str) -> None:
    click.echo(f"meta-eval: {safe(message)}", err=True)
    progress_line.doing(safe(message))


@click.command("meta-eval", epilog=examples(
    ("how well each metric column follows people's coherence (Pearson, segment level)",
     "judgebench meta-eval examples/summeval-scores.csv --human human.coherence"),
    ("Kendall's tau at the system level, the metrics ranked into significance clusters",
     "judgebench meta-eval examples/summeval-scores.csv --human human.relevance --level system "
     "--statistic kendall --compare --resamples 200"),
    ("within each document, with 200-resample bootstrap intervals",
     "judgebench meta-eval examples/summeval-scores.csv --human human.consistency --grouping "
     "item --bootstrap 200"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--human", "humans", multiple=True, metavar="COL",
              help="Human judgment column; repeatable (required, except with --alt-test, "
                   "where the default is every human.* column).")
@click.option("--metric", "metrics", multiple=True, metavar="COL",
              help="Metric column; repeatable. Default: every numeric column that is not a "
                   "human column (nor item, system, human.*).")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True,
              help="Repeatable: both levels from one read of the table.  [default: segment]")
@click.option("--grouping", "groupings", type=click.Choice(GROUPINGS), multiple=True,
              help="segment level: correlate within each item or system, then average. "
                   "Repeatable: each grouping from one read of the table.  [default: none]")
@click.option("--statistic", "statistics", multiple=True, metavar="NAME",
              help=f"{statistic_help()}. Repeatable; default: pearson.")
@click.option("--epsilon", type=float, default=0.0, show_default=True,
              help="Metric tie threshold for kendall-23 and acc-23.")
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
@click.option("--bootstrap", type=click.IntRange(min=0), default=0, show_default=True,
              help="Item resamples for a confidence interval (0: none).")
@click.option("--ci", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Confidence level of the interval.")
@direction_options
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path),
              help="Corpus scores (system, metric, value), as `judgebench score --corpus` "
                   "writes them; default: those in the table's .meta.json.")
@click.option("--system-score", type=click.Choice(("auto", "mean")), default="auto",
              show_default=True,
              help="System level: auto = a metric's corpus score where it has one (corpus "
                   "BLEU, MAUVE), else the mean of its segment scores; mean = always the mean.")
@click.option("--exclude-system", "excluded", multiple=True, metavar="NAME",
              help="Leave this system out; repeatable.")
@click.option("--compare", is_flag=True,
              help="Rank the metrics into significance clusters (per human and statistic).")
@click.option("--test", "method", type=click.Choice(("permutation", "williams")),
              default="permutation", show_default=True, help="Test used by --compare.")
@click.option("--resamples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Permutation resamples per comparison (early stopping may use fewer).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Significance level for --compare.")
@click.option("-v", "--verbose", is_flag=True,
              help="Text output with --compare: every pairwise test's p-value too (--json "
                   "always has them).")
@click.option("--rater", "raters", multiple=True, metavar="COL",
              help="Individual rater columns (two or more) for the leave-one-rater-out "
                   "human ceiling; each metric is also reported as a fraction of it.")
@click.option("--permutations", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Permutations per system pair inside SPA.")
@click.option("--seed", type=int, default=0, show_default=True)
@format_options("Print a JSON array of result objects.")
@click.option("--pairwise", is_flag=True,
              help="SCORES is a pairwise table (item, system_a, system_b, human.* "
                   "preferences, <judge>, <judge>.ab, <judge>.ba verdicts): judge accuracy "
                   "per order, consistency, tie rate and kappas.")
@click.option("--judge", "judges", multiple=True, metavar="SPEC",
              help="--pairwise: judge (columns SPEC, SPEC.ab, SPEC.ba); repeatable. Default: "
                   "every .ab/.ba pair and every other column holding verdicts only.")
@pairwise_options
@failed_as_option
@click.option("--alt-test", is_flag=True,
              help="The alternative-annotator test (Calderon et al. 2025): each human.* "
                   "column is one annotator, each metric a candidate judge; needs --epsilon.")
@click.option("--alt-score", type=click.Choice(("accuracy", "neg-rmse")), default="accuracy",
              show_default=True, help="--alt-test: how an answer agrees with the other "
                                      "annotators (categorical or numeric labels).")
@click.option("--missing-bounds", is_flag=True,
              help="Each statistic's worst and best case (Manski bounds) over every way its "
                   "missing human values and failed scores could have come out, and the "
                   "tipping point: how many failed rows against a metric would put it at or "
                   "below the next one.")
@click.option("--construct", "construct_pairs", multiple=True, metavar="METRIC=HUMAN",
              help="Construct validity (Campbell and Fiske's multitrait-multimethod matrix): "
                   "METRIC is meant to measure criterion HUMAN; repeatable. Tests that each "
                   "agrees with its criterion more than with the other --human columns.")
@click.option("--transitivity", is_flag=True,
              help="--pairwise: the share of system triples with cyclic majority preferences "
                   "(item-bootstrap CI, --bootstrap), the pairs in the cycles and a "
                   "likelihood-ratio test of Bradley-Terry, per judge and human column.")
@click.option("--power-for", type=float, metavar="DELTA",
              help="From this pilot table: how many items (and, with --rater, annotators) a "
                   "study needs to separate the best metric from each other one if their "
                   "Pearson r with --human differ by DELTA (simulated Williams tests).")
@click.option("--target-power", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.8, show_default=True, help="--power-for: the power to reach.")
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
@click.option("--margin", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="--sequential: two metrics closer than this are decided equivalent.")
@click.option("--top-k", type=click.IntRange(min=1), default=None,
              help="--sequential: stop once the k best are settled against the rest.")
@click.option("--alt-min-items", type=click.IntRange(min=2), default=30, show_default=True,
              help="--alt-test: an annotator with fewer items is not tested.")
@click.option("--spans", "spans", metavar="HUMAN",
              help="Error spans: each span-marking judge's (judge.mqm) stored spans against "
                   "people's, a JSONL file (item, system, start, end, severity) or a suite "
                   "name: character- and span-level precision, recall, F1 (this report "
                   "only; it reads --metric, --store and --format text|json).")
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="--spans: the store `score` wrote the spans to (default: the one the "
                   "sidecar names, else judgebench.db).")
def command(scores: Path, humans: tuple[str, ...], metrics: tuple[str, ...],
            levels: tuple[str, ...], groupings: tuple[str, ...],
            statistics: tuple[str, ...], epsilon: float, bootstrap: int,
            ci: float, lower: tuple[str, ...], higher: tuple[str, ...],
            corpus_path: Path | None, system_score: str, excluded: tuple[str, ...],
            compare: bool, method: str, resamples: int, alpha: float, verbose: bool,
            raters: tuple[str, ...], permutations: int, seed: int, output_format: str,
            pairwise: bool, judges: tuple[str, ...], by: str | None, human_ties: str,
            labels: tuple[float, ...] | None, average: str,
            replace_nans_with_zeros: bool, failed_as: str, alt_test: bool = False,
            alt_score: str = "accuracy", alt_min_items: int = 30,
            missing_bounds: bool = False, construct_pairs: tuple[str, ...] = (),
            transitivity: bool = False, power_for: float | None = None,
            target_power: float = 0.8, system_sensitivity: bool = False,
            leave_out: int = 1, system_bootstrap: int = 0, sequential: bool = False,
            sequential_order: str = "random", batch: int = 10, margin: float = 0.0,
            top_k: int | None = None, spans: str | None = None,
            store_path: Path | None = None) -> None:
    """Correlate metric columns of SCORES (a wide scores table) with human judgments, or
    with --pairwise meta-evaluate pairwise judges on a table of compared pairs."""
    if spans is not None:
        _run_spans(scores, spans, metrics, store_path, output_format)
        return
    if store_path is not None:
        raise click.UsageError("--store is for --spans")
    views = _views(levels, groupings)
    level, grouping = views[0]
    if len(views) > 1 and (alt_test or power_for is not None or construct_pairs or pairwise):
        raise click.UsageError("--alt-test, --power-for, --construct and --pairwise take one "
                               "--level and one --grouping")
    if alt_test:
        _run_alt_test(scores, humans, metrics, epsilon, alt_score, alpha, alt_min_items,
                      output_format)
        return
    if not humans:
        raise click.UsageError("Missing option '--human'.")
    if power_for is not None:
        from judgebench.services import power as planning

        if len(humans) != 1 or output_format not in ("text", "json"):
            raise click.UsageError("--power-for takes one --human and prints text or json")
        plan = planning.power_for(scores, power_for, human=humans[0], metrics=metrics,
                                 raters=raters, alpha=alpha, target=target_power, seed=seed,
                                 lower=lower, higher=higher, exclude_systems=excluded,
                                 log=_log)
        click.echo(json_out.document(plan.to_dict()) if output_format == "json"
                   else safe(text_out.power_report(plan)))
        return
    if construct_pairs:
        _run_construct(scores, construct_pairs, humans, statistics, level, grouping, method,
                       alpha, resamples, seed, lower, higher, excluded, output_format)
        return
    if pairwise:
        if metrics or raters:
            raise click.UsageError("--pairwise takes --judge (not --metric) and several "
                                   "--human columns (not --rater)")
        if labels is not None or average != "macro" or replace_nans_with_zeros:
            raise click.UsageError("--labels, --average and --replace-nans-with-zeros are "
                                   "for a wide scores table, not --pairwise")
        from judgebench.commands.meta_eval_pairwise import run_pairwise

        if output_format not in ("text", "json"):
            raise click.UsageError("--pairwise prints text or json (--format text|json)")
        if transitivity:
            from judgebench.services import transitivity as cycles

            report = cycles.transitivity(scores, humans=humans, judges=judges,
                                          bootstrap=bootstrap or 1000, ci=ci, seed=seed,
                                          log=_log)
            click.echo(json_out.document(report.to_dict()) if output_format == "json"
                       else safe(text_out.transitivity_report(report)))
            return
        run_pairwise(scores, humans=humans, judges=judges, by=by, human_ties=human_ties,
                     bootstrap=bootstrap, ci=ci, seed=seed, compare=compare,
                     resamples=resamples, alpha=alpha, as_json=output_format == "json", log=_log,
                     failed_as=failed_as)
        return
    if judges or by:
        raise click.UsageError("--judge and --by need --pairwise (a table of compared pairs)")
    from judgebench.cli import given_host
    from judgebench.services.meta_eval import from_options as meta_eval

    result = meta_eval(scores, humans=humans, metrics=metrics, level=level, grouping=grouping,
                       statistics=statistics, epsilon=epsilon, bootstrap=bootstrap, ci=ci,
                       lower=lower, higher=higher, corpus_path=corpus_path,
                       system_score=system_score, exclude_systems=excluded, compare=compare,
                       method=method, resamples=resamples, alpha=alpha, raters=raters,
                       permutations=permutations, seed=seed, labels=labels,
                       average=average, replace_nans_with_zeros=replace_nans_with_zeros,
                       failed_as=failed_as, log=_log, host=given_host(),
                       missing_bounds=missing_bounds,
                       leave_systems_out=leave_out if system_sensitivity else 0,
                       system_bootstrap=system_bootstrap if system_sensitivity else 0,
                       sequential={"order": sequential_order, "batch": batch, "margin": margin,
                                   "top_k": top_k} if sequential else None, views=views)
    if output_format == "json":
        click.echo(json_out.document(result.to_dict()))
    elif output_format == "text":
        root = click.get_current_context().find_root().params  # `judgebench -v meta-eval`
        click.echo(safe(text_out.meta_eval(result, verbose=verbose or bool(root.get("verbose")))))
    else:
        click.echo(safe(render_table(meta_eval_table(result, output_format), output_format)))


def _run_spans(scores: Path, spans: str, metrics: tuple[str, ...], store: Path | None,
               output_format: str) -> None:
    from judgebench.cli import given_host
    from judgebench.render.spans import spans_report
    from judgebench.services.spans import span_meta_eval

    if output_format not in ("text", "json"):
        raise click.UsageError("--spans prints text or json (--format text|json)")
    result = span_meta_eval(scores, spans, metrics=metrics, store=store, host=given_host(),
                            log=_log)
    click.echo(json_out.document(result.to_dict()) if output_format == "json"
               else safe(spans_report(result)))


def _run_alt_test(scores: Path, humans: tuple[str, ...], metrics: tuple[str, ...],
                  epsilon: float, alt_score: str, alpha: float, min_items: int,
                  output_format: str) -> None:
    from click.core import ParameterSource

    from judgebench.services.alt_test import alt_test

    ctx = click.get_current_context()
    if ctx.get_parameter_source("epsilon") is ParameterSource.DEFAULT:
        raise click.UsageError("--alt-test needs --epsilon, the annotators' cost-benefit "
                               "margin (the paper: 0.2 experts, 0.15 skilled, 0.1 crowd)")
    if output_format not in ("text", "json"):
        raise click.UsageError("--alt-test prints text or json (--format text|json)")
    report = alt_test(scores, humans=humans, metrics=metrics, epsilon=epsilon,
                      score=alt_score, alpha=alpha, min_items=min_items, log=_log)
    click.echo(json_out.document(report.to_dict()) if output_format == "json"
               else safe(text_out.alt_test_report(report)))


def _run_construct(scores: Path, pairs: tuple[str, ...], humans: tuple[str, ...],
                   statistics: tuple[str, ...], level: str, grouping: str, method: str,
                   alpha: float, resamples: int, seed: int, lower: tuple[str, ...],
                   higher: tuple[str, ...], excluded: tuple[str, ...],
                   output_format: str) -> None:
    from judgebench.services.construct import construct, parse_pairs

    if len(statistics) > 1 or output_format not in ("text", "json"):
        raise click.UsageError("--construct takes one --statistic and prints text or json")
    report = construct(scores, intended=parse_pairs(pairs), humans=humans,
                       statistic=statistics[0] if statistics else "pearson", level=level,
                       grouping=grouping, method=method, alpha=alpha, resamples=resamples,
                       seed=seed, lower=lower, higher=higher, exclude_systems=excluded,
                       log=_log)
    click.echo(json_out.document(report.to_dict()) if output_format == "json"
               else safe(text_out.construct_report(report)))


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
