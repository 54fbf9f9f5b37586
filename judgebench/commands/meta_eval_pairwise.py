"""`judgebench meta-eval PAIRS --pairwise`: run the pairwise service and print its results, a
JSON array with --json, otherwise one judge x statistic table per human column (and
category): value [CI], the human ceiling last."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgebench.display import safe
from meta_eval.pairwise_eval import CALIBRATION, HUMAN_FREE, STATISTICS

if TYPE_CHECKING:
    from judgebench.services.pairwise import PairwiseMetaEvalResult, PairwiseRow


def run_pairwise(pairs: Path, *, humans: Sequence[str], judges: Sequence[str], by: str | None,
                 human_ties: str, bootstrap: int, ci: float, seed: int, compare: bool,
                 resamples: int, alpha: float, as_json: bool, log: Callable[[str], None],
                 failed_as: str = "missing") -> None:
    from judgebench.services.pairwise import pairwise_meta_eval

    result = pairwise_meta_eval(pairs, humans=humans, judges=judges, by=by,
                                human_ties=human_ties, bootstrap=bootstrap, ci=ci, seed=seed,
                                compare=compare, resamples=resamples, alpha=alpha,
                                failed_as=failed_as, log=log)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(safe(render(result)))


def _cell(row: PairwiseRow | None) -> str:
    if row is None:
        return "-"
    r = row.result.result
    text = "n/a" if row.to_dict()["value"] is None else f"{r.value:.4f}"
    if r.ci_low is not None and r.ci_high is not None:
        text += f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
    return text


def render(result: PairwiseMetaEvalResult) -> str:
    """One block per (human column, category): a row per judge, a column per statistic (the
    human-free ones, consistency, tie-rate and kappa-orders, repeated in every block)."""
    from judgebench.failed import header
    from judgebench.services.pairwise import CEILING

    rows = result.rows
    shown = [*STATISTICS, *(c for c in CALIBRATION if any(r.result.statistic == c for r in rows))]
    categories = list(dict.fromkeys(r.result.category for r in rows))
    ties = rows[0].ties if rows else "drop"
    lines: list[str] = []
    for human in result.humans:
        for category in categories:
            def find(judge: str, statistic: str, category: str | None = category,
                     human: str = human) -> PairwiseRow | None:
                want = None if statistic in HUMAN_FREE else human
                return next((r for r in rows if r.result.judge == judge
                             and r.result.statistic == statistic
                             and r.result.category == category
                             and (r.result.human == want or judge == CEILING)), None)

            names = [*result.judges, *([CEILING] if len(result.humans) > 1 else [])]
            table = [["judge", *shown]]
            for judge in names:
                table.append([judge, *(_cell(find(judge, s)) for s in shown)])
                accuracy = find(judge, "accuracy")
                if accuracy is not None and accuracy.result.cluster is not None:
                    table[-1][0] += f" (cluster {accuracy.result.cluster})"
                if accuracy is not None and accuracy.result.ceiling_fraction is not None:
                    table[-1][0] += (f" ({100 * accuracy.result.ceiling_fraction:.0f}% of "
                                     "ceiling)")
            title = f"{human} · human ties {ties} · {header(result.failed_as)}"
            if category is not None:
                title += f" · {rows[0].by} = {category}"
            widths = [max(len(line[k]) for line in table) for k in range(len(table[0]))]
            lines += ["", title, *("  ".join(c.ljust(w) for c, w in zip(line, widths,
                                                                          strict=True)).rstrip()
                                   for line in table)]
    failures = _failures(result)
    if failures:
        lines += ["", "failed verdicts (pairs):", *(f"  {f}" for f in failures)]
    if result.compare:
        lines += ["", "cluster: judges in one cluster are not significantly different in "
                  "accuracy (paired test on per-pair credit: exact McNemar, or sign-flip)."]
    return "\n".join(lines).lstrip("\n")


def _failures(result: PairwiseMetaEvalResult) -> list[str]:
    """Per judge with failed verdicts: how many pairs each statistic found failed and how
    it counted them (over all pairs: no category, or the macro rows)."""
    out = []
    for judge in result.judges:
        counted: dict[str, list[str]] = {}
        for row in result.rows:
            r = row.result
            if r.judge == judge and r.failed and r.failed["rows"] and r.category in (
                    None, "(macro)") and r.human in (None, result.humans[0]):
                key = f"{r.failed['rows']} counted {r.failed['counted_as']}"
                counted.setdefault(key, []).append(r.statistic)
        if counted:
            out.append(f"{judge}: " + "; ".join(f"{'/'.join(dict.fromkeys(s))} {k}"
                                                 for k, s in counted.items()))
    return out
