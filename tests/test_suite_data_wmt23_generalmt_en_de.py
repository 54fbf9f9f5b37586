"""The WMT23 generalMT en-de side-by-side MQM suite (three raters per segment): checksums,
counts, every rater's own column, the per-segment MQM that Marot stored in the source file
reproduced from those columns, each rater's spans (their weights sum to the rater's score,
they point into the stored texts, `meta-eval spans` reads them per rater), and bench's
human ceiling recomputed with scipy from the raters (each rater against the mean of the
other raters of the same translations)."""

from __future__ import annotations

import gzip
import json
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from scipy import stats
from suites_support import DATA, check_files, plugin_args, plugin_env, suite_info, suite_rows

from judgebench.tables.io import read_samples

NAME = "wmt23-generalmt-en-de"
SUITE = suite_info(NAME)
SAMPLES = suite_rows(NAME, "samples.jsonl.gz")
HUMAN = pd.DataFrame(suite_rows(NAME, "human.jsonl.gz"))
SPANS = suite_rows(NAME, "spans.jsonl.gz")
RATERS = [f"rater{k}" for k in range(1, 11)]
COLUMNS = [f"human.mqm.{r}" for r in RATERS]
GPT4 = ["GPT4-5shot_with_ONLINE-W", "GPT4-5shot_with_refA"]


def test_every_file_has_its_checksum_and_a_reproducible_gzip_header() -> None:
    check_files(NAME, {"samples.jsonl.gz", "human.jsonl.gz", "spans.jsonl.gz"})


def test_counts_match_the_source() -> None:
    # counted in the source file: 104 segments, 10 raters, 10 rated translations per segment
    # (refA, the reference, is not scored), each by three raters
    systems = set(HUMAN["system"])
    assert len(systems) == 9 and {s.split("_with_")[0] for s in systems} == {
        "GPT4-5shot", "Lan-BridgeMT", "NLLB_MBR_BLEU", "ONLINE-A", "ONLINE-G", "ONLINE-M",
        "ONLINE-W", "ONLINE-Y"}
    assert HUMAN["item"].nunique() == 104 and len(HUMAN) == len(SAMPLES) == 9 * 104
    assert Counter(HUMAN["system"]) == dict.fromkeys(systems, 104)
    assert [c for c in HUMAN.columns if c.startswith("human.mqm.")] == sorted(COLUMNS)
    rated = HUMAN[COLUMNS].notna()
    assert (rated.sum(axis=1) == 3).all()  # "3ratingsPerSegment"
    # side by side: the same three raters rated every translation of a segment
    raters_of: dict[str, set[tuple[bool, ...]]] = {}
    for item, row in zip(HUMAN["item"], rated.itertuples(index=False), strict=True):
        raters_of.setdefault(str(item), set()).add(tuple(row))
    assert all(len(patterns) == 1 for patterns in raters_of.values())
    assert rated.any().all()  # every rater rated some segment


def test_human_mqm_is_the_mean_of_the_raters_columns() -> None:
    ratings = HUMAN[COLUMNS].to_numpy(float)
    assert np.nanmax(ratings) <= 0 and np.isclose(ratings * 10, np.round(ratings * 10),
                                                  equal_nan=True).all()
    np.testing.assert_allclose(HUMAN["human.mqm"], np.nanmean(ratings, axis=1), rtol=0,
                               atol=1e-12)


def test_marots_stored_per_segment_mqm_is_reproduced() -> None:
    """The source file's `metadata` column stores Marot's per-segment MQM (the mean over the
    three raters of each rater's penalty); for GPT4-5shot, rated twice, Marot counts both
    ratings as one system, GPT4-5shot: each rater's two penalties summed."""
    penalties: dict[tuple[str, str], list[float]] = {}
    for row in HUMAN.to_dict("records"):
        penalties[(row["item"], row["system"])] = [-row[c] for c in COLUMNS
                                                   if not pd.isna(row[c])]
    stored = HUMAN.dropna(subset=["marot_mqm"]).to_dict("records")
    assert len(stored) == 860  # the rows whose source rows carry a Marot score
    for row in stored:
        key = (row["item"], row["system"])
        if row["system"] in GPT4:
            expected = sum(sum(penalties[(row["item"], s)]) for s in GPT4) / 3
        else:
            expected = sum(penalties[key]) / len(penalties[key])
        assert row["marot_mqm"] == pytest.approx(expected, rel=1e-12, abs=1e-12), key


def test_samples_are_score_input_and_match_the_human_rows(tmp_path: Path) -> None:
    plain = tmp_path / "samples.jsonl"
    plain.write_bytes(gzip.decompress((DATA / NAME / "samples.jsonl.gz").read_bytes()))
    samples = read_samples(plain)
    assert [(s.item, s.system) for s in samples] == list(zip(HUMAN["item"], HUMAN["system"],
                                                             strict=True))
    assert all(s.source and s.output and s.reference for s in samples)
    outputs = {(s.item, s.system): s.output for s in samples}
    assert all(outputs[(i, GPT4[0])] == outputs[(i, GPT4[1])] for i in set(HUMAN["item"]))


def marot_weight(category: str, severity: str) -> float:
    """Marot's default weights, written apart from build.py."""
    if category in ("Source issue", "Accuracy/Creative Reinterpretation"):
        return 0.0
    if category.startswith("Non-translation"):
        return 25.0
    if severity == "Major":
        return 5.0
    return 0.1 if category == "Fluency/Punctuation" else 1.0


def test_each_raters_span_weights_sum_to_minus_their_score() -> None:
    assert len(SPANS) == 9977  # counted in the source: errors, attention checks left out
    assert Counter(s["side"] for s in SPANS) == {"target": 9245, "source": 732}
    assert all(s["weight"] == marot_weight(s["category"], s["severity"]) for s in SPANS)
    total: Counter[tuple[str, str, str]] = Counter()
    for s in SPANS:
        total[(s["item"], s["system"], s["rater"])] += s["weight"]
    for row in HUMAN.to_dict("records"):
        for rater in RATERS:
            if not pd.isna(row[f"human.mqm.{rater}"]):
                assert row[f"human.mqm.{rater}"] == pytest.approx(
                    -total[(row["item"], row["system"], rater)], abs=1e-9)
    assert {s["system"] for s in SPANS} == set(HUMAN["system"]) | {"refA"}


def test_spans_point_into_the_stored_texts() -> None:
    texts = {(r["item"], r["system"]): r["output"] for r in SAMPLES}
    references = {r["item"]: r["reference"] for r in SAMPLES}
    sources = {r["item"]: r["source"] for r in SAMPLES}
    for s in SPANS:
        if s["side"] == "source":
            text = sources[s["item"]]
        elif s["system"] == "refA":
            text = references[s["item"]]
        else:
            text = texts[(s["item"], s["system"])]
        assert 0 <= s["start"] <= s["end"] <= len(text)
        assert text[s["start"]:s["end"]] == s["span"]


def test_meta_eval_spans_reads_each_raters_spans_of_each_rated_translation() -> None:
    from judgebench.plugins import build_host
    from judgebench.services.spans import SEVERITIES, human_spans

    found = human_spans(NAME, host=build_host(plugin_args()[1:]))
    rated = {(row["item"], row["system"], rater) for row in HUMAN.to_dict("records")
             for rater in RATERS if not pd.isna(row[f"human.mqm.{rater}"])}
    assert set(found.rated) == rated and len(rated) == 9 * 104 * 3
    want: dict[tuple[str, str, str], list[tuple[int, int, int]]] = {k: [] for k in rated}
    for s in SPANS:
        key = (s["item"], s["system"], s["rater"])
        if key in rated and s["side"] == "target":
            want[key].append((s["start"], s["end"], SEVERITIES[s["severity"].lower()]))
    assert {k: sorted(v) for k, v in found.rated.items()} == {k: sorted(v)
                                                              for k, v in want.items()}
    assert sum(found.source_side.values()) == sum(
        1 for s in SPANS if s["side"] == "source" and s["system"] != "refA")


def scipy_ceiling(level: str) -> float:
    """Each rater against the mean of the other raters of the same rows, averaged over
    raters: scipy's Pearson on the rows (`segment`) or on the systems' means over the rows
    the rater rated (`system`); Kendall's tau-b per item, averaged over items (`item`)."""
    ratings = HUMAN[COLUMNS].to_numpy(float)
    values = []
    for k in range(len(COLUMNS)):
        mine = ratings[:, k]
        # the others' mean, rounded off its float noise (the ratings are tenths): a tie is
        # a tie, as judgebench's rank statistics read values within 1e-12
        others = np.nanmean(np.delete(ratings, k, axis=1), axis=1).round(9)
        frame = pd.DataFrame({"item": HUMAN["item"], "system": HUMAN["system"],
                              "mine": mine, "others": others}).dropna()
        if level == "segment":
            values.append(stats.pearsonr(frame["mine"], frame["others"])[0])
        elif level == "system":
            means = frame.groupby("system")[["mine", "others"]].mean()
            values.append(stats.pearsonr(means["mine"], means["others"])[0])
        else:
            taus = [stats.kendalltau(g["mine"], g["others"])[0]
                    for _, g in frame.groupby("item")]
            values.append(np.nanmean(taus))
    return float(np.mean(values))


def test_bench_shows_the_human_ceiling_of_the_real_raters(tmp_path: Path) -> None:
    proc = run_cli(*plugin_args(), "bench", "lexical.chrf", "--suite", NAME, "--json",
                   "--bootstrap", "0", "--store", str(tmp_path / "runs.db"), "--workers", "1",
                   env=plugin_env(), check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    ceiling = {r["protocol"]: r for r in card["rows"] if r["kind"] == "ceiling"}
    assert set(ceiling) == {p["name"] for p in SUITE["protocols"]}
    assert all(r["n"] == 10 for r in ceiling.values())  # averaged over the ten raters
    for protocol, level in (("system-pearson", "system"), ("segment-pearson", "segment"),
                            ("segment-kendall-by-item", "item")):
        assert ceiling[protocol]["value"] == pytest.approx(scipy_ceiling(level), abs=1e-12)
    assert "the human ceiling is" in card["verdict"][0]
    assert "n = 9 systems" in card["verdict"][0]
    text = run_cli(*plugin_args(), "suites", NAME, env=plugin_env(), check=True).stdout
    assert "annotators: mqm: 10" in text


def test_the_suite_names_what_it_holds() -> None:
    assert SUITE["name"] == NAME and SUITE["kind"] == "pointwise"
    assert SUITE["criteria"] == ["mqm"] and SUITE["annotators"] == {"mqm": RATERS}
    assert SUITE["published"] == [] and SUITE["licence"] == "Apache-2.0"
    assert SUITE["source"] == {
        "repository": "https://github.com/google/wmt-mqm-human-evaluation",
        "commit": "7fadea281aff8db61cc72fc3d469a4dca78b82a6",
        "files": ["generalMT2023/ende/sxs_mqm_generalMT2023_ende.3ratingsPerSegment.tsv.tar.gz"]}


def test_on_five_rows_the_ceiling_rests_on_the_three_raters_who_rated_them(
        tmp_path: Path) -> None:
    proc = run_cli(*plugin_args(), "bench", "lexical.chrf", "--suite", NAME, "--limit", "5",
                   "--json", "--bootstrap", "0", "--store", str(tmp_path / "runs.db"),
                   "--workers", "1", env=plugin_env(), check=True)
    (card,) = json.loads(proc.stdout)["cards"]
    first = HUMAN.iloc[:5]
    raters = [c for c in COLUMNS if first[c].notna().any()]
    assert len(raters) == 3
    ceiling = {r["protocol"]: r for r in card["rows"] if r["kind"] == "ceiling"}
    mine, values = first[raters].to_numpy(float), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        for k in range(3):
            values.append(stats.pearsonr(mine[:, k],
                                         np.delete(mine, k, axis=1).mean(axis=1))[0])
    # a rater whose five scores are all one value has no correlation: the ceiling is the
    # mean of the others', and its n says how many raters it rests on
    defined = [v for v in values if np.isfinite(v)]
    assert ceiling["segment-pearson"]["n"] == len(defined) == 2
    assert ceiling["segment-pearson"]["value"] == pytest.approx(np.mean(defined), abs=1e-12)
