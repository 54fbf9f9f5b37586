"""The audit service: what `judgebench audit` computes, as a Python function.

`audit(scores, humans=[...])` reads a wide scores table (and the generations it was scored
from), runs the sentinels, the blocks (one `meta_eval.task.Task` per human column, statistic,
level and grouping) with the sentinel gate, and optionally the metamorphic and judge-bias
probes, and returns the `Report` (`report.results()` is the `--json` array).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.auditing.blocks import Options
from judgebench.errors import InputError
from judgebench.tables.failed import FailedAs

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.auditing.checks import Check, Clusters
    from judgebench.auditing.report import Report
    from judgebench.models import Sample
    from judgebench.plugins import PluginHost
    from judgebench.spec import MetricSpec
    from judgebench.tables.prepared import PreparedTable

LEVELS = ("system", "segment")
GROUPINGS = ("none", "item", "system")
#: Why the judge-bias probes refuse conversations (judgebench.auditing.bias rewrites
#: output_a/output_b, which a conversation derives from its messages).
CONVERSATION_BIAS = ("the judge-bias probes swap, pad and inject into output_a/output_b and "
                     "do not rewrite conversations (messages): give --pairs without "
                     "messages, or leave --judge out for conversation samples")
Log = Callable[[str], None]


def settings_of(levels: Sequence[str], groupings: Sequence[str]) -> list[tuple[str, str]]:
    """(level, grouping) pairs: system level once (grouping none), segment level with each
    grouping asked for."""
    levels = levels or LEVELS
    groupings = groupings or GROUPINGS
    out: list[tuple[str, str]] = []
    if "system" in levels:
        out.append(("system", "none"))
    if "segment" in levels:
        out += [("segment", g) for g in GROUPINGS if g in groupings]
    return out


def _check_store(path: Path) -> None:
    """The store that `--store` names opens as a judgebench store (read-only), or an
    InputError naming it: a missing or corrupt store is refused before any work, not read
    as no store."""
    from judgebench.engine.store import Store

    try:
        Store(path, readonly=True).close()
    except InputError as exc:
        raise InputError(exc.detail, path=str(path), field="--store") from None


def audit(scores: str | Path, *, humans: Sequence[str], samples: str | Path | None = None,
          metrics: Sequence[str] = (), levels: Sequence[str] = (),
          groupings: Sequence[str] = (), statistics: Sequence[str] = ("pearson",),
          sentinels: Sequence[str] = (), lower: Sequence[str] = (),
          higher: Sequence[str] = (), store: str | Path | None = None,
          options: Options | None = None, probes: Sequence[str] = (), probe_items: int = 8,
          judges: Sequence[str] = (), pairs: str | Path | None = None, bias_pairs: int = 24,
          bias_probes: Sequence[str] = (), paraphrases: Sequence[str] = (),
          judge_family: str | None = None, system_families: dict[str, str] | None = None,
          fail_on: Sequence[str] = (), previous: str | Path | None = None,
          pairwise: bool = False, by: str | None = None, human_ties: str = "drop",
          failed_as: str | None = None, raters: Sequence[str] = (),
          alt_test: float | None = None, alt_score: str = "accuracy",
          alt_min_items: int = 30, power_for: float | None = None,
          target_power: float = 0.8, spans: str | Path | None = None,
          host: PluginHost | None = None, log: Log | None = None) -> Report:
    """Audit the metric columns of the scores table `scores` against `humans`, as
    `judgebench audit` does: sentinels (`sentinels`: specs; default every registered one),
    agreement, clusters and the gate per (statistic, level, grouping); metamorphic `probes`
    on metric specs (needs `samples`); bias probes on pairwise `judges` (on `pairs`, or
    pairs drawn from `samples`). `options` sets the bootstrap, test and seed. `fail_on`:
    the checks (judgebench.auditing.checks: gate, parse-rate>X, cluster-drop against the audit
    JSON `previous`) whose findings go to `report.failures`. With `pairwise`, `scores` is a
    pairwise table: its judges' statistics against `humans` (per `by` category, ties as
    `human_ties`; judgebench.auditing.pairwise) replace sentinels and gate. A failed verdict
    counts as `failed_as` says (judgebench.tables.failed: pairwise missing, wrong or tie; scores
    missing, min, max or a number). `alt_test` (the cost-benefit epsilon) tests each metric
    as an annotator of each criterion, `power_for` (DELTA) asks whether the study separates
    metrics DELTA apart, `options.sequential` replays the item-grouped blocks
    (judgebench.auditing.conclusions; `raters`: the annotator columns). `spans` (people's
    error spans: a file or a suite name) adds the span-marking judges' span statistics
    (judgebench.services.spans). A human column with labels on some rows only adds "What you
    can report" (judgebench.auditing.reportable: each system's PPI++ estimate of people's
    mean with each metric as the judge). Bad input raises `InputError` before any scoring."""
    from judgebench.auditing.checks import parse_checks
    from judgebench.auditing.reportable import reportable
    from judgebench.auditing.run import audit_tasks, run_audit
    from judgebench.auditing.sentinels import parse_sentinels
    from judgebench.plugins import build_host
    from judgebench.spec import parse_spec
    from judgebench.tables.failed import parse_failed_as
    from judgebench.tables.io import read_samples
    from judgebench.tables.prepared import PreparedTable
    from judgebench.tables.turn_table import keyed_samples

    host = host or build_host()
    options = options or Options()
    statistics = tuple(statistics) or ("pearson",)
    _check_options(options, statistics)
    _check_conclusions(alt_test, alt_score, power_for, target_power, options, levels,
                       groupings, statistics, pairwise, raters)
    sentinel_specs = parse_sentinels(sentinels, host)
    judge_specs = [parse_spec(j) for j in judges]
    paraphrase_specs = [parse_spec(p) for p in paraphrases]
    _check_judges(judge_specs, paraphrase_specs, host, bias_probes, pairwise=pairwise)
    checks = parse_checks(fail_on)
    _check_bias_checks(checks, host)
    clusters = _previous_clusters(checks, previous)
    if store is not None and not pairwise:
        _check_store(Path(store))
    samples_path = Path(samples) if samples is not None else None
    pairs_path = Path(pairs) if pairs is not None else None
    convention = parse_failed_as(failed_as, pairwise=pairwise)
    if pairwise:
        return _pairwise_audit(Path(scores), humans=humans, by=by, human_ties=human_ties,
                               failed_as=convention,
                               options=options, judges=judge_specs, pairs=pairs_path,
                               bias_pairs=bias_pairs, bias_probes=bias_probes,
                               paraphrases=paraphrase_specs, judge_family=judge_family,
                               system_families=system_families, host=host, log=log,
                               refused=_refused_with_pairwise(
                                   metrics=metrics, sentinels=sentinels, probes=probes,
                                   fail_on=fail_on, statistics=statistics, levels=levels,
                                   groupings=groupings, samples=samples, store=store))
    _check_table_audit(by, probes, judge_specs, pairs_path, samples_path, host)
    scores_path = Path(scores)
    store_path = Path(store) if store is not None else None
    generations = read_samples(samples_path) if samples_path is not None else None
    settings = settings_of(levels, groupings)
    if not settings:
        raise InputError("no setting left: --level segment needs a --grouping",
                         field="--grouping")
    prepared = PreparedTable.read(scores_path, humans, metrics, others=raters,
                                  prefixes=("human.", "sentinel."), lower=lower, higher=higher,
                                  failed_as=convention, views=settings,
                                  store_path=store_path, host=host, log=log)
    frame = prepared.frame
    annotators = _annotators(prepared, humans, raters) if alt_test is not None else None
    if generations is not None and prepared.layout is not None:
        generations = keyed_samples(generations, prepared.layout)
    report = run_audit(prepared, audit_tasks(humans, statistics, settings, options),
                       samples=generations, samples_path=samples_path,
                       sentinel_specs=sentinel_specs, options=options, host=host,
                       store_path=store_path, progress=log)
    _warn_not_run(report, humans, log)
    from judgebench.auditing.combination import combination_verdicts, combinations_in

    report.combinations = combination_verdicts(
        report.blocks, combinations_in(prepared.sidecar, [c.column for c in report.metrics]))
    if probes:
        _probes(report, probes, generations, items=probe_items, seed=options.seed, host=host,
                log=log)
    if judge_specs:
        _judge_bias(report, judge_specs, pairs_path, generations, frame, humans[0],
                    bias_pairs=bias_pairs, bias_probes=bias_probes,
                    paraphrases=paraphrase_specs, judge_family=judge_family,
                    system_families=system_families, options=options,
                    thresholds=_bias_thresholds(checks), host=host, log=log)
    _conclusions(report, scores_path, humans=humans, annotators=annotators, alt_test=alt_test,
                 alt_score=alt_score, alt_min_items=alt_min_items, power_for=power_for,
                 target_power=target_power, options=options, lower=lower, higher=higher,
                 log=log)
    audited = [c.column for c in report.metrics]
    report.repeats = _repeats(prepared, audited, humans)
    report.reportable = reportable(prepared, humans=humans, metrics=audited,
                                   confidence=options.ci)
    if spans is not None:
        _spans(report, scores_path, spans, store=store, host=host, log=log)
    if checks:
        _run_checks(report, checks, clusters, frame, store)
    return report


def _check_table_audit(by: str | None, probes: Sequence[str], judges: Sequence[MetricSpec],
                       pairs_path: Path | None, samples_path: Path | None,
                       host: PluginHost) -> None:
    """What an audit of a wide scores table refuses, before any work."""
    if by is not None:
        raise InputError("--by needs --pairwise (a table of compared pairs)", field="--by")
    if (probes or (judges and pairs_path is None)) and samples_path is None:
        raise InputError("probes need the generations: give --samples", field="--samples")
    if samples_path is None and any(_pointwise(j, host) for j in judges):
        raise InputError("a judge that scores one output is probed on the generations: "
                         "give --samples", field="--samples")


def _annotators(prepared: PreparedTable, humans: Sequence[str], raters: Sequence[str]
                ) -> dict[str, list[str]]:
    """The annotator columns the alt-test takes (judgebench.auditing.conclusions)."""
    from judgebench.auditing.conclusions import annotators_of

    return annotators_of([str(c) for c in prepared.frame.columns], humans, raters,
                         path=prepared.where)


def _probes(report: Report, probes: Sequence[str], generations: list[Sample] | None, *,
            items: int, seed: int, host: PluginHost, log: Log | None) -> None:
    """The metamorphic probes of the audited metric columns."""
    from judgebench.auditing.run import metamorphic, probe_specs

    specs, warnings = probe_specs(probes, [c.column for c in report.metrics], host)
    report.warnings += warnings
    report.probes = metamorphic(generations or [], specs, host=host, items=items, seed=seed,
                                progress=log)


def _spans(report: Report, scores_path: Path, spans: str | Path, *,
           store: str | Path | None, host: PluginHost, log: Log | None) -> None:
    """The span statistics of the span-marking judges (judgebench.services.spans)."""
    from judgebench.services.spans import span_meta_eval

    report.spans = span_meta_eval(scores_path, spans, store=store, host=host,
                                  log=log).to_dict()
    report.inputs["spans"] = str(spans)


def _previous_clusters(checks: Sequence[Check], previous: str | Path | None
                       ) -> Clusters | None:
    """The clusters of the audit JSON `previous`, which `--fail-on cluster-drop` needs and
    nothing else takes."""
    from judgebench.auditing.checks import read_previous

    wants_previous = any(c.kind == "cluster-drop" for c in checks)
    if wants_previous != (previous is not None):
        raise InputError("--fail-on cluster-drop compares with --previous OLD.json: give both"
                         " or neither", field="--previous" if previous else "--fail-on")
    return read_previous(Path(previous)) if previous is not None else None


def _refused_with_pairwise(*, metrics: Sequence[str], sentinels: Sequence[str],
                           probes: Sequence[str], fail_on: Sequence[str],
                           statistics: Sequence[str], levels: Sequence[str],
                           groupings: Sequence[str], samples: str | Path | None,
                           store: str | Path | None) -> dict[str, Sequence[Any]]:
    """The options a pairwise audit refuses -> what was given for each."""
    return {"--metric": metrics, "--sentinel": sentinels, "--probe": probes,
            "--fail-on": fail_on,
            "--statistic": () if statistics == ("pearson",) else statistics,
            "--level": levels, "--grouping": groupings,
            "--samples": (samples,) if samples is not None else (),
            "--store": (store,) if store is not None else ()}


def _judge_bias(report: Report, judges: Sequence[MetricSpec], pairs_path: Path | None,
                generations: list[Sample] | None, frame: pd.DataFrame, human: str, *,
                bias_pairs: int, bias_probes: Sequence[str], paraphrases: Sequence[MetricSpec],
                judge_family: str | None, system_families: dict[str, str] | None,
                options: Options, thresholds: dict[str, float], host: PluginHost,
                log: Log | None) -> None:
    """The bias probes of the `judges`: a pairwise judge's on `pairs_path` or pairs drawn
    from the generations, a pointwise judge's on samples drawn from the generations."""
    from judgebench.auditing.bias_battery import bias_samples
    from judgebench.auditing.run import judge_bias

    pointwise = [_pointwise(j, host) for j in judges]
    chosen: list[Sample] = []
    labels: list[Any] = []
    if not all(pointwise):
        chosen, labels = _pairs(pairs_path, generations, frame, human, bias_pairs,
                                options.seed)
        report.inputs["pairs"] = (str(pairs_path) if pairs_path
                                  else f"{len(chosen)} drawn from --samples")
    drawn: list[Sample] = []
    if any(pointwise):
        drawn = bias_samples(generations or [], count=bias_pairs, seed=options.seed)
        if not drawn:
            raise InputError("no generation has an output to probe", field="--samples")
        report.inputs["bias_samples"] = f"{len(drawn)} drawn from --samples"
    report.bias = judge_bias(judges=judges, pairs=chosen, human=labels, host=host,
                             paraphrases=paraphrases, judge_family=judge_family,
                             families=system_families, probes=bias_probes or None,
                             samples=drawn, seed=options.seed, confidence=options.ci,
                             thresholds=thresholds, generations=generations or (),
                             human_scores=_human_scores(frame, human) if any(pointwise)
                             else None, count=bias_pairs, progress=log)


def _check_conclusions(alt_test: float | None, alt_score: str, power_for: float | None,
                       target_power: float, options: Options, levels: Sequence[str],
                       groupings: Sequence[str], statistics: Sequence[str], pairwise: bool,
                       raters: Sequence[str]) -> None:
    """The alt-test, power and sequential options, before any work."""
    from judgebench.auditing.conclusions import sequential_applies
    from meta_eval.alt_test import SCORES

    asked = {"--alt-test": alt_test is not None, "--power-for": power_for is not None,
             "--sequential": options.sequential, "--rater": bool(raters)}
    if pairwise and any(asked.values()):
        raise InputError("audits a wide scores table, not a pairwise one",
                         field=next(k for k, v in asked.items() if v))
    if raters and alt_test is None:
        raise InputError("annotator columns for --alt-test: give it", field="--rater")
    if alt_test is not None and not alt_test >= 0:
        raise InputError("the cost-benefit epsilon: must be >= 0", field="--alt-test")
    if alt_score not in SCORES:
        raise InputError(f"one of {', '.join(SCORES)}", field="--alt-score")
    if power_for is not None and not 0 < power_for < 2:
        raise InputError("a difference of two correlations: 0 < DELTA < 2", field="--power-for")
    if not 0 < target_power < 1:
        raise InputError("must be in (0, 1)", field="--target-power")
    if options.sequential and not any(
            sequential_applies(st, lv, g) for st in statistics
            for lv, g in settings_of(levels, groupings)):
        raise InputError("the sequential replay averages per-item values: it needs segment "
                         "level grouped by item and a correlation whose per-item value lies "
                         "in [-1, 1] (pearson, spearman, the Kendall family, acc-23)",
                         field="--sequential")


def _conclusions(report: Report, scores: Path, *, humans: Sequence[str],
                 annotators: dict[str, list[str]] | None, alt_test: float | None,
                 alt_score: str, alt_min_items: int, power_for: float | None,
                 target_power: float, options: Options, lower: Sequence[str],
                 higher: Sequence[str], log: Log | None) -> None:
    """`report.alt_test` and `report.power` (judgebench.auditing.conclusions)."""
    from judgebench.auditing.conclusions import alt_tests, study_power

    metrics = [c.column for c in report.metrics]
    if alt_test is not None and annotators is not None:
        report.alt_test = alt_tests(scores, annotators=annotators, metrics=metrics,
                                    epsilon=alt_test, score=alt_score, alpha=options.alpha,
                                    min_items=alt_min_items, log=log)
        report.settings |= {"alt_test": {"epsilon": alt_test, "score": alt_score,
                                         "min_items": alt_min_items}}
    if power_for is not None:
        if len(metrics) < 2:
            raise InputError("--power-for compares two or more metrics", field="--metric")
        report.power = [study_power(scores, power_for, human=h, metrics=metrics,
                                    alpha=options.alpha,
                                    target=target_power, seed=options.seed,
                                    systems=int(report.inputs["systems"]), lower=lower,
                                    higher=higher, log=log) for h in humans]
        report.settings |= {"power_for": {"delta": power_for, "target_power": target_power}}


def _repeats(prepared: PreparedTable, columns: Sequence[str], humans: Sequence[str]
             ) -> list[dict[str, Any]]:
    """The `repeats` section of the judges drawn with `score --repeats K`."""
    from judgebench.services.repeats import repeats_rows

    rows = repeats_rows(prepared.sidecar, prepared.frame, columns, humans, prepared.where)
    return [row.to_dict() for row in rows]


def _warn_not_run(report: Report, humans: Sequence[str], log: Log | None) -> None:
    """On stderr: a verdict that is against some sentinels only, and why."""
    from judgebench.auditing.verdict import not_run_caveat

    data = {"sentinels": report.sentinels, "inputs": report.inputs}
    for human in humans:
        _, against, caveat = not_run_caveat(data, human)
        if against is not None and log is not None:
            log(f"warning: {human}: {caveat}")


def _pairwise_audit(scores: Path, *, humans: Sequence[str], by: str | None, human_ties: str,
                    failed_as: FailedAs, options: Options, judges: Sequence[MetricSpec],
                    pairs: Path | None,
                    bias_pairs: int, bias_probes: Sequence[str],
                    paraphrases: Sequence[MetricSpec], judge_family: str | None,
                    system_families: dict[str, str] | None, host: PluginHost,
                    log: Log | None, refused: dict[str, Sequence[Any]]) -> Report:
    """`audit --pairwise`: the judges of the pairwise table `scores`, and the bias probes of
    `judges` on `pairs` (whose texts the style control of a table without them takes)."""
    from judgebench._version import __version__
    from judgebench.auditing.pairwise_report import pairwise_report
    from judgebench.auditing.run import judge_bias

    given = [option for option, values in refused.items() if values]
    if given:
        raise InputError(f"{', '.join(given)} audit(s) a wide scores table, not a pairwise "
                         "one: leave it out with --pairwise", field=given[0])
    if judges and pairs is None:
        raise InputError("--pairwise: the bias probes of --judge need --pairs (generations "
                         "with output_a/output_b)", field="--pairs")
    report = pairwise_report(scores, humans=humans, by=by, human_ties=human_ties,
                             options=options, version=__version__, failed_as=failed_as,
                             log=log, texts=pairs)
    if pairs is not None:
        report.inputs["pairs"] = str(pairs)
    if judges and pairs is not None:
        chosen, labels = _pairs_from_file(pairs, humans[0], bias_pairs, options.seed)
        report.bias = judge_bias(judges=judges, pairs=chosen, human=labels, host=host,
                                 paraphrases=paraphrases, judge_family=judge_family,
                                 families=system_families, probes=bias_probes or None,
                                 seed=options.seed, confidence=options.ci, progress=log)
    return report


def _run_checks(report: Report, checks: Sequence[Check], previous: Clusters | None,
                frame: pd.DataFrame, store: str | Path | None) -> None:
    from judgebench.auditing.checks import failures, store_shares

    shares = None
    if store is not None and any(c.kind == "parse-rate" for c in checks):
        keys = set(zip(frame["item"].astype("str"), frame["system"].astype("str"), strict=True))
        shares = store_shares(Path(store), report.metrics, keys)
    report.fail_on = [c.expression for c in checks]
    report.failures = [f.to_dict() for f in failures(report, checks, previous=previous,
                                                     store_shares=shares)]


def _check_options(options: Options, statistics: Sequence[str]) -> None:
    if options.epsilon < 0:
        raise InputError("must be >= 0", field="--epsilon")
    if options.method == "williams" and set(statistics) != {"pearson"}:
        raise InputError("Williams' test compares Pearson correlations; use --test "
                         "permutation", field="--test")


def _check_judges(judges: Sequence[MetricSpec], paraphrases: Sequence[MetricSpec],
                  host: PluginHost, probes: Sequence[str] = (), *, pairwise: bool = False
                  ) -> None:
    """Unknown probe names, and judges no asked probe applies to, before any work: a judge
    that scores one output takes the registered bias probes with a pointwise mode, outside
    --pairwise; --paraphrase takes only pairwise judges."""
    from judgebench.auditing.bias import BIAS_PROBES
    from judgebench.auditing.bias_variants import VARIANT_PROBES
    from judgebench.engine.pairwise_table import is_pointwise_metric

    registered = host.bias_probes()
    known = [*BIAS_PROBES, *(n for n in registered if n not in BIAS_PROBES), *VARIANT_PROBES]
    unknown = [p for p in probes if p not in known]
    if unknown:
        raise InputError(f"unknown bias probe(s) {', '.join(unknown)}; known: "
                         f"{', '.join(known)}", field="--bias-probe")
    pointwise_probes = ["self-preference", *(n for n, e in registered.items()
                                             if "pointwise" in getattr(e.probe, "modes", ())),
                        *(n for n, mode in VARIANT_PROBES.items() if mode == "pointwise")]
    usable = [p for p in probes or pointwise_probes if p in pointwise_probes]
    for option, specs in (("--judge", judges), ("--paraphrase", paraphrases)):
        for spec in specs:
            # an unknown name or a pointwise judge is an input error now, not after the work
            pointwise = is_pointwise_metric(host.metric(spec.name).info)
            if pointwise and (option == "--paraphrase" or pairwise or not usable):
                raise _pointwise_refused(spec.column, option, probes, pointwise_probes,
                                         pairwise=pairwise)
    stray = [p.column for p in paraphrases if p.name not in {j.name for j in judges}]
    if stray:
        raise InputError(f"{stray} paraphrase no --judge", field="--paraphrase")


def _pointwise(spec: MetricSpec, host: PluginHost) -> bool:
    from judgebench.engine.pairwise_table import is_pointwise_metric

    return is_pointwise_metric(host.metric(spec.name).info)


def _human_scores(frame: pd.DataFrame, human: str) -> dict[tuple[str, str], float]:
    """People's score of each (item, system) in the `human` column (NaN where none)."""
    values = frame[human].to_numpy(dtype=float)
    keys = zip([str(v) for v in frame["item"]], [str(v) for v in frame["system"]], strict=True)
    return {k: float(v) for k, v in zip(keys, values, strict=True)}


def _pointwise_refused(column: str, option: str, probes: Sequence[str],
                       pointwise_probes: Sequence[str], *, pairwise: bool) -> InputError:
    where = (" in a --pairwise audit" if pairwise and option == "--judge"
             else "" if option == "--judge" else " for --paraphrase")
    return InputError(f"{column} scores one output; the bias probes "
                      f"{', '.join(probes) or 'asked'}{where} need a pairwise judge (one that "
                      "compares output_a and output_b, e.g. judge.pairwise); a judge that "
                      f"scores one output takes {', '.join(pointwise_probes) or 'none'} (not "
                      "with --pairwise)", field=option)


def _check_bias_checks(checks: Sequence[Check], host: PluginHost) -> None:
    """`--fail-on bias:NAME>X` names a registered bias probe."""
    from judgebench.auditing.bias_variants import VARIANT_PROBES

    known = [*host.bias_probes(), "self-preference", *VARIANT_PROBES]
    for check in checks:
        if check.kind == "bias" and check.probe not in known:
            raise InputError(f"'{check.expression}': no bias probe '{check.probe}' gives a "
                             f"shift; known: {', '.join(known) or 'none'}", field="--fail-on")


def _bias_thresholds(checks: Sequence[Check]) -> dict[str, float]:
    """The verdict threshold of each probe a `--fail-on bias:NAME>X` gates."""
    return {c.probe: c.threshold for c in checks
            if c.kind == "bias" and c.probe is not None and c.threshold is not None}


def _pairs(pairs_path: Path | None, samples: Sequence[Sample] | None, frame: pd.DataFrame,
           human: str, count: int, seed: int) -> tuple[list[Sample], list[Any]]:
    """Pairwise samples for the bias probes and their human labels (>0: A better)."""
    if pairs_path is not None:
        return _pairs_from_file(pairs_path, human, count, seed)
    from judgebench.auditing.bias import pairs_from_samples

    if any(s.messages is not None for s in samples or ()):
        raise InputError(CONVERSATION_BIAS, field="--judge")

    values = frame[human].to_numpy(dtype=float)
    keys = zip(frame["item"], frame["system"], strict=True)
    labels = {k: v for k, v in zip(keys, values, strict=True)}
    pairs, found = pairs_from_samples(list(samples or []), labels, count=count, seed=seed)
    if not pairs:
        raise InputError("no item has outputs of two systems to pair", field="--samples")
    return pairs, found


def _pairs_from_file(path: Path, human: str, count: int, seed: int
                     ) -> tuple[list[Sample], list[Any]]:
    import numpy as np

    from judgebench.tables.io import read_samples

    pairs = read_samples(path)
    talks = [p for p in pairs if p.messages is not None]
    if talks:
        raise InputError(f"item {talks[0].item!r}: {CONVERSATION_BIAS}", path=str(path),
                         field="messages")
    flat = [p for p in pairs if not p.is_pairwise]
    if flat:
        raise InputError(f"item {flat[0].item!r} has no output_a/output_b", path=str(path),
                         field="output_a")
    key = human.removeprefix("human.")
    chosen = pairs[:count] if len(pairs) > count else pairs
    if len(pairs) > count:
        rng = np.random.default_rng(seed)
        chosen = [pairs[i] for i in sorted(rng.choice(len(pairs), count, replace=False))]
    return chosen, [p.human.get(key) for p in chosen]
