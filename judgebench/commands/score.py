"""`judgebench score`: run metrics over generations into the store and a wide scores table."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from judgebench.cli import context_host
from judgebench.commands.examples import examples
from judgebench.commands.options import OPEN_UNIT, finite_float
from judgebench.display import SafeWriter, safe
from judgebench.engine import progress_line
from judgebench.engine.ray_engine import is_uri
from judgebench.engine.runner import RunResult
from judgebench.engine.runtime import Budget, RunSettings, check_budget_usd, parse_retry
from judgebench.engine.store import DEFAULT_STORE
from judgebench.errors import EXIT_FAILED_SCORES, InputError
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.services import score_listwise
from judgebench.services.score import Rows, estimate_file, score_file, summary_rows
from judgebench.spec import MetricSpec, load_config, spec_file, specs_of
from judgebench.tables import destinations

if TYPE_CHECKING:
    from judgebench.engine.pool import TimeEstimate
    from judgebench.engine.ray_engine import RayConfig

#: The exit status of a run that finished with failed scores (DESIGN.md: CLI).
#: Reasons shown per metric at the end of a run with failures (`score --json` has them all).
TOP_REASONS = 3


@click.command("score", epilog=examples(
    ("BLEU and chrF of the first 8 rows, the table as CSV on stdout",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu -m lexical.chrf --limit "
     "8"),
    ("ROUGE-L without stemming into a file, and each system's corpus BLEU into another",
     "judgebench score examples/summeval-sample.jsonl -m lexical.rougeL:stemmer=false -m "
     "lexical.bleu --limit 16 -o scores.csv --corpus corpus.csv"),
    ("the calls, tokens and dollars a rubric judge would take, without calling it",
     "judgebench score examples/summeval-sample.jsonl -m "
     "judge.rubric:backend=litellm,model=gpt-4o-mini --dry-run"),
))
@click.argument("input_path", metavar="INPUT",
                callback=lambda _c, _p, v: v if is_uri(v) else Path(v))
@click.option("-m", "--metric", "metric_specs", multiple=True, metavar="SPEC",
              help="NAME or NAME:key=value[,key=value...]; repeatable. The spec is the column. "
                   "@FILE: the metrics of a TOML file (as --config; `fit -o` writes one).")
@click.option("--config", type=click.Path(path_type=Path),
              help="TOML file with [metrics.<column>] tables (metric = NAME, options...).")
@click.option("-o", "--output", type=click.Path(path_type=Path, writable=True),
              help="Scores table (.csv, .jsonl, .parquet); CSV on stdout if omitted.")
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True,
              type=click.Path(path_type=Path, writable=True), help="SQLite store of every score.")
@click.option("--resume", is_flag=True,
              help="Skip what the store already holds for the same signature and sample.")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path, writable=True),
              help="Write corpus-level scores (one row per system and metric) here.")
@click.option("--cache", "cache_path", type=click.Path(path_type=Path, writable=True),
              help="Judge response cache (a .sqlite file or a folder); default "
                   "$JUDGEBENCH_CACHE_DIR or ~/.cache/judgebench.")
@click.option("--budget-usd", type=float, callback=lambda _c, _p, v: check_budget_usd(v),
              help="Stop before spending more than this (US dollars, finite, >= 0).")
@click.option("--allow-unknown-cost", is_flag=True,
              help="With --budget-usd, run judges whose price is unknown (their calls are not "
                   "counted); without it such a run is refused before any call.")
@click.option("--dry-run", is_flag=True, help="Estimate calls, tokens and cost; score nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary to stdout.")
@click.option("--csv-safe/--no-csv-safe", default=False, show_default=True,
              help="CSV output (-o, --corpus, stdout): prefix text cells that start with "
                   "= + - @ (or a tab or CR) with ' so a spreadsheet shows them as text. "
                   "Off by default: judgebench reads the prefix back as part of the id.")
@click.option("--progress/--no-progress", default=None,
              help="Progress bar on stderr (default: when stderr is a terminal; on any other "
                   "stderr, a line of progress after each 10 s of silence, which "
                   "--no-progress turns off too).")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default="the number of cores",
              help="Processes for local metrics (lexical, sentinels); judges and model "
                   "metrics keep their own concurrency. The results are those of 1.")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where batches are scored: here (--workers), or on Ray actors (pip install "
                   "'judgebench[ray]'), on this machine or a cluster; the same results.")
@click.option("--address", metavar="ADDRESS",
              help="With --engine ray: the cluster (auto, ray://host:10001); default a local "
                   "Ray instance sized to this machine.")
@click.option("--replicas", type=click.IntRange(min=1), metavar="N",
              help="With --engine ray: scoring actors (default: one per CPU of the cluster, or "
                   "per --gpus-per-replica GPUs).")
@click.option("--gpus-per-replica", type=finite_float(min=0), default=0.0, metavar="G",
              help="With --engine ray: GPUs each actor holds (a vLLM judge's engine).")
@click.option("-v", "--verbose", is_flag=True,
              help="With --engine ray: Ray's own logs and progress bars too.")
@click.option("--retry", "retry", default="error", show_default=True, metavar="KINDS",
              callback=lambda _c, _p, v: parse_retry(v),
              help="Failed scores to ask again, comma-separated: parse_error, refused, error. "
                   "The judge answers behind them are not replayed from the judge cache, and "
                   "--resume does not keep them; other failed scores are kept.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              metavar="K",
              help="Draw K independent judgements per sample from each judge (each draw its "
                   "own judge-cache keys, so a rerun replays the same K); the table's cell is "
                   "their mean and the store keeps every draw (meta-eval's `repeats`); at "
                   "most 1000.")
@click.option("--repeats-cell", type=click.Choice(["mean", "majority"]), default=None,
              help="With --repeats: the table's cell is the draws' mean (default) or their "
                   "majority (a categorical judge's most frequent score; a pairwise judge's "
                   "verdicts always).")
@click.option("--repeats-allow-greedy", is_flag=True,
              help="With --repeats K > 1: draw from a judge at temperature 0 too.")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 even if some scores failed (error, parse_error, refused); without "
                   "it such a run exits 3.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N",
              help="Score only the first N rows (to try a metric or judge).")
@click.option("--sample", "sample_rows", type=click.IntRange(min=1), metavar="N",
              help="Score N rows drawn at random (with --seed; the same seed draws the same "
                   "rows of the same file).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --sample.")
@click.option("--until-settled", "until_settled", metavar="HUMAN",
              help="Score the items in seeded random batches (--seed) and stop once "
                   "anytime-valid confidence sequences settle the metrics' clusters against "
                   "this human score (segment level, grouped by item); needs -o.")
@click.option("--settle-batch", type=click.IntRange(min=1), default=10, show_default=True,
              help="--until-settled: items per batch.")
@click.option("--settle-margin", type=finite_float(min=0), default=0.0, show_default=True,
              help="--until-settled: metrics closer than this are decided equivalent.")
@click.option("--settle-top-k", type=click.IntRange(min=1), default=None,
              help="--until-settled: stop once the k best are settled against the rest.")
@click.option("--settle-alpha", type=OPEN_UNIT,
              default=0.05, show_default=True, help="--until-settled: the error level.")
@click.option("--settle-statistic", default="pearson", show_default=True,
              help="--until-settled: the per-item correlation.")
@click.option("--escalate", "escalate_human", metavar="HUMAN",
              help="Trust or escalate: -m is the cascade's first judge, --cascade the next; "
                   "each judge's threshold is chosen on the rows HUMAN labels (a samples "
                   "field with missing values, or store:CRITERION), only the rows below it "
                   "reach the next judge, and what the last one will not decide is recorded "
                   "as the criterion's labelling queue in --store; needs -o.")
@click.option("--cascade", "cascade_specs", multiple=True, metavar="SPEC",
              help="--escalate: the next judge of the cascade (one spec each, repeatable, "
                   "in order; the last is the strongest).")
@click.option("--confidence", type=click.Choice(["repeats", "probs"]), default=None,
              help="--escalate: a judge's confidence, the share of its --repeats draws that "
                   "give its verdict (default), or the probability it put on its verdict "
                   "(G-Eval's, a rubric judge's score probabilities).")
@click.option("--alpha", type=OPEN_UNIT, default=0.1, show_default=True,
              help="--escalate: kept verdicts agree with people on at least 1 - alpha...")
@click.option("--delta", type=OPEN_UNIT, default=0.1, show_default=True,
              help="--escalate: ...with probability at least 1 - delta.")
@click.option("--decimals", type=click.IntRange(0, 15), default=0, show_default=True,
              help="--escalate: a verdict agrees when it equals the label, both rounded to "
                   "this many places (halves away from zero).")
def command(
    input_path: Path | str,
    metric_specs: tuple[str, ...],
    config: Path | None,
    output: Path | None,
    store_path: Path,
    resume: bool,
    corpus_path: Path | None,
    cache_path: Path | None,
    budget_usd: float | None,
    allow_unknown_cost: bool,
    dry_run: bool,
    as_json: bool,
    progress: bool | None,
    csv_safe: bool,
    workers: int,
    engine: str,
    address: str | None,
    replicas: int | None,
    gpus_per_replica: float,
    verbose: bool,
    retry: frozenset[str],
    allow_failures: bool,
    limit: int | None,
    sample_rows: int | None,
    seed: int,
    until_settled: str | None = None,
    settle_batch: int = 10,
    settle_margin: float = 0.0,
    settle_top_k: int | None = None,
    settle_alpha: float = 0.05,
    settle_statistic: str = "pearson",
    repeats: int = 1,
    repeats_allow_greedy: bool = False,
    repeats_cell: str | None = None,
    escalate_human: str | None = None,
    cascade_specs: tuple[str, ...] = (),
    confidence: str | None = None,
    alpha: float = 0.1,
    delta: float = 0.1,
    decimals: int = 0,
) -> None:
    """Score generations in INPUT (.jsonl, .csv or .parquet) with one or more metrics.

    With --engine ray, INPUT may also be a URI (s3://..., gs://..., file://...), read through
    Ray Data."""
    _check_paths(input_path, config, output, store_path, corpus_path, cache_path,
                 [path for text in metric_specs if (path := spec_file(text)) is not None])
    specs = _specs(metric_specs, config)
    if as_json and output is None and not dry_run:
        raise InputError("--json prints the summary to stdout: give the table a file with -o")
    if until_settled is not None and repeats > 1:
        raise InputError("--until-settled scores one draw per sample: leave --repeats out",
                         field="--repeats")
    if until_settled is not None:
        _until_settled(input_path, specs, output, store_path, until_settled, as_json,
                       batch=settle_batch, margin=settle_margin, top_k=settle_top_k,
                       alpha=settle_alpha, statistic=settle_statistic, seed=seed)
        return
    if escalate_human is not None or cascade_specs or confidence is not None:
        _escalate(input_path, specs, cascade_specs, human=escalate_human, output=output,
                  store_path=store_path,
                  settings=RunSettings(cache_path=cache_path, retry=retry, repeats=repeats,
                                       repeats_allow_greedy=repeats_allow_greedy,
                                       repeats_cell=repeats_cell,
                                       budget=Budget(limit_usd=budget_usd,
                                                     allow_unknown_cost=allow_unknown_cost)),
                  confidence=confidence, alpha=alpha, delta=delta, decimals=decimals,
                  resume=resume, as_json=as_json, csv_safe=csv_safe, progress=progress,
                  allow_failures=allow_failures,
                  refused={"--until-settled": until_settled is not None, "--dry-run": dry_run,
                           "--engine ray": engine != "local", "--limit": limit is not None,
                           "--sample": sample_rows is not None,
                           "--corpus": corpus_path is not None, "--config": config is not None})
        return
    rows = Rows(limit=limit, sample=sample_rows, seed=seed)
    ray = _ray_config(engine, address, replicas, gpus_per_replica, verbose)
    if is_uri(input_path) and dry_run:
        raise InputError("--dry-run reads a local file: a URI is read by a real run")
    settings = RunSettings(budget=Budget(limit_usd=budget_usd,
                                         allow_unknown_cost=allow_unknown_cost),
                           dry_run=dry_run,
                           cache_path=cache_path, retry=retry, repeats=repeats,
                           repeats_allow_greedy=repeats_allow_greedy,
                           repeats_cell=repeats_cell)
    show = _show_progress(progress)
    listwise = _listwise_run(input_path, specs, rows=rows, settings=settings,
                             corpus=corpus_path, ray=ray)
    if dry_run:
        estimate = score_listwise.estimate_listwise_file if listwise else partial(
            estimate_file, workers=workers, on_estimate=_echo_time)
        _echo_estimates(estimate(Path(input_path), specs, settings=settings, resume=resume,
                                 progress=show, rows=rows, host=context_host()), as_json)
        return
    with contextlib.ExitStack() as stack:
        stack.enter_context(_sigterm_interrupts())
        table_path = output or Path(stack.enter_context(tempfile.TemporaryDirectory())) / (
            "scores.csv")
        run = partial(score_listwise.score_listwise_file, Path(input_path)) if listwise \
            else partial(score_file, input_path, corpus=corpus_path, on_estimate=_echo_time,
                         ray=ray)
        result = run(specs, output=table_path, store=store_path, settings=settings,
                     resume=resume, sidecar=output is not None, csv_safe=csv_safe,
                     progress=show, workers=workers, rows=rows, command=_command_line(),
                     host=context_host())
        if output is None:
            _echo_file(table_path)
    _echo_summary(result, output, store_path, corpus_path is not None)
    _echo_fingerprints(result, store_path)
    if budget_usd is not None:
        # A score answered from the judge cache keeps the cost it was paid at (its
        # `cost_usd`, with extra.cached), which this run did not pay.
        print(f"spent ${settings.budget.spent_usd:.4f} of the ${budget_usd:.4f} budget "
              "(answers reused from the judge cache or the store are not paid again)",
              file=sys.stderr)
    _echo_failures(result, store_path)
    if as_json:
        click.echo(json_out.document(summary_rows(result)))
    if result.failed and not allow_failures:
        click.get_current_context().exit(EXIT_FAILED_SCORES)


def _show_progress(progress: bool | None) -> bool:
    """Whether to draw the progress bar (--progress/--no-progress; default: on a terminal);
    --no-progress also silences the periodic progress line."""
    if progress is False:
        progress_line.quiet()
    return sys.stderr.isatty() if progress is None else progress


def _listwise_run(input_path: Path | str, specs: list[MetricSpec], *, rows: Rows,
                  settings: RunSettings, corpus: Path | None, ray: RayConfig | None) -> bool:
    """Whether the metrics are a listwise judge's (score groups the input by item), its
    refused options checked."""
    if not score_listwise.is_listwise_run(specs, context_host()):
        return False
    score_listwise.refuse_options(rows=rows, settings=settings, corpus=corpus,
                                  ray=ray is not None)
    if is_uri(input_path):
        raise InputError("a listwise run reads a local file", field="INPUT")
    return True


def _until_settled(input_path: Path | str, specs: list[MetricSpec], output: Path | None,
                   store_path: Path, human: str, as_json: bool, **options: Any) -> None:
    from judgebench.services.until_settled import score_until_settled
    from judgebench.tables.io import write_table
    from judgebench.tables.scores_table import SIDECAR_ATTR

    if output is None:
        raise InputError("--until-settled writes the rows it scored: give -o")
    done = score_until_settled(input_path, specs, human=human, store=store_path,
                               log=lambda m: print(f"score: {m}", file=sys.stderr),
                               **options)
    write_table(done.table, output, sidecar=done.table.attrs[SIDECAR_ATTR])
    summary = done.to_dict()
    if summary["settled"]:
        told = (f"settled after {summary['items_scored']} of {summary['items_total']} items; "
                f"{summary['judge_calls_saved']} metric calls saved")
    else:
        told = (f"not settled (items exhausted): all {summary['items_total']} items scored "
                "and the confidence sequences still leave some pair undecided")
    print(f"score: {told}", file=sys.stderr)
    if as_json:
        click.echo(json_out.document(summary))


def _escalate(input_path: Path | str, specs: list[MetricSpec], cascade: tuple[str, ...], *,
              human: str | None, output: Path | None, store_path: Path,
              settings: RunSettings, confidence: str | None, alpha: float, delta: float,
              decimals: int, resume: bool, as_json: bool, csv_safe: bool,
              progress: bool | None, allow_failures: bool, refused: dict[str, bool]) -> None:
    """`score --escalate`: the options checked (`refused`: those given that the cascade does
    not take), the cascade run (judgebench.services.score_escalate), its report on stdout
    (text, or JSON with --json), exit 3 when a judge failed."""
    from judgebench.services.score_escalate import score_escalate

    if human is None:
        raise InputError("--cascade and --confidence go with --escalate HUMAN",
                         field="--cascade" if cascade else "--confidence")
    given = [name for name, value in {**refused, "a URI input": is_uri(input_path)}.items()
             if value]
    if given:
        raise InputError("--escalate scores the whole input in the cascade's order: leave "
                         f"out {', '.join(given)}", field="--escalate")
    if output is None:
        raise InputError("--escalate writes the cascade's table: give -o", field="--escalate")
    show = _show_progress(progress)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_sigterm_interrupts())
        result = score_escalate(Path(input_path),
                                [*specs, *(s for c in cascade for s in specs_of(c))],
                                human=human, store=store_path, output=output,
                                settings=settings, confidence=confidence or "repeats",
                                alpha=alpha, delta=delta, decimals=decimals, resume=resume,
                                progress=show, csv_safe=csv_safe, host=context_host(),
                                log=lambda m: print(f"score: {m}", file=SafeWriter(sys.stderr)))
    if as_json:
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    else:
        click.echo(safe(text_out.score_escalate(result)))
    if result.failed or result.failed_scores:
        print(f"score: {result.failed_scores} failed score(s); {result.failed} row(s) "
              "without a verdict or a confidence were sent on, never kept (see FAILED above)",
              file=SafeWriter(sys.stderr))
        if not allow_failures:
            click.get_current_context().exit(EXIT_FAILED_SCORES)


def _ray_config(engine: str, address: str | None, replicas: int | None,
                gpus_per_replica: float, verbose: bool) -> RayConfig | None:
    """The Ray options as one RayConfig (None: --engine local, which takes none of them)."""
    if engine != "ray":
        given = [name for name, value in (("--address", address), ("--replicas", replicas),
                                          ("--gpus-per-replica", gpus_per_replica or None))
                 if value is not None]
        if given:
            raise InputError(f"{', '.join(given)} go with --engine ray")
        return None
    from judgebench.engine.ray_engine import RayConfig

    return RayConfig(address=address, replicas=replicas, gpus_per_replica=gpus_per_replica,
                     verbose=verbose)


def _command_line() -> str:
    """The command line as the user gave it (`judgebench.cli.main` keeps its arguments)."""
    root = click.get_current_context().find_root()
    argv = root.obj.get("argv") if isinstance(root.obj, dict) else None
    return shlex.join(["judgebench", *(argv if argv is not None else sys.argv[1:])])


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the run as Ctrl-C does: committed batches kept, the run recorded as
    interrupted."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _echo_failures(result: RunResult, store_path: Path) -> None:
    """Per metric with failed scores, its most frequent reasons, and where to read them all."""
    failures = text_out.score_failures(result, store_path, TOP_REASONS)
    if failures is not None:
        print(failures, file=SafeWriter(sys.stderr))


def _echo_fingerprints(result: RunResult, store_path: Path) -> None:
    """Warn when what answered a judge changed during this run or since the latest earlier
    run of its signature (`judgebench.engine.fingerprints`)."""
    from judgebench.engine import fingerprints
    from judgebench.engine.store import Store

    if result.run_id is None or str(store_path) == ":memory:":  # nothing kept to compare
        return
    columns = {p.column: p.signature for p in result.metrics}
    with Store(store_path, readonly=True) as store:
        found = store.fingerprints(columns.values())
    err = SafeWriter(sys.stderr)
    for warning in fingerprints.warnings(found, result.run_id, columns):
        print(f"warning: {warning}", file=err)


def _echo_time(estimate: TimeEstimate) -> None:
    print(estimate.text(), file=SafeWriter(sys.stderr))


def _echo_file(path: Path) -> None:
    """The text of a file to stdout, a block at a time."""
    with path.open(encoding="utf-8", newline="") as handle:
        while block := handle.read(1 << 20):
            click.echo(block, nl=False)


def _echo_summary(
    result: RunResult, output: Path | None, store_path: Path, result_has_corpus_file: bool
) -> None:
    # system names and specs come from the user's files
    print(text_out.score_summary(result, output, store_path, result_has_corpus_file),
          file=SafeWriter(sys.stderr))


def _echo_estimates(result: RunResult, as_json: bool) -> None:
    rows = [{"column": column, **estimate} for column, estimate in result.estimates.items()]
    if as_json:
        click.echo(json_out.document(rows))
    elif rows:
        click.echo(text_out.score_estimates(rows))



def _check_paths(input_path: Path | str, config: Path | None, output: Path | None,
                 store_path: Path, corpus_path: Path | None, cache_path: Path | None,
                 spec_files: list[Path] | None = None) -> None:
    """Every path of the run, before any is read or written."""
    destinations.check([
        *([] if is_uri(input_path) else [destinations.read("INPUT", Path(input_path))]),
        *[destinations.read("-m @FILE", path) for path in spec_files or []],
        *([destinations.read("--config", config)] if config is not None else []),
        *([destinations.table("-o", output, sidecar=True)] if output is not None else []),
        destinations.database("--store", store_path),
        *([destinations.table("--corpus", corpus_path)] if corpus_path is not None else []),
        destinations.judge_cache("--cache", cache_path),
    ])


def _specs(metric_specs: tuple[str, ...], config: Path | None) -> list[MetricSpec]:
    """The metrics of -m, then those of --config; none is an error."""
    specs: list[MetricSpec] = [spec for text in metric_specs for spec in specs_of(text)]
    if config is not None:
        specs += load_config(config)
    if not specs:
        raise InputError("no metrics: give -m NAME (see `judgebench metrics`) or --config")
    return specs
