"""`meta-eval spans` on bad input (issue 36): a 5,000-digit offset in people's spans, a store
that is not one `score` wrote (missing its tables, or not SQLite), and people's spans past the
end of the output they mark are each one line on stderr naming the file, line and field, exit
2, with no traceback. The TED segments scored by judge.mqm come from test_spans_end_to_end."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import test_spans_end_to_end as e2e
from conftest import run_cli

# the scored TED segments, shared with the end-to-end test (module-scoped fixtures)
ted = e2e.ted
scored = e2e.scored


def refused(proc: Any, *fragments: str) -> str:
    """The one error line of a run that exited 2; each of `fragments` is in it."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return str(lines[0])


def meta_eval(scored: dict, spans: Path, store: Path | None = None) -> Any:
    tmp = scored["tmp"]
    return run_cli("meta-eval", "spans", str(tmp / "scores.csv"), str(spans), "--store",
                   str(store or tmp / "store.db"), "--json", env=scored["env"])


def test_a_5000_digit_span_offset_names_the_file_line_and_field(scored: dict,
                                                                 tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    spans.write_text('{"item": "1", "system": "Nemo", "start": 0, "end": 1, "severity": '
                     '"Minor"}\n{"item": "1", "system": "Nemo", "start": ' + "9" * 5000
                     + ', "end": 9, "severity": "Minor"}\n', encoding="utf-8")
    refused(meta_eval(scored, spans), f"{spans}, line 2, field 'start'", "5000 digits")


def test_human_spans_that_are_not_utf8_name_the_file_and_line(scored: dict,
                                                              tmp_path: Path) -> None:
    spans = tmp_path / "spans.jsonl"
    spans.write_bytes(b'{"item": "1", "system": "Nemo", "start": null, "end": null}\n'
                      b'{"item": "1", "system": "N\xe9mo", "start": null, "end": null}\n')
    refused(meta_eval(scored, spans), f"{spans}, line 2", "invalid UTF-8")


def test_a_store_missing_its_tables_is_refused_naming_it(scored: dict, tmp_path: Path) -> None:
    store = tmp_path / "other.db"
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE notes (text)")
    spans = tmp_path / "spans.jsonl"
    spans.write_text('{"item": "1", "system": "Nemo", "start": null, "end": null}\n',
                     encoding="utf-8")
    refused(meta_eval(scored, spans, store), f"{store}, field '--store'",
            "not a store `score` wrote", "no such table: scores")


def test_a_store_that_is_not_sqlite_is_refused_naming_it(scored: dict, tmp_path: Path) -> None:
    store = tmp_path / "notes.db"
    store.write_text("these are my notes, not a database\n" * 20, encoding="utf-8")
    spans = tmp_path / "spans.jsonl"
    spans.write_text('{"item": "1", "system": "Nemo", "start": null, "end": null}\n',
                     encoding="utf-8")
    refused(meta_eval(scored, spans, store), f"{store}, field '--store'",
            "not a store `score` wrote")


def test_human_spans_past_the_outputs_end_name_the_file_line_and_field(
        ted: dict, scored: dict, tmp_path: Path) -> None:
    key = ted["keys"][0]
    length = len(ted["samples"][key]["output"])
    rows = [{"item": key[0], "system": key[1], "start": 0, "end": 1, "severity": "Minor"},
            {"item": key[0], "system": key[1], "start": length - 1, "end": length + 5,
             "severity": "Major"}]
    spans = tmp_path / "spans.jsonl"
    spans.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    refused(meta_eval(scored, spans), f"{spans}, line 2, field 'end'",
            "past the end of the output", f"({length} characters)")
    rows[1]["end"] = length  # up to the last character is inside
    spans.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert meta_eval(scored, spans).returncode == 0
