"""The text output of `judgebench labels import`, `export` and `stats`."""

from __future__ import annotations

from typing import Any

from judgebench.services.label_export import ExportResult
from judgebench.services.label_import import ImportResult
from judgebench.services.label_stats import CriterionStats, Estimate, StatsResult


def _num(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _interval(e: Estimate | dict[str, Any]) -> str:
    low, high = (e.low, e.high) if isinstance(e, Estimate) else (e.get("low"), e.get("high"))
    return "" if low is None or high is None else f" [{_num(low)}, {_num(high)}]"


def imported(result: ImportResult) -> str:
    crit = result.criterion
    lines = [f"imported {result.imported} label(s) of criterion {crit.name} ({crit.describe()})"
             f" by {', '.join(result.annotators) or 'nobody'} from {result.path} into "
             f"{result.store}"]
    if result.unchanged:
        lines.append(f"  {result.unchanged} row(s) left as they were: the same answer is the "
                     "current label already")
    if result.without_value:
        lines.append(f"  {result.without_value} row(s) without a value or a status: no label")
    return "\n".join(lines)


def exported(result: ExportResult) -> str:
    lines = [f"wrote {result.rows} row(s) to {result.output}: {', '.join(result.columns)}"]
    for crit in result.criteria:
        if crit.choices:
            lines.append(f"  {crit.name}: a choice's name ({', '.join(crit.choices)}); "
                         f"human.{crit.name} is the choice most annotators gave (none on "
                         "a tie)")
        elif crit.pairwise:
            lines.append(f"  {crit.name}: a, b or tie; human.{crit.name} is the answer "
                         "where the annotators agree, else their mean P(A better) (1 a, "
                         "0 b, 0.5 tie)")
    return "\n".join(lines)


def stats(result: StatsResult) -> str:
    blocks = [_criterion(c) for c in result.criteria]
    return "\n\n".join(blocks)


def _asymptotic(test: dict | None) -> str:
    """ (se S, [low, high], p P): a kappa's asymptotic standard error, interval and test."""
    if not test:
        return ""
    interval = f", [{_num(test['low'])}, {_num(test['high'])}]" if "low" in test else ""
    p = test.get("p_value")
    return f" (se {_num(test.get('se'))}{interval}, p {'-' if p is None else f'{p:.3g}'})"


def _criterion(c: CriterionStats) -> str:
    crit = c.criterion
    lines = [f"criterion {crit.name} ({crit.describe()}; Krippendorff's alpha at the "
             f"{c.level} level)"]
    cov = c.coverage
    lines.append(f"  keys with 1 / 2 / 3+ answered labels: {cov['1']} / {cov['2']} / "
                 f"{cov['3+']}; statuses: " + ", ".join(f"{k} {v}" for k, v in
                                                        c.statuses.items()))
    lines.append("  annotators: " + (", ".join(f"{a} {n}" for a, n in c.annotators.items())
                                     or "none"))
    lines.append(f"  alpha ({c.alpha.statistic}): {_num(c.alpha.value)} over {c.alpha.n} "
                 "pairable values")
    for k in c.kappas:
        what = {None: "Cohen's kappa", "custom": "custom-weighted kappa"}.get(
            k.get("weights"), f"{k.get('weights')}-weighted kappa")
        lines.append(f"  {what} {k['a']} vs {k['b']}: {_num(k.get('value'))}"
                     f"{_interval(k)} on {k.get('n', 0)} keys" + _asymptotic(k.get("analytic")))
    if c.fleiss is not None:
        test = c.fleiss.analytic
        lines.append(f"  Fleiss' kappa: {_num(c.fleiss.value)} on {c.fleiss.n} keys every "
                     "annotator answered" + (f" (z {_num(test['z'])}, p "
                                             f"{test['p_value']:.3g}: Fleiss, Nee and "
                                             "Landis 1979)" if test else ""))
    if c.randolph is not None:
        lines.append(f"  Randolph's free-marginal kappa: {_num(c.randolph.value)} on "
                     f"{c.randolph.n} keys" + _asymptotic(c.randolph.analytic))
    if c.ceiling is not None:
        lines.append(f"  human ceiling ({c.ceiling['statistic']}, {c.ceiling['how']}): "
                     f"{_num(c.ceiling['value'])}")
    for j in c.judges:
        lines.append(f"  judge {j.judge} against {j.reference}, {j.n} keys"
                     + (f" ({j.split} split evenly, left out)" if j.split else "") + ":")
        for e in j.statistics:
            lines.append(f"    {e.statistic}: {_num(e.value)}{_interval(e)} (n={e.n})")
        if j.confusion is not None:
            labels = j.confusion["human_labels"]
            lines.append("    confusion (rows judge, columns people): "
                         + " ".join(str(v) for v in labels))
            for label, row in zip(j.confusion["metric_labels"], j.confusion["counts"],
                                  strict=True):
                lines.append(f"      {label}: " + " ".join(str(n) for n in row))
        lines.append(f"    {j.signature}")
    lines.append(f"  {c.signature}")
    return "\n".join(lines)
