"""The escalate service: what `judgebench escalate` computes, as a Python function.

Trust or escalate (Jung, Brahman, Choi 2025): a cascade of judges, each with a verdict column
and a confidence column, and a human column that labels a subset of the rows (a missing value
is a row nobody labelled), in a scores table (item, system) or a pairwise one (item,
system_a, system_b). A judge *agrees* with people on a row when its verdict equals the human
label after both are rounded to `decimals` places (default 0: the nearest integer), halves
away from zero (2.5 -> 3; `decimals=1` keeps a pairwise tie of 0.5 apart from 0 and 1). The
labelled rows are the calibration set; with `holdout` a seeded random share of them is kept apart to
check the guarantee on.

Per judge, in cascade order, over the rows no earlier judge kept:
- the threshold is `meta_eval.escalation.calibrate_threshold` on the calibration rows still
  undecided that this judge scored (its confidence and whether it agreed), so that on the
  rows it keeps it agrees with people on at least 1 - alpha of them with probability at
  least 1 - delta; None (the judge keeps nothing, everything goes on) when no threshold
  passes, with the sentence saying why;
- the judge keeps the undecided rows it scored whose confidence is >= the threshold;
  coverage is their share of all rows;
- with `holdout`: `agreement_at` on the held-out rows still undecided (the empirical
  agreement on the kept ones);
- AUGRC (`augrc`) over the same calibration rows the threshold was chosen on.
A judge's verdict may be missing on rows it was not run on or where it failed (it cannot keep
those); where it has a verdict it needs a confidence. The rows no judge keeps are the
labelling queue.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench._version import __version__
from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.services.escalate_cost import CascadeCost, cascade_cost
from judgebench.tables.prepared import PreparedTable

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from judgebench.plugins import PluginHost

Log = Callable[[str], None]
VERSION = "1"


@dataclass(frozen=True)
class Stage:
    """One judge of the cascade: its threshold (None: it keeps nothing, `escalates` says
    why) and what it keeps."""

    judge: str
    confidence_column: str
    threshold: float | None
    escalates: str | None
    #: rows that reached this judge (no earlier judge kept them), and how many it keeps
    reached: int
    kept: int
    items: int
    calibration_items: int
    calibration_kept: int
    calibration_agreement: float | None
    guaranteed_agreement: float | None
    augrc: float | None
    heldout_items: int | None = None
    heldout_kept: int | None = None
    heldout_agreement: float | None = None

    @property
    def coverage(self) -> float:
        """The share of all rows this judge keeps."""
        return self.kept / self.items

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "confidence_column": self.confidence_column,
                "threshold": self.threshold, "escalates": self.escalates,
                "reached": self.reached, "kept": self.kept, "coverage": self.coverage,
                "calibration_items": self.calibration_items,
                "calibration_kept": self.calibration_kept,
                "calibration_agreement": self.calibration_agreement,
                "guaranteed_agreement": self.guaranteed_agreement, "augrc": self.augrc,
                "heldout_items": self.heldout_items, "heldout_kept": self.heldout_kept,
                "heldout_agreement": self.heldout_agreement}


@dataclass
class EscalateResult(Result):
    """`judgebench escalate`'s numbers: one stage per judge of the cascade, then the queue
    of rows no judge keeps; `to_dict()` is the JSON object the command prints."""

    human: str
    alpha: float
    delta: float
    holdout: float | None
    seed: int
    items: int
    labelled: int
    calibration: int
    stages: list[Stage]
    queue: list[str]
    queue_labelled: int
    signature: str
    #: the held-out rows' names (`holdout`), in table order
    heldout: list[str] = field(default_factory=list)
    #: the cascade's cost per item against the strongest judge's (with a store or prices)
    cost: CascadeCost | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"human": self.human, "alpha": self.alpha, "delta": self.delta,
                "holdout": self.holdout, "seed": self.seed, "items": self.items,
                "labelled": self.labelled, "calibration_items": self.calibration,
                "heldout_items": len(self.heldout), "heldout": self.heldout,
                "judges": [s.to_dict() for s in self.stages],
                "decided": sum(s.kept for s in self.stages),
                "coverage": sum(s.kept for s in self.stages) / self.items,
                "queue": {"count": len(self.queue), "labelled": self.queue_labelled,
                          "items": self.queue},
                "cost": None if self.cost is None else self.cost.to_dict(),
                "signature": self.signature}


def parse_cascade(values: Sequence[str]) -> list[tuple[str, str]]:
    """`--cascade JUDGE=CONFIDENCE[,JUDGE=CONFIDENCE...]` (repeatable) as (judge, confidence)
    pairs, in order."""
    pairs = []
    for value in values:
        for part in value.split(","):
            judge, sep, confidence = part.partition("=")
            if not sep or not judge.strip() or not confidence.strip() or "=" in confidence:
                raise InputError(f"{part!r} is not JUDGE=CONFIDENCE (a verdict column and its "
                                 "confidence column)", field="--cascade")
            pairs.append((judge.strip(), confidence.strip()))
    return pairs


def round_half_away(values: np.ndarray, decimals: int = 0) -> np.ndarray:
    """Each value rounded to `decimals` places, halves away from zero (2.5 -> 3, -2.5 -> -3,
    0.125 -> 0.13 at 2): decimal rounding of the value as it is written (its shortest repr),
    so 0.285 is 0.29, not the 0.28 of its binary expansion. A value of 2**53 or more is an integer
    already; NaN stays NaN."""
    import decimal

    import numpy as np

    quantum = decimal.Decimal(1).scaleb(-decimals)

    def one(x: float) -> float:
        if not math.isfinite(x) or abs(x) >= 2.0 ** 53:
            return x
        exact = decimal.Decimal(repr(x))
        if exact.adjusted() < -decimals - 1:  # below half a unit of the last place
            return 0.0
        return float(exact.quantize(quantum, rounding=decimal.ROUND_HALF_UP))

    distinct, at = np.unique(np.asarray(values, dtype=float), return_inverse=True)
    with decimal.localcontext(prec=50):  # 16 digits before the point, 15 after
        rounded = np.asarray([one(float(x)) for x in distinct], dtype=float)
    return rounded[at.reshape(-1)] if distinct.size else np.asarray(values, dtype=float)


def escalate(scores: str | Path | pd.DataFrame, *, judge: str, confidence_column: str,
             human: str, cascade: Sequence[tuple[str, str]] = (), alpha: float = 0.1,
             delta: float = 0.1, holdout: float | None = None, seed: int = 0,
             decimals: int = 0, store: str | Path | None = None,
             costs: Mapping[str, float] | None = None, log: Log | None = None,
             host: PluginHost | None = None) -> EscalateResult:
    """Choose each judge's confidence threshold so that the verdicts it keeps agree with the
    `human` labels at least 1 - `alpha` of the time with probability at least 1 - `delta`
    (module docstring). `judge`/`confidence_column` is the first judge; `cascade` the
    (judge, confidence column) pairs after it, in order. `holdout`: the share of labelled
    rows kept apart (chosen with `seed`) to measure the agreement on. `decimals`: verdict
    and label are compared rounded to this many places, halves away from zero. `store` (the
    store the judges were scored into) and `costs` (judge -> USD per item, before the
    store's) price the cascade against the strongest judge on every item
    (`judgebench.services.escalate_cost`). Bad input raises InputError naming the file, line
    and column."""
    import numpy as np

    for value, option in ((alpha, "--alpha"), (delta, "--delta")):
        if not (isinstance(value, (int, float)) and 0 < value < 1):
            raise InputError(f"must lie strictly between 0 and 1, got {value}", field=option)
    if not 0 <= decimals <= 15:
        raise InputError(f"must lie in 0..15, got {decimals}", field="--decimals")
    if holdout is not None and not 0 < holdout < 1:
        raise InputError(f"must lie strictly between 0 and 1, got {holdout}",
                         field="--holdout")
    judges = [(judge, confidence_column), *cascade]
    verdict_columns = list(dict.fromkeys(j for j, _ in judges))
    others = [c for c in dict.fromkeys(c for _, c in judges) if c not in verdict_columns]
    frame, where, sidecar = _read(scores, human, verdict_columns, others, log=log, host=host)
    stored = _stored_prices(verdict_columns, frame, sidecar, store, costs)
    lines = frame.attrs.get("lines")
    labels = _numbers(frame, human, where)
    rounded_labels = round_half_away(labels, decimals)
    labelled = np.isfinite(labels)
    if not labelled.any():
        raise InputError(f"the human column {human!r} has no labels (every value is missing): "
                         "escalation is calibrated on labelled rows", path=where, field=human)
    calibration, heldout = _split(labelled, holdout, seed, where=where)
    undecided = np.ones(len(frame), dtype=bool)
    stages = []
    arrived = []
    for verdict_column, confidence in judges:
        arrived.append(int(undecided.sum()))
        verdicts = _numbers(frame, verdict_column, where)
        confidences = _numbers(frame, confidence, where)
        scored = np.isfinite(verdicts)
        bad = np.flatnonzero(scored & ~np.isfinite(confidences))
        if bad.size:
            k = int(bad[0])
            raise InputError(
                f"the confidence column {confidence!r} has no finite value on {bad.size} "
                f"row(s) the judge {verdict_column!r} scored, first item "
                f"{_item_names(frame, bad[:1])[0]!r}: a "
                "judge's every verdict needs a confidence", path=where, field=confidence,
                line=None if lines is None else int(lines[k]))
        agree = np.where(labelled & scored,
                         round_half_away(verdicts, decimals) == rounded_labels, False)
        stage, keeps = cascade_stage(verdict_column, confidence, confidences, agree,
                              undecided & scored, calibration, heldout, alpha, delta)
        stages.append(stage)
        undecided &= ~keeps
    queue = _item_names(frame, np.flatnonzero(undecided))
    sig = "|".join([f"escalate@{VERSION}", f"human:{human}",
                    *(f"judge:{j}~{c}" for j, c in judges), f"alpha:{alpha:g}",
                    f"delta:{delta:g}", f"agree:round-half-away-{decimals}",
                    f"holdout:{'none' if holdout is None else f'{holdout:g}'}"
                    + ("" if holdout is None else f"|seed:{seed}"),
                    f"judgebench:{__version__}"])
    cost = None if stored is None else cascade_cost(
        [j for j, _ in judges], arrived, len(frame), given=dict(costs or {}), stored=stored)
    return EscalateResult(human, alpha, delta, holdout, seed, len(frame),
                          int(labelled.sum()), int(calibration.sum()), stages, queue,
                          int((undecided & labelled).sum()), sig,
                          heldout=_item_names(frame, np.flatnonzero(heldout)), cost=cost)


def _stored_prices(judges: list[str], frame: pd.DataFrame, sidecar: dict[str, Any] | None,
                   store: str | Path | None, costs: Mapping[str, float] | None
                   ) -> dict[str, float] | None:
    """Each judge's recorded price per item in `store` ({} without one); None when the
    cascade is not priced (neither a store nor `costs`)."""
    from judgebench.services.escalate_cost import stored_prices
    from judgebench.tables.pairs import store_keys

    if store is None and not costs:
        return None
    unknown = [j for j in costs or {} if j not in judges]
    if unknown:
        raise InputError(f"{unknown[0]!r} is not a judge of the cascade "
                         f"({', '.join(judges)})", field="--cost")
    if store is None:
        return {}
    from judgebench.engine.store import Store

    try:  # a missing or corrupt store is refused, not read as one without costs
        Store(store, readonly=True).close()
    except InputError as exc:
        raise InputError(exc.detail, path=str(store), field="--store") from None
    shape = "wide" if "system" in frame.columns else "pairwise"
    return stored_prices(store, sidecar, judges, store_keys(frame, shape))


def _read(scores: str | Path | pd.DataFrame, human: str, verdict_columns: list[str],
          others: list[str], *, log: Log | None, host: PluginHost | None
          ) -> tuple[pd.DataFrame, str, dict[str, Any] | None]:
    """The table and where it came from: a scores table (item, system) through
    `PreparedTable.read`, a pairwise one (item, system_a, system_b) as `compare-judges` reads
    it; every named column checked to be there. A failed verdict (judgebench.tables.failed)
    is missing: the judge did not decide the row. The sidecar comes with them."""
    from judgebench.tables.pairs import judges_failed, read_judged

    frame, where, sidecar = read_judged(scores)
    pairwise = "system" not in frame.columns and {"system_a", "system_b"} <= set(frame.columns)
    if not pairwise:
        table = PreparedTable.read(scores, [human], verdict_columns, others=others, log=log,
                                   host=host)
        frame, where, sidecar = table.frame, table.where, table.sidecar
    for column in [human, *verdict_columns, *others]:
        if column not in frame.columns:
            raise InputError(f"no column {column!r} in the table", path=where, field=column)
    if not pairwise:
        return frame, where, sidecar
    failed = judges_failed(frame, verdict_columns, sidecar, None, "pairwise")
    frame = frame.copy()
    for column, mask in failed.masks.items():  # a failed verdict: the judge decided nothing
        frame[column] = frame[column].mask(mask)
    return frame, where, sidecar


def _split(labelled: np.ndarray, holdout: float | None, seed: int, *, where: str
           ) -> tuple[np.ndarray, np.ndarray]:
    """The calibration rows and the held-out rows: a seeded random `holdout` share of the
    labelled rows (rounded to the nearest count) held out."""
    import numpy as np

    heldout = np.zeros(labelled.size, dtype=bool)
    if holdout is None:
        return labelled.copy(), heldout
    rows = np.flatnonzero(labelled)
    count = round(holdout * rows.size)
    if count == 0 or count == rows.size:
        raise InputError(f"holding out {holdout:g} of the {rows.size} labelled row(s) leaves "
                         f"{'no held-out' if count == 0 else 'no calibration'} row",
                         path=where, field="--holdout")
    heldout[np.random.default_rng(seed).choice(rows, size=count, replace=False)] = True
    return labelled & ~heldout, heldout


def _numbers(frame: pd.DataFrame, column: str, where: str) -> np.ndarray:
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    text = frame[column].notna().to_numpy() & ~pd.notna(values)
    if text.any():
        k = int(text.argmax())
        lines = frame.attrs.get("lines")
        raise InputError(f"{frame[column].iloc[k]!r} is not a number", path=where,
                         field=column, line=None if lines is None else int(lines[k]))
    return values


def _item_names(frame: pd.DataFrame, rows: np.ndarray) -> list[str]:
    """The names of `rows`: each one's item, with its system (or pair of systems) where the
    table has several per item."""
    picked = frame.iloc[rows]
    names = [str(item) for item in picked["item"].tolist()]
    for keys in (("system",), ("system_a", "system_b")):
        if all(k in frame.columns for k in keys):
            parts = zip(*(picked[k].astype(str) for k in keys), strict=True)
            return [f"{n} ({' vs '.join(p)})" for n, p in zip(names, parts, strict=True)]
    return names


def cascade_stage(judge: str, confidence: str, confidences: np.ndarray, agree: np.ndarray,
           candidates: np.ndarray, calibration: np.ndarray, heldout: np.ndarray,
           alpha: float, delta: float) -> tuple[Stage, np.ndarray]:
    """One judge on the rows that reached it and it scored (`candidates`): its threshold from
    the calibration rows among them, the rows it keeps, and its held-out agreement."""
    import numpy as np

    from meta_eval.escalation import agreement_at, augrc, calibrate_threshold

    cal = candidates & calibration
    n_cal = int(cal.sum())
    threshold = None
    escalates: str | None
    calibration_kept, calibration_agreement, area = 0, None, None
    if n_cal == 0:
        escalates = ("no calibration row reached it with a verdict, so no threshold can be "
                     "chosen: it escalates everything")
    else:
        chosen = calibrate_threshold(confidence=confidences[cal], agree=agree[cal],
                                     alpha=alpha, delta=delta)
        area = augrc(confidence=confidences[cal], correct=agree[cal])
        threshold = chosen.threshold
        escalates = None if threshold is not None else _why_none(chosen, n_cal, alpha, delta)
        if threshold is not None:
            calibration_kept = chosen.kept
            calibration_agreement = chosen.agreement_kept
    keeps = candidates & (confidences >= threshold) if threshold is not None else (
        np.zeros(candidates.size, dtype=bool))
    held_items = held_kept = None
    held_agreement: float | None = None
    if heldout.any():
        held = candidates & heldout
        held_items = int(held.sum())
        held_kept = 0
        if held_items:
            at = agreement_at(confidence=confidences[held], agree=agree[held],
                              threshold=threshold)
            held_kept = at.kept
            held_agreement = None if math.isnan(at.agreement) else at.agreement
    return Stage(judge, confidence, threshold, escalates, int(candidates.sum()),
                 int(keeps.sum()), candidates.size, n_cal, calibration_kept,
                 calibration_agreement, None if threshold is None else 1.0 - alpha, area,
                 held_items, held_kept, held_agreement), keeps


def _why_none(chosen: Any, n_cal: int, alpha: float, delta: float) -> str:
    """The sentence for a judge without a threshold."""
    from meta_eval.escalation import smallest_testable

    needed = smallest_testable(alpha=alpha, delta=delta)
    if n_cal < needed:
        return (f"only {n_cal} calibration row(s) reached it; showing agreement >= "
                f"{1 - alpha:g} with probability {1 - delta:g} needs at least {needed} kept "
                "rows even if it never disagrees: it escalates everything")
    first = chosen.tested[0] if chosen.tested else None
    detail = "" if first is None else (
        f" (its most confident testable threshold {first[0]:g} keeps {first[1]} row(s) with "
        f"{first[2]} disagreement(s), p = {first[3]:.3g} > delta)")
    return (f"no confidence threshold shows agreement >= {1 - alpha:g} with probability "
            f"{1 - delta:g} on its {n_cal} calibration row(s){detail}: it escalates "
            "everything")
