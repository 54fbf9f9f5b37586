"""People's labels in the store (schema version 5): the upgrade of a real version 4 store, the
Python API's checks (`judgebench.engine.labels`), append-only history, samples, and several
annotators' processes writing one store at once, one of them killed mid-save."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from conftest import REPO

from judgebench.engine import labels as L
from judgebench.engine.store import SCHEMA_VERSION, Store
from judgebench.errors import InputError, JudgebenchError

V4_FIXTURE = Path(__file__).parent / "data" / "stores" / "main-9680664.db"
WRITER = Path(__file__).parent / "label_writer.py"


def _dump(path: Path, table: str) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()


@pytest.fixture
def v4_store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    shutil.copyfile(V4_FIXTURE, path)
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "labels.db"
    L.define_criterion(path, "quality", kind="scale", low=1, high=5, description="How good?")
    return path


# -- schema ---------------------------------------------------------------------------------
def test_a_version_4_store_is_upgraded_in_place_and_keeps_every_row(v4_store: Path) -> None:
    conn = sqlite3.connect(v4_store)
    assert conn.execute("PRAGMA user_version").fetchone() == (4,)
    conn.close()
    before = {t: _dump(v4_store, t) for t in ("runs", "scores", "corpus_scores")}
    assert len(before["scores"]) == 16 and len(before["corpus_scores"]) == 8
    with Store(v4_store) as opened:
        assert opened.kind == "v4"
    assert {t: _dump(v4_store, t) for t in before} == before
    conn = sqlite3.connect(v4_store)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"criteria", "labels", "samples", "sample_items"} <= tables
    conn.close()
    with Store(v4_store) as opened:  # opened again: current, nothing to do
        assert opened.kind == "current"
    L.define_criterion(v4_store, "quality", kind="binary")
    L.save_label(v4_store, criterion="quality", annotator="ann", item="x", system="s", value=1)
    assert [lab.value for lab in L.current_labels(v4_store)] == [1.0]


def test_a_version_4_store_read_only_is_read_as_it_is_with_no_labels(v4_store: Path) -> None:
    before = v4_store.read_bytes()
    with Store(v4_store, readonly=True, untouched=True) as opened:
        assert opened.kind == "v4"
        assert L.current_labels(opened) == [] and L.criteria(opened) == []
        with pytest.raises(InputError, match=r"no criterion 'quality'.*none"):
            L.get_criterion(opened, "quality")
        with pytest.raises(InputError, match="read-only"):
            L.save_label(opened, criterion="quality", annotator="a", item="x", system="s",
                         value=1)
    from judgebench.services.runs import logs, runs

    # the viewer's reads (readonly: never migrate) take a version 4 store as it is
    assert len(runs(v4_store, readonly=True).to_dict()) == 1
    assert len(logs(v4_store, readonly=True).to_dict()) == 16 + 8  # segment and corpus
    assert v4_store.read_bytes() == before


def test_a_failed_upgrade_leaves_the_version_4_store_as_it_was(
        v4_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import judgebench.engine.store as store_module

    before = v4_store.read_bytes()
    monkeypatch.setattr(store_module, "MIGRATION_V5",
                        (*store_module.MIGRATION_V5, "INSERT INTO no_such_table VALUES (1)"))
    with pytest.raises(JudgebenchError, match="no_such_table"):
        Store(v4_store)
    assert v4_store.read_bytes() == before


def test_a_store_missing_one_label_table_is_refused_as_damaged(store: Path) -> None:
    conn = sqlite3.connect(store)
    conn.execute("DROP TABLE sample_items")
    conn.commit()
    conn.close()
    with pytest.raises(InputError, match="damaged judgebench store"):
        Store(store)


# -- criteria -------------------------------------------------------------------------------
def test_each_kind_of_criterion_is_stored_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    made = [L.define_criterion(path, "likert", kind="scale", low=1, high=5),
            L.define_criterion(path, "half", kind="scale", low=0, high=2, step=0.5),
            L.define_criterion(path, "cont", kind="scale", low=-1, high=1, step=None),
            L.define_criterion(path, "ok", kind="binary", show_reference=True),
            L.define_criterion(path, "tone", kind="choices", choices=["calm", "rude", "odd"]),
            L.define_criterion(path, "pref", kind="pairwise", description="Which is better?")]
    assert L.criteria(path) == sorted(made, key=lambda c: c.name)
    assert [c.describe() for c in made] == [
        "scale 1-5 (steps of 1)", "scale 0-2 (steps of 0.5)", "scale -1-1 (any value)",
        "binary", "choices calm,rude,odd", "pairwise"]
    assert made[1].values() == [0.0, 0.5, 1.0, 1.5, 2.0] and made[2].values() is None
    assert [c.level for c in made] == ["interval"] * 3 + ["nominal"] * 3
    assert L.get_criterion(path, "ok").show_reference is True


def test_a_criterion_defined_again_must_mean_the_same(store: Path) -> None:
    first = L.get_criterion(store, "quality")
    assert L.define_criterion(store, "quality", kind="scale", low=1, high=5) == first
    assert L.define_criterion(store, "quality") == first  # no kind: the stored one
    for change, what in [({"kind": "binary"}, "kind"),
                         ({"kind": "scale", "low": 1, "high": 7}, "scale"),
                         ({"kind": "scale", "low": 1, "high": 5, "step": None}, "scale"),
                         ({"kind": "scale", "low": 1, "high": 5, "description": "other"},
                          "description")]:
        with pytest.raises(InputError) as caught:
            L.define_criterion(store, "quality", **change)  # type: ignore[arg-type]
        assert caught.value.field == what and str(store) in str(caught.value)
    with pytest.raises(InputError, match=r"no criterion 'other'.*give its kind"):
        L.define_criterion(store, "other")


@pytest.mark.parametrize(("options", "field"), [
    ({"kind": "stars"}, "kind"), ({"kind": "scale", "low": 5, "high": 1}, "scale"),
    ({"kind": "scale", "low": 1}, "scale"), ({"kind": "scale", "low": 1, "high": 5,
                                              "step": 3}, "step"),
    ({"kind": "scale", "low": 1, "high": float("inf")}, "high"),
    ({"kind": "choices", "choices": ["a"]}, "choices"),
    ({"kind": "choices", "choices": ["a", "a"]}, "choices"),
    ({"kind": "binary", "choices": ["a", "b"]}, "choices"),
    ({"kind": "binary", "low": 0, "high": 1}, "scale")])
def test_a_bad_definition_names_its_field(tmp_path: Path, options: dict, field: str) -> None:
    with pytest.raises(InputError) as caught:
        L.define_criterion(tmp_path / "s.db", "c", **options)
    assert caught.value.field == field


@pytest.mark.parametrize("name", ["", " padded", "a.b", "tab\there", None])
def test_a_bad_criterion_name_is_refused(tmp_path: Path, name: object) -> None:
    with pytest.raises(InputError) as caught:
        L.define_criterion(tmp_path / "s.db", name, kind="binary")  # type: ignore[arg-type]
    assert caught.value.field == "criterion"


# -- values ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("kind", "options", "good", "bad"), [
    ("scale", {"low": 1, "high": 5}, [(1, 1.0), ("4", 4.0), (5.0, 5.0)],
     [0, 6, 2.5, "x", float("inf"), float("nan"), None, ""]),
    ("scale", {"low": 0, "high": 1, "step": None}, [(0.37, 0.37), (1e-300, 1e-300)],
     [-1e-9, 1.0000001]),
    ("binary", {}, [(0, 0.0), (True, 1.0), ("yes", 1.0), ("FAIL", 0.0), (1.0, 1.0)],
     [2, 0.5, "maybe"]),
    ("choices", {"choices": ["good", "bad"]}, [("good", 0.0), (" bad ", 1.0)],
     ["Good", 0, "ugly"]),
    ("pairwise", {}, [("a", 1.0), ("B", 0.0), ("tie", 0.5), (0.5, 0.5)], [0.7, "left"]),
])
def test_values_are_checked_against_the_criterion(
        tmp_path: Path, kind: str, options: dict, good: list, bad: list) -> None:
    path = tmp_path / "s.db"
    crit = L.define_criterion(path, "c", kind=kind, **options)
    system = ("x", "y") if kind == "pairwise" else "x"
    for answer, stored in good:
        label = L.save_label(path, criterion="c", annotator="a", item="i", system=system,
                             value=answer)
        assert label.value == stored and crit.answer_of(stored) is not None
    for answer in bad:
        with pytest.raises(InputError) as caught:
            L.save_label(path, criterion="c", annotator="a", item="i", system=system,
                         value=answer)
        assert caught.value.field == "value", answer
    assert len(L.label_history(path)) == len(good)  # nothing written by a refused label


def test_statuses_are_never_values_and_keys_must_fit_the_criterion(store: Path) -> None:
    def refused(field: str, **given: object) -> None:
        args: dict = {"criterion": "quality", "annotator": "a", "item": "i", "system": "s",
                      "value": 3, **given}
        with pytest.raises(InputError) as caught:
            L.save_label(store, **args)
        assert caught.value.field == field, given

    refused("value", status="cant_tell")
    refused("value", status="skipped", value=0)
    refused("status", status="maybe")
    refused("value", value=None)
    refused("system", system=("s", "t"))
    refused("system", system="")
    refused("item", item="")
    refused("annotator", annotator=" a")
    refused("criterion", criterion="nope")
    refused("shown_left", shown_left="s")
    refused("inclusion_probability", inclusion_probability=0)
    refused("inclusion_probability", inclusion_probability=1.5)
    refused("sample_id", sample_id=99)
    assert L.label_history(store) == []
    skipped = L.save_label(store, criterion="quality", annotator="a", item="i", system="s",
                           status="skipped")
    assert (skipped.value, skipped.status) == (None, "skipped")
    L.define_criterion(store, "pref", kind="pairwise")
    pairs: list[Any] = [("s", "s"), ("s",), "s", ("s", "")]
    for system in pairs:
        with pytest.raises(InputError) as caught:
            L.save_label(store, criterion="pref", annotator="a", item="i", system=system,
                         value="a")
        assert caught.value.field == "system"
    with pytest.raises(InputError, match="shown_left 'z'"):
        L.save_label(store, criterion="pref", annotator="a", item="i", system=("s", "t"),
                     value="a", shown_left="z")
    pair = L.save_label(store, criterion="pref", annotator="a", item="i",
                        system=cast(Any, ["s", "t"]), value="b", shown_left="t",
                        critique="t is shorter")
    assert (pair.system, pair.value, pair.shown_left) == (("s", "t"), 0.0, "t")
    assert L.current_labels(store, criterion="pref") == [pair]


def test_a_batch_with_one_bad_label_writes_none_and_names_its_row(store: Path) -> None:
    batch = [L.NewLabel("quality", "a", f"i{n}", "s", 3) for n in range(5)]
    batch[3] = L.NewLabel("quality", "a", "i3", "s", 9)
    with pytest.raises(InputError) as caught:
        L.save_labels(store, batch)
    assert (caught.value.row, caught.value.field) == (4, "value")
    assert L.label_history(store) == []
    assert len(L.save_labels(store, batch[:3])) == 3


# -- history --------------------------------------------------------------------------------
def test_a_later_answer_supersedes_and_the_history_keeps_every_row(store: Path) -> None:
    def save(annotator: str, item: str, value: object = None, status: str = "answered"
             ) -> L.Label:
        return L.save_label(store, criterion="quality", annotator=annotator, item=item,
                            system="s", value=value, status=status)

    first = save("ann", "x", 2)
    second = save("ann", "x", 4)
    bob = save("bob", "x", 1)
    other = save("ann", "y", status="cant_tell")
    assert second.id > first.id and first.created <= second.created
    assert L.current_labels(store) == [second, bob, other]
    assert L.current_labels(store, annotator="ann", statuses=["answered"]) == [second]
    assert L.label_history(store, annotator="ann", item="x") == [first, second]
    assert L.labelled_items(store, criterion="quality", annotator="ann") == {("x", "s"),
                                                                             ("y", "s")}
    assert L.labelled_items(store, criterion="quality", annotator="ann",
                            statuses=["answered"]) == {("x", "s")}

    undo = L.withdraw_label(store, criterion="quality", annotator="ann", item="x", system="s")
    assert undo.status == L.WITHDRAWN
    assert L.current_labels(store) == [bob, other]
    with pytest.raises(InputError, match="no current label"):
        L.withdraw_label(store, criterion="quality", annotator="ann", item="x", system="s")
    again = save("ann", "x", 5)
    assert L.current_labels(store, annotator="ann") == [other, again]
    assert [r.value for r in L.label_history(store, annotator="ann", item="x")] \
        == [2.0, 4.0, None, 5.0]
    conn = sqlite3.connect(store)
    with pytest.raises(sqlite3.IntegrityError):  # the schema refuses a value on a status
        conn.execute("INSERT INTO labels (criterion, annotator, item, system, value, status,"
                     " created) VALUES ('quality', 'a', 'i', 's', 3, 'skipped', 'now')")
    conn.close()


# -- samples --------------------------------------------------------------------------------
def test_a_sample_is_stored_with_its_probabilities_and_labels_take_them(store: Path) -> None:
    drawn: list[Any] = [L.SampledItem("i1", "s", 0.25), ("i2", "t", 1.0), ("i3", "s", 0.125)]
    sample = L.record_sample(store, criterion="quality", strategy="stratified", seed=7,
                             items=drawn, parameters={"bins": 4, "by": ["system"]},
                             annotator="ann", source="scores.csv")
    assert L.get_sample(store, sample.id) == sample
    assert [s.item for s in sample.items] == ["i1", "i2", "i3"]
    assert sample.probabilities() == {("i1", "s"): 0.25, ("i2", "t"): 1.0, ("i3", "s"): 0.125}
    assert sample.parameters == {"bins": 4, "by": ["system"]}
    assert L.samples(store, criterion="quality") == [sample] and L.samples(store,
                                                                           criterion="x") == []
    label = L.save_label(store, criterion="quality", annotator="ann", item="i3", system="s",
                         value=2, sample_id=sample.id)
    assert (label.sample_id, label.inclusion_probability) == (sample.id, 0.125)
    with pytest.raises(InputError, match="not in sample") as caught:
        L.save_label(store, criterion="quality", annotator="ann", item="i3", system="t",
                     value=2, sample_id=sample.id)
    assert caught.value.field == "sample_id"
    with pytest.raises(InputError, match="differs"):
        L.save_label(store, criterion="quality", annotator="ann", item="i1", system="s",
                     value=2, sample_id=sample.id, inclusion_probability=0.5)
    L.define_criterion(store, "ok", kind="binary")
    with pytest.raises(InputError, match="drawn for criterion 'quality'"):
        L.save_label(store, criterion="ok", annotator="ann", item="i1", system="s", value=1,
                     sample_id=sample.id)


@pytest.mark.parametrize(("items", "row", "field"), [
    ([("i1", "s", 0.5), ("i1", "s", 0.5)], 2, "item"),
    ([("i1", "s", 0.5), ("i2", "s", 0.0)], 2, "inclusion_probability"),
    ([("i1", "s", float("nan"))], 1, "inclusion_probability"),
    ([("i1", ("s", "t"), 0.5)], 1, "system")])
def test_a_bad_sample_names_its_position_and_writes_nothing(
        store: Path, items: list, row: int, field: str) -> None:
    with pytest.raises(InputError) as caught:
        L.record_sample(store, criterion="quality", strategy="random", seed=0, items=items)
    assert (caught.value.row, caught.value.field) == (row, field)
    assert L.samples(store) == []
    with pytest.raises(InputError, match="not plain JSON"):
        L.record_sample(store, criterion="quality", strategy="random", seed=0,
                        items=[("i1", "s", 0.5)], parameters={"x": float("nan")})


# -- several writers ------------------------------------------------------------------------
def _writer(store: Path, annotator: str, count: int, *extra: str) -> subprocess.Popen:
    env_path = f"{REPO}:{REPO / 'plugins'}"
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(store), annotator, str(count), *extra],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"})


def test_annotators_writing_at_once_lose_nothing_and_a_writer_killed_mid_save_loses_one(
        store: Path) -> None:
    count = 40
    writers = {name: _writer(store, name, count) for name in ("ann", "bob", "cy")}
    held = _writer(store, "dee", 5, "--hold")
    for proc in [*writers.values(), held]:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    assert held.stdout is not None
    lines = [held.stdout.readline().strip() for _ in range(6)]
    assert lines[-1] == "holding", (lines, held.stderr.read() if held.stderr else "")
    held.kill()  # inside its write transaction: the label of item `held` was not committed
    held.wait()
    acked: dict[str, list[int]] = {"dee": [int(x.split()[1]) for x in lines[:-1]]}
    for name, proc in writers.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        acked[name] = [int(line.split()[1]) for line in out.splitlines()]
    stored = L.label_history(store)
    by_annotator = {name: [lab.id for lab in stored if lab.annotator == name] for name in acked}
    for name, ids in acked.items():
        assert by_annotator[name] == sorted(ids) and len(ids) == (5 if name == "dee" else count)
    assert "held" not in {lab.item for lab in stored}
    assert len({lab.id for lab in stored}) == len(stored) == 3 * count + 5
    conn = sqlite3.connect(store)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()
    # the killed writer's lock went with it: the store takes the next label at once
    with Store(store, timeout=0) as again:
        L.save_label(again, criterion="quality", annotator="dee", item="held", system="s",
                     value=3)
    assert L.labelled_items(store, criterion="quality", annotator="dee") \
        == {*((f"i{i}", "s") for i in range(5)), ("held", "s")}
