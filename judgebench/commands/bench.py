"""`judgebench bench SPEC... --suite NAME[,NAME...]`: score suites, meta-evaluate them under
their protocols and print a card per suite (judgebench.services.bench)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import (
    alpha_option,
    bootstrap_option,
    interval_option,
    seed_option,
)
from judgebench.display import SafeWriter, safe
from judgebench.engine import progress_line
from judgebench.engine.runtime import check_budget_usd
from judgebench.engine.store import DEFAULT_STORE
from judgebench.errors import EXIT_FAILED_SCORES


@click.command("bench", epilog=examples(
    ("chrF on the first 40 rows of the WMT21 TED talks suite [needs the suites extra]",
     "judgebench bench lexical.chrf --suite wmt21-tedtalks-en-de --limit 40 --bootstrap 100"),
    ("BLEU and chrF on 64 SummEval rows, the cards as markdown [needs the suites extra]",
     "judgebench bench lexical.bleu lexical.chrf --suite summeval --limit 64 --bootstrap 100 "
     "-f markdown"),
))
@click.argument("specs", nargs=-1, required=True, metavar="SPEC...")
@click.option("--suite", "suite_names", required=True, metavar="NAME[,NAME...]",
              help="Suites to run on (see `judgebench suites`), comma-separated, or `all` "
                   "(every suite the metrics fit; the others are skipped, saying so).")
@click.option("--suite-path", "suite_paths", multiple=True, metavar="DIR",
              type=click.Path(path_type=Path),
              help="A suite folder (or a folder of them) in the suite layout; repeatable.")
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True,
              type=click.Path(path_type=Path, writable=True), help="SQLite store of every score.")
@click.option("--resume", is_flag=True,
              help="Reuse what the store holds for the same signature and sample.")
@click.option("--cache", "cache_path", type=click.Path(path_type=Path, writable=True),
              help="Judge response cache (as `score --cache`).")
@click.option("--budget-usd", type=float, callback=lambda _c, _p, v: check_budget_usd(v),
              help="Stop before spending more than this (US dollars), all suites together.")
@click.option("--allow-unknown-cost", is_flag=True,
              help="With --budget-usd, run judges whose price is unknown.")
@click.option("--allow-failures", is_flag=True,
              help="Exit 0 even if some scores failed (error, parse_error, refused); without "
                   "it such a run exits 3, as `score` does.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N",
              help="Score only the first N rows of each suite (of a listwise suite, its "
                   "first N prompts), to try a judge.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              show_default="the number of cores", help="Processes for local metrics.")
@bootstrap_option(1000, "Item-bootstrap resamples for the CIs (0: none).")
@interval_option("analytic: no bootstrap is run; both: the card shows both.")
@seed_option("Seed of the bootstrap.")
@alpha_option("Significance level of the clusters.")
@click.option("--workdir", type=click.Path(path_type=Path, writable=True), metavar="DIR",
              help="Keep each suite's exported samples and scored table in DIR/<suite>/.")
@click.option("--force", is_flag=True,
              help="With --workdir: replace the samples, human and scores files already in "
                   "DIR/<suite>/.")
@click.option("-f", "--format", "fmt", type=click.Choice(["text", "markdown", "json", "html"]),
              default="text", show_default=True, help="How the cards are printed.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(path_type=Path, writable=True),
              help="Write the cards to this file instead of stdout.")
def command(specs: tuple[str, ...], suite_names: str, suite_paths: tuple[Path, ...],
            store_path: Path, resume: bool, cache_path: Path | None, budget_usd: float | None,
            allow_unknown_cost: bool, allow_failures: bool, limit: int | None, workers: int,
            bootstrap: int, interval: str, seed: int, alpha: float, workdir: Path | None,
            force: bool, fmt: str,
            as_json: bool, output: Path | None) -> None:
    """Benchmark metrics or judges (SPEC, as in `score -m`) on built-in suites: each suite's
    samples are scored (store, resume, cache and budget as `score`), meta-evaluated under the
    suite's protocols and shown beside its published baselines and the human ceiling, with
    bootstrap CIs and significance clusters, the verdict first."""
    from judgebench.cli import context_host
    from judgebench.render.bench import render
    from judgebench.services.bench import ScoreOptions, bench
    from judgebench.suite import resolve
    from judgebench.tables import destinations

    host = context_host()
    suites = resolve(suite_names, suite_paths, host=host)
    err = SafeWriter(sys.stderr)
    options = ScoreOptions(store=store_path, resume=resume, cache=cache_path,
                           budget_usd=budget_usd, allow_unknown_cost=allow_unknown_cost,
                           workers=workers, limit=limit, progress=sys.stderr.isatty())
    cards = [destinations.written("-o", output)] if output is not None else []
    result = bench(list(specs), suites, options=options, host=host, bootstrap=bootstrap,
                   seed=seed, alpha=alpha, workdir=workdir, force=force, other_paths=cards,
                   log=lambda m: _log(m, err), interval=interval)
    text = render(result, "json" if as_json else fmt)
    if output is not None:
        from judgebench.tables.io import atomic_path

        with atomic_path(output) as tmp:
            Path(tmp).write_text(text if text.endswith("\n") else text + "\n",
                                 encoding="utf-8")
        print(f"wrote {output}", file=err)
    else:
        click.echo(text if fmt in ("json", "html") or as_json else safe(text), nl=as_json)
    if result.failed:
        print(f"bench: {result.failed} score(s) failed (see `judgebench logs --store "
              f"{store_path} --failed`)", file=err)
        if not allow_failures:
            click.get_current_context().exit(EXIT_FAILED_SCORES)


def _log(message: str, err: SafeWriter) -> None:
    print(message, file=err)
    progress_line.doing(safe(message))
