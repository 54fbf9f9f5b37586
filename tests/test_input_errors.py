"""Bad input: a clear error naming file, line or row and field, exit code 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, write_jsonl

from judgebench.errors import InputError
from judgebench.tables.io import read_samples, read_table

GOOD = {"item": "d1", "system": "s1", "output": "a cat", "reference": "the cat"}


def _jsonl(tmp_path: Path, lines: list[str], name: str = "in.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CASES = {
    "malformed json": (["{" + json.dumps(GOOD)[1:], '{"item": "d2", "system": '],
                       ["line 2", "malformed JSON"]),
    "not an object": ([json.dumps(GOOD), "[1, 2]"], ["line 2", "expected a JSON object"]),
    "wrong type": ([json.dumps(GOOD), json.dumps({**GOOD, "item": "d2", "output": 5})],
                   ["line 2", "field 'output'", "string"]),
    "wrong human type": ([json.dumps({**GOOD, "human": {"coherence": "high"}})],
                         ["line 1", "field 'human.coherence'"]),
    "missing item": ([json.dumps(GOOD), json.dumps({"system": "s", "output": "x"})],
                     ["line 2", "field 'item'", "missing"]),
    "missing system": ([json.dumps({"item": "d", "output": "x"})],
                       ["line 1", "field 'system'", "missing"]),
    "empty item": ([json.dumps({**GOOD, "item": ""})], ["line 1", "field 'item'"]),
    "duplicate key": ([json.dumps(GOOD), json.dumps({**GOOD, "output": "b"})],
                      ["line 2", "duplicate (item, system)", "first at line 1"]),
    "blank only": (["", "   "], ["file is empty"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_jsonl_is_named_precisely(tmp_path: Path, case: str) -> None:
    lines, expected = CASES[case]
    path = _jsonl(tmp_path, lines)
    with pytest.raises(InputError) as caught:
        read_samples(path)
    message = str(caught.value)
    assert str(path) in message
    for fragment in expected:
        assert fragment in message, (fragment, message)


def test_invalid_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"item": "d2", "system": "s",'
                     b' "output": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"line 2: invalid UTF-8 \(byte 0xe9"):
        read_samples(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_bytes(b"")
    with pytest.raises(InputError, match="file is empty"):
        read_samples(path)


def test_csv_errors_name_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("item,system,output,human.coherence\nd1,s1,hello,3\nd2,s1,bye,great\n",
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"line 3, field 'human.coherence'"):
        read_samples(path)
    path.write_text("item,system,output\nd1,s1,hello\nd2,s1\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 3: 2 cells for 3 columns"):
        read_samples(path)
    path.write_text("item,output\nd1,hello\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2, field 'system': required field"):
        read_samples(path)


def test_csv_reads_references_humans_and_numeric_ids(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('item,system,output,reference,human.fluency,lang\n'
                    '17,s1,hello,"[""hi"", ""hello""]",4.5,en\n', encoding="utf-8")
    (sample,) = read_samples(path)
    assert sample.item == "17" and sample.references == ["hi", "hello"]
    assert sample.human == {"fluency": 4.5} and sample.metadata == {"lang": "en"}


def test_parquet_errors_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "in.parquet"
    pd.DataFrame({"item": ["a", "b"], "system": ["s", None], "output": ["x", "y"]}).to_parquet(
        path)
    with pytest.raises(InputError, match=r"row 2, field 'system'"):
        read_samples(path)


def test_read_table_rejects_duplicates_and_missing_keys(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("item,system,m\n1,a,0.5\n1,a,0.7\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 3, field 'item': duplicate key"):
        read_table(path)
    path.write_text("item,m\n1,0.5\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"field 'system'"):
        read_table(path)


def test_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "in.txt"
    path.write_text("x")
    with pytest.raises(InputError, match=r"unknown file type '\.txt'"):
        read_samples(path)


def test_cli_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [json.dumps(GOOD), '{"item": "d2" "system": "s"}'])
    out = tmp_path / "scores.csv"
    proc = run_cli("score", str(path), "-m", "lexical.bleu", "-o", str(out),
                   "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 2
    assert f"{path}, line 2: malformed JSON" in proc.stderr
    assert not out.exists() and proc.stdout == ""


def test_missing_required_field_stops_before_any_work(tmp_path: Path) -> None:
    rows = [{"item": str(i), "system": "s", "output": "x", "reference": "x"} for i in range(5)]
    rows += [{"item": str(i), "system": "t", "output": "y"} for i in range(3)]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    store = tmp_path / "s.db"
    proc = run_cli("score", str(path), "-m", "lexical.length", "-m", "lexical.chrf",
                   "--store", str(store))
    assert proc.returncode == 2
    assert "metric lexical.chrf needs field 'reference', missing in 3 of 8 rows" in proc.stderr
    assert not store.exists()  # nothing scored, and no empty store left behind


def test_bad_metric_spec_and_options(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    cases = {
        "lexical.nope": "unknown metric 'lexical.nope'",
        "lexical.rouge2:multi_ref=median": "option 'multi_ref'",
        "lexical.rouge2:multi_ref": "is not key=value",
        "lexical.bleu:colour=red": "option 'colour'",
    }
    for spec, expected in cases.items():
        proc = run_cli("score", str(path), "-m", spec, "--store", str(tmp_path / "s.db"))
        assert proc.returncode == 2, spec
        assert expected in proc.stderr, (spec, proc.stderr)


def test_parquet_generations_keep_lists_and_humans(tmp_path: Path) -> None:
    path = tmp_path / "in.parquet"
    pd.DataFrame({"item": ["a"], "system": ["s"], "output": ["x"],
                  "reference": [["r1", "r2"]], "human": [{"q": 2.5}]}).to_parquet(path)
    (sample,) = read_samples(path)
    assert sample.references == ["r1", "r2"] and sample.human == {"q": 2.5}


def test_read_table_keeps_text_ids_and_real_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("system_a,system_b,winner\n001,002,a\n", encoding="utf-8")
    frame = read_table(path, key=None, text_columns=["system_a", "system_b"])
    assert frame["system_a"].tolist() == ["001"]
    path = tmp_path / "scores.jsonl"
    path.write_text('{"item": 1, "system": "a", "m": 1}\n\n\n{"item": 1, "system": "a", "m": 2}\n',
                    encoding="utf-8")
    with pytest.raises(InputError, match="line 4, field 'item': duplicate key"):
        read_table(path)


def test_exclude_system_keeps_each_rows_line_for_later_messages(tmp_path: Path) -> None:
    """After --exclude-system drops rows, a column left out of the metrics is reported at the
    line of its own bad cell, not at the line the same position had before the rows went."""
    table = tmp_path / "scores.csv"
    table.write_text("item,system,human.q,m1,m2\n"
                     "1,A,1,0.1,0.5\n2,A,2,0.2,0.6\n"
                     "1,B,3,0.3,0.7\n2,B,4,0.4,oops\n"
                     "1,C,5,0.5,0.8\n2,C,1,0.6,0.9\n", encoding="utf-8")
    proc = run_cli("meta-eval", str(table), "--human", "human.q", "--exclude-system", "A",
                   "--level", "segment")
    assert proc.returncode == 0, proc.stderr
    assert "column 'm2' is not a metric: line 5 holds 'oops'" in proc.stderr


def test_read_table_flattens_nested_objects_as_score_names_them(tmp_path: Path) -> None:
    path = tmp_path / "nested.jsonl"
    write_jsonl(path, [
        {"item": "a", "system": "s", "human": {"relevance": 4, "panel": {"mean": 3.5}},
         "references": ["r1", "r2"], "m": 0.5},
        {"item": "b", "system": "s", "human": {"relevance": 2}, "references": [], "m": 0.1},
    ])
    frame = read_table(path)
    assert list(frame["human.relevance"]) == [4, 2]
    assert frame["human.panel.mean"].iloc[0] == 3.5 and pd.isna(frame["human.panel.mean"].iloc[1])
    assert "human" not in frame.columns and frame["references"].iloc[0] == ["r1", "r2"]
    clash = tmp_path / "clash.jsonl"
    clash.write_text(json.dumps({"item": "a", "system": "s", "human.relevance": 1,
                                 "human": {"relevance": 2}}) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_table(clash)
    assert "line 1" in str(caught.value) and "human.relevance" in str(caught.value)


def test_meta_eval_on_a_samples_file_is_an_error_not_a_traceback() -> None:
    root = Path(__file__).resolve().parent.parent / "examples"
    pairs = run_cli("meta-eval", "pairwise", str(root / "pairs-sample.jsonl"), "--human",
                    "human.relevance")
    assert pairs.returncode == 2 and "no judge columns" in pairs.stderr
    pointwise = run_cli("meta-eval", str(root / "summeval-sample.jsonl"), "--human",
                        "human.relevance")
    assert pointwise.returncode == 2 and "no metric columns" in pointwise.stderr


def test_read_table_keeps_a_missing_jsonl_text_cell_missing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    write_jsonl(path, [{"item": "a", "system": "s", "note": "x", "m": 1.0},
                       {"item": "b", "system": "s", "m": 2.0}])
    frame = read_table(path, text_columns=("note",))
    assert frame["note"].iloc[0] == "x" and pd.isna(frame["note"].iloc[1])
