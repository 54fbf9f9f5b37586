"""A scores table read once for an analysis: `PreparedTable.read` does the eight steps every
reader of a wide scores table needs, in one order, and every analysis (meta-eval and its
modes, the audit, items, combine) takes the result.

1. the frame (a path or a DataFrame; `store:` human columns read from a store's labels,
   `judgebench.tables.store_humans`) and 2. its sidecar and corpus scores
   (`judgebench.tables.scores_table`);
3. the failed cells, told over the whole table (the sidecar counts the whole table; with a
   store, each row's stored status) before any system is left out, and counted as
   `--failed-as` says (`judgebench.tables.failed`);
4. a table of judged turns laid out for its views (`judgebench.tables.turn_table`);
5. the columns: human and rater columns numeric, the metric columns named or chosen
   (`judgebench.tables.columns`), and each metric's direction (`ScoresTable.info`);
6. and 7. the raw and oriented (higher is better) score matrices, and 8. the corpus scores
   per system, raw and oriented, computed when an analysis asks for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.tables.columns import KEY_COLUMNS, metric_columns, numeric_columns
from judgebench.tables.failed import (
    MISSING,
    FailedAs,
    FailedCells,
    apply_corpus,
    apply_numeric,
    find_failed,
    store_statuses,
)
from judgebench.tables.scores_table import ColumnInfo, ScoresTable, load_scores_table
from judgebench.tables.store_humans import add_store_columns

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray
    from meta_eval.table import ScoreMatrices

Log = Callable[[str], None]
DATAFRAME = "<DataFrame>"


@dataclass
class PreparedTable:
    """A wide scores table ready for the statistics: the rows to use (failed cells counted,
    systems left out, turns laid out), the metric columns and what each is."""

    table: ScoresTable
    frame: pd.DataFrame
    humans: tuple[str, ...]
    raters: tuple[str, ...]
    #: the metric columns: named, or every numeric column that is not a key, a human or rater
    #: column or named with a refused prefix; with corpus scores, corpus-only ones too
    metrics: list[str]
    infos: dict[str, ColumnInfo]
    failed_as: FailedAs = MISSING
    #: the failed cells as told (masks in the rows of `frame`)
    cells: FailedCells = field(default_factory=FailedCells)
    #: column -> its failed rows and how they were counted (`judgebench.tables.failed`)
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: column -> its failed corpus scores (systems), for its system-level corpus results
    corpus_failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: how judged turns were laid out ("conversation", "unit"), None without turns
    layout: str | None = None
    #: read with `use_corpus`: corpus-only metrics are columns, corpus scores system scores
    use_corpus: bool = False
    _matrices: dict[tuple[bool, tuple[str, ...]], ScoreMatrices] = field(
        default_factory=dict, repr=False)

    @property
    def path(self) -> Path:
        return self.table.path

    @property
    def where(self) -> str:
        return str(self.table.path)

    @property
    def sidecar(self) -> dict[str, Any] | None:
        return self.table.sidecar

    @property
    def in_table(self) -> list[str]:
        """The metric columns with segment scores (not corpus-only)."""
        return [c for c in self.metrics if self.infos[c].in_table]

    @classmethod
    def read(cls, source: str | Path | pd.DataFrame, humans: Sequence[str] | None,
             metrics: Sequence[str] = (), *, raters: Sequence[str] = (),
             others: Sequence[str] = (), prefixes: Sequence[str] = ("human.",),
             lower: Sequence[str] = (), higher: Sequence[str] = (),
             corpus_path: str | Path | None = None, use_corpus: bool = False,
             exclude_systems: Sequence[str] = (), failed_as: FailedAs = MISSING,
             views: Sequence[tuple[str, str]] = (("segment", "none"),),
             store_path: str | Path | None = None, host: PluginHost | None = None,
             log: Log | None = None) -> PreparedTable:
        """Read `source` (see the module) for `humans` against `metrics` (default: every
        metric column). `raters`: annotator columns, numeric and not metrics; `others`:
        columns that are not metrics either, left as they are; `prefixes`: names of columns
        never chosen as metrics. `use_corpus`: corpus-only metrics are columns too (their
        system scores are corpus scores). `views`: the (level, grouping) pairs the table is
        read for (the layout of judged turns). `store_path`: the store the table was scored
        into, whose statuses tell failed cells row by row. `humans` None: every `human.*`
        column; a `store:CRITERION` human, rater or other column is people's labels in a
        store (`judgebench.tables.store_humans`). Bad input raises InputError naming the
        file and field."""
        log = log or (lambda _message: None)
        table = _load(source, corpus_path, lower, higher, host)
        where = str(table.path)
        frame = table.frame
        add_store_columns(frame, [*(humans or ()), *raters, *others], store=store_path,
                          sidecar=table.sidecar, where=where)
        if humans is None:
            humans = [str(c) for c in frame.columns if str(c).startswith("human.")]
        layout = None
        if _has_turns(frame):  # conversations scored turn by turn
            from judgebench.tables.turn_table import turn_layout

            layout = turn_layout(views, path=where)
        not_scores = {*KEY_COLUMNS, *humans, *raters, *others}
        candidates = list(metrics) or [str(c) for c in frame.columns if c not in not_scores
                                       and not str(c).startswith(tuple(prefixes))]
        # before --exclude-system: the sidecar's counts are of the whole table
        cells = find_failed(frame, candidates, sidecar=table.sidecar, statuses=None
                            if store_path is None else _stored_statuses(
                                store_path, table, metrics, _laid_out(frame, layout, where)))
        if exclude_systems:
            frame = _exclude(frame, exclude_systems, where)
            keep = ~table.frame["system"].isin(exclude_systems).to_numpy()
            cells.masks = {c: m[keep] for c, m in cells.masks.items()}
        if layout is not None:
            frame = _laid_out(frame, layout, where)
            log("judged turns: the items are the conversations, the systems each (system, "
                "turn)" if layout == "conversation" else
                "judged turns: each (conversation, turn) is an item, written 'item #turn'")
        for note in cells.notes:
            log(note)
        chosen = _metric_columns(table, frame, humans, metrics, raters=raters, others=others,
                                 prefixes=prefixes, use_corpus=use_corpus, log=log)
        table.check_flags(chosen)
        counts = apply_numeric(frame, cells, [c for c in chosen if c in frame.columns],
                               failed_as)
        corpus = (apply_corpus(table.corpus, table.corpus_failed, chosen, failed_as)
                  if use_corpus else {})
        return cls(table, frame, tuple(humans), tuple(raters), chosen,
                   {c: table.info(c) for c in chosen}, failed_as, cells, counts, corpus,
                   layout, use_corpus)

    def oriented_frame(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """A copy of the rows with each lower-is-better metric column (of `columns`, default
        every metric) negated."""
        return self.table.oriented(self.frame, self.metrics if columns is None else columns)

    def matrices(self, names: Sequence[str], *, oriented: bool = True) -> ScoreMatrices:
        """The (items x systems) matrices of `names` (human and metric columns), every
        lower-is-better metric negated unless `oriented` is False; read once per set."""
        key = (oriented, tuple(names))
        if key not in self._matrices:
            from meta_eval.table import score_matrices

            frame = self.oriented_frame(self.in_table) if oriented else self.frame
            self._matrices[key] = score_matrices(frame, list(names))
        return self._matrices[key]

    def corpus_scores(self, systems: Sequence[str], *, oriented: bool = True,
                      columns: Sequence[str] | None = None) -> dict[str, FloatArray]:
        """Metric column -> its corpus score per system of `systems` (NaN where missing),
        negated where lower is better unless `oriented` is False, for the metric columns
        (or `columns`) that have corpus scores."""
        import numpy as np

        chosen = self.metrics if columns is None else columns
        if oriented:
            return self.table.oriented_system_scores(chosen, systems)
        return {c: np.asarray(scores, dtype=float) for c in chosen
                if (scores := self.table.system_scores(c, systems)) is not None}



def _stored_statuses(store_path: str | Path, table: ScoresTable, metrics: Sequence[str],
                     keyed: pd.DataFrame) -> dict[str, list[str | None]]:
    """Each row's stored status per column (`keyed`: the rows keyed as the store keys them)."""
    return store_statuses(store_path, table.sidecar, metrics or keyed.columns,
                          list(zip(keyed["item"].astype("str"), keyed["system"].astype("str"),
                                   strict=True)))


def _metric_columns(table: ScoresTable, frame: pd.DataFrame, humans: Sequence[str],
                    metrics: Sequence[str], *, raters: Sequence[str], others: Sequence[str],
                    prefixes: Sequence[str], use_corpus: bool, log: Log) -> list[str]:
    """The human and rater columns made numeric, and the metric columns: `metrics` (numeric,
    or corpus-only with `use_corpus`), else every numeric column that is not a key, a human,
    rater or other column or named with one of `prefixes`."""
    where = str(table.path)
    numeric_columns(frame, [*humans, *raters], where)
    corpus_only = [c for c in table.corpus_only if c not in (*humans, *raters)]
    for column in metrics:
        if column not in corpus_only:
            numeric_columns(frame, [column], where)
        elif not use_corpus:
            raise InputError("a corpus-only metric (no segment scores) is meta-evaluated "
                             "at --level system with --system-score auto",
                             path=where, field=column)
    chosen = list(dict.fromkeys(metrics)) or [
        *metric_columns(frame, exclude=[*humans, *raters, *others], prefixes=prefixes,
                        warn=log, path=where),
        *(corpus_only if use_corpus else [])]
    if not chosen:
        raise InputError("no metric columns: name them with --metric", path=where)
    return chosen

def _has_turns(frame: pd.DataFrame) -> bool:
    from judgebench.tables.turn_table import has_turns

    return has_turns(frame)


def _laid_out(frame: pd.DataFrame, layout: str | None, where: str) -> pd.DataFrame:
    if layout is None:
        return frame
    from judgebench.tables.turn_table import turn_units

    return turn_units(frame, layout, path=where)


def _load(source: str | Path | pd.DataFrame, corpus_path: str | Path | None,
          lower: Sequence[str], higher: Sequence[str], host: PluginHost | None
          ) -> ScoresTable:
    import pandas as pd

    corpus = Path(corpus_path) if corpus_path is not None else None
    if isinstance(source, pd.DataFrame):
        return load_scores_table(Path(DATAFRAME), frame=source, corpus_path=corpus,
                                 lower=lower, higher=higher, host=host, turns=None)
    return load_scores_table(Path(source), corpus_path=corpus, lower=lower, higher=higher,
                             host=host, turns=None)


def _exclude(frame: pd.DataFrame, excluded: Sequence[str], where: str) -> pd.DataFrame:
    from judgebench.tables.io import LineNumbers

    known = set(frame["system"])
    unknown = [s for s in excluded if s not in known]
    if unknown:
        raise InputError(f"unknown system(s) {unknown}", path=where, field="--exclude-system")
    keep = ~frame["system"].isin(excluded)
    kept = frame[keep].reset_index(drop=True)
    lines = frame.attrs.get("lines")
    if lines is not None:  # an error after this names the line of the row it is about
        kept.attrs["lines"] = LineNumbers(n for n, k in zip(lines, keep, strict=True) if k)
    return kept
