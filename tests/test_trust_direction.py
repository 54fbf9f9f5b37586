"""Direction and system level, one rule for every command (issue "Numbers you can trust",
items 4-6): lower-is-better metrics read as such from the sidecar or the registered metric,
corpus scores as system scores, and no metric column dropped without a word.

Independent references: sacrebleu's corpus BLEU/TER computed here, scipy's correlations, and
pandas group means.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sacrebleu
import scipy.stats
from conftest import run_cli, summeval_records, write_jsonl

HUMAN = "human.relevance"


def invoke(*args: str):
    return run_cli(*args)


def json_of(*args: str) -> list[dict]:
    result = invoke(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """SummEval, 4 documents x 16 systems with 2 of their references (TER with 11 is slow),
    scored with BLEU, TER and ROUGE-2 by `score`."""
    root = tmp_path_factory.mktemp("direction")
    records = [{**r, "reference": r["reference"][:2]} for r in summeval_records(64)]
    gens = write_jsonl(root / "gens.jsonl", records)
    table = root / "scores.csv"
    result = invoke("score", str(gens), "-m", "lexical.bleu", "-m", "lexical.ter",
                    "-m", "lexical.rouge2", "-o", str(table), "--store", str(root / "r.db"),
                    "--corpus", str(root / "corpus.csv"))
    assert result.returncode == 0, result.stderr
    frame = pd.DataFrame(records)
    systems = list(dict.fromkeys(frame["system"]))
    corpus_bleu, corpus_ter = {}, {}
    for system in systems:
        rows = frame[frame["system"] == system]
        outputs = list(rows["output"])
        refs = [list(r) for r in zip(*rows["reference"], strict=True)]
        corpus_bleu[system] = sacrebleu.BLEU().corpus_score(outputs, refs).score
        corpus_ter[system] = sacrebleu.metrics.TER().corpus_score(outputs, refs).score
    human = frame.assign(h=[r["human"]["relevance"] for r in records]).groupby(
        "system", sort=False)["h"].mean()
    return {"root": root, "table": table, "corpus": root / "corpus.csv", "systems": systems,
            "bleu": corpus_bleu, "ter": corpus_ter, "human": human, "stderr": result.stderr}


def _record(records: list[dict], metric: str) -> dict:
    return next(r for r in records if r["metric"] == metric)


# -- item 5: one source of truth for direction ------------------------------------------------
@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_score_summary_calls_the_lowest_ter_best(scored: dict) -> None:
    ter = scored["ter"]
    best, worst = min(ter, key=ter.get), max(ter, key=ter.get)
    line = next(x for x in scored["stderr"].splitlines() if "corpus lexical.ter" in x)
    assert f"best {best} " in line and f"worst {worst} " in line, line
    assert "lower is better" in line


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_meta_eval_negates_ter_and_says_so(scored: dict) -> None:
    records = json_of("meta-eval", str(scored["table"]), "--human", HUMAN,
                      "--statistic", "pearson")
    frame = pd.read_csv(scored["table"])
    ter = _record(records, "lexical.ter")
    expected = scipy.stats.pearsonr(frame[HUMAN], -frame["lexical.ter"]).statistic
    assert ter["value"] == pytest.approx(expected, abs=1e-12)
    assert ter["flipped"] is True and ter["higher_is_better"] is False
    assert ter["direction_from"] == "sidecar"
    bleu = _record(records, "lexical.bleu")
    assert bleu["flipped"] is False
    # Best first: the records are sorted by the oriented value.
    values = [r["value"] for r in records]
    assert values == sorted(values, reverse=True)


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_direction_without_a_sidecar_comes_from_the_registered_metric(scored: dict,
                                                                      tmp_path: Path) -> None:
    bare = tmp_path / "bare.csv"
    bare.write_bytes(scored["table"].read_bytes())  # no .meta.json beside it
    records = json_of("meta-eval", str(bare), "--human", HUMAN, "--metric", "lexical.ter")
    assert records[0]["flipped"] is True and records[0]["direction_from"] == "metric"
    forced = json_of("meta-eval", str(bare), "--human", HUMAN, "--metric", "lexical.ter",
                     "--higher-is-better", "lexical.ter")
    assert forced[0]["flipped"] is False and forced[0]["direction_from"] == "flag"
    assert forced[0]["value"] == pytest.approx(-records[0]["value"], abs=1e-12)


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_aggregate_ranks_the_lowest_ter_first_without_a_flag(scored: dict) -> None:
    frame = pd.read_csv(scored["table"])
    (entry,) = json_of("aggregate", str(scored["table"]), "--metric", "lexical.ter",
                       "--rule", "mean")
    means = frame.groupby("system")["lexical.ter"].mean()
    assert entry["ranking"][0] == means.idxmin()
    assert entry["ranking"][-1] == means.idxmax()


def test_every_command_spells_the_direction_flags_alike() -> None:
    for command in ("meta-eval", "aggregate", "audit"):
        text = invoke(command, "--help").stdout
        assert "--lower-is-better" in text and "--higher-is-better" in text, command
        assert "--lower-better " not in text, command


# -- item 6: corpus metrics at system level ---------------------------------------------------
@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_system_level_uses_corpus_bleu_and_ter(scored: dict) -> None:
    records = json_of("meta-eval", str(scored["table"]), "--human", HUMAN, "--level", "system",
                      "--statistic", "kendall", "--statistic", "pearson")
    systems = scored["systems"]
    human = scored["human"].loc[systems].to_numpy()
    bleu = np.array([scored["bleu"][s] for s in systems])
    ter = np.array([scored["ter"][s] for s in systems])
    by = {(r["metric"], r["statistic"]): r for r in records}
    assert by[("lexical.bleu", "kendall")]["value"] == pytest.approx(
        scipy.stats.kendalltau(human, bleu).statistic, abs=1e-12)
    assert by[("lexical.bleu", "pearson")]["value"] == pytest.approx(
        scipy.stats.pearsonr(human, bleu).statistic, abs=1e-9)
    assert by[("lexical.ter", "kendall")]["value"] == pytest.approx(
        scipy.stats.kendalltau(human, -ter).statistic, abs=1e-12)
    assert by[("lexical.bleu", "kendall")]["system_score"] == "corpus"
    assert by[("lexical.rouge2", "kendall")]["system_score"] == "mean"
    # The mean of sentence BLEU is another number: --system-score mean gives it.
    means = json_of("meta-eval", str(scored["table"]), "--human", HUMAN, "--level", "system",
                    "--statistic", "kendall", "--metric", "lexical.bleu",
                    "--system-score", "mean")
    frame = pd.read_csv(scored["table"])
    sentence = frame.groupby("system", sort=False)["lexical.bleu"].mean().loc[systems]
    assert means[0]["system_score"] == "mean"
    assert means[0]["value"] == pytest.approx(
        scipy.stats.kendalltau(human, sentence).statistic, abs=1e-12)


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_corpus_file_gives_system_scores_to_a_table_without_sidecar(scored: dict,
                                                                     tmp_path: Path) -> None:
    bare = tmp_path / "bare.csv"
    bare.write_bytes(scored["table"].read_bytes())
    with_file = json_of("meta-eval", str(bare), "--human", HUMAN, "--level", "system",
                        "--metric", "lexical.bleu", "--corpus", str(scored["corpus"]))
    with_sidecar = json_of("meta-eval", str(scored["table"]), "--human", HUMAN, "--level",
                           "system", "--metric", "lexical.bleu")
    assert with_file[0]["value"] == with_sidecar[0]["value"]
    assert with_file[0]["system_score"] == "corpus"


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_compare_at_system_level_leaves_corpus_scores_out(scored: dict) -> None:
    out = json_of("meta-eval", str(scored["table"]), "--human", HUMAN, "--level", "system",
                  "--compare", "--resamples", "100")
    corpus = [r for r in out if r["system_score"] == "corpus"]
    means = [r for r in out if r["system_score"] == "mean"]
    assert corpus and all("cluster" not in r and r["compare_note"].startswith("not compared")
                          for r in corpus)
    assert means and all(r["cluster"] >= 1 for r in means)


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_aggregate_reads_the_corpus_file_as_a_leaderboard(scored: dict) -> None:
    (entry,) = json_of("aggregate", str(scored["corpus"]), "--column", "lexical.ter",
                       "--rule", "mean")
    ter = scored["ter"]
    assert entry["ranking"] == sorted(ter, key=ter.get)
    assert entry["scores"][entry["ranking"][0]] == pytest.approx(-min(ter.values()))


@pytest.mark.slow  # neural.vendi loads the MiniLM encoder
def test_a_corpus_only_metric_is_meta_evaluable_at_system_level(tmp_path: Path) -> None:
    records = summeval_records(48)
    gens = write_jsonl(tmp_path / "gens.jsonl", records)
    table = tmp_path / "scores.csv"
    result = invoke("score", str(gens), "-m", "neural.vendi", "-m", "lexical.rouge2",
                    "-o", str(table), "--store", str(tmp_path / "r.db"))
    assert result.returncode == 0, result.stderr
    sidecar = json.loads(Path(f"{table}.meta.json").read_text())
    vendi = {c["system"]: c["value"] for c in sidecar["corpus"] if c["metric"] == "neural.vendi"}
    out = json_of("meta-eval", str(table), "--human", HUMAN, "--level", "system",
                  "--statistic", "spearman")
    row = _record(out, "neural.vendi")
    frame = pd.DataFrame(records).assign(h=[r["human"]["relevance"] for r in records])
    human = frame.groupby("system", sort=False)["h"].mean()
    expected = scipy.stats.spearmanr(human.to_numpy(),
                                     [vendi[s] for s in human.index]).statistic
    assert row["system_score"] == "corpus"
    assert row["value"] == pytest.approx(expected, abs=1e-12)
    segment = invoke("meta-eval", str(table), "--human", HUMAN, "--metric", "neural.vendi")
    assert segment.returncode == 2 and "corpus-only" in segment.stderr


# -- item 4: never drop a column silently ------------------------------------------------------
def test_a_bad_cell_in_a_metric_column_is_reported(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"item": np.repeat(["a", "b", "c"], 4),
                          "system": ["s1", "s2", "s3", "s4"] * 3,
                          "human.x": rng.normal(size=12), "good": rng.normal(size=12)})
    frame["shaky"] = rng.normal(size=12).astype(object)
    frame.loc[3, "shaky"] = "oops"
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    result = invoke("meta-eval", str(path), "--human", "human.x", "--json")
    assert result.returncode == 0
    assert [r["metric"] for r in json.loads(result.stdout)] == ["good"]
    assert "'shaky'" in result.stderr and "line 5" in result.stderr and "'oops'" in result.stderr


@pytest.mark.slow  # the `scored` fixture: TER over 64 SummEval rows, about a minute
def test_audit_uses_corpus_scores_at_system_level(scored: dict) -> None:
    records = json_of("audit", str(scored["table"]), "--human", HUMAN, "--level", "system",
                      "--sentinel", "sentinel.random", "--bootstrap", "0",
                      "--resamples", "100")
    systems = scored["systems"]
    human = scored["human"].loc[systems].to_numpy()
    by = {r["metric"]: r for r in records if r["type"] == "correlation"}
    bleu = np.array([scored["bleu"][s] for s in systems])
    ter = np.array([scored["ter"][s] for s in systems])
    assert by["lexical.bleu"]["value"] == pytest.approx(
        scipy.stats.pearsonr(human, bleu).statistic, abs=1e-9)
    assert by["lexical.ter"]["value"] == pytest.approx(
        scipy.stats.pearsonr(human, -ter).statistic, abs=1e-9)
    assert by["lexical.bleu"]["system_score"] == "corpus"
    assert by["lexical.bleu"]["gate"] is None and "not gated" in by["lexical.bleu"]["gate_note"]
    assert by["lexical.rouge2"]["system_score"] == "mean"
    assert by["lexical.rouge2"]["gate"] in ("pass", "fail")
