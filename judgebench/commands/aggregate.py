"""`judgebench aggregate`: rank systems with social-choice and rating rules.

Rules come from the plugin host (`register_aggregators`), so third-party rules work like
the built-in ones (plugins/judgebench_socialchoice). The work is
`judgebench.services.aggregate` (statistics in meta_eval.aggregation); this module parses the
options, calls it and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from judgebench.commands.options import direction_options, failed_as_option
from judgebench.commands.output_format import format_options
from judgebench.display import SafeWriter, safe
from judgebench.errors import InputError, JudgebenchError
from judgebench.tables import render as render_table
from judgebench.tables import results_table

if TYPE_CHECKING:
    from judgebench.services.aggregate import AggregateResult, MakeWin, RuleInfo, RuleOutcome
    from meta_eval.aggregation import RuleResult

KIND_HELP = (
    "What TABLE holds (default: auto). leaderboard: one row per system (column 'system' or "
    "the first text column), one numeric column per task/metric; each column is a voter. "
    "scores: one row per (item, system) (columns item, system); each item is a voter ranking "
    "the systems on the --metric column. pairwise: columns system_a, system_b and a verdict "
    "column (winner, or a judge's column: a|b|tie, the winner's name, or P(A is better) in "
    "[0, 1]; see --winner), optional item, length_a/length_b and --pair-weight column. auto "
    "picks pairwise if system_a and system_b exist, scores if item and system exist, else "
    "leaderboard."
)


def _parse_weights(pairs: tuple[str, ...]) -> dict[str, float]:
    weights: dict[str, float] = {}
    for pair in pairs:
        column, eq, value = pair.rpartition("=")
        if not eq or not column:
            raise InputError(f"--weight '{pair}' is not COL=W", field="--weight")
        try:
            weights[column] = float(value)
        except ValueError:
            raise InputError(f"--weight '{pair}': '{value}' is not a number",
                             field="--weight") from None
    return weights


def _human_ranking(text: str) -> list[list[str]]:
    """'a,b=c,d' (best first; '=' joins tied systems) or '@FILE' with one entry a line."""
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            entries = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        except OSError as exc:
            raise InputError(f"cannot read the human ranking: {exc.strerror}",
                             path=str(path)) from None
    else:
        entries = [e.strip() for e in text.split(",")]
    ranking = [[s.strip() for s in e.split("=") if s.strip()] for e in entries if e]
    if not ranking:
        raise InputError("the human ranking is empty", field="--human-ranking")
    return ranking


@click.command("aggregate")
@click.argument("table", type=click.Path(path_type=Path), required=False)
@click.option("-r", "--rule", "rule_specs", multiple=True, metavar="RULE",
              help="A rule name, or NAME:key=value[,...] (e.g. minimax:variant=winning_votes)"
                   "; repeatable; 'all' = every registered rule that accepts the input. "
                   "Default: mean, borda, copeland, schulze, kemeny (pairwise input: "
                   "bradley-terry, elo, copeland, schulze, kemeny). See --list-rules.")
@click.option("--kind", type=click.Choice(["auto", "leaderboard", "scores", "pairwise"]),
              default="auto", show_default=True, help=KIND_HELP)
@click.option("--system-column", metavar="COL",
              help="Leaderboard: the column naming the systems.")
@click.option("--column", "columns", multiple=True, metavar="COL",
              help="Leaderboard: use only these task/metric columns (repeatable).")
@click.option("--metric", metavar="COL",
              help="Scores table: the metric column the items vote with (needed when the "
                   "table has more than one numeric column).")
@click.option("--weight", "weight_pairs", multiple=True, metavar="COL=W",
              help="Leaderboard: column weight (a column of weight W casts W votes; 0 drops "
                   "it). Repeatable.")
@direction_options
@click.option("--missing", type=click.Choice(["keep", "drop-systems", "drop-voters"]),
              default="keep", show_default=True,
              help="Missing scores: keep (each rule's own policy, see --list-rules), drop "
                   "systems with any missing score, or drop voters (columns / items) with any.")
@click.option("--pair-weight", metavar="COL", help="Pairwise table: a weight column.")
@click.option("--winner", metavar="COL",
              help="Pairwise table: the verdict column to rank by (a judge's combined column, "
                   "its .ab or .ba column, or a human.* column). Default: 'winner', else the "
                   "only judge's column.")
@click.option("--human", "human_column", metavar="COL",
              help="Human system scores to compare each rule's ranking with: a leaderboard "
                   "column (then not a voter) or a scores-table column (mean per system).")
@click.option("--human-ranking", metavar="RANKING",
              help="A human ranking, best first: 'a,b=c,d' ('=' ties) or @FILE, one a line.")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=0), default=0,
              help="Resample the voters (columns, items, or pairwise items) N times: rank "
                   "intervals, P(win), top-1/top-k stability.")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Rank-interval coverage.")
@click.option("--top-k", "top_k", type=click.IntRange(min=1), default=3, show_default=True,
              help="k for top-k stability.")
@click.option("--make-win", "make_win", metavar="SYSTEM",
              help="Find non-negative voter weights that make SYSTEM win (rules mean, borda, "
                   "dowdall, plurality, condorcet): a linear programme.")
@click.option("--list-rules", is_flag=True, help="List the registered rules and exit.")
@format_options("Print a JSON array, one object per rule: rule, ranking, scores, winners, "
                "ties, and agreement / human / bootstrap / make_win where asked; csv, "
                "markdown and latex print one row per (rule, system).")
@failed_as_option
def command(
    table: Path | None,
    rule_specs: tuple[str, ...],
    kind: str,
    system_column: str | None,
    columns: tuple[str, ...],
    metric: str | None,
    weight_pairs: tuple[str, ...],
    lower: tuple[str, ...],
    higher: tuple[str, ...],
    missing: str,
    pair_weight: str | None,
    winner: str | None,
    human_column: str | None,
    human_ranking: str | None,
    n_boot: int,
    seed: int,
    level: float,
    top_k: int,
    make_win: str | None,
    list_rules: bool,
    output_format: str,
    failed_as: str,
) -> None:
    """Rank the systems in TABLE with one or more social-choice or rating rules.

    TABLE is a leaderboard (system x task), a scores table (item x system, one --metric)
    or a pairwise table (system_a, system_b, winner); see --kind. Ties are kept as ties.
    """
    from judgebench.cli import context_host
    from judgebench.services.aggregate import aggregate
    from judgebench.services.aggregate import list_rules as registered_rules

    host = context_host()
    if list_rules:
        _print_rules(registered_rules(host), output_format)
        return
    if table is None:
        raise click.UsageError("missing argument TABLE (or give --list-rules)")
    result = aggregate(
        table, rules=rule_specs, kind=kind, system_column=system_column, columns=columns,
        metric=metric, weights=_parse_weights(weight_pairs), lower=lower, higher=higher,
        missing=missing, pair_weight=pair_weight, winner=winner, human=human_column,
        human_ranking=_human_ranking(human_ranking) if human_ranking is not None else None,
        bootstrap=n_boot, seed=seed, level=level, top_k=top_k, make_win=make_win,
        failed_as=failed_as, log=_log, host=host)
    if output_format == "json":
        click.echo(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    elif output_format == "text":
        _print_text(result)
    else:
        rows = results_table(result.system_rows(), output_format, TABLE_COLUMNS)
        click.echo(safe(render_table(rows, output_format)))
    if result.failed:
        raise JudgebenchError(f"rule(s) failed: {', '.join(o.spec for o in result.failed)} "
                              "(reasons above)")


def _log(message: str) -> None:
    click.echo(safe(f"judgebench aggregate: {message}"), err=True)


# -- output ----------------------------------------------------------------------------------
#: What a csv, markdown or latex table of the result holds: AggregateResult.system_rows.
TABLE_COLUMNS = ("rule", "rank", "system", "score", "winner", "rank_low", "rank_high", "p_win")


def _print_rules(rules: list[RuleInfo], output_format: str) -> None:
    if output_format == "json":
        click.echo(json.dumps([r.to_dict() for r in rules], indent=2))
        return
    if output_format != "text":
        table = results_table([r.to_dict() for r in rules], output_format,
                              ("name", "inputs", "description", "missing", "options"))
        click.echo(safe(render_table(table, output_format)))
        return
    for rule in rules:
        options = f" [options: {', '.join(rule.options)}]" if rule.options else ""
        click.echo(f"{rule.name:<15} {'+'.join(rule.inputs):<17} "
                   f"{rule.description}{options}")
        if rule.missing:
            click.echo(f"{'':<15} {'':<17} missing scores: {rule.missing}")


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
             for line in [header, *rows]]
    return "\n".join(lines)


def _fmt(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _print_text(result: AggregateResult) -> None:
    out = SafeWriter(sys.stdout)  # system and column names come from the user's table
    good = [(o, o.result) for o in result.ok if o.result is not None]
    width = max((len(o.spec) for o in result.outcomes), default=0)
    sections = [_rankings(good, width), _extras(good),
                [f"{o.spec}: failed: {o.reason}" for o in result.failed],
                _agreement(good), _against_people(good, result.human_source),
                _bootstraps(good), _make_win(good, result.make_win), _failed(result)]
    for section in sections:
        for line in section:
            print(line, file=out)


Ranked = list[tuple["RuleOutcome", "RuleResult"]]


def _failed(result: AggregateResult) -> list[str]:
    """The convention, and each column's failed rows and how they were counted."""
    from judgebench.failed import header

    lines = ["", header(result.failed_as)]
    lines += [f"  {column}: {f['rows']} failed, counted {f['counted_as']} (told by "
              f"{f['told_by']})" for column, f in result.failed_cells.items() if f["rows"]]
    return lines


def _cells(ranked: RuleResult) -> list[str]:
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
    columns = [cells + [""] * (depth - len(cells)) for cells in (_cells(r) for _, r in good)]
    rows = [[str(i + 1), *[col[i] for col in columns]] for i in range(depth)]
    lines = [_table(["rank", *[o.spec for o, _ in good]], rows), "", "winners:"]
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
        rows = [[system, _number(scores.get(system)),
                 *[_number(r.extra[key].get(system)) for key in keys]]
                for system in r.ranking if system in scores]
        lines += [f"\n{o.spec}:", _table(["  system", "score", *keys],
                                         [["  " + row[0], *row[1:]] for row in rows])]
    return lines


def _number(value: object) -> str:
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
    return ["\nKendall tau-b between the rules' rankings:", _table(["", *names], rows)]


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
            _table(["rule", "kendall_tau", "pairwise_accuracy", "systems"], rows)]


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
        lines.append(_table(["  system", "rank", "P(win)"], rows))
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
