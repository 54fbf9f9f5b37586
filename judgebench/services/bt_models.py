"""Bradley-Terry's model-based extras for `aggregate -r bradley-terry` on a pairwise table:
the order effect (a judge's position bias as one fitted parameter, `rating.fit_order_effect`)
where the table records each presentation order, and the ranking with style controlled
(`--control`, `meta_eval.aggregation.style`) beside the raw one in the same model.

Each result is a status with a reason when it has no estimate (never a silent 0), carries its
signature, and is plain data (`to_dict` is its part of `--json`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench._version import __version__

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.aggregation import Comparisons

VERSION = "1"


def _number(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


@dataclass(frozen=True)
class Interval:
    """An estimate with its standard error and Wald interval."""

    estimate: float
    se: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float | None]:
        return {"estimate": _number(self.estimate), "se": _number(self.se),
                "low": _number(self.low), "high": _number(self.high)}


def _wald(estimate: float, se: float, level: float) -> Interval:
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2.0))
    return Interval(estimate, se, estimate - z * se, estimate + z * se)


@dataclass(frozen=True)
class OrderEffect:
    """h in logit P(first wins) = theta_i - theta_j + h: > 0 favours the response shown
    first. `effect` None with `reason` when there is no finite estimate."""

    columns: tuple[str, str]
    level: float
    judgements: float
    ties_left_out: int
    effect: Interval | None
    reason: str | None
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {"columns": list(self.columns), "level": self.level,
                "judgements": self.judgements, "ties_left_out": self.ties_left_out,
                "status": "ok" if self.effect is not None else "error",
                "reason": self.reason,
                "effect": None if self.effect is None else self.effect.to_dict(),
                "signature": self.signature}

    def row(self) -> dict[str, Any]:
        """The order effect as one flat row of a table (status and reason only where there
        is no estimate)."""
        effect = self.effect.to_dict() if self.effect is not None else {}
        out: dict[str, Any] = {"h": effect.get("estimate"), "se": effect.get("se"),
                               "ci_low": effect.get("low"), "ci_high": effect.get("high"),
                               "level": self.level, "judgements": self.judgements,
                               "ties_left_out": self.ties_left_out,
                               "orders": ",".join(self.columns)}
        if self.effect is None:
            out |= {"status": "error", "reason": self.reason}
        return {**out, "signature": self.signature}


def order_effect(frame: pd.DataFrame, *, column: str, systems: Sequence[str],
                 level: float) -> OrderEffect | None:
    """The order effect from `column`'s `.ab` and `.ba` verdicts (None when the table does
    not have both)."""
    from meta_eval.aggregation.pairwise_design import order_counts
    from meta_eval.aggregation.rating import fit_order_effect

    found = order_counts(frame, column=column, systems=systems)
    if found is None:
        return None
    first, second, ties = found
    columns = (f"{column}.ab", f"{column}.ba")
    signature = "|".join([f"bradley-terry.order-effect@{VERSION}", f"orders:{','.join(columns)}",
                          "ties:left-out", "se:observed-information", f"ci:wald-{level:g}",
                          f"judgebench:{__version__}"])
    judgements = float((first + second).sum())
    try:
        _, h, cov = fit_order_effect(first, second)
    except (ValueError, RuntimeError) as exc:
        return OrderEffect(columns, level, judgements, ties, None, str(exc), signature)
    n = first.shape[0]
    return OrderEffect(columns, level, judgements, ties,
                       _wald(h, math.sqrt(max(float(cov[n, n]), 0.0)), level), None, signature)


@dataclass(frozen=True)
class StyleControl:
    """The raw and the style-controlled Bradley-Terry strengths (same model: ties as half a
    win), each system's rank in both, and the covariates' coefficients. `reason` (and no
    rows) when a fit has no finite estimate."""

    controls: tuple[str, ...]
    covariates: tuple[str, ...]
    level: float
    comparisons: int
    systems: tuple[str, ...]
    raw: tuple[Interval, ...]
    controlled: tuple[Interval, ...]
    coefficients: tuple[Interval, ...]
    reason: str | None
    signature: str

    @property
    def ok(self) -> bool:
        return self.reason is None

    def ranks(self, which: str) -> dict[str, int]:
        """Competition rank (1 = best) of each system under `which` ('raw', 'controlled')."""
        values = [float(x.estimate) for x in (self.raw if which == "raw" else self.controlled)]
        return {s: 1 + sum(1 for v in values if v > values[i]) for i, s in enumerate(self.systems)}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"controls": list(self.controls),
                               "covariates": list(self.covariates), "level": self.level,
                               "comparisons": self.comparisons,
                               "status": "ok" if self.ok else "error", "reason": self.reason,
                               "signature": self.signature}
        if self.ok:
            raw, controlled = self.ranks("raw"), self.ranks("controlled")
            out["systems"] = {
                s: {"raw": {**r.to_dict(), "rank": raw[s]},
                    "controlled": {**c.to_dict(), "rank": controlled[s]}}
                for s, r, c in zip(self.systems, self.raw, self.controlled, strict=True)}
            out["coefficients"] = {name: c.to_dict() for name, c in
                                   zip(self.covariates, self.coefficients, strict=True)}
        return out

    def system_rows(self) -> list[dict[str, Any]]:
        """One flat row per system, best controlled strength first: its controlled and raw
        rank, strength, standard error and interval; without a fit one row with the
        status and reason."""
        controls = ",".join(self.controls)
        if not self.ok:
            return [{"system": None, "level": self.level, "controls": controls,
                     "status": "error", "reason": self.reason, "signature": self.signature}]
        raw, controlled = self.ranks("raw"), self.ranks("controlled")
        order = sorted(range(len(self.systems)), key=lambda i: -self.controlled[i].estimate)
        rows = []
        for i in order:
            s, c, r = self.systems[i], self.controlled[i].to_dict(), self.raw[i].to_dict()
            rows.append({"system": s, "rank": controlled[s], "controlled": c["estimate"],
                         "se": c["se"], "ci_low": c["low"], "ci_high": c["high"],
                         "raw_rank": raw[s], "raw": r["estimate"], "raw_se": r["se"],
                         "raw_ci_low": r["low"], "raw_ci_high": r["high"],
                         "level": self.level, "controls": controls,
                         "signature": self.signature})
        return rows

    def coefficient_rows(self) -> list[dict[str, Any]]:
        """One flat row per covariate (log-odds per standard deviation of A's minus B's
        feature); none without a fit."""
        if not self.ok:
            return []
        return [{"covariate": name, "coefficient": c["estimate"], "se": c["se"],
                 "ci_low": c["low"], "ci_high": c["high"], "level": self.level,
                 "signature": self.signature}
                for name, c in ((n, x.to_dict()) for n, x in
                                zip(self.covariates, self.coefficients, strict=True))]


def style_control(frame: pd.DataFrame, data: Comparisons, *, column: str,
                  controls: Sequence[str], level: float) -> StyleControl:
    """Fit Bradley-Terry with and without the `controls` covariates on the comparisons of
    `data` (read from `frame`'s `column`). A covariate the table lacks raises TableError
    (bad input); a fit without a finite estimate is a status with its reason."""
    from meta_eval.aggregation.pairwise_design import style_covariates
    from meta_eval.aggregation.style import fit_covariate_bt

    names, z = style_covariates(frame, controls=controls, column=column)
    signature = "|".join([f"bradley-terry.style@{VERSION}", f"controls:{','.join(controls)}",
                          "features:arena-hard-v2", "standardised:ddof1", "ties:half-win",
                          "se:observed-information", f"ci:wald-{level:g}",
                          f"judgebench:{__version__}"])
    empty = StyleControl(tuple(controls), tuple(names), level, len(data.a), data.systems,
                         (), (), (), None, signature)
    try:
        fits = [fit_covariate_bt(a=data.a, b=data.b, outcome=data.outcome,
                                 weights=data.weights, n_systems=len(data.systems),
                                 covariates=covariates, level=level)
                for covariates in (None, z)]
    except ValueError as exc:
        return replace(empty, reason=str(exc))
    raw, controlled = ([_wald(e, s, level) for e, s in
                        zip(np.concatenate([f.theta, f.gamma]), f.se, strict=True)]
                       for f in fits)
    n = len(data.systems)
    return StyleControl(tuple(controls), tuple(names), level, len(data.a), data.systems,
                        tuple(raw), tuple(controlled[:n]), tuple(controlled[n:]), None,
                        signature)
