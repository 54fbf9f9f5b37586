"""`meta-eval --statistic kappa|kappa-linear|qwk --interval analytic|both`: each kappa's
value, asymptotic se, Wald interval and p of kappa = 0 in --json against statsmodels'
cohens_kappa on the confusion table over the categories lo..hi (people's means rounded half
up, as the kappa kernel does), on random data with ties, NaN cells, declared --labels with
unused categories and categories at 2^900; grouped kappas say why they have none."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from scipy.stats import norm
from statsmodels.stats.inter_rater import cohens_kappa

WEIGHTS = {"kappa": None, "kappa-linear": "linear", "qwk": "quadratic"}


def table(tmp_path: Path, seed: int) -> tuple[Path, np.ndarray, np.ndarray, float]:
    """(path, people's categories k, the judge's, the unit a category k stands for)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 120))
    k = int(rng.integers(2, 6))
    truth = rng.integers(1, k + 1, n)
    judge = np.where(rng.random(n) < 0.6, truth, rng.integers(1, k + 1, n)).astype(float)
    unit = 2.0**900 if seed % 4 == 3 else 1.0
    # a mean of three raters, or at 2^900 integer categories k 2^900 (no fraction is left)
    people = truth + (rng.choice([0.0, 1 / 3, -1 / 3], n) if unit == 1.0 else 0.0)
    human, metric = people * unit, judge * unit
    human[rng.random(n) < 0.1] = np.nan
    metric[rng.random(n) < 0.1] = np.nan
    frame = pd.DataFrame({"item": [f"i{i // 4}" for i in range(n)],
                          "system": [f"s{i % 4}" for i in range(n)],
                          "human.q": human, "j": metric})
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    with np.errstate(invalid="ignore"):
        rounded = np.floor(people) + (people - np.floor(people) >= 0.5 - 1e-9)
    rounded[~np.isfinite(human)] = np.nan
    judged = np.where(np.isfinite(metric), judge, np.nan)
    return path, rounded, judged, unit


@pytest.mark.parametrize("seed", range(12))
def test_cli_kappa_intervals_are_statsmodels(tmp_path: Path, seed: int) -> None:
    path, h, m, unit = table(tmp_path, 4300 + seed)
    declared = seed % 4 == 2 and unit == 1.0
    labels = ("--labels", "0..7") if declared else ()
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--statistic", "kappa",
                   "--statistic", "kappa-linear", "--statistic", "qwk", "--interval",
                   "analytic", "--ci", "0.9", *labels, "--json")
    assert proc.returncode == 0, proc.stderr
    ok = np.isfinite(h) & np.isfinite(m)
    x, y = h[ok].astype(int), m[ok].astype(int)
    lo, hi = (0, 7) if declared else (min(x.min(), y.min()), max(x.max(), y.max()))
    counts = np.zeros((hi - lo + 1, hi - lo + 1))
    np.add.at(counts, (x - lo, y - lo), 1.0)
    rows = json.loads(proc.stdout)
    assert [r["statistic"] for r in rows] == ["kappa", "kappa-linear", "qwk"]
    for row in rows:
        weights = WEIGHTS[row["statistic"]]
        ref = cohens_kappa(counts) if weights is None else \
            cohens_kappa(counts, weights=np.arange(hi - lo + 1), wt=weights)
        assert row["n"] == int(ok.sum())
        assert row["value"] == pytest.approx(ref["kappa"], rel=1e-9, abs=1e-12)
        z = float(norm.ppf(0.95))
        assert row["analytic_se"] == pytest.approx(ref["std_kappa"], rel=1e-9, abs=1e-12)
        assert row["analytic_p_value"] == pytest.approx(ref["pvalue_two_sided"], rel=1e-9,
                                                        abs=1e-300)
        assert row["analytic_ci_low"] == pytest.approx(ref["kappa"] - z * ref["std_kappa"],
                                                       rel=1e-9, abs=1e-12)
        assert row["analytic_ci_high"] == pytest.approx(ref["kappa"] + z * ref["std_kappa"],
                                                        rel=1e-9, abs=1e-12)
        assert row["analytic_ci_method"].startswith("cohen-kappa-")
        assert f"|n={int(ok.sum())}|confidence=0.9" in row["analytic_ci_method"]


def test_grouped_and_text(tmp_path: Path) -> None:
    path, *_ = table(tmp_path, 7)
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--statistic", "qwk",
                   "--grouping", "item", "--interval", "analytic", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    assert "analytic_ci_low" not in row and "per-group kappas" in row["analytic_ci_note"]
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--statistic", "qwk",
                   "--interval", "both", "--bootstrap", "20")
    assert proc.returncode == 0, proc.stderr
    assert "cohen-kappa-quadratic [" in proc.stdout
