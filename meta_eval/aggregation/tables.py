"""From tables (pandas DataFrames) to the data rules rank.

Three shapes:

- leaderboard: one row per system, one numeric column per task or metric; each column is a
  voter. Empty cells are missing scores.
- scores: one row per (item, system) with metric columns; each item is a voter ranking the
  systems on one metric column.
- pairwise: one row per judgement: system_a, system_b and a verdict column, optionally item
  (the bootstrap resamples items), category, a weight column, human preference columns
  `human.<name>`, the outputs' lengths (length_a, length_b, or the texts output_a, output_b)
  and per judge `<spec>` (its combined verdict), `<spec>.ab` and `<spec>.ba` (each order).
  A verdict is a | b | tie (any case; also draw), the winning system's name, or a number in
  [0, 1] = P(A is better). The verdict column is `winner` if present, else the one judge's
  combined column, else the one named (`winner=`).

Bad input raises TableError naming the row (0-based position in the frame) and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from meta_eval.aggregation.profile import Comparisons, Profile
from meta_eval.numerics import shown

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray

LEADERBOARD, SCORES, PAIRWISE_TABLE = "leaderboard", "scores", "pairwise"
KINDS = (LEADERBOARD, SCORES, PAIRWISE_TABLE)
PAIRWISE_COLUMNS = ("system_a", "system_b")
SCORES_COLUMNS = ("item", "system")
WINNER = "winner"
LENGTH_COLUMNS = ("length_a", "length_b")
OUTPUT_COLUMNS = ("output_a", "output_b")
#: columns of a pairwise table that are never a judge's verdict
PAIRWISE_KEYS = frozenset({"item", "system_a", "system_b", "category", "input", "question",
                           "reference", "weight", *LENGTH_COLUMNS, *OUTPUT_COLUMNS})
ORDER_SUFFIXES = (".ab", ".ba")


class TableError(ValueError):
    """Bad table content; `row` is the 0-based row position, `field` the column."""

    def __init__(self, message: str, *, row: int | None = None, field: str | None = None):
        super().__init__(message)
        self.row = row
        self.field = field


def detect_kind(columns: Iterable[str]) -> str:
    """pairwise if it has system_a and system_b; scores if item and system; otherwise a
    leaderboard."""
    cols = set(columns)
    if set(PAIRWISE_COLUMNS) <= cols:
        return PAIRWISE_TABLE
    if set(SCORES_COLUMNS) <= cols:
        return SCORES
    return LEADERBOARD


def numeric_column(frame: pd.DataFrame, column: str) -> FloatArray:
    """A column as floats (empty cells and NaN are missing: NaN). A cell that is not a finite
    number (text, a boolean, inf, -inf) is a TableError at its row."""
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce")
    boolean = raw.map(lambda v: isinstance(v, bool | np.bool_)).to_numpy(dtype=bool)
    if pd.api.types.is_bool_dtype(raw) or boolean.any():
        row = int(np.flatnonzero(boolean)[0]) if boolean.any() else 0
        raise TableError(f"a boolean, not a score: {raw.iloc[row]!r}", row=row, field=column)
    bad = values.isna() & raw.notna() & (raw.astype("str").str.strip() != "")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise TableError(f"not a number: {raw.iloc[row]!r}", row=row, field=column)
    out = values.to_numpy(dtype=float, na_value=np.nan)  # Int64 columns hold pd.NA
    if np.isinf(out).any():
        row = int(np.flatnonzero(np.isinf(out))[0])
        raise TableError(f"value {shown(out[row])} is not finite: a score must be a finite number "
                         "(leave the cell empty when it is missing)", row=row, field=column)
    return out


def _key_column(frame: pd.DataFrame, column: str) -> list[str]:
    if column not in frame.columns:
        raise TableError(f"no column '{column}'; columns are {list(frame.columns)}",
                         field=column)
    values = frame[column]
    empty = values.isna() | (values.astype("str").str.strip() == "")
    if empty.any():
        raise TableError("empty cell", row=int(np.flatnonzero(empty.to_numpy())[0]),
                         field=column)
    return [str(v).strip() for v in values]


def leaderboard_system_column(frame: pd.DataFrame, system: str | None = None) -> str:
    """The column naming the systems: `system` if given or present, else the first column
    that is not numeric."""
    if system is not None:
        if system not in frame.columns:
            raise TableError(f"no column '{system}'; columns are {list(frame.columns)}",
                             field=system)
        return system
    if "system" in frame.columns:
        return "system"
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):
            return str(column)
    raise TableError("no system column: name it 'system' or make the first column the "
                     "system names")


def profile_from_leaderboard(
    frame: pd.DataFrame,
    *,
    system: str | None = None,
    columns: Sequence[str] | None = None,
    weights: Mapping[str, float] | None = None,
    lower_is_better: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> Profile:
    """A profile whose voters are the leaderboard's task/metric columns.

    weights: column -> weight (default 1; a column of weight 0 is dropped).
    lower_is_better: columns where a smaller score is better.
    exclude: columns that are not voters (e.g. a human score column)."""
    system = leaderboard_system_column(frame, system)
    names = _key_column(frame, system)
    seen: dict[str, int] = {}
    for row, name in enumerate(names):
        if name in seen:
            raise TableError(f"system '{name}' appears twice", row=row, field=system)
        seen[name] = row
    skip = {system, *exclude}
    if columns is None:
        columns = [str(c) for c in frame.columns if c not in skip]
    weights = dict(weights or {})
    lower = set(lower_is_better)
    for column in [*columns, *weights, *lower]:
        if column not in frame.columns:
            raise TableError(f"no column '{column}'; columns are {list(frame.columns)}",
                             field=column)
    for column, weight in weights.items():
        if not np.isfinite(weight) or weight < 0:
            raise TableError(f"weight must be a non-negative number, got {weight}",
                             field=column)
        if column not in columns:
            raise TableError("weight given for a column that is not a voter", field=column)
    voters = [c for c in columns if weights.get(c, 1.0) > 0]
    if not voters:
        raise TableError("no score columns left to aggregate (all dropped or weight 0)")
    scores = np.column_stack([numeric_column(frame, c) for c in voters])
    return Profile(
        systems=tuple(names),
        scores=scores.T,
        weights=np.array([float(weights.get(c, 1.0)) for c in voters]),
        higher_is_better=np.array([c not in lower for c in voters]),
        voters=tuple(voters),
    )


def profile_from_scores(
    frame: pd.DataFrame,
    *,
    metric: str,
    item: str = "item",
    system: str = "system",
    higher_is_better: bool = True,
) -> Profile:
    """A profile whose voters are items, each ranking the systems on one metric column."""
    items = _key_column(frame, item)
    systems = _key_column(frame, system)
    if metric not in frame.columns:
        raise TableError(f"no column '{metric}'; columns are {list(frame.columns)}",
                         field=metric)
    values = numeric_column(frame, metric)
    item_index: dict[str, int] = {}
    system_index: dict[str, int] = {}
    for name in items:
        item_index.setdefault(name, len(item_index))
    for name in systems:
        system_index.setdefault(name, len(system_index))
    rows = np.array([item_index[x] for x in items])
    cols = np.array([system_index[x] for x in systems])
    flat = rows * len(system_index) + cols
    duplicated = pd.Series(flat).duplicated().to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        raise TableError(f"duplicate (item, system) = ({items[row]}, {systems[row]})",
                         row=row, field=item)
    scores = np.full((len(item_index), len(system_index)), np.nan)
    scores[rows, cols] = values
    return Profile(
        systems=tuple(system_index),
        scores=scores,
        higher_is_better=np.full(len(item_index), bool(higher_is_better)),
        voters=tuple(item_index),
    )


def verdict_columns(columns: Iterable[str]) -> list[str]:
    """The judges' combined verdict columns of a pairwise table: every column that is not a
    key (item, system_a, system_b, category, lengths, outputs, ...), a human column
    (`human.*`), or one order's verdict (`<spec>.ab`, `<spec>.ba`)."""
    return [str(c) for c in columns
            if str(c) not in PAIRWISE_KEYS and not str(c).startswith("human.")
            and not str(c).endswith(ORDER_SUFFIXES)]


def winner_column(columns: Iterable[str], winner: str | None = None) -> str:
    """The verdict column: `winner` if named (any column: a combined verdict, a `.ab`/`.ba`
    column, a human column), else the column `winner`, else the one judge's combined verdict
    column. Several judges and no choice: a TableError listing them."""
    cols = [str(c) for c in columns]
    if winner is not None:
        if winner not in cols:
            raise TableError(f"no column '{winner}'; columns are {cols}", field=winner)
        return winner
    if WINNER in cols:
        return WINNER
    judges = verdict_columns(cols)
    if len(judges) == 1:
        return judges[0]
    if not judges:
        humans = [c for c in cols if c.startswith("human.")]
        raise TableError("no verdict column: a pairwise table needs 'winner' or a judge's "
                         "column" + (f"; to rank by people give --winner one of {humans}"
                                     if humans else ""), field=WINNER)
    raise TableError(f"{len(judges)} judges' verdict columns {judges}: name the one to rank "
                     "by (--winner COL)", field=WINNER)


def _probability(value: object, a: str, b: str) -> float | str:
    """One verdict as P(A is better), NaN when missing, or the text that is not a verdict."""
    if value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
        return float("nan")
    if isinstance(value, bool | np.bool_):
        return repr(value)
    if isinstance(value, int | float | np.integer | np.floating):
        return float(value)
    text = str(value).strip()
    low = text.lower()
    if not text:
        return float("nan")
    if low in ("a", "b", "tie", "draw"):
        return {"a": 1.0, "b": 0.0}.get(low, 0.5)
    if text == a:
        return 1.0
    if text == b:
        return 0.0
    try:
        return float(text)
    except ValueError:
        return text


def verdict_probabilities(frame: pd.DataFrame, column: str, first: Sequence[str],
                          second: Sequence[str]) -> FloatArray:
    """A verdict column as P(A is better) per row: a -> 1, b -> 0, tie/draw -> 0.5, the name
    of system_a -> 1 or system_b -> 0, a number in [0, 1] as it is; missing (empty) -> NaN.
    Anything else (text, a number outside [0, 1], inf) is a TableError at its row."""
    out = np.empty(len(frame))
    for row, (value, a, b) in enumerate(zip(frame[column], first, second, strict=True)):
        p = _probability(value, a, b)
        if isinstance(p, str):
            raise TableError(f"a verdict is a, b, tie (or the name of system_a or system_b) "
                             f"or a number in [0, 1] = P(A is better); got {p!r}",
                             row=row, field=column)
        if not np.isnan(p) and not 0.0 <= p <= 1.0:
            raise TableError(f"a numeric verdict is P(A is better) and must be in [0, 1]; "
                             f"got {p!r}", row=row, field=column)
        out[row] = p
    return out


def output_lengths(frame: pd.DataFrame) -> FloatArray | None:
    """(rows, 2) lengths of A's and B's outputs: the numbers in length_a and length_b, else
    the number of characters of output_a and output_b; None when the table has neither
    pair of columns. An empty cell is a missing length (NaN: only the rules that need
    lengths refuse it); text, a negative number or inf is a TableError at its row."""
    cols = set(frame.columns)
    if set(LENGTH_COLUMNS) <= cols:
        values = np.column_stack([numeric_column(frame, c) for c in LENGTH_COLUMNS])
        negative = values < 0
        if negative.any():
            row, k = (int(x) for x in np.argwhere(negative)[0])
            raise TableError("an output length must be a non-negative number, got "
                             f"{shown(frame[LENGTH_COLUMNS[k]].iloc[row])}", row=row,
                             field=LENGTH_COLUMNS[k])
        return values
    if set(OUTPUT_COLUMNS) <= cols:
        return np.column_stack([
            frame[c].map(lambda v: np.nan if v is None or v is pd.NA
                         or (isinstance(v, float) and np.isnan(v))
                         else len(str(v))).to_numpy(dtype=float)
            for c in OUTPUT_COLUMNS])
    return None


def comparisons_from_pairwise(
    frame: pd.DataFrame,
    *,
    system_a: str = "system_a",
    system_b: str = "system_b",
    winner: str | None = None,
    item: str | None = "item",
    weight: str | None = None,
) -> Comparisons:
    """Comparisons from a pairwise table (see the module docstring; `winner` as in
    `winner_column`); `item` (if the column exists) groups them for the bootstrap. Rows with
    no verdict (an empty cell: the judge failed) are left out; `pairwise_dropped` counts
    them. Lengths come from `output_lengths`."""
    column = winner_column(frame.columns, winner)
    first = _key_column(frame, system_a)
    second = _key_column(frame, system_b)
    system_index: dict[str, int] = {}
    for row, (a, b) in enumerate(zip(first, second, strict=True)):
        if a == b:
            raise TableError(f"system '{a}' is compared with itself", row=row, field=system_b)
        system_index.setdefault(a, len(system_index))
        system_index.setdefault(b, len(system_index))
    outcome = verdict_probabilities(frame, column, first, second)
    groups = None
    if item is not None and item in frame.columns:
        groups = np.unique(np.array(_key_column(frame, item)), return_inverse=True)[1]
    w = None
    if weight is not None:
        if weight not in frame.columns:
            raise TableError(f"no column '{weight}'", field=weight)
        w = numeric_column(frame, weight)
        bad = np.isnan(w) | (w < 0)
        if bad.any():
            raise TableError("weight must be a non-negative number",
                             row=int(np.flatnonzero(bad)[0]), field=weight)
    lengths = output_lengths(frame)
    keep = ~np.isnan(outcome)
    return Comparisons(
        systems=tuple(system_index),
        a=np.array([system_index[x] for x in first], dtype=np.int64)[keep],
        b=np.array([system_index[x] for x in second], dtype=np.int64)[keep],
        outcome=outcome[keep],
        weights=None if w is None else w[keep],
        groups=None if groups is None else groups[keep],
        lengths=None if lengths is None else lengths[keep],
    )


def pairwise_dropped(frame: pd.DataFrame, winner: str | None = None) -> int:
    """How many rows `comparisons_from_pairwise` leaves out for want of a verdict."""
    column = winner_column(frame.columns, winner)
    values = frame[column]
    return int((values.isna() | (values.astype("str").str.strip() == "")).sum())


def refuse_pairs_in_wide(frame: pd.DataFrame, *, system: str = "system") -> None:
    """A wide table whose every `system` reads "X vs Y" holds pairwise verdicts in the wrong
    shape: a TableError saying to use system_a and system_b."""
    if system not in frame.columns or not len(frame):
        return
    from meta_eval.pairwise import names_pairs

    names = frame[system].astype("str").str.strip()
    if names_pairs(list(names)):
        raise TableError(
            f"the systems look like pairs ({names.iloc[0]!r}): this is a pairwise judge's "
            "output in the wide shape. Give one row per compared pair with columns system_a, "
            "system_b and the verdict (a, b, tie or P(A is better)); `judgebench score` "
            "writes that shape for pairwise judges", row=0, field=system)


def human_system_scores(frame: pd.DataFrame, *, column: str, system: str = "system"
                        ) -> dict[str, float]:
    """Per-system mean of a human column over the rows where it is present."""
    if column not in frame.columns:
        raise TableError(f"no column '{column}'; columns are {list(frame.columns)}",
                         field=column)
    values = numeric_column(frame, column)
    systems = _key_column(frame, system)
    table = pd.DataFrame({"system": systems, "value": values})
    means = table.groupby("system", sort=False)["value"].mean()
    return {str(k): float(v) for k, v in means.items() if np.isfinite(v)}


def drop_incomplete(profile: Profile, what: str) -> Profile:
    """Drop the systems ('systems') or the voters ('voters') with any missing score."""
    scored = profile.scored
    if what == "voters":
        keep = scored.all(axis=1)
        if not keep.any():
            raise TableError("every voter misses some score: nothing left after dropping")
        return profile.take(np.flatnonzero(keep))
    if what == "systems":
        keep = scored.all(axis=0)
        if not keep.any():
            raise TableError("every system misses some score: nothing left after dropping")
        idx = np.flatnonzero(keep)
        return Profile(
            systems=tuple(profile.systems[i] for i in idx),
            scores=profile.scores[:, idx],
            weights=profile.weights,
            higher_is_better=profile.higher_is_better,
            voters=profile.voters,
        )
    raise ValueError("what must be 'systems' or 'voters'")

