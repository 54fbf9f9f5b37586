"""`meta-eval reliability`: judgements against themselves, from whichever source holds them:
K draws of a judge (`score --repeats`' store, or a plain long table with a draw index) or
K raters (columns of a table, or a long table with a rater column).

Per score column: the intraclass correlations of the design (`meta_eval.icc`, each with its
F-test and confidence interval), and for draws the test-retest statistics of
`meta_eval.repeats` (ICC(1) of unbalanced draws, Krippendorff's alpha, spread, the share of
units whose verdict flips: flakiness) with pass@k and pass^k when every draw is 0 or 1.

The design: one-way random for draws (the draws of one judge are exchangeable), two-way
random for raters (the same raters judged every unit, taken as a sample of raters: absolute
agreement); `design` overrides it (two-way-mixed: these raters only, consistency), and
`unit` keeps the single-judgement or the mean-of-K form only. The ICC forms need every
judgement of a unit: a unit missing one is left out (listwise deletion) and counted. The
draw statistics count every unit with at least 2 draws (`meta_eval.repeats`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.services.repeats import pass_and_noise_dict
from meta_eval.numerics import finite_or_none

if TYPE_CHECKING:
    from judgebench.tables.draws import DrawTable
    from meta_eval.icc import Icc
    from meta_eval.repeats import NoiseCeiling, Reliability

Log = Callable[[str], None]
DESIGNS = ("one-way", "two-way-random", "two-way-mixed")
UNITS = ("single", "mean")
WHY = {"draws": "one-way random: the draws of one judge are exchangeable",
       "raters": "two-way random: the same raters judged every unit, taken as a sample of "
                 "raters (absolute agreement)"}
NAMED = {"one-way": "one-way random (chosen with --icc-design)",
         "two-way-random": "two-way random, absolute agreement (chosen with --icc-design)",
         "two-way-mixed": "two-way mixed, consistency: these raters only (chosen with "
                          "--icc-design)"}


@dataclass(frozen=True)
class ReliabilityRow:
    """One score column's judgements against themselves."""

    column: str
    kind: str  # draws or raters
    design: str
    why: str
    forms: dict[str, Icc]
    units: int  # units with a judgement
    complete: int  # units with every judgement: the ICC forms' targets
    judgements: int  # K: draws or raters
    #: the draw statistics (draws only)
    draws: Reliability | None = None
    pass_at: dict[int, float] = field(default_factory=dict)
    pass_hat: dict[int, float] = field(default_factory=dict)
    #: per human column, the noise ceiling of the draws against people (draws only)
    noise: dict[str, NoiseCeiling] = field(default_factory=dict)

    @property
    def dropped(self) -> int:
        return self.units - self.complete

    @property
    def signature(self) -> str:
        forms = ",".join(self.forms)
        return (f"reliability:{self.kind}|design:{self.design}|forms:{forms}|n:{self.complete}"
                f"|dropped:{self.dropped}|k:{self.judgements}|missing:listwise")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.column, "statistic": "reliability", "kind": self.kind,
            "icc_design": self.design, "icc_design_reason": self.why, "n": self.units,
            "complete": self.complete, "dropped": self.dropped, "k": self.judgements,
            "icc": {form: _clean(icc.to_dict(), defined=self.complete >= 2)
                    for form, icc in self.forms.items()},
            "signature": self.signature}
        if self.draws is not None:
            d = self.draws
            out["draws"] = {"units": d.units, "draws": finite_or_none(d.draws),
                            "icc": finite_or_none(d.icc), "icc_mean": finite_or_none(d.icc_mean),
                            "alpha": finite_or_none(d.alpha), "spread": finite_or_none(d.spread),
                            "flip_share": finite_or_none(d.flip_share)}
        return {**out, **pass_and_noise_dict(self.pass_at, self.pass_hat, self.noise)}


@dataclass
class ReliabilityResult(Result):
    source: str
    rows: list[ReliabilityRow]

    def to_dict(self) -> list[dict[str, Any]]:
        return [{**row.to_dict(), "source": self.source} for row in self.rows]


def reliability_row(column: str, values: np.ndarray, *, kind: str, design: str | None = None,
                    unit: str | None = None, confidence: float = 0.95,
                    humans: dict[str, np.ndarray] | None = None) -> ReliabilityRow:
    """`values` (units, K) of one score column (module docstring); for draws, `humans`
    (people's score per unit) gives each its noise ceiling (`meta_eval.repeats`)."""
    from meta_eval.icc import DESIGNS as FORMS_OF
    from meta_eval.icc import icc_forms
    from meta_eval.repeats import noise_ceiling, pass_at_k, pass_hat_k, reliability

    x = np.asarray(values, dtype=float)
    seen = np.isfinite(x).any(axis=1)
    complete = np.isfinite(x).all(axis=1)
    chosen = design or ("one-way" if kind == "draws" else "two-way-random")
    why = WHY[kind] if design is None else NAMED[design]
    every = icc_forms(ratings=x[complete], confidence=confidence)
    single, mean = FORMS_OF[chosen]
    names = (single, mean) if unit is None else ((single,) if unit == "single" else (mean,))
    draws = pass_at = pass_hat = None
    if kind == "draws":
        draws = reliability(x)
        scored = x[np.isfinite(x)]
        if scored.size and bool(np.isin(scored, (0.0, 1.0)).all()):
            k = x.shape[1]
            pass_at = {j: pass_at_k(x, j) for j in range(1, k + 1)}
            pass_hat = {j: pass_hat_k(x, j) for j in range(1, k + 1)}
    noise = {}
    for human, people in (humans or {}).items():
        keep = np.isfinite(people)  # as the store's repeats section: units people scored
        if kind == "draws" and keep.sum() >= 2:
            noise[human] = noise_ceiling(x[keep], people[keep])
    return ReliabilityRow(column, kind, chosen, why, {n: every[n] for n in names},
                          int(seen.sum()), int(complete.sum()), int(x.shape[1]), draws,
                          pass_at or {}, pass_hat or {}, noise)


def reliability(table: str | Path, *, draw: str | None = None, rater_column: str | None = None,
                raters: Sequence[str] = (), items: Sequence[str] = (),
                scores: Sequence[str] = (), metrics: Sequence[str] = (),
                humans: Sequence[str] = (), design: str | None = None,
                unit: str | None = None, confidence: float = 0.95,
                log: Log | None = None) -> ReliabilityResult:
    """`meta-eval reliability TABLE`: the judgements of `table` against themselves, read as
    a long table of draws (`draw`: the draw index column), a long table of raters
    (`rater_column`), raters as columns (`raters`), or else a scores table of `score
    --repeats K` whose draws are in its store (`metrics`: which repeated columns). `items`:
    the unit's key columns (default item and system); `scores`: the judgement columns of a
    long table (default every numeric one); `humans`: with `draw`, columns of people's score
    of each unit, against which the draws' noise ceiling is given. `design` and `unit`
    choose the ICC forms
    (module docstring); `confidence`, their intervals' level."""
    from judgebench.tables.draws import DrawTable

    given = [name for name, on in (("--draw", draw), ("--rater-column", rater_column),
                                   ("--rater", raters)) if on]
    if len(given) > 1:
        raise InputError(f"{' and '.join(given)} are two layouts: give one")
    if design is not None and design not in DESIGNS:
        raise InputError(f"the ICC design is one of {', '.join(DESIGNS)}, got {design!r}",
                         field="--icc-design")
    if unit is not None and unit not in UNITS:
        raise InputError(f"the ICC unit is one of {', '.join(UNITS)}, got {unit!r}",
                         field="--icc-unit")
    if not 0.0 < confidence < 1.0:
        raise InputError(f"the confidence level lies in (0, 1), got {confidence!r}",
                         field="--ci")
    if given and metrics:
        raise InputError("--metric names a repeated column of a scores table; with "
                         f"{given[0]} name the judgements with --score", field="--metric")
    if scores and not (draw or rater_column):
        raise InputError("--score goes with --draw or --rater-column", field="--score")
    if humans and given and not draw:
        raise InputError("--human goes with --draw or a scores table of --repeats (people's "
                         "score of each unit, against the draws)", field="--human")
    if items and not given:
        raise InputError("--item goes with --draw, --rater-column or --rater", field="--item")
    options: dict[str, Any] = {"design": design, "unit": unit, "confidence": confidence,
                               "log": log}
    if draw or rater_column:
        kind = "draws" if draw else "raters"
        return from_table(DrawTable.read_long(table, index=str(draw or rater_column),
                                              kind=kind, items=items, scores=scores,
                                              humans=humans, log=log), **options)
    if raters:
        return from_table(DrawTable.read_wide(table, raters=raters, items=items), **options)
    return from_store(table, metrics=metrics, humans=humans, **options)


def from_table(table: DrawTable, *, design: str | None = None, unit: str | None = None,
               confidence: float = 0.95, log: Log | None = None) -> ReliabilityResult:
    """Every score column of a plain table (`judgebench.tables.draws`)."""
    rows = []
    for judged in table.columns:
        if len(judged.labels) < 2:
            raise InputError(f"column '{judged.column}' has one {_one(table.kind)} per unit: "
                             f"reliability needs at least two", path=str(table.path),
                             field=judged.column)
        row = reliability_row(judged.column, judged.values, kind=table.kind, design=design,
                              unit=unit, confidence=confidence, humans=table.humans)
        _say_dropped(row, log)
        rows.append(row)
    return ReliabilityResult(str(table.path), rows)


def from_store(scores: str | Path, *, metrics: Sequence[str] = (), humans: Sequence[str] = (),
               design: str | None = None, unit: str | None = None, confidence: float = 0.95,
               log: Log | None = None) -> ReliabilityResult:
    """The draws of a scores table's repeated columns (`score --repeats K`), read from the
    store its sidecar names (`judgebench.services.repeats`), against its `humans` columns."""
    import pandas as pd

    from judgebench.services.repeats import draw_matrix, repeated_columns, store_of
    from judgebench.tables.prepared import PreparedTable

    table = PreparedTable.read(scores, humans=list(humans), metrics=metrics)
    people = {h: pd.to_numeric(table.frame[h], errors="coerce").to_numpy(dtype=float)
              for h in humans}
    repeated = repeated_columns(table.sidecar, table.in_table)
    if not repeated:
        raise InputError("no column of this table was drawn more than once (score "
                         "--repeats K): for a plain table of draws or raters, name its draw "
                         "column (--draw), rater column (--rater-column) or rater columns "
                         "(--rater)", path=table.where)
    store = store_of(table.sidecar, table.where)
    rows = []
    for column, k in repeated.items():
        signature = table.sidecar["columns"][column]["signature"]  # type: ignore[index]
        draws = draw_matrix(Path(store), signature, table.frame, k)
        row = reliability_row(column, draws, kind="draws", design=design, unit=unit,
                              confidence=confidence, humans=people)
        _say_dropped(row, log)
        rows.append(row)
    return ReliabilityResult(str(store), rows)


def _clean(icc: dict[str, Any], *, defined: bool) -> dict[str, Any]:
    """An ICC form's JSON: no NaN (not JSON), and no degrees of freedom without 2 units."""
    out = {k: None if isinstance(v, float) and not math.isfinite(v) else v
           for k, v in icc.items()}
    if not defined:
        out["df1"] = out["df2"] = None
    return out


def _one(kind: str) -> str:
    return "draw" if kind == "draws" else "rater"


def _say_dropped(row: ReliabilityRow, log: Log | None) -> None:
    if log is not None and row.dropped:
        log(f"{row.column}: {row.dropped} of {row.units} units miss a {_one(row.kind)}'s "
            f"judgement and are left out of the ICC (listwise deletion)")
