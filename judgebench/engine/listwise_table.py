"""The listwise table: what `score` writes when its metric judges the best of N.

Input, one row per (prompt, candidate): `item` and `candidate` (the key, unique), `output`
(the candidate's text), `input` or `source` (the prompt, the same on every row of an item),
optional `subset` (the same on every row of an item) and `human.<name>` columns, 1 for a
candidate people marked best (several: tied for best) or 0. A first read checks every row,
before any work, and names the file, line and field of the first bad one; an item needs at
least two candidates.

The rows are grouped by item, in order of first appearance, into one listwise sample each
(`judgebench.listwise_sample`), scored by the runner like any sample: one judgement per item,
stored under (item, `LISTWISE_SYSTEM`, the content hash of every candidate), so `--resume`
judges again only an item that changed. The table has one row per input row: `item`,
`candidate`, `subset` (when given), per listwise judge a column (its spec) with 1 for the
candidate it picked and 0 for the others, empty on every row of an item whose judgement
failed, then the `human.*` columns as given: the table `meta-eval listwise` reads
(`judgebench.tables.listwise`).

A run is listwise when a metric's `MetricInfo.listwise` says so; it may then use no other
kind of metric (`check_specs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError, JudgebenchError
from judgebench.listwise_sample import LISTWISE_SYSTEM, candidates_output
from judgebench.models import MetricInfo, Sample, Status

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.engine.scoring import PreparedMetric
    from judgebench.engine.store import Store

KEY = ("item", "candidate")
TEXT_COLUMNS = ("output", "input", "source", "subset")


def is_listwise_metric(info: MetricInfo) -> bool:
    """A metric that judges one prompt's N candidates at once."""
    return info.listwise


def check_specs(metrics: Sequence[tuple[str, MetricInfo]]) -> bool:
    """Whether the run is listwise; an InputError, before any work, when it mixes listwise
    metrics with others (one run writes one table)."""
    listwise = [column for column, info in metrics if is_listwise_metric(info)]
    others = [column for column, info in metrics if not is_listwise_metric(info)]
    if listwise and others:
        raise InputError(
            f"listwise metric(s) {listwise} judge each prompt's N candidates (a listwise "
            f"table) and metric(s) {others} score one output at a time (another table): one "
            "run writes one table, so score them in two runs", field="--metric")
    return bool(listwise)


@dataclass
class ListwiseRows:
    """A listwise input file, read and checked once (`read`), and its samples."""

    frame: pd.DataFrame
    where: str
    humans: list[str]

    @classmethod
    def read(cls, path: str | Path) -> ListwiseRows:
        from judgebench.tables.io import read_table

        try:
            frame = read_table(path, key=KEY, text_columns=TEXT_COLUMNS)
        except InputError as exc:
            if exc.field is None or "candidate" not in exc.field:
                raise
            raise InputError(f"{exc.detail}; a listwise metric (judge.listwise) reads one row "
                             "per (item, candidate): item, candidate, output, input, "
                             "human.* best marks", path=str(path), field=exc.field) from None
        rows = cls(frame, str(path), [str(c) for c in frame.columns
                                      if str(c).startswith("human.")])
        rows._check()
        return rows

    def _error(self, message: str, field: str, position: int) -> InputError:
        from judgebench.tables.columns import _where

        return InputError(message, path=self.where, field=field,
                          **_where(self.frame, self.where, position))

    def _check(self) -> None:
        import numpy as np
        import pandas as pd

        frame = self.frame
        if "output" not in frame.columns:
            raise InputError("a listwise row needs 'output' (the candidate's text); columns "
                             f"are {list(frame.columns)}", path=self.where, field="output")
        missing = frame["output"].isna().to_numpy()
        if missing.any():
            raise self._error("no output: every candidate needs its text", "output",
                              int(missing.argmax()))
        items = frame["item"]
        for name in ("input", "source", "subset"):
            if name not in frame.columns:
                continue
            firsts = frame[name].groupby(items, sort=False).transform("first")
            differs = (frame[name].fillna("\x00") != firsts.fillna("\x00")).to_numpy()
            if differs.any():
                at = int(differs.argmax())
                raise self._error(f"item {items.iloc[at]!r} has another {name} on an earlier "
                                  f"row: every candidate of an item shares its {name}", name, at)
        counts = items.map(items.value_counts())
        alone = (counts < 2).to_numpy()
        if alone.any():
            at = int(alone.argmax())
            raise self._error(f"item {items.iloc[at]!r} has one candidate: the best of N "
                              "needs at least 2", "candidate", at)
        for name in self.humans:
            raw = frame[name]
            values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            bad = (np.isnan(values) & raw.notna().to_numpy()) | \
                (~np.isnan(values) & ~np.isin(values, (0.0, 1.0)))
            if bad.any():
                at = int(bad.argmax())
                raise self._error("people's column marks each candidate 1 (a best one) or 0 "
                                  f"(or leaves it empty); got {raw.iloc[at]!r}", name, at)
            frame[name] = values

    def first_items(self, limit: int | None) -> ListwiseRows:
        """The rows of the first `limit` items (None: every row)."""
        if limit is None:
            return self
        keep = list(dict.fromkeys(self.frame["item"].tolist()))[:limit]
        frame = self.frame[self.frame["item"].isin(keep)].reset_index(drop=True)
        return ListwiseRows(frame, self.where, self.humans)

    def samples(self) -> list[Sample]:
        """One listwise sample per item, in order of first appearance."""
        frame = self.frame
        prompt = next((c for c in ("input", "source") if c in frame.columns), None)
        out = []
        for item, rows in frame.groupby("item", sort=False):
            first = rows.iloc[0]
            text = None if prompt is None or _missing(first[prompt]) else str(first[prompt])
            metadata: dict[str, Any] = {}
            if "subset" in frame.columns and not _missing(first["subset"]):
                metadata["subset"] = str(first["subset"])
            output = candidates_output([(str(c), str(o)) for c, o in zip(
                rows["candidate"], rows["output"], strict=True)])
            out.append(Sample(item=str(item), system=LISTWISE_SYSTEM, output=output,
                              input=text if prompt == "input" else None,
                              source=text if prompt == "source" else None,
                              metadata=metadata))
        return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def build_listwise_table(rows: ListwiseRows, samples: Sequence[Sample],
                         prepared: Sequence[PreparedMetric], store: Store) -> pd.DataFrame:
    """The listwise table of `rows` (see the module docstring), each judge's cells from the
    stored score of exactly each item's sample."""
    import numpy as np
    import pandas as pd

    from judgebench.engine.survey import sample_hash

    frame = rows.frame
    keys = [(s.item, s.system, sample_hash(s)) for s in samples]
    data: dict[str, Any] = {"item": frame["item"].astype(str).tolist(),
                            "candidate": frame["candidate"].astype(str).tolist()}
    if "subset" in frame.columns:
        data["subset"] = pd.array(frame["subset"].tolist(), dtype="string")
    for p in prepared:
        found = store.draws(p.signature, keys, 1)[0]
        picks: dict[str, str | None] = {}
        for key in keys:
            score = found.get(key)
            pick = None
            if score is not None and score.status == Status.OK:
                pick = score.extra.get("pick")
                if not isinstance(pick, str):
                    raise JudgebenchError(f"metric {score.metric} gave no candidate id "
                                          f"(extra.pick) for item {key[0]!r}")
            picks[key[0]] = pick
        column = []
        for item, candidate in zip(data["item"], data["candidate"], strict=True):
            pick = picks.get(item)
            column.append(np.nan if pick is None else float(candidate == pick))
        data[p.column] = np.array(column, dtype=float)
    for name in rows.humans:
        data[name] = frame[name].to_numpy(dtype=float)
    return pd.DataFrame(data)
