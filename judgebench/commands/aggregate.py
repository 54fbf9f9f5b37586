"""`judgebench aggregate`: rank systems with social-choice and rating rules.

Rules come from the plugin host (`register_aggregators`), so third-party rules work like
the built-in ones (plugins/judgebench_socialchoice). The work is
`judgebench.services.aggregate` (statistics in meta_eval.aggregation); this module parses the
options, calls it and prints (judgebench.render).
"""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.commands.options import OPEN_UNIT, direction_options, failed_as_option
from judgebench.commands.output_format import format_options
from judgebench.display import safe
from judgebench.engine import progress_line
from judgebench.errors import InputError, JudgebenchError
from judgebench.render import json as json_out
from judgebench.render import text as text_out
from judgebench.render.formats import render as render_table
from judgebench.render.formats import render_tables
from judgebench.render.table import aggregate_tables, rules_table

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


def _controls(text: str | None) -> list[str]:
    """'length,markdown' -> ['length', 'markdown'] (an empty entry is an error)."""
    if text is None:
        return []
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise InputError(f"--control '{text}' has an empty name: give e.g. length,markdown",
                         field="--control")
    return names


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


@click.command("aggregate", epilog=examples(
    ("rank the 16 systems from their BLEU on each document, by Borda and by Copeland",
     "judgebench aggregate examples/summeval-scores.csv --metric lexical.bleu -r borda -r "
     "copeland"),
    ("how each rule's ranking from chrF agrees with people's coherence",
     "judgebench aggregate examples/summeval-scores.csv --metric lexical.chrf --human "
     "human.coherence"),
    ("the registered rules",
     "judgebench aggregate --list-rules"),
))
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
@click.option("--level", type=OPEN_UNIT,
              default=0.95, show_default=True, help="Rank-interval coverage.")
@click.option("--top-k", "top_k", type=click.IntRange(min=1), default=3, show_default=True,
              help="k for top-k stability.")
@click.option("--make-win", "make_win", metavar="SYSTEM",
              help="Find non-negative voter weights that make SYSTEM win (rules mean, borda, "
                   "dowdall, plurality, condorcet): a linear programme.")
@click.option("--control", "control", metavar="LIST",
              help="-r bradley-terry on a pairwise table: also fit it with style covariates "
                   "(comma-separated: length, markdown, a numeric column COL or a pair "
                   "COL_a/COL_b), arena-hard-auto's style control; prints the controlled and "
                   "raw rankings with Wald intervals and the covariates' coefficients.")
@click.option("--list-rules", is_flag=True, help="List the registered rules and exit.")
@format_options("Print a JSON array, one object per rule: rule, ranking, scores, winners, "
                "ties, and agreement / human / bootstrap / make_win where asked; csv, "
                "markdown and latex print one row per (rule, system) with each rule's "
                "per-system figures, then bradley-terry's order effect, style-controlled "
                "ranking and coefficients (--control) as tables of their own.")
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
    control: str | None,
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
        rules = registered_rules(host)
        if output_format == "json":
            click.echo(json_out.document([r.to_dict() for r in rules]))
        elif output_format == "text":
            click.echo(text_out.rules(rules))
        else:
            click.echo(safe(render_table(rules_table(rules, output_format), output_format)))
        return
    if table is None:
        raise click.UsageError("missing argument TABLE (or give --list-rules)")
    result = aggregate(
        table, rules=rule_specs, kind=kind, system_column=system_column, columns=columns,
        metric=metric, weights=_parse_weights(weight_pairs), lower=lower, higher=higher,
        missing=missing, pair_weight=pair_weight, winner=winner, human=human_column,
        human_ranking=_human_ranking(human_ranking) if human_ranking is not None else None,
        bootstrap=n_boot, seed=seed, level=level, top_k=top_k, make_win=make_win,
        failed_as=failed_as, log=_log, host=host, control=_controls(control))
    if output_format == "json":
        click.echo(json_out.document(result.to_dict(), allow_nan=False))
    elif output_format == "text":
        click.echo(safe(text_out.aggregate(result)))  # system and column names are the user's
    else:
        click.echo(safe(render_tables(aggregate_tables(result, output_format), output_format)))
    if result.failed:
        raise JudgebenchError(f"rule(s) failed: {', '.join(o.spec for o in result.failed)} "
                              "(reasons above)")


def _log(message: str) -> None:
    click.echo(safe(f"judgebench aggregate: {message}"), err=True)
    progress_line.doing(safe(message))
