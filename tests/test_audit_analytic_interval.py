"""`audit --interval analytic|both`: every analytic interval of the JSON, Markdown and HTML
report cards equals scipy's (pearsonr(...).confidence_interval(), Fisher z) or the
Bonett-Wright / Fieller forms written out on scipy's spearman and kendall, on the units of
each block (the table's rows, or the systems' means), with ties, NaN cells and scores of
magnitude 1e150; grouped blocks say why they have none; `analytic` runs no bootstrap."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import run_cli

from meta_eval.pairs import snap


def scores_table(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(43)
    rows = []
    for item in range(10):
        for system in range(6):
            q = rng.normal() + system * 0.4
            rows.append({"item": f"i{item}", "system": f"s{system}",
                         "human.q": float(round(q + rng.normal() * 0.5)),
                         "near": round(q + rng.normal() * 0.7, 1),
                         "huge": (q + rng.normal() * 1.5) * 1e150})
    frame = pd.DataFrame(rows)
    frame.loc[[4, 9, 33], "near"] = np.nan
    frame.loc[[9, 21], "human.q"] = np.nan
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path, frame


def units(frame: pd.DataFrame, metric: str, level: str) -> tuple[np.ndarray, np.ndarray]:
    both = frame.dropna(subset=["human.q", metric])
    if level == "system":
        both = both.groupby("system")[["human.q", metric]].mean()
    return both["human.q"].to_numpy(float), both[metric].to_numpy(float)


def expected(statistic: str, h: np.ndarray, m: np.ndarray, confidence: float
             ) -> tuple[float, float]:
    n = len(h)
    if statistic == "pearson":
        ci = scipy.stats.pearsonr(h, m).confidence_interval(confidence)
        return float(ci.low), float(ci.high)
    if statistic == "spearman":
        r = float(scipy.stats.spearmanr(snap(h), snap(m)).statistic)
        se = math.sqrt((1 + r * r / 2) / (n - 3))
    else:
        r = float(scipy.stats.kendalltau(snap(h), snap(m)).statistic)
        se = math.sqrt(0.437 / (n - 4))
    q = float(scipy.stats.norm.ppf((1 + confidence) / 2))
    return math.tanh(math.atanh(r) - q * se), math.tanh(math.atanh(r) + q * se)


@pytest.mark.parametrize("interval", ["both", "analytic"])
def test_cards_carry_the_analytic_intervals(tmp_path: Path, interval: str) -> None:
    path, frame = scores_table(tmp_path)
    reports = [tmp_path / f"card.{ext}" for ext in ("json", "md", "html")]
    proc = run_cli("audit", str(path), "--human", "human.q", "--statistic", "pearson",
                   "--statistic", "spearman", "--statistic", "kendall", "--grouping", "none",
                   "--grouping", "item", "--interval", interval, "--ci", "0.9",
                   "--bootstrap", "20", "--resamples", "20", "--sentinel", "sentinel.random",
                   *[arg for r in reports for arg in ("--report", str(r))])
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(reports[0].read_text())
    markdown, html = reports[1].read_text(), reports[2].read_text()
    assert data["settings"]["interval"] == interval
    assert data["settings"]["bootstrap"] == (20 if interval == "both" else 0)
    checked = 0
    for block in data["blocks"]:
        for row in block["rows"]:
            if row["kind"] != "metric":
                continue
            assert ("ci_low" in row) == (interval == "both"), row
            if block["grouping"] != "none":
                assert "analytic_ci_low" not in row
                assert "per-group" in row["analytic_ci_note"]
                continue
            h, m = units(frame, row["metric"], block["level"])
            assert row["n"] == len(h)
            low, high = expected(block["statistic"], h, m, 0.9)
            assert row["analytic_ci_low"] == pytest.approx(low, rel=1e-9, abs=1e-12), row
            assert row["analytic_ci_high"] == pytest.approx(high, rel=1e-9, abs=1e-12), row
            assert f"|n={len(h)}|confidence=0.9" in row["analytic_ci_method"]
            cell = f"a[{row['analytic_ci_low']:.3f}, {row['analytic_ci_high']:.3f}]"
            assert cell in markdown and cell in html
            checked += 1
    assert checked == 3 * 2 * 2  # statistics x levels x metrics
    for form in ("fisher|z=atanh(r)|se=1/sqrt(n-3)|confidence=0.9",
                 "bonett-wright|z=atanh(r)|se=sqrt((1+r^2/2)/(n-3))|confidence=0.9",
                 "fieller|z=atanh(r)|se=sqrt(0.437/(n-4))|confidence=0.9"):
        assert form in markdown and form in html
    assert "90% analytic interval" in markdown


def test_default_cards_are_unchanged(tmp_path: Path) -> None:
    path, _ = scores_table(tmp_path)
    card = tmp_path / "card.json"
    proc = run_cli("audit", str(path), "--human", "human.q", "--bootstrap", "10",
                   "--resamples", "10", "--sentinel", "sentinel.random", "--report", str(card))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(card.read_text())
    assert all("analytic_ci_low" not in r and "analytic_ci_note" not in r
               for b in data["blocks"] for r in b["rows"])
    assert "a[" not in proc.stdout
