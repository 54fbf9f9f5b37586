"""`judgebench escalate --store/--cost`: the cascade's cost per item against the strongest
(last) judge on every item. Two priced rubric judges score the SummEval sample through a real
loopback judge server into a real store; the costs `escalate --store` reports equal the
store's rows summed here with SQL, and the cascade's total equals sum_j reached_j p_j / N
worked out here from the stages' kept counts; `--cost` prices a judge before the store; a
judge without a price leaves the total unknown, saying which; bad prices exit 2."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from docs_judge_server import DocsJudgeServer

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "summeval-sample.jsonl"
CHEAP = "cheap"
STRONG = "strong"


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample scored by two judges priced 100x apart (USD per million tokens), with a
    confidence column per judge (1 where it agrees with people, so that the cheap judge
    keeps some rows) and about half of people's relevance ratings hidden."""
    folder = tmp_path_factory.mktemp("cost")
    with DocsJudgeServer() as server:
        specs = folder / "judges.toml"
        specs.write_text("".join(
            f'[metrics.{model}]\nmetric = "judge.rubric"\nbackend = "openai_compat"\n'
            f'model = "{model}"\napi_base = "{server.url}"\nprice_in = {price}\n'
            f"price_out = {price}\n\n" for model, price in (("cheap", 10), ("strong", 1000))))
        proc = run_cli("score", str(SAMPLE), "--config", str(specs),
                       "--store", str(folder / "store.db"),
                       "-o", str(folder / "scores.csv"), "--no-progress",
                       env={"JUDGEBENCH_CACHE_DIR": str(folder / "cache"),
                            "OPENAI_API_KEY": "unused"})
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_csv(folder / "scores.csv")
    for column in (CHEAP, STRONG):  # sure where it is right: the cheap judge keeps those
        frame[f"{column}.sure"] = (np.floor(frame[column] + 0.5)
                                   == np.floor(frame["human.relevance"] + 0.5)).astype(float)
    hidden = np.random.default_rng(0).random(len(frame)) < 0.5
    frame.loc[hidden, "human.relevance"] = np.nan
    frame.to_csv(folder / "scores.csv", index=False)
    return folder


def escalate(folder: Path, *args: str) -> dict:
    proc = run_cli("escalate", str(folder / "scores.csv"), "--judge", CHEAP,
                   "--confidence-column", f"{CHEAP}.sure", "--cascade",
                   f"{STRONG}={STRONG}.sure", "--human", "human.relevance", "--alpha", "0.5",
                   *args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    return result


def stored_per_item(folder: Path, model: str) -> float:
    """The store's cost of one judge's rows, per row, straight from SQL."""
    sidecar = json.loads((folder / "scores.csv.meta.json").read_text())
    column = CHEAP if model == "cheap" else STRONG
    signature = sidecar["columns"][column]["signature"]
    with sqlite3.connect(folder / "store.db") as conn:
        total, rows, priced = conn.execute(
            "SELECT SUM(cost_usd), COUNT(DISTINCT item || '|' || system), COUNT(cost_usd)"
            " FROM scores WHERE signature = ?", (signature,)).fetchone()
    assert priced == rows == 64
    return float(total) / rows


def reached(result: dict) -> list[int]:
    """How many items reach each judge: all of them, then those no earlier judge kept."""
    out, left = [], result["items"]
    for judge in result["judges"]:
        out.append(left)
        left -= judge["kept"]
    return out


def test_the_store_prices_the_cascade(scored: Path) -> None:
    result = escalate(scored, "--store", str(scored / "store.db"))
    cost = result["cost"]
    prices = [stored_per_item(scored, "cheap"), stored_per_item(scored, "strong")]
    assert prices[1] > 50 * prices[0] > 0
    assert 0 < reached(result)[1] < 64  # the cheap judge kept some rows
    for found, price, count in zip(cost["judges"], prices, reached(result), strict=True):
        assert found["per_item_usd"] == pytest.approx(price, rel=1e-12)
        assert found["source"] == "store" and found["runs_on"] == count
    total = sum(p * n for p, n in zip(prices, reached(result), strict=True)) / 64
    assert cost["cascade_per_item_usd"] == pytest.approx(total, rel=1e-12)
    assert cost["strongest"] == STRONG
    assert cost["strongest_per_item_usd"] == pytest.approx(prices[1], rel=1e-12)
    assert cost["saving"] == pytest.approx(1 - total / prices[1], rel=1e-12)
    assert cost["missing"] == []
    text = run_cli("escalate", str(scored / "scores.csv"), "--judge", CHEAP,
                   "--confidence-column", f"{CHEAP}.sure", "--cascade",
                   f"{STRONG}={STRONG}.sure", "--human", "human.relevance", "--store",
                   str(scored / "store.db"))
    assert text.returncode == 0, text.stderr
    assert f"for {STRONG} (the strongest) on every item" in text.stdout


def test_cost_option_prices_before_the_store_and_a_missing_price_says_so(scored: Path
                                                                        ) -> None:
    result = escalate(scored, "--store", str(scored / "store.db"), "--cost", f"{CHEAP}=0.5")
    first, second = result["cost"]["judges"]
    assert (first["per_item_usd"], first["source"]) == (0.5, "--cost")
    assert second["source"] == "store"
    counts = reached(result)
    assert result["cost"]["cascade_per_item_usd"] == pytest.approx(
        (0.5 * counts[0] + second["per_item_usd"] * counts[1]) / 64, rel=1e-12)
    only = escalate(scored, "--cost", f"{STRONG}=2")
    assert only["cost"]["cascade_per_item_usd"] is None
    assert only["cost"]["missing"] == [CHEAP]
    assert only["cost"]["strongest_per_item_usd"] == 2.0
    assert escalate(scored)["cost"] is None


def test_an_unpriced_store_leaves_the_cost_unknown(tmp_path: Path) -> None:
    proc = run_cli("score", str(SAMPLE), "-m", "lexical.rougeL", "-m", "lexical.chrf",
                   "--store", str(tmp_path / "store.db"), "-o", str(tmp_path / "s.csv"),
                   "--no-progress")
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_csv(tmp_path / "s.csv")
    frame["one"] = 1.0
    frame.to_csv(tmp_path / "s.csv", index=False)
    text = run_cli("escalate", str(tmp_path / "s.csv"), "--judge", "lexical.rougeL",
                   "--confidence-column", "one", "--cascade", "lexical.chrf=one", "--human",
                   "human.relevance", "--store", str(tmp_path / "store.db"))
    assert text.returncode == 0, text.stderr
    assert "cost: unknown: no price for lexical.rougeL, lexical.chrf" in text.stdout


@pytest.mark.parametrize(("args", "words"), [
    (("--cost", f"{CHEAP}=-1"), ("--cost", "USD")),
    (("--cost", f"{CHEAP}=nan"), ("--cost",)),
    (("--cost", "nobody=1"), ("--cost", "'nobody'", "not a judge")),
    (("--cost", f"{CHEAP}=1,{CHEAP}=2"), ("--cost", "twice")),
    (("--cost", f"{CHEAP}=1,x=2"), ("--cost", "'x'")),
    (("--store", "missing.db"), ("--store", "missing.db")),
])
def test_bad_prices_exit_2(scored: Path, args: tuple[str, ...], words: tuple[str, ...]) -> None:
    proc = run_cli("escalate", str(scored / "scores.csv"), "--judge", CHEAP,
                   "--confidence-column", f"{CHEAP}.sure", "--cascade",
                   f"{STRONG}={STRONG}.sure", "--human", "human.relevance", *args,
                   cwd=scored)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert proc.stdout == ""
