"""A table `aggregate` ranks systems from, read in the steps its kind needs: `VoterTable.read`
reads it once with no key (its columns tell the kind), then

- a leaderboard: keyed by its system column (`leaderboard`), or a corpus table (`judgebench
  score --corpus`: system, metric, value, status) as one (`corpus_leaderboard`: a row per
  system, a column per metric; its status column tells the failed scores);
- a scores table: every (conversation, turn) of judged turns a unit of its own (`units`,
  `judgebench.tables.turn_table`);
- a pairwise table: as first read;

with each voter (or verdict) column's failed cells (`failed`: by the sidecar's counts,
`judgebench.tables.failed`) and direction (`lower_is_better`: flag, sidecar, registered
metric, `judgebench.tables.scores_table`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.tables.failed import FailedCells

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost


@dataclass(frozen=True)
class VoterTable:
    """A table as first read (every column, no key), and whether it is a corpus table."""

    path: Path
    frame: pd.DataFrame
    corpus_table: bool

    @classmethod
    def read(cls, path: str | Path) -> VoterTable:
        from judgebench.tables.io import read_table
        from judgebench.tables.scores_table import is_corpus_table

        frame = read_table(path, key=None)
        return cls(Path(path), frame, is_corpus_table(frame.columns))

    def leaderboard(self, system: str) -> pd.DataFrame:
        """The table keyed by its `system` column (a repeated system is an InputError naming
        its line)."""
        from judgebench.tables.io import read_table

        return read_table(self.path, key=[system])

    def corpus_leaderboard(self) -> tuple[pd.DataFrame, FailedCells]:
        """The corpus table as a leaderboard: one row per system, one column per metric, a
        failed score empty; and the failed cells, told by the status column."""
        import pandas as pd

        from judgebench.tables.scores_table import (
            corpus_failures,
            corpus_from_records,
            corpus_records,
        )

        records = corpus_records(self.path)
        scores = corpus_from_records(records, where=str(self.path))
        systems = list(dict.fromkeys(s for by_system in scores.values() for s in by_system))
        frame = pd.DataFrame({"system": systems,
                              **{column: [by_system.get(s, float("nan")) for s in systems]
                                 for column, by_system in scores.items()}})
        found = FailedCells()
        for column, failed in corpus_failures(records).items():
            found.masks[column] = frame["system"].astype(str).isin(failed).to_numpy()
            found.told_by[column] = "status"
        return frame, found

    def units(self) -> pd.DataFrame:
        """The scores table with every judged turn a unit of its own (`item #turn`)."""
        from judgebench.tables.io import read_table
        from judgebench.tables.turn_table import turn_units

        return turn_units(read_table(self.path), "unit", path=str(self.path))

    def failed(self, frame: pd.DataFrame, columns: Sequence[str], *,
               judges: Mapping[str, Sequence[str]] | None = None) -> FailedCells:
        """The failed cells of `columns` of `frame` (rows of this table), told by the
        table's sidecar (`judgebench.tables.failed.find_failed`: cells reading `failed` are
        set empty in `frame`); `judges`: a pairwise judge -> its combined and order columns."""
        from judgebench.tables.failed import find_failed
        from judgebench.tables.scores_table import read_sidecar

        return find_failed(frame, columns, sidecar=read_sidecar(self.path), judges=judges)

    def lower_is_better(self, frame: pd.DataFrame, columns: Sequence[str], *,
                        lower: Sequence[str], higher: Sequence[str],
                        host: PluginHost | None = None) -> tuple[str, ...]:
        """The columns of `columns` where smaller is better, by the one direction rule (the
        flags `lower` and `higher`, which must name some of `columns`, then the sidecar,
        then the registered metric of `host`, or of the installed plugins)."""
        from judgebench.tables.scores_table import load_scores_table

        table = load_scores_table(self.path, frame=frame, lower=lower, higher=higher,
                                  host=host)
        table.check_flags(columns)
        return tuple(c for c in columns if not table.info(c).higher_is_better)


__all__ = ["VoterTable"]
