"""`meta-eval reliability` as text: per score column, the design chosen and why, each ICC form
with its F-test and confidence interval, the units left out, then (draws) alpha, spread,
flakiness and pass@k / pass^k."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgebench.services.reliability import ReliabilityResult, ReliabilityRow


def _num(value: float, spec: str = "7.4f") -> str:
    return f"{'n/a':>{spec.split('.')[0]}}" if not math.isfinite(value) else f"{value:{spec}}"


def _p(value: float) -> str:
    return "    n/a" if not math.isfinite(value) else f"{value:7.2g}"


def row_lines(row: ReliabilityRow) -> list[str]:
    from meta_eval.icc import MCGRAW_WONG

    what = "draws" if row.kind == "draws" else "raters"
    lines = [f"{row.column}",
             f"  {row.judgements} {what}; {row.units} units, {row.complete} with every "
             f"judgement ({row.dropped} left out of the ICC: listwise deletion)",
             f"  design: {row.why}"]
    if row.complete < 2:
        lines.append("  ICC: n/a (fewer than 2 units with every judgement)")
    else:
        confidence = next(iter(row.forms.values())).confidence
        lines.append(f"  {'form':<6} {'':<9} {'ICC':>7} {'F':>9} {'df1':>5} {'df2':>7} "
                     f"{'p':>7}  {confidence:.0%} CI")
        lines += [f"  {form:<6} {MCGRAW_WONG[form]:<9} {_num(icc.value)} "
                  f"{_num(icc.f, '9.3f')} {icc.df1:5g} {icc.df2:7.4g} {_p(icc.p_value)}  "
                  f"[{_num(icc.ci_low, '.4f')}, {_num(icc.ci_high, '.4f')}]"
                  for form, icc in row.forms.items()]
    d = row.draws
    if d is not None:
        lines += [f"  draws: {d.units} units with 2 or more; ICC(1) {_num(d.icc, '.4f')} "
                  f"(unbalanced), alpha {_num(d.alpha, '.4f')}, spread {_num(d.spread, '.4f')}",
                  f"  flaky: {_num(d.flip_share, '.4f')} (share of units whose verdict "
                  "changes between draws)"]
    if row.pass_at:
        lines.append("  pass@k " + "  ".join(f"k={k} {_num(v, '.4f')}"
                                             for k, v in row.pass_at.items()))
        lines.append("  pass^k " + "  ".join(f"k={k} {_num(v, '.4f')}"
                                             for k, v in row.pass_hat.items()))
    for human, n in row.noise.items():
        lines += [f"  against {human}: r {_num(n.agreement, '.4f')} (people vs the mean of "
                  "the draws),",
                  f"    ceiling {_num(n.ceiling, '.4f')}, disattenuated "
                  f"{_num(n.disattenuated, '.4f')}, noise share {_num(n.noise_share, '.4f')}"]
    lines.append(f"  signature: {row.signature}")
    return lines


def reliability_report(result: ReliabilityResult) -> str:
    lines = [f"reliability · {result.source}"]
    for row in result.rows:
        lines += ["", *row_lines(row)]
    return "\n".join(lines)
