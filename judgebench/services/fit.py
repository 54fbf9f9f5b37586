"""`judgebench fit`: a judge fitted to people's labels (few-shot examples, a decision
threshold, the criterion's wording, the scale, a panel of judges), reported out of fold
(meta_eval.fitting has the scheme and its numbers).

Every candidate is an ordinary judge spec (judge.rubric with `examples=`, `threshold=`,
`definition=`, `min=`/`max=` with `to_min=`/`to_max=`; judge.panel with `members=` and
`combine=`, services.fit_panels), scored by the scoring engine (`engine.runner.run`) into
the store and the judge cache, so a rerun pays for nothing twice and `--budget-usd` is
checked before the first call (the engine's estimate of every candidate's calls and price)
and again before each call (the run's Budget). Wordings rewritten by a judge from the
starting judge's disagreements (--rewrite-with) are made per training split
(services.fit_rewrite).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError, JudgebenchError
from judgebench.results import Result
from judgebench.spec import MetricSpec, specs_of

if TYPE_CHECKING:
    from judgebench.engine.runtime import RunSettings
    from judgebench.engine.store import Store
    from judgebench.models import Sample
    from judgebench.plugins import PluginHost
    from judgebench.services.fit_panels import Panels
    from judgebench.services.fit_rewrite import Rewrite
    from judgebench.tables.criteria_variants import Variant
    from meta_eval.arrays import BoolArray, FloatArray

#: The judges `fit` can fit (their options take `examples` and `threshold`).
FITTABLE = ("judge.rubric",)
SEARCHES = ("few-shot", "threshold", "criteria", "scale", "panel", "calibration")
#: Permutations of the paired test of the gain.
PERMUTATIONS = 1000
#: The column of the starting judge, of each candidate, and of the chosen one.
START, FITTED = "start", "fitted"


@dataclass(frozen=True)
class FitSettings:
    """What `fit` searches and how it reports (the command's options)."""

    human: str
    search: tuple[str, ...] = ("few-shot",)
    shots: tuple[int, ...] = (1, 2)
    draws: int = 4
    folds: int = 4
    seed: int = 0
    statistic: str = "pearson"
    bootstrap: int = 1000
    limit: int | None = None
    #: what the folds deal out: items (every row of an item in one fold) or rows
    folds_over: str = "items"
    #: the human fields of the individual raters of the same criterion (the human ceiling)
    raters: tuple[str, ...] = ()
    #: the store a `store:CRITERION` human is read from when its name gives none (--store)
    store: str | None = None
    #: criteria: the file of the criterion's wordings (tables.criteria_variants)
    criteria_file: str | None = None
    #: scale: the scales (min, max) to ask the judge on, each reported on the starting one
    scales: tuple[tuple[int, int], ...] = ()
    #: panel: the member judges' specs, the largest panel tried, the aggregations
    panel_judges: tuple[str, ...] = ()
    panel_max: int = 3
    panel_combine: tuple[str, ...] = ("mean", "majority")
    #: the user's panels ("m1+m3", ...) instead of every subset
    panels: tuple[str, ...] = ()
    #: criteria: the judge spec that rewrites the criterion from the search folds'
    #: disagreements (critique shadowing), the rewrites asked, the rows shown
    rewrite_with: str | None = None
    rewrites: int = 2
    rewrite_rows: int = 8


@dataclass(frozen=True)
class Number:
    """One agreement value with its interval and the units it is computed on."""

    value: float
    ci_low: float | None
    ci_high: float | None
    n: int


@dataclass(frozen=True)
class Candidate:
    name: str
    shots: int
    examples: tuple[str, ...]  # item/system of each example
    threshold: float | None
    in_search: float
    #: the wording of the criterion (its name in --criteria-file; None: the starting judge's)
    criterion: str | None = None
    #: the scale the judge is asked on, as "min-max" (None: the starting judge's)
    scale: str | None = None
    #: a panel's members (m1, m2, ... in --panel-judge order) and aggregation
    panel: str | None = None
    #: a wording rewritten for the cross-fitted choice on fold J only ("fold-J"), which the
    #: final choice does not consider (None: every choice considers it)
    split: str | None = None
    #: the knots of its calibration map fitted on every search row (None: uncalibrated;
    #: services.fit_calibration)
    calibration_knots: int | None = None


@dataclass
class FitResult(Result):
    judge: str  # the starting judge's signature
    fitted_signature: str
    statistic: str
    human: str
    units: int
    search_units: int
    held_out_units: int
    held_out_fold: int
    candidates: list[Candidate]
    chosen: str
    in_search: Number
    cross_fitted: Number
    cross_fitted_choices: dict[int, str]
    held_out: Number
    held_out_start: Number
    gain: Number
    gain_p_value: float
    #: with --raters, on the held-out fold: the raters' leave-one-out agreement
    #: (meta_eval.ceiling.human_ceiling), and each judge against the same references
    ceiling: float | None
    ceiling_fitted: float | None
    ceiling_start: float | None
    estimated_usd: float | None
    spent_usd: float
    failed: int
    spec_path: str | None
    signature: str
    options: dict[str, Any] = field(default_factory=dict)
    #: --rewrite-with: each rewrite (its name, text, split, or why it was not tried) and the
    #: rows each split's prompts showed (item/system; "final", "fold-J")
    rewrites: list[Rewrite] = field(default_factory=list)
    rewrite_rows: dict[str, list[str]] = field(default_factory=dict)
    #: --search calibration: on the held-out fold, each judge's error on people's scale
    #: (mae, bias = judge - people; "fitted", "start")
    held_out_errors: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cleaned: dict[str, Any] = _plain(asdict(self))
        return cleaned


def fit(input_path: Path, judge: str, *, settings: FitSettings, store: Store,
        run_settings: RunSettings, output: Path | None = None, host: PluginHost | None = None
        ) -> FitResult:
    """Fit `judge` (a spec or @FILE) to the human score `settings.human` of `input_path`;
    write the chosen judge to `output` (TOML) when given."""
    from judgebench.engine.runner import run
    from judgebench.services.fit_calibration import (
        add_calibrated,
        held_out_errors,
        knot_lists,
    )
    from meta_eval import fitting
    from meta_eval.significance import permutation_test
    from meta_eval.statistics import get

    plan, written = _planned(input_path, judge, settings, store=store,
                             run_settings=run_settings, host=host)
    estimated = _preflight(plan, store=store, run_settings=run_settings, host=host).cost_usd
    if settings.rewrite_with is not None and written is None:
        written = _rewritten(plan, input_path, judge, store=store, run_settings=run_settings,
                             host=host, cached_only=False)
    plan, rewrites, shown = written or (plan, [], {})

    start, units, human, folds = plan.start, plan.units, plan.human, plan.folds
    search, held, held_fold = plan.search, plan.held, plan.held_fold
    key = plan.key
    search_units, held_units = plan.search_units, plan.held_units
    scored = run(search_units, list(plan.shot_specs.values()), store=store, resume=True,
                 settings=run_settings, host=host)
    found = _by_unit(scored.table, search_units, list(plan.shot_specs))
    if plan.panels is not None:
        from judgebench.services.fit_panels import run_panels

        on_panels = run_panels(search_units, plan.panels, store=store,
                               run_settings=run_settings, host=host)
        found.update(_by_unit(on_panels.table, search_units, list(plan.panels.specs)))
    candidates, own, wording = _candidate_scores(plan, found)
    calibrations = add_calibrated(plan, candidates, own, wording)
    choosable, allowed, split = _choosable(candidates, wording, rewrites)
    spec = get(settings.statistic)
    try:
        chosen, _ = fitting.best(settings.statistic, human=human, candidates={
            k: candidates[k] for k in choosable}, use=search)
    except ValueError:
        raise JudgebenchError(
            f"fit: no candidate has a {settings.statistic} value on the {int(search.sum())} "
            "search rows (every score failed, or the judge gave one score to every row); "
            f"`judgebench runs --store` and `logs` show its answers") from None
    report = [Candidate(label, len(own[label][0]), tuple(_unit(units[i]) for i in own[label][0]),
                        own[label][1],
                        fitting.value(settings.statistic, human=np.where(search, human, np.nan),
                                      metric=scores).value, *wording[label],
                        split.get(label), calibrations.count(label))
              for label, scores in candidates.items()]
    in_search = _number(settings, human=np.where(search, human, np.nan),
                        metric=candidates[chosen])
    pooled, per_fold = fitting.cross_fitted(settings.statistic, human=human,
                                            candidates=candidates, folds=folds, search=search,
                                            allowed=allowed,
                                            per_fold=calibrations.per_fold)
    crossed = _number(settings, human=human, metric=pooled)

    threshold = own[chosen][1]
    fitted_on = (f"fit:human={key},statistic={settings.statistic},folds="
                 f"{int(folds.max()) + 1},folds-over={settings.folds_over},"
                 f"held-out-fold={held_fold},seed={settings.seed},"
                 f"candidates={len(choosable)},chosen-on-units={int(search.sum())}")
    chosen_spec = _chosen_spec(plan, chosen, threshold, fitted_on,
                               knot_lists(calibrations.knots.get(chosen)))
    start_spec = _with(start, START)
    final = run(held_units, [start_spec, chosen_spec], store=store, resume=True,
                settings=run_settings, host=host)
    on_held = _by_unit(final.table, held_units, [START, FITTED])
    h = human[held]
    fitted_values, start_values = on_held[FITTED], on_held[START]
    comparison = permutation_test(settings.statistic, human=h[:, None],
                                  metric_a=fitted_values[:, None],
                                  metric_b=start_values[:, None], seed=settings.seed,
                                  resamples=PERMUTATIONS, early_stop=False)
    low_gain, high_gain = fitting.gain_interval(
        settings.statistic, human=h, metric_a=fitted_values, metric_b=start_values,
        resamples=settings.bootstrap, seed=settings.seed)
    ceiling = _ceiling(settings, plan, fitted_values, start_values)
    signatures = {p.column: str(p.signature) for p in final.metrics}
    failed = sum(int(np.isnan(v).sum()) for v in (*found.values(), *on_held.values()))
    result = FitResult(
        judge=signatures.get(START, ""), fitted_signature=signatures.get(FITTED, ""),
        statistic=settings.statistic, human=key, units=len(units),
        search_units=int(search.sum()), held_out_units=int(held.sum()),
        held_out_fold=held_fold, candidates=report, chosen=chosen, in_search=in_search,
        cross_fitted=crossed, cross_fitted_choices=per_fold,
        held_out=_number(settings, human=h, metric=fitted_values),
        held_out_start=_number(settings, human=h, metric=start_values),
        gain=Number(spec.goodness(comparison.value_a) - spec.goodness(comparison.value_b),
                    low_gain, high_gain, int(held.sum())),
        gain_p_value=float(comparison.p_value), ceiling=ceiling[0],
        ceiling_fitted=ceiling[1], ceiling_start=ceiling[2], estimated_usd=estimated,
        spent_usd=run_settings.budget.spent_usd, failed=failed,
        spec_path=None if output is None else str(output),
        signature=_signature(settings, held_fold, len(choosable), int(folds.max()) + 1,
                             plan.variants, plan.panels),
        options=dict(chosen_spec.options), rewrites=rewrites, rewrite_rows=shown,
        held_out_errors=held_out_errors(settings.search, human=h, fitted=fitted_values,
                                        start=start_values))
    if output is not None:
        write_spec(chosen_spec, result, output)
    return result


def _rewritten(plan: FitPlan, input_path: Path, judge: str, *, store: Store,
               run_settings: RunSettings, host: PluginHost | None, cached_only: bool
               ) -> Rewritten | None:
    """Critique shadowing: the starting judge scored on the search rows; for each training
    split (the search folds; the search folds but J), its rows furthest from people shown
    to the --rewrite-with judge, its rewrites as wordings. The plan with them, every
    rewrite's outcome and the rows each split showed. No held-out row is ever shown, nor
    fold J's to fold J's rewrites. With `cached_only`, None unless nothing is to be asked
    (every answer in the store or the judge cache)."""
    import dataclasses

    from judgebench.engine.runner import run
    from judgebench.services import fit_rewrite as rw
    from judgebench.services.score import estimate
    from judgebench.tables.criteria_variants import read_variants

    settings = plan.settings
    assert settings is not None and settings.rewrite_with is not None
    first = next(iter(plan.shot_specs.values()))  # no examples, the start's wording and scale
    if cached_only and estimate(plan.search_units, [first], store=store, resume=True,
                                settings=dataclasses.replace(run_settings, dry_run=True),
                                host=host).estimates[first.column].get("calls"):
        return None
    scored = run(plan.search_units, [first], store=store, resume=True, settings=run_settings,
                 host=host)
    judged = np.full(len(plan.units), np.nan)
    judged[np.flatnonzero(plan.search)] = _by_unit(scored.table, plan.search_units,
                                                   [first.column])[first.column]
    criterion = _criterion(plan.start, host)
    asked: list[tuple[str, int | None, str]] = []
    shown: dict[str, list[str]] = {}
    for fold in _splits(plan.folds, plan.search):
        train = plan.search & (plan.folds != (-1 if fold is None else fold))
        rows = rw.furthest(human=plan.human, judge=judged, use=train,
                           rows=settings.rewrite_rows)
        shown["final" if fold is None else f"fold-{fold}"] = [_unit(plan.units[i])
                                                              for i in rows]
        texts = rw.prompts(criterion=criterion, scale=_scale(plan.start), shown=[
            (plan.units[i], float(judged[i]), float(plan.human[i])) for i in rows],
            total=settings.rewrites)
        asked += [(rw.name_of(fold, k), fold, t) for k, t in enumerate(texts, start=1)]
    metric = rw.rewriter(settings.rewrite_with, host)
    try:
        if cached_only and rw.estimate(metric, [t for _, _, t in asked],
                                       run_settings)["calls"]:
            return None
        found = rw.ask(metric, asked, run_settings)
    finally:
        metric.close()
    given = ([] if settings.criteria_file is None
             else read_variants(Path(settings.criteria_file)))
    kept, report = rw.variants(found, given, criterion[1])
    return plan_fit(input_path, judge, settings, rewritten=kept), report, shown


def _criterion(start: MetricSpec, host: PluginHost | None) -> tuple[str, str]:
    """The starting judge's criterion (name, definition), from the judge built."""
    from judgebench.plugins import build_host
    from judgebench.services.fit_rewrite import criterion_of

    metric = (host or build_host()).metric(start.name).build(**start.options)
    try:
        return criterion_of(metric, start.options)
    finally:
        metric.close()


def _rewrite_estimate(plan: FitPlan, run_settings: RunSettings, host: PluginHost | None
                      ) -> list[dict[str, Any]]:
    """The rewrite calls' estimate (none without --rewrite-with): prompts showing the
    search's longest rows stand in for the rows furthest from people, unknown before the
    starting judge answers (an upper bound on their tokens)."""
    from judgebench.services import fit_rewrite as rw

    settings = plan.settings
    if settings is None or settings.rewrite_with is None or plan.rewritten:
        return []
    longest = sorted(plan.search_units, key=lambda s: -len((s.input_text or "")[
        :rw.INPUT_CHARS] + (s.output or "")))[:settings.rewrite_rows]
    low, high = _scale(plan.start)
    texts = rw.prompts(criterion=_criterion(plan.start, host), scale=(low, high),
                       shown=[(s, float(high), high - 1 / 3) for s in longest],
                       total=settings.rewrites) * len(_splits(plan.folds, plan.search))
    metric = rw.rewriter(settings.rewrite_with, host)
    try:
        return [rw.estimate(metric, texts, run_settings)]
    finally:
        metric.close()


def _candidate_scores(plan: FitPlan, found: dict[str, FloatArray]
                      ) -> tuple[dict[str, FloatArray],
                                 dict[str, tuple[tuple[int, ...], float | None]],
                                 dict[str, tuple[str | None, str | None, str | None]]]:
    """Each candidate's scores over every labelled unit (NaN off the search folds and on its
    own examples), with each threshold; its examples and threshold; its wording, scale and
    panel. A panel is tried without a threshold (judge.panel passes a threshold to each
    member, not to its aggregate)."""
    from meta_eval import fitting

    candidates: dict[str, FloatArray] = {}
    own: dict[str, tuple[tuple[int, ...], float | None]] = {}
    wording: dict[str, tuple[str | None, str | None, str | None]] = {}
    positions = np.flatnonzero(plan.search)
    for name, values in found.items():
        in_panel = plan.panels is not None and name in plan.panels.specs
        draw, variant, scale = ((), None, None) if in_panel else plan.made[name]
        base = np.full(len(plan.units), np.nan)
        base[positions] = values
        base[list(draw)] = np.nan  # never judged with itself as an example
        for t in [None] if in_panel else plan.thresholds:
            label = name if t is None else f"{name}@{t:g}"
            candidates[label] = fitting.thresholded(base, t)
            own[label] = (draw, t)
            wording[label] = (variant, scale, plan.panels.described(name)
                              if in_panel and plan.panels is not None else None)
    return candidates, own, wording


def _choosable(candidates: dict[str, FloatArray],
               wording: dict[str, tuple[str | None, str | None, str | None]],
               rewrites: Sequence[Rewrite]
               ) -> tuple[list[str], dict[int, set[str]] | None, dict[str, str]]:
    """The candidates the final choice considers, those each search fold's cross-fitted
    choice considers (None: all of them), and each fold-only candidate's split: a rewritten
    wording is considered only by the split whose rows wrote it."""
    from judgebench.services.fit_rewrite import allowed

    names = {r.name: r.fold for r in rewrites}
    if not names:
        return list(candidates), None, {}

    def usable(fold: int | None) -> list[str]:
        mine = allowed(rewrites, fold)
        return [label for label in candidates
                if wording[label][0] not in names or wording[label][0] in mine]

    folds = sorted({f for f in names.values() if f is not None})
    split = {label: f"fold-{names[w[0]]}" for label, w in wording.items()
             if w[0] in names and names[w[0]] is not None}
    return usable(None), {f: set(usable(f)) for f in folds}, split


def _chosen_spec(plan: FitPlan, chosen: str, threshold: float | None, fitted_on: str,
                 calibration: list[list[float]] | None = None) -> MetricSpec:
    """The chosen candidate's spec under the column `fitted`: a rubric with its threshold or
    calibration map and how it was fitted (in its signature), or a panel as it was searched
    (its signature holds its members' and its aggregation; `fitted` would go to every
    member)."""
    if plan.panels is not None and chosen in plan.panels.specs:
        panel = plan.panels.specs[chosen]
        return MetricSpec(panel.name, dict(panel.options), FITTED)
    searched = plan.shot_specs[chosen.split("@")[0]]
    return _with(MetricSpec(plan.start.name, dict(searched.options)), FITTED,
                 threshold=threshold, calibration=calibration, fitted=fitted_on)


@dataclass(frozen=True)
class FitEstimate(Result):
    """`fit --dry-run`: what the fit would ask (cache hits and stored scores excluded)."""

    candidates: int
    judge_specs: int
    search_units: int
    held_out_units: int
    calls: int
    cost_usd: float | None
    #: panel: the member judges (each asked once per row, its answers shared through the
    #: judge cache by every panel that holds it) and the panel candidates (no call of their own)
    panel_members: int = 0
    panels: int = 0
    #: criteria with --rewrite-with: the rewrite calls (their wordings' calls are counted
    #: with stand-ins as long as a rewrite may be: an upper bound)
    rewrite_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def fit_estimate(input_path: Path, judge: str, *, settings: FitSettings, store: Store,
                 run_settings: RunSettings, host: PluginHost | None = None) -> FitEstimate:
    """The calls and cost `fit` would make (refused over `--budget-usd`), calling nothing."""
    plan, _ = _planned(input_path, judge, settings, store=store, run_settings=run_settings,
                       host=host)
    return _preflight(plan, store=store, run_settings=run_settings, host=host)


Rewritten = tuple["FitPlan", list["Rewrite"], dict[str, list[str]]]


def _planned(input_path: Path, judge: str, settings: FitSettings, *, store: Store,
             run_settings: RunSettings, host: PluginHost | None
             ) -> tuple[FitPlan, Rewritten | None]:
    """The plan; with --rewrite-with, the plan with the rewrites where they and the
    starting judge's answers they need are all in the judge cache or store already (a
    resumed fit: its estimate is then exact, and nothing is asked), else with stand-ins."""
    plan = plan_fit(input_path, judge, settings)
    if settings.rewrite_with is None:
        return plan, None
    written = _rewritten(plan, input_path, judge, store=store, run_settings=run_settings,
                         host=host, cached_only=True)
    return (plan, None) if written is None else (written[0], written)


@dataclass(frozen=True)
class FitPlan:
    start: MetricSpec
    key: str
    units: list[Sample]
    human: FloatArray
    folds: Any
    held_fold: int
    held: BoolArray
    search: BoolArray
    draws: list[tuple[int, ...]]
    #: every judge spec searched (one per wording and set of examples), by column
    shot_specs: dict[str, MetricSpec]
    thresholds: list[float | None]
    #: each spec's examples (positions in units), wording and scale (None: the starting
    #: judge's)
    made: dict[str, tuple[tuple[int, ...], str | None, str | None]]
    variants: tuple[Variant, ...] = ()
    panels: Panels | None = None
    settings: FitSettings | None = None
    #: --rewrite-with: the rewrites are written (False: stand-ins hold their places)
    rewritten: bool = False

    @property
    def search_units(self) -> list[Sample]:
        return [self.units[i] for i in np.flatnonzero(self.search)]

    @property
    def held_units(self) -> list[Sample]:
        return [self.units[i] for i in np.flatnonzero(self.held)]

    @property
    def candidates(self) -> int:
        calibrated = self.settings is not None and "calibration" in self.settings.search
        return (len(self.shot_specs) * (len(self.thresholds) + calibrated)
                + (0 if self.panels is None else len(self.panels.specs)))


def plan_fit(input_path: Path, judge: str, settings: FitSettings,
             rewritten: Sequence[Variant] | None = None) -> FitPlan:
    """The labelled rows, their folds and the candidates, before any call (`rewritten`: the
    rewrites of --rewrite-with once written; before, stand-ins of their length)."""
    from judgebench.services.fit_rewrite import check, placeholders
    from judgebench.tables.criteria_variants import read_variants
    from judgebench.tables.io import read_samples
    from meta_eval import fitting
    from meta_eval.combination import item_folds

    start = _start_spec(judge)
    _check_settings(settings)
    variants = (read_variants(Path(settings.criteria_file))
                if settings.criteria_file is not None else [])
    if settings.rewrite_with is not None:
        check(settings.rewrite_with)
        if any(v.name.startswith("rewrite-") for v in variants):
            raise InputError("with --rewrite-with, a wording's name does not start with "
                             "'rewrite-' (the rewrites' names)", path=settings.criteria_file,
                             field="name")
    key = settings.human.removeprefix("human.")
    samples = read_samples(input_path)[:settings.limit]
    where = f"{input_path}"
    labels = _labels(samples, settings, where=where)
    units = [s for s, v in zip(samples, labels, strict=True) if math.isfinite(v)]
    if not units:
        raise InputError(f"no row has a human score {key!r}" + (
            "" if key.startswith("store:") else f" (its human.{key} field)"),
            path=where, field="--human")
    items = _fold_units(units, settings.folds_over, where)
    human = labels[np.isfinite(labels)]
    folds = item_folds(items, settings.folds, settings.seed)
    held_fold = int(folds.max())
    held = folds == held_fold
    search = ~held
    if settings.rewrite_with is not None:
        variants += (placeholders(settings.rewrites, _splits(folds, search))
                     if rewritten is None else rewritten)
    low, high = _scale(start)
    binary = bool(np.isin(human, (0.0, 1.0)).all())
    try:
        draws = fitting.example_draws(
            pool=[int(i) for i in np.flatnonzero(search)],
            shots=(0, *settings.shots) if "few-shot" in settings.search else (0,),
            draws=settings.draws, seed=settings.seed)
    except ValueError as exc:
        raise InputError(str(exc), field="--shots") from None
    shot_specs, made = _candidates(start, units, human, draws, variants,
                                   [s for s in settings.scales if s != (low, high)],
                                   (low, high), binary)
    thresholds: list[float | None] = [None]
    if "threshold" in settings.search:
        thresholds += [float(t) for t in range(low + 1, high + 1)]
    return FitPlan(start, key, units, human, folds, held_fold, held, search, draws, shot_specs,
                   thresholds, made, tuple(variants), _panels(settings), settings,
                   rewritten is not None)


def _splits(folds: Any, search: BoolArray) -> list[int | None]:
    """The training splits a criterion is rewritten for: the final search's (None: every
    search fold), then each search fold's (the search folds but it)."""
    return [None, *(int(f) for f in np.unique(folds[search]))]


def _panels(settings: FitSettings) -> Panels | None:
    from judgebench.services.fit_panels import panels

    if "panel" not in settings.search:
        if settings.panels:
            raise InputError("--panels names panels for --search panel", field="--panels")
        return None
    return panels(settings.panel_judges, max_size=settings.panel_max,
                  combines=settings.panel_combine, chosen=settings.panels)


def _fold_units(units: Sequence[Sample], folds_over: str, where: str) -> list[str]:
    """What the folds deal (each row's item, or the row), 3 or more of them."""
    items = [s.item for s in units] if folds_over == "items" else [_unit(s) for s in units]
    if len(set(items)) < 3:
        raise InputError(f"fit needs labelled rows of 3 or more {folds_over} (a held-out "
                         f"fold and two search folds); {len(set(items))} found"
                         + (": --folds-over rows deals rows into folds" if
                            folds_over == "items" else ""), path=where, field="--human")
    return items


def _candidates(start: MetricSpec, units: Sequence[Sample], human: FloatArray,
                draws: Sequence[tuple[int, ...]], variants: Sequence[Variant],
                scales: Sequence[tuple[int, int]], own: tuple[int, int], binary: bool
                ) -> tuple[dict[str, MetricSpec],
                           dict[str, tuple[tuple[int, ...], str | None, str | None]]]:
    """Every candidate spec (each wording x scale x example draw; the starting wording and
    scale first) by its column, and what each varies: its examples, wording and scale."""
    low, high = own
    shot_specs: dict[str, MetricSpec] = {}
    made: dict[str, tuple[tuple[int, ...], str | None, str | None]] = {}
    wordings: list[Variant | None] = [None, *variants]
    for w, variant in enumerate(wordings):
        for k, scale in enumerate([None, *scales]):
            a, b = own if scale is None else scale
            for n, draw in enumerate(draws):
                column = (f"fit-{n}" + ("" if variant is None else f"-c{w}")
                          + ("" if scale is None else f"-s{k}"))
                shot_specs[column] = _with(start, column, examples=[
                    _example(units[i], human[i] if binary else
                             _on_scale(human[i], own, (a, b)), a, b, binary)
                    for i in draw],
                    definition=None if variant is None else variant.text,
                    **({} if scale is None else {"min": a, "max": b, "to_min": low,
                                                 "to_max": high}))
                made[column] = (draw, None if variant is None else variant.name,
                                None if scale is None else f"{a}-{b}")
    return shot_specs, made


def _labels(samples: Sequence[Sample], settings: FitSettings, *, where: str) -> FloatArray:
    """Each sample's human score (NaN: unlabelled): its `human.H` field, or with
    `store:CRITERION` people's labels in a store (`tables.store_humans`)."""
    from judgebench.tables import store_humans

    if not settings.human.startswith(store_humans.PREFIX):
        key = settings.human.removeprefix("human.")
        return np.array([_rating(s, key) for s in samples])
    import pandas as pd

    given, _, _ = store_humans.parse(settings.human)
    path = store_humans.find_store(settings.human, given, settings.store, None, where)
    if not path.exists():
        raise InputError(f"{settings.human} reads people's labels from {path}, which does "
                         "not exist", path=str(path), field="--human")
    frame = pd.DataFrame({"item": [s.item for s in samples],
                          "system": [s.system for s in samples]})
    store_humans.add_store_columns(frame, [settings.human], store=settings.store,
                                   sidecar=None, where=where)
    return frame[settings.human].to_numpy(dtype=float)


def _ceiling(settings: FitSettings, plan: FitPlan, fitted: FloatArray, start: FloatArray
             ) -> tuple[float | None, float | None, float | None]:
    """The human ceiling of the raters on the held-out fold, and the fitted and the starting
    judge on its footing (None without --raters)."""
    from meta_eval.ceiling import human_ceiling

    if not settings.raters:
        return None, None, None
    raters = [np.array([_rating(u, r) for u in plan.held_units])[:, None]
              for r in settings.raters]
    with_fitted = human_ceiling(settings.statistic, raters=raters, metric=fitted[:, None])
    with_start = human_ceiling(settings.statistic, raters=raters, metric=start[:, None])
    value = with_fitted.value if math.isfinite(with_fitted.value) else None
    return value, with_fitted.metric_value, with_start.metric_value


def _rating(sample: Sample, rater: str) -> float:
    value = sample.human.get(rater)
    return float(value) if _finite(value) else math.nan  # type: ignore[arg-type]


def _plain(value: Any) -> Any:
    """`value` with NaN as None and tuples as lists (JSON's shapes)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _start_spec(judge: str) -> MetricSpec:
    specs = specs_of(judge)
    if len(specs) != 1:
        raise InputError(f"fit takes one judge; {judge} holds {len(specs)}", field="JUDGE_SPEC")
    spec = specs[0]
    if spec.name not in FITTABLE:
        raise InputError(f"fit fits {', '.join(FITTABLE)} (few-shot examples and a threshold "
                         f"are its options); {spec.name} is not one", field="JUDGE_SPEC")
    for name in ("examples", "threshold", "fitted", "to_min", "to_max", "calibration"):
        if name in spec.options:
            raise InputError(f"the starting judge already has {name}=: fit chooses it; start "
                             "from the judge without it", field="JUDGE_SPEC")
    return spec


def _check_settings(settings: FitSettings) -> None:
    from judgebench.services.fit_calibration import require_sklearn
    from meta_eval.statistics import get

    unknown = [s for s in settings.search if s not in SEARCHES]
    if unknown or not settings.search:
        raise InputError(f"--search takes {', '.join(SEARCHES)} (comma-separated); got "
                         f"{', '.join(unknown) or 'nothing'}", field="--search")
    try:
        spec = get(settings.statistic)
    except ValueError as exc:
        raise InputError(str(exc), field="--statistic") from None
    if (spec.groups is None or spec.kernel != spec.name or spec.declared
            or spec.probabilities or spec.better == "zero" or "segment" not in spec.levels):
        raise InputError(f"fit chooses by a segment-level correlation or error (pearson, "
                         f"spearman, kendall, mae, rmse, ...); {settings.statistic} is not one",
                         field="--statistic")
    if ("criteria" in settings.search) != (settings.criteria_file is not None
                                           or settings.rewrite_with is not None):
        raise InputError("--search criteria and --criteria-file FILE (the wordings to try) "
                         "or --rewrite-with SPEC go together", field="--criteria-file")
    if settings.rewrites < 1 or settings.rewrite_rows < 1:
        raise InputError("--rewrites and --rewrite-rows are 1 or more", field="--rewrites")
    if ("scale" in settings.search) != bool(settings.scales):
        raise InputError("--search scale and --scales A-B,... (the scales to try) go together",
                         field="--scales")
    if ("panel" in settings.search) != bool(settings.panel_judges):
        raise InputError("--search panel and --panel-judge SPEC (two or more, the members "
                         "to try) go together", field="--panel-judge")
    if any(a >= b for a, b in settings.scales):
        raise InputError("each of --scales is MIN-MAX with MIN below MAX", field="--scales")
    if settings.folds_over not in ("items", "rows"):
        raise InputError("--folds-over is items or rows", field="--folds-over")
    if len(settings.raters) == 1:
        raise InputError("--raters names two or more raters' human fields (the ceiling is "
                         "each rater against the others)", field="--raters")
    require_sklearn(settings.search)
    if settings.folds < 3:
        raise InputError("--folds is 3 or more (one held out, two or more to search on)",
                         field="--folds")


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def _scale(spec: MetricSpec) -> tuple[int, int]:
    try:
        return int(spec.options.get("min", 1)), int(spec.options.get("max", 5))
    except (TypeError, ValueError):
        raise InputError("the judge's min= and max= are integers", field="JUDGE_SPEC") from None


def _unit(sample: Sample) -> str:
    return f"{sample.item}/{sample.system}"


def _example(sample: Sample, human: float, low: int, high: int, binary: bool
             ) -> dict[str, Any]:
    """A labelled row as a few-shot example: its human score on the judge's scale (a 0/1
    label as the scale's ends; another rounded half up and clipped to it)."""
    if binary:
        score = high if human >= 1 else low
    else:
        score = min(high, max(low, math.floor(human + 0.5)))
    return {"item": sample.item, "system": sample.system, "input": sample.input_text,
            "output": sample.output or "", "score": score}


def _on_scale(human: float, labels: tuple[int, int], scale: tuple[int, int]) -> float:
    """A human score on the labels' scale mapped linearly onto `scale` (the inverse of the
    judge's to_min..to_max map); the labels' scale itself is left as it is."""
    (lo, hi), (a, b) = labels, scale
    if (lo, hi) == (a, b):
        return human
    return a + (min(hi, max(lo, human)) - lo) * (b - a) / (hi - lo)


def _with(start: MetricSpec, column: str, **options: Any) -> MetricSpec:
    added = {k: v for k, v in options.items() if v is not None and v != []}
    return MetricSpec(name=start.name, options={**start.options, **added}, column=column)


def _by_unit(table: Any, units: Sequence[Sample], columns: Sequence[str]
             ) -> dict[str, FloatArray]:
    """Each column's values in the order of `units` (NaN where the score failed)."""
    import pandas as pd

    index = pd.MultiIndex.from_arrays([table["item"].astype(str), table["system"].astype(str)])
    out: dict[str, FloatArray] = {}
    keys = pd.MultiIndex.from_tuples([(s.item, s.system) for s in units])
    for column in columns:
        series = pd.Series(pd.to_numeric(table[column], errors="coerce").to_numpy(float),
                           index=index)
        out[column] = series.reindex(keys).to_numpy(float)
    return out


def _number(settings: FitSettings, *, human: FloatArray, metric: FloatArray) -> Number:
    from meta_eval import fitting

    r = fitting.value(settings.statistic, human=human, metric=metric,
                      bootstrap=settings.bootstrap, seed=settings.seed)
    return Number(r.value, r.ci_low, r.ci_high, r.n)


def _preflight(plan: FitPlan, *, store: Store, run_settings: RunSettings,
               host: PluginHost | None) -> FitEstimate:
    """The estimated calls and cost (None: unknown) of the search and of the held-out fold
    (the starting judge and the dearest candidate there); refused over --budget-usd."""
    import dataclasses

    from judgebench.services.score import estimate

    candidates = list(plan.shot_specs.values())
    members = [] if plan.panels is None else plan.panels.asked
    dry = dataclasses.replace(run_settings, dry_run=True)
    on_search = estimate(plan.search_units, [*candidates, *members], store=store, settings=dry,
                         resume=True, host=host).estimates
    on_held = estimate(plan.held_units, [_with(plan.start, START), *candidates, *members],
                       store=store, settings=dry, resume=True, host=host).estimates
    dearest_held = _dearest_held(plan, candidates, on_held)
    # the panels themselves are left out: every member's answer is in the judge cache by
    # the time a panel asks for it (fit_panels.run_panels scores the members first)
    rewrites = _rewrite_estimate(plan, run_settings, host)
    spent = [*on_search.values(), on_held[START], *dearest_held, *rewrites]
    calls = sum(int(e.get("calls") or 0) for e in spent)
    costs = [e.get("cost_usd") for e in spent]
    total = None if any(c is None for c in costs) else math.fsum(
        float(c) for c in costs if c is not None)
    found = FitEstimate(plan.candidates, len(candidates), len(plan.search_units),
                        len(plan.held_units), calls, total, len(members),
                        0 if plan.panels is None else len(plan.panels.specs),
                        sum(int(e["calls"]) for e in rewrites))
    limit = run_settings.budget.limit_usd
    if limit is None:
        return found
    if total is None and not run_settings.budget.allow_unknown_cost:
        raise InputError("--budget-usd cannot count the calls of a judge whose price is "
                         "unknown: give it price_in=...,price_out=... (USD per million tokens) "
                         "or pass --allow-unknown-cost", field="--budget-usd")
    if total is not None and total > limit:
        raise InputError(f"fit would cost about ${total:.4f} ({calls} calls: "
                         f"{len(candidates)} judge specs on {len(plan.search_units)} rows, then "
                         f"the held-out fold), over --budget-usd {limit:g}: ask for fewer "
                         "candidates (--draws, --shots, wordings, --scales) or a larger budget",
                         field="--budget-usd")
    return found


def _dearest_held(plan: FitPlan, candidates: Sequence[MetricSpec],
                  on_held: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The engine's estimates on the held-out fold of the dearest candidate: a rubric
    candidate's own, or a panel's members' (a panel asks its members' calls)."""
    from judgebench.services.fit_panels import held_out_cost

    costs = {c.column: (float(on_held[c.column].get("cost_usd") or 0.0),
                        int(on_held[c.column].get("calls") or 0)) for c in candidates}
    panels = plan.panels
    if panels is not None:
        costs.update({column: held_out_cost(panels, column, on_held)
                      for column in panels.specs})
    dearest = max(costs, key=lambda column: costs[column])
    if panels is None or dearest not in panels.specs:
        return [on_held[dearest]]
    return [on_held[panels.members[i - 1].column] for i in panels.made[dearest][0]]


def _signature(settings: FitSettings, held_fold: int, candidates: int, folds: int,
               variants: Sequence[Variant] = (), panels: Panels | None = None) -> str:
    """How the reported numbers were made (as sacrebleu's signatures say); the wordings
    tried by name and the SHA-256 of their text; the panel members and aggregations."""
    from judgebench.services.fit_panels import signature

    tried = "".join(f"|criteria:{','.join(f'{v.name}={v.digest}' for v in variants)}"
                    for _ in variants[:1])
    if panels is not None:
        tried += signature(panels, max_size=settings.panel_max,
                           combines=settings.panel_combine, chosen=settings.panels)
    shots = (f"|shots:{','.join(map(str, settings.shots))}|draws:{settings.draws}"
             if "few-shot" in settings.search else "")
    return (f"fit|human:{settings.human.removeprefix('human.')}|statistic:{settings.statistic}"
            f"|search:{','.join(settings.search)}{shots}|folds:{folds}|held-out-fold:{held_fold}"
            f"|folds-over:{settings.folds_over}|candidates:{candidates}|seed:{settings.seed}"
            f"|bootstrap:{settings.bootstrap}|ci-over:rows"
            f"|gain-test:paired-permutation-{PERMUTATIONS}{tried}")


def write_spec(spec: MetricSpec, result: FitResult, path: Path) -> None:
    """The chosen judge as a TOML spec file (`score -m @FILE`), written atomically: its
    options under `[metrics.fitted]`, and under `[fit]` how it was chosen and its numbers
    (which `score` does not read). tomli-w writes it: any text an example holds (an emoji,
    a control character) is escaped as TOML requires; a value that is None is left out."""
    import tomli_w

    from judgebench.tables.io import write_text

    held = result.held_out
    document = {
        "metrics": {spec.column: _without_none({"metric": spec.name, **spec.options})},
        "fit": _without_none({
            "signature": result.signature, "judge": result.judge, "chosen": result.chosen,
            "held_out_fold": result.held_out_fold,
            f"held_out_{result.statistic.replace('-', '_')}": held.value,
            "candidates": len(result.candidates)}),
    }
    write_text(f"# written by judgebench fit: {result.signature}\n\n"
               + tomli_w.dumps(document), path)


def _without_none(value: Any) -> Any:
    """`value` with every None left out of its tables and lists (TOML has no null)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_none(v) for v in value if v is not None]
    return value
