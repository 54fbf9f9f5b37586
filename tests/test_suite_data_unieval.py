"""The suites built from UniEval's meta-evaluation sets (topical-chat, sfhot, sfres,
qags-cnndm, qags-xsum): checksums, counts, the conversations' shape, and every published
correlation recomputed with scipy from the stored predictions, as reproduce/correlation.py
computes it, and with judgebench's kernels."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from typing import Any

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, spearmanr
from suites_support import check_files, suite_info, suite_rows

from judgebench.conversation import derived_fields
from judgebench.models import Sample
from meta_eval.statistics import get as get_statistic

#: rows, and items x systems, as counted in UniEval's files
COUNTS = {"topical-chat": (360, 60, 6), "sfhot": (875, 875, 1), "sfres": (1181, 1181, 1),
          "qags-cnndm": (235, 235, 1), "qags-xsum": (239, 239, 1)}
SCIPY: dict[str, Any] = {"pearson": pearsonr, "spearman": spearmanr, "kendall": kendalltau}


@pytest.mark.parametrize("name", COUNTS)
def test_every_file_has_its_checksum_and_a_reproducible_gzip_header(name):
    check_files(name, {"samples.jsonl.gz", "human.jsonl.gz"})


@pytest.mark.parametrize("name", COUNTS)
def test_counts_keys_and_fields(name):
    samples, human = suite_rows(name, "samples.jsonl.gz"), suite_rows(name, "human.jsonl.gz")
    n, items, systems = COUNTS[name]
    assert len(samples) == len(human) == n
    keys = [(r["item"], r["system"]) for r in samples]
    assert keys == [(r["item"], r["system"]) for r in human] and len(set(keys)) == n
    assert len({k for k, _ in keys}) == items and len({s for _, s in keys}) == systems
    info = suite_info(name)
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
    samples = suite_rows("topical-chat", "samples.jsonl.gz")
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
    human = suite_rows(name, "human.jsonl.gz")
    info = suite_info(name)
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
