"""`score --until-settled HUMAN`: scoring stops once the metrics' clusters are settled, and
the table holds the rows scored; on a table where one metric tracks people and the other does
not it stops long before the end, and the decision matches the sequential procedure run on the
table it wrote."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import run_cli, write_jsonl

from meta_eval.sequential import sequential_clusters
from meta_eval.statistics import group_values

ITEMS, SYSTEMS = 200, 5


def generations(path: Path) -> Path:
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(8)]
    records = []
    for i in range(ITEMS):
        for j in range(SYSTEMS):
            k = int(rng.integers(0, 9))
            filler = ["z"] * (8 - k + int(rng.integers(0, 4)))  # length independent of k
            output = " ".join(words[:k] + filler) or "z"
            records.append({"item": f"d{i}", "system": f"s{j}", "input": "x",
                            "reference": " ".join(words), "output": output,
                            "human": {"q": k + float(rng.normal(scale=0.5))}})
    return write_jsonl(path, records)


def test_stops_when_settled(tmp_path: Path):
    samples = generations(tmp_path / "gen.jsonl")
    out = tmp_path / "scores.csv"
    proc = run_cli("score", str(samples), "-m", "lexical.token_f1", "-m", "lexical.length",
                   "--until-settled", "human.q", "--settle-batch", "10", "-o", str(out),
                   "--store", str(tmp_path / "runs.db"), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["settled"]
    assert summary["items_scored"] < ITEMS // 2
    assert summary["items_saved"] == ITEMS - summary["items_scored"]
    assert summary["judge_calls_saved"] == 2 * SYSTEMS * summary["items_saved"]
    assert summary["clusters"] == {"lexical.token_f1": 1, "lexical.length": 2}
    table = pd.read_csv(out)
    assert len(table) == summary["items_scored"] * SYSTEMS
    assert Path(f"{out}.meta.json").exists()
    # the same decision from the table it wrote, items in the order they were scored
    order = list(dict.fromkeys(
        f"d{k}" for k in np.random.default_rng(0).permutation(ITEMS)))[:summary["items_scored"]]
    table = table.set_index(["item", "system"])
    h = np.array([[table.loc[(i, f"s{j}"), "human.q"] for j in range(SYSTEMS)] for i in order])
    values = np.column_stack([
        group_values("pearson", human=h, metric=np.array(
            [[table.loc[(i, f"s{j}"), c] for j in range(SYSTEMS)] for i in order]))
        for c in ("lexical.token_f1", "lexical.length")])
    again = sequential_clusters(values, ["lexical.token_f1", "lexical.length"], batch=10,
                                order="given")
    assert again.settled and again.items_used == summary["items_scored"]
    assert "settled after" in proc.stderr


def test_needs_two_metrics_and_the_human_score(tmp_path: Path):
    samples = generations(tmp_path / "gen.jsonl")
    out = tmp_path / "scores.csv"
    one = run_cli("score", str(samples), "-m", "lexical.token_f1", "--until-settled",
                  "human.q", "-o", str(out), "--store", str(tmp_path / "runs.db"))
    assert one.returncode == 2 and "two or more metrics" in one.stderr
    missing = run_cli("score", str(samples), "-m", "lexical.token_f1", "-m",
                      "lexical.length", "--until-settled", "human.zz", "-o", str(out),
                      "--store", str(tmp_path / "runs.db"))
    assert missing.returncode == 2 and "human.zz" in missing.stderr
