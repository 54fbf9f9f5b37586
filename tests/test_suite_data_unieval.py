"""The suites built from UniEval's meta-evaluation sets (topical-chat, sfhot, sfres,
qags-cnndm, qags-xsum): checksums, counts, the conversations' shape, and every published
correlation recomputed with scipy from the stored predictions, as reproduce/correlation.py
computes it, and with judgebench's kernels."""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr

from judgebench.conversation import derived_fields
from judgebench.models import Sample
from meta_eval.statistics import get as get_statistic

DATA = (Path(__file__).resolve().parents[1] / "plugins" / "judgebench_suites"
        / "judgebench_suites" / "data")
#: rows, and items x systems, as counted in UniEval's files
COUNTS = {"topical-chat": (360, 60, 6), "sfhot": (875, 875, 1), "sfres": (1181, 1181, 1),
          "qags-cnndm": (235, 235, 1), "qags-xsum": (239, 239, 1)}
SCIPY: dict[str, Any] = {"pearson": pearsonr, "spearman": spearmanr, "kendall": kendalltau}


def rows(name: str, file: str) -> list[dict]:
    with gzip.open(DATA / name / file, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def suite(name: str) -> dict:
    return json.loads((DATA / name / "suite.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", COUNTS)
def test_every_file_has_its_checksum_and_a_reproducible_gzip_header(name):
    info = suite(name)
    stored = {p.name for p in (DATA / name).iterdir()} - {"suite.json", "SOURCE.md", "build.py"}
    assert set(info["files"]) == stored == {"samples.jsonl.gz", "human.jsonl.gz"}
    for file, digest in info["files"].items():
        data = (DATA / name / file).read_bytes()
        assert digest == "sha256:" + hashlib.sha256(data).hexdigest(), file
        assert data[4:8] == b"\0\0\0\0", f"{file}: gzip mtime is not 0"


@pytest.mark.parametrize("name", COUNTS)
def test_counts_keys_and_fields(name):
    samples, human = rows(name, "samples.jsonl.gz"), rows(name, "human.jsonl.gz")
    n, items, systems = COUNTS[name]
    assert len(samples) == len(human) == n
    keys = [(r["item"], r["system"]) for r in samples]
    assert keys == [(r["item"], r["system"]) for r in human] and len(set(keys)) == n
    assert len({k for k, _ in keys}) == items and len({s for _, s in keys}) == systems
    info = suite(name)
    for criterion in info["criteria"]:
        values = [r[f"human.{criterion}"] for r in human]
        assert all(isinstance(v, float) and np.isfinite(v) for v in values)
        assert all(isinstance(r[f"unieval.{criterion}"], float) for r in human)
    for sample in samples:
        Sample.model_validate(sample)
        if name.startswith("qags"):
            assert set(sample) == {"item", "system", "source", "output"}
        elif name.startswith("sf"):
            assert sample["reference"] and sample["source"] and sample["output"]


def test_topical_chat_samples_are_conversations_judged_at_their_last_turn():
    samples = rows("topical-chat", "samples.jsonl.gz")
    assert Counter(Counter(r["item"] for r in samples).values()) == {6: 60}
    for row in samples:
        sample = Sample.model_validate(row)
        messages = sample.messages or []
        assert sample.turn == len(messages) - 1 and messages[-1].role == "assistant"
        roles = [m.role for m in messages]
        assert all(a != b for a, b in itertools.pairwise(roles))  # alternating
        assert all(m.content and m.content == m.content.strip() for m in messages)
        derived = derived_fields(sample)
        assert derived["output"] == messages[-1].content
        assert derived["input"] == messages[-2].content
        assert row["context"]
    # the six responses to one context share every message before the judged one
    by_item: dict[str, set[str]] = {}
    for row in samples:
        by_item.setdefault(row["item"], set()).add(json.dumps(row["messages"][:-1]))
    assert all(len(v) == 1 for v in by_item.values())


@pytest.mark.parametrize("name", COUNTS)
def test_each_published_correlation_is_reproduced_by_scipy_and_judgebench(name):
    human = rows(name, "human.jsonl.gz")
    info = suite(name)
    protocols = {p["name"]: p for p in info["protocols"]}
    assert len(info["published"]) == 3 * len(info["criteria"])
    for entry in info["published"]:
        protocol = protocols[entry["protocol"]]
        assert protocol["level"] == "global" and protocol["grouping"] is None
        people = np.array([r[protocol["human"]] for r in human])
        predicted = np.array([r[entry["verdicts_column"]] for r in human])
        assert entry["verdicts_column"] == "unieval." + protocol["criterion"]
        # reproduce/correlation.py: scipy over every row, printed with round(x, 6)
        expected = SCIPY[entry["statistic"]](predicted, people)[0]
        assert entry["precision"] == 6 and round(expected, 6) == entry["value"]
        ours = get_statistic(entry["statistic"]).group_values(
            human=people[None, :], metric=predicted[None, :])[0]
        assert ours == pytest.approx(expected, abs=1e-12)
