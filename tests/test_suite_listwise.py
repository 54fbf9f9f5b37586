"""Listwise suites: suite.json's `listwise` kind (a `prompt` protocol, best-of-N accuracy)
validated with errors naming its field; the `summeval-best-of-4` suite rebuilt byte for byte
and checked against a direct reading of the vendored SummEval copy; `bench` with a listwise
judge (the scripted loopback judge) against `meta-eval listwise` on the same scored table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from suites_support import gz

from judgebench.errors import InputError
from judgebench.suite import load_suite, score_rows

CANDIDATES = [("p0", "a", 1), ("p0", "b", 0), ("p0", "c", 0),
              ("p1", "a", 1), ("p1", "b", 1), ("p1", "c", 0)]


def listwise_info(files: dict[str, str], **protocol: Any) -> dict[str, Any]:
    return {"name": "tiny-list", "title": "Tiny list", "description": "synthetic",
            "kind": "listwise", "criteria": ["overall"],
            "protocols": [{"name": "best-of-3", "criterion": "overall", "level": "prompt",
                           "statistics": ["accuracy"], "human": "human.best", **protocol}],
            "licence": "CC0-1.0", "citation": "-",
            "source": {"repository": "-", "commit": "-", "files": []}, "files": files}


def listwise_suite(root: Path, **protocol: Any) -> Path:
    """A listwise suite `root/tiny-list` (two prompts of three candidates, one tied best)."""
    import hashlib

    folder = root / "tiny-list"
    folder.mkdir(parents=True)
    samples = [{"item": i, "candidate": c, "input": f"question {i}", "output": f"{i}{c}",
                "subset": "s"} for i, c, _ in CANDIDATES]
    human = [{"item": i, "candidate": c, "human.best": b} for i, c, b in CANDIDATES]
    files = {}
    for name, rows in (("samples.jsonl.gz", samples), ("human.jsonl.gz", human)):
        data = gz(rows)
        (folder / name).write_bytes(data)
        files[name] = "sha256:" + hashlib.sha256(data).hexdigest()
    (folder / "suite.json").write_text(json.dumps(listwise_info(files, **protocol)),
                                       encoding="utf-8")
    return folder


def rewrite(folder: Path, change: Any) -> None:
    path = folder / "suite.json"
    info = json.loads(path.read_text(encoding="utf-8"))
    change(info)
    path.write_text(json.dumps(info), encoding="utf-8")


def test_a_listwise_suite_loads_keyed_by_item_and_candidate(tmp_path: Path) -> None:
    suite = load_suite(listwise_suite(tmp_path))
    assert suite.info.kind == "listwise" and suite.key == ("item", "candidate")
    rows = score_rows(suite)
    # the subset stays a column (the listwise reader's), the best marks join on the key
    assert rows[4] == {"item": "p1", "candidate": "b", "input": "question p1",
                       "output": "p1b", "subset": "s", "human": {"best": 1.0}}


@pytest.mark.parametrize(("change", "field", "message"), [
    (lambda i: i["protocols"][0].update(level="item"), "protocols",
     "level 'item' does not fit a listwise suite"),
    (lambda i: i["protocols"][0].update(statistics=["accuracy", "kendall"]), "protocols",
     r"statistics are \['accuracy'\] \(best-of-N accuracy\), not \['kendall'\]"),
    (lambda i: i["protocols"][0].update(grouping="item"), "protocols",
     "takes no grouping"),
    (lambda i: i["protocols"][0].update(ties="drop"), "protocols", "takes no ties"),
    (lambda i: i["protocols"][0].update(failed_as="0"), "protocols", "takes no failed_as"),
    (lambda i: i["protocols"][0].update(level="pair"), "protocols",
     "level 'pair' does not fit a listwise suite"),
    (lambda i: i.update(kind="pointwise"), "protocols",
     "level 'prompt' does not fit a pointwise suite"),
    (lambda i: i.update(kind="ranked"), "kind", "'pointwise', 'pairwise' or 'listwise'"),
    (lambda i: i.update(published=[{"metric": "x", "protocol": "best-of-3",
                                    "statistic": "accuracy", "value": 0.5, "precision": 2,
                                    "table": "t", "verdicts_column": "x.pick"}]),
     "published[0].verdicts_column", "stores no baseline's picks"),
])
def test_a_bad_listwise_protocol_is_refused_naming_the_field(
        tmp_path: Path, change: Any, field: str, message: str) -> None:
    folder = listwise_suite(tmp_path)
    rewrite(folder, change)
    with pytest.raises(InputError, match=message) as caught:
        load_suite(folder)
    assert caught.value.path == str(folder / "suite.json")
    assert caught.value.field == field
