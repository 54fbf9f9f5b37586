"""`judgebench fit`: fit a judge to people's labels (few-shot examples, a decision
threshold, the criterion's wording, the scale) and report it out of fold; the work is
`judgebench.services.fit`."""

from __future__ import annotations

import re
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.engine.runtime import Budget, RunSettings, check_budget_usd
from judgebench.engine.store import DEFAULT_STORE
from judgebench.errors import InputError


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise InputError(f"--shots takes whole numbers, comma-separated (1,2); got {text!r}",
                         field="--shots") from None
    if any(v < 1 for v in values):
        raise InputError("--shots are 1 or more (the starting judge, 0 shots, is always "
                         "a candidate)", field="--shots")
    return values


def _scales(text: str) -> tuple[tuple[int, int], ...]:
    found = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        match = re.fullmatch(r"(-?\d+)-(-?\d+)", part)
        if match is None:
            raise InputError(f"--scales takes MIN-MAX integers, comma-separated (1-5,1-10); "
                             f"got {part!r}", field="--scales")
        found.append((int(match[1]), int(match[2])))
    return tuple(found)


@click.command("fit", epilog=examples(
    ("the candidates, calls and cost of fitting a judge to coherence, without calling it",
     "judgebench fit examples/summeval-sample.jsonl "
     "judge.rubric:backend=litellm,model=gpt-4o-mini,criterion=coherence "
     "--human coherence --dry-run"),
    ("few-shot examples and a threshold, five folds, at most 2 dollars",
     "judgebench fit examples/summeval-sample.jsonl "
     "judge.rubric:backend=litellm,model=gpt-4o-mini,criterion=coherence,price_in=0.15,"
     "price_out=0.6 --human coherence --search few-shot,threshold --folds 4 "
     "--budget-usd 2 --dry-run"),
))
@click.argument("input_path", metavar="INPUT", type=click.Path(path_type=Path))
@click.argument("judge", metavar="JUDGE_SPEC")
@click.option("--human", required=True, metavar="H",
              help="The human score to fit to: the samples' human.H field, or "
                   "store:CRITERION (people's labels in --store; store:PATH:CRITERION names "
                   "another store; store:CRITERION.ANNOTATOR one annotator's).")
@click.option("--raters", default="", metavar="H1,H2,...",
              help="The human fields of the individual raters (two or more): the human "
                   "ceiling on the held-out fold, and each judge against it.")
@click.option("--search", default="few-shot", show_default=True, metavar="WHAT",
              help="What to search, comma-separated: few-shot (examples drawn from the "
                   "labelled rows of the search folds), threshold (the score becomes 1 at or "
                   "above it), criteria (the criterion's wordings of --criteria-file), scale "
                   "(the scales of --scales), panel (panels of the --panel-judge members), "
                   "calibration (a monotone map of the score onto people's scale, isotonic, "
                   "fitted on the search folds; no judge call of its own).")
@click.option("--scales", default="", metavar="A-B,...",
              help="scale: the scales to ask the judge on (1-10,0-100), each score mapped "
                   "linearly back onto the starting judge's scale.")
@click.option("--criteria-file", type=click.Path(path_type=Path), metavar="FILE",
              help="criteria: the wordings to try, one TOML table each ([name] text = "
                   "\"...\") or a JSONL of {\"name\": ..., \"text\": ...} (or none, with "
                   "--rewrite-with).")
@click.option("--rewrite-with", metavar="SPEC",
              help="criteria: a judge spec (any LLM backend) shown the criterion and the "
                   "search rows where the starting judge is furthest from people, asked for "
                   "a rewritten criterion; each rewrite is a wording (rewrite-1, ...) beside "
                   "--criteria-file's. The held-out fold is never shown.")
@click.option("--rewrites", type=click.IntRange(min=1), default=2, show_default=True,
              help="criteria: the rewrites asked of --rewrite-with.")
@click.option("--rewrite-rows", type=click.IntRange(min=1), default=8, show_default=True,
              help="criteria: the disagreements each rewrite prompt shows.")
@click.option("--panel-judge", "panel_judges", multiple=True, metavar="SPEC",
              help="panel: a member judge (an ordinary judge spec; give two or more). Every "
                   "panel of 2 to --panel-max members is a judge.panel candidate; each "
                   "member is asked once per row and its answers shared through the judge "
                   "cache by every panel that holds it.")
@click.option("--panel-max", type=click.IntRange(min=2), default=3, show_default=True,
              help="panel: the largest panel tried.")
@click.option("--panels", "panel_sets", default="", metavar="m1+m2,...",
              help="panel: only these panels, by member number (m1: the first "
                   "--panel-judge), instead of every panel up to --panel-max.")
@click.option("--panel-combine", default="mean,majority", show_default=True,
              metavar="mean,majority",
              help="panel: how a panel combines its members' scores (judge.panel's combine=).")
@click.option("--shots", default="1,2", show_default=True, metavar="K,...",
              help="few-shot: the numbers of examples to try (besides none).")
@click.option("--draws", type=click.IntRange(min=1), default=4, show_default=True,
              help="few-shot: the sets of examples drawn for each number of shots.")
@click.option("--folds", type=click.IntRange(min=3), default=4, show_default=True,
              help="Folds over items; the last is held out of the search and gives the "
                   "number to report.")
@click.option("--folds-over", type=click.Choice(("items", "rows")), default="items",
              show_default=True,
              help="What the folds deal out: items (all rows of an item in one fold: no item "
                   "is both searched on and held out) or rows (for few items).")
@click.option("--statistic", default="pearson", show_default=True,
              help="The agreement the search maximises and the report gives (segment level).")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples of the intervals (over rows).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the folds, the examples drawn and the bootstrap.")
@click.option("--limit", type=click.IntRange(min=1), metavar="N",
              help="Only the first N rows of INPUT.")
@click.option("-o", "--output", type=click.Path(path_type=Path, writable=True),
              help="Write the chosen judge here as a TOML spec (score -m @FILE).")
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True,
              type=click.Path(path_type=Path, writable=True), help="SQLite store of every score.")
@click.option("--cache", "cache_path", type=click.Path(path_type=Path, writable=True),
              help="Judge response cache (default $JUDGEBENCH_CACHE_DIR or ~/.cache/judgebench).")
@click.option("--budget-usd", type=float, callback=lambda _c, _p, v: check_budget_usd(v),
              help="Refuse a fit estimated over this, and stop before spending more.")
@click.option("--allow-unknown-cost", is_flag=True,
              help="With --budget-usd, run a judge whose price is unknown.")
@click.option("--dry-run", is_flag=True, help="Estimate the candidates, calls and cost only.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def command(input_path: Path, judge: str, human: str, raters: str, search: str,
            criteria_file: Path | None, scales: str, rewrite_with: str | None,
            rewrites: int, rewrite_rows: int, panel_judges: tuple[str, ...],
            panel_max: int, panel_sets: str, panel_combine: str, shots: str,
            draws: int, folds: int, folds_over: str, statistic: str, bootstrap: int,
            seed: int, limit: int | None, output: Path | None, store_path: Path,
            cache_path: Path | None, budget_usd: float | None, allow_unknown_cost: bool,
            dry_run: bool, as_json: bool) -> None:
    """Fit JUDGE_SPEC (a spec or @FILE) to the human labels of INPUT and report it out of
    fold: the fitted and the starting judge on a held-out fold neither saw."""
    from judgebench.cli import context_host
    from judgebench.display import safe
    from judgebench.engine.store import Store
    from judgebench.render import fit as fit_out
    from judgebench.render import json as json_out
    from judgebench.services.fit import FitSettings, fit, fit_estimate
    from judgebench.spec import spec_file
    from judgebench.tables import destinations

    destinations.check([
        destinations.read("INPUT", input_path),
        *([destinations.read("--criteria-file", criteria_file)] if criteria_file else []),
        *([destinations.read("JUDGE_SPEC @FILE", path)]
          if (path := spec_file(judge)) is not None else []),
        *([destinations.written("-o", output)] if output is not None else []),
        destinations.database("--store", store_path),
        destinations.judge_cache("--cache", cache_path),
    ])
    settings = FitSettings(human=human, search=tuple(p.strip() for p in search.split(",")),
                           shots=_ints(shots), draws=draws, folds=folds, seed=seed,
                           statistic=statistic, bootstrap=bootstrap, limit=limit,
                           folds_over=folds_over,
                           raters=tuple(r.strip() for r in raters.split(",") if r.strip()),
                           store=str(store_path),
                           criteria_file=None if criteria_file is None else str(criteria_file),
                           scales=_scales(scales), panel_judges=panel_judges,
                           panel_max=panel_max, rewrite_with=rewrite_with,
                           panels=tuple(p.strip() for p in panel_sets.split(",") if p.strip()),
                           rewrites=rewrites, rewrite_rows=rewrite_rows,
                           panel_combine=tuple(p.strip() for p in panel_combine.split(",")
                                               if p.strip()))
    run_settings = RunSettings(budget=Budget(limit_usd=budget_usd,
                                             allow_unknown_cost=allow_unknown_cost),
                               cache_path=cache_path)
    host = context_host()
    if dry_run:
        with Store(":memory:") as db:
            found = fit_estimate(input_path, judge, settings=settings, store=db,
                                 run_settings=run_settings, host=host)
        click.echo(json_out.document(found.to_dict()) if as_json
                   else safe(fit_out.estimate(found)))
        return
    with Store(store_path) as db:
        result = fit(input_path, judge, settings=settings, store=db,
                     run_settings=run_settings, output=output, host=host)
    click.echo(json_out.document(result.to_dict()) if as_json
               else safe(fit_out.report(result)))
