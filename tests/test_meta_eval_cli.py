"""`judgebench meta-eval`: JSON and table output, options, and exit code 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import run_cli


def invoke(*args: str):
    return run_cli("meta-eval", *args)


def as_json(*args: str) -> list[dict]:
    result = invoke(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    rows = []
    for item in range(12):
        for system in range(6):
            q = rng.normal() + system * 0.3
            rows.append({"item": f"d{item}", "system": f"s{system}",
                         "good": q + rng.normal() * 0.3, "bad": rng.normal(),
                         "human.quality": round(q + rng.normal() * 0.3, 1),
                         "human.other": rng.normal(),
                         "r1": q + rng.normal() * 0.5, "r2": q + rng.normal() * 0.5,
                         "r3": q + rng.normal() * 0.5, "note": "x"})
    frame = pd.DataFrame(rows)
    frame.loc[3, "good"] = np.nan
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def test_json_result_objects(table):
    out = as_json(str(table), "--human", "human.quality", "--statistic", "kendall",
                  "--statistic", "acc-eq", "--level", "segment", "--grouping", "item",
                  "--bootstrap", "50")
    frame = pd.read_csv(table)
    # Default metrics: numeric, not human.*, not the named human column.
    assert {r["metric"] for r in out} == {"good", "bad", "r1", "r2", "r3"}
    for r in out:
        assert {"metric", "human", "level", "grouping", "statistic", "value", "n", "skipped",
                "ci_low", "ci_high"} <= set(r)
        assert r["human"] == "human.quality" and r["grouping"] == "item"
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
        assert ("epsilon" in r) == (r["statistic"] == "acc-eq")
    good = next(r for r in out if r["metric"] == "good" and r["statistic"] == "kendall")
    per_item = [scipy.stats.kendalltau(g["human.quality"], g["good"], nan_policy="omit")[0]
                for _, g in frame.groupby("item")]
    assert good["value"] == pytest.approx(np.nanmean(per_item))
    assert good["n"] == 12


def test_exclude_system_and_system_level(table):
    out = as_json(str(table), "--human", "human.quality", "--metric", "good", "--level",
                  "system", "--statistic", "pearson", "--statistic", "pairwise-accuracy",
                  "--exclude-system", "s0")
    assert [r["n"] for r in out] == [5, 5]
    assert out[0]["p_value"] is not None


def test_compare_adds_clusters(table):
    out = as_json(str(table), "--human", "human.quality", "--metric", "good", "--metric",
                  "bad", "--grouping", "item", "--compare", "--resamples", "200")
    clusters = {r["metric"]: r["cluster"] for r in out}
    assert clusters == {"good": 1, "bad": 2}
    assert out[0]["metric"] == "good"


def test_human_ceiling_with_raters(table):
    out = as_json(str(table), "--human", "human.quality", "--metric", "good", "--rater", "r1",
                  "--rater", "r2", "--rater", "r3")
    ceiling = next(r for r in out if r["metric"] == "(human ceiling)")
    assert len(ceiling["per_rater"]) == 3 and 0 < ceiling["value"] <= 1
    good = next(r for r in out if r["metric"] == "good")
    assert good["ceiling_fraction"] > 0


def test_readable_table(table):
    result = invoke(str(table), "--human", "human.quality", "--metric", "good", "--metric",
                    "bad", "--statistic", "spearman", "--bootstrap", "30", "--compare",
                    "--resamples", "100")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("human.quality · spearman · segment")
    assert lines[1].split()[0] == "good" and "cluster 1" in lines[1] and "[" in lines[1]
    assert "meta-eval:" in result.stderr and "meta-eval:" not in result.stdout


@pytest.mark.parametrize("args,needle", [
    (["--human", "missing"], "field 'missing'"),
    (["--human", "human.quality", "--metric", "note"], "field 'note'"),
    (["--human", "human.quality", "--statistic", "spa"], "level 'system'"),
    (["--human", "human.quality", "--statistic", "nope"], "unknown statistic"),
    (["--human", "human.quality", "--exclude-system", "s9"], "unknown system"),
])
def test_bad_input_exits_2(table, args, needle):
    result = invoke(str(table), *args)
    assert result.returncode == 2
    assert needle in result.stderr


def test_non_numeric_cell_is_named_by_file_row_and_column(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("item,system,h,m\n1,a,1,0.5\n1,b,2,high\n", encoding="utf-8")
    proc = run_cli("meta-eval", str(path), "--human", "h", "--metric", "m")
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "line 3" in proc.stderr and "field 'm'" in proc.stderr
    assert proc.stdout == ""
