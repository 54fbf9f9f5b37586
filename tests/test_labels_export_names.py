"""`labels export` writes a choice's name and a pair's a/b/tie (numeric scales and binary
answers stay numbers), and a round trip import -> export -> import gives the same labels, for
every kind of criterion and every table format; the people's column is the choice most gave,
a pair's answer where the annotators agree and P(A better) where they do not."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_cli

from judgebench.engine import labels as L

ANNOTATORS = ("ann", "bob", "cy")
KINDS: dict[str, tuple[list[str], list[object]]] = {
    "scale": (["--scale", "1-5", "--step", "0.5"], [1, 1.5, 3, 4.5, 5]),
    "binary": (["--binary"], ["pass", "fail", 1, 0]),
    "choices": (["--choices", "calm,rude,odd 1"], ["calm", "rude", "odd 1"]),
    "pairwise": (["--pairwise"], ["a", "b", "tie"]),
}


def labels_file(path: Path, kind: str, seed: int) -> Path:
    """Random labels of three annotators on 12 keys, some can't tell or skipped, some keys
    unlabelled by some annotators."""
    rng = random.Random(seed)
    answers = KINDS[kind][1]
    rows = []
    for item in range(12):
        key = ({"system_a": "x", "system_b": "y"} if item % 3 else
               {"system_a": "y", "system_b": "x"}) if kind == "pairwise" else {
            "system": f"s{item % 2}"}
        for annotator in ANNOTATORS:
            draw = rng.random()
            if draw < 0.15:
                continue
            row: dict[str, object] = {"item": f"i{item}", **key, "annotator": annotator}
            if draw < 0.25:
                row |= {"value": None, "status": rng.choice(["cant_tell", "skipped"])}
            else:
                row |= {"value": rng.choice(answers), "status": "answered"}
            rows.append(row)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    else:
        pd.DataFrame(rows).astype({"value": object}).to_csv(path, index=False)
    return path


def answered(store: Path, criterion: str) -> dict[tuple, float]:
    return {(lab.annotator, lab.item, lab.system): float(lab.value or 0.0)
            for lab in L.current_labels(store, criterion=criterion)
            if lab.status == "answered" and lab.value is not None}


def import_file(path: Path, store: Path, kind: str, *args: str) -> None:
    run_cli("labels", "import", str(path), "--store", str(store), "--criterion", "c",
            *KINDS[kind][0], *args, check=True)


def read(path: Path) -> pd.DataFrame:
    if path.suffix == ".csv":
        return pd.read_csv(path, dtype=object)
    if path.suffix == ".jsonl":
        return pd.read_json(path, lines=True, dtype=False)
    return pd.read_parquet(path)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_import_export_import_gives_the_same_labels(tmp_path: Path, kind: str,
                                                    fmt: str) -> None:
    first = tmp_path / "first.db"
    import_file(labels_file(tmp_path / "labels.csv", kind, seed=len(kind) + len(fmt)),
                first, kind)
    before = answered(first, "c")
    exported = tmp_path / f"human.{fmt}"
    run_cli("labels", "export", "--store", str(first), "-o", str(exported), check=True)
    table = read(exported)
    crit = L.get_criterion(first, "c")
    for annotator in ANNOTATORS:
        cells = [v for v in table[f"human.c.{annotator}"] if v is not None and v == v]
        if kind in ("choices", "pairwise"):  # the answer's name, never its stored number
            names = set(crit.choices) if kind == "choices" else {"a", "b", "tie"}
            assert cells and all(v in names for v in cells), cells
        else:
            assert cells and all(not isinstance(v, str) or float(v) == float(v) for v in cells)
            assert all(float(v) in set(crit.values() or []) for v in cells)
    again = tmp_path / "again.db"
    for annotator in ANNOTATORS:
        import_file(exported, again, kind, "--column", f"human.c.{annotator}", "--annotator",
                    annotator)
    assert answered(again, "c") == before


def test_the_peoples_column_is_a_name_where_they_agree(tmp_path: Path) -> None:
    rows = [{"item": "i1", "system_a": "x", "system_b": "y", "annotator": "ann", "value": "a"},
            {"item": "i1", "system_a": "x", "system_b": "y", "annotator": "bob", "value": "a"},
            {"item": "i2", "system_a": "x", "system_b": "y", "annotator": "ann", "value": "a"},
            {"item": "i2", "system_a": "x", "system_b": "y", "annotator": "bob",
             "value": "tie"},
            {"item": "i3", "system_a": "x", "system_b": "y", "annotator": "ann", "value": "a"},
            {"item": "i3", "system_a": "x", "system_b": "y", "annotator": "bob", "value": "b"}]
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    store = tmp_path / "s.db"
    import_file(path, store, "pairwise")
    out = tmp_path / "human.csv"
    run_cli("labels", "export", "--store", str(store), "-o", str(out), check=True)
    table = pd.read_csv(out, dtype=str)
    assert table["human.c"].tolist() == ["a", "0.75", "0.5"]  # agreed; P(A better) means
    from meta_eval.pairwise import preferences

    assert preferences(table["human.c"]).tolist() == [1.0, 0.75, 0.5]
    rows = [{"item": "i1", "system": "s", "annotator": a, "value": v}
            for a, v in (("ann", "rude"), ("bob", "rude"), ("cy", "calm"))] + [
        {"item": "i2", "system": "s", "annotator": a, "value": v}
        for a, v in (("ann", "rude"), ("bob", "calm"))]
    pd.DataFrame(rows).to_csv(path, index=False)
    import_file(path, store.with_name("t.db"), "choices")
    run_cli("labels", "export", "--store", str(store.with_name("t.db")), "-o", str(out),
            check=True)
    table = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert table["human.c"].tolist() == ["rude", ""]  # the choice most gave; a tie: none
    assert math.isnan(L.consensus(L.get_criterion(store.with_name("t.db"), "c"), [0.0, 1.0]))
