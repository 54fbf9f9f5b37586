"""The bench service: what `judgebench bench` computes, as a Python function.

`bench(specs, suites)` scores each suite's samples with the metric specs through the same
runner as `score` (`services.score.score_file`: store, resume, judge cache, budget,
workers), meta-evaluates them under each of the suite's protocols with the meta-eval
services (`services.meta_eval.meta_eval`, `services.pairwise.pairwise_meta_eval`), and
puts the user's metrics beside the suite's published baselines and the human ceiling:

- Published baselines: the value as printed in the source; where the suite stores that
  baseline's verdicts or scores (`verdicts_column`), they are meta-evaluated with the user's
  metrics (same items, same bootstrap, same significance clusters) and the recomputed value
  is shown beside the printed one. A published row whose `spec` is one of the user's specs
  says whether the user's value reproduces the printed one (rounded to its precision).
- The human ceiling (suites with several annotators of a criterion): leave-one-annotator-
  out, each annotator's agreement with the mean of the others under the protocol's own
  statistic, level and grouping, averaged over annotators (`meta_eval.human_ceiling`; for
  pairwise suites the majority label of the others, `meta_eval.pairwise`).
- The verdict, first: one sentence per metric on the suite's headline protocol (its first),
  naming the protocol (level, grouping, statistic) and the n it rests on, against the best
  published baseline, like with like: on the full suite, the printed number (and, where the
  suite stores that baseline's verdicts or scores, the significance clusters of the two on
  the same rows); on a part of it (`--limit`), only a baseline recomputed from its stored
  outputs on the same rows. A printed number measured on the full set is then shown as
  "published on the full set, not comparable" and no verdict is drawn from it.
- Each judge's coverage at 1 - alpha = 0.9: the share of the suite it could decide alone with
  that agreement guaranteed (trust or escalate on the suite's labels,
  `judgebench.services.bench_coverage`), or "n/a: no confidence".

A listwise suite (best of N per prompt) is judged by a listwise metric (judge.listwise):
its rows are scored as `score` scores a listwise file (`services.score_listwise`: store,
judge cache, budget and --resume as any run; `--limit N`: the first N prompts) and
meta-evaluated by `meta-eval listwise` (`services.listwise`): best-of-N accuracy with its
Wilson interval at 0.95, beside a random ranking's accuracy (the "random" row).

A pointwise metric skips pairwise and listwise suites, a pairwise one pointwise and listwise
suites and a listwise one the others, saying so.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebench.errors import InputError
from judgebench.plugins import PluginHost, build_host
from judgebench.results import Result
from judgebench.services.bench_coverage import Coverage
from judgebench.services.bench_summary import SummaryCell
from judgebench.suite import EXPORTED, Protocol, Published, Suite, SuiteInfo, export, suite_inputs
from judgebench.tables.destinations import Named

Log = Callable[[str], None]
CEILING = "(human ceiling)"
RANDOM = "(random ranking)"
ALL = "(all)"


@dataclass(frozen=True)
class CardRow:
    """One line of a suite's card: a metric, a published baseline or the human ceiling, under
    one protocol, statistic and subset."""

    label: str
    kind: str  # "yours", "published", "ceiling", "random" (a listwise suite's random ranking)
    protocol: str
    statistic: str
    subset: str | None
    value: float | None
    ci: tuple[float, float] | None = None
    n: int | None = None
    cluster: int | None = None
    printed: float | None = None  # a published row: the value as the source prints it
    precision: int | None = None
    table: str | None = None
    spec: str | None = None
    reproduces: bool | None = None  # a published row with a spec the user ran
    #: a published row: whether its printed number was measured on the rows scored here
    #: (False with --limit: the source measured it on the full set)
    comparable: bool | None = None
    #: `bench --interval analytic|both`: the analytic interval (`meta_eval.analytic`) and its
    #: signature
    analytic: tuple[float, float] | None = None
    analytic_method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"label": self.label, "kind": self.kind,
                               "protocol": self.protocol, "statistic": self.statistic,
                               "subset": self.subset, "value": self.value}
        if self.ci is not None:
            out["ci_low"], out["ci_high"] = self.ci
        if self.analytic is not None:
            out["analytic_ci_low"], out["analytic_ci_high"] = self.analytic
            out["analytic_ci_method"] = self.analytic_method
        for name in ("n", "cluster", "printed", "precision", "table", "spec", "reproduces",
                     "comparable"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass(frozen=True)
class Card:
    """One suite's results."""

    suite: SuiteInfo
    verdicts: list[str]
    rows: list[CardRow]
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None
    scored: int = 0
    failed: int = 0  # scores that failed (error, parse_error, refused)
    workdir: str | None = None
    #: each judge's coverage at 1 - alpha = 0.9 (judgebench.services.bench_coverage)
    coverage: list[Coverage] = field(default_factory=list)
    #: whether every row of the suite was scored (False with a --limit below its size)
    full: bool = True
    #: a pairwise suite: each judge's Bradley-Terry ranking raw and with the outputs'
    #: length and markdown controlled (length alone without the texts;
    #: judgebench.services.pairwise_style)
    style: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        info = self.suite
        return {"suite": info.name, "title": info.title, "kind": info.kind,
                "licence": info.licence, "citation": info.citation,
                "verdict": self.verdicts, "skipped": self.skipped, "scored": self.scored,
                "failed": self.failed, "full_set": self.full,
                "rows": [r.to_dict() for r in self.rows], "notes": self.notes,
                "coverage": [c.to_dict() for c in self.coverage],
                **({"style": self.style} if self.style else {}),
                **({"workdir": self.workdir} if self.workdir else {})}


@dataclass(frozen=True)
class BenchResult(Result):
    cards: list[Card]
    specs: list[str]

    def summary(self) -> list[SummaryCell]:
        """The table across suites (rows: the user's metrics; columns: the suites), one cell
        per metric and suite on the suite's headline (`services.bench_summary`)."""
        from judgebench.services.bench_summary import summarise

        return summarise(self.cards, self.specs)

    def to_dict(self) -> dict[str, Any]:
        return {"summary": [cell.to_dict() for cell in self.summary()],
                "cards": [card.to_dict() for card in self.cards]}

    @property
    def failed(self) -> int:
        """Scores that failed, over every suite (`bench` exits 3 when there are any)."""
        return sum(card.failed for card in self.cards)


@dataclass(frozen=True)
class ScoreOptions:
    """How the samples are scored (the options of `score` that `bench` takes)."""

    store: Path
    resume: bool = False
    cache: Path | None = None
    budget_usd: float | None = None
    allow_unknown_cost: bool = False
    workers: int = 1
    limit: int | None = None
    progress: bool = False


def bench(specs: Sequence[str], suites: Sequence[Suite], *, options: ScoreOptions,
          host: PluginHost | None = None,
          bootstrap: int = 1000, seed: int = 0, alpha: float = 0.05,
          workdir: str | Path | None = None, force: bool = False,
          other_paths: Sequence[Sequence[Named]] = (), log: Log | None = None,
          interval: str = "bootstrap") -> BenchResult:
    """Each suite's card for `specs` (module docstring). `workdir` keeps each suite's exported
    samples and scored table in `workdir/<suite>/` (default: a temporary folder, removed);
    files already there are refused unless `force`. Before anything is written, every spec's
    metric is built and signed (a spec the metric refuses, such as a credential in
    `api_base`, stops the bench) and every path is checked at once (`tables.destinations`:
    `bench_paths`, with the caller's `other_paths`, such as the card's `-o`). `interval`
    "analytic" or "both" adds each ungrouped correlation's analytic interval (`meta_eval.
    analytic`; "analytic" runs no bootstrap)."""
    from judgebench.engine.runtime import Budget
    from judgebench.engine.scoring import prepare_metrics
    from judgebench.spec import parse_spec
    from judgebench.tables import destinations

    log = log or (lambda _message: None)
    bootstrap = _resamples_for(interval, bootstrap)
    if not specs:
        raise InputError("give one or more metric specs (see `judgebench metrics`)",
                         field="SPEC")
    parsed = [parse_spec(s) for s in specs]
    host = host or build_host()
    # every metric built and signed once before anything is written: a spec its metric
    # refuses (a key in api_base) stops the bench here
    for prepared in prepare_metrics(parsed, host):
        prepared.metric.close()
    destinations.check([*bench_paths(suites, options, workdir), *other_paths])
    if workdir is not None and not force:
        destinations.refuse_replacing("--workdir", [
            path for suite in suites for path in workdir_files(suite, Path(workdir))])
    shapes, requires = _shapes(parsed, host)
    # A spec's column (its name without the runtime options) is its label everywhere after.
    specs = [p.column for p in parsed]
    plans = [(suite, *_runnable(suite, specs, shapes, requires)) for suite in suites]
    if not any(runnable for _, runnable, _ in plans):
        raise InputError("nothing to run: " + "; ".join(
            f"{suite.name}: {'; '.join(notes)}" for suite, _, notes in plans), field="SPEC")
    by_column = dict(zip(specs, parsed, strict=True))
    # One budget for the whole bench: --budget-usd bounds every suite's scoring together.
    budget = Budget(limit_usd=options.budget_usd, allow_unknown_cost=options.allow_unknown_cost)
    cards = []
    keep = Path(workdir) if workdir is not None else None
    for suite, runnable, notes in plans:
        if not runnable:
            cards.append(_skipped_card(suite, specs, notes))
            log(f"{suite.name}: skipped ({'; '.join(notes)})")
            continue
        folder = keep / suite.name if keep is not None else Path(
            tempfile.mkdtemp(prefix=f"judgebench-bench-{suite.name}-"))
        try:
            cards.append(_suite_card(suite, runnable, by_column, notes, folder, budget,
                                     options, bootstrap, seed, alpha, log,
                                     str(folder) if keep else None, host, interval))
        finally:
            if keep is None:
                shutil.rmtree(folder, ignore_errors=True)
    if options.budget_usd is not None:
        log(f"spent ${budget.spent_usd:.4f} of the ${options.budget_usd:.4f} budget (answers "
            "reused from the judge cache or the store are not paid again)")
    return BenchResult(cards, list(specs))


def _resamples_for(interval: str, bootstrap: int) -> int:
    """The bootstrap resamples `interval` needs: none for "analytic", some for "both"."""
    if interval not in ("bootstrap", "analytic", "both"):
        raise InputError(f"unknown interval {interval!r}; use bootstrap, analytic or both",
                         field="--interval")
    if interval == "analytic":
        return 0
    if interval == "both" and not bootstrap:
        raise InputError("--interval both needs --bootstrap N (N > 0) for the bootstrap "
                         "interval", field="--interval")
    return bootstrap


def _runnable(suite: Suite, specs: Sequence[str], shapes: Sequence[str | None],
              requires: Sequence[tuple[str, ...]]) -> tuple[list[str], list[str]]:
    """The specs that run on `suite` (its kind, its samples' fields), and a note for each
    that is skipped."""
    fields = suite.fields()
    runnable, notes = [], []
    listwise = suite.info.kind == "listwise"
    for spec, shape, needs in zip(specs, shapes, requires, strict=True):
        missing = [f for f in needs if f not in fields]
        if listwise and shape != "listwise":
            notes.append(f"{spec}: skipped, a {shape or 'pointwise'} metric does not run on a "
                         "listwise suite (a listwise metric, such as judge.listwise, does)")
        elif shape not in (None, suite.info.kind):
            notes.append(f"{spec}: skipped, a {shape} metric does not run on a "
                         f"{suite.info.kind} suite")
        elif missing:
            notes.append(f"{spec}: skipped, it needs {', '.join(missing)}, which this "
                         "suite's samples do not have")
        else:
            runnable.append(spec)
    return runnable, notes


def _skipped_card(suite: Suite, specs: Sequence[str], notes: list[str]) -> Card:
    """The card of a suite no spec runs on, saying why."""
    return Card(suite.info, [f"{', '.join(specs)} cannot run on {suite.info.title}: "
                             + "; ".join(n.split(": ", 1)[1] for n in notes) + "."],
                [], notes, skipped="no metric fits this suite")


def workdir_files(suite: Suite, workdir: Path) -> list[Path]:
    """The files `bench --workdir DIR` writes for `suite`: its export, the scored table and
    the table's .meta.json."""
    folder = workdir / suite.name
    table = folder / {"pairwise": "pairs.csv", "listwise": "listwise.csv"}.get(
        suite.info.kind, "scores.csv")
    return [*(folder / name for name in EXPORTED), table, Path(f"{table}.meta.json")]


def bench_paths(suites: Sequence[Suite], options: ScoreOptions,
                workdir: str | Path | None) -> list[list[Named]]:
    """The destinations groups of a bench: the store, the judge cache, each suite's files
    (read) and, with `workdir`, every file written there."""
    from judgebench.tables import destinations

    groups = [destinations.database("--store", options.store),
              destinations.judge_cache("--cache", options.cache)]
    for suite in suites:
        groups += suite_inputs(suite)
        if workdir is not None:
            *exported, table, _meta = workdir_files(suite, Path(workdir))
            groups += [destinations.written("--workdir", path) for path in exported]
            groups.append(destinations.table("--workdir", table, sidecar=True))
    return groups


def _shapes(specs: Sequence[Any], host: PluginHost
            ) -> tuple[list[str | None], list[tuple[str, ...]]]:
    """Per spec: "pairwise", "pointwise", "listwise", or None (a metric that takes the rows'
    shape); and the sample fields it requires."""
    from judgebench.engine.listwise_table import is_listwise_metric
    from judgebench.engine.pairwise_table import is_pairwise_metric

    shapes: list[str | None] = []
    requires = []
    for spec in specs:
        info = host.metric(spec.name).info
        requires.append(tuple(info.requires))
        if is_listwise_metric(info):
            shapes.append("listwise")
        elif is_pairwise_metric(info):
            shapes.append("pairwise")
        elif "output" in info.requires:
            shapes.append("pointwise")
        else:
            shapes.append(None)
    return shapes, requires


def _suite_card(suite: Suite, specs: list[str], by_column: dict[str, Any], notes: list[str],
                folder: Path, budget: Any, options: ScoreOptions, bootstrap: int, seed: int,
                alpha: float, log: Log, workdir: str | None, host: PluginHost,
                interval: str = "bootstrap") -> Card:
    from judgebench.engine.runtime import RunSettings
    from judgebench.services.score import Rows, score_file

    if suite.info.kind == "listwise":
        return _listwise_card(suite, specs, by_column, notes, folder, budget, options, log,
                              workdir, host)
    files = export(suite, folder, force=True, option="--workdir")  # checked in `bench`
    pairwise = suite.info.kind == "pairwise"
    table = folder / ("pairs.csv" if pairwise else "scores.csv")
    settings = RunSettings(budget=budget, cache_path=options.cache)
    log(f"{suite.name}: scoring {'the first ' + str(options.limit) if options.limit else 'all'}"
        f" of {suite.size()} rows with {len(specs)} metric(s)")
    run = score_file(files["samples.jsonl"], [by_column[s] for s in specs], output=table,
                     store=options.store, settings=settings, resume=options.resume,
                     progress=options.progress, workers=options.workers,
                     rows=Rows(limit=options.limit), command=f"judgebench bench {suite.name}",
                     host=host)
    if run.failed:
        notes.append(f"{run.failed} score(s) failed (see `judgebench logs --store "
                     f"{options.store} --failed`); counted as the protocol says")
    dead = [s for s in specs if run.rows and sum(run.failures.get(s, {}).values()) >= run.rows]
    failures = [_all_failed(s, run, options.store) for s in dead]
    specs = [s for s in specs if s not in dead]
    published = list(suite.info.published)
    stored = sorted({p.verdicts_column for p in published if p.verdicts_column})
    _merge_stored(table, suite, stored)
    rows: list[CardRow] = []
    for protocol in suite.info.protocols:
        if not specs and not stored:
            break
        # a stored baseline is meta-evaluated under the protocols it is published under
        mine = sorted({p.verdicts_column for p in published
                       if p.verdicts_column and p.protocol == protocol.name})
        if pairwise:
            rows += _pairwise_rows(table, suite, protocol, specs, mine, bootstrap, seed,
                                   alpha)
        else:
            rows += _pointwise_rows(table, suite, protocol, specs, mine, bootstrap, seed,
                                    alpha, interval)
    full = options.limit is None or options.limit >= suite.size()
    rows = _with_published(rows, published, specs, full)
    rows = _without_values(rows, dead)
    coverage = _coverage(table, suite, specs, stored, run.rows)
    style = _style(table, suite, specs, files["samples.jsonl"], log)
    if not full:
        notes.append(f"--limit {options.limit}: {run.rows} of the suite's {suite.size()} rows; "
                     "a published number measured on the full set is not comparable with "
                     "them (shown, no verdict drawn from it); a published judge with stored "
                     "outputs is recomputed on the same rows")
    return Card(suite.info, failures + _verdicts(suite.info, rows, specs, full), rows, notes,
                scored=run.rows, failed=run.failed, workdir=workdir, coverage=coverage,
                full=full, style=style)


def _style(table: Path, suite: Suite, specs: list[str], samples: Path, log: Log
           ) -> list[dict[str, Any]]:
    """A pairwise suite's judges ranked by Bradley-Terry raw and with style controlled, as
    `aggregate -r bradley-terry --control length,markdown --winner SPEC` ranks the scored
    table with the suite's texts (`pairwise_style.add_texts`, which writes them into the
    table; `--control length` where it could not add them), failed verdicts as the headline
    protocol counts them, where aggregate can."""
    from judgebench.services.pairwise_style import add_texts, style_rankings

    if suite.info.kind != "pairwise" or not specs:
        return []
    why = add_texts(table, samples, output=table)
    if why is not None:
        log(f"{suite.name}: style control without markdown: {why}")
    return style_rankings(table, specs, level=0.95,
                          failed_as=suite.info.protocols[0].failed_as)


def _listwise_card(suite: Suite, specs: list[str], by_column: dict[str, Any],
                   notes: list[str], folder: Path, budget: Any, options: ScoreOptions,
                   log: Log, workdir: str | None, host: PluginHost) -> Card:
    """A listwise suite's card: its prompts judged (`score_listwise_file`), each protocol's
    best-of-N accuracy per judge (`services.listwise`) and a random ranking's."""
    from judgebench.engine.runtime import RunSettings
    from judgebench.services.score import Rows
    from judgebench.services.score_listwise import score_listwise_file
    from judgebench.suite import SAMPLES

    files = export(suite, folder, force=True, option="--workdir")  # checked in `bench`
    table = folder / "listwise.csv"
    prompts = len({str(row.get("item")) for row in suite.rows(SAMPLES)})
    log(f"{suite.name}: judging {'the first ' + str(options.limit) if options.limit else 'all'}"
        f" of {prompts} prompts with {len(specs)} metric(s)")
    run = score_listwise_file(files["samples.jsonl"], [by_column[s] for s in specs],
                              output=table, store=options.store,
                              settings=RunSettings(budget=budget, cache_path=options.cache),
                              resume=options.resume, progress=options.progress,
                              workers=options.workers, rows=Rows(limit=options.limit),
                              command=f"judgebench bench {suite.name}", host=host)
    if run.failed:
        notes.append(f"{run.failed} judgement(s) failed (see `judgebench logs --store "
                     f"{options.store} --failed`); their prompts are left out of the accuracy "
                     "and counted")
    dead = [s for s in specs if run.rows and sum(run.failures.get(s, {}).values()) >= run.rows]
    failures = [_all_failed(s, run, options.store) for s in dead]
    specs = [s for s in specs if s not in dead]
    rows: list[CardRow] = []
    for protocol in suite.info.protocols if specs else []:
        rows += _listwise_rows(table, protocol, specs)
    notes += _tied_notes(suite, options.limit)
    full = options.limit is None or options.limit >= prompts
    rows = _with_published(rows, list(suite.info.published), specs, full)
    rows = _without_values(rows, dead)
    if not full:
        notes.append(f"--limit {options.limit}: {run.rows} of the suite's {prompts} prompts; "
                     "a published number measured on the full set is not comparable with "
                     "them")
    return Card(suite.info, failures + _verdicts(suite.info, rows, specs, full), rows, notes,
                scored=run.rows, failed=run.failed, workdir=workdir, full=full)


def _tied_notes(suite: Suite, limit: int | None) -> list[str]:
    """Per protocol, how many of the prompts judged have several candidates tied for best: a
    judge that picks one candidate is never right on them (RewardBench 2's rule)."""
    from judgebench.suite import HUMAN, SAMPLES

    marks: dict[str, dict[str, float]] = {}
    for row in suite.rows(HUMAN):
        item = str(row.get("item"))
        by_column = marks.setdefault(item, {})
        for column, value in row.items():
            if column.startswith("human.") and isinstance(value, int | float):
                by_column[column] = by_column.get(column, 0.0) + float(value)
    order = list(dict.fromkeys(str(row.get("item")) for row in suite.rows(SAMPLES)))
    items = order[:limit] if limit is not None else order
    notes = []
    for protocol in suite.info.protocols:
        tied = sum(1 for item in items if marks.get(item, {}).get(protocol.human, 0.0) > 1)
        if tied:
            notes.append(f"{protocol.name}: {tied} of the {len(items)} prompts have several "
                         "candidates tied for best; a judge that picks one candidate is never "
                         f"right on them (its best possible accuracy: "
                         f"{100 * (len(items) - tied) / len(items):.1f}%)")
    return notes


def _listwise_rows(table: Path, protocol: Protocol, specs: list[str]) -> list[CardRow]:
    """Each judge's best-of-N accuracy under `protocol` (every prompt, and per subset when
    the protocol is by subset), with the random ranking's accuracy on the same prompts."""
    from judgebench.services.listwise import ALL as LISTWISE_ALL
    from judgebench.services.listwise import listwise

    report = listwise(table, humans=[protocol.human], judges=specs, confidence=0.95)
    by_subset = protocol.by == "subset"
    out: list[CardRow] = []
    randoms: dict[str | None, dict[float, str]] = {}
    for r in report.rows:
        if r.subset != LISTWISE_ALL and not by_subset:
            continue
        subset = (ALL if r.subset == LISTWISE_ALL else r.subset) if by_subset else None
        ci = (r.ci_low, r.ci_high) if r.ci_low is not None and r.ci_high is not None else None
        out.append(CardRow(label=r.judge, kind="yours", protocol=protocol.name,
                           statistic="accuracy", subset=subset, value=r.accuracy, ci=ci,
                           n=r.prompts))
        if r.random is not None:
            randoms.setdefault(subset, {}).setdefault(r.random, r.judge)
    for subset, found in randoms.items():
        for value, judge in found.items():
            n = next(row.n for row in out if row.label == judge and row.subset == subset)
            label = RANDOM if len(found) == 1 else f"{RANDOM} on {judge}'s prompts"
            out.append(CardRow(label=label, kind="random", protocol=protocol.name,
                               statistic="accuracy", subset=subset, value=value, n=n))
    return out


def _all_failed(spec: str, run: Any, store: Path) -> str:
    """The sentence that opens a card for a spec none of whose scores came back."""
    counts: dict[str, int] = {}
    for (status, _reason), n in run.failures.get(spec, {}).items():
        counts[status] = counts.get(status, 0) + n
    kinds = ", ".join(f"{status} {n}" for status, n in sorted(counts.items()))
    return (f"{spec}: every one of its {run.rows} scores failed ({kinds}; see `judgebench "
            f"logs --store {store} --failed`), so it has no statistic, no interval and no "
            "verdict here.")


def _without_values(rows: list[CardRow], dead: Sequence[str]) -> list[CardRow]:
    """`rows` and, for each spec whose every score failed, an empty row in each table the
    user's metrics appear in (no value, interval or cluster: there is no data)."""
    if not dead:
        return rows
    tables = list(dict.fromkeys((r.protocol, r.statistic, r.subset) for r in rows
                                if r.kind != "ceiling"))
    return [CardRow(label=spec, kind="yours", protocol=protocol, statistic=statistic,
                    subset=subset, value=None, n=0)
            for spec in dead for protocol, statistic, subset in tables] + rows


def _coverage(table: Path, suite: Suite, specs: list[str], stored: list[str], scored: int
              ) -> list[Coverage]:
    """Each judge's coverage at 1 - alpha = 0.9 on the headline protocol's human labels
    (judgebench.services.bench_coverage), published judges under their papers' names."""
    import dataclasses

    from judgebench.services.bench_coverage import pairwise_coverage, pointwise_coverage

    head = suite.info.protocols[0]
    judges = [*specs, *stored]
    if suite.info.kind == "listwise":
        return []  # a pick carries no confidence to calibrate a threshold on
    if suite.info.kind == "pairwise":
        found = pairwise_coverage(table, human=head.human, ties=head.ties, judges=judges,
                                  specs=specs)
    else:
        found = pointwise_coverage(judges, specs, scored)
    names = {p.verdicts_column: p.metric for p in suite.info.published if p.verdicts_column}
    return [dataclasses.replace(c, label=names.get(c.label, c.label)) for c in found]


def _merge_stored(table: Path, suite: Suite, stored: Sequence[str]) -> None:
    """Add the stored published verdicts/scores (`<col>`, `<col>.ab`, `<col>.ba` in the human
    table) to the scored table, on its key; the sidecar stays as `score` wrote it."""
    if not stored:
        return
    import pandas as pd

    from judgebench.tables.io import atomic_path

    human = suite.human()
    wanted = [c for c in human.columns
              if any(c == s or c in (f"{s}.ab", f"{s}.ba") for s in stored)]
    key = list(suite.key)
    scored = pd.read_csv(table, dtype={k: str for k in key}, keep_default_na=False,
                         na_values=[""])
    human = human[[*key, *wanted]].astype({k: str for k in key})
    merged = scored.merge(human, on=key, how="left", validate="one_to_one")
    with atomic_path(table) as tmp:  # a reader never sees it half-written
        merged.to_csv(tmp, index=False)


def _pairwise_rows(table: Path, suite: Suite, protocol: Protocol, specs: list[str],
                   stored: list[str], bootstrap: int, seed: int, alpha: float
                   ) -> list[CardRow]:
    from judgebench.services.pairwise import pairwise_meta_eval

    frame = _told_failed(table, [protocol.human])
    judges = [*specs, *stored]
    groups: list[tuple[str | None, Any]] = [(ALL, frame)]
    if protocol.by == "subset" and "category" in frame.columns:
        groups += [(s, frame[frame["category"] == s]) for s in suite.info.subsets
                   if (frame["category"] == s).any()]
    annotators = suite.info.annotators.get(protocol.criterion, [])
    raters = [f"{protocol.human}.{a}" for a in annotators]
    out: list[CardRow] = []
    for subset, part in groups:
        sub = part.reset_index(drop=True)
        result = pairwise_meta_eval(sub, humans=[protocol.human], judges=judges,
                                    human_ties=protocol.ties or "drop", bootstrap=bootstrap,
                                    seed=seed, compare=len(judges) > 1, alpha=alpha,
                                    failed_as=protocol.failed_as)
        for r in result.to_dict():
            if r["statistic"] not in protocol.statistics:
                continue
            out.append(_row(r, protocol, subset, "yours" if r["metric"] in specs
                            else "published"))
        if len(raters) >= 2 and set(raters) <= set(sub.columns):
            ceiling = pairwise_meta_eval(sub, humans=raters, judges=judges[:1],
                                         human_ties=protocol.ties or "drop",
                                         bootstrap=0, seed=seed,
                                         failed_as=protocol.failed_as)
            out += [_row(r, protocol, subset, "ceiling") for r in ceiling.to_dict()
                    if r["metric"] == CEILING and r["statistic"] in protocol.statistics]
    return out


def _told_failed(table: Path, humans: Sequence[str]) -> Any:
    """The pairwise table with its failed verdicts (told by the sidecar `score` wrote) reading
    `failed`, so that every subset of its rows counts them as the protocol says."""
    from judgebench.tables.pairs import PreparedPairs

    prepared = PreparedPairs.read(table, humans)
    frame = prepared.frame
    for column, mask in prepared.failed.masks.items():
        frame[column] = frame[column].astype(object).mask(mask, "failed")
    return frame


def _pointwise_rows(table: Path, suite: Suite, protocol: Protocol, specs: list[str],
                    stored: list[str], bootstrap: int, seed: int, alpha: float,
                    interval: str = "bootstrap") -> list[CardRow]:
    from judgebench.services.meta_eval import meta_eval, task_set
    from judgebench.suite import LEVELS
    from judgebench.tables.failed import parse_failed_as
    from judgebench.tables.prepared import PreparedTable

    level, grouping = LEVELS[protocol.level]
    if protocol.grouping is not None:
        grouping = protocol.grouping
    annotators = suite.info.annotators.get(protocol.criterion, [])
    raters = [f"{protocol.human}.{a}" for a in annotators] if len(annotators) >= 2 else []
    metrics = [*specs, *stored]
    convention = parse_failed_as(protocol.failed_as, pairwise=False)
    tasks = task_set(humans=[protocol.human], views=[(level, grouping)],
                     statistics=protocol.statistics, bootstrap=bootstrap, seed=seed,
                     compare=len(metrics) > 1, alpha=alpha, raters=raters,
                     interval=interval)
    prepared = PreparedTable.read(table, [protocol.human], metrics, raters=raters,
                                  higher=stored, use_corpus=level == "system",
                                  failed_as=convention, views=[(level, grouping)])
    result = meta_eval(prepared, tasks)
    out = []
    for r in result.to_dict():
        kind = ("ceiling" if r["metric"] == CEILING else
                "yours" if r["metric"] in specs else "published")
        out.append(_row(r, protocol, None, kind))
    return out


def _finite(value: Any) -> float | None:
    from meta_eval.numerics import finite_or_none

    return finite_or_none(value) if isinstance(value, int | float) else None


def _row(r: dict[str, Any], protocol: Protocol, subset: str | None, kind: str) -> CardRow:
    low, high = _finite(r.get("ci_low")), _finite(r.get("ci_high"))
    a_low, a_high = _finite(r.get("analytic_ci_low")), _finite(r.get("analytic_ci_high"))
    analytic = (a_low, a_high) if a_low is not None and a_high is not None else None
    return CardRow(label=r["metric"], kind=kind, protocol=protocol.name,
                   statistic=r["statistic"], subset=subset, value=_finite(r.get("value")),
                   ci=(low, high) if low is not None and high is not None else None,
                   n=r.get("n"), cluster=r.get("cluster"), analytic=analytic,
                   analytic_method=r.get("analytic_ci_method") if analytic else None)


def _with_published(rows: list[CardRow], published: list[Published], specs: list[str],
                    full: bool) -> list[CardRow]:
    """Every published number as a row: a stored baseline's recomputed row gets its printed
    value (and its paper label); a number with a spec the user ran says if it reproduces.
    On a part of the suite (`full` False) no printed number is comparable or reproduced."""
    out = list(rows)
    index = {(r.label, r.protocol, r.statistic, r.subset): k for k, r in enumerate(out)}
    for p in published:
        subset = p.subset if p.subset is not None else (
            ALL if any(r.protocol == p.protocol and r.subset == ALL for r in rows) else None)
        key = (p.verdicts_column, p.protocol, p.statistic, subset)
        if p.verdicts_column and key in index:
            k = index[key]
            out[k] = _replace(out[k], label=p.metric, printed=p.value, precision=p.precision,
                              table=p.table, spec=p.verdicts_column,
                              reproduces=_same(out[k].value, p) if full else None,
                              comparable=full)
            continue
        reproduces = None
        if full and p.spec is not None and _column(p.spec) in specs:
            mine = index.get((_column(p.spec), p.protocol, p.statistic, subset))
            reproduces = _same(out[mine].value, p) if mine is not None else None
        out.append(CardRow(label=p.metric, kind="published", protocol=p.protocol,
                           statistic=p.statistic, subset=subset, value=None,
                           printed=p.value, precision=p.precision, table=p.table,
                           spec=p.spec, reproduces=reproduces, comparable=full))
    labels = {p.verdicts_column: p.metric for p in published if p.verdicts_column}
    return [_replace(r, label=labels[r.label], spec=r.label)
            if r.kind == "published" and r.label in labels else r for r in out]


def _column(spec: str) -> str:
    from judgebench.spec import parse_spec

    return parse_spec(spec).column


def _replace(row: CardRow, **changes: Any) -> CardRow:
    import dataclasses

    return dataclasses.replace(row, **changes)


def _same(value: float | None, p: Published) -> bool | None:
    """The value rounded as the source prints it equals the printed value."""
    if value is None:
        return None
    return round(value, p.precision) == round(p.value, p.precision)


def _verdicts(info: SuiteInfo, rows: list[CardRow], specs: list[str], full: bool = True
              ) -> list[str]:
    """One sentence per metric on the headline protocol (the first) and first statistic,
    over every pair or item (and per subset for a suite with subsets). `limited` (a part of
    the suite, `--limit`): compared only with baselines recomputed on the same rows."""
    head = info.protocols[0]
    statistic = head.statistics[0]
    subsets = [ALL, *info.subsets] if any(r.subset == ALL for r in rows) else [None]
    out = []
    for spec in specs:
        for subset in subsets:
            mine = _find(rows, spec, head.name, statistic, subset, "yours")
            if mine is None or (subset not in (None, ALL) and mine.value is None):
                continue
            where = info.title.split(" (")[0] + (
                f"-{subset}" if subset not in (None, ALL) else "")
            sentence = _sentence(spec, mine, where, head, statistic,
                                 [r for r in rows if r.kind == "published"
                                  and r.protocol == head.name and r.statistic == statistic
                                  and r.subset == subset],
                                 _find(rows, CEILING, head.name, statistic, subset,
                                       "ceiling"), full)
            out.append(_with_random(sentence, rows, mine, statistic))
    return out


def _with_random(sentence: str, rows: list[CardRow], mine: CardRow, statistic: str) -> str:
    """A listwise verdict ends with a random ranking's accuracy on the same prompts."""
    random = [r for r in rows if r.kind == "random" and r.protocol == mine.protocol
              and r.statistic == statistic and r.subset == mine.subset]
    if mine.value is None or not random:
        return sentence
    chosen = next((r for r in random if r.label.endswith(f" {mine.label}'s prompts")),
                  random[0])
    return (f"{sentence[:-1]}; a random ranking gets {_fmt(chosen.value, statistic)} on "
            "the same prompts.")


def _find(rows: list[CardRow], label: str, protocol: str, statistic: str,
          subset: str | None, kind: str) -> CardRow | None:
    return next((r for r in rows if r.label == label and r.protocol == protocol
                 and r.statistic == statistic and r.subset == subset and r.kind == kind),
                None)


def _fmt(value: float | None, statistic: str) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:.1f}%" if statistic.startswith("accuracy") else f"{value:.3f}"


#: how a protocol's level reads in a verdict, and what its n counts
_LEVEL_WORDS = {"system": ("system level", "systems"),
                "item": ("segment level, grouped by item", "items"),
                "global": ("segment level, no grouping", "rows"),
                "pair": ("pairwise", "pairs"),
                "prompt": ("best of N per prompt", "prompts")}


def protocol_words(protocol: Protocol, n: int | None) -> str:
    """The protocol a verdict rests on, as words: its name, level, grouping and n."""
    level, unit = _LEVEL_WORDS[protocol.level]
    if protocol.level == "pair":
        ties = protocol.ties or "drop"
        level += ", human ties dropped" if ties == "drop" else f", human ties: {ties}"
    elif protocol.grouping not in (None, "item"):
        level = f"segment level, grouped by {protocol.grouping}"
        unit = f"{protocol.grouping}s"
    return f"protocol {protocol.name}: {level}; n = {'?' if n is None else n} {unit}"


def _sentence(spec: str, mine: CardRow, where: str, protocol: Protocol, statistic: str,
              published: list[CardRow], ceiling: CardRow | None, full: bool = True) -> str:
    verb = {"pair": "agrees with people",
            "prompt": "picks people's best"}.get(protocol.level, "correlates with people")
    if mine.value is None:
        unit = {"pair": "pair", "prompt": "prompt"}.get(protocol.level, "item")
        return f"{spec} has no {statistic} on {where}: no {unit} could be counted."
    ci = (f" [{_fmt(mine.ci[0], statistic)}, {_fmt(mine.ci[1], statistic)}]"
          if mine.ci else "")
    text = (f"{spec} {verb} on {where} at {statistic} {_fmt(mine.value, statistic)}{ci} "
            f"({protocol_words(protocol, mine.n)})")
    recomputed = [r for r in published if r.value is not None]
    printed = [r for r in published if r.printed is not None]
    if not full:
        # like with like: only a baseline recomputed on these same rows
        if recomputed:
            best = max(recomputed, key=lambda r: r.value if r.value is not None else -math.inf)
            text += ", " + _against(mine, best, statistic, same_rows=True)
        elif printed:
            text += ("; the published numbers were measured on the full set, not on these "
                     "rows: not comparable, no verdict against them")
    elif printed:
        best = max(printed, key=lambda r: r.printed if r.printed is not None else -math.inf)
        text += ", " + _against(mine, best, statistic)
    elif recomputed:
        best = max(recomputed, key=lambda r: r.value if r.value is not None else -math.inf)
        text += ", " + _against(mine, best, statistic)
    if ceiling is not None and ceiling.value is not None:
        text += f"; the human ceiling is {_fmt(ceiling.value, statistic)}"
    return text + "."


def _against(mine: CardRow, best: CardRow, statistic: str, same_rows: bool = False) -> str:
    """How `mine` stands against the baseline `best`: by their significance clusters where
    both were tested on the same rows, else against the printed value by `mine`'s interval.
    `same_rows` (a part of the suite): only the value recomputed on the same rows counts."""
    if same_rows:
        recomputed = (f"{_fmt(best.value, statistic)} recomputed from its stored outputs on "
                      f"the same rows")
        if best.printed is not None:
            recomputed += f"; {_fmt(best.printed, statistic)} published on the full set"
        if mine.cluster is not None and best.cluster is not None:
            side = ("significantly below" if mine.cluster > best.cluster else
                    "significantly above" if mine.cluster < best.cluster else
                    "not significantly different from")
            return f"{side} the published {best.label} ({recomputed})"
        if mine.value is None or best.value is None:
            return f"beside the published {best.label} ({recomputed})"
        side = "below" if mine.value < best.value else "above"
        return f"{side} the published {best.label} ({recomputed}; no significance test)"
    reference = best.printed if best.printed is not None else best.value
    shown = _fmt(reference, statistic)
    if best.printed is None:
        shown += " recomputed from its stored verdicts"
    if mine.cluster is not None and best.cluster is not None and best.value is not None:
        if mine.cluster > best.cluster:
            return f"significantly below the published {best.label} ({shown})"
        if mine.cluster < best.cluster:
            return f"significantly above the published {best.label} ({shown})"
        return f"not significantly different from the published {best.label} ({shown})"
    if mine.value is None or reference is None:
        return f"beside the published {best.label} ({shown})"
    side = "below" if mine.value < reference else "above"
    if mine.ci is not None and mine.ci[0] <= reference <= mine.ci[1]:
        return (f"not significantly {side} the published {best.label} ({shown}, inside "
                "its confidence interval)")
    if mine.ci is not None:
        return (f"significantly {side} the published {best.label} ({shown}, outside its "
                "confidence interval)")
    return f"{side} the published {best.label} ({shown}; no interval to test it)"


__all__ = ["BenchResult", "Card", "CardRow", "ScoreOptions", "bench"]
