"""`score --escalate HUMAN`: score with a cascade of judges where only what a judge cannot be
trusted on reaches the next one (Trust or Escalate, Jung, Brahman, Choi 2025), and what the
last judge will not decide goes to the labelling queue.

The cascade is `-m FIRST` then each `--cascade SPEC`, in order. HUMAN labels a subset of the
rows: a samples field with missing values (`human.relevance`, or `relevance`) or
`store:CRITERION` (the store's labels, `judgebench.tables.store_humans`). The labelled rows
are the calibration set; they are scored by every judge of the cascade, the unlabelled rows
only by the judges they reach. Per judge, in order:

- it scores the labelled rows and the unlabelled rows no earlier judge kept;
- its confidence on each row it scored (`--confidence`), from what the judge gives:
  `repeats`: the share of the `--repeats K` draws whose verdict, rounded as below, equals
  the table's cell (K >= 2; a failed draw agrees with nothing); `probs`: the probability
  the judge put on the score its cell rounds to (`extra["probs"]`, G-Eval's score-token
  distribution and the rubric judge's probabilities), averaged over the draws that have one;
- the threshold is `judgebench.services.escalate`'s (fixed-sequence testing on the
  calibration rows that reached it: agreement >= 1 - alpha with probability >= 1 - delta),
  agreement being verdict == label rounded to `decimals` places, halves away from zero;
- it keeps the rows that reached it with confidence >= the threshold; the rest go on. A row
  where it failed (no verdict, or no confidence) is never kept: it goes on, and counts as a
  failure of the run (exit 3 without --allow-failures).

The rows no judge keeps and nobody labelled are recorded in the store as one sample of the
criterion (strategy `escalate`, each row with inclusion probability 1): the queue that
`judgebench label --sample-id ID` serves. The table written holds every judge's cell where it
scored (missing where it did not), its confidence (`COLUMN.confidence`), the human labels and
`decided_by` (the judge whose verdict was kept; empty for the queue and the labelled rows no
judge kept), so `judgebench escalate` on it chooses the same thresholds. The cost is the
store's recorded cost of what each judge scored, against the last (strongest) judge's price
per row on every row (`judgebench.services.escalate_cost`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench._version import __version__
from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.services.escalate import Stage, cascade_stage, round_half_away
from judgebench.services.escalate_cost import CascadeCost, cascade_cost

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.engine.runtime import RunSettings
    from judgebench.engine.store import Store
    from judgebench.models import Sample
    from judgebench.plugins import PluginHost
    from judgebench.spec import MetricSpec

Log = Callable[[str], None]
VERSION = "1"
CONFIDENCES = ("repeats", "probs")


@dataclass(frozen=True)
class JudgeRun:
    """One judge of the cascade as it ran: the rows it scored (`scored`, of them
    `calibration` labelled), the rows it failed on, the rows it sent on, and its `Stage`
    (threshold, coverage, guaranteed agreement: `judgebench.services.escalate`)."""

    stage: Stage
    signature: str
    scored: int
    calibration: int
    failed: int
    sent_on: int
    reasons: list[dict[str, Any]]
    #: the judge's failed scores (every draw counted), also where another draw gave a verdict
    failed_scores: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {**self.stage.to_dict(), "signature": self.signature, "scored": self.scored,
                "calibration_scored": self.calibration, "failed": self.failed,
                "failed_scores": self.failed_scores,
                "sent_on": self.sent_on, "failure_reasons": self.reasons}


@dataclass
class EscalateRun(Result):
    """What `score --escalate` did: one JudgeRun per judge, the queue recorded in the
    store (its sample id; None when empty) and the cost."""

    human: str
    criterion: str
    confidence: str
    alpha: float
    delta: float
    decimals: int
    items: int
    labelled: int
    judges: list[JudgeRun]
    queue: list[tuple[str, str]]
    queue_sample: int | None
    cost: CascadeCost
    signature: str

    @property
    def failed(self) -> int:
        """Rows where a judge gave no verdict or no confidence, over the cascade."""
        return sum(j.failed for j in self.judges)

    @property
    def failed_scores(self) -> int:
        """Failed scores (every draw counted), over the cascade."""
        return sum(j.failed_scores for j in self.judges)

    def to_dict(self) -> dict[str, Any]:
        decided = sum(j.stage.kept for j in self.judges)
        return {"human": self.human, "criterion": self.criterion,
                "confidence": self.confidence, "alpha": self.alpha, "delta": self.delta,
                "decimals": self.decimals, "items": self.items, "labelled": self.labelled,
                "judges": [j.to_dict() for j in self.judges], "decided": decided,
                "coverage": decided / self.items, "failed": self.failed,
                "failed_scores": self.failed_scores,
                "queue": {"count": len(self.queue), "sample_id": self.queue_sample,
                          "items": [{"item": i, "system": s} for i, s in self.queue]},
                "cost": self.cost.to_dict(), "signature": self.signature}


@dataclass(frozen=True)
class Judged:
    """One judge's cell and confidence per sample (NaN where it did not score or failed),
    its signature, its sidecar entry, its failures' reasons and its recorded price per row
    scored (every draw counted; None when some score has no price)."""

    verdicts: np.ndarray
    confidences: np.ndarray
    signature: str
    summary: dict[str, Any]
    reasons: list[dict[str, Any]]
    price: float | None
    failed_scores: int


def score_escalate(input_path: str | Path, specs: Sequence[MetricSpec], *, human: str,
                   store: str | Path, output: str | Path, settings: RunSettings,
                   confidence: str, alpha: float = 0.1, delta: float = 0.1, decimals: int = 0,
                   resume: bool = False, progress: bool = False, csv_safe: bool = False,
                   host: PluginHost | None = None, log: Log | None = None) -> EscalateRun:
    """Score `input_path` with the cascade `specs` (module docstring): everything is checked
    (the cascade's specs, the labels, the queue's criterion) before the first judge is
    called; the table goes to `output` (with its sidecar) and the queue into `store`."""
    from judgebench.engine.store import Store
    from judgebench.plugins import build_host
    from judgebench.tables.io import read_samples

    log = log or (lambda _message: None)
    host = host or build_host()
    _check_options(specs, settings, confidence, alpha, delta, decimals)
    samples = read_samples(input_path)
    _check_samples(samples, specs, settings, host, where=str(input_path))
    labels, criterion, queue_store = _labels(samples, human, store, where=str(input_path))
    labelled = np.isfinite(labels)
    rounded_labels = round_half_away(labels, decimals)
    undecided = np.ones(len(samples), dtype=bool)
    runs: list[JudgeRun] = []
    columns: dict[str, Any] = {}
    cells: dict[str, np.ndarray] = {}
    scored_rows: list[np.ndarray] = []
    prices: dict[str, float] = {}
    with Store(store) as db:
        for spec in specs:
            rows = labelled | undecided
            judged = _score_judge(samples, rows, spec, db, settings=settings,
                                  confidence=confidence, decimals=decimals, resume=resume,
                                  progress=progress, host=host)
            verdicts, confidences, reasons = judged.verdicts, judged.confidences, judged.reasons
            column = spec.column
            columns[column] = judged.summary
            if judged.price is not None:
                prices[column] = judged.price
            cells[column], cells[f"{column}.confidence"] = verdicts, confidences
            scored_rows.append(rows)
            ok = np.isfinite(verdicts) & np.isfinite(confidences)
            failed = rows & ~ok
            agree = np.where(labelled & ok,
                             round_half_away(verdicts, decimals) == rounded_labels, False)
            stage, keeps = cascade_stage(column, f"{column}.confidence", confidences, agree,
                                  undecided & ok, labelled,
                                  np.zeros(len(samples), dtype=bool), alpha, delta)
            unsure = rows & np.isfinite(verdicts) & ~np.isfinite(confidences)
            if unsure.any():
                reasons = [*reasons, {"status": "no_confidence",
                                      "reason": _no_confidence(confidence),
                                      "count": int(unsure.sum())}]
            runs.append(JudgeRun(stage, judged.signature, int(rows.sum()),
                                 int((rows & labelled).sum()), int(failed.sum()),
                                 int((undecided & ~keeps).sum()), reasons,
                                 judged.failed_scores))
            cells[f"{column}.decided"] = keeps
            undecided &= ~keeps
            log(f"{column}: threshold {_fmt(stage.threshold)}, kept {stage.kept} of "
                f"{stage.reached}, {int(undecided.sum())} sent on")
    cost = cascade_cost([s.column for s in specs], [int(r.sum()) for r in scored_rows],
                        len(samples), given={}, stored=prices)
    queue_rows = np.flatnonzero(undecided & ~labelled)
    queue = [(samples[k].item, samples[k].system) for k in queue_rows.tolist()]
    sig = "|".join([f"score-escalate@{VERSION}", f"human:{human}",
                    *(f"judge:{s.column}" for s in specs), f"confidence:{confidence}",
                    f"repeats:{settings.repeats}", f"alpha:{alpha:g}", f"delta:{delta:g}",
                    f"agree:round-half-away-{decimals}", f"judgebench:{__version__}"])
    table = _table(samples, specs, cells, human, labels)
    _write(table, output, columns, db_path=store, signature=sig, csv_safe=csv_safe)
    sample_id = _record_queue(queue_store, criterion, queue, sig, str(input_path))
    return EscalateRun(human, criterion, confidence, alpha, delta, decimals, len(samples),
                       int(labelled.sum()), runs, queue, sample_id, cost, sig)


def _fmt(value: float | None) -> str:
    return "none" if value is None else f"{value:g}"


def _no_confidence(confidence: str) -> str:
    return ("the judge gave no score probabilities (extra.probs): its backend returned no "
            "logprobs" if confidence == "probs" else "no draw gave a verdict")


def _check_options(specs: Sequence[MetricSpec], settings: RunSettings, confidence: str,
                   alpha: float, delta: float, decimals: int) -> None:
    if not specs:
        raise InputError("--escalate needs a judge: give -m", field="--escalate")
    for value, option in ((alpha, "--alpha"), (delta, "--delta")):
        if not 0 < value < 1:
            raise InputError(f"must lie strictly between 0 and 1, got {value}", field=option)
    if not 0 <= decimals <= 15:
        raise InputError(f"must lie in 0..15, got {decimals}", field="--decimals")
    if confidence not in CONFIDENCES:
        raise InputError(f"{confidence!r} is not a confidence: {' or '.join(CONFIDENCES)}",
                         field="--confidence")
    if confidence == "repeats" and settings.repeats < 2:
        raise InputError("the agreement of repeated draws needs --repeats K with K >= 2 (or "
                         "--confidence probs, for a judge that reports its score "
                         "probabilities)", field="--confidence")


def _check_samples(samples: Sequence[Sample], specs: Sequence[MetricSpec],
                   settings: RunSettings, host: PluginHost, *, where: str) -> None:
    """The cascade's metrics exist and judge one output at a time, and the samples are
    single outputs with the fields each needs: before any judge is called."""
    from judgebench.engine.scoring import plan_repeats, prepare_metrics, repeatable
    from judgebench.engine.survey import survey

    found = survey(samples)
    if found.pairs.pairwise:
        raise InputError("--escalate scores single outputs (item, system); a pairwise "
                         "input's verdicts can be escalated from a scored table with "
                         "`judgebench escalate`", path=where)
    if found.turns:
        raise InputError("--escalate scores whole outputs; this input judges conversation "
                         "turns", path=where)
    prepared = prepare_metrics(specs, host)
    for p in prepared:
        if not p.segment_level:
            raise InputError(f"{p.column} scores a corpus, not each output: a cascade's judges "
                             "score items", field="--cascade")
        if settings.repeats > 1 and not repeatable(p.metric):
            raise InputError(f"{p.column} is not drawn by --repeats (not a judge with a "
                             "temperature): its draws cannot give a confidence",
                             field="--confidence")
    plan_repeats(prepared, settings.repeats, settings.repeats_allow_greedy,
                 settings.repeats_cell)
    found.check_requirements(prepared)


def _labels(samples: Sequence[Sample], human: str, store: str | Path, *, where: str
            ) -> tuple[np.ndarray, str, Path]:
    """The human label of each sample (NaN: unlabelled), the criterion the queue is a sample
    of, and the store that holds it (which must define it already)."""
    import pandas as pd

    from judgebench.engine.labels import criteria
    from judgebench.tables import store_humans

    if human.startswith(store_humans.PREFIX):
        given, criterion, _ = store_humans.parse(human)
        queue_store = Path(given) if given else Path(store)
        if not queue_store.exists():
            raise InputError(f"{human} reads people's labels from {queue_store}, which does "
                             "not exist", path=str(queue_store), field="--escalate")
        frame = pd.DataFrame({"item": [s.item for s in samples],
                              "system": [s.system for s in samples]})
        store_humans.add_store_columns(frame, [human], store=store, sidecar=None, where=where)
        labels = frame[human].to_numpy(dtype=float)
    else:
        criterion = human.removeprefix("human.")
        queue_store = Path(store)
        values = []
        for row, s in enumerate(samples, start=1):
            value = s.human.get(criterion)
            number = _label_number(value, where=where, row=row, field=f"human.{criterion}")
            values.append(number)
        labels = np.asarray(values, dtype=float)
    if not np.isfinite(labels).any():
        raise InputError(f"no row has a label of {human!r}: the cascade's thresholds are "
                         "chosen on labelled rows", path=where, field="--escalate")
    known = ({c.name for c in criteria(queue_store)} if queue_store.exists() else set())
    if criterion not in known:
        raise InputError(f"the labelling queue is a sample of criterion {criterion!r}, which "
                         f"{queue_store} does not define: define it first (`judgebench labels "
                         "import`, or `judgebench label` with --scale/--binary)",
                         path=str(queue_store), field="--escalate")
    return labels, criterion, queue_store


def _label_number(value: object, *, where: str, row: int, field: str) -> float:
    if value is None:
        return math.nan
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{value!r} is not a number", path=where, row=row,
                         field=field) from None
    if math.isinf(number):
        raise InputError(f"{value!r} is not a finite label", path=where, row=row, field=field)
    return number


def _score_judge(samples: Sequence[Sample], rows: np.ndarray, spec: MetricSpec, db: Store, *,
                 settings: RunSettings, confidence: str, decimals: int, resume: bool,
                 progress: bool, host: PluginHost
                 ) -> Judged:
    """One judge on `rows` (see Judged)."""
    from judgebench.engine.runner import run
    from judgebench.engine.store import FAILED_STATUSES
    from judgebench.engine.survey import sample_hash

    chosen = [samples[k] for k in np.flatnonzero(rows).tolist()]
    result = run(chosen, [spec], store=db, resume=resume, progress=progress,
                 settings=settings, host=host)
    prepared = next(p for p in result.metrics if p.column == spec.column)
    keys = [(s.item, s.system, sample_hash(s)) for s in chosen]
    draws = db.draws(prepared.signature, keys, prepared.repeats)
    cell = result.table[spec.column].to_numpy(dtype=float)
    verdicts = np.full(len(samples), np.nan)
    confidences = np.full(len(samples), np.nan)
    rounded = round_half_away(cell, decimals)
    for j, (k, key) in enumerate(zip(np.flatnonzero(rows), keys, strict=True)):
        if not math.isfinite(cell[j]):
            continue
        verdicts[k] = cell[j]
        found = [d[key] for d in draws if key in d]
        confidences[k] = (_repeats_confidence(found, rounded[j], decimals, len(draws))
                          if confidence == "repeats" else
                          _probs_confidence(found, rounded[j], decimals))
    summary = result.summary()["columns"][spec.column]
    paid = [score for d in draws for score in d.values()]
    price = (math.fsum(float(s.cost_usd or 0.0) for s in paid) / len({(s.item, s.system)
                                                                       for s in paid})
             if paid and all(s.cost_usd is not None for s in paid) else None)
    failed = sum(score.status in FAILED_STATUSES for d in draws for score in d.values())
    return Judged(verdicts, confidences, prepared.signature, summary,
                  result.reasons(spec.column), price, failed)


def _repeats_confidence(draws: Sequence[Any], verdict: float, decimals: int,
                        repeats: int) -> float:
    """The share of the `repeats` draws whose value rounds to the cell's rounded verdict."""
    values = np.asarray([d.value for d in draws if d.value is not None], dtype=float)
    values = values[np.isfinite(values)]
    return float((round_half_away(values, decimals) == verdict).sum()) / repeats


def _probs_confidence(draws: Sequence[Any], verdict: float, decimals: int) -> float:
    """The probability the judge put on the scores that round to its verdict, averaged over
    the draws that report probabilities (NaN when none does)."""
    found = []
    for d in draws:
        probs = (d.extra or {}).get("probs")
        if not isinstance(probs, dict) or not probs:
            continue
        scores, weights = [], []
        for text, p in probs.items():
            try:
                scores.append(float(text))
            except ValueError:
                continue
            weights.append(float(p))
        if not scores:
            continue
        total = math.fsum(weights)
        at = round_half_away(np.asarray(scores, dtype=float), decimals) == verdict
        found.append(math.fsum(w for w, hit in zip(weights, at, strict=True) if hit) / total
                     if total > 0 else math.nan)
    return math.fsum(found) / len(found) if found else math.nan


def _table(samples: Sequence[Sample], specs: Sequence[MetricSpec],
           cells: dict[str, np.ndarray], human: str, labels: np.ndarray) -> pd.DataFrame:
    import pandas as pd

    from judgebench.engine.survey import survey

    data: dict[str, Any] = {"item": [s.item for s in samples],
                            "system": [s.system for s in samples]}
    for spec in specs:
        data[spec.column] = cells[spec.column]
        data[f"{spec.column}.confidence"] = cells[f"{spec.column}.confidence"]
    for name in survey(samples).human_names:
        data[f"human.{name}"] = pd.to_numeric(pd.Series([s.human.get(name) for s in samples],
                                                        dtype=object), errors="coerce")
    if human.startswith("store:"):
        data[human] = labels
    decided = np.full(len(samples), "", dtype=object)
    for spec in specs:
        decided[cells[f"{spec.column}.decided"]] = spec.column
    data["decided_by"] = decided
    return pd.DataFrame(data)


def _write(table: pd.DataFrame, output: str | Path, columns: dict[str, Any], *,
           db_path: str | Path, signature: str, csv_safe: bool) -> None:
    from judgebench.tables.io import write_table

    sidecar = {"columns": columns, "store": str(Path(db_path).resolve()),
               "escalate": signature}
    write_table(table, output, csv_safe=csv_safe, sidecar=sidecar)


def _record_queue(store: Path, criterion: str, queue: Sequence[tuple[str, str]],
                  signature: str, source: str) -> int | None:
    """The queue as one sample of `criterion` in `store` (None when nothing is left)."""
    from judgebench.engine.labels import record_sample

    if not queue:
        return None
    recorded = record_sample(store, criterion=criterion, strategy="escalate", seed=None,
                             items=[(item, system, 1.0) for item, system in queue],
                             parameters={"signature": signature}, source=source)
    return recorded.id
