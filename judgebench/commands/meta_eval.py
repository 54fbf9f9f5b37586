"""`judgebench meta-eval`: correlate metric columns of a scores table with human columns.

The statistics live in meta_eval (pure numpy/scipy); this module reads the table, checks
the columns, and prints results: a JSON array with --json, otherwise a readable table per
human column and statistic, metrics sorted best first.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from judgebench.columns import metric_columns, numeric_columns
from judgebench.commands.options import direction_options
from judgebench.display import safe
from judgebench.errors import InputError
from judgebench.scores_table import ColumnInfo, load_scores_table
from meta_eval.statistics import help_text as statistic_help

if TYPE_CHECKING:
    import numpy as np

LEVELS = ("system", "segment")
GROUPINGS = ("none", "item", "system")


def _log(message: str) -> None:
    click.echo(f"meta-eval: {safe(message)}", err=True)


@click.command("meta-eval")
@click.argument("scores", type=click.Path(path_type=Path))
@click.option("--human", "humans", multiple=True, required=True, metavar="COL",
              help="Human judgment column; repeatable.")
@click.option("--metric", "metrics", multiple=True, metavar="COL",
              help="Metric column; repeatable. Default: every numeric column that is not a "
                   "human column (nor item, system, human.*).")
@click.option("--level", type=click.Choice(LEVELS), default="segment", show_default=True)
@click.option("--grouping", type=click.Choice(GROUPINGS), default="none", show_default=True,
              help="segment level: correlate within each item or system, then average.")
@click.option("--statistic", "statistics", multiple=True, metavar="NAME",
              help=f"{statistic_help()}. Repeatable; default: pearson.")
@click.option("--epsilon", type=float, default=0.0, show_default=True,
              help="Metric tie threshold for kendall-23 and acc-23.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=0, show_default=True,
              help="Item resamples for a confidence interval (0: none).")
@click.option("--ci", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True, help="Confidence level of the interval.")
@direction_options
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path),
              help="Corpus scores (system, metric, value), as `judgebench score --corpus` "
                   "writes them; default: those in the table's .meta.json.")
@click.option("--system-score", type=click.Choice(("auto", "mean")), default="auto",
              show_default=True,
              help="System level: auto = a metric's corpus score where it has one (corpus "
                   "BLEU, MAUVE), else the mean of its segment scores; mean = always the mean.")
@click.option("--exclude-system", "excluded", multiple=True, metavar="NAME",
              help="Leave this system out; repeatable.")
@click.option("--compare", is_flag=True,
              help="Rank the metrics into significance clusters (per human and statistic).")
@click.option("--test", "method", type=click.Choice(("permutation", "williams")),
              default="permutation", show_default=True, help="Test used by --compare.")
@click.option("--resamples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Permutation resamples per comparison (early stopping may use fewer).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Significance level for --compare.")
@click.option("--rater", "raters", multiple=True, metavar="COL",
              help="Individual rater columns (two or more) for the leave-one-rater-out "
                   "human ceiling; each metric is also reported as a fraction of it.")
@click.option("--permutations", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Permutations per system pair inside SPA.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of results.")
def command(scores: Path, humans: tuple[str, ...], metrics: tuple[str, ...], level: str,
            grouping: str, statistics: tuple[str, ...], epsilon: float, bootstrap: int,
            ci: float, lower: tuple[str, ...], higher: tuple[str, ...],
            corpus_path: Path | None, system_score: str, excluded: tuple[str, ...],
            compare: bool, method: str, resamples: int, alpha: float,
            raters: tuple[str, ...], permutations: int, seed: int, as_json: bool) -> None:
    """Correlate metric columns of SCORES (a wide scores table) with human judgments."""

    import meta_eval

    statistics = statistics or ("pearson",)
    for name in statistics:
        try:
            meta_eval.levels.check_options(name, level, grouping)
        except ValueError as exc:
            raise InputError(str(exc), field="--statistic") from None
    if epsilon < 0:
        raise InputError("must be >= 0", field="--epsilon")
    if raters and len(raters) < 2:
        raise InputError("the human ceiling needs two or more --rater columns",
                         field="--rater")

    table = load_scores_table(scores, corpus_path=corpus_path, lower=lower, higher=higher)
    frame = table.frame
    for column in (*humans, *raters):
        numeric_columns(frame, [column], str(scores))
    use_corpus = level == "system" and system_score == "auto"
    corpus_only = [c for c in table.corpus_only if c not in (*humans, *raters)]
    for column in metrics:
        if column in corpus_only:
            if not use_corpus:
                raise InputError("a corpus-only metric (no segment scores) is meta-evaluated "
                                 "at --level system with --system-score auto",
                                 path=str(scores), field=column)
        else:
            numeric_columns(frame, [column], str(scores))
    if excluded:
        known = set(frame["system"])
        unknown = [s for s in excluded if s not in known]
        if unknown:
            raise InputError(f"unknown system(s) {unknown}", path=str(scores),
                             field="--exclude-system")
        frame = frame[~frame["system"].isin(excluded)].reset_index(drop=True)
    metric_cols = list(metrics) or [
        *metric_columns(frame, exclude=[*humans, *raters], warn=_log, path=str(scores)),
        *(corpus_only if use_corpus else [])]
    if not metric_cols:
        raise InputError("no metric columns: name them with --metric", path=str(scores))
    table.check_flags(metric_cols)
    infos = {c: table.info(c) for c in metric_cols}
    in_table = [c for c in metric_cols if infos[c].in_table]
    matrices = meta_eval.score_matrices(table.oriented(frame, in_table),
                                        [*dict.fromkeys([*humans, *raters, *in_table])])
    given = table.oriented_system_scores(metric_cols, matrices.systems) if use_corpus else {}
    flipped = [c for c in metric_cols if not infos[c].higher_is_better]
    if flipped:
        _log(f"lower is better, negated: {', '.join(flipped)}")
    if given:
        _log(f"system scores are corpus scores for: {', '.join(given)}")
    _log(f"{len(matrices.items)} items x {len(matrices.systems)} systems; "
         f"{len(metric_cols)} metric(s) x {len(humans)} human column(s) x "
         f"{len(statistics)} statistic(s), level {level}, grouping {grouping}")
    if compare and given and len(metric_cols) > 1:
        raise InputError(f"--compare at system level permutes segment scores, and "
                         f"{', '.join(given)} are scored per system (corpus scores): use "
                         "--system-score mean to compare system means of segment scores",
                         field="--compare")

    records: list[dict[str, Any]] = []
    for human in humans:
        for statistic in statistics:
            records += _block(matrices, human, statistic, metric_cols, level=level,
                              grouping=grouping, epsilon=epsilon, bootstrap=bootstrap,
                              ci=ci, seed=seed, permutations=permutations, compare=compare,
                              method=method, resamples=resamples, alpha=alpha,
                              raters=list(raters), infos=infos, given=given,
                              system_level=level == "system")
    if as_json:
        click.echo(json.dumps(records, indent=2))
    else:
        click.echo(safe(_render(records, compare)))


def _block(matrices: Any, human: str, statistic: str, metric_cols: list[str], *,
           level: str, grouping: str, epsilon: float, bootstrap: int, ci: float, seed: int,
           permutations: int, compare: bool, method: str, resamples: int, alpha: float,
           raters: list[str], infos: dict[str, ColumnInfo], given: dict[str, np.ndarray],
           system_level: bool) -> list[dict[str, Any]]:
    import meta_eval
    from meta_eval.corpus import evaluate_given

    h = matrices[human]
    common = {"level": level, "grouping": grouping}
    results = {}
    rows = []
    for col in metric_cols:
        extra: dict[str, Any] = {}
        if col in given:
            extra["system_score"] = "corpus"
            try:
                results[col] = evaluate_given(statistic, human=h, metric=given[col],
                                              epsilon=epsilon)
            except ValueError as exc:
                rows.append({"metric": col, "human": human, "statistic": statistic,
                             "value": None, "n": 0, "level": level, "grouping": grouping,
                             "note": str(exc), **infos[col].describe(), **extra})
                continue
            if bootstrap:
                extra["ci_note"] = ("no item bootstrap for a corpus score (it would need "
                                    "the corpus score of every resample)")
        else:
            if system_level:
                extra["system_score"] = "mean"
            results[col] = meta_eval.evaluate(statistic, human=h, metric=matrices[col],
                                              epsilon=epsilon, bootstrap=bootstrap, ci=ci,
                                              seed=seed, permutations=permutations,
                                              **common)
        rows.append({"metric": col, "human": human, **results[col].to_dict(),
                     **infos[col].describe(), **extra})

    if compare and len(metric_cols) > 1:
        if method == "williams" and statistic != "pearson":
            raise InputError("Williams' test compares Pearson correlations; use "
                             "--test permutation", field="--test")
        try:
            ranking = meta_eval.significance_clusters(
                statistic, human=h, metrics={c: matrices[c] for c in results},
                values={c: r.value for c, r in results.items()}, method=method,
                alpha=alpha, seed=seed, resamples=resamples, epsilon=epsilon,
                permutations=permutations,
                progress=lambda a, b: _log(f"{human} {statistic}: {a} vs {b}"), **common)
        except ValueError as exc:
            raise InputError(str(exc), field="--compare") from None
        for row in rows:
            row["cluster"] = ranking.cluster_of(row["metric"])
            row["cluster_test"] = method
            row["alpha"] = alpha
    if raters:
        rater_mats = [matrices[r] for r in raters]
        ceiling = meta_eval.human_ceiling(statistic, raters=rater_mats, epsilon=epsilon,
                                          seed=seed, permutations=permutations, **common)
        for row in rows:
            if row["metric"] in given or row["metric"] not in results:
                continue
            with_metric = meta_eval.human_ceiling(statistic, raters=rater_mats,
                                                  metric=matrices[row["metric"]],
                                                  epsilon=epsilon, seed=seed,
                                                  permutations=permutations, **common)
            row["ceiling_fraction"] = with_metric.fraction
        rows.append({"metric": "(human ceiling)", "human": ",".join(raters),
                     "statistic": statistic, "value": _finite(ceiling.value),
                     "n": len(raters), "level": level, "grouping": grouping,
                     "per_rater": [_finite(v) for v in ceiling.per_rater]})
    rows.sort(key=lambda r: (r["metric"] == "(human ceiling)", r["value"] is None,
                             -(r["value"] or 0.0)))
    return rows


def _finite(value: float) -> float | None:
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _render(records: list[dict[str, Any]], compare: bool) -> str:
    lines: list[str] = []
    blocks: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for rec in records:
        key = (rec["human"] if rec["metric"] != "(human ceiling)" else "", rec["statistic"])
        blocks.setdefault(key, []).append(rec)
    for (human, statistic), rows in blocks.items():
        first = rows[0]
        title = f"{human or 'raters'} · {statistic} · {first['level']}"
        if first["level"] == "segment":
            title += f", grouping {first['grouping']}"
        lines += ["", title]
        width = max(len(str(r["metric"])) for r in rows)
        for r in rows:
            value = "   n/a" if r["value"] is None else f"{r['value']:7.4f}"
            parts = [f"  {r['metric']!s:<{width}}", value]
            if r.get("flipped"):
                parts.append("(lower is better: negated)")
            if r.get("system_score") == "corpus":
                parts.append("[corpus score]")
            if r.get("note"):
                parts.append(r["note"])
            if r.get("ci_low") is not None:
                parts.append(f"[{r['ci_low']:.4f}, {r['ci_high']:.4f}]")
            parts.append(f"n={r['n']}")
            if r.get("skipped"):
                parts.append(f"skipped={r['skipped']}")
            if r.get("epsilon") is not None:
                parts.append(f"eps={r['epsilon']:.4g}")
            if compare and "cluster" in r:
                parts.append(f"cluster {r['cluster']}")
            if r.get("ceiling_fraction") is not None:
                parts.append(f"{100 * r['ceiling_fraction']:.0f}% of ceiling")
            lines.append("  ".join(parts))
    if compare:
        lines += ["", "cluster: metrics in one cluster are not significantly different; "
                      "cluster k+1 is significantly worse than a member of cluster k."]
    return "\n".join(lines).lstrip("\n")
