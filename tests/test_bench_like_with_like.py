"""`bench` compares like with like: on a part of a suite (`--limit`) a number published for
the full set is shown as not comparable and no verdict is drawn from it, while a published
judge with stored outputs is recomputed on the same rows; every verdict names its protocol
and n; several suites get one summary table (and `--json` the same cells), in one process
and one store that `--resume` reuses."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from scipy.stats import pearsonr
from scripted_judge import ScriptedJudge
from suites_support import DATA, plugin_args, plugin_env

from judgebench.suite import load_suite


def _bench(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    proc = run_cli(*plugin_args(), "bench", *args, "--json", "--bootstrap", "100",
                   "--store", str(tmp_path / "runs.db"), "--workers", "1",
                   env={**plugin_env(), **(env or {})}, check=True)
    return json.loads(proc.stdout)


def test_a_limited_pairwise_bench_recomputes_stored_judges_on_the_same_pairs(tmp_path):
    with ScriptedJudge() as judge:
        spec = (f"judge.pairwise:backend=openai_compat,model=judge,api_base={judge.url},"
                "api_key_env=JB_PAIR_KEY,protocol=text")
        out = _bench(tmp_path, spec, "--suite", "llmbar", "--limit", "7",
                     env={"JB_PAIR_KEY": "not-a-secret"})
    (card,) = out["cards"]
    assert card["scored"] == 7 and card["full_set"] is False
    printed = [r for r in card["rows"] if r.get("printed") is not None]
    assert printed and all(r["comparable"] is False and "reproduces" not in r for r in printed)
    human = load_suite(DATA / "llmbar").human().head(7)  # the first 7 pairs: Natural
    gold = human["human.gold"]
    for r in printed:
        if r["subset"] not in ("(all)", "Natural") or r["statistic"] != "accuracy":
            continue
        column = r["spec"]
        independent = ((human[f"{column}.ab"] == gold).mean()
                       + (human[f"{column}.ba"] == gold).mean()) / 2
        assert r["value"] == pytest.approx(independent, abs=1e-12) and r["n"] == 7
    overall, natural = card["verdict"]  # the other subsets have no pair among the 7
    for verdict in (overall, natural):
        assert "(protocol preference: pairwise, human ties dropped; n = 7 pairs)" in verdict
        assert "recomputed from its stored outputs on the same rows" in verdict
    assert " on LLMBar-Natural at " in natural
    best = max((r for r in printed if r["subset"] == "Natural" and r["statistic"] == "accuracy"),
               key=lambda r: r["value"])
    assert (f"the published {best['label']} ({100 * best['value']:.1f}% recomputed from its "
            f"stored outputs on the same rows; {100 * best['printed']:.1f}% published on the "
            "full set)") in natural
    # LLMBar publishes per subset only: over all pairs there is no printed number at all
    assert "published on the full set" not in overall


def test_a_limited_bench_draws_no_verdict_from_a_full_set_number(tmp_path):
    out = _bench(tmp_path, "lexical.length", "--suite", "summeval", "--limit", "48")
    (card,) = out["cards"]
    verdict = card["verdict"][0]
    assert ("(protocol summary-coherence: segment level, grouped by item; n = 3 items)"
            in verdict)
    assert "not comparable, no verdict against them" in verdict
    assert not any(w in verdict for w in ("below", "above", "significantly", "inside"))
    published = [r for r in card["rows"] if r["kind"] == "published"]
    assert published and all(r["comparable"] is False and r["value"] is None
                             for r in published)
    text = run_cli(*plugin_args(), "bench", "lexical.length", "--suite", "summeval", "--limit",
                   "48", "--bootstrap", "0", "--store", str(tmp_path / "runs.db"),
                   "--workers", "1", "--resume", env=plugin_env(), check=True).stdout
    assert "0.184 (published on the full set, not comparable)" in text
    assert "(reproduced)" not in text


def test_the_full_set_verdict_names_its_protocol_and_n(tmp_path):
    out = _bench(tmp_path, "lexical.length", "--suite", "qags-xsum")
    (card,) = out["cards"]
    assert card["full_set"] is True
    verdict = card["verdict"][0]
    assert verdict.startswith("lexical.length correlates with people on QAGS-XSum at pearson ")
    assert "(protocol sample-consistency: segment level, no grouping; n = 239 rows)" in verdict
    assert "the published UniEval (0.461)" in verdict
    assert all(r["comparable"] is True for r in card["rows"] if r["kind"] == "published")
    # the value is scipy's Pearson of the output lengths (words) against people
    samples = load_suite(DATA / "qags-xsum").samples()
    human = load_suite(DATA / "qags-xsum").human()
    lengths = np.array([len(s["output"].split()) for s in samples], dtype=float)
    mine = next(r for r in card["rows"] if r["kind"] == "yours"
                and r["protocol"] == "sample-consistency" and r["statistic"] == "pearson")
    assert mine["value"] == pytest.approx(pearsonr(lengths, human["human.consistency"])[0],
                                          abs=1e-12)


def test_several_suites_get_one_summary_table_before_the_cards(tmp_path):
    args = ["lexical.length", "lexical.bleu", "--suite", "qags-cnndm,sfhot,mt-bench",
            "--limit", "30"]
    out = _bench(tmp_path, *args)
    cards = {c["suite"]: c for c in out["cards"]}
    cells = out["summary"]
    assert {(c["metric"], c["suite"]) for c in cells if c["kind"] == "yours"} == {
        (m, s) for m in ("lexical.length", "lexical.bleu") for s in cards}
    for cell in cells:
        card = cards[cell["suite"]]
        if cell["status"] == "skipped":
            assert card["skipped"] or not any(r["label"] == cell["metric"]
                                              for r in card["rows"])
            continue
        head = load_suite(DATA / cell["suite"]).info.protocols[0]
        assert (cell["protocol"], cell["statistic"]) == (head.name, head.statistics[0])
        (row,) = [r for r in card["rows"] if r["label"] == cell["metric"]
                  and r["kind"] == cell["kind"] and r["protocol"] == head.name
                  and r["statistic"] == head.statistics[0]]
        assert (cell["value"], cell["n"]) == (row["value"], row["n"])
    assert {(c["suite"], c["status"]) for c in cells if c["metric"] == "lexical.bleu"} == {
        ("qags-cnndm", "skipped"), ("sfhot", "ok"), ("mt-bench", "skipped")}
    published = [c for c in cells if c["kind"] == "published"]
    assert {c["suite"] for c in published} == {"qags-cnndm", "sfhot"}
    assert all(c["comparable"] is False and c["metric"] == "UniEval" for c in published)
    text = run_cli(*plugin_args(), "bench", *args, "--bootstrap", "0", "--store",
                   str(tmp_path / "runs.db"), "--workers", "1", "--resume",
                   env=plugin_env(), check=True).stdout
    lines = text.splitlines()
    assert lines[0].startswith("summary") and text.index("summary") < text.index("== ")
    assert lines[1].split() == ["metric", "qags-cnndm", "sfhot", "mt-bench"]
    assert lines[2].split()[0] == "lexical.length" and lines[3].split()[3] == "skipped"
    summary = " ".join(" ".join(lines[:lines.index("")]).split())
    assert "sfhot: pearson (protocol sample-overall" in summary
    assert ("best published judge UniEval" in summary and "recomputed from its stored outputs "
            "on the same rows" in summary)
    assert max(len(line) for line in lines[:lines.index("")]) <= 100


def test_suite_all_runs_in_one_store_and_resumes_without_rescoring(tmp_path):
    first = _bench(tmp_path, "lexical.length", "--suite", "all", "--limit", "5")
    db = tmp_path / "runs.db"
    with sqlite3.connect(db) as con:
        runs = pd.read_sql("select command, computed, reused from runs", con)
        scores = con.execute("select count(*) from scores").fetchone()[0]
    ran = [c for c in first["cards"] if not c["skipped"]]
    assert len(runs) == len(ran) and (runs["computed"] == 5).all()
    again = run_cli(*plugin_args(), "bench", "lexical.length", "--suite", "all", "--limit", "5",
                    "--json", "--bootstrap", "100", "--store", str(db), "--workers", "1",
                    "--resume", env=plugin_env(), check=True)
    with sqlite3.connect(db) as con:
        rerun = pd.read_sql("select computed, reused from runs", con).iloc[len(runs):]
        assert con.execute("select count(*) from scores").fetchone()[0] == scores
    assert len(rerun) == len(ran) and (rerun["computed"] == 0).all()
    assert (rerun["reused"] == 5).all()
    assert json.loads(again.stdout) == first
    assert len(first["cards"]) >= 9
