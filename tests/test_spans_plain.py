"""`meta-eval spans --spans-column COL`: predicted spans from a plain table (JSONL or Parquet
with a list per row, CSV with its JSON text), with no sidecar and no store. The TED segments
judge.mqm scored in test_spans_end_to_end, exported from the store into a plain table, give
the same report as from the store; bad span rows are refused naming the file, line and
field."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import test_spans_end_to_end as e2e
from conftest import run_cli

ted = e2e.ted
scored = e2e.scored
ROOT = Path(__file__).resolve().parents[1]


def exported(scored: dict[str, Any]) -> pd.DataFrame:
    """The store's rows of the judge as a plain table: item, system, output, and the
    column's spans (named as the scores table names the column)."""
    meta = json.loads((scored["tmp"] / "scores.csv.meta.json").read_text())
    ((name, info),) = meta["columns"].items()
    with sqlite3.connect(scored["tmp"] / "store.db") as conn:
        rows = conn.execute("SELECT item, system, extra FROM scores WHERE signature = ? AND"
                            " status = 'ok'", (info["signature"],)).fetchall()
    records = []
    for item, system, extra in rows:
        data = json.loads(extra)
        records.append({"item": item, "system": system, "output": data["output"],
                        name: data["spans"]})
    return pd.DataFrame.from_records(records)


def spans_json(*args: str, env: dict[str, str]) -> list[dict[str, Any]]:
    done = run_cli("meta-eval", "spans", *args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    out: list[dict[str, Any]] = json.loads(done.stdout)
    return out


def test_spans_from_a_plain_table_equal_those_from_the_store(ted, scored, tmp_path) -> None:
    tmp, env = scored["tmp"], scored["env"]
    human = str(ROOT / "examples" / "ted-mqm-spans.jsonl")
    stored = spans_json(str(tmp / "scores.csv"), _human(ted, tmp),
                        "--store", str(tmp / "store.db"), env=env)
    frame = exported(scored)
    name = frame.columns[-1]
    assert any(s["start"] is None for spans in frame[name] for s in spans), \
        "an unlocated span is in the export"
    frame.to_json(tmp_path / "predicted.jsonl", orient="records", lines=True,
                  force_ascii=False)
    as_csv = frame.assign(**{name: frame[name].map(json.dumps)})
    as_csv.to_csv(tmp_path / "predicted.csv", index=False)
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pylist(frame.to_dict(orient="records"))
    assert "start: int64" in str(arrow.schema), "offsets typed as integers with nulls"
    pq.write_table(arrow, tmp_path / "predicted.parquet")
    for plain in (tmp_path / "predicted.jsonl", tmp_path / "predicted.csv",
                  tmp_path / "predicted.parquet"):
        got = spans_json(str(plain), _human(ted, tmp), "--spans-column", name, env=env)
        assert got == stored, plain
    assert stored[0]["unlocated_spans"] == 1 and stored[0]["n"] == 6
    # the bundled example runs and names what it left out
    example = run_cli("meta-eval", "spans", str(ROOT / "examples" / "ted-mqm-predicted.jsonl"),
                      human, "--spans-column", "spans")
    assert example.returncode == 0, example.stderr
    assert "1 predicted span(s) not found in the output" in example.stderr


def _human(ted: dict[str, Any], tmp: Path) -> str:
    """People's spans of the scored segments as a JSONL file (test_spans_end_to_end's)."""
    human = tmp / "plain_human_spans.jsonl"
    with human.open("w", encoding="utf-8") as handle:
        for key in ted["keys"]:
            found = ted["spans"].get(key, [])
            lines = [{"item": key[0], "system": key[1], "start": s["start"], "end": s["end"],
                      "severity": s["severity"], "rater": s["rater"]} for s in found]
            lines = lines or [{"item": key[0], "system": key[1], "start": None, "end": None}]
            handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    return str(human)


GOOD = {"start": 0, "end": 3, "severity": "minor"}
BAD = [
    ([{**GOOD, "start": "0"}], "spans[0].start", "non-negative integer"),
    ([GOOD, {**GOOD, "start": -1}], "spans[1].start", "non-negative integer"),
    ([{**GOOD, "end": True}], "spans[0].end", "non-negative integer"),
    ([{**GOOD, "start": 3, "end": 1}], "spans[0].end", "before"),
    ([{**GOOD, "end": 99}], "spans[0].end", "past the end"),
    ([{**GOOD, "severity": "fatal"}], "spans[0].severity", "Minor, Major or Critical"),
    ([{**GOOD, "severity": None}], "spans[0].severity", "Minor, Major or Critical"),
    (["oops"], "spans[0]", "an object"),
    ({"start": 0}, "'spans'", "a JSON list"),
]


@pytest.mark.parametrize(("cell", "field", "reason"), BAD)
def test_a_bad_span_row_is_refused_naming_file_line_and_field(tmp_path: Path, cell: Any,
                                                              field: str, reason: str) -> None:
    rows = [{"item": "1", "system": "a", "output": "abcdef", "spans": [GOOD]},
            {"item": "1", "system": "b", "output": "abcdef", "spans": cell}]
    path = tmp_path / "predicted.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    human = tmp_path / "human.jsonl"
    human.write_text(json.dumps({"item": "1", "system": "a", **GOOD}) + "\n")
    done = run_cli("meta-eval", "spans", str(path), str(human), "--spans-column", "spans")
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = done.stderr.strip()
    assert str(path) in line and "line 2" in line and field in line and reason in line
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_csv_cell_that_is_not_json_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "predicted.csv"
    path.write_text('item,system,spans\n1,a,[]\n1,b,"[{""start"": 0,"\n')
    human = tmp_path / "human.jsonl"
    human.write_text(json.dumps({"item": "1", "system": "a", **GOOD}) + "\n")
    done = run_cli("meta-eval", "spans", str(path), str(human), "--spans-column", "spans")
    assert done.returncode == 2
    assert f"{path}, line 3, field 'spans': not JSON" in done.stderr
    missing = run_cli("meta-eval", "spans", str(path), str(human), "--spans-column", "nope")
    assert missing.returncode == 2 and "field 'nope'" in missing.stderr
    both = run_cli("meta-eval", "spans", str(path), str(human), "--spans-column", "spans",
                   "--store", str(tmp_path / "x.db"))
    assert both.returncode == 2 and "does not go with it" in both.stderr
