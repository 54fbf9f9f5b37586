"""The audit's further conclusions, read by its verdict: can a judge replace an annotator
(`audit --alt-test`), can this study separate metrics `--power-for` apart (`audit
--power-for`), and would a sequential study have settled its comparisons sooner (`audit
--sequential`).

- Alt-test: per `--human` criterion H its annotator columns are the `--rater` columns named
  `H.<annotator>` (or, without `--rater`, every `H.<annotator>` column of the table; with one
  `--human`, any `--rater` column); each audited metric is tested against them as
  `meta-eval --alt-test` does (Calderon, Reichart and Dror, ACL 2025;
  `judgebench.services.alt_test`).
- Power: per criterion, `meta-eval --power-for` (`judgebench.services.power`) on the table
  itself, the best metric against each other one, and the simulated power of Williams' test
  at the study's own number of units (`meta_eval.power.simulated_power`). The study *can*
  separate metrics DELTA apart when every comparison reaches the target power with the units
  it has; the comparison with the lowest power is the one named. A comparison no study can
  have (the pilot's r(A,B) too low for r(H,B) = r(H,A) - DELTA) is left out and named.
- Sequential: per block at segment level grouped by item (a statistic bounded in [-1, 1]),
  the anytime-valid replay of `meta-eval --sequential` (`meta_eval.sequential`) over the
  gated metrics and the best sentinel: when every comparison would have been decided, and
  whether the confidence sequence confirms, leaves open or contradicts each passing
  metric's lead over the sentinel.

`sentences(data, human, at)` turns these (the report as data) into the verdict's sentences:
`fragile` ones (a study that cannot separate metrics DELTA apart; a pass the confidence
sequence contradicts) go into the verdict's "Not robust:" first sentence, the others (a
pass it leaves undecided among them) after the gate's summary.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judgebench.errors import InputError
from meta_eval.statistics import get

Log = Callable[[str], None]


def annotators_of(columns: Sequence[str], humans: Sequence[str], raters: Sequence[str],
                  *, path: str) -> dict[str, list[str]]:
    """Per human criterion its annotator columns (module docstring). A `--rater` that is not
    a column, or names no criterion when there are several, a criterion with one annotator,
    and no criterion with two are input errors."""
    missing = [r for r in raters if r not in columns]
    if missing:
        raise InputError(f"no column {missing[0]!r}", path=path, field="--rater")
    out = {h: [r for r in raters if r.startswith(f"{h}.")] if raters else
           [c for c in columns if c.startswith(f"{h}.") and c not in humans]
           for h in humans}
    stray = [r for r in raters if not any(r.startswith(f"{h}.") for h in humans)]
    if stray and len(humans) > 1:
        raise InputError(f"{stray[0]} names no --human criterion: call the annotator columns "
                         f"<criterion>.<annotator> ({humans[0]}.a1, ...) when there are "
                         "several --human columns", path=path, field="--rater")
    if stray:
        out[humans[0]] += stray
    for human, names in out.items():
        if len(names) == 1:
            raise InputError(f"{human} has one annotator column ({names[0]}): the alt-test "
                             "needs two or more", path=path, field="--rater")
    if not any(out.values()):
        raise InputError("the alt-test needs two or more annotator columns per criterion "
                         f"({humans[0]}.<annotator>, or --rater COL)", path=path,
                         field="--alt-test")
    return out


def alt_tests(scores: Path, *, annotators: Mapping[str, Sequence[str]],
              metrics: Sequence[str], epsilon: float, score: str, alpha: float,
              min_items: int, log: Log | None = None) -> list[dict[str, Any]]:
    """The alt-test of every metric on every criterion with annotators (`annotators_of`); a
    criterion with none gets a note."""
    from judgebench.services.alt_test import alt_test

    out: list[dict[str, Any]] = []
    for human, names in annotators.items():
        if not names:
            out.append({"human": human, "metric": None,
                        "note": f"no annotator columns ({human}.<annotator>)"})
            continue
        report = alt_test(scores, humans=names, metrics=metrics, epsilon=epsilon,
                          score=score, alpha=alpha, min_items=min_items, search_epsilon=True,
                          log=log)
        out += [{**row.to_dict(), "human": human, "annotators": list(names)}
                for row in report.rows]
    return out


def study_power(scores: Path, delta: float, *, human: str, metrics: Sequence[str],
                alpha: float, target: float, seed: int, systems: int,
                lower: Sequence[str] = (), higher: Sequence[str] = (),
                log: Log | None = None) -> dict[str, Any]:
    """Can this study separate metrics `delta` apart (module docstring)?"""
    from judgebench.services.power import power_for
    from meta_eval.power import simulated_power

    report = power_for(scores, delta, human=human, metrics=metrics, alpha=alpha,
                       target=target, seed=seed, lower=lower, higher=higher,
                       infeasible="skip", log=log)
    units = report.pilot_items
    # Williams' test runs on the (item, system) rows: they are the items of a one-system table
    units_word = "items" if systems == 1 else "segments"
    skipped = [{"metric": a, "against": b, "reason": why} for a, b, why in report.skipped]
    comparisons: list[dict[str, Any]] = []
    for best, other, plan in report.rows:
        needed = plan.needed[1][0]
        power = simulated_power(units, r_a=plan.r_a, r_b=plan.r_a - delta, r_ab=plan.r_ab,
                                alpha=alpha, seed=seed)
        comparisons.append({"metric": best, "against": other, "r_a": plan.r_a,
                            "r_ab": plan.r_ab, "items_needed": needed,
                            "power_at_n": power, "plan": plan.to_dict()["plan"]})
    weakest = min(comparisons, key=lambda c: c["power_at_n"], default=None)
    return {"human": human, "statistic": "pearson", "delta": delta, "alpha": alpha,
            "target_power": target, "n": units, "units": units_word,
            "separates": None if weakest is None else
            all(c["power_at_n"] >= target for c in comparisons),
            "weakest": None if weakest is None else
            {k: weakest[k] for k in ("metric", "against", "power_at_n", "items_needed")},
            "comparisons": comparisons, "skipped": skipped}


def sequential_applies(statistic: str, level: str, grouping: str) -> bool:
    """Whether `audit --sequential` replays this block (meta-eval --sequential's rule)."""
    from judgebench.services.sequential import UNBOUNDED

    spec = get(statistic)
    return (level == "segment" and grouping == "item" and not spec.on_scale
            and spec.kernel not in UNBOUNDED and spec.epsilon != "calibrated")


def block_sequential(block: Any, *, human: np.ndarray, columns: Mapping[str, np.ndarray],
                     alpha: float, seed: int, batch: int = 10) -> dict[str, Any] | None:
    """The sequential replay of one block (`judgebench.auditing.blocks.Block`) over its gated
    metrics and best sentinel; None when fewer than two of them are in the block."""
    from meta_eval.sequential import sequential_clusters
    from meta_eval.statistics import group_values

    spec = get(block.statistic)
    sentinel = next((g.sentinel for g in block.gate if g.sentinel), None)
    names = [g.metric for g in block.gate if g.metric in columns]
    if sentinel in columns:
        names.append(sentinel)
    if len(names) < 2:
        return None
    eps = spec.tie_threshold(0.0)
    values = np.column_stack([group_values(spec.kernel, human=human, metric=columns[m],
                                           epsilon=eps) for m in names])
    result = sequential_clusters(values, names, alpha=alpha, batch=batch, seed=seed)
    unused = result.item_order[result.items_used:]
    scores = np.stack([columns[m] for m in names if m != sentinel])
    return {"human": block.human, "statistic": block.statistic, "level": block.level,
            "grouping": block.grouping, "sentinel": sentinel,
            "passed": [g.metric for g in block.gate if g.passed],
            **result.to_dict(), "clusters": result.clusters, "means": result.means,
            "human_labels_saved": int(np.isfinite(human[unused]).sum()),
            "judge_calls_saved": int(np.isfinite(scores[:, unused]).sum())}


def sentences(data: Mapping[str, Any], human: str,
              where: Callable[[Mapping[str, Any]], str]) -> tuple[list[str], list[str]]:
    """The verdict's sentences on `human` from the report as data: (fragile, findings)."""
    fragile: list[str] = []
    found: list[str] = []
    rows = [r for r in data.get("alt_test") or [] if r.get("human") == human]
    if rows:
        found.append(_replacement(rows))
    for power in data.get("power") or []:
        if power["human"] == human:
            (fragile if power["separates"] is False else found).append(_power(power))
    for seq in data.get("sequential") or []:
        if seq["human"] != human:
            continue
        at = where(seq)
        reversed_, open_ = _unconfirmed(seq, at)
        fragile += reversed_
        if open_:
            one = len(open_) == 1
            leads = ", ".join(open_[:-1]) + (" and " if not one else "") + open_[-1]
            found.append(f"At {at} an anytime-valid sequential test leaves the lead"
                         f"{'' if one else 's'} of {leads} over {seq['sentinel']} undecided "
                         f"with all {seq['items_used']} items: only the gate's test at this "
                         f"fixed number of items decides {'it' if one else 'them'}.")
        elif seq["settled"]:
            found.append(f"At {at} an anytime-valid sequential study would have decided "
                         f"every comparison after {seq['items_used']} of "
                         f"{seq['items_total']} items ({seq['human_labels_saved']} human "
                         f"labels and {seq['judge_calls_saved']} judge calls saved).")
        else:
            found.append(f"At {at} an anytime-valid sequential study does not decide every "
                         f"comparison even with all {seq['items_total']} items.")
    return fragile, found


def _replacement(rows: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for r in rows:
        if r.get("metric") is None:
            parts.append(f"the alt-test did not run on {r['human']}: {r['note']}")
            continue
        w, p = r["alt-test-winning-rate"], r["alt-test-advantage-probability"]
        if w is None:
            parts.append(f"{r['metric']} could not be tested on {r['human']} (no annotator "
                         "has enough items)")
            continue
        can = "can" if r["passed"] else "cannot"
        needed = r.get("epsilon_to_pass")
        margin = ("" if "epsilon_to_pass" not in r else
                  "; not even at epsilon 1" if needed is None else
                  f"; it passes from epsilon {needed:g}" if r["passed"] else
                  f"; it would need epsilon {needed:g}")
        parts.append(f"{r['metric']} {can} replace an annotator on {r['human']} (winning "
                     f"rate {w:.2f}, advantage probability {p:.2f}, epsilon "
                     f"{r['epsilon']:g}{margin})")
    return f"Replacing an annotator: {'; '.join(parts)}."


def _power(power: Mapping[str, Any]) -> str:
    w = power["weakest"]
    if w is None:
        return (f"No pair of metrics can be {power['delta']:g} apart in Pearson r with "
                f"{power['human']} given how they correlate with each other: no power "
                "analysis.")
    needed = (f"{power['target_power']:.0%} power needs {w['items_needed']} {power['units']}"
              if w["items_needed"] is not None else
              f"{power['target_power']:.0%} power is out of reach")
    detail = (f"Pearson r with {power['human']}; power {w['power_at_n']:.2f} for "
              f"{w['metric']} against {w['against']}; {needed}")
    if power["separates"]:
        return (f"This study can separate metrics {power['delta']:g} apart at alpha "
                f"{power['alpha']:g} with its {power['n']} {power['units']} ({detail}).")
    return (f"this study cannot separate metrics closer than {power['delta']:g} at alpha "
            f"{power['alpha']:g} with its {power['n']} {power['units']} ({detail})")


def _unconfirmed(seq: Mapping[str, Any], at: str) -> tuple[list[str], list[str]]:
    """Passing metrics whose lead over the sentinel the confidence sequence reverses (the
    sentinel decided better: not robust) or leaves open (a sentence: a study that stops
    when settled would not have stopped on it)."""
    sentinel = seq.get("sentinel")
    if not sentinel:
        return [], []
    reversed_, open_ = [], []
    for name in seq["passed"]:
        decision = next((d for d in seq["decisions"]
                         if {d["metric"], d["against"]} == {name, sentinel}), None)
        if decision is None or (decision["decision"] == "better"
                                and decision["metric"] == name):
            continue
        low, high = decision["low"], decision["high"]
        sign = 1.0 if decision["metric"] == name else -1.0
        lo, hi = sorted((sign * low, sign * high)) if math.isfinite(low) else (low, high)
        bounds = f"([{lo:.3f}, {hi:.3f}])"
        if decision["decision"] == "better":  # the sentinel's lead is decided
            reversed_.append(f"{name}'s pass at {at} is contradicted by an anytime-valid "
                             f"sequential test: it decides {sentinel} better after "
                             f"{decision['decided_at']} items (difference in {bounds[1:]}")
        else:
            open_.append(f"{name} {bounds}")
    return reversed_, open_
