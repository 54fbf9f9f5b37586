"""The scoring run: metrics over samples, in batches, into the store, out as a wide table.

Order of work: build every metric from its spec, check every required field (nothing runs if
one is missing), then per metric score the samples the store does not already hold (resume),
committing each batch, then corpus-level scores per system. The wide table is built from the
store, so a resumed run and a fresh one produce the same table.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError, JudgebenchError
from judgebench.metric import Metric
from judgebench.models import CorpusScore, Outcome, Sample, Score, Status
from judgebench.redact import redact
from judgebench.runtime import BudgetExceeded, RunSettings, running
from judgebench.spec import MetricSpec
from judgebench.store import FINAL_STATUSES, Store

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost


@dataclass
class PreparedMetric:
    spec: MetricSpec
    metric: Metric
    signature: str

    @property
    def column(self) -> str:
        return self.spec.column

    @property
    def segment_level(self) -> bool:
        return self.metric.info.level == "segment"

    @property
    def corpus_level(self) -> bool:
        return self.metric.info.level == "corpus" or self.metric.info.has_corpus


@dataclass
class RunResult:
    metrics: list[PreparedMetric]
    corpus: list[CorpusScore] = field(default_factory=list)
    table: pd.DataFrame | None = None  # None after a dry run
    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    computed: int = 0
    reused: int = 0
    estimates: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """Column -> metric, signature, direction, level and status counts, and every corpus
        score: the `.meta.json` sidecar, where meta-eval, audit and aggregate find a
        column's direction and its system scores."""
        return {
            "columns": {
                p.column: {
                    "metric": p.metric.info.name,
                    "signature": p.signature,
                    "higher_is_better": p.metric.info.higher_is_better,
                    "level": p.metric.info.level,
                    "has_corpus": p.corpus_level,
                    "statuses": dict(self.statuses.get(p.column, {})),
                }
                for p in self.metrics
            },
            "corpus": [c.model_dump(mode="json") for c in self.corpus],
            "computed": self.computed,
            "reused": self.reused,
        }


def prepare_metrics(specs: Sequence[MetricSpec], host: PluginHost) -> list[PreparedMetric]:
    columns = Counter(spec.column for spec in specs)
    twice = [c for c, n in columns.items() if n > 1]
    if twice:
        raise InputError(f"metric column(s) given twice: {twice}")
    prepared = []
    for spec in specs:
        entry = host.metric(spec.name)
        metric = entry.factory(**spec.options)
        prepared.append(PreparedMetric(spec, metric, str(metric.signature())))
    return prepared


def _missing(sample: Sample, name: str) -> bool:
    value = getattr(sample, name)
    return value is None or (isinstance(value, str | list | dict) and len(value) == 0)


def check_requirements(samples: Sequence[Sample], prepared: Sequence[PreparedMetric]) -> None:
    """Stop before any work if a metric needs a field some samples lack."""
    problems = []
    for p in prepared:
        for name in p.metric.info.requires:
            lacking = [s for s in samples if _missing(s, name)]
            if lacking:
                first = lacking[0]
                problems.append(
                    f"metric {p.metric.info.name} needs field '{name}', missing in "
                    f"{len(lacking)} of {len(samples)} rows (first: item={first.item!r}, "
                    f"system={first.system!r})"
                )
    if problems:
        raise InputError("; ".join(problems), field=None)


def sample_hash(sample: Sample) -> str:
    payload = sample.model_dump(mode="json", exclude={"human", "metadata"})
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def _as_outcome(result: Any) -> Outcome:
    if isinstance(result, Outcome):
        return result
    if result is None:
        return Outcome.failed(Status.ERROR, "metric returned no value")
    try:
        value = float(result)
    except (TypeError, ValueError):
        kind = type(result).__name__
        return Outcome.failed(Status.ERROR, f"metric returned {kind}, not a number")
    if value != value:
        return Outcome.failed(Status.ERROR, "metric returned NaN")
    return Outcome(value=value)


def _describe(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}") or type(exc).__name__


def score_batch(metric: Metric, batch: Sequence[Sample]) -> list[Outcome]:
    """Score a batch; if it raises, score its samples one by one so one bad sample fails
    alone, with its reason."""
    try:
        results = list(metric.score(batch))
        if len(results) != len(batch):
            raise JudgebenchError(
                f"metric {metric.info.name} returned {len(results)} results for "
                f"{len(batch)} samples"
            )
    except (BudgetExceeded, KeyboardInterrupt):
        raise
    except Exception as exc:
        if len(batch) == 1:
            return [Outcome.failed(Status.ERROR, _describe(exc))]
        return [outcome for sample in batch for outcome in score_batch(metric, [sample])]
    return [_as_outcome(r) for r in results]


def _stamp(outcome: Outcome, sample: Sample, p: PreparedMetric) -> Score:
    data = outcome.model_dump()
    for name in ("reason", "raw", "rationale"):  # third-party metrics too
        data[name] = redact(data[name])
    return Score(item=sample.item, system=sample.system, metric=p.metric.info.name,
                 signature=p.signature, **data)


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, disable=not enabled, unit="sample",
                dynamic_ncols=True, leave=False)


def run(
    samples: Sequence[Sample],
    specs: Sequence[MetricSpec],
    *,
    store: Store,
    resume: bool = False,
    progress: bool = False,
    settings: RunSettings | None = None,
    host: PluginHost | None = None,
) -> RunResult:
    from judgebench.plugins import get_host

    host = host or get_host()
    prepared = prepare_metrics(specs, host)
    check_requirements(samples, prepared)
    settings = settings or RunSettings()
    hashes = [sample_hash(s) for s in samples]
    result = RunResult(metrics=prepared)
    try:
        with running(settings):
            if not settings.dry_run:  # before any call: a budget needs known prices
                settings.budget.preflight((p.column, p.metric) for p in prepared)
            for p in prepared:
                if settings.dry_run:
                    result.estimates[p.column] = _estimate(p.metric, samples)
                    continue
                if p.segment_level:
                    _run_segments(p, samples, hashes, store, resume, progress, result)
                if p.corpus_level:
                    _run_corpus(p, samples, hashes, store, resume, result)
    finally:
        for p in prepared:
            p.metric.close()
    if not settings.dry_run:
        result.table = build_table(samples, prepared, store, hashes=hashes)
    return result


def _run_segments(
    p: PreparedMetric,
    samples: Sequence[Sample],
    hashes: Sequence[str],
    store: Store,
    resume: bool,
    progress: bool,
    result: RunResult,
) -> None:
    keys = [(s.item, s.system, h) for s, h in zip(samples, hashes, strict=True)]
    done = store.lookup(p.signature, keys) if resume else {}
    todo = [
        (s, key[2]) for s, key in zip(samples, keys, strict=True)
        if key not in done or done[key].status not in FINAL_STATUSES
    ]
    result.reused += len(samples) - len(todo)
    size = max(1, p.metric.batch_size)
    with _progress(len(todo), p.column, progress) as bar:
        for start in range(0, len(todo), size):
            chunk = todo[start : start + size]
            batch = [s for s, _ in chunk]
            began = time.perf_counter()
            try:
                outcomes = score_batch(p.metric, batch)
            except BudgetExceeded:
                _keep_finished_before_budget_stop(p, chunk, store, result)
                raise
            elapsed = (time.perf_counter() - began) / len(batch)
            store.put([_stamp(o, s, p) for o, s in zip(outcomes, batch, strict=True)],
                      [h for _, h in chunk], elapsed)
            result.computed += len(batch)
            bar.update(len(batch))
    counts: Counter[str] = Counter(
        str(score.status) for score in store.lookup(p.signature, keys).values())
    result.statuses[p.column] = counts


def _keep_finished_before_budget_stop(
    p: PreparedMetric, chunk: Sequence[tuple[Sample, str]], store: Store, result: RunResult
) -> None:
    """A batch stopped by the budget may have finished some samples (their answers are in the
    judge cache): score them one at a time, which costs nothing for cached answers and stops
    again before any new spending, and store what finishes."""
    for sample, digest in chunk:
        began = time.perf_counter()
        try:
            (outcome,) = score_batch(p.metric, [sample])
        except BudgetExceeded:
            continue
        store.put([_stamp(outcome, sample, p)], [digest], time.perf_counter() - began)
        result.computed += 1


def _run_corpus(
    p: PreparedMetric,
    samples: Sequence[Sample],
    hashes: Sequence[str],
    store: Store,
    resume: bool,
    result: RunResult,
) -> None:
    by_system: dict[str, list[int]] = {}
    for index, sample in enumerate(samples):
        by_system.setdefault(sample.system, []).append(index)
    for system, indices in by_system.items():
        items_hash = hashlib.sha256("".join(hashes[i] for i in indices).encode()).hexdigest()[:20]
        found = store.corpus_score(p.signature, system, items_hash) if resume else None
        if found is None:
            outcome = _corpus_outcome(p.metric, [samples[i] for i in indices])
            found = CorpusScore(system=system, metric=p.column, value=outcome.value,
                                status=outcome.status, reason=redact(outcome.reason),
                                signature=p.signature, n=len(indices))
            store.put_corpus([(found, items_hash)])
        result.corpus.append(found.model_copy(update={"metric": p.column}))


def _corpus_outcome(metric: Metric, samples: list[Sample]) -> Outcome:
    try:
        return _as_outcome(metric.corpus_score(samples))
    except (BudgetExceeded, KeyboardInterrupt):
        raise
    except Exception as exc:
        return Outcome.failed(Status.ERROR, _describe(exc))


def _estimate(metric: Metric, samples: Sequence[Sample]) -> dict[str, Any]:
    estimate = getattr(metric, "estimate", None)
    if estimate is None:
        return {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
                "note": "no model calls (local computation)"}
    return dict(estimate(list(samples)))


def build_table(
    samples: Sequence[Sample], prepared: Sequence[PreparedMetric], store: Store, *,
    hashes: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The wide table: item, system, one column per segment-level metric spec, then the
    `human.<name>` columns carried from the samples. Each cell is the stored score of exactly
    that sample (signature, item, system and content hash; `hashes` as `sample_hash` gives
    them), never another run's score for the same ids."""
    import pandas as pd

    if hashes is None:
        hashes = [sample_hash(s) for s in samples]
    keys = [(s.item, s.system, h) for s, h in zip(samples, hashes, strict=True)]

    data: dict[str, list[Any]] = {
        "item": [s.item for s in samples],
        "system": [s.system for s in samples],
    }
    for p in prepared:
        if not p.segment_level:
            continue
        stored = store.lookup(p.signature, keys)
        data[p.column] = [stored[k].value if k in stored else None for k in keys]
    human_names: dict[str, None] = {}
    for s in samples:
        human_names.update(dict.fromkeys(s.human))
    for name in human_names:
        data[f"human.{name}"] = [s.human.get(name) for s in samples]
    frame = pd.DataFrame(data)
    for column in frame.columns[2:]:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame
