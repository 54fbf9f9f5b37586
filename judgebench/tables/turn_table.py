"""A scores table with a `turn` column (conversations scored turn by turn), laid out for the
statistics, which read (items x systems) matrices.

The key of such a table is (item, system, turn): `item` is the conversation. Grouped by item
(`--grouping item`), the groups are the conversations and the units inside one are its
turns: each (system, turn) is a column of the matrix (`system #turn`), so a per-item
statistic is computed over a conversation's turns and the item bootstrap resamples whole
conversations. For every other view (no grouping, grouping by system, system level) and
every other reader of a scores table (`load_scores_table`'s default: aggregate, items,
combine; compare-judges and diff) each (conversation, turn) is a unit of its own
(`item #turn`), scored by every system."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.models import Sample

TURN = "turn"


def has_turns(frame: pd.DataFrame) -> bool:
    return TURN in frame.columns


def turn_layout(views: Iterable[tuple[str, str]], *, path: str) -> str:
    """`conversation` when every view groups by item, `unit` when none does; a mix is an
    InputError (the two need different matrices: run them apart)."""
    by_item = {level == "segment" and grouping == "item" for level, grouping in views}
    if by_item == {True, False}:
        raise InputError("a table with turns is grouped by conversation (--level segment "
                         "--grouping item) or by turn units (every other view), not both in "
                         "one run: run --grouping item apart", path=path, field="--grouping")
    return "conversation" if by_item == {True} else "unit"


def turn_units(frame: pd.DataFrame, layout: str, *, path: str) -> pd.DataFrame:
    """`frame` with its item and system columns rewritten for `layout` (see the module);
    the turn column is dropped. A table that mixes turn rows and rows without a turn (whole
    conversations) is an InputError: their scores are not on the same units."""
    if not has_turns(frame):
        return frame
    turns = frame[TURN]
    if turns.isna().any() and turns.notna().any():
        raise InputError("the table mixes judged turns and whole conversations (rows without "
                         "a turn): meta-evaluate them apart", path=path, field=TURN)
    out = frame.drop(columns=[TURN])
    if turns.isna().all():
        return out
    out.attrs = dict(frame.attrs)
    key = "system" if layout == "conversation" else "item"
    out[key] = [f"{name} #{int(turn)}"
                for name, turn in zip(out[key].astype(str), turns, strict=True)]
    return out


def keyed_samples(samples: Sequence[Sample], layout: str) -> list[Sample]:
    """`samples` keyed as `turn_units` keys their rows (a judged turn's item or system gets
    its `#turn`), so the audit finds each row's text."""
    out = []
    for sample in samples:
        if sample.turn is None:
            out.append(sample)
            continue
        field = "system" if layout == "conversation" else "item"
        out.append(sample.model_copy(
            update={field: f"{getattr(sample, field)} #{sample.turn}"}))
    return out
