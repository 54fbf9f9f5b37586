"""Text for the terminal: every command's result as people read it, and a `Table`
(judgebench.render.table) as aligned columns.

Each function takes a command's result (the typed objects judgebench.services return, or
their plain dicts) and returns the text the command prints; names from the user's files are
made terminal-safe by the command (judgebench.display.safe) as it prints.
"""

from __future__ import annotations

import json
import math
import shlex
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from judgebench.render.table import Table, numeric, shown_cells
from judgebench.tables.failed import any_failed, header
from meta_eval.statistics import get
from meta_eval.task import test_signature

if TYPE_CHECKING:
    from pathlib import Path

    from judgebench.engine.runner import RunResult
    from judgebench.metric_card import MetricCard
    from judgebench.services.aggregate import AggregateResult, MakeWin, RuleInfo, RuleOutcome
    from judgebench.services.alt_test import AltTestReport
    from judgebench.services.bt_models import Interval
    from judgebench.services.combine import CombineResult
    from judgebench.services.compare_judges import ComparisonResult
    from judgebench.services.construct import ConstructReport
    from judgebench.services.diff import DiffResult
    from judgebench.services.escalate import EscalateResult
    from judgebench.services.escalate_cost import CascadeCost
    from judgebench.services.estimate import EstimateResult
    from judgebench.services.items import ItemsResult
    from judgebench.services.listwise import ListwiseReport
    from judgebench.services.meta_eval_results import CeilingRow, MetaEvalResult, MetricRow
    from judgebench.services.pairwise import PairwiseMetaEvalResult, PairwiseRow
    from judgebench.services.power import PowerReport
    from judgebench.services.repeats import RepeatsRow
    from judgebench.services.runs import Call, LogEntry, LogsResult, RunRow, RunsResult
    from judgebench.services.score_escalate import EscalateRun
    from judgebench.services.transitivity import TransitivityReport
    from meta_eval.aggregation import RuleResult


def table(table: Table, digits: int = 4) -> str:
    """`table` as aligned columns: numbers right-aligned, floats to `digits` decimals, None
    as "-"."""
    cells = shown_cells(table, digits, "-")
    numbers = numeric(table)
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(table.columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if numbers[i] else v.ljust(w)
                         for i, (v, w) in enumerate(zip(values, widths, strict=True))).rstrip()

    return "\n".join([line(table.columns), *(line(row) for row in cells)])


def failed_lines(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per column with failed cells (judgebench.tables.failed): how many, how they were counted
    and what told them from never-judged ones."""
    return [f"  {column}: {f['rows']} failed, counted {f['counted_as']} (told by "
            f"{f['told_by']})" for column, f in cells.items() if f["rows"]]


def aligned(header: list[str], rows: list[list[str]]) -> str:
    """Cells of text in left-aligned columns two spaces apart (no trailing spaces)."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
             for line in [header, *rows]]
    return "\n".join(lines)


# -- meta-eval ------------------------------------------------------------------------------
BETTER = {"higher": "", "lower": " (lower is better)", "zero": " (best at 0)"}
CLUSTER_NOTE = ("cluster: metrics in one cluster are not significantly different; "
                "cluster k+1 is significantly worse than a member of cluster k.")


def meta_eval(result: MetaEvalResult, *, verbose: bool = False) -> str:
    """The readable table: one block per human column and statistic (the ceilings of one
    statistic together), metrics best first; `verbose` adds each block's pairwise tests."""
    from judgebench.services.meta_eval_results import CeilingRow

    blocks: dict[tuple[str, str, str, str], list[MetricRow | CeilingRow]] = {}
    for row in result.rows:
        key = ("" if isinstance(row, CeilingRow) else row.human, row.task.statistic,
               row.task.level, row.task.grouping)
        blocks.setdefault(key, []).append(row)
    lines: list[str] = []
    for (human, statistic, _, _), rows in blocks.items():
        convention = header(result.failed_as, failed=any_failed(
            row.failed for row in rows if not isinstance(row, CeilingRow)))
        lines += ["", " · ".join(filter(None, [_title(human, statistic, rows[0]), convention]))]
        width = max(len(row.metric) for row in rows)
        lines += [_ceiling_line(row, width) if isinstance(row, CeilingRow)
                  else _metric_line(row, width) for row in rows]
        for row in rows:
            if not isinstance(row, CeilingRow) and row.confusion is not None:
                lines += _confusion_lines(row.metric, row.confusion)
        if verbose:
            lines += _test_lines([r for r in rows if not isinstance(r, CeilingRow)])
    if result.compare:
        lines += ["", CLUSTER_NOTE]
        lines += [f"test: {signature}" for signature in dict.fromkeys(
            test_signature(block.task) for block in result.blocks if block.task.compare)]
    lines += repeats_lines(result.repeats)
    return "\n".join(lines).lstrip("\n")


def repeats_lines(rows: Sequence[RepeatsRow]) -> list[str]:
    """The judges drawn with `score --repeats K` against themselves (judgebench.services.
    repeats): one line of test-retest statistics each, pass@k/pass^k when binary, and per
    human column the noise ceiling."""
    if not rows:
        return []
    lines = ["", "repeats · a judge against itself over its draws"]
    width = max(len(row.metric) for row in rows)
    for row in rows:
        r = row.reliability
        lines.append(f"  {row.metric:<{width}}  K={row.repeats}  n={r.units}  "
                     f"ICC(1)={_num(r.icc)}  ICC(K)={_num(r.icc_mean)}  "
                     f"alpha={_num(r.alpha)}  spread={_num(r.spread)}  "
                     f"flips={_num(r.flip_share)}")
        if row.pass_at:
            k = row.repeats
            lines.append(f"  {'':<{width}}  pass@1={_num(row.pass_at[1])}  "
                         f"pass@{k}={_num(row.pass_at[k])}  pass^{k}={_num(row.pass_hat[k])}")
        for human, n in row.noise.items():
            lines.append(f"  {'':<{width}}  {human}: r={_num(n.agreement)}  "
                         f"ceiling sqrt(ICC(K))={_num(n.ceiling)}  "
                         f"disattenuated={_num(n.disattenuated)}  "
                         f"noise explains {_num(n.noise_share)} of the gap")
    return lines


def _num(value: float) -> str:
    return f"{value:.3f}" if value is not None and math.isfinite(value) else "n/a"


def _title(human: str, statistic: str, first: MetricRow | CeilingRow) -> str:
    title = f"{human or 'raters'} · {statistic}{BETTER[get(statistic).better]} · {first.task.level}"
    if first.task.level == "segment":
        title += f", grouping {first.task.grouping}"
    return title


def _test_lines(rows: list[MetricRow]) -> list[str]:
    """Every pairwise test of a compared block: `a > b  p=...` (one-sided, H1: a is better)."""
    tests = [(row.metric, t) for row in rows for t in row.comparisons]
    if not tests:
        return []
    width = max(len(f"{a} > {t.against}") for a, t in tests)
    lines = [f"  p-values ({test_signature(rows[0].task)}; the first is a):"]
    for a, t in tests:
        c = t.test
        how = f"{c.resamples} resamples" if c.resamples else "closed form"
        early = ", stopped early" if c.p_value_early else ""
        lines.append(f"    {f'{a} > {t.against}':<{width}}  p={c.p_value:.4g}  "
                     f"delta={c.delta:.4f}  ({how}{early})")
    return lines


def _confusion_lines(metric: str, table: dict) -> list[str]:
    """The judge x human table of a categorical statistic (up to 12 categories)."""
    labels = table["human_labels"]
    if len(labels) > 12:
        return [f"  confusion of {metric}: {len(labels)} categories, see --json"]
    cell = max(4, *(len(str(v)) + 1 for v in (*labels, table["n"])))
    lines = [f"  confusion of {metric} (rows: its scores; columns: human, rounded half up)",
             "    " + " " * cell + "".join(f"{v!s:>{cell}}" for v in labels)]
    lines += ["    " + f"{label!s:>{cell}}" + "".join(f"{c:>{cell}}" for c in counts)
              for label, counts in zip(table["metric_labels"], table["counts"], strict=True)]
    return lines


def _value(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:7.4f}"


def _ceiling_line(row: CeilingRow, width: int) -> str:
    return "  ".join([f"  {row.metric:<{width}}", _value(row.value), f"n={row.n}"])


def _metric_line(row: MetricRow, width: int) -> str:
    parts = [f"  {row.metric:<{width}}", _value(row.value)]
    for describe in _METRIC_PARTS:
        parts += describe(row)
    return "  ".join(parts)


def _orientation_part(row: MetricRow) -> list[str]:
    if not row.info.higher_is_better and not get(row.task.statistic).on_scale:
        return ["(lower is better: negated)"]
    return []


def _corpus_part(row: MetricRow) -> list[str]:
    if not row.outcome.given:
        return []
    return ["[corpus score]", "not compared"] if row.task.compare else ["[corpus score]"]


def _error_part(row: MetricRow) -> list[str]:
    return [row.outcome.error] if row.outcome.error else []


def _ci_part(row: MetricRow) -> list[str]:
    parts = [] if row.ci is None else [f"[{row.ci[0]:.4f}, {row.ci[1]:.4f}]"]
    extra = row.outcome.result.extra
    if "analytic_ci_low" in extra:
        method = str(extra["analytic_ci_method"]).split("|", 1)[0]
        parts.append(f"{method} [{extra['analytic_ci_low']:.4f}, "
                     f"{extra['analytic_ci_high']:.4f}]")
    elif "analytic_ci_note" in extra:
        parts.append(f"({extra['analytic_ci_note']})")
    return parts


def _count_part(row: MetricRow) -> list[str]:
    """The units the value is over, those skipped, and the failed rows and how they counted."""
    result = row.outcome.result
    parts = [f"n={result.n}"]
    if result.skipped:
        parts.append(f"skipped={result.skipped}")
    if row.failed and row.failed["rows"]:
        parts.append(f"failed={row.failed['rows']} ({row.failed['counted_as']})")
    return parts


def _ranking_part(row: MetricRow) -> list[str]:
    """The tie threshold, the significance cluster and the share of the ceiling."""
    o = row.outcome
    parts = []
    if row.epsilon is not None:
        parts.append(f"eps={row.epsilon:.4g}")
    if o.cluster is not None:
        parts.append(f"cluster {o.cluster}")
    if o.ceiling_fraction is not None:
        parts.append(f"{100 * o.ceiling_fraction:.0f}% of ceiling")
    return parts


def _bounds_part(row: MetricRow) -> list[str]:
    bounds = (row.extra or {}).get("missing_bounds")
    if not (bounds and bounds["cells"]):
        return []
    low, high = (_value(bounds[k]).strip() for k in ("low", "high"))
    return [f"bounds [{low}, {high}]{'' if bounds['exact'] else ' (at least)'} over "
            f"{bounds['cells']} missing cells"]


def _tipping_part(row: MetricRow) -> list[str]:
    tip = (row.extra or {}).get("tipping_point")
    if not (tip and tip["of"]):
        return []
    if tip["cells"] is not None:
        return [f"tips below {tip['against']} at {tip['cells']}/{tip['of']} failed"]
    return [f"stays above {tip['against']} with all {tip['of']} failed against it"]


def _sequential_part(row: MetricRow) -> list[str]:
    seq = (row.extra or {}).get("sequential")
    if not seq:
        return []
    return [f"sequential: cluster {seq['cluster']} after {seq['items_used']}/"
            f"{seq['items_total']} items" + ("" if seq["settled"] else
                                             " (not settled: items exhausted)")]


def _sensitivity_part(row: MetricRow) -> list[str]:
    return [part for s in (row.extra or {}).get("system_sensitivity", [])
            for part in _system_sensitivity_parts(s)]


def _system_sensitivity_parts(s: Mapping[str, Any]) -> list[str]:
    """One system-sensitivity analysis: how often the metric wins without some systems (or
    over resampled ones), how often its cluster changes, which systems its lead rests on."""
    if s["kind"] == "leave-k-out":
        what, how = "without", f"{s['k']} system(s)"
    else:
        what, how = "over", f"{s['resamples']} system resamples"
    tied = s.get("tied_share") or 0.0
    parts = [f"wins {100 * s['winner_share']:.0f}% {what} {how}"
             + (f" (a tied lead counted as shared, {100 * tied:.0f}% tied)" if tied else "")]
    if "cluster_changed" in s:
        parts.append(f"cluster changes {100 * s['cluster_changed']:.0f}%")
    if s["study_winner"] and s.get("flips"):
        left = ", ".join("+".join(x) for x in s["flips"][:3])
        parts.append(f"loses the lead without {left}{' ...' if len(s['flips']) > 3 else ''}")
    return parts


# The parts of a metric's line after its name and value, in the order they are printed.
_METRIC_PARTS: tuple[Callable[[MetricRow], list[str]], ...] = (
    _orientation_part, _corpus_part, _error_part, _ci_part, _count_part, _ranking_part,
    _bounds_part, _tipping_part, _sequential_part, _sensitivity_part)


# -- meta-eval --pairwise -------------------------------------------------------------------
def _pairwise_cell(row: PairwiseRow | None) -> str:
    if row is None:
        return "-"
    r = row.result.result
    text = "n/a" if row.to_dict()["value"] is None else f"{r.value:.4f}"
    if r.ci_low is not None and r.ci_high is not None:
        text += f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
    return text


def pairwise_meta_eval(result: PairwiseMetaEvalResult) -> str:
    """One block per (human column, category): a row per judge, a column per statistic (the
    human-free ones, consistency, tie-rate and kappa-orders, repeated in every block)."""
    from judgebench.services.pairwise import CEILING
    from meta_eval.pairwise_eval import CALIBRATION, HUMAN_FREE, STATISTICS

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
                table.append([judge, *(_pairwise_cell(find(judge, s)) for s in shown)])
                accuracy = find(judge, "accuracy")
                if accuracy is not None and accuracy.result.cluster is not None:
                    table[-1][0] += f" (cluster {accuracy.result.cluster})"
                if accuracy is not None and accuracy.result.ceiling_fraction is not None:
                    table[-1][0] += (f" ({100 * accuracy.result.ceiling_fraction:.0f}% of "
                                     "ceiling)")
            convention = header(result.failed_as, failed=any_failed(
                r.result.failed for r in rows if r.result.category == category
                and r.result.human in (None, human)))
            title = " · ".join(filter(None, [human, f"human ties {ties}", convention]))
            if category is not None:
                title += f" · {rows[0].by} = {category}"
            lines += ["", title, aligned(table[0], table[1:])]
    failures = _pairwise_failures(result)
    if failures:
        lines += ["", "failed verdicts (pairs):", *(f"  {f}" for f in failures)]
    if result.compare:
        lines += ["", "cluster: judges in one cluster are not significantly different in "
                  "accuracy (paired test on per-pair credit: exact McNemar, or sign-flip)."]
    lines += repeats_lines(result.repeats)
    return "\n".join(lines).lstrip("\n")


def _pairwise_failures(result: PairwiseMetaEvalResult) -> list[str]:
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


# -- aggregate ------------------------------------------------------------------------------
def rules(rules: list[RuleInfo]) -> str:
    """`aggregate --list-rules`: a line per rule (and one for its missing-score policy)."""
    lines = []
    for rule in rules:
        options = f" [options: {', '.join(rule.options)}]" if rule.options else ""
        lines.append(f"{rule.name:<15} {'+'.join(rule.inputs):<17} "
                     f"{rule.description}{options}")
        if rule.missing:
            lines.append(f"{'':<15} {'':<17} missing scores: {rule.missing}")
    return "\n".join(lines)


def _fmt(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def aggregate(result: AggregateResult) -> str:
    """The rankings side by side, then each rule's extras, failures, agreement between the
    rules and with people, bootstrap, make-win and the failed cells."""
    good = [(o, o.result) for o in result.ok if o.result is not None]
    width = max((len(o.spec) for o in result.outcomes), default=0)
    sections = [_rankings(good, width), _extras(good),
                [f"{o.spec}: failed: {o.reason}" for o in result.failed],
                _agreement(good), _against_people(good, result.human_source),
                _bootstraps(good), _make_win(good, result.make_win), _bt_models(good),
                _failed_cells(result)]
    return "\n".join(line for section in sections for line in section)


def _interval(x: Interval) -> list[str]:
    return [_figure(x.estimate), _figure(x.se), f"[{_figure(x.low)}, {_figure(x.high)}]"]


def _bt_models(good: Ranked) -> list[str]:
    """bradley-terry's order effect and style-controlled ranking, each with its signature."""
    lines: list[str] = []
    for o, _ in good:
        effect = o.order_effect
        if effect is not None:
            lines += ["", f"{o.spec}: order effect (position bias: logit P(first wins) = "
                          "theta_first - theta_second + h; h > 0 favours the response shown "
                          "first), from " + " and ".join(effect.columns)]
            if effect.effect is None:
                lines.append(f"  no estimate: {effect.reason}")
            else:
                lines.append(aligned(["  h", "se", f"{effect.level:.0%} CI", "judgements",
                                      "ties left out"],
                                     [["  " + _figure(effect.effect.estimate),
                                       *_interval(effect.effect)[1:],
                                       _figure(effect.judgements), str(effect.ties_left_out)]]))
            lines.append(f"  signature: {effect.signature}")
        style = o.style
        if style is None:
            continue
        lines += ["", f"{o.spec}: style control ({', '.join(style.controls)}; "
                      f"{style.comparisons} comparisons, ties as half a win in both fits)"]
        if not style.ok:
            lines += [f"  no estimate: {style.reason}", f"  signature: {style.signature}"]
            continue
        raw, controlled = style.ranks("raw"), style.ranks("controlled")
        ci = f"{style.level:.0%} CI"
        order = sorted(range(len(style.systems)), key=lambda i: -style.controlled[i].estimate)
        rows = [["  " + style.systems[i], str(controlled[style.systems[i]]),
                 *_interval(style.controlled[i]), str(raw[style.systems[i]]),
                 *_interval(style.raw[i])] for i in order]
        lines.append(aligned(["  system", "rank", "controlled", "se", ci, "raw rank", "raw",
                              "se", ci], rows))
        lines += ["  coefficients (log-odds per standard deviation of A's minus B's feature):",
                  aligned(["    covariate", "coefficient", "se", ci],
                          [["    " + name, *_interval(c)] for name, c in
                           zip(style.covariates, style.coefficients, strict=True)]),
                  f"  signature: {style.signature}"]
    return lines


Ranked = list[tuple["RuleOutcome", "RuleResult"]]


def _failed_cells(result: AggregateResult) -> list[str]:
    """The convention, and each column's failed rows and how they were counted."""
    convention = header(result.failed_as, failed=any_failed(result.failed_cells.values()))
    return ["", convention, *failed_lines(result.failed_cells)] if convention else []


def _ranked_cells(ranked: RuleResult) -> list[str]:
    """A ranking's column: each system with the rule's score for it (a rule without scores,
    such as kemeny, ranks only), tied ones marked with their shared rank."""
    ties = ranked.ties
    tied = {s: i for i, tier in enumerate(ties) for s in tier}
    rank_of = {s: position for position, s in enumerate(ranked.ranking, start=1)}
    scores = ranked.to_dict()["scores"]
    cells = []
    for s in ranked.ranking:
        cell = s if scores is None else f"{s} {_score(scores.get(s))}"
        cells.append(f"{cell} (={min(rank_of[t] for t in ties[tied[s]])})" if s in tied
                     else cell)
    return cells


def _score(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"


def _rankings(good: Ranked, width: int) -> list[str]:
    if not good:
        return []
    depth = max(len(r.ranking) for _, r in good)
    columns = [cells + [""] * (depth - len(cells)) for cells in (_ranked_cells(r) for _, r in good)]
    rows = [[str(i + 1), *[col[i] for col in columns]] for i in range(depth)]
    lines = [aligned(["rank", *[o.spec for o, _ in good]], rows), "", "winners:"]
    lines += [f"  {o.spec:<{width}}  {', '.join(r.winners) or 'none'}" for o, r in good]
    notes = [(o.spec, r.note) for o, r in good if r.note]
    if notes:
        lines += ["notes:", *[f"  {spec:<{width}}  {note}" for spec, note in notes]]
    return lines


def _extras(good: Ranked) -> list[str]:
    """Per rule with per-system figures (win rates' standard errors, rating intervals): one
    table, a row per ranked system."""
    lines: list[str] = []
    for o, r in good:
        if not r.extra:
            continue
        keys = list(r.extra)
        scores = r.scores or {}
        rows = [[system, _figure(scores.get(system)),
                 *[_figure(r.extra[key].get(system)) for key in keys]]
                for system in r.ranking if system in scores]
        lines += [f"\n{o.spec}:", aligned(["  system", "score", *keys],
                                         [["  " + row[0], *row[1:]] for row in rows])]
    return lines


def _figure(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1e4 else f"{value:.6g}"
    return str(value)


def _agreement(good: Ranked) -> list[str]:
    if len(good) < 2:
        return []
    names = [o.spec for o, _ in good]
    rows = [[o.spec, *[("1" if o.spec == b else _fmt((o.agreement or {}).get(b)))
                       for b in names]] for o, _ in good]
    return ["\nKendall tau-b between the rules' rankings:", aligned(["", *names], rows)]


def _against_people(good: Ranked, source: str | None) -> list[str]:
    if source is None or not good:
        return []
    rows = []
    for o, _ in good:
        assert o.human is not None
        h = o.human.agreement.to_dict()
        rows.append([o.spec, _fmt(h["kendall_tau"]), _fmt(h["pairwise_accuracy"]),
                     str(h["n_systems"])])
    return [f"\nAgainst people ({source}):",
            aligned(["rule", "kendall_tau", "pairwise_accuracy", "systems"], rows)]


def _bootstraps(good: Ranked) -> list[str]:
    boots = [(o.spec, o.bootstrap) for o, _ in good if o.bootstrap is not None]
    if not boots:
        return []
    b0 = boots[0][1]
    lines = [f"\nBootstrap: {b0.n} resamples of the voters (seed {b0.seed}), "
             f"{b0.level:.0%} rank intervals; P(win) splits ties:"]
    for spec, b in boots:
        d = b.to_dict()
        failed = f", {b.n_failed} failed resamples" if b.n_failed else ""
        lines.append(f"{spec}: top-1 stability {_fmt(d['top1_stability'])}, "
                     f"top-{b.k} stability {_fmt(d['topk_stability'])}, "
                     f"mean tau to the full ranking {_fmt(d['mean_tau'])}{failed}")
        rows = [["  " + system, "-" if s["rank_low"] is None
                 else f"{s['rank_low']:g}-{s['rank_high']:g}", _fmt(s["p_win"])]
                for system, s in d["systems"].items()]
        lines.append(aligned(["  system", "rank", "P(win)"], rows))
    return lines


def _make_win(good: Ranked, system: str | None) -> list[str]:
    wins = [(o.spec, o.make_win) for o, _ in good if o.make_win is not None]
    if system is None or not wins:
        return []
    lines = [f"\nWhich voter weights make {system} win:"]
    lines += [_make_win_line(spec, m) for spec, m in wins if m.supported]
    unsupported = [(spec, m) for spec, m in wins if not m.supported]
    if unsupported:
        lines.append(f"  not computed for {', '.join(spec for spec, _ in unsupported)}: "
                     f"{unsupported[0][1].note}")
    return lines


def _make_win_line(spec: str, m: MakeWin) -> str:
    if m.found is None:
        return f"  {spec}: {m.error}"
    found = m.found
    if not (found.possible or found.can_tie):
        return f"  {spec}: no (best margin {found.margin:.4g}): {found.note}"
    weights = ", ".join(f"{k}={v:.3g}" for k, v in (found.weights or {}).items() if v > 0)
    verdict = "yes" if found.possible else "only a tie for first"
    return (f"  {spec}: {verdict} (margin {found.margin:.4g}); weights: {weights}"
            + (f" [{found.note}]" if found.note else ""))


# -- combine --------------------------------------------------------------------------------
def combine(result: CombineResult) -> str:
    lines = [f"column: {result.column}",
             f"wrote {result.out} ({result.scored} of {result.rows} rows scored out of fold; "
             f"{result.folds} folds over items)", "",
             f"out-of-fold {result.settings[0].statistic if result.settings else ''} "
             "against " + result.human]
    width = max(len(m) for m in [*result.inputs, "combination"])
    for setting in result.settings:
        label = ("system" if setting.level == "system"
                 else f"segment, grouping {setting.grouping}")
        best = setting.best
        lines.append(f"  {label}:")
        lines.append(f"    {'combination':<{width}}  {_value(setting.combined)}")
        for name, value in setting.components.items():
            mark = "  (best component)" if best and best[0] == name else ""
            lines.append(f"    {name:<{width}}  {_value(value)}{mark}")
    weights = result.weights
    if "per_unit" in weights:
        lines += ["", "weights (full-data fit, standardised metrics; for reading only):"]
        lines += [f"  {m}: {w:+.4f}" for m, w in weights["standardised"].items()]
    elif "relevance" in weights:
        lines += ["", f"kernel: {weights['fitted_kernel']}",
                  "relevance (1 / length scale, full-data fit):"]
        lines += [f"  {m}: {w:.4f}" for m, w in weights["relevance"].items()]
    return "\n".join(lines)


# -- items ----------------------------------------------------------------------------------
def _maybe(value: float | None, spec: str = ".3f") -> str:
    return "n/a" if value is None else format(value, spec)


SHOWN_FLAGS = 20


def items(result: ItemsResult) -> str:
    summary = result.summary()
    lines = [f"{result.metric} · {result.model} · outcome: {result.outcome}",
             f"{summary['informative_items']} of {summary['items']} items informative, "
             f"{summary['systems']} systems; EM {summary['iterations']} cycles, converged "
             f"{summary['converged']}; log-likelihood Rasch {result.rasch_loglik:.2f}, "
             f"2PL {result.two_pl.loglik:.2f}", ""]
    rows = result.system_rows()
    width = max(len(r["system"]) for r in rows)
    lines.append(f"  {'rank':>4}  {'system':<{width}}  ability  [{int(result.ci * 100)}% CI]"
                 "        raw")
    for r in rows:
        interval = (f"[{_maybe(r['ci_low'])}, {_maybe(r['ci_high'])}]" if r["ci_low"] is not None
                    else f"({r['extreme']})")
        lines.append(f"  {r['rank']:>4}  {r['system']:<{width}}  {_maybe(r['ability']):>7}  "
                     f"{interval:<20}  {r['raw_score']}/{r['answered']}")
    flags = [r for r in result.item_rows() if r["flag"]]
    lines += ["", f"flagged items: {len(flags)}"]
    lines += [f"  {r['item']}: {r['flag']}" for r in flags[:SHOWN_FLAGS]]
    if len(flags) > SHOWN_FLAGS:
        lines.append(f"  ... and {len(flags) - SHOWN_FLAGS} more (--json lists all)")
    sub = result.subset_row()
    if sub is not None:
        lines += ["", f"recommended subset: {sub['size']} items ({sub['method']}); Kendall "
                      f"tau with the full ranking {_maybe(sub['kendall_tau'])} (random subsets "
                      f"of that size: {_maybe(sub['random_kendall_tau'])} ± "
                      f"{_maybe(sub['random_kendall_tau_sd'])}, {sub['random_draws']} draws)",
                  "  " + ", ".join(sub["items"])]
    pw = result.power_row()
    if pw is not None:
        needed = pw["items_needed"]
        lines += ["", f"power (top {pw['top_k']}, alpha {pw['alpha']}, power {pw['power']}; "
                      f"{pw['method']}): {pw['items_now']} informative items now; "
                      f"{'n/a (tied abilities)' if needed is None else int(needed)} needed"]
        for p in pw["pairs"]:
            lines.append(f"  {p['better']} > {p['worse']}: difference {p['difference']:.3f}, "
                         f"z {p['z']:.2f}, p {p['p_value']:.3g}, "
                         f"{'separated' if p['separated'] else 'not separated'}; items "
                         f"needed {_maybe(p['items_needed'], '.0f')}")
    if summary["notes"]:
        lines += ["", *[f"note: {n}" for n in summary["notes"]]]
    return "\n".join(lines)


# -- compare-judges -------------------------------------------------------------------------
def compare_judges(result: ComparisonResult, *, table: Path, judge_a: str, judge_b: str,
                   human: str | None) -> str:
    """What was compared, each column's failed cells, then a line per statistic."""
    convention = header(result.failed_as, failed=any_failed(result.failed.values()))
    lines = [f"{result.shape} table {table}: A = {judge_a}, B = {judge_b}"
             + (f", human = {human}" if human else "")
             + (f", human ties {result.human_ties}" if result.human_ties else "")
             + (f", {convention}" if convention else "")]
    lines += failed_lines(result.failed)
    for e in result.estimates:
        interval = ("" if e.ci_low is None or e.ci_high is None
                    else f"  [{e.ci_low:.4f}, {e.ci_high:.4f}]")
        lines.append(f"  {e.statistic:<16} {e.value:.4f}{interval}  (n={e.n})")
    return "\n".join(lines)


# -- runs and logs --------------------------------------------------------------------------
RUNS_HEADER = (f"{'ID':>4}  {'STARTED (UTC)':<19}  {'TIME':>7}  {'ENDED':<11}  {'OK':>6}  "
               f"{'FAILED':>6}  {'COST':>9}  METRICS | COMMAND")


def runs(result: RunsResult, store: Path) -> str:
    """`judgebench runs`: a header and a line per run, or that the store has none."""
    if not result.runs:
        return f"no runs in {store}"
    lines = [RUNS_HEADER]
    for run in result.runs:
        lines.append(run_line(run))
        lines += [f"      warning: {warning}" for warning in run.warnings]
    return "\n".join(lines)


def run_line(run: RunRow) -> str:
    """One run on one line: id, start, duration, how it ended, ok and failed scores, cost,
    its columns and its command line."""
    started = run.started[:19].replace("T", " ")
    metrics = ", ".join(run.metrics or {}) or "-"
    return (f"{run.id:>4}  {started:<19}  {duration(run.wall_s):>7}  "
            f"{run.outcome or 'unrecorded':<11}  {_count(run.ok):>6}  {_count(run.failed):>6}  "
            f"{cost(run.cost_usd):>9}  {metrics} | {run.command or '-'}")


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def cost(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:.4f}"


def _count(n: int | None) -> str:
    return "-" if n is None else str(n)


def logs(result: LogsResult) -> str:
    """`judgebench logs`: a block per score, each followed by an empty line."""
    return "".join(block(entry) + "\n" for entry in result.entries)


def logs_note(result: LogsResult) -> str | None:
    """What `logs` says on stderr after the blocks: how many it left out, or that none
    matched."""
    shown = len(result.entries)
    if shown < result.matched:
        return (f"showing {shown} of {result.matched} scores of run {result.run.id}: -n 0 "
                "shows them all")
    if not shown:
        reused = (f" (it reused {result.run.reused} scores of earlier runs)"
                  if result.run.reused else "")
        return f"run {result.run.id} wrote no score that matches{reused}"
    return None


def block(entry: LogEntry) -> str:
    """One score as a block of lines: a head line, then what the judge was asked and said."""
    where = (f"item {entry.item!r} system {entry.system!r}" if entry.item is not None
             else f"corpus, system {entry.system!r}")
    if entry.extra.get("turn") is not None:  # a conversation's judged turn
        where += f" turn {entry.extra['turn']}"
    head = f"run {entry.run_id} | {entry.column or entry.metric} | {where} | {entry.status}"
    if entry.reason:
        head += f": {entry.reason}"
    lines = [head]
    facts = [f"value {'-' if entry.value is None else f'{entry.value:g}'}"]
    if entry.tokens_in is not None or entry.tokens_out is not None:
        facts.append(f"tokens {_n(entry.tokens_in)} in / {_n(entry.tokens_out)} out")
    if entry.cost_usd is not None:
        facts.append(f"cost ${entry.cost_usd:.6f}")
    if entry.latency_s is not None:
        facts.append(f"latency {entry.latency_s:.2f}s")
    lines.append("  " + "   ".join(facts))
    for number, call in enumerate(entry.calls, start=1):
        lines += _call_lines(call, number, len(entry.calls))
    if entry.raw and not any(call.answer for call in entry.calls):
        lines += ["  answer:", _indent(entry.raw)]
    if entry.rationale:
        lines += ["  rationale:", _indent(entry.rationale)]
    from judgebench.render.dag_nodes import path_log_lines
    from judgebench.render.spans import span_log_lines

    span_lines, rest = span_log_lines(entry.extra)
    lines += span_lines
    path_lines, rest = path_log_lines(dict(rest or {}))
    lines += path_lines
    extra = dict(rest or {})
    for key in [k for k, v in extra.items() if _units(v)]:
        lines += _unit_lines(key, extra.pop(key))
    if extra:
        lines.append(f"  extra: {json.dumps(extra, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


def _units(value: object) -> bool:
    """Whether an `extra` entry is a list of judged units (a multi-call judge's claims,
    passages, questions: dicts with a `text` and a `status`)."""
    return (isinstance(value, list) and bool(value)
            and all(isinstance(u, dict) and "text" in u and "status" in u for u in value))


def _unit_lines(key: str, units: list[dict[str, object]]) -> list[str]:
    """Each unit on a line (its verdict, or its status and reason), then its other fields."""
    lines = [f"  {key} ({len(units)}):"]
    for number, unit in enumerate(units, start=1):
        mark = (unit.get("verdict") or "ok") if unit.get("status") == "ok" else unit["status"]
        lines.append(f"    {number}. [{mark}] {unit['text']}")
        for field, value in unit.items():
            if field not in ("text", "status", "verdict") and value not in (None, ""):
                shown = f"{value:.4f}" if isinstance(value, float) else str(value)
                lines.append(_indent(f"{field}: {shown}", 7))
    return lines


def _call_lines(call: Call, number: int, total: int) -> list[str]:
    title = f"  call {number} of {total} ({call.key[:12]})"
    if not call.found:
        return [f"{title}: not in the judge cache (another --cache, or cache=false)"]
    lines = [f"{title}:"]
    if call.messages:
        for message in call.messages:
            lines += [f"    [{message.get('role', '?')}]", _indent(message.get("content", ""), 6)]
    elif call.prompt is not None:
        lines += ["    [prompt]", _indent(call.prompt, 6)]
    if call.error:
        lines.append(f"    failed: {call.error}")
    elif call.answer is not None:
        lines += ["    [answer]", _indent(call.answer, 6)]
    return lines


def _indent(text: str, spaces: int = 4) -> str:
    return textwrap.indent(text.rstrip("\n") or "(empty)", " " * spaces, lambda _: True)


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


# -- metrics and plugins --------------------------------------------------------------------
#: `judgebench metrics`: the widest line; a longer description is cut to fit.
METRICS_WIDTH = 100
METRICS_FOOTER = ("`judgebench metrics NAME`: a metric's card (what it needs, direction, range, "
                  "level,\nevery option with its default, what to cite); --json: every field.")


def metrics(rows: list[dict[str, Any]]) -> str:
    """`judgebench metrics`: a line per metric (name, kind, its description cut to fit
    `METRICS_WIDTH`), then where the rest is (the card)."""
    name_width = max(len(row["name"]) for row in rows)
    kind_width = max(len(row["kind"]) for row in rows)
    room = METRICS_WIDTH - name_width - kind_width - 4
    table = [[row["name"], row["kind"], _one_line(row["description"], room)]
             for row in rows]
    return aligned(["metric", "kind", "what it is"], table) + "\n\n" + METRICS_FOOTER


def _one_line(text: str, width: int) -> str:
    """A description on one line of at most `width` characters (cut at a word, with ...)."""
    line = " ".join(text.split())
    return line if len(line) <= width else textwrap.shorten(line, width, placeholder="...")


def plugins(rows: list[dict[str, Any]]) -> str:
    """`judgebench plugins`: a line per plugin, its version and hooks or why it failed."""
    return "\n".join(
        f"{row['name']:<24} {row['version']:<10} "
        + (f"FAILED: {row['error']}" if row["error"] else ", ".join(row["hooks"]))
        for row in rows)


def metric_card(card: MetricCard) -> str:
    """The card as text for the terminal."""
    d = card.to_dict()
    level = d["level"] + (", with a corpus score (not the mean of its segment scores)"
                          if d["has_corpus"] else "")
    facts = Table(["", ""], [
        ["kind", d["kind"]],
        ["needs", ", ".join(d["requires"]) or "nothing"],
        ["direction", "higher is better" if d["higher_is_better"] else "lower is better"],
        ["range", _range(*d["value_range"])],
        ["level", level],
        ["deterministic", "yes" if d["deterministic"] else "no"],
    ])
    empty_text = card.entry.info.empty_text
    empty = empty_text.describe() if empty_text is not None else "(not declared)"
    lines = [f"{d['name']} (version {d['version']}; plugin {d['plugin']} "
             f"{d['plugin_version']})".replace(" )", ")"),
             *_wrapped(d["description"] or "(no description)", ""), "",
             *table(facts).splitlines()[1:], "", "options:",
             *_options(card), "", "empty text:", *_wrapped(empty, "  "),
             "", "citation:", *_wrapped(d["citation"] or "(none given)", "  "),
             "", "example:", f"  {d['example']}"]
    return "\n".join(lines)


def _options(card: MetricCard) -> list[str]:
    if card.options is None:
        return ["  not declared (registered as a factory function)"]
    lines = ["  none"] if not card.options else []
    if card.options:
        described = any(o.description for o in card.options)
        options = Table(["name", "type", "default", "values", *(["description"] * described)], [
            [o.name, o.type, "(required)" if o.required else _default(o.default),
             o.allowed, *([o.description] * described)] for o in card.options])
        lines = ["  " + line for line in table(options).splitlines()]
    if card.extra_options:
        lines.append("  any other option is passed on (see the description)")
    return lines


def _default(value: object) -> str:
    """A default as it is written in a spec: 13a, true, 0.5; '-' for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value)


def _wrapped(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, width=96, initial_indent=indent, subsequent_indent=indent)


def _range(low: float | None, high: float | None) -> str:
    return f"[{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"


# -- score ----------------------------------------------------------------------------------
def score_summary(result: RunResult, output: Path | None, store: Path,
                  has_corpus_file: bool) -> str:
    """What `score` says on stderr when it is done: rows, where they went, the judge cache,
    each column's statuses and signature, and each corpus score's best and worst system."""
    where = f" -> {output}" if output else ""
    lines = [f"scored {result.rows} rows{where} (computed {result.computed}, reused "
             f"{result.reused} from {store})"]
    if result.cached_answers or result.sent_calls or any(
            p.metric.info.kind == "judge" for p in result.metrics):
        lines.append(f"  judge answers: {result.cached_answers} from the judge cache, "
                     f"{result.sent_calls} asked of a model")
    for p in result.metrics:
        counts: Mapping[str, int] = result.statuses.get(p.column, {})
        text = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "corpus only"
        lines.append(f"  {p.column}: {text}\n    {p.signature}")
    direction = {p.column: p.metric.info.higher_is_better for p in result.metrics}
    by_metric: dict[str, list[Any]] = {}
    for c in result.corpus:
        by_metric.setdefault(c.metric, []).append(c)
    for column, rows in by_metric.items():
        higher = direction.get(column, True)
        ok = sorted((c for c in rows if c.value is not None), key=lambda c: c.value,
                    reverse=higher)
        failed = len(rows) - len(ok)
        text = (f"best {ok[0].system} {ok[0].value:.4f}, worst {ok[-1].system} "
                f"{ok[-1].value:.4f} ({'higher' if higher else 'lower'} is better)"
                if ok else "no value")
        lines.append(f"  corpus {column}: {len(rows)} systems, {text}"
                     + (f", {failed} failed" if failed else "")
                     + ("" if has_corpus_file or output is not None
                        else " (--corpus FILE writes them all)"))
    return "\n".join(lines)


def score_failures(result: RunResult, store: Path, top: int) -> str | None:
    """Per metric with failed scores, its `top` most frequent reasons, and where to read
    them all (None: nothing failed)."""
    if not result.failed:
        return None
    lines = [f"{result.failed} score{'' if result.failed == 1 else 's'} failed:"]
    for p in result.metrics:
        reasons = result.reasons(p.column)
        if not reasons:
            continue
        lines.append(f"  {p.column}:")
        for reason in reasons[:top]:
            lines.append(f"    {reason['count']} {reason['status']}: "
                         f"{reason['reason'] or '(no reason)'}")
        if len(reasons) > top:
            rest = sum(r["count"] for r in reasons[top:])
            lines.append(f"    {rest} more, {len(reasons) - top} other reasons")
    run = f" {result.run_id}" if result.run_id is not None else ""
    lines.append(f"see each one: judgebench logs{run} --store {shlex.quote(str(store))} "
                 "--failed")
    return "\n".join(lines)


def score_estimates(rows: list[dict[str, Any]]) -> str:
    """`score --dry-run`: a line per column, its calls, tokens and cost."""
    lines = []
    for row in rows:
        cost = row.get("cost_usd")
        cost_text = "unknown" if cost is None else f"${cost:.4f}"
        lines.append(f"{row['column']}: {row.get('calls', 0)} calls, "
                     f"{row.get('tokens_in', 0)} tokens in, {row.get('tokens_out', 0)} tokens "
                     f"out, cost {cost_text}")
    return "\n".join(lines)


def diff(result: DiffResult) -> str:
    """`judgebench diff`: a block per column (flips, KL/JS, winner and cluster, each
    statistic's change, flips per pair of fingerprints), then what moved."""
    from judgebench.engine.fingerprints import describe

    lines = [f"{result.shape} {result.a} -> {result.b}"
             + (f", human = {result.human}" if result.human else "")]
    for c in result.columns:
        name = c.column_a if c.column_a == c.column_b else f"{c.column_a} -> {c.column_b}"
        lines.append(f"  {name}: {c.units} units, KL(A||B) {c.kl:.4f}, JS {c.js:.4f}, "
                     f"winner {c.winner_a} -> {c.winner_b}"
                     + (f", cluster {c.cluster_a} -> {c.cluster_b}"
                        if c.cluster_a is not None else ""))
        for e in c.estimates:
            interval = ("" if e.ci_low is None or e.ci_high is None
                        else f"  [{e.ci_low:.4f}, {e.ci_high:.4f}]")
            lines.append(f"    {e.statistic:<16} {e.value:.4f}{interval}  (n={e.n})")
        for s in c.statistics:
            interval = ("" if s.ci_low is None or s.ci_high is None
                        else f"  [{s.ci_low:+.4f}, {s.ci_high:+.4f}]")
            lines.append(f"    {s.statistic:<16} {s.value_a:.4f} -> {s.value_b:.4f}  "
                         f"delta {s.delta:+.4f}{interval}"
                         + ("  significant" if s.significant else ""))
        for row in c.flips_by_fingerprint:
            fa = describe(row["fingerprint_a"]) if row["fingerprint_a"] else "-"
            fb = describe(row["fingerprint_b"]) if row["fingerprint_b"] else "-"
            lines.append(f"    answered by {fa} -> {fb}: {row['units']} units, "
                         f"flip rate {row['flip_rate']:.4f}")
    lines.append("  moved: " + ("; ".join(result.moved) or "nothing"))
    if result.moved_by_others:
        lines.append("  moved by the others (scores unchanged): "
                     + "; ".join(result.moved_by_others))
    lines.append(f"  drift: {'yes' if result.drift else 'no'}")
    return "\n".join(lines)


# -- meta-eval --alt-test, --construct, --power-for, --pairwise --transitivity -----------
def alt_test_report(report: AltTestReport) -> str:
    """The readable table: one line per judge, then its annotators' tests."""
    if not report.rows:
        return ""
    lines: list[str] = []
    for criterion in dict.fromkeys(r.criterion for r in report.rows):
        rows = [r for r in report.rows if r.criterion == criterion]
        first = rows[0]
        lines.append(f"alt-test{f' · {criterion}' if criterion else ''} ({first.score}, "
                     f"epsilon {first.epsilon:g}, BY q={first.alpha:g}) · annotators: "
                     f"{', '.join(first.annotators)}")
        width = max(len(r.metric) for r in rows)
        for row in rows:
            r = row.result
            if not r.annotators:
                lines.append(f"  {row.metric:<{width}}  not tested: no annotator has enough "
                             "items")
                continue
            verdict = "PASSED" if r.passed else "failed"
            lines.append(f"  {row.metric:<{width}}  winning rate {r.winning_rate:.2f}  "
                         f"advantage probability {r.advantage_probability:.2f}  {verdict}  "
                         f"n={r.items}")
            for t in r.annotators:
                lines.append(f"    vs {t.annotator}: rho_judge={t.judge_advantage:.3f} "
                             f"rho_annotator={t.annotator_advantage:.3f} p={t.p_value:.4g} "
                             f"{'rejected' if t.rejected else 'not rejected'} (n={t.n})")
    lines.append("A judge passes when it wins against half the annotators or more "
                 "(Calderon et al. 2025).")
    return "\n".join(lines)

def construct_report(report: ConstructReport) -> str:
    """The matrix (metrics x criteria, own criterion starred) and each metric's verdict."""
    if not report.rows:
        return ""
    criteria = list(report.rows[0].values)
    width = max(len(r.metric) for r in report.rows)
    cell = max(9, *(len(c) + 2 for c in criteria))
    lines = [f"construct validity · {report.statistic} · {report.level}, grouping "
             f"{report.grouping} · {report.method}, alpha {report.alpha:g}",
             " " * (width + 2) + "".join(f"{c:>{cell}}" for c in (*criteria, "overall"))]
    for r in report.rows:
        values = "".join(f"{_number(v) + ('*' if c == r.criterion else ' '):>{cell}}"
                         for c, v in r.values.items())
        verdict = ("discriminant" if r.discriminant else
                   "measures overall quality" if r.general else "not discriminant")
        lines.append(f"  {r.metric:<{width}}{values}{_number(r.overall) + ' ':>{cell}}  "
                     f"{verdict}")
    lines.append("*: the metric's own criterion; discriminant: significantly closer to it "
                 "than to every other criterion (Campbell and Fiske 1959).")
    return "\n".join(lines)


def _number(v: float) -> str:
    return f"{v:.4f}" if v == v else "n/a"

def power_report(report: PowerReport) -> str:
    lines = [f"items needed to separate metrics whose Pearson r with {report.human} differs "
             "by delta (Williams' test, segment level)"]
    for a, b, plan in report.rows:
        lines.append(f"  {a} (r={plan.r_a:.3f}) vs {b} (r(A,B)={plan.r_ab:.3f}), delta "
                     f"{plan.delta:g}, alpha {plan.alpha:g}, power {plan.target:g}:")
        for k, (n, p, d) in plan.needed.items():
            who = f"{k} annotator{'s' if k > 1 else ''}" if report.rho is not None \
                else "as piloted"
            lines.append(f"    {who}: " + (f"{n} items (power {p:.3f}, delta {d:.3f})"
                                           if n is not None else "not reachable"))
    return "\n".join(lines)

def transitivity_report(report: TransitivityReport) -> str:
    lines = []
    for name, kind, t in report.rows:
        share = f"{t.share:.3f}" if t.triples else "n/a"
        ci = f" [{t.ci[0]:.3f}, {t.ci[1]:.3f}]" if t.ci else ""
        bt = (f"BT misfit G={t.lr_statistic:.2f} df={t.df} p={t.p_value:.3g}"
              if t.p_value is not None and t.lr_statistic is not None else f"BT: {t.note}")
        lines.append(f"{name} ({kind}): cyclic triples {t.cyclic}/{t.triples} = {share}{ci}"
                     f" · {bt}")
        for pair in t.cycle_pairs[:5]:
            lines.append(f"    {pair['system_a']} vs {pair['system_b']}: in {pair['cycles']} "
                         f"cycle(s), majority {pair['winner']}")
    return "\n".join(lines)


def listwise_report(report: ListwiseReport) -> str:
    """Per judge and human column, each subset's best-of-N accuracy (its interval), the
    pairwise reduction and a random ranking's accuracy; the signatures once."""
    rows = []
    for r in report.rows:
        if r.reason is not None:
            rows.append([r.judge, r.human, r.subset, r.rule, str(r.prompts),
                         str(r.failed_prompts), f"no score: {r.reason}", "", "", ""])
            continue
        ci = f"[{_figure(r.ci_low)}, {_figure(r.ci_high)}]" if r.ci_low is not None else "-"
        rows.append([r.judge, r.human, r.subset, r.rule, str(r.prompts),
                     str(r.failed_prompts), _figure(r.accuracy), ci, _figure(r.pairwise),
                     _figure(r.random)])
    lines = [aligned(["judge", "human", "subset", "rule", "prompts", "failed", "accuracy",
                      f"{report.confidence:.0%} CI", "pairwise", "random"], rows)]
    lines += [f"{r.human}: {r.unlabelled_prompts} prompt(s) of {r.subset} people did not mark, "
              "left out" for r in report.rows if r.unlabelled_prompts and r.judge ==
              report.rows[0].judge]
    lines += ["signature: " + s for s in dict.fromkeys(r.signature for r in report.rows)]
    return "\n".join(lines)


# -- estimate -------------------------------------------------------------------------------
def estimate(result: EstimateResult) -> str:
    """Per system (or overall, or per pair of systems for a win rate): each method's
    estimate, interval and what the judge was worth in labels; judge-only marked biased; an
    undefined estimate as its sentence; then the paired differences, the ranking and the
    signature of each method."""
    what = {"pass-rate": "pass rate", "win-rate": "win rate"}.get(result.statistic, "mean")
    lines = [f"{what} of {result.human}, from the judge {result.judge} and the human labels"]
    records = result.to_dict()
    signatures: dict[str, str] = {}
    groups: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for record in records:
        if record["type"] == "estimate":
            groups.setdefault((record["system"], record.get("against")), []).append(record)
        signatures.setdefault(record["method"], record["signature"])
    shown: set[frozenset[str]] = set()
    for (group, against), rows in groups.items():
        if against is not None:  # a win rate: each pair once, its first system's side
            if frozenset((group, against)) in shown:
                continue
            shown.add(frozenset((group, against)))
        lines += _estimate_group(result, group, against, rows)
    lines += _estimate_differences([r for r in records if r["type"] == "difference"])
    lines += _estimate_ranking([r for r in records if r["type"] == "rank"])
    mirrored = (" Each pair is shown once: the other system's win rate is 1 minus it (the "
                "JSON has both)." if result.statistic == "win-rate" else "")
    lines += ["", "judge-only is biased: its interval is about the judge, not about people; "
              "'worth' = effective labels (human labels alone giving the same interval) "
              "minus the labels used; 'moved' = corrected minus judge-only." + mirrored,
              "signatures:"]
    lines += [f"  {m}: {s}" for m, s in signatures.items()]
    return "\n".join(lines)


def _estimate_group(result: EstimateResult, group: str, against: str | None,
                    records: list[dict[str, Any]]) -> list[str]:
    """One system's (or all items', or one pair's) table of methods, then its notes."""
    first = next(r for r in records if r["method"] == "judge-only")
    people = next(r for r in records if r["method"] == "human-only")
    items = first["items"] if first["items"] is not None else people.get("items")
    labelled = people.get("labels")
    title = ("all items" if result.by is None else
             f"{group} against {against} (win rate of {group})" if against is not None
             else f"{result.by} {group}")
    rows = []
    notes = []
    for r in records:
        if r["point"] is None:
            notes.append(f"  {r['method']}: undefined: {r['undefined']}")
            continue
        rows.append(_estimate_row(r))
        if r.get("caution"):
            notes.append(f"  {r['method']}: caution: {r['caution']}")
        if "target_width" in r:
            notes.append(_target_note(r, unlabelled=(items or 0) - (labelled or 0)))
    level = f"{round(100 * result_confidence(records), 6):g}% interval"
    table = textwrap.indent(aligned(
        ["method", "estimate", level, "labels", "effective", "worth", "moved", "lam"],
        rows), "  ") if rows else "  (no estimate)"
    counted = "" if items is None else (
        f": {items} {'pairs' if against is not None else 'items'}"
        + ("" if labelled is None else f", {labelled} labelled"))
    return ["", f"{title}{counted}", table, *notes]


def result_confidence(records: list[dict[str, Any]]) -> float:
    """The confidence level of a group's intervals (every row of one result shares it)."""
    return next((r["confidence"] for r in records if r.get("confidence") is not None), 0.95)


def _estimate_row(r: dict[str, Any]) -> list[str]:
    interval = f"[{_fmt(r['lower'], 4)}, {_fmt(r['upper'], 4)}]"
    return [r["method"] + (" (biased)" if r["biased"] else ""),
            _fmt(r["point"], 4), interval,
            "-" if r["biased"] else str(r["labels"]),
            _fmt(r.get("effective_labels"), 1),
            _fmt(r.get("labels_worth"), 1),
            "-" if r.get("moved") is None else f"{r['moved']:+.4f}",
            "-" if r.get("lam") is None else f"{r['lam']:.3f}"]


def _target_note(r: dict[str, Any], *, unlabelled: int) -> str:
    """How many more labels reach --target-width, and which items to label next."""
    reach = r["labels_to_reach"]
    if reach is None:
        need = "is out of reach with more labels (the judge-only term is wider)"
    elif reach == 0:
        need = "is reached"
    else:
        need = f"needs about {reach} more labels" + (
            f" (only {unlabelled} items are unlabelled)" if reach > unlabelled else "")
    label_next = f"; label next: {', '.join(r['next_items'])}" if r["next_items"] else ""
    return f"  {r['method']}: width {r['target_width']:g} {need}{label_next}"


def _estimate_ranking(ranks: list[dict[str, Any]]) -> list[str]:
    """The systems by their PPI++ estimates with each rank's simultaneous interval and
    significance cluster (`meta_eval.rank_intervals`)."""
    if not ranks:
        return []
    level = f"{round(100 * ranks[0]['confidence'], 6):g}%"
    return ["", f"ranking by PPI++ (rank interval: all ranks at once at {level}, Bonferroni "
                "over the paired differences; cluster: the WMT walk of one-sided paired "
                f"tests at alpha {1 - ranks[0]['confidence']:g}):",
            textwrap.indent(aligned(
                ["rank", "system", "estimate", "rank interval", "cluster"],
                [[str(r["rank"]), r["system"], _fmt(r["point"], 4),
                  f"[{r['rank_low']}, {r['rank_high']}]", str(r["cluster"])]
                 for r in ranks]), "  ")]


def _estimate_differences(differences: list[dict[str, Any]]) -> list[str]:
    if not differences:
        return []
    return ["", "paired differences (row minus column system, same items, PPI++):",
            textwrap.indent(aligned(
                ["system", "minus", "difference", "interval", "labels", "effective",
                 "excludes 0"],
                [[d["system"], d["against"], f"{d['point']:+.4f}",
                  f"[{d['lower']:+.4f}, {d['upper']:+.4f}]", str(d["labels"]),
                  _fmt(d["effective_labels"], 1), "yes" if d["excludes_zero"] else "no"]
                 for d in differences]), "  ")]


# -- escalate -------------------------------------------------------------------------------
def _escalate_cost(cost: CascadeCost | None,
                   hint: str = "give --cost JUDGE=USD, or --store with its recorded costs"
                   ) -> list[str]:
    """The cascade's cost per item against the strongest judge on every item, or which
    judges lack a price."""
    if cost is None:
        return []
    priced = ", ".join(
        f"{j.judge} {'unknown' if j.per_item is None else f'${j.per_item:.6g}'}"
        f"{'' if j.source is None else f' ({j.source})'} x {j.runs_on} items"
        for j in cost.judges)
    if cost.per_item is None:
        return ["", f"cost: unknown: no price for {', '.join(cost.missing)} ({hint}); "
                    f"{priced}"]
    strongest = cost.strongest_per_item or 0.0
    saving = ("" if cost.saving is None else
              f" ({100 * abs(cost.saving):.1f}% {'saved' if cost.saving >= 0 else 'more'})")
    return ["", f"cost per item: ${cost.per_item:.6g} for the cascade against "
                f"${strongest:.6g} for {cost.strongest} (the strongest) on every item"
                f"{saving}; {priced}"]


def score_escalate(result: EscalateRun) -> str:
    """`score --escalate`: per judge, the rows it scored, its threshold, coverage and
    guaranteed agreement, the rows it kept and sent on, its failures; then the queue, the
    cost paid against the strongest judge on every row, and the signature."""
    lines = [f"score --escalate against {result.human}: {result.items} items, "
             f"{result.labelled} labelled (scored by every judge: the calibration set); "
             f"kept verdicts agree with people >= {1 - result.alpha:g} with probability "
             f">= {1 - result.delta:g}; confidence: {result.confidence}", ""]
    rows = []
    for j in result.judges:
        s = j.stage
        rows.append([s.judge, f"{j.scored}", f"{j.calibration}",
                     "none" if s.threshold is None else f"{s.threshold:.6g}",
                     f"{s.kept}", f"{s.coverage:.3f}", _fmt(s.guaranteed_agreement, 3),
                     f"{_fmt(s.calibration_agreement, 3)} ({s.calibration_kept}/"
                     f"{s.calibration_items})", f"{j.sent_on}", f"{j.failed}"])
    lines.append(textwrap.indent(aligned(
        ["judge", "scored", "calibration", "threshold", "kept", "coverage", "guaranteed",
         "calibration agreement", "sent on", "failed"], rows), "  "))
    lines += [f"  {j.stage.judge} keeps nothing: {j.stage.escalates}" for j in result.judges
              if j.stage.escalates is not None]
    for j in result.judges:
        if j.failed or j.failed_scores:
            why = "; ".join(f"{r['status']}: {r['reason']} ({r['count']})" for r in j.reasons)
            lines.append(f"  {j.stage.judge} FAILED: {j.failed_scores} failed score(s); "
                         f"{j.failed} row(s) without a verdict or a confidence, sent on, "
                         f"never kept: {why}")
    lines += _escalate_cost(result.cost, "give the judge's price, price_in/price_out, or a "
                            "backend that reports its cost")
    decided = sum(j.stage.kept for j in result.judges)
    queue = ("" if result.queue_sample is None else
             f"; recorded as sample {result.queue_sample} of criterion {result.criterion}: "
             f"judgebench label ... --sample-id {result.queue_sample}")
    lines += ["", f"decided by a judge: {decided} of {result.items} items "
              f"({decided / result.items:.3f}); labelling queue: {len(result.queue)} "
              f"unlabelled items{queue}",
              "coverage = share of all items the judge keeps; guaranteed = 1 - alpha, at "
              "probability 1 - delta; sent on = items that reached the judge and it did not "
              "keep", f"signature: {result.signature}"]
    return "\n".join(lines)


def escalate(result: EscalateResult) -> str:
    """Per judge of the cascade: threshold, coverage, guaranteed, calibration and held-out
    agreement, AUGRC; a judge without a threshold as its sentence; then the labelling queue
    and the signature."""
    held = "" if result.holdout is None else f", {len(result.heldout)} held out"
    lines = [f"trust or escalate against {result.human}: {result.items} items, "
             f"{result.labelled} labelled ({result.calibration} for calibration{held}); "
             f"kept verdicts agree with people >= {1 - result.alpha:g} with probability "
             f">= {1 - result.delta:g}", ""]
    rows = []
    for s in result.stages:
        heldout = "-" if s.heldout_items is None else (
            f"{_fmt(s.heldout_agreement, 3)} ({s.heldout_kept}/{s.heldout_items})")
        rows.append([s.judge, s.confidence_column,
                     "none" if s.threshold is None else f"{s.threshold:.6g}",
                     f"{s.reached}", f"{s.kept}", f"{s.coverage:.3f}",
                     _fmt(s.guaranteed_agreement, 3),
                     f"{_fmt(s.calibration_agreement, 3)} ({s.calibration_kept}/"
                     f"{s.calibration_items})", heldout, _fmt(s.augrc, 4)])
    lines.append(textwrap.indent(aligned(
        ["judge", "confidence", "threshold", "reached", "kept", "coverage", "guaranteed",
         "calibration agreement", "held-out agreement", "AUGRC"], rows), "  "))
    lines += [f"  {s.judge} keeps nothing: {s.escalates}" for s in result.stages
              if s.escalates is not None]
    decided = sum(s.kept for s in result.stages)
    lines += _escalate_cost(result.cost)
    lines += ["", f"decided by a judge: {decided} of {result.items} items "
              f"({decided / result.items:.3f}); labelling queue: {len(result.queue)} items "
              f"({result.queue_labelled} of them already labelled); -f json lists them",
              "coverage = share of all items the judge keeps; guaranteed = 1 - alpha, at "
              "probability 1 - delta; AUGRC over the calibration items the judge faced "
              "(lower is better)", f"signature: {result.signature}"]
    return "\n".join(lines)

