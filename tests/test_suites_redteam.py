"""Suites read defensively and nothing a user has lost (issue 36): a suite from `--suite-path`
(or a third-party package) whose files are damaged is one line on stderr naming the file, line
and field, exit 2, with nothing written; `suites --export` and `bench --workdir` replace no
file a user has unless `--force`; a refused `bench` writes nothing."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from suites_support import HUMAN, NAME, SAMPLES, gz, suite


def refused(proc: Any, *fragments: str) -> str:
    """The one error line of a run that exited 2; each of `fragments` is in it."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return str(lines[0])


def export(tmp_path: Path, *extra: str) -> tuple[Any, Path]:
    out = tmp_path / "export"
    proc = run_cli("suites", NAME, "--suite-path", str(tmp_path / "suites"), "--export",
                   str(out), *extra)
    return proc, out


# -- damaged suites -----------------------------------------------------------------------------
def test_a_samples_gz_that_is_not_gzip_names_the_file(tmp_path: Path) -> None:
    folder = suite(tmp_path / "suites", samples=b'{"item": "i0"}\n')
    proc, out = export(tmp_path)
    refused(proc, str(folder / "samples.jsonl.gz"), "not a readable gzip file")
    assert not out.exists()


def test_a_truncated_gzip_names_the_file(tmp_path: Path) -> None:
    folder = suite(tmp_path / "suites", human=gz(HUMAN)[:-12])
    proc, out = export(tmp_path)
    refused(proc, str(folder / "human.jsonl.gz"), "not a readable gzip file")
    assert not out.exists()


def test_samples_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path: Path) -> None:
    rows: list[Any] = [SAMPLES[0], b'{"item": "i1", "system": "S", "output": "caf\xe9"}\n']
    folder = suite(tmp_path / "suites", samples=gz(rows))
    proc, out = export(tmp_path)
    refused(proc, f"{folder / 'samples.jsonl.gz'}, line 2", "invalid UTF-8")
    assert not out.exists()


def test_a_suite_json_that_is_not_utf8_names_the_file_and_line(tmp_path: Path) -> None:
    folder = suite(tmp_path / "suites", suite_json=b'{\n"name": "tin\xff"}')
    proc, out = export(tmp_path)
    refused(proc, f"{folder / 'suite.json'}, line 2", "invalid UTF-8")
    assert not out.exists()


def test_a_suite_json_nested_100000_deep_names_the_file_and_field(tmp_path: Path) -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    folder = suite(tmp_path / "suites", suite_json=f'{{"name": "tiny", "x": {deep}}}'.encode())
    proc, out = export(tmp_path)
    refused(proc, f"{folder / 'suite.json'}, field 'x'", "nested 100000 levels deep")
    assert not out.exists()


@pytest.mark.parametrize(("label", "got"), [("good", "the text 'good'"),
                                            ({"mean": 3}, "a dict"),
                                            (True, "the boolean True")])
def test_a_human_label_that_is_text_a_dict_or_a_boolean_names_file_line_and_field(
        tmp_path: Path, label: Any, got: str) -> None:
    rows = [HUMAN[0], HUMAN[1] | {"human.quality": label}, *HUMAN[2:]]
    folder = suite(tmp_path / "suites", human=gz(rows))
    proc, out = export(tmp_path)
    refused(proc, f"{folder / 'human.jsonl.gz'}, line 2, field 'human.quality'", got)
    assert not out.exists()


def test_a_boolean_human_label_is_refused_as_score_refuses_it(tmp_path: Path) -> None:
    """The same words as `score` on a JSONL row whose human label is a boolean."""
    rows = [HUMAN[0] | {"human.quality": False}, *HUMAN[1:]]
    folder = suite(tmp_path / "suites", human=gz(rows))
    from_suite = refused(export(tmp_path)[0])
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(SAMPLES[0] | {"human": {"quality": False}}) + "\n",
                      encoding="utf-8")
    from_score = refused(run_cli("score", str(source), "-m", "lexical.length", "-o",
                                 str(tmp_path / "o.csv"), "--store", str(tmp_path / "s.db")))
    assert from_suite.split(": ", 2)[-1] == from_score.split(": ", 2)[-1]
    assert str(folder / "human.jsonl.gz") in from_suite


def test_a_human_row_without_item_names_file_line_and_field(tmp_path: Path) -> None:
    rows = [HUMAN[0], {"system": "S", "human.quality": 1.0}, *HUMAN[2:]]
    folder = suite(tmp_path / "suites", human=gz(rows))
    proc, out = export(tmp_path)
    refused(proc, f"{folder / 'human.jsonl.gz'}, line 2, field 'item'", "missing")
    assert not out.exists()


def test_a_sample_whose_metadata_is_a_string_names_file_line_and_field(tmp_path: Path) -> None:
    rows = [SAMPLES[0], SAMPLES[1], SAMPLES[2] | {"metadata": "news"}, SAMPLES[3]]
    folder = suite(tmp_path / "suites", samples=gz(rows))
    proc, out = export(tmp_path)
    refused(proc, f"{folder / 'samples.jsonl.gz'}, line 3, field 'metadata'", "not a str")
    assert not out.exists()


def test_a_sample_whose_metadata_is_null_is_exported_as_no_metadata(tmp_path: Path) -> None:
    rows = [SAMPLES[0] | {"metadata": None}, *SAMPLES[1:]]
    suite(tmp_path / "suites", samples=gz(rows))
    proc, out = export(tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = json.loads((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["metadata"] is None and first["human"] == {"quality": 0.0}


def test_bench_on_a_damaged_suite_writes_no_store_and_no_workdir(tmp_path: Path) -> None:
    suite(tmp_path / "suites", human=gz([HUMAN[0], {"system": "S"}]))
    store, workdir = tmp_path / "runs.db", tmp_path / "work"
    proc = run_cli("bench", "lexical.length", "--suite", NAME, "--suite-path",
                   str(tmp_path / "suites"), "--store", str(store), "--workdir", str(workdir),
                   "--bootstrap", "0")
    refused(proc, "human.jsonl.gz, line 2, field 'item'")
    assert not store.exists() and not any(workdir.rglob("*"))


# -- --export: onto a file, into a folder this user may not write, over a user's files ---------
def test_export_onto_a_file_is_refused_naming_it(tmp_path: Path) -> None:
    suite(tmp_path / "suites")
    (tmp_path / "export").write_text("mine\n", encoding="utf-8")
    proc, out = export(tmp_path)
    refused(proc, "field '--export'", f"{out} is not a directory")
    assert out.read_text(encoding="utf-8") == "mine\n"


def test_export_into_a_folder_this_user_may_not_write_is_refused(tmp_path: Path) -> None:
    suite(tmp_path / "suites")
    if os.geteuid() == 0:  # root writes through file modes: a folder no one may create in
        locked = Path("/proc/self")
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
    out = locked / "export"
    proc = run_cli("suites", NAME, "--suite-path", str(tmp_path / "suites"), "--export",
                   str(out))
    refused(proc, "field '--export'", f"this user may not write in {locked}")
    assert not out.exists()


def test_export_refuses_to_replace_a_users_files_without_force(tmp_path: Path) -> None:
    suite(tmp_path / "suites")
    out = tmp_path / "export"
    out.mkdir()
    (out / "human.jsonl").write_text("my labels\n", encoding="utf-8")
    proc, _ = export(tmp_path)
    refused(proc, "field '--export'", f"would replace {out / 'human.jsonl'}", "--force")
    assert (out / "human.jsonl").read_text(encoding="utf-8") == "my labels\n"
    assert not (out / "samples.jsonl").exists()
    forced, _ = export(tmp_path, "--force")
    assert forced.returncode == 0, forced.stderr
    assert [json.loads(line) for line in (out / "human.jsonl").read_text().splitlines()] == HUMAN


# -- bench: -o against the store, --workdir over a user's files, a refused spec ----------------
def test_bench_output_that_is_the_store_is_refused_naming_both(tmp_path: Path) -> None:
    suite(tmp_path / "suites")
    store = tmp_path / "runs.db"
    with sqlite3.connect(store) as db:
        db.execute("CREATE TABLE kept (x)")
    before = store.read_bytes()
    proc = run_cli("bench", "lexical.length", "--suite", NAME, "--suite-path",
                   str(tmp_path / "suites"), "--store", str(store), "-o", str(store),
                   "--bootstrap", "0")
    refused(proc, "-o is the same file as --store")
    assert store.read_bytes() == before


def test_bench_output_that_is_a_suite_file_is_refused(tmp_path: Path) -> None:
    folder = suite(tmp_path / "suites")
    before = (folder / "suite.json").read_bytes()
    proc = run_cli("bench", "lexical.length", "--suite", NAME, "--suite-path",
                   str(tmp_path / "suites"), "--store", str(tmp_path / "runs.db"),
                   "-o", str(folder / "suite.json"), "--bootstrap", "0")
    refused(proc, "-o is the same file as --suite-path")
    assert (folder / "suite.json").read_bytes() == before


def test_bench_workdir_refuses_to_replace_a_users_files_without_force(tmp_path: Path) -> None:
    suite(tmp_path / "suites")
    store, workdir = tmp_path / "runs.db", tmp_path / "work"
    mine = workdir / NAME / "scores.csv"
    mine.parent.mkdir(parents=True)
    mine.write_text("item,system,mine\n", encoding="utf-8")
    args = ["bench", "lexical.length", "--suite", NAME, "--suite-path", str(tmp_path / "suites"),
            "--store", str(store), "--workdir", str(workdir), "--bootstrap", "0"]
    refused(run_cli(*args), "field '--workdir'", f"would replace {mine}", "--force")
    assert mine.read_text(encoding="utf-8") == "item,system,mine\n"
    assert not store.exists() and not (workdir / NAME / "samples.jsonl").exists()
    forced = run_cli(*args, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "lexical.length" in mine.read_text(encoding="utf-8")


def test_a_refused_bench_spec_writes_nothing_in_the_workdir(tmp_path: Path) -> None:
    """The second spec carries a credential in api_base: refused before the first suite is
    exported or scored."""
    suite(tmp_path / "suites")
    store, workdir = tmp_path / "runs.db", tmp_path / "work"
    proc = run_cli("bench", "lexical.length",
                   "judge.rubric:backend=openai_compat,model=m,"
                   "api_base=http://user:sk-123@127.0.0.1:9/v1",
                   "--suite", NAME, "--suite-path", str(tmp_path / "suites"),
                   "--store", str(store), "--workdir", str(workdir), "--bootstrap", "0")
    line = refused(proc, "api_base carries a credential")
    assert "sk-123" not in line
    assert not store.exists() and not workdir.exists()
