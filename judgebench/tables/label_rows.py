"""The rows a labelling session (`services.label_session`) labels and their texts: a samples
file read as a table of its keys, or a scores or pairwise table (`pairs.read_judged`), a
judged turn of a conversation keyed "ITEM #TURN" either way (`turn_table`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.models import Sample

#: The fields that make a file one of samples (texts to show), not of scores.
TEXT_FIELDS = ("output", "output_a", "messages")


def label_rows(source: str | Path, *, scores: bool) -> tuple[pd.DataFrame, str]:
    """The rows of `source` (`scores`: a scores or pairwise table; else a samples file, which
    must hold texts) and where they were read from."""
    if scores:
        from judgebench.tables.pairs import read_judged

        frame, where, _ = read_judged(source)
        return frame, where
    from judgebench.tables.io import read_table
    from judgebench.tables.turn_table import turn_units

    frame = turn_units(read_table(source, key=None), "unit", path=str(source))
    if not set(TEXT_FIELDS) & set(frame.columns):
        raise InputError("no texts to show (no output, output_a/output_b or messages "
                         "field): for a scores table, give the samples it was scored from "
                         "with --samples", path=str(source), field="output")
    return frame, str(source)


def label_texts(path: str | Path) -> list[Sample]:
    """The samples of a samples file, a judged turn's item "ITEM #TURN"."""
    from judgebench.tables.io import read_samples
    from judgebench.tables.turn_table import keyed_samples

    return keyed_samples(read_samples(path), "unit")
