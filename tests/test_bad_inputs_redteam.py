"""Bad inputs that used to get through (issue 24, item 4): each is one line on stderr that
names the file, line and field (or the store and row), exit 2, before any work: no traceback,
no store, no table, no judge call."""

from __future__ import annotations

import json
import sqlite3
import sys
import types
import typing
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, write_jsonl
from scripted_judge import ScriptedJudge

from judgebench.metric_card import metric_card
from judgebench.plugins import build_host

GOOD = {"item": "d1", "system": "s1", "output": "a cat", "reference": "the cat"}


def refused(proc: object, *fragments: str) -> str:
    """The one error line of a run that exited 2; each of `fragments` is in it."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)  # type: ignore[attr-defined]
    err = proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def score(tmp_path: Path, source: Path, *specs: str) -> tuple[object, Path, Path]:
    out, store = tmp_path / "out.csv", tmp_path / "s.db"
    proc = run_cli("score", str(source), *(a for s in specs for a in ("-m", s)), "-o", str(out),
                   "--store", str(store))
    return proc, out, store


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_metadata_nested_too_deep_names_line_and_field(tmp_path: Path, depth: int) -> None:
    deep = '{"a":' * depth + "1" + "}" * depth
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"item": "d2"})[:-1]
                      + f', "meta": {deep}}}\n', encoding="utf-8")
    proc, out, store = score(tmp_path, source, "lexical.length")
    refused(proc, f"{source}, line 2, field 'meta'", f"nested {depth} levels deep")
    assert not out.exists() and not store.exists()


def test_a_5000_digit_human_score_names_line_and_field(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD)[:-1] + ', "human": {"q": ' + "9" * 5000 + "}}\n",
                      encoding="utf-8")
    proc, out, store = score(tmp_path, source, "lexical.length")
    refused(proc, f"{source}, line 1, field 'human.q'", "5000 digits")
    assert not out.exists() and not store.exists()


def _scored_store(tmp_path: Path) -> Path:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD, GOOD | {"item": "d2"}])
    store = tmp_path / "s.db"
    run_cli("score", str(source), "-m", "lexical.length", "--store", str(store), "-o",
            str(tmp_path / "ok.csv"), check=True)
    return store


DAMAGE = {  # column: (table, a value that is not what the column holds)
    "runs.selection": ("runs", "{not json"),
    "runs.metrics": ("runs", "[1, 2]"),
    "runs.statuses": ("runs", '{"lexical.length": {"ok": "two"}}'),
    "scores.extra": ("scores", "{x"),
    "scores.request_keys": ("scores", '{"a": 1}'),
}


@pytest.mark.parametrize("command", ["runs", "logs"])
@pytest.mark.parametrize("column", sorted(DAMAGE))
def test_runs_and_logs_name_the_damaged_json_cell(tmp_path: Path, command: str,
                                                 column: str) -> None:
    store = _scored_store(tmp_path)
    table, value = DAMAGE[column]
    name = column.split(".", 1)[1]
    with sqlite3.connect(store) as conn:
        conn.execute(f"UPDATE {table} SET {name} = ?", (value,))
        row = conn.execute(f"SELECT MIN({'id' if table == 'runs' else 'rowid'}) FROM {table}"
                           ).fetchone()[0]
    conn.close()
    proc = run_cli(command, "--store", str(store))
    if command == "runs" and table == "scores":  # `runs` reads no score
        assert proc.returncode == 0, proc.stderr
        return
    refused(proc, f"{store}, row {row}, field '{column}'", "the store is damaged")


@pytest.mark.parametrize(("name", "value"), [("extra", "{x"), ("extra", "[1]"),
                                             ("status", "fine")])
def test_score_resume_names_the_damaged_score_cell(tmp_path: Path, name: str,
                                                   value: str) -> None:
    """`score --resume` reads the stored scores back: a damaged cell there is the same one
    line as for `runs` and `logs`, not a traceback, and no table is written."""
    store = _scored_store(tmp_path)
    with sqlite3.connect(store) as conn:
        conn.execute(f"UPDATE scores SET {name} = ? WHERE rowid = 2", (value,))
    conn.close()
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD, GOOD | {"item": "d2"}])
    out = tmp_path / "again.csv"
    proc = run_cli("score", str(source), "-m", "lexical.length", "--store", str(store), "-o",
                   str(out), "--resume")
    refused(proc, f"{store}, row 2, field 'scores.{name}'", "the store is damaged")
    assert not out.exists()


def test_config_that_is_a_directory(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    folder = tmp_path / "metrics.toml"
    folder.mkdir()
    proc = run_cli("score", str(source), "--config", str(folder), "--store",
                   str(tmp_path / "s.db"))
    refused(proc, f"{folder}: is a directory")
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("value, expected", [
    ("-3", "greater than or equal to 0"),
    ("9" * 400, "less than or equal to 100"),  # it ran without end
], ids=["negative", "400 digits"])
def test_chrf_orders_out_of_bounds_are_refused(tmp_path: Path, value: str,
                                               expected: str) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD])
    proc, out, store = score(tmp_path, source, f"lexical.chrf:char_order={value}")
    refused(proc, "lexical.chrf: option 'char_order'", expected)
    assert not out.exists() and not store.exists()


def _numeric(annotation: object) -> bool:
    members = (typing.get_args(annotation)
               if typing.get_origin(annotation) in (typing.Union, types.UnionType)
               else (annotation,))
    return any(member in (int, float) for member in members)


def test_every_numeric_option_of_every_metric_has_both_bounds_on_its_card() -> None:
    host = build_host()
    entries = host.metrics() | host.sentinels()
    unbounded, checked = [], 0
    for name, entry in sorted(entries.items()):
        model = entry.options_model
        if model is None:
            continue
        card = metric_card(entry)
        assert card.options is not None
        for option, field in zip(card.options, model.model_fields.values(), strict=True):
            if not _numeric(field.annotation):
                continue
            checked += 1
            low = option.minimum if option.minimum is not None else option.exclusive_minimum
            high = option.maximum if option.maximum is not None else option.exclusive_maximum
            if low is None or high is None:
                unbounded.append(f"{name}:{option.name}")
                continue
            assert f"{low:g}" in option.allowed and f"{high:g}" in option.allowed, option
    assert checked > 100  # the judges' and the engines' options among them
    assert not unbounded, unbounded
    text = run_cli("metrics", "lexical.chrf").stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("char_order "))
    assert "0 <= x <= 100" in line


@pytest.mark.parametrize("kind", ["missing", "not sqlite", "truncated"])
def test_audit_store_that_cannot_be_read_is_refused(tmp_path: Path, kind: str) -> None:
    table = tmp_path / "scores.csv"
    table.write_text("item,system,m,human.q\n" + "".join(
        f"{i},{s},{i * 0.1 + n * 0.01},{(i * 7 + n) % 5}\n"
        for i in range(6) for n, s in enumerate("abc")), encoding="utf-8")
    store = tmp_path / "broken.db"
    if kind == "not sqlite":
        store.write_text("not a database " * 20)
    elif kind == "truncated":
        data = _scored_store(tmp_path).read_bytes()
        store.write_bytes(data[: len(data) // 2 + 100])
    proc = run_cli("audit", str(table), "--human", "human.q", "--store", str(store))
    refused(proc, f"{store}, field '--store'")


def test_a_pair_of_one_system_with_itself_is_refused_before_any_call(tmp_path: Path) -> None:
    rows = [{"item": "q1", "system_a": "M0", "system_b": "M1", "output_a": "x", "output_b": "y"},
            {"item": "q2", "system_a": "M0", "system_b": "M0", "output_a": "x", "output_b": "y"}]
    source = write_jsonl(tmp_path / "pairs.jsonl", rows)
    with ScriptedJudge() as judge:
        proc = run_cli("score", str(source), "-m",
                       f"judge.pairwise:backend=openai_compat,model=judge,api_base={judge.url},"
                       "api_key_env=JB_PAIR_KEY,protocol=text", "-o", str(tmp_path / "v.csv"),
                       "--store", str(tmp_path / "s.db"), env={"JB_PAIR_KEY": "x"})
        calls = judge.calls
    refused(proc, f"{source}, line 2, field 'system_b'", "'M0'")
    assert calls == 0 and not (tmp_path / "s.db").exists()
