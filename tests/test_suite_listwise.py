"""Listwise suites: suite.json's `listwise` kind (a `prompt` protocol, best-of-N accuracy)
validated with errors naming its field; the `summeval-best-of-4` suite rebuilt byte for byte
and checked against a direct reading of the vendored SummEval copy; `bench` with a listwise
judge (the scripted loopback judge) against `meta-eval listwise` on the same scored table."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import summeval_records
from suites_support import DATA, check_files, gz, suite_rows

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


# -- summeval-best-of-4 ---------------------------------------------------------------------
BEST_OF_4 = "summeval-best-of-4"


def test_the_build_is_byte_for_byte_and_the_files_are_listed(tmp_path: Path) -> None:
    check_files(BEST_OF_4, {"samples.jsonl.gz", "human.jsonl.gz"})
    spec = importlib.util.spec_from_file_location("best_of_4_build", DATA / BEST_OF_4 /
                                                  "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.main(None, str(tmp_path))
    for name in ("samples.jsonl.gz", "human.jsonl.gz", "suite.json"):
        assert (tmp_path / name).read_bytes() == (DATA / BEST_OF_4 / name).read_bytes(), name


def test_people_s_best_is_the_highest_mean_expert_rating_ties_kept() -> None:
    """Against the vendored SummEval rows read directly: 4 distinct systems of each of the
    100 documents, their texts as in the source, and best = the mean of the four criteria's
    mean ratings within 1e-9 of the document's highest (several when tied)."""
    source = {(r["item"], r["system"]): r for r in summeval_records()}
    samples = suite_rows(BEST_OF_4, "samples.jsonl.gz")
    human = suite_rows(BEST_OF_4, "human.jsonl.gz")
    assert [(r["item"], r["candidate"]) for r in samples] == \
        [(r["item"], r["candidate"]) for r in human]
    items = list(dict.fromkeys(r["item"] for r in samples))
    assert len(items) == 100 and len(samples) == 400
    tied = []
    for item in items:
        rows = [r for r in samples if r["item"] == item]
        marks = [r["human.best"] for r in human if r["item"] == item]
        assert len({r["candidate"] for r in rows}) == 4
        means = []
        for r in rows:
            original = source[(item, r["candidate"])]
            assert (r["input"], r["output"]) == (original["input"], original["output"])
            means.append(float(np.mean([original["human"][c] for c in
                                        ("coherence", "consistency", "fluency",
                                         "relevance")])))
        top = max(means)
        assert marks == [int(abs(m - top) < 1e-9) for m in means], item
        assert 1 <= sum(marks) < 4
        tied.append(sum(marks))
    assert {k: tied.count(k) for k in set(tied)} == {1: 83, 2: 14, 3: 3}  # as SOURCE.md says
    suite = load_suite(DATA / BEST_OF_4)
    assert suite.info.kind == "listwise" and suite.info.published == []
    assert "no published number" in suite.info.description
