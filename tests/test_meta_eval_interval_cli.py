"""`meta-eval --interval analytic|bootstrap|both`: the analytic interval in the JSON is
scipy's Fisher-z interval (pearson) and the Bonett-Wright / Fieller forms written out from
scipy's correlations (spearman, kendall) of the table's units, NaN and ties included; the
default output is unchanged; grouped averages get a note, not a number; bad combinations
exit 2 naming --interval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from conftest import run_cli, write_wide_table

from meta_eval.pairs import snap


def table(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(4343)
    latent = rng.normal(size=(30, 4))
    human = np.round(latent + rng.normal(size=latent.shape), 0)  # ratings: ties
    metric = (latent + rng.normal(size=latent.shape) * 0.7) * 1e200  # a huge scale
    human[rng.random(human.shape) < 0.1] = np.nan
    metric[rng.random(metric.shape) < 0.1] = np.nan
    return write_wide_table(tmp_path / "s.csv", human, {"m": metric}), human, metric


def rows(tmp_path: Path, *args: str) -> list[dict]:
    path = tmp_path / "s.csv"
    proc = run_cli("meta-eval", str(path), "--human", "human.x", "--metric", "m", "--json",
                   *args, check=True)
    return list(json.loads(proc.stdout))


def test_analytic_intervals_are_the_papers(tmp_path: Path) -> None:
    _, human, metric = table(tmp_path)
    ok = np.isfinite(human) & np.isfinite(metric)
    h, m = human[ok], metric[ok]
    n = int(ok.sum())
    q = scipy.stats.norm.ppf(0.95)
    fisher = scipy.stats.pearsonr(h, m).confidence_interval(0.9)
    rho = float(scipy.stats.spearmanr(snap(h), snap(m)).statistic)
    tau = float(scipy.stats.kendalltau(snap(h), snap(m)).statistic)
    se_rho = math.sqrt((1 + rho**2 / 2) / (n - 3))
    se_tau = math.sqrt(0.437 / (n - 4))
    want = {"pearson": (float(fisher.low), float(fisher.high)),
            "spearman": (math.tanh(math.atanh(rho) - q * se_rho),
                         math.tanh(math.atanh(rho) + q * se_rho)),
            "kendall": (math.tanh(math.atanh(tau) - q * se_tau),
                        math.tanh(math.atanh(tau) + q * se_tau))}
    got = rows(tmp_path, "--statistic", "pearson", "--statistic", "spearman",
               "--statistic", "kendall", "--interval", "analytic", "--ci", "0.9")
    assert [r["statistic"] for r in got] == ["pearson", "spearman", "kendall"]
    for row in got:
        low, high = want[row["statistic"]]
        assert row["n"] == n
        assert math.isclose(row["analytic_ci_low"], low, rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(row["analytic_ci_high"], high, rel_tol=1e-9, abs_tol=1e-12)
        assert row["analytic_ci_method"].endswith(f"|n={n}|confidence=0.9")
        assert "ci_low" not in row
    methods = [r["analytic_ci_method"].split("|")[0] for r in got]
    assert methods == ["fisher", "bonett-wright", "fieller"]


def test_default_both_text_and_notes(tmp_path: Path) -> None:
    table(tmp_path)
    default = rows(tmp_path, "--bootstrap", "30")
    assert "ci_low" in default[0]
    assert not any(k.startswith("analytic") for k in default[0])
    both = rows(tmp_path, "--bootstrap", "30", "--interval", "both")[0]
    assert both["ci_low"] == default[0]["ci_low"] and "analytic_ci_low" in both
    grouped = rows(tmp_path, "--grouping", "item", "--interval", "analytic")[0]
    assert "analytic_ci_low" not in grouped
    assert "per-group" in grouped["analytic_ci_note"]
    mae = rows(tmp_path, "--statistic", "mae", "--interval", "analytic")[0]
    assert "no analytic interval for mae" in mae["analytic_ci_note"]
    text = run_cli("meta-eval", str(tmp_path / "s.csv"), "--human", "human.x", "--metric", "m",
                   "--interval", "analytic", check=True).stdout
    assert f"fisher [{both['analytic_ci_low']:.4f}, {both['analytic_ci_high']:.4f}]" in text


def test_bad_combinations_exit_2_naming_the_option(tmp_path: Path) -> None:
    path = str(table(tmp_path)[0])
    for args, words in ((("--interval", "both"), "needs --bootstrap"),
                        (("--interval", "analytic", "--bootstrap", "10"), "drop --bootstrap")):
        proc = run_cli("meta-eval", path, "--human", "human.x", "--metric", "m", *args)
        assert proc.returncode == 2, proc.stderr
        assert "--interval" in proc.stderr and words in proc.stderr


def test_task_refuses_an_unknown_interval() -> None:
    from meta_eval.task import Task

    with pytest.raises(ValueError, match="analytic, both"):
        Task(human="human.x", interval="fisher")
