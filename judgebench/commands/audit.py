"""`judgebench audit`: sentinels, the sentinel gate, probes and the report card.

The work is `judgebench.services.audit`; this module parses the options, checks every path
before any work, calls the service, writes the reports and prints. The sentinels that read
text (length, cand, src, ref) and the probes take the text from the generations given with
--samples (the table has none).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import (
    FINITE,
    alt_test_options,
    bootstrap_option,
    ci_option,
    direction_options,
    epsilon_option,
    failed_as_option,
    humans_option,
    interval_option,
    metrics_option,
    pairwise_options,
    raters_option,
    seed_option,
    significance_options,
    statistics_option,
    target_power_option,
)
from judgebench.display import safe
from judgebench.engine import progress_line
from judgebench.errors import InputError
from judgebench.render import json as json_out
from judgebench.services.audit import GROUPINGS, LEVELS
from judgebench.tables import destinations

if TYPE_CHECKING:
    from judgebench.auditing.report import Report

#: The exit status when the audit finished and a --fail-on check failed (DESIGN.md's table:
#: 0 ok, 1 other failure, 2 bad input, 3 finished with failed scores).
CHECKS_FAILED = 4

REPORT_FORMATS = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown",
                  ".json": "json"}


def _log(message: str) -> None:
    click.echo(f"audit: {safe(message)}", err=True)
    progress_line.doing(safe(message))


def report_format(path: Path) -> str:
    fmt = REPORT_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(f"unknown report type '{path.suffix}'; use .html, .md or .json",
                         path=str(path), field="--report")
    return fmt


@click.command("audit", epilog=examples(
    ("sentinels and the sentinel gate for every metric column, against people's coherence",
     "judgebench audit examples/summeval-scores.csv --human human.coherence --bootstrap 100 "
     "--resamples 100"),
    ("with the generations (the text sentinels) and an HTML report card",
     "judgebench audit examples/summeval-scores.csv --human human.coherence --samples "
     "examples/summeval-sample.jsonl --bootstrap 100 --resamples 100 --report card.html"),
))
@click.argument("scores", type=click.Path(path_type=Path))
@humans_option("Human judgment column of SCORES; repeatable.", required=True)
@click.option("--samples", "samples_path", type=click.Path(path_type=Path),
              metavar="GENERATIONS",
              help="The generations SCORES was scored from (.jsonl/.csv/.parquet), matched "
                   "on (item, system). The scores table has no text: sentinel.length and "
                   "sentinel.cand/src/ref read it from here (without it they are skipped, "
                   "with that reason), and --probe and --judge (without --pairs) need it.")
@metrics_option("Metric column to audit; repeatable. Default: every numeric column that is "
                "not item, system, human.* or a --human column.")
@click.option("--level", "levels", multiple=True, type=click.Choice(LEVELS),
              help="Repeatable. Default: system and segment.")
@click.option("--grouping", "groupings", multiple=True, type=click.Choice(GROUPINGS),
              help="Segment-level grouping; repeatable. Default: none, item and system.")
@statistics_option()
@click.option("--sentinel", "sentinels", multiple=True, metavar="SPEC",
              help="Sentinel to use, e.g. sentinel.cand:folds=10; repeatable. Default: every "
                   "registered sentinel.")
@direction_options
@click.option("--store", "store_path", type=click.Path(path_type=Path),
              help="Score store (from `judgebench score --store`) to read cost and time.")
@bootstrap_option(1000, "Item resamples for the confidence intervals (0: none).")
@ci_option(None)
@interval_option("analytic: no bootstrap is run; both: the card shows both.")
@significance_options("Test behind the significance clusters.", None)
@epsilon_option
@seed_option()
@click.option("--probe", "probes", multiple=True, metavar="SPEC",
              help="Run the metamorphic probes on this metric spec (or `all`: every audited "
                   "column that is a metric spec); repeatable. Needs --samples.")
@click.option("--probe-items", type=click.IntRange(min=2), default=8, show_default=True,
              help="Items (with every system's output) the probes use.")
@click.option("--judge", "judges", multiple=True, metavar="SPEC",
              help="Judge (a metric spec) to run the bias probes on; repeatable. A pairwise "
                   "judge takes every bias probe on --pairs; a judge that scores one output "
                   "takes the pointwise ones (verbosity, authority, fallacy, ...) on "
                   "--bias-pairs samples drawn from --samples.")
@click.option("--pairs", "pairs_path", type=click.Path(path_type=Path), metavar="PAIRS",
              help="Pairwise samples (output_a/output_b) for the bias probes. Default: pairs "
                   "of systems on one item drawn from --samples, labelled by the first "
                   "--human column. With --pairwise, also the texts whose length and "
                   "markdown the style control takes, where SCORES has none.")
@click.option("--bias-pairs", type=click.IntRange(min=1), default=24, show_default=True,
              help="How many pairs (samples, for a judge that scores one output) the bias "
                   "probes use.")
@click.option("--bias-probe", "bias_probes", multiple=True, metavar="NAME",
              help="Bias probe to run: position, self-preference, prompt, injection, "
                   "retest, label-scheme (pairwise judges); scale-inversion, "
                   "criteria-order (judges that score one output; criteria-order: a judge "
                   "rating 2+ criteria, judge.rubric:criteria=); verbosity, authority, "
                   "bandwagon, sentiment, formatting, fallacy (both kinds); or a plugin's "
                   "(register_probes); repeatable. Default: all that apply to the judge.")
@click.option("--paraphrase", "paraphrases", multiple=True, metavar="SPEC",
              help="The judge with a paraphrased template (same metric name as --judge); "
                   "two or more give the prompt-sensitivity probe.")
@click.option("--judge-family", metavar="FAMILY",
              help="The judge model's family, for the self-preference probe.")
@click.option("--system-family", "system_families", multiple=True, metavar="SYSTEM=FAMILY",
              help="A system's model family, for the self-preference probe; repeatable.")
@click.option("--report", "reports", multiple=True, type=click.Path(path_type=Path, writable=True),
              metavar="PATH", help="Write the report card: .html (self-contained, with "
                                   "plots), .md or .json; repeatable.")
@click.option("--fail-on", "fail_on", multiple=True, metavar="CHECK",
              help="Exit 4 (after writing the reports) when a check fails: `gate` (a metric "
                   "fails the sentinel gate somewhere), `parse-rate>0.05` (a metric's share "
                   "of scores that are not ok: missing in SCORES, or not ok in its "
                   ".meta.json or --store), `cluster-drop` (a metric in a worse cluster than "
                   "in --previous), `bias:authority>0.1` (a judge's shift under that probe "
                   "is significantly beyond +-0.1). Repeatable; each failure is a FAIL line "
                   "on stderr.")
@click.option("--previous", "previous_path", type=click.Path(path_type=Path),
              metavar="OLD.json", help="An earlier audit's JSON report (or --json output), "
                                       "for --fail-on cluster-drop.")
@click.option("--pairwise", is_flag=True,
              help="SCORES is a pairwise table (item, system_a, system_b, human.* "
                   "preferences, <judge>, <judge>.ab, <judge>.ba verdicts): the report shows "
                   "each judge's accuracy per order, consistency, tie rate and kappas "
                   "(meta-eval pairwise), with the bias probes of --judge on --pairs.")
@pairwise_options
@failed_as_option
@click.option("--robustness", is_flag=True,
              help="Per block: whether failed or missing cells (Manski bounds, tipping "
                   "points) or leaving out a system could overturn the gate; the verdict "
                   "says so first.")
@click.option("--alt-test", "alt_test", type=FINITE, metavar="EPSILON",
              help="Can each metric replace an annotator of each --human criterion? The "
                   "alternative-annotator test at this cost-benefit epsilon (0.2 experts, "
                   "0.15 skilled, 0.1 crowd) against the criterion's annotator columns "
                   "(<human>.<annotator>, or --rater); the verdict says so.")
@alt_test_options("--alt-test: how an answer agrees with the other annotators.")
@raters_option("An annotator column for --alt-test; repeatable. Named <human>.<annotator> it "
               "belongs to that --human criterion. Default: every <human>.<annotator> column.")
@click.option("--power-for", type=FINITE, metavar="DELTA",
              help="Can this study separate metrics whose Pearson r with each --human "
                   "criterion differs by DELTA (Williams' test at --alpha, simulated)? The "
                   "verdict says so first when it cannot.")
@target_power_option("--power-for: the power that counts as separating.")
@click.option("--sequential", is_flag=True,
              help="Replay each segment-level, item-grouped block as an anytime-valid "
                   "sequential study: when it would have settled, and whether each pass "
                   "is confirmed against the sentinel.")
@click.option("--spans", "spans", metavar="HUMAN",
              help="People's error spans (a JSONL file: item, system, start, end, severity; "
                   "or a suite name): the span-marking judges' (judge.mqm) spans against "
                   "them, read from --store (default: judgebench.db).")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array of result objects to stdout (and nothing else).")
def command(scores: Path, humans: tuple[str, ...], samples_path: Path | None,
            metrics: tuple[str, ...], levels: tuple[str, ...], groupings: tuple[str, ...],
            statistics: tuple[str, ...], sentinels: tuple[str, ...],
            lower: tuple[str, ...], higher: tuple[str, ...], store_path: Path | None,
            bootstrap: int, ci: float, interval: str, method: str, resamples: int,
            alpha: float, epsilon: float, seed: int,
            probes: tuple[str, ...], probe_items: int, judges: tuple[str, ...],
            pairs_path: Path | None, bias_pairs: int, bias_probes: tuple[str, ...],
            paraphrases: tuple[str, ...], judge_family: str | None,
            system_families: tuple[str, ...], reports: tuple[Path, ...],
            fail_on: tuple[str, ...], previous_path: Path | None, pairwise: bool,
            by: str | None, human_ties: str, failed_as: str, as_json: bool,
            robustness: bool = False, alt_test: float | None = None,
            alt_score: str = "accuracy", alt_min_items: int = 30,
            raters: tuple[str, ...] = (), power_for: float | None = None,
            target_power: float = 0.8, sequential: bool = False,
            spans: str | None = None) -> None:
    """Audit the metric columns of SCORES (a wide scores table) against human judgments:
    sentinel metrics, the sentinel gate at each level and grouping, and a report card."""
    from judgebench.auditing.blocks import Options
    from judgebench.cli import context_host
    from judgebench.services.audit import audit

    destinations.check([
        destinations.read("SCORES", scores, sidecar=True),
        *(destinations.read(option, path) for option, path in
          (("--samples", samples_path), ("--pairs", pairs_path), ("--store", store_path),
           ("--previous", previous_path))
          if path is not None),
        *(destinations.report("--report", path, report_format) for path in reports),
    ])
    formats = [(path, report_format(path)) for path in reports]
    options = Options(bootstrap=0 if interval == "analytic" else bootstrap, ci=ci, seed=seed,
                      alpha=alpha, method=method, resamples=resamples, epsilon=epsilon,
                      robustness=robustness, sequential=sequential, interval=interval)
    report = audit(scores, humans=humans, samples=samples_path, metrics=metrics,
                   levels=levels, groupings=groupings, statistics=statistics,
                   sentinels=sentinels, lower=lower, higher=higher, store=store_path,
                   options=options, probes=probes, probe_items=probe_items, judges=judges,
                   pairs=pairs_path, bias_pairs=bias_pairs, bias_probes=bias_probes,
                   paraphrases=paraphrases, judge_family=judge_family,
                   system_families=_families(system_families), fail_on=fail_on,
                   previous=previous_path, pairwise=pairwise, by=by, human_ties=human_ties,
                   failed_as=failed_as, raters=raters, alt_test=alt_test,
                   alt_score=alt_score, alt_min_items=alt_min_items, power_for=power_for,
                   target_power=target_power, spans=spans, log=_log, host=context_host())
    for path, fmt in formats:
        write_report(report, path, fmt)
        _log(f"report -> {path}")
    if as_json:
        click.echo(json_out.document(report.results()))
    else:
        from judgebench.render.markdown import render_markdown

        sys.stdout.write(safe(render_markdown(report)))
    if report.failures:
        for failure in report.failures:
            click.echo(safe(f"FAIL {failure['metric']}: {failure['message']}"), err=True)
        _log(f"--fail-on: {len(report.failures)} failure(s); exit {CHECKS_FAILED}")
        raise click.exceptions.Exit(CHECKS_FAILED)


def write_report(report: Report, path: Path, fmt: str) -> None:
    from judgebench.tables.io import write_text

    if fmt == "json":
        text = json_out.document(report.to_dict())
    elif fmt == "markdown":
        from judgebench.render.markdown import render_markdown

        text = render_markdown(report)
    else:
        from judgebench.render.html import render_html

        text = render_html(report)
    write_text(text, path)


def _families(texts: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for text in texts:
        system, eq, family = text.partition("=")
        if not eq or not system.strip() or not family.strip():
            raise InputError(f"'{text}' is not SYSTEM=FAMILY", field="--system-family")
        out[system.strip()] = family.strip()
    return out
