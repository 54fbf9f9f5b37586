"""`score` reads, checks and scores large inputs in bounded chunks: the same table as the
in-memory path, bad input anywhere (the last line too) stops the run before any score, and a
resumed run recomputes nothing it holds."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl

import judgebench
import judgebench.engine.runner
import judgebench.tables.io
from judgebench.tables.io import read_samples, write_table

METRICS = ("lexical.length", "lexical.exact_match", "lexical.bleu")
N = 48  # 3 documents x 16 systems


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks and Parquet batches much smaller than the inputs, so every path crosses them."""
    monkeypatch.setattr(judgebench.engine.runner, "CHUNK_ROWS", 7)
    monkeypatch.setattr(judgebench.tables.io, "PARQUET_BATCH_ROWS", 5)


def _records() -> list[dict]:
    records = summeval_records(N)
    records[3] = {**records[3], "system": "M\r11"}  # a CR: CSV then quotes all text
    records[5] = {**records[5], "human": {**records[5]["human"], "extra": 1.5}}  # late column
    return records


def _score(*args: str) -> tuple[int, str, str]:
    result = run_cli("score", *args, "--no-progress")
    return result.returncode, result.stdout, result.stderr


def _specs() -> list[str]:
    return [arg for m in METRICS for arg in ("-m", m)]


def _scores_in(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0]


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_streamed_table_is_the_in_memory_table(
    tmp_path: Path, ext: str, small_chunks: None
) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", _records())
    expected = judgebench.score(read_samples(data), list(METRICS)).to_pandas()
    write_table(expected, tmp_path / f"expected.{ext}")

    code, _, err = _score(str(data), *_specs(), "-o", str(tmp_path / f"out.{ext}"),
                          "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    assert f"scored {N} rows" in err
    out, want = tmp_path / f"out.{ext}", tmp_path / f"expected.{ext}"
    if ext == "parquet":
        got = pd.read_parquet(out)
        pd.testing.assert_frame_equal(got, pd.read_parquet(want))
        assert list(got.dtypes[2:]) == ["float64"] * (got.shape[1] - 2)
    else:
        assert out.read_bytes() == want.read_bytes()
    meta = json.loads(Path(f"{out}.meta.json").read_text())
    assert meta["computed"] == N * 3 and meta["reused"] == 0
    corpus = {(c["system"], c["value"]) for c in meta["corpus"]}
    assert corpus == {(c["system"], c["value"]) for c in expected.attrs["corpus"]}


def test_stdout_table_is_the_file_table(tmp_path: Path, small_chunks: None) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", _records())
    code, _, _ = _score(str(data), *_specs(), "-o", str(tmp_path / "out.csv"),
                        "--store", str(tmp_path / "s.db"), "--csv-safe")
    assert code == 0
    code, stdout, _ = _score(str(data), *_specs(), "--store", str(tmp_path / "s.db"),
                             "--resume", "--csv-safe")
    assert code == 0
    assert stdout == (tmp_path / "out.csv").read_bytes().decode("utf-8")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_tabular_inputs_stream_to_the_same_table(
    tmp_path: Path, fmt: str, small_chunks: None
) -> None:
    records = summeval_records(N)
    frame = pd.DataFrame([{**{k: v for k, v in r.items() if k != "human"},
                           "reference": json.dumps(r["reference"]),
                           **{f"human.{k}": v for k, v in r["human"].items()}}
                          for r in records])
    path = tmp_path / f"in.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)
    else:
        frame.to_parquet(path, index=False)
    expected = judgebench.score(read_samples(path), list(METRICS)).to_pandas()
    code, _, err = _score(str(path), *_specs(), "-o", str(tmp_path / "out.csv"),
                          "--store", str(tmp_path / "s.db"))
    assert code == 0, err
    write_table(expected, tmp_path / "expected.csv")
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()


@pytest.mark.parametrize("last, where, message", [
    ({"item": "x", "system": "y", "output": 5, "reference": "r"}, "field 'output'",
     "valid string"),
    ("{not json", "", "malformed JSON"),
    ({"system": "y", "output": "o", "reference": "r"}, "field 'item'", "required"),
])
def test_bad_last_line_stops_before_any_score(
    tmp_path: Path, last: object, where: str, message: str
) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(40))
    with data.open("a", encoding="utf-8") as handle:
        handle.write((last if isinstance(last, str) else json.dumps(last)) + "\n")
    proc = run_cli("score", str(data), *_specs(), "-o", str(tmp_path / "out.csv"),
                   "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 2, proc.stderr
    assert f"{data}, line 41" in proc.stderr and where in proc.stderr
    assert message.lower() in proc.stderr.lower()
    assert _scores_in(tmp_path / "s.db") == 0
    assert not (tmp_path / "out.csv").exists()


def test_duplicate_on_the_last_line_names_both_lines(tmp_path: Path) -> None:
    records = summeval_records(40)
    data = write_jsonl(tmp_path / "in.jsonl", [*records, records[2]])
    proc = run_cli("score", str(data), *_specs(), "-o", str(tmp_path / "out.csv"),
                   "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 2, proc.stderr
    assert f"{data}, line 41, field 'item'" in proc.stderr
    assert "first at line 3" in proc.stderr
    assert _scores_in(tmp_path / "s.db") == 0


def test_missing_required_field_on_the_last_line_stops_before_any_score(tmp_path: Path) -> None:
    records = summeval_records(40)
    last = {k: v for k, v in records[-1].items() if k != "reference"}
    data = write_jsonl(tmp_path / "in.jsonl", [*records[:-1], last])
    proc = run_cli("score", str(data), *_specs(), "-o", str(tmp_path / "out.csv"),
                   "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 2, proc.stderr
    assert "needs field 'reference', missing in 1 of 40 rows" in proc.stderr
    assert _scores_in(tmp_path / "s.db") == 0


def test_invalid_utf8_late_in_the_file_names_its_line(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(40))
    with data.open("ab") as handle:
        handle.write(b'{"item": "x", "system": "\xff", "output": "o"}\n')
    proc = run_cli("score", str(data), *_specs(), "--store", str(tmp_path / "s.db"))
    assert proc.returncode == 2
    assert f"{data}, line 41: invalid UTF-8 (byte 0xff" in proc.stderr
    assert _scores_in(tmp_path / "s.db") == 0


def test_resume_after_a_partial_run_recomputes_nothing(tmp_path: Path, small_chunks: None) -> None:
    records = _records()
    part = write_jsonl(tmp_path / "part.jsonl", records[:20])
    full = write_jsonl(tmp_path / "full.jsonl", records)
    store = tmp_path / "s.db"
    assert _score(str(part), *_specs(), "-o", str(tmp_path / "part.csv"),
                  "--store", str(store))[0] == 0
    code, _, err = _score(str(full), *_specs(), "-o", str(tmp_path / "out.csv"),
                          "--store", str(store), "--resume")
    assert code == 0, err
    assert f"computed {(N - 20) * 3}, reused {20 * 3}" in err
    code, _, _ = _score(str(full), *_specs(), "-o", str(tmp_path / "fresh.csv"),
                        "--store", str(tmp_path / "fresh.db"))
    assert code == 0
    assert (tmp_path / "out.csv").read_bytes() == (tmp_path / "fresh.csv").read_bytes()
