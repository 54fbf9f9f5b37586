"""`judgebench aggregate`: rank systems with social-choice and rating rules.

Rules come from the plugin host (`register_aggregators`), so third-party rules work like
the built-in ones (plugins/judgebench_socialchoice). The statistics live in
meta_eval.aggregation; this module reads the table, wires the options and prints.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from judgebench.columns import metric_columns
from judgebench.commands.options import direction_options
from judgebench.display import SafeWriter, safe
from judgebench.errors import InputError, JudgebenchError
from judgebench.scores_table import is_corpus_table, load_scores_table, read_corpus_table

KIND_HELP = (
    "What TABLE holds (default: auto). leaderboard: one row per system (column 'system' or "
    "the first text column), one numeric column per task/metric; each column is a voter. "
    "scores: one row per (item, system) (columns item, system); each item is a voter ranking "
    "the systems on the --metric column. pairwise: columns system_a, system_b, winner "
    "(a|b|tie or the winner's name), optional item and --pair-weight column. auto picks "
    "pairwise if system_a, system_b and winner exist, scores if item and system exist, "
    "else leaderboard."
)


def _parse_value(text: str) -> Any:
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def _parse_rule_spec(text: str) -> tuple[str, dict[str, Any]]:
    name, _, rest = text.strip().partition(":")
    if not name:
        raise InputError(f"rule spec '{text}' has no rule name", field="--rule")
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise InputError(f"rule spec '{text}': option '{part}' is not key=value",
                             field="--rule")
        options[key.strip()] = _parse_value(value.strip())
    return name, options


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


def _location(path: Path, row: int | None) -> dict[str, int]:
    """A 0-based table row as the line (CSV, JSONL) or row (Parquet) users see."""
    if row is None:
        return {}
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return {"line": row + 2}
    if suffix in (".jsonl", ".ndjson"):
        return {"line": row + 1}
    return {"row": row + 1}


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
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON array, one object per rule: rule, ranking, scores, winners, "
                   "ties, and agreement / human / bootstrap / make_win where asked.")
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
    human_column: str | None,
    human_ranking: str | None,
    n_boot: int,
    seed: int,
    level: float,
    top_k: int,
    make_win: str | None,
    list_rules: bool,
    as_json: bool,
) -> None:
    """Rank the systems in TABLE with one or more social-choice or rating rules.

    TABLE is a leaderboard (system x task), a scores table (item x system, one --metric)
    or a pairwise table (system_a, system_b, winner); see --kind. Ties are kept as ties.
    """
    from judgebench.plugins import get_host

    registry = {name: entry.obj for name, entry in get_host().aggregators().items()}
    if list_rules:
        _print_rules(registry, as_json)
        return
    if table is None:
        raise click.UsageError("missing argument TABLE (or give --list-rules)")
    from meta_eval import aggregation as agg

    data, kind, human, frame_note = _load(
        table, kind=kind, system_column=system_column, columns=columns, metric=metric,
        weights=_parse_weights(weight_pairs), lower=lower, higher=higher, missing=missing,
        pair_weight=pair_weight, human_column=human_column,
    )
    if human_ranking is not None:
        if human is not None:
            raise InputError("give --human or --human-ranking, not both", field="--human")
        try:
            human = ("ranking", agg.ranking_scores(_human_ranking(human_ranking)))
        except ValueError as exc:
            raise InputError(str(exc), field="--human-ranking") from None
    click.echo(f"judgebench aggregate: {safe(frame_note)}", err=True)

    specs = _rule_specs(rule_specs, registry, data.kind)
    rules = [_build_rule(spec, registry, data.kind) for spec in specs]

    outputs: list[dict[str, Any]] = []
    ok: dict[str, Any] = {}
    ok_rules = []
    for spec, rule in zip(specs, rules, strict=True):
        try:
            result = rule.rank(data)
        except Exception as exc:  # a rule's failure is its status, never a silent result
            reason = f"{type(exc).__name__}: {exc}"
            click.echo(safe(f"judgebench aggregate: rule '{spec}' failed: {reason}"), err=True)
            outputs.append({"rule": spec, "status": "error", "reason": reason, "ranking": [],
                            "scores": None, "winners": [], "ties": []})
            continue
        entry = {**result.to_dict(), "rule": spec, "status": "ok"}
        outputs.append(entry)
        ok[spec] = result
        ok_rules.append(rule)

    if len(ok) > 1:
        taus = agg.rule_agreement(ok)
        for entry in outputs:
            if entry["rule"] in ok:
                entry["agreement"] = {other: _clean(taus.loc[entry["rule"], other])
                                      for other in ok if other != entry["rule"]}
    if human is not None:
        label, scores = human
        known = set(data.systems)
        unknown = sorted(set(scores) - known)
        if unknown:
            click.echo(f"judgebench aggregate: human scores name systems not in the table: "
                       f"{unknown}", err=True)
        for entry in outputs:
            if entry["rule"] in ok:
                entry["human"] = {"source": label,
                                  **agg.against_human(ok[entry["rule"]], human=scores).to_dict()}
    if n_boot:
        boots = agg.bootstrap(data, ok_rules, n=n_boot, seed=seed, level=level, k=top_k,
                              names=list(ok), full=list(ok.values()))
        by_name = {b.rule: b for b in boots}
        for entry in outputs:
            if entry["rule"] in by_name:
                entry["bootstrap"] = by_name[entry["rule"]].to_dict()
    if make_win is not None:
        if make_win not in data.systems:
            raise InputError(f"--make-win: no system '{make_win}' in the table; systems: "
                             f"{list(data.systems)}", path=str(table), field="--make-win")
        for entry, rule in zip([e for e in outputs if e["rule"] in ok], ok_rules, strict=True):
            entry["make_win"] = _make_win(data, make_win, rule, entry["rule"])

    if as_json:
        click.echo(json.dumps(outputs, indent=2, allow_nan=False))
    else:
        _print_text(outputs, human[0] if human else None, make_win)
    failed = [e["rule"] for e in outputs if e["status"] != "ok"]
    if failed:
        raise JudgebenchError(f"rule(s) failed: {', '.join(failed)} (reasons above)")


# -- input ----------------------------------------------------------------------------------
def _load(
    path: Path, *, kind: str, system_column: str | None, columns: tuple[str, ...],
    metric: str | None, weights: dict[str, float], lower: tuple[str, ...],
    higher: tuple[str, ...], missing: str, pair_weight: str | None, human_column: str | None,
) -> tuple[Any, str, tuple[str, dict[str, float]] | None, str]:
    from judgebench.io import read_table
    from meta_eval import aggregation as agg
    from meta_eval.aggregation.tables import leaderboard_system_column

    frame = read_table(path, key=None)
    corpus_table = is_corpus_table(frame.columns)
    if kind == "auto":
        kind = "leaderboard" if corpus_table else agg.detect_kind(frame.columns)

    def misuse(option: str, value: Any, allowed: str) -> None:
        if value:
            raise InputError(f"{option} applies to {allowed} tables; this is read as a {kind} "
                             "table (see --kind)", path=str(path), field=option)

    human: tuple[str, dict[str, float]] | None = None
    try:
        if kind == "leaderboard":
            misuse("--metric", metric, "scores")
            misuse("--pair-weight", pair_weight, "pairwise")
            if corpus_table:
                misuse("--system-column", system_column, "leaderboard (not corpus)")
                frame, system = _corpus_leaderboard(path), "system"
            else:
                system = leaderboard_system_column(frame, system_column)
                frame = read_table(path, key=[system])
            voters = [str(c) for c in (columns or frame.columns)
                      if c not in (system, human_column)]
            lower = _lower_columns(path, frame, voters, lower, higher)
            if human_column is not None and human_column not in frame.columns:
                raise agg.TableError(f"no column '{human_column}'; columns are "
                                     f"{list(frame.columns)}", field=human_column)
            data = agg.profile_from_leaderboard(
                frame, system=system, columns=list(columns) or None, weights=weights,
                lower_is_better=lower, exclude=[human_column] if human_column else [],
            )
            if human_column is not None:
                values = agg.tables.numeric_column(frame, human_column)
                human = (human_column, {s: float(v) for s, v in
                                        zip(frame[system].astype(str).str.strip(), values,
                                            strict=True) if v == v})
            unit = "voters (columns)"
        elif kind == "scores":
            misuse("--weight", weights, "leaderboard")
            misuse("--column", columns, "leaderboard")
            misuse("--system-column", system_column, "leaderboard")
            misuse("--pair-weight", pair_weight, "pairwise")
            frame = read_table(path)
            metric = metric or _only_metric(frame, path, human_column)
            lower = _lower_columns(path, frame, [metric], lower, higher)
            data = agg.profile_from_scores(frame, metric=metric,
                                           higher_is_better=metric not in lower)
            if human_column is not None:
                human = (human_column, agg.human_system_scores(frame, column=human_column))
            unit = f"voters (items, on '{metric}')"
        else:
            for option, value in (("--weight", weights), ("--lower-is-better", lower),
                                  ("--higher-is-better", higher),
                                  ("--column", columns), ("--metric", metric),
                                  ("--system-column", system_column),
                                  ("--human", human_column)):
                misuse(option, value, "leaderboard or scores")
            if missing != "keep":
                misuse("--missing", missing, "leaderboard or scores")
            data = agg.comparisons_from_pairwise(frame, weight=pair_weight)
            return (data, kind, None,
                    f"read {path} as a pairwise table: {data.n_systems} systems, "
                    f"{len(data.a)} comparisons in {data.n_units} groups")
        if missing != "keep":
            data = agg.drop_incomplete(data, "systems" if missing == "drop-systems"
                                       else "voters")
    except agg.TableError as exc:
        raise InputError(str(exc), path=str(path), **_location(path, exc.row),
                         field=exc.field) from None
    n_missing = int((~data.scored).sum())
    what = "corpus-score table (a leaderboard)" if corpus_table else f"{kind} table"
    note = (f"read {path} as a {what}: {data.n_systems} systems, {data.n_units} {unit}"
            + (f", {n_missing} missing scores" if n_missing else "")
            + (f"; lower is better: {', '.join(lower)}" if lower else ""))
    return data, kind, human, note


def _corpus_leaderboard(path: Path) -> Any:
    """The corpus-score table `judgebench score --corpus` writes (system, metric, value),
    as a leaderboard: one row per system, one column per metric; a failed score is empty."""
    import pandas as pd

    scores = read_corpus_table(path)
    systems = list(dict.fromkeys(s for by_system in scores.values() for s in by_system))
    return pd.DataFrame({"system": systems,
                         **{column: [by_system.get(s, float("nan")) for s in systems]
                            for column, by_system in scores.items()}})


def _lower_columns(path: Path, frame: Any, voters: list[str], lower: tuple[str, ...],
                   higher: tuple[str, ...]) -> tuple[str, ...]:
    """The voter columns where smaller is better, by the one direction rule
    (judgebench.scores_table): flag, then sidecar, then the registered metric."""
    table = load_scores_table(path, frame=frame, lower=lower, higher=higher)
    table.check_flags(voters)
    return tuple(c for c in voters if not table.info(c).higher_is_better)


def _only_metric(frame: Any, path: Path, human_column: str | None) -> str:
    numeric = metric_columns(frame, exclude=[human_column] if human_column else [])
    if len(numeric) != 1:
        raise InputError(f"give --metric COL: the scores table has {len(numeric)} metric "
                         f"columns {numeric}", path=str(path), field="--metric")
    return numeric[0]


# -- rules ----------------------------------------------------------------------------------
DEFAULT_RULES = {"profile": ["mean", "borda", "copeland", "schulze", "kemeny"],
                 "pairwise": ["bradley-terry", "elo", "copeland", "schulze", "kemeny"]}


def _inputs(rule: Any) -> frozenset[str]:
    return frozenset(getattr(rule, "inputs", None) or {"profile"})


def _rule_specs(specs: tuple[str, ...], registry: dict[str, Any], data_kind: str) -> list[str]:
    if not specs:
        return [n for n in DEFAULT_RULES[data_kind] if n in registry]
    out: list[str] = []
    for spec in specs:
        if spec.strip() == "all":
            out += [n for n, r in registry.items() if data_kind in _inputs(r) and n not in out]
        elif spec not in out:
            out.append(spec)
    return out


def _build_rule(spec: str, registry: dict[str, Any], data_kind: str) -> Any:
    name, options = _parse_rule_spec(spec)
    if name not in registry:
        raise InputError(f"unknown rule '{name}'; registered rules: "
                         f"{', '.join(sorted(registry)) or 'none'}", field="--rule")
    rule = registry[name]
    if data_kind not in _inputs(rule):
        usable = sorted(n for n, r in registry.items() if data_kind in _inputs(r))
        what = ("voters that score systems (a leaderboard or a scores table)"
                if "pairwise" not in _inputs(rule) else "pairwise comparisons")
        raise InputError(f"rule '{name}' needs {what}; for {data_kind} data use one of: "
                         f"{', '.join(usable)}", field="--rule")
    if options:
        if not hasattr(rule, "with_options"):
            raise InputError(f"rule '{name}' takes no options", field="--rule")
        try:
            rule = rule.with_options(**options)
        except ValueError as exc:
            raise InputError(str(exc), field="--rule") from None
    return rule


def _make_win(data: Any, system: str, rule: Any, spec: str) -> dict[str, Any]:
    from meta_eval import aggregation as agg

    name = getattr(rule, "name", spec)
    builtin = agg.RULES.get(name)
    options = dict(getattr(rule, "options", None) or {})
    ties = options.pop("ties", "average")
    supported = (
        data.kind == "profile" and builtin is not None and name in agg.WEIGHTS_RULES
        and getattr(rule, "fn", None) is builtin.fn and not options
    )
    if not supported:
        return {"system": system, "supported": False,
                "note": f"which-weights covers {', '.join(agg.WEIGHTS_RULES)} with default "
                        "options on a leaderboard or scores table"}
    try:
        found = agg.weights_to_win(data, system, name, ties=ties)
    except (ValueError, RuntimeError) as exc:
        return {"system": system, "supported": True, "error": str(exc)}
    return {"supported": True, **found.to_dict()}


# -- output ---------------------------------------------------------------------------------
def _clean(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return None if value != value else value


def _print_rules(registry: dict[str, Any], as_json: bool) -> None:
    rows = [{"name": name, "inputs": sorted(_inputs(rule)),
             "description": getattr(rule, "description", ""),
             "missing": getattr(rule, "missing", ""),
             "options": rule.option_names() if hasattr(rule, "option_names") else []}
            for name, rule in sorted(registry.items())]
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        options = f" [options: {', '.join(row['options'])}]" if row["options"] else ""
        click.echo(f"{row['name']:<15} {'+'.join(row['inputs']):<17} "
                   f"{row['description']}{options}")
        if row["missing"]:
            click.echo(f"{'':<15} {'':<17} missing scores: {row['missing']}")


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
             for line in [header, *rows]]
    return "\n".join(lines)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _print_text(outputs: list[dict[str, Any]], human_label: str | None,
                make_win: str | None) -> None:
    good = [e for e in outputs if e["status"] == "ok"]
    out = SafeWriter(sys.stdout)  # system and column names come from the user's table
    if good:
        depth = max(len(e["ranking"]) for e in good)
        columns = []
        for e in good:
            tied = {s: i for i, tier in enumerate(e["ties"]) for s in tier}
            rank_of = {s: position for position, s in enumerate(e["ranking"], start=1)}
            cells = []
            for s in e["ranking"]:
                if s in tied:
                    first = min(rank_of[t] for t in e["ties"][tied[s]])
                    cells.append(f"{s} (={first})")
                else:
                    cells.append(s)
            columns.append(cells + [""] * (depth - len(cells)))
        rows = [[str(i + 1), *[col[i] for col in columns]] for i in range(depth)]
        print(_table(["rank", *[e["rule"] for e in good]], rows), file=out)
        print("", file=out)
        width = max(len(e["rule"]) for e in outputs)
        print("winners:", file=out)
        for e in good:
            print(f"  {e['rule']:<{width}}  {', '.join(e['winners']) or 'none'}", file=out)
        notes = [(e["rule"], e["note"]) for e in good if e.get("note")]
        if notes:
            print("notes:", file=out)
            for rule, note in notes:
                print(f"  {rule:<{width}}  {note}", file=out)
    for e in outputs:
        if e["status"] != "ok":
            print(f"{e['rule']}: failed: {e['reason']}", file=out)
    if len(good) > 1:
        print("\nKendall tau-b between the rules' rankings:", file=out)
        names = [e["rule"] for e in good]
        rows = [[a, *[("1" if a == b else _fmt(e["agreement"].get(b))) for b in names]]
                for a, e in zip(names, good, strict=True)]
        print(_table(["", *names], rows), file=out)
    if human_label is not None and good:
        print(f"\nAgainst people ({human_label}):", file=out)
        rows = [[e["rule"], _fmt(e["human"]["kendall_tau"]),
                 _fmt(e["human"]["pairwise_accuracy"]), str(e["human"]["n_systems"])]
                for e in good]
        print(_table(["rule", "kendall_tau", "pairwise_accuracy", "systems"], rows), file=out)
    boots = [e for e in good if "bootstrap" in e]
    if boots:
        b0 = boots[0]["bootstrap"]
        print(f"\nBootstrap: {b0['n']} resamples of the voters (seed {b0['seed']}), "
              f"{b0['level']:.0%} rank intervals; P(win) splits ties:", file=out)
        for e in boots:
            b = e["bootstrap"]
            failed = f", {b['n_failed']} failed resamples" if b["n_failed"] else ""
            print(f"{e['rule']}: top-1 stability {_fmt(b['top1_stability'])}, "
                  f"top-{b['k']} stability {_fmt(b['topk_stability'])}, "
                  f"mean tau to the full ranking {_fmt(b['mean_tau'])}{failed}", file=out)
            rows = []
            for system, s in b["systems"].items():
                interval = ("-" if s["rank_low"] is None else
                            f"{s['rank_low']:g}-{s['rank_high']:g}")
                rows.append(["  " + system, interval, _fmt(s["p_win"])])
            print(_table(["  system", "rank", "P(win)"], rows), file=out)
    wins = [e for e in good if "make_win" in e]
    if make_win is not None and wins:
        print(f"\nWhich voter weights make {make_win} win:", file=out)
        unsupported = [e["rule"] for e in wins if not e["make_win"].get("supported")]
        for e in wins:
            m = e["make_win"]
            if not m.get("supported"):
                continue
            if "error" in m:
                print(f"  {e['rule']}: {m['error']}", file=out)
            elif m["possible"] or m["can_tie"]:
                weights = ", ".join(f"{k}={v:.3g}" for k, v in m["weights"].items() if v > 0)
                verdict = "yes" if m["possible"] else "only a tie for first"
                print(f"  {e['rule']}: {verdict} (margin {m['margin']:.4g}); weights: "
                      f"{weights}" + (f" [{m['note']}]" if m["note"] else ""), file=out)
            else:
                print(f"  {e['rule']}: no (best margin {m['margin']:.4g}): {m['note']}",
                      file=out)
        if unsupported:
            note = next(e["make_win"]["note"] for e in wins if e["rule"] == unsupported[0])
            print(f"  not computed for {', '.join(unsupported)}: {note}", file=out)
