"""Input and output that can be trusted: list cells in tables, the Python API read like a file,
and written files with the permissions a plain open(..., "w") gives."""

from __future__ import annotations

import json
import os
import random
import stat
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl
from pydantic import BaseModel

import judgebench
from judgebench.errors import InputError
from judgebench.models import CONVERSATION_FIELDS, Message, Sample
from judgebench.tables.io import (
    current_umask,
    list_fields,
    read_samples,
    sample_shape,
    write_table,
    write_text,
)

HUMANS = ("coherence", "consistency", "fluency", "relevance")


def _flat(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SummEval records with `human` spread into `human.x` columns, as a wide table has it."""
    return [{**{k: v for k, v in r.items() if k != "human"},
             **{f"human.{h}": r["human"][h] for h in HUMANS}} for r in records]


def _score_cli(path: Path, tmp_path: Path, spec: str) -> pd.DataFrame:
    out = tmp_path / f"{path.stem}-{path.suffix[1:]}-scores.csv"
    result = run_cli("score", str(path), "-m", spec, "-o", str(out),
                     "--store", str(tmp_path / f"{path.name}.db"))
    assert result.returncode == 0, result.stderr
    return pd.read_csv(out, dtype={"item": str, "system": str})


# -- 1. list cells in tables ------------------------------------------------------------------
def test_pandas_csv_with_list_references_scores_rouge2_like_jsonl(tmp_path: Path) -> None:
    records = summeval_records(32)  # 2 documents x 16 systems, 11 references each
    assert all(len(r["reference"]) == 11 for r in records)
    jsonl = write_jsonl(tmp_path / "gen.jsonl", records)
    csv_path = tmp_path / "gen.csv"
    pd.DataFrame(_flat(records)).to_csv(csv_path, index=False)
    assert "['" in csv_path.read_text(encoding="utf-8")  # pandas wrote the Python repr

    from_jsonl = _score_cli(jsonl, tmp_path, "lexical.rouge2")
    from_csv = _score_cli(csv_path, tmp_path, "lexical.rouge2")
    pd.testing.assert_frame_equal(from_csv, from_jsonl, check_exact=True)
    assert from_csv["lexical.rouge2"].mean() > 0.2  # one repr "reference" gave about 0.08


def test_pandas_csv_with_dict_humans_reads_like_jsonl(tmp_path: Path) -> None:
    records = summeval_records(16)
    csv_path = tmp_path / "gen.csv"
    pd.DataFrame(records).to_csv(csv_path, index=False)  # human is a dict repr here
    assert read_samples(csv_path) == read_samples(write_jsonl(tmp_path / "g.jsonl", records))


def _nasty_text(rng: random.Random) -> str:
    alphabet = ["a", "Z", " ", ",", "'", '"', "\\", "[", "]", "{", "\n", "\t", "é", "你", "🙂",
                "\\n", "None", "nan", "''", '""']
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


# the lists of texts (a conversation's lists of messages: tests/test_conversations.py)
@pytest.mark.parametrize("field", sorted(set(sample_shape().lists) - set(CONVERSATION_FIELDS)))
def test_random_list_cells_round_trip_through_pandas_csv_and_json_cells(
    tmp_path: Path, field: str
) -> None:
    rng = random.Random(20240601)
    lists = [[_nasty_text(rng) for _ in range(rng.randint(0, 5))] for _ in range(200)]
    lists[0] = ["same", "same"]  # ties: a repeated reference is kept twice
    rows = [{"item": str(i), "system": "s", "output": "x", field: value}
            for i, value in enumerate(lists)]
    by_repr = tmp_path / "repr.csv"
    pd.DataFrame(rows).to_csv(by_repr, index=False)
    by_json = tmp_path / "json.csv"
    pd.DataFrame([{**r, field: json.dumps(r[field], ensure_ascii=False)} for r in rows]).to_csv(
        by_json, index=False)
    for path in (by_repr, by_json):
        assert [getattr(s, field) for s in read_samples(path)] == lists, path.name


def test_list_cells_leading_space_empty_and_plain_strings(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    pd.DataFrame({"item": ["1", "2", "3", "4", "5"], "system": "s", "output": "x",
                  "reference": ["  ['a', 'b']", "[]", "a [b] c", "]x[", "plain"],
                  "context": ['\t["c1"]', None, "ctx", "", "[\"q\", 'r']"]}).to_csv(
        path, index=False)
    samples = read_samples(path)
    assert [s.reference for s in samples] == [["a", "b"], [], "a [b] c", "]x[", "plain"]
    assert [s.context for s in samples] == [["c1"], None, "ctx", None, ["q", "r"]]


BAD_CELLS = {
    "truncated": ("['a', 'b'", "neither a JSON list nor a Python list literal"),
    "numbers": ("[1, 2]", "element 0 of the list is int 1, not str"),
    "nested": ("[['a']]", "element 0 of the list is list"),
    "text starting with a bracket": ("[Music] a song", "one-element list"),
    "json null inside": ('["a", null]', "element 1 of the list is NoneType"),
}


@pytest.mark.parametrize("field", sorted(set(sample_shape().lists) - set(CONVERSATION_FIELDS)))
@pytest.mark.parametrize("case", sorted(BAD_CELLS))
def test_a_bad_list_cell_names_file_line_and_field(tmp_path: Path, case: str,
                                                   field: str) -> None:
    cell, expected = BAD_CELLS[case]
    path = tmp_path / "in.csv"
    pd.DataFrame({"item": ["1", "2"], "system": "s", "output": "x",
                  field: ["['fine']", cell]}).to_csv(path, index=False)
    with pytest.raises(InputError) as caught:
        read_samples(path)
    assert str(caught.value).startswith(f"{path}, line 3, field '{field}': ")
    assert expected in str(caught.value)


def test_a_list_cell_is_never_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / "in.csv"
    pd.DataFrame({"item": ["1"], "system": "s", "output": "x",
                  "reference": [f"[open({str(marker)!r}, 'w').close() or 'x']"]}).to_csv(
        path, index=False)
    with pytest.raises(InputError, match="line 2, field 'reference'"):
        read_samples(path)
    assert not marker.exists()


def test_cli_exits_2_on_a_bad_list_cell(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('item,system,output,reference\n1,s,x,"[\'a\', \'b\'"\n', encoding="utf-8")
    result = run_cli("score", str(path), "-m", "lexical.rouge2",
                     "--store", str(tmp_path / "s.db"))
    assert result.returncode == 2
    assert f"{path}, line 2, field 'reference': a cell starting with '['" in result.stderr


def test_parquet_lists_stay_lists_and_text_lists_follow_the_csv_rule(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"item": ["1", "2"], "system": ["s", "s"], "output": ["x", "y"],
                             "reference": [["r1", "r2"], ["r3"]],
                             "context": ["['c1', 'c2']", "plain"]}), path)
    assert pq.read_table(path).column("reference").to_pylist() == [["r1", "r2"], ["r3"]]
    samples = read_samples(path)
    assert [s.reference for s in samples] == [["r1", "r2"], ["r3"]]
    assert [s.context for s in samples] == [["c1", "c2"], "plain"]


class _Future(BaseModel):
    name: str
    tags: list[str] | None = None
    weights: Optional[list[float]] = None  # noqa: UP045 - the old spelling must be found too
    anything: list = []
    text: str | None = None
    mapping: dict[str, list[str]] = {}  # a dict of lists is not a list field


def test_list_fields_are_found_from_the_model_not_a_fixed_tuple() -> None:
    assert list_fields(_Future) == {"tags": str, "weights": float, "anything": Any}
    assert list_fields(Sample) == {"reference": str, "context": str, "messages": Message,
                                   "messages_a": Message, "messages_b": Message} \
        == sample_shape().lists


# -- 2. the Python API reads like the file reader ---------------------------------------------
def _awkward_frame() -> pd.DataFrame:
    """SummEval rows as a user's DataFrame: flat humans, extra columns, missing values of every
    kind, numpy scalar types, numeric item ids."""
    records = summeval_records(32)
    frame = pd.DataFrame(_flat(records))
    frame["item"] = np.repeat(np.array([101, 202], dtype=np.int64), 16)
    frame["batch"] = np.arange(32, dtype=np.int64) % 3
    frame["input"] = frame["input"].where(np.arange(32) % 4 != 0, np.nan)
    frame["source"] = pd.array(["s"] * 16 + [None] * 16, dtype="string")
    # float32 halves: exact in float32 and in the CSV, so the two readings can be equal exactly
    frame["human.fluency"] = ((frame["human.fluency"] * 2).round() / 2).astype(np.float32)
    frame.loc[5, "human.coherence"] = np.nan
    return frame


def test_a_dataframe_scores_exactly_like_the_csv_it_would_write(tmp_path: Path) -> None:
    frame = _awkward_frame()
    csv_path = tmp_path / "gen.csv"
    frame.to_csv(csv_path, index=False)
    from_frame = judgebench.score(frame, metrics=["lexical.rouge2"]).to_pandas()
    from_file = judgebench.score(csv_path, metrics=["lexical.rouge2"]).to_pandas()
    pd.testing.assert_frame_equal(from_frame, from_file, check_exact=True)
    assert from_frame["human.coherence"].isna().sum() == 1
    assert from_frame["item"].tolist()[:1] == ["101"]


def test_a_dataframe_row_becomes_a_plain_sample() -> None:
    from judgebench.tables.io import samples_from_frame

    samples = samples_from_frame(_awkward_frame())
    first, last = samples[0], samples[-1]
    assert first.item == "101" and first.input is None and first.source == "s"
    assert last.source is None and last.input is not None
    assert first.metadata == {"batch": 0} and type(first.metadata["batch"]) is int
    assert type(first.human["fluency"]) is float and len(first.references) == 11
    assert samples[5].human["coherence"] is None


def test_a_dataframe_read_from_parquet_keeps_list_references(tmp_path: Path) -> None:
    records = summeval_records(16)
    path = tmp_path / "gen.parquet"
    pd.DataFrame(records).to_parquet(path)
    frame = pd.read_parquet(path)
    assert isinstance(frame["reference"].iloc[0], np.ndarray)
    from_frame = judgebench.score(frame, metrics=["lexical.rouge2"]).to_pandas()
    for other in (path, records):
        pd.testing.assert_frame_equal(
            from_frame, judgebench.score(other, metrics=["lexical.rouge2"]).to_pandas(),
            check_exact=True)


def test_dicts_read_like_jsonl_lines(tmp_path: Path) -> None:
    records = [{**r, "lang": "en"} for r in _flat(summeval_records(16))]
    from_dicts = judgebench.score(records, metrics=["lexical.rouge2"]).to_pandas()
    from_file = judgebench.score(write_jsonl(tmp_path / "g.jsonl", records),
                                 metrics=["lexical.rouge2"]).to_pandas()
    pd.testing.assert_frame_equal(from_dicts, from_file, check_exact=True)
    assert "human.relevance" in from_dicts.columns


API_ERRORS = {
    "bad human in a frame": (
        pd.DataFrame({"item": ["1", "2", "3"], "system": "s", "output": "x",
                      "human.coherence": ["4", "3", "high"]}),
        "row 3, field 'human.coherence': a human judgment must be a finite number"),
    "missing system in dicts": (
        [{"item": "1", "system": "s", "output": "x"}, {"item": "2", "output": "x"}],
        "row 2, field 'system': required field is missing"),
    "NaN system in a frame": (
        pd.DataFrame({"item": ["1", "2"], "system": ["s", np.nan], "output": "x"}),
        "row 2, field 'system': required field is missing"),
    "numbers as references": (
        [{"item": "1", "system": "s", "output": "x", "reference": [1, 2]}],
        "row 1, field 'reference': expected str | list[str] | None (got [1, 2])"),
    "a bad list cell in a frame": (
        pd.DataFrame({"item": ["1", "2"], "system": "s", "output": "x",
                      "reference": ["['a']", "['a', 3]"]}),
        "row 2, field 'reference': element 1 of the list is int 3, not str"),
    "duplicate rows": (
        [{"item": "1", "system": "s", "output": "x"}, {"item": "1", "system": "s", "output": "y"}],
        "row 2, field 'item': duplicate (item, system) = ('1', 's'), first at row 1"),
    "a human given twice": (
        [{"item": "1", "system": "s", "output": "x", "human": {"q": 1}, "human.q": 2}],
        "row 1, field 'human.q': given twice with different values"),
    "not a record": ([{"item": "1", "system": "s", "output": "x"}, "oops"],
                     "row 2: expected a Sample or a dict, got str"),
}


@pytest.mark.parametrize("case", sorted(API_ERRORS))
def test_api_errors_name_the_row_and_field(case: str) -> None:
    data, expected = API_ERRORS[case]
    with pytest.raises(InputError) as caught:
        judgebench.score(data, metrics=["lexical.length"]).to_pandas()
    assert str(caught.value).startswith(expected), str(caught.value)


def test_samples_pass_through_the_api_unchanged() -> None:
    from judgebench.tables.io import samples_from_records

    given = [Sample(item="1", system="s", output="x", metadata={"k": float("nan")})]
    (back,) = samples_from_records(given)
    assert back is given[0]


# -- 3. written files respect the umask -------------------------------------------------------
@pytest.fixture(params=[0o022, 0o077, 0o002], ids=oct)
def umask(request: pytest.FixtureRequest) -> Any:
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _open_w_mode(path: Path) -> int:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("x")
    return _mode(path)


def test_tables_and_reports_get_the_mode_open_w_gives(tmp_path: Path, umask: int) -> None:
    expected = _open_w_mode(tmp_path / "reference.txt")
    assert expected == 0o666 & ~umask
    frame = pd.DataFrame({"item": ["1"], "system": ["s"], "m": [0.5]})
    for name in ("t.csv", "t.jsonl", "t.parquet"):
        assert _mode(write_table(frame, tmp_path / name)) == expected, name
    assert _mode(write_text("<html></html>", tmp_path / "report.html")) == expected


def test_cli_score_outputs_get_the_mode_open_w_gives(tmp_path: Path, umask: int) -> None:
    expected = _open_w_mode(tmp_path / "reference.txt")
    data = write_jsonl(tmp_path / "g.jsonl", summeval_records(4))
    out = tmp_path / "scores.csv"
    result = run_cli("score", str(data), "-m", "lexical.bleu", "-o", str(out),
                     "--corpus", str(tmp_path / "corpus.csv"),
                     "--store", str(tmp_path / "s.db"))
    assert result.returncode == 0, result.stderr
    for path in (out, Path(f"{out}.meta.json"), tmp_path / "corpus.csv"):
        assert _mode(path) == expected, path.name


@pytest.mark.parametrize("existing", [0o640, 0o600, 0o664, 0o604], ids=oct)
def test_overwriting_keeps_the_existing_files_mode(tmp_path: Path, existing: int) -> None:
    old = os.umask(0o022)
    try:
        twin, target = tmp_path / "twin.csv", tmp_path / "scores.csv"
        for path in (twin, target):
            path.write_text("old", encoding="utf-8")
            path.chmod(existing)
        _open_w_mode(twin)
        write_table(pd.DataFrame({"item": ["1"], "system": ["s"]}), target)
        assert _mode(target) == _mode(twin) == existing
        assert target.read_text(encoding="utf-8").startswith("item,system")
    finally:
        os.umask(old)


def test_the_umask_is_read_without_proc_too(monkeypatch: pytest.MonkeyPatch, umask: int) -> None:
    assert current_umask() == umask
    monkeypatch.setattr("judgebench.tables.io._PROC_STATUS", Path("/nonexistent/status"))
    assert current_umask() == umask
    assert os.umask(umask) == umask  # the fallback restored it
