"""`win-rate` and `lc-win-rate` with `baseline_row=true`: the baseline's own row, as
AlpacaEval's leaderboard prints the reference model (its outputs judged against themselves:
every comparison a draw)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from conftest import run_cli

DATA = Path(__file__).parent / "data" / "alpaca_eval"
BASELINE = "gpt4_1106_preview"


def aggregate(path: Path, *args: str) -> dict[str, dict]:
    proc = run_cli("aggregate", str(path), *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return {o["rule"]: o for o in json.loads(proc.stdout)}


def test_the_baseline_row_is_alpacaevals() -> None:
    row = pd.read_csv(DATA / "baseline-row.csv", index_col="model").loc[BASELINE]
    win = f"win-rate:baseline={BASELINE},baseline_row=true"
    lc = f"lc-win-rate:baseline={BASELINE},baseline_row=true"
    out = aggregate(DATA / "jina-chat.csv", "-r", win, "-r", lc)
    extra = out[win]["extra"]
    assert out[win]["scores"][BASELINE] == row["win_rate"]
    assert extra["standard_error"][BASELINE] == row["standard_error"]
    assert extra["discrete_win_rate"][BASELINE] == row["discrete_win_rate"]
    assert extra["n_wins"][BASELINE] == row["n_wins"]
    assert extra["n_losses"][BASELINE] == row["n_wins_base"]
    assert extra["n_draws"][BASELINE] == row["n_draws"]
    assert extra["n_total"][BASELINE] == row["n_total"]
    assert out[lc]["scores"][BASELINE] == row["length_controlled_winrate"]
    assert np.isnan(row["lc_standard_error"])
    assert out[lc]["extra"]["standard_error"][BASELINE] is None
    # ranked with the others, whose rows do not change
    plain = aggregate(DATA / "jina-chat.csv", "-r", f"win-rate:baseline={BASELINE}",
                      "-r", f"lc-win-rate:baseline={BASELINE}")
    for with_row, without in ((win, f"win-rate:baseline={BASELINE}"),
                              (lc, f"lc-win-rate:baseline={BASELINE}")):
        assert out[with_row]["ranking"] == [BASELINE, "jina-chat"]
        assert plain[without]["ranking"] == ["jina-chat"]
        assert out[with_row]["scores"]["jina-chat"] == plain[without]["scores"]["jina-chat"]


def test_the_baseline_row_counts_one_self_comparison_per_item(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    rows = []
    for item in range(9):
        for system in ("s1", "s2", "s3"):
            if item == 8 and system != "s1":
                continue  # item 8: one opponent only
            rows.append({"item": f"i{item}", "system_a": "base", "system_b": system,
                         "winner": rng.choice(["a", "b", "tie"]),
                         "length_a": int(rng.integers(10, 50)),
                         "length_b": int(rng.integers(10, 50))})
    rows.append({"item": "i9", "system_a": "s1", "system_b": "s2", "winner": "a",
                 "length_a": 5, "length_b": 7})  # no baseline: not its item
    path = tmp_path / "pairs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    spec = "win-rate:baseline=base,baseline_row=true"
    extra = aggregate(path, "-r", spec)[spec]["extra"]
    items = {r["item"] for r in rows if "base" in (r["system_a"], r["system_b"])}
    assert extra["n_total"]["base"] == extra["n_draws"]["base"] == len(items) == 9


def test_baseline_row_needs_a_baseline(tmp_path: Path) -> None:
    proc = run_cli("aggregate", str(DATA / "jina-chat.csv"), "-r", "win-rate:baseline_row=true")
    assert proc.returncode == 2
    assert "baseline_row" in proc.stderr and "baseline=NAME" in proc.stderr
