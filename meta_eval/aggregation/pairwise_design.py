"""What Bradley-Terry's extra terms read from a pairwise table: the style covariates of each
judged row (`meta_eval.aggregation.style`) and the counts by presentation order for the order
effect (`rating.fit_order_effect`).

Covariates (`controls`, in the order given):

- `length`: arena-hard-auto's length feature from `length_a`/`length_b`, else from the
  texts' characters (`tables.output_lengths`);
- `markdown`: three features (headers, lists, bold) from the texts `output_a`/`output_b`,
  densities per character of the same lengths;
- any other name COL: the difference `COL_a - COL_b` when the table has both columns, else
  the column COL itself, read as a per-row covariate already in A-minus-B form.

All are standardised over the rows kept (`style.standardise`). Rows whose verdict is empty are
left out exactly as `comparisons_from_pairwise` leaves them out, so row k of the covariates is
comparison k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.aggregation.style import (
    MARKDOWN_FEATURES,
    length_feature,
    markdown_counts,
    markdown_feature,
    standardise,
)
from meta_eval.aggregation.tables import (
    ORDER_SUFFIXES,
    OUTPUT_COLUMNS,
    TableError,
    _key_column,
    numeric_column,
    output_lengths,
    verdict_probabilities,
)

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import BoolArray, FloatArray, IntArray

BUILT_IN_CONTROLS = ("length", "markdown")


def verdict_rows(frame: pd.DataFrame, column: str) -> BoolArray:
    """The rows with a verdict in `column` (the rows `comparisons_from_pairwise` keeps)."""
    values = frame[column]
    empty = values.isna() | (values.astype("str").str.strip() == "")
    out: BoolArray = ~empty.to_numpy(dtype=bool)
    return out


def _first_missing(values: FloatArray, rows: IntArray, field: str) -> None:
    bad = np.flatnonzero(np.isnan(values))
    if len(bad):
        raise TableError("a covariate needs a value on every judged row; this one is empty",
                         row=int(rows[bad[0]]), field=field)


def style_covariates(frame: pd.DataFrame, *, controls: Sequence[str], column: str
                     ) -> tuple[list[str], FloatArray]:
    """(covariate names, standardised covariates, one row per judged row of `column`)."""
    keep = verdict_rows(frame, column)
    rows = np.flatnonzero(keep)
    names: list[str] = []
    features: list[FloatArray] = []
    lengths = None
    for control in controls:
        if control in ("length", "markdown"):
            if lengths is None:
                found = output_lengths(frame)
                if found is None:
                    raise TableError(f"--control {control} needs the outputs' lengths "
                                     "(length_a and length_b) or texts (output_a and "
                                     "output_b)", field="length_a")
                lengths = found[keep]
                _first_missing(lengths[:, 0], rows, "length_a")
                _first_missing(lengths[:, 1], rows, "length_b")
            if control == "length":
                names.append("length")
                features.append(length_feature(length_a=lengths[:, 0], length_b=lengths[:, 1]))
                continue
            missing = [c for c in OUTPUT_COLUMNS if c not in frame.columns]
            if missing:
                raise TableError("--control markdown counts markdown in the texts: the table "
                                 "needs output_a and output_b", field=missing[0])
            counts = [np.array([markdown_counts("" if v is None or v != v else str(v))
                                for v in frame[c].to_numpy()[keep]], dtype=float)
                      .reshape(-1, len(MARKDOWN_FEATURES)) for c in OUTPUT_COLUMNS]
            for k, name in enumerate(MARKDOWN_FEATURES):
                names.append(name)
                features.append(markdown_feature(count_a=counts[0][:, k],
                                                 count_b=counts[1][:, k],
                                                 length_a=lengths[:, 0],
                                                 length_b=lengths[:, 1]))
            continue
        pair = (f"{control}_a", f"{control}_b")
        if set(pair) <= set(frame.columns):
            sides = [numeric_column(frame, c)[keep] for c in pair]
            for side, field in zip(sides, pair, strict=True):
                _first_missing(side, rows, field)
            values = sides[0] - sides[1]
        elif control in frame.columns:
            values = numeric_column(frame, control)[keep]
            _first_missing(values, rows, control)
        else:
            raise TableError(f"no covariate '{control}': give length, markdown, a column "
                             f"'{control}' or the pair '{control}_a', '{control}_b'",
                             field=control)
        names.append(control)
        features.append(values)
    if len(set(names)) != len(names):
        raise TableError(f"a covariate is named twice: {names}", field="--control")
    try:
        matrix = np.column_stack([standardise(f, name=n) for f, n in
                                  zip(features, names, strict=True)])
    except ValueError as exc:
        raise TableError(str(exc), field="--control") from None
    return names, matrix


def order_columns(frame: pd.DataFrame, column: str) -> tuple[str, str] | None:
    """`column`'s two presentation orders (`COL.ab`, `COL.ba`) when the table has both."""
    pair = (f"{column}{ORDER_SUFFIXES[0]}", f"{column}{ORDER_SUFFIXES[1]}")
    return pair if set(pair) <= set(frame.columns) else None


def order_counts(frame: pd.DataFrame, *, column: str, systems: Sequence[str]
                 ) -> tuple[FloatArray, FloatArray, int] | None:
    """(first, second, ties left out) from `column`'s two orders for `rating.fit_order_effect`:
    first[i, j] counts the judgements with i shown first and j second that i won, second[i, j]
    those that j won. In `.ab` A is shown first, in `.ba` B is. A soft verdict P(A better)
    counts as P of a win to A and 1 - P to B; a tie (0.5) is left out and counted. None when
    the table does not record the orders (no `.ab`/`.ba` pair)."""
    pair = order_columns(frame, column)
    if pair is None:
        return None
    index = {s: i for i, s in enumerate(systems)}
    first_sys = _key_column(frame, "system_a")
    second_sys = _key_column(frame, "system_b")
    a = np.array([index[s] for s in first_sys], dtype=np.int64)
    b = np.array([index[s] for s in second_sys], dtype=np.int64)
    n = len(systems)
    first, second = np.zeros((n, n)), np.zeros((n, n))
    ties = 0
    for name, a_first in zip(pair, (True, False), strict=True):
        p = verdict_probabilities(frame, name, first_sys, second_sys)
        seen = ~np.isnan(p)
        tie = seen & (p == 0.5)
        ties += int(tie.sum())
        use = seen & ~tie
        lead, follow = (a, b) if a_first else (b, a)
        p_lead = p if a_first else 1.0 - p  # P(the response shown first is better)
        np.add.at(first, (lead[use], follow[use]), p_lead[use])
        np.add.at(second, (lead[use], follow[use]), 1.0 - p_lead[use])
    return first, second, ties
