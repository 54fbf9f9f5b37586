"""fit --search calibration: each judge spec searched, also with a monotone calibration map
of its score onto people's scale (meta_eval.score_calibration, isotonic), cross-fitted like
the threshold and asking nothing more of the judge (the map is applied to the scores the
spec already gave).

A calibrated candidate's number on a search fold comes from the map fitted on the other
search folds; for the cross-fitted choice on fold j, its scores on the other folds come from
maps that never saw fold j (a fold inside the training folds); the held-out fold is never
fitted on. The chosen judge carries the map fitted on every search row as its
``calibration=`` knots (the judge applies it: judgebench_judges.calibration).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from judgebench.services.fit import FitPlan
    from meta_eval.arrays import FloatArray

#: The suffix of a calibrated candidate's name.
SUFFIX = "@cal"


@dataclass
class Calibrations:
    """The calibrated candidates' knots (fitted on every search row, by name) and, for each
    search fold's cross-fitted choice, their scores made without that fold's labels."""

    knots: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    per_fold: dict[int, dict[str, FloatArray]] = field(default_factory=dict)

    def count(self, label: str) -> int | None:
        """How many knots the candidate's map has (None: not calibrated)."""
        found = self.knots.get(label)
        return None if found is None else len(found)


def require_sklearn(search: Sequence[str]) -> None:
    """With calibration searched, scikit-learn imports (the [audit] extra), or exit 2."""
    from judgebench.extras import require

    if "calibration" in search:
        require("fit --search calibration", "audit", "sklearn")


def add_calibrated(plan: FitPlan, candidates: dict[str, FloatArray],
                   own: dict[str, tuple[tuple[int, ...], float | None]],
                   wording: dict[str, tuple[str | None, str | None, str | None]]
                   ) -> Calibrations:
    """With calibration searched, a calibrated candidate (NAME@cal) added for each
    unthresholded rubric candidate (in `candidates`, `own` and `wording`), its scores on the
    search rows out of fold; nothing otherwise (and no panel: judge.panel has no map)."""
    from meta_eval import score_calibration as sc

    found = Calibrations()
    if plan.settings is None or "calibration" not in plan.settings.search:
        return found
    panels = set() if plan.panels is None else set(plan.panels.specs)
    human, folds, search = plan.human, np.asarray(plan.folds), plan.search
    for name in [n for n in list(candidates) if n in plan.shot_specs and n not in panels]:
        raw = candidates[name]
        label = name + SUFFIX
        try:
            found.knots[label] = sc.knots(raw=np.where(search, raw, np.nan), human=human)
        except ValueError:  # no score on the search rows: nothing to fit
            continue
        candidates[label] = np.where(search, sc.out_of_fold(
            raw=raw, human=human, folds=folds, use=search), np.nan)
        own[label], wording[label] = own[name], wording[name]
        for fold in np.unique(folds[search]):
            found.per_fold.setdefault(int(fold), {})[label] = np.where(
                search, sc.out_of_fold(raw=raw, human=human, folds=folds,
                                       use=search & (folds != fold)), np.nan)
    return found


def knot_lists(knots: list[tuple[float, float]] | None) -> list[list[float]] | None:
    """The knots as the spec option writes them ([[raw, calibrated], ...])."""
    return None if knots is None else [[x, y] for x, y in knots]


def held_out_errors(search: Sequence[str], *, human: FloatArray, fitted: FloatArray,
                    start: FloatArray) -> dict[str, dict[str, float]]:
    """With calibration searched, the fitted and the starting judge's MAE and bias (judge -
    people) on people's scale over the held-out rows (meta_eval's `mae` and `bias`); none
    otherwise."""
    from meta_eval import fitting

    if "calibration" not in search:
        return {}
    return {name: {which: fitting.value(name, human=human, metric=values).value
                   for which, values in (("fitted", fitted), ("start", start))}
            for name in ("mae", "bias")}
