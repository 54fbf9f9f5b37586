"""`judgebench fit`'s report in the terminal: the numbers out of fold beside the search's."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgebench.services.fit import FitEstimate, FitResult, Number


def _number(n: Number) -> str:
    interval = ("" if n.ci_low is None or n.ci_high is None
                else f"  [{n.ci_low:.3f}, {n.ci_high:.3f}]")
    return f"{n.value:.3f}{interval}  (n={n.n})"


def _or_undefined(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def report(result: FitResult) -> str:
    """The chosen candidate, then each number with its 95% interval and the units it is on."""
    s = result.statistic
    tried = sum(1 for c in result.candidates if c.split is None)
    chosen = next(c for c in result.candidates if c.name == result.chosen)
    shown = ", ".join(chosen.examples) or "none"
    threshold = "none" if chosen.threshold is None else f"{chosen.threshold:g}"
    lines = [
        f"fit: {tried} candidates searched on {result.search_units} labelled rows; "
        f"fold {result.held_out_fold} ({result.held_out_units} rows) held out",
        f"chosen: {result.chosen} ({chosen.shots} examples: {shown}; threshold {threshold}"
        + ("" if chosen.criterion is None else f"; criterion wording {chosen.criterion}")
        + ("" if chosen.scale is None else f"; asked on {chosen.scale}, mapped back")
        + ("" if chosen.panel is None else f"; panel {chosen.panel}")
        + ("" if chosen.calibration_knots is None else
           f"; calibrated: a monotone map of {chosen.calibration_knots} knots")
        + ")",
        "",
        f"{s} with human.{result.human} (95% bootstrap intervals over rows):",
        f"  held out, fitted judge      {_number(result.held_out)}   <- the number to report",
        f"  held out, starting judge    {_number(result.held_out_start)}",
        f"  held out, gain              {_number(result.gain)}   "
        f"p = {result.gain_p_value:.4f} (one-sided paired permutation test)",
        f"  cross-fitted in the search  {_number(result.cross_fitted)}",
        f"  in search (best of {tried})     {_number(result.in_search)}   "
        "<- optimistic: chosen as the best",
    ]
    if result.ceiling is not None:
        lines.append(f"  human ceiling (held out)    {_or_undefined(result.ceiling)}   each "
                     "rater against the others' mean; on that footing the fitted judge "
                     f"{_or_undefined(result.ceiling_fitted)}, the starting judge "
                     f"{_or_undefined(result.ceiling_start)}")
    if "calibration" in result.signature.split("|search:")[1].split("|")[0].split(","):
        lines.append(_calibration_note(s))
    errors = result.held_out_errors
    if errors:
        lines.append(f"  held out, on people's scale  MAE fitted {errors['mae']['fitted']:.3f}"
                     f", starting {errors['mae']['start']:.3f}; bias (judge - people) fitted "
                     f"{errors['bias']['fitted']:+.3f}, starting {errors['bias']['start']:+.3f}")
    for rewrite in result.rewrites:
        rows = result.rewrite_rows.get("final" if rewrite.fold is None
                                       else f"fold-{rewrite.fold}", [])
        lines.append(f"  {rewrite.name}: " + (rewrite.reason or "tried") + " (written from "
                     f"the {len(rows)} rows furthest from people of the search folds"
                     + ("" if rewrite.fold is None else f" but {rewrite.fold}; for the "
                        f"cross-fitted choice on fold {rewrite.fold} only") + ")")
    if result.failed:
        lines.append(f"warning: {result.failed} scores failed and are left out")
    if result.spec_path is not None:
        lines.append(f"wrote the fitted judge to {result.spec_path} "
                     f"(judgebench score -m @{result.spec_path})")
    lines += [f"fitted judge: {result.fitted_signature}", f"signature: {result.signature}"]
    return "\n".join(lines)


def _calibration_note(statistic: str) -> str:
    from meta_eval.statistics import get

    if statistic == "pearson" or get(statistic).on_scale:
        return ("  calibration: each map fitted on the search folds but the one it is "
                "scored on; the held-out fold never fitted on")
    return (f"  calibration: {statistic} ranks the scores, which a monotone map keeps: it "
            "cannot gain from calibration (only through the ties a map makes)")


def estimate(found: FitEstimate) -> str:
    """`fit --dry-run`: the candidates and what asking them would take."""
    cost = "unknown (no price)" if found.cost_usd is None else f"${found.cost_usd:.4f}"
    return (f"fit would try {found.candidates} candidates ({found.judge_specs} judge specs) on "
            f"{found.search_units} labelled rows and judge {found.held_out_units} held-out "
            f"rows: {found.calls} calls, {cost} (cached answers and stored scores excluded)"
            + ("" if not found.panels else
               f"; {found.panels} panels of {found.panel_members} member judges: each member "
               "is asked once per row and every panel that holds it reads its answers from "
               "the judge cache, so the panels add no call")
            + ("" if not found.rewrite_calls else
               f"; {found.rewrite_calls} rewrite calls, each rewritten wording counted "
               "as long as a rewrite may be"))
