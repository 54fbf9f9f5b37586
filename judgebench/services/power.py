"""`meta-eval --power-for DELTA`: from a pilot table, how many items (and annotators) a study
needs to separate two metrics whose Pearson correlations with people differ by DELTA
(`meta_eval.power`): the best metric of the pilot against each other metric."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.power import PowerPlan

Log = Callable[[str], None]


@dataclass(frozen=True)
class PowerReport(Result):
    human: str
    rho: float | None
    pilot_annotators: int
    pilot_items: int
    rows: list[tuple[str, str, PowerPlan]]  # (metric A, metric B, plan)
    #: (metric A, metric B, why) for a comparison no planned study can have (`infeasible`)
    skipped: tuple[tuple[str, str, str], ...] = ()

    def to_dict(self) -> list[dict[str, Any]]:
        return [{"metric": a, "against": b, "human": self.human, "statistic": "pearson",
                 "level": "segment", "grouping": "none", "test": "williams",
                 "pilot_units": self.pilot_items, "pilot_annotators": self.pilot_annotators,
                 "rater_reliability": self.rho, **plan.to_dict()}
                for a, b, plan in self.rows]


def _r(x: np.ndarray, y: np.ndarray) -> float:
    ok = np.isfinite(x) & np.isfinite(y)
    return float(np.corrcoef(x[ok], y[ok])[0, 1]) if ok.sum() > 2 else float("nan")


def power_for(scores: str | Path | pd.DataFrame, delta: float, *, human: str,
              metrics: Sequence[str] = (), raters: Sequence[str] = (), alpha: float = 0.05,
              target: float = 0.8, sims: int = 2000, seed: int = 0,
              lower: Sequence[str] = (), higher: Sequence[str] = (),
              exclude_systems: Sequence[str] = (), infeasible: str = "error",
              log: Log | None = None) -> PowerReport:
    """The plan for the pilot's best metric against each other metric. A comparison with
    no joint distribution at DELTA (r(A,B) too low for r(H,B) = r_a - DELTA) is an input
    error, or with `infeasible="skip"` left out and named in `skipped`."""
    from judgebench.tables.prepared import PreparedTable
    from meta_eval.power import power_plan

    log = log or (lambda _message: None)
    if not 0 < delta < 2:
        raise InputError("a difference of two correlations: 0 < DELTA < 2", field="--power-for")
    if not 0 < target < 1:
        raise InputError("must be in (0, 1)", field="--target-power")
    cols = PreparedTable.read(scores, [human], metrics, raters=raters, lower=lower,
                              higher=higher, exclude_systems=exclude_systems, log=log)
    if len(cols.metrics) < 2:
        raise InputError("--power-for compares two or more metrics", field="--metric")
    names = [human, *raters, *cols.metrics]
    matrices = cols.matrices(names)
    flat = {c: matrices[c].ravel() for c in names}
    r = {m: _r(flat[human], flat[m]) for m in cols.metrics}
    ranked = sorted((m for m in cols.metrics if np.isfinite(r[m])), key=lambda m: -r[m])
    if len(ranked) < 2:
        raise InputError("two metrics with a defined Pearson r are needed", field="--metric")
    rho = None
    if len(raters) >= 2:
        pairs = [_r(flat[a], flat[b]) for a, b in itertools.combinations(raters, 2)]
        rho = float(np.nanmean(pairs))
        if not 0 < rho < 1:
            raise InputError(f"the raters' mean inter-rater r is {rho:.4g}: no reliability "
                             "to scale by", field="--rater")
    k0 = max(1, len(raters))
    grid = tuple(sorted({1, 2, 3, 5, k0, 2 * k0})) if rho is not None else ()
    best = ranked[0]
    rows = []
    skipped = []
    for other in ranked[1:]:
        try:
            plan = power_plan(delta, r_a=r[best], r_ab=_r(flat[best], flat[other]),
                              alpha=alpha, target=target, sims=sims, seed=seed, rho=rho,
                              pilot_annotators=k0, annotators=grid)
        except ValueError as exc:
            if infeasible != "skip":
                raise InputError(f"{best} vs {other}: {exc}", field="--power-for") from None
            skipped.append((best, other, str(exc)))
            continue
        rows.append((best, other, plan))
    units = int(np.isfinite(flat[human]).sum())
    log(f"power: pilot of {units} units, best metric {best} (r={r[best]:.4f}), "
        f"{len(rows)} comparison(s), {sims} simulated studies per size")
    return PowerReport(human, rho, k0, units, rows, tuple(skipped))
