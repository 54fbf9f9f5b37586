"""The JudgeBench suite folder: checksums, the paper's counts, and every published accuracy
recomputed from the stored verdicts (Tan et al. 2024, Table 3)."""

from __future__ import annotations

import gzip
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score
from suites_support import DATA, check_files, suite_info, suite_rows

from judgebench.services.pairwise import pairwise_meta_eval
from judgebench.tables.io import read_samples

FOLDER = DATA / "judgebench"
SUITE = suite_info("judgebench")
#: JudgeBench paper, Section 3 / Table 1: pairs per category of the GPT-4o set
PAPER_COUNTS = {"knowledge": 154, "reasoning": 98, "math": 56, "coding": 42}


SAMPLES = suite_rows("judgebench", "samples.jsonl.gz")
HUMAN = suite_rows("judgebench", "human.jsonl.gz")


def test_every_file_has_its_checksum_and_a_reproducible_gzip_header():
    check_files("judgebench", {"samples.jsonl.gz", "human.jsonl.gz"})


def test_counts_match_the_paper():
    assert len(SAMPLES) == len(HUMAN) == 350
    assert Counter(r["subset"] for r in SAMPLES) == PAPER_COUNTS
    assert set(SUITE["subsets"]) == set(PAPER_COUNTS)
    # the label split as the source file holds it (the paper gives no split; no ties)
    assert Counter(r["human.correct"] for r in HUMAN) == {"a": 193, "b": 157}


def test_samples_and_human_rows_are_the_same_pairs():
    keys = [(r["item"], r["system_a"], r["system_b"]) for r in SAMPLES]
    assert len(set(keys)) == 350
    assert keys == [(r["item"], r["system_a"], r["system_b"]) for r in HUMAN]
    assert all(s["subset"] == h["subset"] for s, h in zip(SAMPLES, HUMAN, strict=True))
    for r in SAMPLES:
        assert r["input"] and r["output_a"] and r["output_b"]
        assert r["output_a"] != r["output_b"]


def test_samples_are_pairwise_score_input(tmp_path):
    plain = tmp_path / "samples.jsonl"
    plain.write_bytes(gzip.decompress((FOLDER / "samples.jsonl.gz").read_bytes()))
    samples = read_samples(plain)
    assert [(s.item, s.system_a, s.system_b) for s in samples] == [
        (r["item"], r["system_a"], r["system_b"]) for r in SAMPLES]
    assert all(s.output_a and s.output_b and s.input for s in samples)
    assert Counter(s.metadata["subset"] for s in samples) == PAPER_COUNTS


def test_the_suite_names_what_it_holds():
    protocols = {p["name"]: p for p in SUITE["protocols"]}
    assert SUITE["kind"] == "pairwise" and SUITE["criteria"] == ["correct"]
    for p in protocols.values():
        assert p["human"] in HUMAN[0] and p["criterion"] in SUITE["criteria"]
    assert list(protocols) == ["accuracy"] and protocols["accuracy"]["by"] == "subset"
    assert protocols["accuracy"]["statistics"] == ["accuracy-vote"]
    assert len(SUITE["published"]) == 5 * 5
    for entry in SUITE["published"]:
        assert entry["protocol"] in protocols
        assert entry["verdicts_column"] in HUMAN[0]
        assert entry.get("subset") in (None, *PAPER_COUNTS)
    assert SUITE["source"]["commit"] == "e2c52c284e735e139b3daa61c206ee208f36c461"


def judgebench_correct(frame: pd.DataFrame, judge: str) -> np.ndarray:
    """run_judge.py's rule, written anew from the two order columns: each order scores +1
    when it names the label, -1 when it names the other side; a pair is right when the sum
    is positive (a tie, a failure and a split all count wrong)."""
    label = frame["human.correct"].to_numpy()
    other = np.where(label == "a", "b", "a")
    total = np.zeros(len(frame))
    for order in ("ab", "ba"):
        verdict = frame[f"orders.{judge}.{order}"].to_numpy()
        total += (verdict == label).astype(float) - (verdict == other).astype(float)
    return total > 0


@pytest.mark.parametrize("entry", SUITE["published"],
                         ids=lambda e: f"{e['verdicts_column']}-{e.get('subset', 'overall')}")
def test_each_published_accuracy_is_reproduced(entry):
    frame = pd.DataFrame(HUMAN)
    if "subset" in entry:
        frame = frame[frame["subset"] == entry["subset"]]
    judge = entry["verdicts_column"].removeprefix("verdict.")
    correct = judgebench_correct(frame, judge)
    # printed as percentages with two decimals, stored as fractions with four
    assert entry["precision"] == 4
    assert round(correct.mean(), 4) == entry["value"]
    # the stored combined verdict is that rule's verdict, so scoring it plainly agrees
    stored = frame[entry["verdicts_column"]].to_numpy()
    assert np.array_equal(stored == frame["human.correct"].to_numpy(), correct)
    assert accuracy_score(frame["human.correct"], stored) == pytest.approx(correct.mean(),
                                                                           abs=1e-15)


def test_meta_eval_pairwise_reproduces_the_published_table():
    published = {(e["verdicts_column"], e.get("subset")): e for e in SUITE["published"]}
    judges = sorted({column for column, _ in published})
    frame = pd.DataFrame(HUMAN)
    by_subset = pairwise_meta_eval(frame, humans=["human.correct"], judges=judges, by="subset",
                                   failed_as="wrong")
    overall = pairwise_meta_eval(frame, humans=["human.correct"], judges=judges,
                                 failed_as="wrong")
    found = {}
    for row in [*by_subset.to_dict(), *overall.to_dict()]:
        if row["statistic"] == "accuracy-vote" and row.get("category") != "(macro)":
            found[(row["metric"], row.get("category"))] = row["value"]
    for key, entry in published.items():
        assert round(found[key], entry["precision"]) == entry["value"], key


def test_accuracy_vote_of_the_two_orders_is_judgebench_s_rule():
    """The orders' vote that meta-eval computes for a judge run in both orders equals the
    published accuracy, recomputed from the orders alone (the stored combined verdict not
    read): a user's judge.pairwise on the suite is scored as the paper scored its judges."""
    published = {(e["verdicts_column"].removeprefix("verdict."), e.get("subset")): e
                 for e in SUITE["published"]}
    judges = sorted({f"orders.{judge}" for judge, _ in published})
    frame = pd.DataFrame(HUMAN).drop(columns=[c for c in HUMAN[0] if c.startswith("verdict.")])
    result = pairwise_meta_eval(frame, humans=["human.correct"], judges=judges, by="subset",
                                failed_as="wrong")
    found = {(row["metric"].removeprefix("orders."), row.get("category")): row["value"]
             for row in result.to_dict() if row["statistic"] == "accuracy-vote"}
    for (judge, subset), entry in published.items():
        if subset is not None:
            assert round(found[(judge, subset)], 4) == entry["value"], (judge, subset)
