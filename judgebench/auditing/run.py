"""The audit pipeline: scores table (+ generations) -> sentinels -> blocks -> Report.

Metric columns whose metric is lower-is-better (from the table's `.meta.json` sidecar, or
named by the user) are negated before anything is computed, so that every statistic,
cluster and plot reads "higher is better"; the card says so. Agreement, error and calibration
statistics (`on_scale`: kappa, mae, brier, ...) take the values as they are, and add the
"Agreement, error and calibration" section (judgebench.auditing.agreement).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import meta_eval
from judgebench._version import __version__
from judgebench.auditing.agreement import scale_section
from judgebench.auditing.blocks import Block, Options, evaluate_block
from judgebench.auditing.conclusions import block_sequential, sequential_applies
from judgebench.auditing.report import MetricCard, Report
from judgebench.auditing.sentinels import SentinelRun, compute_sentinels
from judgebench.bias_probe import BiasProbe
from judgebench.errors import InputError
from judgebench.models import Sample
from judgebench.spec import MetricSpec
from judgebench.suggest import did_you_mean
from judgebench.tables.columns import KEY
from judgebench.tables.scales import check_scales
from judgebench.tables.scores_table import ScoresTable
from meta_eval.task import Task, TaskSet

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.auditing.bias import BiasResult
    from judgebench.plugins import PluginHost
    from judgebench.tables.prepared import PreparedTable
    from meta_eval.arrays import FloatArray
    from meta_eval.table import ScoreMatrices

PARSE_FAILURES = ("parse_error",)
SEGMENT_SAMPLE = 300  # segment points kept per scatter plot


def store_costs(store_path: Path, signature: str) -> dict[str, Any]:
    """Cost, tokens and compute time of one signature in a score store (read-only, after the
    store's own checks: another program's file or a corrupt one is an InputError)."""
    from judgebench.engine.store import Store

    with Store(store_path, readonly=True) as store:
        return store.costs(signature)


def metric_cards(table: ScoresTable, columns: Sequence[str], *, store_path: Path | None,
                 host: PluginHost | None) -> list[MetricCard]:
    """One card per metric column; its direction by the one rule of
    judgebench.tables.scores_table."""
    metrics = host.metrics() if host is not None else {}
    cards = []
    for column in columns:
        info = table.info(column)
        described = table.described(column)
        card = MetricCard(column=column, metric=info.metric, signature=info.signature,
                          rows=len(table.frame), missing=int(table.frame[column].isna().sum()),
                          source="sidecar" if described else "table",
                          higher_is_better=info.higher_is_better)
        registered = metrics.get(info.metric or "")
        if registered is not None:
            card.metric = registered.name
            card.kind = registered.info.kind
        statuses = described.get("statuses")
        if isinstance(statuses, dict) and statuses:
            total = sum(statuses.values())
            card.statuses = dict(statuses)
            card.parse_failure_rate = sum(statuses.get(s, 0) for s in PARSE_FAILURES) / total
            card.failure_rate = 1 - statuses.get("ok", 0) / total
        if store_path is not None and card.signature:
            for key, value in store_costs(store_path, card.signature).items():
                setattr(card, key, value)
        cards.append(card)
    return cards


def scatter_data(human: FloatArray, columns: dict[str, FloatArray], systems: list[str],
                 seed: int, given: dict[str, FloatArray] | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Per column: system scores of human and metric (means, or the metric's corpus scores
    in `given`), and a seeded sample of segments."""
    from meta_eval.corpus import human_system_means
    from meta_eval.levels import system_means

    out: dict[str, dict[str, Any]] = {}
    rng = np.random.default_rng(seed)
    flat_h = human.reshape(-1)
    for name, matrix in columns.items():
        if given and name in given:
            h, m = human_system_means(human=human), given[name]
        else:
            h, m = system_means(human=human, metric=matrix)
        flat_m = matrix.reshape(-1)
        ok = np.flatnonzero(np.isfinite(flat_h) & np.isfinite(flat_m))
        if ok.size > SEGMENT_SAMPLE:
            ok = np.sort(rng.choice(ok, SEGMENT_SAMPLE, replace=False))
        out[name] = {"systems": systems, "human": h, "metric": m,
                     "segment_human": flat_h[ok], "segment_metric": flat_m[ok]}
    return out


def check_settings(statistics: Sequence[str], settings: Sequence[tuple[str, str]]) -> None:
    for statistic in statistics:
        for level, grouping in settings:
            try:
                meta_eval.levels.check_options(statistic, level, grouping)
            except ValueError as exc:
                raise InputError(str(exc), field="--statistic") from None


def audit_tasks(humans: Sequence[str], statistics: Sequence[str],
                settings: Sequence[tuple[str, str]], options: Options) -> TaskSet:
    """The audit's tasks: one per (human column, statistic, setting), in that order, with
    the options' bootstrap, test and seed; InputError for a statistic a setting refuses."""
    check_settings(statistics, settings)
    base = Task(human=humans[0] if humans else "", epsilon=options.epsilon,
                bootstrap=options.bootstrap, ci=options.ci, seed=options.seed, compare=True,
                method=options.method, resamples=options.resamples, alpha=options.alpha)
    return TaskSet.product(base, human=list(humans), statistic=list(statistics),
                           view=list(settings))


def run_audit(prepared: PreparedTable, tasks: TaskSet, *,
              samples: Sequence[Sample] | None = None, samples_path: Path | None = None,
              sentinel_specs: Sequence[MetricSpec], options: Options, host: PluginHost,
              store_path: Path | None = None,
              progress: Callable[[str], None] | None = None) -> Report:
    """The whole audit of the metric columns of `prepared` (a wide scores table read once,
    its failed scores counted as its `failed_as` says: judgebench.tables.failed) in each of
    `tasks` (`audit_tasks`)."""
    log = progress or (lambda _message: None)
    statistics, settings = tasks.distinct("statistic"), tasks.views
    check_settings(statistics, settings)
    frame, humans, columns = prepared.frame, prepared.humans, prepared.metrics
    scores_path, failed_as, counts = prepared.path, prepared.failed_as, prepared.failed
    table_info = prepared.table
    clash = [s.column for s in sentinel_specs if s.column in columns]
    if clash:
        raise InputError(f"metric column(s) {clash} have a sentinel's name", path=str(scores_path))
    cards = metric_cards(table_info, columns, store_path=store_path, host=host)
    with_corpus = [c.column for c in cards if table_info.corpus.get(c.column)]
    if with_corpus and any(level == "system" for level, _ in settings):
        log(f"system level: corpus scores for {', '.join(with_corpus)}")
    check_scales(frame, statistics=statistics, humans=humans, metrics=columns,
                 path=str(scores_path))
    oriented = table_info.oriented(frame, columns)
    on_scale = [s for s in statistics if meta_eval.statistics.get(s).on_scale]
    scale_entries: list[dict[str, Any]] = []

    log(f"{len(frame)} rows; sentinels: {', '.join(s.column for s in sentinel_specs)}")
    runs = compute_sentinels(frame, humans=humans, samples=samples, specs=sentinel_specs,
                             host=host, samples_path=str(samples_path) if samples_path else None)
    sentinel_names = [r.column for r in runs]
    warnings = _sentinel_warnings(runs, humans)

    blocks: list[Block] = []
    sequential: list[dict[str, Any]] = []
    scatter: dict[str, dict[str, dict[str, Any]]] = {}
    for human in humans:
        m = _human_matrices(frame, oriented, human, columns, runs, table_info,
                            raw_too=bool(on_scale), where=str(scores_path))
        if on_scale:
            scale_entries += scale_section(matrices={human: m.human, **m.raw}, human=human,
                                           metrics=columns, statistics=statistics)
        scatter[human] = scatter_data(m.human, m.oriented, m.systems, options.seed,
                                      given=m.given)
        _human_blocks(tasks, m, human, on_scale=on_scale, sentinels=sentinel_names,
                      warnings=warnings, options=options, blocks=blocks,
                      sequential=sequential, log=log)
    if options.robustness and len(humans) > 1:
        _add_construct(blocks, oriented, humans, columns, options)
    warnings += [f"{card.column} is lower-is-better: negated for the audit"
                 for card in cards if not card.higher_is_better]
    return Report(
        title=f"Audit of {Path(scores_path).name}",
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        version=__version__,
        inputs=_report_inputs(scores_path, samples_path, store_path, frame),
        settings=_report_settings(statistics, settings, failed_as.name, options),
        humans=list(humans), metrics=cards, sentinels=[r.summary() for r in runs],
        blocks=blocks, scatter=scatter, warnings=[*warnings, *(
            f"{c}: {f['rows']} failed scores, counted {f['counted_as']} (--failed-as "
            f"{failed_as.name})" for c, f in counts.items() if f["rows"])],
        scales=scale_entries, failed=counts, sequential=sequential)


def _human_blocks(tasks: TaskSet, m: _HumanMatrices, human: str, *, on_scale: Sequence[str],
                  sentinels: list[str], warnings: list[str], options: Options,
                  blocks: list[Block], sequential: list[dict[str, Any]],
                  log: Callable[[str], None]) -> None:
    """The block (and sequential replay) of each task of one human column, added to
    `blocks` and `sequential`."""
    for task in (t for t in tasks if t.human == human):
        began = time.perf_counter()
        block, replay = _task_block(task, m, on_scale=task.statistic in on_scale,
                                    sentinels=sentinels, warnings=warnings, options=options)
        blocks.append(block)
        if replay is not None:
            sequential.append(replay)
        label = "system" if task.level == "system" else f"segment/{task.grouping}"
        log(f"{human} · {task.statistic} · {label}: {block.tests} tests, "
            f"{time.perf_counter() - began:.1f} s")


def _add_construct(blocks: list[Block], oriented: pd.DataFrame, humans: Sequence[str],
                   columns: Sequence[str], options: Options) -> None:
    """The construct robustness of each block over several human columns
    (judgebench.auditing.robustness)."""
    from judgebench.auditing.robustness import add_construct

    every = meta_eval.score_matrices(oriented, [*humans, *columns])
    add_construct(blocks, {h: every[h] for h in humans},
                  {c: every[c] for c in columns}, method=options.method,
                  alpha=options.alpha, resamples=options.resamples, seed=options.seed)


def _report_inputs(scores_path: Path, samples_path: Path | None, store_path: Path | None,
                   frame: pd.DataFrame) -> dict[str, Any]:
    """The report's `inputs`: what was read, and its size."""
    return {"scores": str(scores_path),
            "samples": str(samples_path) if samples_path else None,
            "store": str(store_path) if store_path else None,
            "rows": len(frame), "items": int(frame["item"].nunique()),
            "systems": int(frame["system"].nunique())}


def _report_settings(statistics: Sequence[str], settings: Sequence[tuple[str, str]],
                     failed_as: str, options: Options) -> dict[str, Any]:
    """The report's `settings`: the statistics, views and options the audit ran with."""
    return {"statistics": list(statistics), "failed_as": failed_as,
            "levels": [{"level": lv, "grouping": g} for lv, g in settings],
            "bootstrap": options.bootstrap, "ci": options.ci, "seed": options.seed,
            "interval": options.interval,
            "alpha": options.alpha, "test": options.method,
            "resamples": options.resamples, "epsilon": options.epsilon,
            **({"robustness": True} if options.robustness else {}),
            **({"sequential": True} if options.sequential else {})}



@dataclass
class _HumanMatrices:
    """One human column's matrices and those of the metrics and sentinels beside it:
    oriented (higher is better), and raw (the values as they are, for on-scale statistics),
    with the corpus scores of each."""

    human: FloatArray
    items: list[str]
    systems: list[str]
    oriented: dict[str, FloatArray]
    given: dict[str, FloatArray]
    raw: dict[str, FloatArray]
    raw_given: dict[str, FloatArray]
    rows: pd.DataFrame  # the rows the matrices were read from (present cells)

    def of(self, on_scale: bool) -> tuple[dict[str, FloatArray], dict[str, FloatArray]]:
        return (self.raw, self.raw_given) if on_scale else (self.oriented, self.given)


def _human_matrices(frame: pd.DataFrame, oriented: pd.DataFrame, human: str,
                    columns: Sequence[str], runs: Sequence[SentinelRun],
                    table_info: ScoresTable, *, raw_too: bool, where: str) -> _HumanMatrices:
    names = [*columns, *(r.column for r in runs)]

    def read(source: pd.DataFrame) -> tuple[ScoreMatrices, pd.DataFrame]:
        rows = source[[*KEY, human, *columns]].copy()
        for r in runs:
            rows[r.column] = r.values[human]
        try:
            return meta_eval.score_matrices(rows, [human, *names]), rows
        except ValueError as exc:
            raise InputError(str(exc), path=where) from None

    mats, rows = read(oriented)
    matrices = {n: mats[n] for n in names}
    given = table_info.oriented_system_scores(columns, mats.systems)
    raw, raw_given = matrices, given  # on-scale statistics: the values, not negated
    if raw_too:
        raw_mats, _ = read(frame)
        raw = {n: raw_mats[n] for n in names}
        raw_given = {c: np.asarray(table_info.system_scores(c, raw_mats.systems), dtype=float)
                     for c in given}
    return _HumanMatrices(mats[human], list(mats.items), list(mats.systems), matrices, given,
                          raw, raw_given, rows)


def _task_block(task: Task, m: _HumanMatrices, *, on_scale: bool, sentinels: list[str],
                warnings: list[str], options: Options) -> tuple[Block, dict[str, Any] | None]:
    """One task's block (with its robustness where asked) and its sequential replay, if any."""
    columns, given = m.of(on_scale)
    block_columns = _block_columns(task.statistic, columns, sentinels, warnings)
    block = evaluate_block(human=m.human, human_name=task.human, columns=block_columns,
                           sentinels=sentinels, statistic=task.statistic, level=task.level,
                           grouping=task.grouping, options=options, given=given)
    if options.robustness:
        from judgebench.auditing.robustness import block_robustness, gate_without
        from judgebench.services.missingness import present_cells

        block.robustness = block_robustness(
            block, human=m.human, columns=columns,
            present=present_cells(m.rows, m.items, m.systems), systems=m.systems)
        block.robustness["gate_without"] = gate_without(
            block, human=m.human, columns=block_columns, sentinels=sentinels,
            options=options, given=given, systems=m.systems)
    replay = None
    if options.sequential and sequential_applies(task.statistic, task.level, task.grouping):
        replay = block_sequential(block, human=m.human, columns=block_columns,
                                  alpha=options.alpha, seed=options.seed)
    return block, replay

def _block_columns(statistic: str, columns: dict[str, FloatArray],
                   sentinels: Sequence[str], warnings: list[str]) -> dict[str, FloatArray]:
    """The columns of one block: for brier/ece, a sentinel that is not a probability (a
    noise or length score) cannot be scored and is left out, with a warning; so is a
    sentinel with a negative value for krippendorff-ratio."""
    spec = meta_eval.statistics.get(statistic)
    if not (spec.probabilities or spec.nonnegative):
        return columns
    out = {}
    for name, matrix in columns.items():
        values = matrix[np.isfinite(matrix)]
        outside = (values < 0) | (values > 1) if spec.probabilities else values < 0
        if name in sentinels and values.size and outside.any():
            what = "a probability in [0, 1]" if spec.probabilities else "non-negative"
            note = f"{name} is not {what}: left out of the {statistic} blocks"
            if note not in warnings:
                warnings.append(note)
            continue
        out[name] = matrix
    return out


def _sentinel_warnings(runs: Sequence[SentinelRun], humans: Sequence[str]) -> list[str]:
    out = []
    for run in runs:
        for human in humans:
            counts = run.statuses.get(human, {})
            total = sum(counts.values())
            failed = total - counts.get("ok", 0)
            if failed:
                reasons = "; ".join(f"{k}: {v}" for k, v in run.reasons.get(human, {}).items())
                out.append(f"{run.column} ({human}): {failed} of {total} rows not scored"
                           + (f" ({reasons})" if reasons else ""))
                if not run.trained:
                    break  # the same for every human column
    return out


# -- probes ----------------------------------------------------------------------------------
def probe_specs(texts: Sequence[str], columns: Sequence[str], host: PluginHost
                ) -> tuple[list[MetricSpec], list[str]]:
    """Metric specs to probe: each text is a spec, or `all` for every audited column that is
    a spec of a registered segment-level metric. Returns the specs and warnings."""
    from judgebench.spec import parse_spec

    wanted: list[str] = []
    for text in texts:
        wanted += list(columns) if text == "all" else [text]
    specs, warnings = [], []
    known = host.metrics()
    for text in dict.fromkeys(wanted):
        spec = parse_spec(text)
        entry = known.get(spec.name)
        if entry is None:
            if text in columns and "all" in texts:
                warnings.append(f"probes: column {text} is not a registered metric spec; "
                                "not probed")
                continue
            raise InputError(f"unknown metric '{spec.name}'{did_you_mean(spec.name, known)} "
                             f"(registered: {', '.join(sorted(known))})", field="--probe")
        if entry.info.level != "segment":
            warnings.append(f"probes: {text} has no segment-level score; not probed")
            continue
        specs.append(spec)
    return specs, warnings


def metamorphic(samples: Sequence[Sample], specs: Sequence[MetricSpec], *, host: PluginHost,
                items: int, seed: int, probes: Sequence[str] | None = None,
                progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    from judgebench.auditing.probes import probe_subset, run_probes, runner_score_fn

    subset = probe_subset(samples, items, seed)
    if not subset:
        raise InputError("no generation with an output to probe", field="--samples")
    out: list[dict[str, Any]] = []
    for spec in specs:
        if progress:
            progress(f"probes: {spec.column} on {len(subset)} samples")
        info = host.metric(spec.name).info
        results = run_probes(subset, runner_score_fn(spec, host), metric=spec.column,
                             higher_is_better=info.higher_is_better,
                             probes=probes or None, seed=seed, host=host)
        out += [r.to_dict() for r in results]
    return out


def judge_bias(*, judges: Sequence[MetricSpec], pairs: Sequence[Sample],
               human: Sequence[float | None] | None, host: PluginHost,
               paraphrases: Sequence[MetricSpec] = (), judge_family: str | None = None,
               families: dict[str, str] | None = None, probes: Sequence[str] | None = None,
               samples: Sequence[Sample] = (), seed: int = 0, confidence: float = 0.95,
               thresholds: Mapping[str, float] | None = None,
               generations: Sequence[Sample] = (),
               human_scores: Mapping[tuple[str, str], float] | None = None, count: int = 24,
               progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """The bias probes in `probes` (default: all that apply, the variant probes to a judge
    with the option they vary) of each judge: the pairwise ones
    (judgebench.auditing.bias) on `pairs` for a pairwise judge, and the registered BiasProbes
    (judgebench.auditing.bias_battery) on `pairs` or, for a judge that scores one output, on
    `samples`. `thresholds`: a probe's verdict threshold other than its own. A probe asked
    by name that does not apply to a judge gets a "skipped" row saying so. Self-preference
    of a judge that scores one output: `count` pairs of `generations` against people's
    `human_scores` (bias_battery.self_preference)."""
    from judgebench.auditing import bias_battery
    from judgebench.auditing.bias import BIAS_PROBES, center_of, judge_score_fn
    from judgebench.auditing.bias_variants import VARIANT_PROBES
    from judgebench.auditing.probes import runner_score_fn
    from judgebench.engine.pairwise_table import is_pointwise_metric

    registered = [entry.probe for entry in host.bias_probes().values()
                  if isinstance(entry.probe, BiasProbe)]
    plugged = [p for p in registered if probes is None or p.name in probes]
    builtin = [p for p in BIAS_PROBES if probes is None or p in probes]
    def asked(name: str, spec: MetricSpec, option: str) -> bool:
        """A variant probe runs where asked by name, else on a judge with its option."""
        return name in probes if probes is not None else _takes(host.metric(spec.name), option)

    def on_samples(spec: MetricSpec, info: Any, mine: list[BiasProbe]) -> list[BiasResult]:
        results = bias_battery.pointwise(
            samples, runner_score_fn(spec, host), probes=mine, judge=spec.column,
            higher_is_better=info.higher_is_better, seed=seed, confidence=confidence,
            thresholds=thresholds)
        if "self-preference" in builtin:
            results.append(bias_battery.self_preference(
                generations, runner_score_fn(spec, host), judge=spec.column,
                judge_family=judge_family, families=families or {},
                human=human_scores or {}, higher_is_better=info.higher_is_better,
                count=count, seed=seed, confidence=confidence,
                threshold=(thresholds or {}).get("self-preference", 0.1)))
        if asked("scale-inversion", spec, "invert"):
            results.append(_scale_inversion(spec, samples, host, seed=seed,
                                            confidence=confidence, thresholds=thresholds))
        by_name = probes is not None and "criteria-order" in probes
        if by_name or (probes is None and len(_criteria_of(spec, host)) >= 2):
            results += _criteria_order(spec, samples, host, seed=seed, confidence=confidence,
                                       thresholds=thresholds)
        return results

    def on_pairs(spec: MetricSpec, info: Any, mine: list[BiasProbe]) -> list[BiasResult]:
        results = _pairwise_bias(spec, pairs, host, builtin=builtin, paraphrases=paraphrases,
                                 human=human, judge_family=judge_family,
                                 families=families, progress=progress)
        results += bias_battery.pairwise(
            pairs, judge_score_fn(spec, host), probes=mine, judge=spec.column,
            center=center_of(info.value_range), seed=seed, confidence=confidence,
            thresholds=thresholds)
        if asked("label-scheme", spec, "labels"):
            results.append(_label_scheme(spec, pairs, host, seed=seed,
                                         confidence=confidence, thresholds=thresholds))
        return results

    out: list[dict[str, Any]] = []
    for spec in judges:
        info = host.metric(spec.name).info
        pointwise = is_pointwise_metric(info)
        mine = [p for p in plugged if ("pointwise" if pointwise else "pairwise") in p.modes]
        if progress:
            progress(f"bias probes: {spec.column} on "
                     + (f"{len(samples)} samples" if pointwise else f"{len(pairs)} pairs"))
        results = on_samples(spec, info, mine) if pointwise else on_pairs(spec, info, mine)
        if probes is not None:
            variants = [n for n, mode in VARIANT_PROBES.items() if n in probes
                        and mode != ("pointwise" if pointwise else "pairwise")]
            results += _not_applying(spec.column, pointwise, builtin,
                                     [*variants, *(p.name for p in plugged if p not in mine)])
        out += [r.to_dict() for r in results]
    return out


def _not_applying(judge: str, pointwise: bool, builtin: Sequence[str],
                  plugged: Sequence[str]) -> list[BiasResult]:
    """A "skipped" row for each probe asked by name that does not apply to the judge: the
    pairwise-only probes (but self-preference) of a pointwise judge, and the registered
    probes without the judge's mode."""
    from judgebench.auditing.bias import BiasResult

    kind = "compares two outputs" if pointwise else "scores one output"
    names = [*(n for n in builtin if pointwise and n != "self-preference"), *plugged]
    return [BiasResult(judge, name, "skipped", None, 0,
                       f"skipped: it probes a judge that {kind}") for name in names]


def _label_scheme(spec: MetricSpec, pairs: Sequence[Sample], host: PluginHost, *, seed: int,
                  confidence: float, thresholds: Mapping[str, float] | None) -> BiasResult:
    """The label-scheme probe of one pairwise judge: its pairs judged under each of its
    `labels=` schemes (the judge's own options otherwise), or a skipped row for a judge
    without that option."""
    from judgebench.auditing.bias import BiasResult, center_of, judge_score_fn
    from judgebench.auditing.bias_variants import LABEL_SCHEMES, label_scheme

    entry = host.metric(spec.name)
    if not _takes(entry, "labels"):
        return BiasResult(spec.column, "label-scheme", "skipped", None, 0,
                          "skipped: the judge has no labels= option (judge.pairwise has)")
    # the probe reads the order shown only (`verdict_ab`): the swapped order is not asked
    once = {"both_orders": "false"} if _takes(entry, "both_orders") else {}
    scores = {scheme: judge_score_fn(
        MetricSpec(spec.name, {**spec.options, **once, "labels": scheme},
                   f"{spec.column}~labels-{scheme}"), host) for scheme in LABEL_SCHEMES}
    return label_scheme(pairs, scores, judge=spec.column,
                        center=center_of(entry.info.value_range), seed=seed,
                        confidence=confidence,
                        threshold=(thresholds or {}).get("label-scheme"))


def _scale_inversion(spec: MetricSpec, samples: Sequence[Sample], host: PluginHost, *,
                     seed: int, confidence: float, thresholds: Mapping[str, float] | None
                     ) -> BiasResult:
    """The scale-inversion probe of one pointwise judge: its samples scored as it is and
    with invert=true, or a skipped row for a judge without that option."""
    from judgebench.auditing.bias import BiasResult
    from judgebench.auditing.bias_variants import scale_inversion
    from judgebench.auditing.probes import runner_score_fn

    entry = host.metric(spec.name)
    if not _takes(entry, "invert"):
        return BiasResult(spec.column, "scale-inversion", "skipped", None, 0,
                          "skipped: the judge has no invert= option (judge.rubric has)")
    if _criteria_of(spec, host):
        return BiasResult(spec.column, "scale-inversion", "skipped", None, 0,
                          "skipped: a judge rating criteria= in one call takes no invert= "
                          "(its criteria-order probe runs)")
    inverted = MetricSpec(spec.name, {**spec.options, "invert": "true"},
                          f"{spec.column}~invert")
    return scale_inversion(samples, runner_score_fn(spec, host),
                           runner_score_fn(inverted, host), judge=spec.column,
                           higher_is_better=entry.info.higher_is_better, seed=seed,
                           confidence=confidence,
                           threshold=(thresholds or {}).get("scale-inversion"))


def _criteria_of(spec: MetricSpec, host: PluginHost) -> list[str]:
    """The criteria a judge rates in one call, in order (its criteria= option; [] for a
    judge without that option or with it unset)."""
    options = getattr(host.metric(spec.name).factory, "Options", None)
    if options is None or "criteria" not in options.model_fields:
        return []
    try:
        criteria = options.model_validate(spec.options).criteria
    except ValueError:  # the judge's own run says what is wrong with its options
        return []
    return [str(k).lower() for k in criteria or []]


def _criteria_order(spec: MetricSpec, samples: Sequence[Sample], host: PluginHost, *,
                    seed: int, confidence: float, thresholds: Mapping[str, float] | None
                    ) -> list[BiasResult]:
    """The criteria-order probe of one pointwise judge: its samples rated with its criteria
    as asked and in reverse (the same report=, so only the order changes), or a skipped row
    for a judge that rates fewer than two criteria in one call."""
    from judgebench.auditing.bias import BiasResult
    from judgebench.auditing.bias_variants import criteria_order, reversed_order
    from judgebench.auditing.probes import runner_scores_fn

    criteria = _criteria_of(spec, host)
    if len(criteria) < 2:
        has = _takes(host.metric(spec.name), "criteria")
        why = (f"it rates {len(criteria) or 1} criterion in a call; give criteria= with two "
               "or more (judge.rubric:criteria=coherence;fluency)" if has
               else "the judge has no criteria= option (judge.rubric has)")
        return [BiasResult(spec.column, "criteria-order", "skipped", None, 0,
                           f"skipped: {why}")]
    report = str(spec.options.get("report") or criteria[0])
    reordered = MetricSpec(spec.name, {**spec.options, "report": report,
                                       "criteria": ";".join(reversed_order(criteria))},
                           f"{spec.column}~criteria-reversed")

    def rated(which: MetricSpec) -> Callable[[Sequence[Sample]], list[Any]]:
        scores = runner_scores_fn(which, host)
        return lambda batch: [None if s is None or s.value is None
                              else s.extra.get("criteria") for s in scores(batch)]

    return criteria_order(samples, rated(spec), rated(reordered), criteria=criteria,
                          judge=spec.column, seed=seed, confidence=confidence,
                          threshold=(thresholds or {}).get("criteria-order"))


def _takes(entry: Any, option: str) -> bool:
    """Whether a registered metric's options have `option`."""
    return option in getattr(getattr(entry.factory, "Options", None), "model_fields", {})


def _pairwise_bias(spec: MetricSpec, pairs: Sequence[Sample], host: PluginHost, *,
                   builtin: Sequence[str], paraphrases: Sequence[MetricSpec],
                   human: Sequence[float | None] | None, judge_family: str | None,
                   families: dict[str, str] | None,
                   progress: Callable[[str], None] | None) -> list[BiasResult]:
    """The pairwise-only probes (judgebench.auditing.bias) in `builtin` of one judge."""
    import tempfile

    from judgebench.auditing.bias import center_of, judge_score_fn, run_bias
    from judgebench.engine.runtime import RunSettings

    if not builtin:
        return []
    same = [p for p in paraphrases if p.name == spec.name]
    with tempfile.TemporaryDirectory(prefix="judgebench-retest-") as fresh:
        return run_bias(
            pairs, judge_score_fn(spec, host),
            judge=spec.column, center=center_of(host.metric(spec.name).info.value_range),
            rescore=judge_score_fn(spec, host, RunSettings(cache_path=Path(fresh))),
            paraphrases={p.column: judge_score_fn(p, host) for p in same},
            paraphrase_centers={p.column: center_of(host.metric(p.name).info.value_range)
                                for p in same},
            human=human, judge_family=judge_family, families=families, probes=builtin,
            warn=progress)
