"""`judgebench labels stats`: per criterion, how many labels each item has, how well the
annotators agree, and, with a scores table, how well each judge column follows them.

Per criterion, over each annotator's current labels (`judgebench.engine.labels`):

- coverage: keys (item, system or pair) with 1, 2 and 3+ answered labels; labels by status
  and by annotator;
- agreement: Krippendorff's alpha of the annotators as coders of every key (nominal for
  binary, choices and pairwise; interval, or ordinal with `scale_level`, for a scale;
  `meta_eval.agreement.krippendorff_alpha`), Cohen's kappa of each annotator pair on the
  keys both answered (unweighted for nominal criteria, quadratic weights over the scale's
  steps for a scale: `kappa` and `qwk` of `meta_eval.levels.evaluate`, with a percentile
  bootstrap CI over keys, and the asymptotic se, Wald interval and test of Fleiss, Cohen and
  Everitt 1969: `meta_eval.kappa_inference`; `weights` replaces the default weights: none,
  linear, quadratic, or a (q, q) disagreement matrix over the criterion's q declared codes,
  whose kappa has only the asymptotic interval), Fleiss' kappa with 3+ annotators
  (nominal, over the keys every annotator answered: `meta_eval.agreement.fleiss_kappa`,
  its se0 and test), Randolph's free-marginal kappa with 2+ annotators over the same keys
  and the criterion's q declared codes (se, Wald interval, se0, test:
  `meta_eval.kappa_inference.randolph_kappa`), and the human ceiling
  (`meta_eval.ceiling.human_ceiling`: each annotator's Pearson correlation with the mean of
  the others for a scale; Krippendorff's nominal alpha with the annotators as coders,
  leaving each out in turn, otherwise). A scale without steps has no kappa.
- judges (with `scores`): each judge column against people's reference on the keys both
  have: the mean of the annotators' answers for a scale (Pearson, Spearman and Kendall's
  tau-b, bootstrap CIs), the majority answer otherwise (keys where people split evenly are
  left out and counted): accuracy (Wilson interval), Cohen's kappa (bootstrap CI), the
  confusion matrix, and for binary criteria the judge's TPR and TNR against people (Wilson
  intervals). A binary judge's scores must be 0/1 unless `threshold` (score >= T is 1);
  a pairwise judge's verdicts are a/b/tie or P(A better) (above 0.5 is a, below b).

Codes of nominal answers: a binary 0/1, a choice's position, a pair's 0 (b), 1 (tie), 2 (a);
a scale's steps (value - low) / step. Every number carries a signature saying how it was
made.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.engine.labels import Criterion, Label, criteria, current_labels
from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import FloatArray
    from meta_eval.results import Result as Statistic

SCALE_LEVELS = ("interval", "ordinal")


@dataclass
class Estimate:
    """One statistic with its interval (None where undefined) over `n` units."""

    statistic: str
    value: float | None
    n: int
    low: float | None = None
    high: float | None = None
    note: str | None = None
    analytic: dict[str, Any] | None = None  # se, se0, z, p_value and their signature

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"statistic": self.statistic, "value": self.value, "n": self.n,
                               "low": self.low, "high": self.high}
        if self.note:
            out["note"] = self.note
        if self.analytic is not None:
            out["analytic"] = self.analytic
        return out


@dataclass
class JudgeStats:
    """A judge column against people's reference on one criterion."""

    judge: str
    reference: str
    n: int
    statistics: list[Estimate]
    split: int = 0
    confusion: dict[str, Any] | None = None
    signature: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "reference": self.reference, "n": self.n,
                "split": self.split, "statistics": [s.to_dict() for s in self.statistics],
                "confusion": self.confusion, "signature": self.signature}


@dataclass
class CriterionStats:
    criterion: Criterion
    level: str
    annotators: dict[str, int]
    statuses: dict[str, int]
    coverage: dict[str, int]
    alpha: Estimate
    kappas: list[dict[str, Any]]
    fleiss: Estimate | None
    ceiling: dict[str, Any] | None
    judges: list[JudgeStats] = field(default_factory=list)
    signature: str = ""
    randolph: Estimate | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion.name, "kind": self.criterion.kind,
                "scale": self.criterion.describe(), "level": self.level,
                "annotators": self.annotators, "statuses": self.statuses,
                "coverage": self.coverage, "alpha": self.alpha.to_dict(),
                "kappas": self.kappas,
                "fleiss": None if self.fleiss is None else self.fleiss.to_dict(),
                "randolph": None if self.randolph is None else self.randolph.to_dict(),
                "ceiling": self.ceiling, "judges": [j.to_dict() for j in self.judges],
                "signature": self.signature}


@dataclass
class StatsResult(Result):
    store: str
    scores: str | None
    criteria: list[CriterionStats]

    def to_dict(self) -> dict[str, Any]:
        return {"store": self.store, "scores": self.scores,
                "criteria": [c.to_dict() for c in self.criteria]}


def label_stats(store: str | Path, *, names: Sequence[str] = (),
                scores: str | Path | pd.DataFrame | None = None,
                judges: Sequence[str] = (), threshold: float | None = None,
                scale_level: str = "interval", bootstrap: int = 1000,
                confidence: float = 0.95, seed: int = 0,
                weights: str | Path | None = None) -> StatsResult:
    """The statistics of the module for the criteria `names` (default: every one) of
    `store`, and the `judges` columns (default: every judge column) of `scores`.
    `weights` (Cohen's kappa of each annotator pair): None (quadratic for a scale, none
    otherwise), "none", "linear", "quadratic", or the path of a CSV disagreement matrix."""
    if scale_level not in SCALE_LEVELS:
        raise InputError(f"{scale_level!r} is not a level of a scale: "
                         f"{', '.join(SCALE_LEVELS)}", field="--scale-level")
    if not 0 < confidence < 1:
        raise InputError("must be in (0, 1)", field="--confidence")
    if bootstrap < 0:
        raise InputError("must be 0 or more", field="--bootstrap")
    known = {c.name: c for c in criteria(store)}
    if not known:
        raise InputError("no labels in this store yet (no criterion defined): import some "
                         "with `judgebench labels import`", path=str(store))
    for name in names:
        if name not in known:
            raise InputError(f"no criterion {name!r} in this store (it has: "
                             f"{', '.join(sorted(known))})", path=str(store),
                             field="--criterion")
    chosen = [known[n] for n in sorted(set(names) or known)]
    weighting = _weights(weights, chosen)
    table = None if scores is None else _judged(scores)
    out = []
    for crit in chosen:
        labels = current_labels(store, criterion=crit.name)
        stats = _agreement(crit, labels, scale_level, bootstrap, confidence, seed,
                           weighting)
        if table is not None:
            stats.judges = _judges(crit, labels, table, judges, threshold, bootstrap,
                                   confidence, seed)
        out.append(stats)
    where = None if scores is None else (str(scores) if isinstance(scores, str | Path)
                                         else "<DataFrame>")
    return StatsResult(str(store), where, out)


# -- weights ------------------------------------------------------------------------------
WEIGHTS = ("none", "linear", "quadratic")


def declared_codes(crit: Criterion) -> int | None:
    """How many nominal codes the criterion declares (`code`): 2 for binary, one per choice,
    3 for a pair (b, tie, a), a scale's steps low..high; None for a scale without steps."""
    if crit.kind == "binary":
        return 2
    if crit.kind == "choices":
        return len(crit.choices)
    if crit.kind == "pairwise":
        return 3
    if crit.step is None:
        return None
    return round((float(crit.high or 0.0) - float(crit.low or 0.0)) / crit.step) + 1


def _weights(weights: str | Path | None, chosen: Sequence[Criterion]
             ) -> str | FloatArray | None:
    """`--weights`: None (each criterion's default), a name of WEIGHTS, or a CSV file of a
    (q, q) disagreement matrix (no header; row i, column j: the cost of codes i and j),
    checked against every chosen criterion's q; InputError naming the file, row and field."""
    if weights is None or str(weights) in WEIGHTS:
        return None if weights is None else str(weights)
    import csv

    import numpy as np

    from meta_eval.agreement import kappa_weights

    path = Path(weights)
    if not path.is_file():
        raise InputError(f"use {', '.join(WEIGHTS)} or a CSV file of a disagreement matrix; "
                         "no such file", path=str(path), field="--weights")
    rows: list[list[float]] = []
    with path.open(newline="", encoding="utf-8") as handle:
        for number, row in enumerate(csv.reader(handle), start=1):
            if not any(cell.strip() for cell in row):
                continue
            values = []
            for column, cell in enumerate(row, start=1):
                try:
                    value = float(cell)
                except ValueError:
                    value = math.nan
                if not math.isfinite(value):
                    raise InputError(f"{cell!r} is not a finite number", path=str(path),
                                     line=number, field=f"column {column}") from None
                values.append(value)
            rows.append(values)
    if not rows or any(len(r) != len(rows) for r in rows):
        raise InputError(f"a disagreement matrix is square: {len(rows)} row(s) of "
                         f"{sorted({len(r) for r in rows})} value(s)", path=str(path),
                         field="--weights")
    matrix = np.array(rows)
    try:
        kappa_weights(matrix, len(rows))
    except ValueError as exc:
        raise InputError(str(exc), path=str(path), field="--weights") from None
    for crit in chosen:
        q = declared_codes(crit)
        if q is not None and q != len(rows):
            raise InputError(f"criterion {crit.name} ({crit.describe()}) has {q} codes; "
                             f"the matrix is {len(rows)} x {len(rows)}", path=str(path),
                             field="--weights")
    return matrix


# -- codes --------------------------------------------------------------------------------
def code(crit: Criterion, value: float) -> float:
    """A stored value's nominal code (module docstring); NaN for a scale without steps."""
    if crit.kind == "pairwise":
        return value * 2.0
    if crit.kind == "scale":
        if crit.step is None:
            return math.nan
        return float(round((value - float(crit.low or 0.0)) / crit.step))
    return value


def _matrix(crit: Criterion, labels: Sequence[Label], *, coded: bool
            ) -> tuple[list[str], list[Any], FloatArray]:
    """(annotators, keys, (annotators x keys) answered values or codes, NaN missing)."""
    import numpy as np

    answered = [lab for lab in labels if lab.value is not None]
    annotators = sorted({lab.annotator for lab in answered})
    keys = sorted({lab.key for lab in answered}, key=repr)
    rows, columns = {a: i for i, a in enumerate(annotators)}, {k: j for j, k in
                                                                enumerate(keys)}
    matrix = np.full((len(annotators), len(keys)), np.nan)
    for lab in answered:
        value = float(lab.value)  # type: ignore[arg-type]
        matrix[rows[lab.annotator], columns[lab.key]] = code(crit, value) if coded else value
    return annotators, keys, matrix


# -- agreement ----------------------------------------------------------------------------
def _agreement(crit: Criterion, labels: Sequence[Label], scale_level: str, bootstrap: int,
               confidence: float, seed: int, weighting: str | FloatArray | None = None
               ) -> CriterionStats:
    import numpy as np

    from meta_eval.agreement import krippendorff_alpha

    level = scale_level if crit.kind == "scale" else "nominal"
    statuses = {s: sum(1 for lab in labels if lab.status == s)
                for s in ("answered", "cant_tell", "skipped")}
    annotators, _, values = _matrix(crit, labels, coded=False)
    counts = np.isfinite(values).sum(axis=0) if values.size else np.zeros(0)
    coverage = {"1": int((counts == 1).sum()), "2": int((counts == 2).sum()),
                "3+": int((counts >= 3).sum())}
    per_annotator = {a: int(np.isfinite(values[i]).sum()) for i, a in enumerate(annotators)}
    coded = crit.kind != "scale" or crit.step is not None
    codes = _matrix(crit, labels, coded=True)[2] if coded else values
    alpha_input = codes if level == "nominal" else _scaled(values)
    alpha = krippendorff_alpha(ratings=alpha_input.reshape(len(annotators), -1), level=level) \
        if annotators else None
    alpha_estimate = Estimate(f"krippendorff-{level}",
                              _finite(alpha.value) if alpha else None,
                              int(alpha.n) if alpha else 0)
    weights = _pair_weights(crit, weighting)
    named = weights if weights is None or isinstance(weights, str) else "custom"
    kappas = _pair_kappas(crit, annotators, codes if coded else None, weights, named,
                          bootstrap, confidence, seed)
    fleiss, randolph = _many_rater_kappas(crit, annotators, codes if coded else None,
                                          confidence)
    q = declared_codes(crit)
    ceiling = _ceiling(crit, values if crit.kind == "scale" else codes) \
        if len(annotators) >= 2 else None
    signature = (f"labels.stats@1|criterion:{crit.name}|alpha:{level}|kappa:"
                 f"{named or 'unweighted'}|fleiss:complete-keys|randolph:q={q}|ceiling:"
                 f"{'pearson-loo' if crit.kind == 'scale' else 'alpha-nominal-coders'}"
                 f"|ci:percentile-bootstrap-keys|resamples:{bootstrap}|confidence:"
                 f"{confidence:g}|seed:{seed}|labels:{len(labels)}"
                 f"@{max((lab.id for lab in labels), default=0)}")
    return CriterionStats(crit, level, per_annotator, statuses, coverage, alpha_estimate,
                          kappas, fleiss, ceiling, signature=signature, randolph=randolph)


def _pair_weights(crit: Criterion, weighting: str | FloatArray | None
                  ) -> str | FloatArray | None:
    """The kappa weights asked for: quadratic for a scale by default, none otherwise."""
    if weighting is None:
        return "quadratic" if crit.kind == "scale" else None
    if isinstance(weighting, str) and weighting == "none":
        return None
    return weighting


def _pair_kappas(crit: Criterion, annotators: Sequence[str], codes: FloatArray | None,
                 weights: str | FloatArray | None, named: str | None, bootstrap: int,
                 confidence: float, seed: int) -> list[dict[str, Any]]:
    """Cohen's kappa of each annotator pair (`codes` None: a scale without steps)."""
    kappas = []
    for (i, a), (j, b) in itertools.combinations(enumerate(annotators), 2):
        kappas.append({"a": a, "b": b, "weights": named,
                       **(_kappa(codes[i], codes[j], weights, bootstrap, confidence, seed,
                                 declared_codes(crit)).to_dict() if codes is not None else
                          {"statistic": "kappa", "value": None, "n": 0,
                           "note": "a scale without steps has no categories"})})
    return kappas


def _many_rater_kappas(crit: Criterion, annotators: Sequence[str], codes: FloatArray | None,
                       confidence: float) -> tuple[Estimate | None, Estimate | None]:
    """Fleiss' kappa (3 or more annotators) and Randolph's free-marginal kappa (2 or more,
    over the declared codes), None where they do not apply."""
    from meta_eval.kappa_inference import fleiss_kappa_inference, randolph_kappa

    if codes is None:
        return None, None
    fleiss = None
    if len(annotators) >= 3:
        result = fleiss_kappa_inference(ratings=codes)
        fleiss = Estimate("fleiss-kappa", _finite(result.value), int(result.n),
                          note="nominal, over the keys every annotator answered",
                          analytic=_analytic(result))
    randolph = None
    q = declared_codes(crit)
    if len(annotators) >= 2 and q is not None and q >= 2:
        result = randolph_kappa(ratings=codes, categories=list(map(float, range(q))),
                                confidence=confidence)
        randolph = Estimate("randolph-kappa", _finite(result.value), int(result.n),
                            note=f"free marginals over {q} declared codes, the keys every "
                                 "annotator answered", analytic=_analytic(result))
    return fleiss, randolph


def _scaled(values: FloatArray) -> FloatArray:
    """`values` times the power of two that brings the largest |value| into [0.5, 1): exact,
    and interval alpha (a ratio of squared differences) is unchanged, but no square of a
    difference under- or overflows."""
    import numpy as np

    present = values[np.isfinite(values)]
    if not present.size or not np.abs(present).max():
        return values
    return np.ldexp(values, -int(np.frexp(np.abs(present).max())[1]))


def _kappa(a: FloatArray, b: FloatArray, weights: str | FloatArray | None, bootstrap: int,
           confidence: float, seed: int, q: int | None = None) -> Estimate:
    """A pair's kappa: named weights over the codes lo..hi either used, with the bootstrap
    interval (`evaluate`) and the asymptotic one; a matrix over the q declared codes, with
    the asymptotic interval only."""
    import numpy as np

    from meta_eval.kappa_inference import cohen_kappa_inference
    from meta_eval.levels import evaluate

    both = np.isfinite(a) & np.isfinite(b)
    if weights is not None and not isinstance(weights, str):
        result = cohen_kappa_inference(human=a[both].tolist(), metric=b[both].tolist(),
                                       weights=weights,
                                       labels=[float(v) for v in range(q or 0)],
                                       confidence=confidence)
        return Estimate("kappa-custom", _finite(result.value), int(result.n),
                        note="custom weights: the asymptotic interval only",
                        analytic=_analytic(result))
    statistic = {"quadratic": "qwk", "linear": "kappa-linear"}.get(weights or "", "kappa")
    result = evaluate(statistic, human=a[:, None], metric=b[:, None], bootstrap=bootstrap,
                      ci=confidence, seed=seed, with_p_value=False)
    analytic = None
    if both.any():  # codes are steps: the categories lo..hi weigh by step differences
        lo, hi = int(min(a[both].min(), b[both].min())), int(max(a[both].max(),
                                                                 b[both].max()))
        analytic = _analytic(cohen_kappa_inference(
            human=a[both].tolist(), metric=b[both].tolist(), weights=weights,
            labels=[float(v) for v in range(lo, hi + 1)], confidence=confidence))
    return Estimate(statistic, _finite(result.value), int(result.n), result.ci_low,
                    result.ci_high, analytic=analytic)


def _analytic(result: Statistic) -> dict[str, Any] | None:
    """The asymptotic standard errors, test and interval of a kappa (`meta_eval.
    kappa_inference`), None where the kappa is undefined."""
    if not math.isfinite(result.value):
        return None
    out: dict[str, Any] = {key: _finite(result.extra[key]) for key in ("se", "se0", "z")
           if key in result.extra}
    out["p_value"] = result.p_value
    if result.ci_low is not None:
        out["low"], out["high"] = result.ci_low, result.ci_high
    out["signature"] = result.extra["signature"]
    return out


def _ceiling(crit: Criterion, matrix: FloatArray) -> dict[str, Any] | None:
    from meta_eval.ceiling import human_ceiling

    statistic = "pearson" if crit.kind == "scale" else "krippendorff-nominal"
    try:
        found = human_ceiling(statistic, raters=[row[:, None] for row in matrix])
    except ValueError:
        return None
    return {"statistic": statistic, "value": _finite(found.value),
            "per_annotator": [_finite(v) for v in found.per_rater],
            "how": "each annotator against the mean of the others" if statistic == "pearson"
            else "alpha with the annotators as coders; per annotator: without them"}


# -- judges -------------------------------------------------------------------------------
@dataclass
class _Judged:
    frame: Any
    where: str
    pairwise: bool
    columns: list[str]


def _judged(scores: str | Path | pd.DataFrame) -> _Judged:
    from judgebench.tables.pairs import read_judged, verdict_columns

    frame, where, _ = read_judged(scores)
    pairwise = "system" not in frame.columns and {"system_a", "system_b"} <= set(frame.columns)
    if not pairwise and not {"item", "system"} <= set(frame.columns):
        raise InputError("a scores table needs item and system columns (or item, system_a "
                         "and system_b)", path=where, field="item")
    columns, _ = verdict_columns(frame, ["input", "output", "reference", "turn"])
    columns = [c for c in columns if not c.startswith("store:")]
    return _Judged(frame, where, pairwise, columns)


def _judges(crit: Criterion, labels: Sequence[Label], table: _Judged,
            chosen: Sequence[str], threshold: float | None, bootstrap: int,
            confidence: float, seed: int) -> list[JudgeStats]:
    import numpy as np

    if table.pairwise != crit.pairwise:
        return []
    missing = [c for c in chosen if c not in table.frame.columns]
    if missing:
        raise InputError(f"no column {missing[0]!r}; columns are "
                         f"{[str(c) for c in table.frame.columns]}", path=table.where,
                         field="--judge")
    names = list(chosen) or [c for c in table.columns if _usable(table.frame[c], crit)]
    reference, split = _reference(crit, labels)
    out = []
    for name in names:
        judge = _judge_values(crit, table, name, threshold)
        h = np.array([reference.get(k, np.nan) for k in judge], dtype=float)
        m = np.array(list(judge.values()), dtype=float)
        ok = np.isfinite(h) & np.isfinite(m)
        out.append(_compare(crit, name, h[ok], m[ok], split, threshold, bootstrap,
                            confidence, seed))
    return out


def _usable(column: pd.Series, crit: Criterion) -> bool:
    """Whether a column may be a judge of `crit` when none is named: numbers (a scale, a
    binary criterion), choices' names, or pairwise verdicts."""
    import pandas as pd

    present = column.dropna()
    if present.empty:
        return False
    if crit.kind == "choices":
        return bool(present.astype(str).isin(crit.choices).all())
    if crit.kind == "pairwise":
        words = pd.Series([str(v).strip().lower() for v in present],
                          index=present.index).isin(("a", "b", "tie"))
        return bool((words | pd.to_numeric(present, errors="coerce").notna()).all())
    return bool(pd.to_numeric(present, errors="coerce").notna().all())


def _reference(crit: Criterion, labels: Sequence[Label]) -> tuple[dict[Any, float], int]:
    """People's value per key (mean for a scale, else the majority code) and how many keys
    people split on evenly (left out)."""
    answers: dict[Any, list[float]] = {}
    for lab in labels:
        if lab.value is not None:
            answers.setdefault(lab.key, []).append(lab.value)
    out: dict[Any, float] = {}
    split = 0
    for key, values in answers.items():
        if crit.kind == "scale":
            out[key] = math.fsum(values) / len(values)
            continue
        counts: dict[float, int] = {}
        for v in values:
            c = code(crit, v)
            counts[c] = counts.get(c, 0) + 1
        top = max(counts.values())
        winners = [c for c, n in counts.items() if n == top]
        if len(winners) == 1:
            out[key] = winners[0]
        else:
            split += 1
    return out, split


def _judge_values(crit: Criterion, table: _Judged, name: str, threshold: float | None
                  ) -> dict[Any, float]:
    """Key -> the judge's value (a scale) or code, checked cell by cell."""
    from judgebench.tables.columns import _where

    frame = table.frame
    column = frame[name]
    out: dict[Any, float] = {}
    items = frame["item"].astype(str).tolist()
    for position, raw in enumerate(column.tolist()):
        if raw is None or (isinstance(raw, float) and math.isnan(raw)) or raw == "":
            continue
        try:
            value = _judge_code(crit, raw, threshold)
        except InputError as exc:
            raise InputError(exc.detail, path=table.where, field=name,
                             **_where(frame, table.where, position)) from None
        if table.pairwise:
            a, b = str(frame["system_a"].iloc[position]), str(frame["system_b"].iloc[position])
            out[(items[position], (a, b))] = value
            out.setdefault((items[position], (b, a)), 2.0 - value)
        else:
            out[(items[position], str(frame["system"].iloc[position]))] = value
    return out


def _judge_code(crit: Criterion, raw: Any, threshold: float | None) -> float:
    if crit.kind == "choices":
        text = str(raw).strip()
        if text not in crit.choices:
            raise InputError(f"{raw!r} is not one of the choices {', '.join(crit.choices)}")
        return float(crit.choices.index(text))
    if crit.kind == "pairwise" and isinstance(raw, str) and raw.strip().lower() in (
            "a", "b", "tie"):
        return {"b": 0.0, "tie": 1.0, "a": 2.0}[raw.strip().lower()]
    try:
        number = float(raw)
    except (TypeError, ValueError):
        raise InputError(f"{raw!r} is not a number") from None
    if not math.isfinite(number):
        raise InputError(f"{raw!r} is not a finite number")
    if crit.kind == "pairwise":
        return 2.0 if number > 0.5 else 0.0 if number < 0.5 else 1.0
    if crit.kind == "binary":
        if threshold is not None:
            return 1.0 if number >= threshold else 0.0
        if number not in (0.0, 1.0):
            raise InputError(f"{raw!r} is not 0 or 1: give --threshold T (a score >= T "
                             "is 1)")
    return number


def _compare(crit: Criterion, name: str, h: FloatArray, m: FloatArray, split: int,
             threshold: float | None, bootstrap: int, confidence: float, seed: int
             ) -> JudgeStats:
    from meta_eval.agreement import confusion_table
    from meta_eval.levels import evaluate
    from meta_eval.proportions import wilson_interval

    n = int(h.size)
    stats: list[Estimate] = []
    confusion = None
    if crit.kind == "scale":
        reference = "mean of the annotators' answers"
        for statistic in ("pearson", "spearman", "kendall"):
            result = evaluate(statistic, human=h[:, None], metric=m[:, None],
                              bootstrap=bootstrap, ci=confidence, seed=seed,
                              with_p_value=False) if n >= 2 else None
            stats.append(Estimate(statistic, _finite(result.value) if result else None, n,
                                  result.ci_low if result else None,
                                  result.ci_high if result else None))
    else:
        reference = "the annotators' majority answer"
        hits = int((h == m).sum())
        stats.append(Estimate("accuracy", hits / n if n else None, n,
                              *(wilson_interval(successes=hits, n=n, confidence=confidence)
                                or (None, None))))
        stats.append(_kappa(h, m, None, bootstrap, confidence, seed) if n else
                     Estimate("kappa", None, 0))
        if crit.kind == "binary":
            for statistic, side in (("tpr", 1.0), ("tnr", 0.0)):
                on = h == side
                k, total = int((m[on] == side).sum()), int(on.sum())
                stats.append(Estimate(statistic, k / total if total else None, total,
                                      *(wilson_interval(successes=k, n=total,
                                                        confidence=confidence)
                                        or (None, None))))
        if n:
            confusion = confusion_table(human=h, metric=m).to_dict()
    intervals = "percentile-bootstrap-keys" if crit.kind == "scale" else \
        "wilson,kappa:percentile-bootstrap-keys"
    cut = "" if threshold is None else f"|threshold:{threshold:g}"
    signature = (f"labels.judge@1|criterion:{crit.name}|judge:{name}|reference:"
                 f"{'mean' if crit.kind == 'scale' else 'majority'}{cut}|ci:{intervals}"
                 f"|resamples:{bootstrap}|confidence:{confidence:g}|seed:{seed}")
    return JudgeStats(name, reference, n, stats, split, confusion, signature)


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
