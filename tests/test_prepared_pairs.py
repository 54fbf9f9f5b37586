"""`PreparedPairs.read`: a pairwise table read once (frame, sidecar, failed verdicts), from a
file with its sidecar or from a DataFrame, with the errors naming the file and field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgebench.errors import InputError
from judgebench.tables.pairs import DATAFRAME, PreparedPairs

ROWS = [
    {"item": "1", "system_a": "x", "system_b": "y", "human.pref": "a", "j.ab": "a", "j.ba": "",
     "j": "a", "k": "b"},
    {"item": "2", "system_a": "x", "system_b": "y", "human.pref": "b", "j.ab": "", "j.ba": "b",
     "j": "", "k": "failed"},
    {"item": "3", "system_a": "x", "system_b": "z", "human.pref": "tie", "j.ab": "b",
     "j.ba": "b", "j": "b", "k": ""},
]


def _write(tmp_path: Path, sidecar: dict | None) -> Path:
    path = tmp_path / "pairs.csv"
    pd.DataFrame(ROWS).to_csv(path, index=False)
    if sidecar is not None:
        Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    return path


def test_a_file_with_its_sidecar_tells_the_failed_verdicts(tmp_path: Path) -> None:
    # the sidecar counts one failed verdict of j (its one empty combined cell) and one of k
    # (its one empty cell, beside a cell that reads `failed`)
    sidecar = {"columns": {"j": {"statuses": {"ok": 2, "error": 1}},
                           "k": {"statuses": {"ok": 1, "error": 1}}}}
    path = _write(tmp_path, sidecar)
    read = PreparedPairs.read(path, ["human.pref"])
    assert read.where == str(path) and read.sidecar == sidecar
    assert list(read.frame["item"]) == ["1", "2", "3"]
    np.testing.assert_array_equal(read.failed.masks["j"], [False, True, False])
    # an order column is told by its judge's combined column: row 2's empty .ab failed
    np.testing.assert_array_equal(read.failed.masks["j.ab"], [False, True, False])
    assert "j.ba" not in read.failed.masks  # row 1's empty .ba: not a failed row of j
    np.testing.assert_array_equal(read.failed.masks["k"], [False, True, True])
    assert read.failed.told_by["j"] == read.failed.told_by["k"] == "sidecar"
    assert "human.pref" not in read.failed.masks


def test_a_dataframe_is_copied_and_checked(tmp_path: Path) -> None:
    frame = pd.DataFrame(ROWS).replace("", None)
    read = PreparedPairs.read(frame, ["human.pref"])
    assert read.where == DATAFRAME and read.sidecar is None
    assert read.frame is not frame
    assert frame.loc[1, "k"] == "failed"  # the caller's frame is left as it was
    np.testing.assert_array_equal(read.failed.masks["k"], [False, True, False])
    assert any("no sidecar" in note for note in read.failed.notes)


def test_a_wide_table_or_an_empty_key_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    wide = tmp_path / "wide.csv"
    pd.DataFrame([{"item": "1", "system": "x", "m": 1.0}]).to_csv(wide, index=False)
    with pytest.raises(InputError, match=r"wide\.csv, field 'system_a': this is a wide "
                                         r"scores table"):
        PreparedPairs.read(wide)
    frame = pd.DataFrame(ROWS)
    frame.loc[2, "system_b"] = " "
    with pytest.raises(InputError, match=r"<DataFrame>, row 3, field 'system_b': empty cell "
                                         r"in a key column"):
        PreparedPairs.read(frame)
