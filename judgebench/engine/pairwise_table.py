"""The pairwise table: what `score` writes when its samples compare two outputs.

One row per compared pair: `item`, `system_a`, `system_b`, `category` (when any sample has
one, from `metadata.category`), `length_a` and `length_b` (the outputs' lengths in
characters, i.e. Unicode code points), then per pairwise judge three verdict columns, `<spec>`
(the combined verdict), `<spec>.ab` (A shown first) and `<spec>.ba` (B shown first), all in
terms of the original A and B, then the `human.<name>` columns carried from the samples.

A verdict is the text `a`, `b` or `tie` (`judge.pairwise`: its `extra.winner`,
`extra.verdict_ab`, `extra.verdict_ba`), or the decimal text of a number in [0, 1], the
probability that A is better (the value of a judge without `extra.winner`, e.g. the mean of a
`judge.panel` of pairwise judges). A value that is neither stops the table with an error
naming the metric and the pair. A cell is empty when the judge gave no verdict: a failed score
(parse error, refusal, error) leaves the combined verdict empty, and an order that was not run
(`both_orders=false`) or not parsed leaves its order column empty. Verdict columns are text
in every format, so a table written in chunks keeps one column type.

A run is pairwise when its samples are (`Sample.is_pairwise`); it may then use no pointwise
metric (one that requires `output`; a metric that requires neither `output` nor
`output_a`/`output_b`, such as `judge.panel` over pairwise members, takes the samples'
shape), and its input may hold only pairwise rows; `check_shape` says so before any work.
The store is the wide table's: scores keyed by `item` and `system` ("A vs B"), so `--resume`
works the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from judgebench.engine.survey import PairSurvey, category_of, majority, sample_hash, survey
from judgebench.errors import InputError, JudgebenchError
from judgebench.models import MetricInfo, Sample, Score, Status

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.engine.scoring import PreparedMetric
    from judgebench.engine.store import SampleKey, Store

PAIR_FIELDS = ("output_a", "output_b")
VERDICTS = ("a", "b", "tie")
ORDER_SUFFIXES = (".ab", ".ba")
KEY = ("item", "system_a", "system_b")


def is_pairwise_metric(info: MetricInfo) -> bool:
    """A metric that compares two outputs: it requires `output_a` or `output_b`."""
    return any(name in PAIR_FIELDS for name in info.requires)


def is_pointwise_metric(info: MetricInfo) -> bool:
    """A metric that scores one output: it requires `output`. (A metric that requires
    neither, such as `judge.panel`, whose members decide, takes the samples' shape.)"""
    return "output" in info.requires


def verdict_columns(column: str) -> dict[str, str]:
    """The three table columns of one pairwise judge column."""
    return {"verdict": column, "ab": f"{column}.ab", "ba": f"{column}.ba"}


def check_shape(pairs: PairSurvey, metrics: Sequence[tuple[str, MetricInfo]], *,
                keyed_by_pair: bool = True) -> bool:
    """Whether the run writes a pairwise table; an InputError, before any work, when the
    samples or the metrics mix the two shapes, or a pairwise row cannot key the table (with
    `keyed_by_pair`, a repeated (item, system_a, system_b) too)."""
    pairwise = [column for column, info in metrics if is_pairwise_metric(info)]
    pointwise = [column for column, info in metrics if is_pointwise_metric(info)]
    if pairwise and pointwise:
        raise InputError(
            f"pairwise metric(s) {pairwise} compare two outputs (a pairwise table) and "
            f"pointwise metric(s) {pointwise} score one (the wide table): one run writes one "
            "table, so score them in two runs")
    if pairs.first_pairwise is not None and pairs.first_pointwise is not None:
        (pair_item, pair_system), (one_item, one_system) = (pairs.first_pairwise,
                                                            pairs.first_pointwise)
        raise InputError(
            f"the input mixes {pairs.pairwise} pairwise rows (output_a/output_b; first: "
            f"item={pair_item!r}, system={pair_system!r}) and {pairs.pointwise} pointwise "
            f"rows (output; first: item={one_item!r}, system={one_system!r}): one run "
            "writes one table, so split the file", field="output_a")
    if not pairs.pairwise:
        return False
    if pointwise:
        raise InputError(
            f"the rows are pairwise (output_a/output_b) and metric(s) {pointwise} score one "
            "output: use pairwise metrics (e.g. judge.pairwise) on pairwise rows",
            field="output")
    if pairs.unnamed is not None:
        raise InputError(
            f"a pairwise row needs system_a and system_b (they key the pairwise table); "
            f"first without: item={pairs.unnamed[0]!r}, system={pairs.unnamed[1]!r}",
            field="system_a")
    if keyed_by_pair and pairs.repeated is not None:
        item, a, b = pairs.repeated
        raise InputError(f"pair (item={item!r}, system_a={a!r}, system_b={b!r}) given twice",
                         field="system_a")
    return True


def verdict_text(value: Any) -> str | None:
    """A verdict as the table writes it: `a`/`b`/`tie`, a probability in [0, 1] as its
    shortest round-trip decimal text, or None (missing, or not a verdict)."""
    if isinstance(value, str):
        text = value.strip().lower()
        return text if text in VERDICTS else None
    if isinstance(value, int | float) and not isinstance(value, bool) \
            and math.isfinite(value) and 0.0 <= value <= 1.0:
        return repr(float(value))
    return None


def verdicts_of(score: Score | None) -> tuple[str | None, str | None, str | None]:
    """(combined, A first, B first) of one stored score. The combined verdict is
    `extra.winner`, else the value, and only for an `ok` score; each order's verdict is
    `extra.verdict_ab` / `extra.verdict_ba` whatever the status (an order that parsed keeps
    its verdict when the other did not)."""
    if score is None:
        return None, None, None
    combined = None
    if score.status == Status.OK:
        given = score.extra.get("winner", score.value)
        combined = verdict_text(given)
        if combined is None and given is not None:
            raise JudgebenchError(
                f"metric {score.metric} gave {given!r} for the pair (item={score.item!r}, "
                f"system={score.system!r}): a verdict is a, b, tie or a probability in [0, 1]")
    return (combined, verdict_text(score.extra.get("verdict_ab")),
            verdict_text(score.extra.get("verdict_ba")))


def majority_verdicts(draws: Sequence[Mapping[SampleKey, Score]]) -> dict[SampleKey, Score]:
    """`score --repeats K` of a pairwise judge: per pair, the first draw's score whose
    combined verdict (of the draws that scored) and verdict per order (of the draws that
    gave one) are the majority of the draws' (`survey.majority`: the first drawn among the
    most frequent), or their mean where the verdicts are probabilities; one draw: that
    draw."""
    if len(draws) == 1:
        return dict(draws[0])

    def combined(texts: list[str]) -> str | float | None:
        if not texts:
            return None
        if any(t in VERDICTS for t in texts):
            return str(majority(texts))
        return math.fsum(float(t) for t in texts) / len(texts)

    out: dict[SampleKey, Score] = {}
    for key in {k for found in draws for k in found}:
        scores = [found[key] for found in draws if key in found]
        seen = [verdicts_of(s) for s in scores]
        winners = [v[0] for v in seen if v[0] is not None]
        extra = {**scores[0].extra, "draws": len(winners)}
        for position, name in ((1, "verdict_ab"), (2, "verdict_ba")):
            extra[name] = combined([t for v in seen if (t := v[position]) is not None])
        winner = combined(winners)
        if winner is None:
            out[key] = scores[0].model_copy(update={"extra": extra})
        else:
            out[key] = scores[0].model_copy(update={"extra": {**extra, "winner": winner},
                                                    "status": Status.OK})
    return out


def build_pairwise_table(
    samples: Sequence[Sample], prepared: Sequence[PreparedMetric], store: Store, *,
    hashes: Sequence[str] | None = None, human_names: Iterable[str] | None = None,
    stored: Mapping[str, Mapping[SampleKey, Score]] | None = None, has_category: bool = False,
) -> pd.DataFrame:
    """The pairwise table of `samples` (see the module docstring); as `runner.build_table`,
    each cell comes from the stored score of exactly that sample."""
    import pandas as pd

    if hashes is None:
        hashes = [sample_hash(s) for s in samples]
    keys = [(s.item, s.system, h) for s, h in zip(samples, hashes, strict=True)]
    data: dict[str, Any] = {
        "item": [s.item for s in samples],
        "system_a": [s.system_a for s in samples],
        "system_b": [s.system_b for s in samples],
    }
    if has_category:
        data["category"] = pd.array([category_of(s) for s in samples], dtype="string")
    for name, outputs in (("length_a", [s.output_a for s in samples]),
                          ("length_b", [s.output_b for s in samples])):
        data[name] = pd.array([None if o is None else len(o) for o in outputs], dtype="Int64")
    for p in prepared:
        found = (stored[p.column] if stored is not None and p.column in stored
                 else majority_verdicts(store.draws(p.signature, keys, p.repeats)))
        cells = [verdicts_of(found.get(k)) for k in keys]
        for position, column in enumerate(verdict_columns(p.column).values()):
            data[column] = pd.array([c[position] for c in cells], dtype="string")
    if human_names is None:
        human_names = survey(samples).human_names
    for name in human_names:
        data[f"human.{name}"] = pd.to_numeric(pd.Series([s.human.get(name) for s in samples],
                                                        dtype=object)).astype("float64")
    return pd.DataFrame(data)


def describe(summary: dict[str, Any]) -> dict[str, Any]:
    """The sidecar of a pairwise run: the runner's summary, marked `"table": "pairwise"`,
    with each judge's three columns under `columns.<spec>.table_columns`."""
    out = {"table": "pairwise", **summary}
    out["columns"] = {column: {**info, "table_columns": verdict_columns(column)}
                      for column, info in summary["columns"].items()}
    return out
