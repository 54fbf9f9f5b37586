"""The listwise (best-of-N) table, read once: one row per (prompt, candidate).

Columns: `item` (the prompt) and `candidate` (the candidate's id within it) are the key;
`human.<name>` marks people's best candidates, 1 (a best one) or 0, so several 1s in one
prompt are candidates tied for best; every other column is a judge's (numbers): its score of
the candidate (higher is better), or 1 for the one it picked and 0 for the others. An empty
judge cell is a failed judgement: its prompt is left out and counted, never scored as 0.
Optional, not judges: `subset` (accuracy per subset; the subset `ties` is scored by
RewardBench 2's Ties rule and its item ids are `ref:ID` and `tied:ID`, as RewardBench 2
writes them), `output`, `input`, `reference`, `system`, `category`, `metadata`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from judgebench.errors import InputError
from judgebench.tables.columns import _where
from meta_eval.numerics import shown

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import BoolArray, FloatArray

KEY = ("item", "candidate")
NOT_JUDGES = frozenset({*KEY, "subset", "output", "input", "reference", "system", "category",
                        "metadata"})


@dataclass
class ListwiseTable:
    """A listwise table's rows (`frame`) and where they came from."""

    frame: pd.DataFrame
    where: str

    @classmethod
    def read(cls, path: str | Path) -> ListwiseTable:
        from judgebench.tables.io import read_table

        frame = read_table(path, key=KEY, text_columns=("subset",))
        return cls(frame, str(path))

    def _error(self, message: str, column: str, position: int) -> InputError:
        return InputError(message, path=self.where, field=column,
                          **_where(self.frame, self.where, position))

    def _numbers(self, column: str) -> FloatArray:
        import pandas as pd

        if column not in self.frame.columns:
            raise InputError(f"no column '{column}'; columns are {list(self.frame.columns)}",
                             path=self.where, field=column)
        raw = self.frame[column]
        values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
        text = np.isnan(values) & raw.notna().to_numpy() & \
            (raw.astype("str").str.strip() != "").to_numpy()
        bad = text | np.isinf(values)
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise self._error(f"not a finite number: {raw.iloc[at]!r}", column, at)
        return values

    def human(self, column: str) -> tuple[BoolArray, BoolArray]:
        """People's best candidates (1 or 0 on a row) and the rows people marked: a prompt
        left unmarked (every cell empty) is unlabelled; a prompt marked on some rows and
        empty on others is an error naming the first empty row."""
        values = self._numbers(column)
        bad = ~np.isin(values, (0.0, 1.0)) & ~np.isnan(values)
        if bad.any():
            at = int(np.flatnonzero(bad)[0])
            raise self._error("people's column marks each candidate 1 (a best one) or 0; got "
                              f"{shown(self.frame[column].iloc[at])}", column, at)
        marked: BoolArray = ~np.isnan(values)
        items = self.frame["item"].astype(str).to_numpy()
        partly = np.isin(items, items[marked]) & ~marked
        if partly.any():
            at = int(np.flatnonzero(partly)[0])
            raise self._error(f"prompt {items[at]!r} is marked on some candidates and empty "
                              "on this one: mark every candidate of a labelled prompt 1 or 0 "
                              "(or none, for a prompt people did not label)", column, at)
        best: BoolArray = values == 1.0
        return best, marked

    def judge(self, column: str) -> FloatArray:
        """A judge's scores (NaN: the judgement failed)."""
        return self._numbers(column)

    def judges(self, humans: Sequence[str]) -> list[str]:
        """The judge columns: every column that is not a key, a known text column, `human.*`
        or named (a text cell in one is then an error naming it, not a column skipped)."""
        return [str(c) for c in self.frame.columns
                if str(c) not in NOT_JUDGES and not str(c).startswith("human.")
                and str(c) not in humans]

    def column(self, name: str) -> list[str]:
        return [str(v) for v in self.frame[name]]
