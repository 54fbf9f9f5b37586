"""`judgebench items`: IRT on a scores table, end to end (synthetic tables with known
parameters, bad input, and a lexical metric on SummEval)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli, summeval_records, write_jsonl
from scipy.stats import kendalltau


def simulated_table(path: Path, *, systems: int = 30, items: int = 120, seed: int = 0,
                    reversed_item: int | None = 7) -> tuple[Path, np.ndarray]:
    """A metric in [0, 1] whose value >= 0.5 follows a 2PL: P = sigmoid(a (theta - b))."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1.2, systems)
    a, b = rng.uniform(0.8, 2.5, items), rng.uniform(-1.5, 1.5, items)
    p = 1 / (1 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    y = rng.random(p.shape) < p
    if reversed_item is not None:
        y[reversed_item] = ~y[reversed_item]
    value = np.where(y, 0.5 + 0.5 * rng.random(p.shape), 0.5 * rng.random(p.shape))
    human = value + rng.normal(0, 0.3, value.shape)
    rows = [{"item": f"i{i:03d}", "system": f"s{j:02d}", "m": value[i, j], "h": human[i, j]}
            for i in range(items) for j in range(systems)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path, theta


def results(proc) -> dict[str, list[dict]]:
    assert proc.returncode == 0, proc.stderr
    out: dict[str, list[dict]] = {}
    for row in json.loads(proc.stdout):
        out.setdefault(row["type"], []).append(row)
    return out


def test_items_json_ranks_systems_flags_the_reversed_item_and_recommends_a_subset(tmp_path):
    path, theta = simulated_table(tmp_path / "s.csv")
    got = results(run_cli("items", str(path), "--metric", "m", "--threshold", "0.5",
                          "--subset", "25", "--power", "--top-k", "2", "--json"))
    fit = got["fit"][0]
    assert fit["converged"] and fit["systems"] == 30 and fit["items"] == 120
    systems = got["system"]
    assert [s["rank"] for s in systems] == list(range(1, 31))
    abilities = [s["ability"] for s in systems]
    assert abilities == sorted(abilities, reverse=True)
    truth = {f"s{j:02d}": theta[j] for j in range(30)}
    tau = kendalltau([truth[s["system"]] for s in systems], abilities).statistic
    assert tau > 0.85
    for s in systems:
        assert s["ci_low"] < s["ability"] < s["ci_high"]
        assert s["ci_high"] - s["ability"] == pytest.approx(1.959964 * s["se"], rel=1e-5)
    flagged = {i["item"] for i in got["item"] if i["flag"]}
    assert "i007" in flagged
    reversed_row = next(i for i in got["item"] if i["item"] == "i007")
    assert reversed_row["discrimination_2pl"] < 0
    subset = got["subset"][0]
    assert subset["size"] == 25 and len(set(subset["items"])) == 25
    assert not flagged & set(subset["items"])
    assert subset["kendall_tau"] > subset["random_kendall_tau"]
    power = got["power"][0]
    assert len(power["pairs"]) == 2 and power["pairs"][0]["better"] == systems[0]["system"]
    assert power["items_needed"] == max(p["items_needed"] for p in power["pairs"])


def test_rasch_ranking_is_the_raw_score_ranking(tmp_path):
    path, _ = simulated_table(tmp_path / "s.csv", reversed_item=None)
    got = results(run_cli("items", str(path), "--metric", "m", "--threshold", "0.5",
                          "--model", "rasch", "--json"))
    raw = [s["raw_score"] for s in got["system"]]
    assert raw == sorted(raw, reverse=True)
    assert all(i["discrimination"] in (1.0, None) for i in got["item"])


def test_lower_is_better_flips_the_outcome(tmp_path):
    path, _ = simulated_table(tmp_path / "s.csv")
    frame = pd.read_csv(path)
    frame["m"] = -frame["m"]
    flipped = tmp_path / "neg.csv"
    frame.to_csv(flipped, index=False)
    a = results(run_cli("items", str(path), "--metric", "m", "--threshold", "0.5", "--json"))
    b = results(run_cli("items", str(flipped), "--metric", "m", "--threshold", "-0.5",
                        "--lower-is-better", "m", "--json"))
    assert [s["system"] for s in a["system"]] == [s["system"] for s in b["system"]]
    assert b["fit"][0]["outcome"] == "1 where m <= -0.5"


def test_human_agreement_outcome(tmp_path):
    path, _ = simulated_table(tmp_path / "s.csv")
    got = results(run_cli("items", str(path), "--metric", "m", "--human", "h", "--json"))
    assert "orders the system" in got["fit"][0]["outcome"]
    assert len(got["system"]) == 30


def test_degenerate_rows_are_reported_not_nan(tmp_path):
    # no reversed item: a 0 on a negative-slope item would give s00 a finite ability
    path, _ = simulated_table(tmp_path / "s.csv", reversed_item=None)
    frame = pd.read_csv(path)
    frame.loc[frame["system"] == "s00", "m"] = 0.1  # a system that never reaches it
    frame.loc[frame["item"] == "i000", "m"] = 0.9  # an item where every system does
    frame.to_csv(path, index=False)
    got = results(run_cli("items", str(path), "--metric", "m", "--threshold", "0.5",
                          "--json"))
    first = next(i for i in got["item"] if i["item"] == "i000")
    assert first["informative"] is False and first["difficulty"] is None
    assert first["flag"] == "every system alike"
    last = got["system"][-1]
    assert last["system"] == "s00" and last["extreme"] == "all wrong"
    assert last["ability"] is None
    assert any("no finite ML estimate" in n for n in got["fit"][0]["notes"])


def test_text_report(tmp_path):
    path, _ = simulated_table(tmp_path / "s.csv")
    proc = run_cli("items", str(path), "--metric", "m", "--threshold", "0.5", "--subset", "10",
                   "--power")
    assert proc.returncode == 0, proc.stderr
    assert "recommended subset: 10 items" in proc.stdout
    assert "flagged items:" in proc.stdout and "i007" in proc.stdout
    assert "power (top 3" in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    ((), "exactly one of --threshold"),
    (("--threshold", "0.5", "--human", "h"), "exactly one of --threshold"),
    (("--threshold", "nan"), "finite"),
    (("--threshold", "2.0"), "no item separates the systems"),
])
def test_bad_options_exit_2(tmp_path, args, message):
    path, _ = simulated_table(tmp_path / "s.csv", systems=5, items=10)
    proc = run_cli("items", str(path), "--metric", "m", *args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_bad_cells_name_file_line_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("item,system,m\na,x,0.1\na,y,oops\n", encoding="utf-8")
    proc = run_cli("items", str(path), "--metric", "m", "--threshold", "0.5")
    assert proc.returncode == 2
    assert "bad.csv" in proc.stderr and "line 3" in proc.stderr and "'m'" in proc.stderr
    proc = run_cli("items", str(path), "--metric", "nope", "--threshold", "0.5")
    assert proc.returncode == 2 and "'nope'" in proc.stderr


@pytest.mark.slow
def test_items_on_summeval_rouge2(tmp_path):
    gens = write_jsonl(tmp_path / "gens.jsonl", summeval_records(16 * 40))
    scores = tmp_path / "scores.csv"
    proc = run_cli("score", str(gens), "-m", "lexical.rouge2", "-o", str(scores))
    assert proc.returncode == 0, proc.stderr
    got = results(run_cli("items", str(scores), "--metric", "lexical.rouge2",
                          "--threshold", "0.15", "--subset", "10", "--power", "--json"))
    assert got["fit"][0]["systems"] == 16 and got["fit"][0]["items"] == 40
    assert len(got["system"]) == 16
    finite = [s for s in got["system"] if s["ability"] is not None]
    assert finite and all(s["se"] > 0 for s in finite)
    assert got["subset"][0]["size"] == 10
