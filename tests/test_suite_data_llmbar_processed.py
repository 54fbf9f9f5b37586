"""The suites built from LLMBar's processed sets (mt-bench, llmeval2): checksums, counts,
and each of LLMBar's published Acc./Agr. values recomputed from the stored verdicts by
LLMBar's rule (its evaluate.py, written anew here) and by `meta-eval --pairwise`'s service."""

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

NAMES = ("mt-bench", "llmeval2")
#: counted in LLMBar's dataset.json files: (pairs, label 1, label 2, distinct inputs)
COUNTS = {"mt-bench": (200, 101, 99, 75), "llmeval2": (200, 92, 108, 200)}
#: pairs with a failed (unparsed) verdict in some order, per stored evaluator
FAILED = {"mt-bench": {"palm2-vanilla": 8, "palm2-metrics-reference": 10},
          "llmeval2": {"gpt4-vanilla": 6, "gpt4-metrics-reference": 4,
                       "chatgpt-vanilla": 6, "chatgpt-metrics-reference": 5,
                       "llama2-vanilla": 5, "llama2-metrics-reference": 2,
                       "palm2-vanilla": 19, "palm2-metrics-reference": 10}}


@pytest.mark.parametrize("name", NAMES)
def test_every_file_has_its_checksum_and_a_reproducible_gzip_header(name):
    check_files(name, {"samples.jsonl.gz", "human.jsonl.gz"})


@pytest.mark.parametrize("name", NAMES)
def test_counts_and_keys_match_the_source(name, tmp_path):
    samples, human = suite_rows(name, "samples.jsonl.gz"), suite_rows(name, "human.jsonl.gz")
    pairs, ones, twos, inputs = COUNTS[name]
    assert len(samples) == len(human) == pairs
    assert Counter(r["human.preference"] for r in human) == {"a": ones, "b": twos}
    assert len({r["input"] for r in samples}) == inputs
    keys = [(r["item"], r["system_a"], r["system_b"]) for r in samples]
    assert keys == [(r["item"], r["system_a"], r["system_b"]) for r in human]
    assert len(set(keys)) == pairs
    plain = tmp_path / "samples.jsonl"
    plain.write_bytes(gzip.decompress((DATA / name / "samples.jsonl.gz").read_bytes()))
    read = read_samples(plain)
    assert all(s.input and s.output_a and s.output_b for s in read)
    info = suite_info(name)
    columns = {p["verdicts_column"] for p in info["published"]}
    assert len(columns) == 8 and len(info["published"]) == 16
    failed = {c: sum("failed" in (r[f"{c}.ab"], r[f"{c}.ba"]) for r in human) for c in columns}
    assert {c: n for c, n in failed.items() if n} == FAILED[name]
    values = {v for r in human for c in columns for v in (r[f"{c}.ab"], r[f"{c}.ba"])}
    assert values <= {"a", "b", "failed"}


def llmbar_statistics(frame: pd.DataFrame, column: str) -> dict[str, float]:
    """LLMBar's evaluate.py: per order, correct when the winner is the gold label (an
    unparsed winner never is); Acc. = the mean of the two orders' accuracies; Agr. = the
    share of pairs whose two winners are equal (two unparsed winners are equal)."""
    gold = frame["human.preference"].to_numpy()
    ab, ba = frame[f"{column}.ab"].to_numpy(), frame[f"{column}.ba"].to_numpy()
    n = len(frame)
    return {"accuracy": ((ab == gold).sum() + (ba == gold).sum()) / 2 / n,
            "consistency": (ab == ba).sum() / n}


@pytest.mark.parametrize("name", NAMES)
def test_each_published_value_is_llmbars_statistic_of_the_stored_verdicts(name):
    frame = pd.DataFrame(suite_rows(name, "human.jsonl.gz"))
    for entry in suite_info(name)["published"]:
        found = llmbar_statistics(frame, entry["verdicts_column"])[entry["statistic"]]
        assert entry["precision"] == 4
        # every value is k/400: four decimals are exact
        assert round(found, 4) == entry["value"] == pytest.approx(found, abs=1e-12)
    # the per-order accuracy is sklearn's accuracy with the unparsed winner a class of its own
    column = "palm2-vanilla" if name == "mt-bench" else "gpt4-vanilla"
    per_order = [accuracy_score(frame["human.preference"], frame[f"{column}.{o}"])
                 for o in ("ab", "ba")]
    assert np.mean(per_order) == pytest.approx(llmbar_statistics(frame, column)["accuracy"])


@pytest.mark.parametrize("name", NAMES)
def test_meta_eval_pairwise_reproduces_the_published_values(name):
    info = suite_info(name)
    frame = pd.DataFrame(suite_rows(name, "human.jsonl.gz"))
    judges = sorted({p["verdicts_column"] for p in info["published"]})
    result = pairwise_meta_eval(frame, humans=["human.preference"], judges=judges,
                                failed_as="wrong")
    found = {(r["metric"], r["statistic"]): r for r in result.to_dict()}
    for entry in info["published"]:
        row = found[(entry["verdicts_column"], entry["statistic"])]
        assert round(row["value"], 4) == entry["value"], entry
        expected = FAILED[name].get(entry["verdicts_column"], 0)
        assert row.get("failed", {}).get("rows", 0) == expected
