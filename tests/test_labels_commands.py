"""`judgebench labels import` and `export`, and `--human store:CRITERION` in the commands
that read a human column: bad rows refused naming the file, line and field with nothing
written; statuses never values; the exported table is what meta-eval reads; a store's
labels read as a human column give the numbers the exported column gives."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import REPO, run_cli

from judgebench.engine import labels as L

LABELS = REPO / "examples" / "summeval-labels.csv"
SCORES = REPO / "examples" / "summeval-scores.csv"


def _import(store: Path, path: Path, *args: str) -> tuple[int, str]:
    proc = run_cli("labels", "import", str(path), "--store", str(store), *args)
    return proc.returncode, proc.stdout + proc.stderr


def _write(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif path.suffix == ".parquet":
        pd.DataFrame(rows).to_parquet(path)
    else:
        pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_the_example_file_imports_once_and_exports_as_a_human_table(tmp_path: Path) -> None:
    store, out = tmp_path / "runs.db", tmp_path / "human.csv"
    code, text = _import(store, LABELS, "--criterion", "relevance", "--scale", "1-5",
                         "--description", "Keeps the important content?")
    assert code == 0, text
    source = pd.read_csv(LABELS, dtype={"item": str, "system": str})
    answered = source[source["status"].isna()]
    assert f"imported {len(source)} label(s)" in text
    code, text = _import(store, LABELS, "--criterion", "relevance")
    assert code == 0 and "imported 0 label(s)" in text and f"{len(source)} row(s) left" in text
    assert len(L.label_history(store)) == len(source), "an import twice writes nothing new"
    proc = run_cli("labels", "export", "--store", str(store), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out, dtype={"item": str, "system": str})
    assert list(table.columns) == ["item", "system", "human.relevance",
                                   "human.relevance.experts", "human.relevance.simulated"]
    keyed = table.set_index(["item", "system"])
    for annotator in ("experts", "simulated"):
        mine = answered[answered["annotator"] == annotator].set_index(["item", "system"])
        column = keyed[f"human.relevance.{annotator}"]
        assert column.notna().sum() == len(mine)
        assert (column.loc[mine.index] == mine["relevance"]).all()
    means = answered.groupby(["item", "system"])["relevance"].mean()
    assert np.allclose(keyed.loc[means.index, "human.relevance"], means, rtol=0, atol=1e-15)
    told = source[source["status"].eq("cant_tell")]
    told_keys = pd.MultiIndex.from_frame(told[["item", "system"]])
    assert len(told) == 2 and keyed["human.relevance.simulated"].reindex(
        told_keys).isna().all(), "can't tell is an empty cell, never a value"
    # meta-eval reads the exported table joined onto the scores as any human column
    joined = tmp_path / "joined.csv"
    scores = pd.read_csv(SCORES, dtype={"item": str, "system": str})
    scores.drop(columns=["human.relevance"]).merge(table, on=["item", "system"]).to_csv(
        joined, index=False)
    proc = run_cli("meta-eval", str(joined), "--human", "human.relevance", "--metric",
                   "lexical.chrf", "--json")
    assert proc.returncode == 0, proc.stderr
    from_table = json.loads(proc.stdout)
    # ... and the store's labels read straight from it give the same number
    proc = run_cli("meta-eval", str(SCORES), "--human", f"store:{store}:relevance",
                   "--metric", "lexical.chrf", "--json")
    assert proc.returncode == 0, proc.stderr
    from_store = json.loads(proc.stdout)
    assert from_store[0]["value"] == from_table[0]["value"]
    assert from_store[0]["n"] == from_table[0]["n"] == 64
    one = run_cli("meta-eval", str(SCORES), "--human",
                  f"store:{store}:relevance.simulated", "--metric", "lexical.chrf", "--json")
    assert json.loads(one.stdout)[0]["n"] == len(answered[answered["annotator"]
                                                           == "simulated"])


@pytest.mark.parametrize(("rows", "args", "where", "field"), [
    ([{"item": "i1", "system": "s", "v": 3}, {"item": "i2", "system": "s", "v": 9}],
     ["--scale", "1-5"], "line 3", "v"),
    ([{"item": "i1", "system": "s", "v": 3}, {"item": "i1", "system": "s", "v": 4}],
     ["--scale", "1-5"], "line 3", "item"),
    ([{"item": "i1", "system": "s", "v": 3}, {"item": "i2", "system": None, "v": 4}],
     ["--scale", "1-5"], "line 3", "system"),
    ([{"item": "i1", "system": "s", "v": 3, "status": "skip"},
      {"item": "i2", "system": "s", "v": None, "status": "skip"}],
     ["--scale", "1-5"], "line 2", "v"),
    ([{"item": "i1", "system": "s", "v": 1, "status": "maybe"}], ["--binary"], "line 2",
     "status"),
    ([{"item": "i1", "system": "s", "v": "rude"}, {"item": "i2", "system": "s", "v": "meh"}],
     ["--choices", "calm,rude"], "line 3", "v"),
    ([{"item": "i1", "system": "s", "v": "a"}], ["--pairwise"], None, "system_a"),
    ([{"item": "i1", "system_a": "x", "system_b": "x", "v": "a"}], ["--pairwise"], "line 2",
     "system_b"),
    ([{"item": "i1", "system_a": "x", "system_b": "y", "v": "a", "shown_left": "z"}],
     ["--pairwise"], "line 2", "shown_left"),
    ([{"item": "i1", "system": "s", "v": 1, "inclusion_probability": 0}], ["--binary"],
     "line 2", "inclusion_probability"),
    ([{"item": "i1", "system": "s", "v": 1, "criterion": "other"}], ["--binary"], "line 2",
     "criterion"),
])
def test_a_bad_row_is_refused_naming_file_line_and_field_and_nothing_is_written(
        tmp_path: Path, rows: list[dict], args: list[str], where: str | None,
        field: str) -> None:
    store = tmp_path / "runs.db"
    path = _write(tmp_path / "labels.csv", rows)
    code, text = _import(store, path, "--criterion", "c", "--annotator", "ann",
                         "--column", "v", *args)
    assert code == 2, text
    message = text.strip().splitlines()[-1]
    assert str(path) in message and f"field '{field}'" in message, message
    if where is not None:
        assert where in message, message
    assert "Traceback" not in text
    assert not store.exists(), "nothing written: not even the criterion"


def test_jsonl_and_parquet_files_of_labels_with_statuses_and_critiques(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    rows: list[dict] = [{"item": "i1", "system_a": "x", "system_b": "y", "annotator": "ann",
                         "value": "a", "shown_left": "y", "critique": "y rambles"},
            {"item": "i2", "system_a": "x", "system_b": "y", "annotator": "ann",
             "value": None, "status": "can't tell"},
            {"item": "i2", "system_a": "x", "system_b": "y", "annotator": "bob",
             "value": "tie"},
            {"item": "i3", "system_a": "y", "system_b": "x", "annotator": "bob",
             "value": 0.0}]
    path = _write(tmp_path / "pairs.jsonl", rows)
    code, text = _import(store, path, "--criterion", "pref", "--pairwise")
    assert code == 0, text
    got = {(lab.annotator, lab.item): lab for lab in L.current_labels(store)}
    assert got[("ann", "i1")].system == ("x", "y") and got[("ann", "i1")].value == 1.0
    assert (got[("ann", "i1")].shown_left, got[("ann", "i1")].critique) == ("y", "y rambles")
    assert (got[("ann", "i2")].status, got[("ann", "i2")].value) == ("cant_tell", None)
    assert got[("bob", "i3")].system == ("y", "x") and got[("bob", "i3")].value == 0.0
    assert got[("ann", "i1")].source == "import:pairs.jsonl"
    # a pairwise export is keyed by the pair, each answer as given (a, b, tie)
    out = tmp_path / "pairs-human.csv"
    proc = run_cli("labels", "export", "--store", str(store), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(out, dtype=str).fillna("")
    assert table[["item", "system_a", "system_b", "human.pref", "human.pref.ann",
                  "human.pref.bob"]].values.tolist() == [
        ["i1", "x", "y", "a", "a", ""], ["i2", "x", "y", "tie", "", "tie"],
        ["i3", "y", "x", "b", "", "b"]]
    # the pairwise meta-eval reads the store's labels for a table of the pair either way round
    pairs = _write(tmp_path / "verdicts.csv", [
        {"item": "i1", "system_a": "x", "system_b": "y", "j": "a"},
        {"item": "i3", "system_a": "x", "system_b": "y", "j": "a"},
        {"item": "i2", "system_a": "x", "system_b": "y", "j": "b"}])
    from judgebench.tables.pairs import PreparedPairs

    prepared = PreparedPairs.read(pairs, [f"store:{store}:pref"])
    assert prepared.frame[f"store:{store}:pref"].tolist() == [1.0, 1.0, 0.5]
    # Parquet, with a choices criterion, values by name
    choice = _write(tmp_path / "tone.parquet", [
        {"item": "i1", "system": "s", "value": "rude"},
        {"item": "i2", "system": "s", "value": "calm"}])
    code, text = _import(store, choice, "--criterion", "tone", "--choices", "calm,rude,odd",
                         "--annotator", "ann")
    assert code == 0, text
    assert [lab.value for lab in L.current_labels(store, criterion="tone")] == [1.0, 0.0]
    proc = run_cli("labels", "export", "--store", str(store), "-o", str(out))
    assert proc.returncode == 2 and "export them apart with --criterion" in proc.stderr
    proc = run_cli("labels", "export", "--store", str(store), "--criterion", "tone", "-o",
                   str(tmp_path / "tone.csv"))
    assert proc.returncode == 0 and "a choice's name (calm, rude, odd)" in proc.stderr
    assert pd.read_csv(tmp_path / "tone.csv")["human.tone.ann"].tolist() == ["rude", "calm"]


def test_a_criterion_keeps_its_definition_and_an_annotator_is_named_once(
        tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    path = _write(tmp_path / "l.csv", [{"item": "i1", "system": "s", "value": 4}])
    assert _import(store, path, "--criterion", "q", "--scale", "1-5", "--annotator",
                   "ann")[0] == 0
    code, text = _import(store, path, "--criterion", "q", "--scale", "1-10", "--annotator",
                         "ann")
    assert code == 2 and "field 'scale'" in text and "scale 1-5" in text
    code, text = _import(store, path, "--criterion", "q", "--binary", "--annotator", "ann")
    assert code == 2 and "field 'kind'" in text
    code, text = _import(store, path, "--criterion", "new")
    assert code == 2 and "give its kind" in text
    code, text = _import(store, path, "--criterion", "q")
    assert code == 2 and "--annotator" in text
    with_column = _write(tmp_path / "w.csv", [{"item": "i1", "system": "s", "value": 4,
                                                "annotator": "bob"}])
    code, text = _import(store, with_column, "--criterion", "q", "--annotator", "ann")
    assert code == 2 and "give one of the two" in text
    code, text = _import(store, path, "--criterion", "q", "--scale", "1-5", "--binary",
                         "--annotator", "ann")
    assert code == 2 and "a criterion has one kind" in text
    code, text = _import(store, path, "--criterion", "h", "--scale", "1 to 5",
                         "--annotator", "ann")
    assert code == 2 and "LOW-HIGH" in text
    code, text = _import(store, path, "--criterion", "h", "--scale", "0-1", "--step", "any",
                         "--annotator", "ann", "--column", "nope")
    assert code == 2 and "field '--column'" in text
    conn = sqlite3.connect(store)
    assert conn.execute("SELECT name FROM criteria").fetchall() == [("q",)]
    conn.close()


def test_export_refuses_to_write_over_the_store_and_says_when_it_is_empty(
        tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    path = _write(tmp_path / "l.csv", [{"item": "i1", "system": "s", "value": 1}])
    assert _import(store, path, "--criterion", "ok", "--binary", "--annotator", "a")[0] == 0
    before = store.read_bytes()
    for target in (store, Path(f"{store}-wal")):
        proc = run_cli("labels", "export", "--store", str(store), "-o", str(target))
        assert proc.returncode == 2 and "same file" in proc.stderr, proc.stderr
    assert store.read_bytes() == before
    empty = tmp_path / "empty.db"
    L.criteria(L.Store(empty))  # a new, empty store
    proc = run_cli("labels", "export", "--store", str(empty), "-o", str(tmp_path / "h.csv"))
    assert proc.returncode == 2 and "no labels in this store yet" in proc.stderr
    assert not (tmp_path / "h.csv").exists()


def test_a_store_column_says_where_to_find_the_store_and_checks_the_rows(
        tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    path = _write(tmp_path / "l.csv", [{"item": "elsewhere", "system": "M0", "value": 3}])
    assert _import(store, path, "--criterion", "q", "--scale", "1-5", "--annotator",
                   "a")[0] == 0
    proc = run_cli("meta-eval", str(SCORES), "--human", "store:q", "--metric", "lexical.chrf")
    assert proc.returncode == 2 and "give --store" in proc.stderr \
        and "store:runs.db:q" in proc.stderr
    proc = run_cli("meta-eval", str(SCORES), "--human", f"store:{store}:q", "--metric",
                   "lexical.chrf")
    assert proc.returncode == 2 and "is a row of this table" in proc.stderr
    proc = run_cli("meta-eval", str(SCORES), "--human", f"store:{store}:nope", "--metric",
                   "lexical.chrf")
    assert proc.returncode == 2 and "no criterion 'nope'" in proc.stderr
    # audit and compare-judges read the store their --store names
    scores = pd.read_csv(SCORES, dtype={"item": str, "system": str})
    rows = [{"item": i, "system": s, "value": int(v)} for i, s, v in zip(
        scores["item"], scores["system"], scores["human.coherence"].round(), strict=True)]
    coherence = _write(tmp_path / "c.csv", rows)
    assert _import(store, coherence, "--criterion", "coh", "--scale", "1-5", "--annotator",
                   "a")[0] == 0
    proc = run_cli("compare-judges", str(SCORES), "--a", "lexical.chrf", "--b",
                   "lexical.rougeL", "--human", "store:coh", "--store", str(store),
                   "--bootstrap", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["human"] == "store:coh"
