"""`bench --interval analytic|both`: the analytic interval of each ungrouped correlation in
the JSON, text, Markdown and HTML cards equals scipy's (pearsonr(...).confidence_interval(),
Fisher z) or the Bonett-Wright / Fieller forms written out on scipy's spearman and kendall,
recomputed from the scored table the bench kept (--workdir: QAGS-XSum's first 60 rows, the
human column with ties and the stored UniEval baseline); grouped protocols get none."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import run_cli
from test_bench_like_with_like import plugin_args

from meta_eval.pairs import snap


def expected(statistic: str, h: np.ndarray, m: np.ndarray) -> tuple[float, float]:
    n = len(h)
    if statistic == "pearson":
        ci = scipy.stats.pearsonr(h, m).confidence_interval(0.95)
        return float(ci.low), float(ci.high)
    if statistic == "spearman":
        r = float(scipy.stats.spearmanr(snap(h), snap(m)).statistic)
        se = math.sqrt((1 + r * r / 2) / (n - 3))
    else:
        r = float(scipy.stats.kendalltau(snap(h), snap(m)).statistic)
        se = math.sqrt(0.437 / (n - 4))
    q = float(scipy.stats.norm.ppf(0.975))
    return math.tanh(math.atanh(r) - q * se), math.tanh(math.atanh(r) + q * se)


def test_cards_carry_the_analytic_intervals(tmp_path: Path) -> None:
    common = (*plugin_args(), "bench", "lexical.length", "--suite", "qags-xsum", "--limit",
              "60", "--store", str(tmp_path / "b.db"))
    proc = run_cli(*common, "--interval", "both", "--bootstrap", "30", "--workdir",
                   str(tmp_path / "wd"), "--json")
    assert proc.returncode == 0, proc.stderr
    (card,) = json.loads(proc.stdout)["cards"]
    scores = pd.read_csv(tmp_path / "wd" / "qags-xsum" / "scores.csv")
    checked = 0
    for row in card["rows"]:
        if row["kind"] == "ceiling" or row.get("value") is None:
            continue
        column = row.get("spec") or row["label"]
        both = scores[["human.consistency", column]].dropna()
        h, m = both["human.consistency"].to_numpy(float), both[column].to_numpy(float)
        assert row["n"] == len(h) == 60
        low, high = expected(row["statistic"], h, m)
        assert row["analytic_ci_low"] == pytest.approx(low, rel=1e-9, abs=1e-12), row
        assert row["analytic_ci_high"] == pytest.approx(high, rel=1e-9, abs=1e-12), row
        assert row["analytic_ci_method"].endswith("|n=60|confidence=0.95")
        assert "ci_low" in row  # both: the bootstrap interval too
        checked += 1
    assert checked == 6  # yours and UniEval x pearson, spearman, kendall
    rows = [r for r in card["rows"] if r.get("analytic_ci_low") is not None]
    for fmt in ("text", "markdown", "html"):
        out = run_cli(*common, "--interval", "analytic", "-f", fmt)
        assert out.returncode == 0, out.stderr
        for row in rows:
            digits = row.get("precision") or 3
            cell = (f"a[{row['analytic_ci_low']:.{digits}f}, "
                    f"{row['analytic_ci_high']:.{digits}f}]")
            assert cell in out.stdout, (fmt, cell)
        fence = "`" if fmt == "markdown" else ""
        assert f"a[...]: the analytic interval, {fence}fisher|z=atanh(r)|se=1/sqrt(n-3)|" \
               f"confidence=0.95{fence}" in out.stdout
        assert "bonett-wright|" in out.stdout and "fieller|" in out.stdout


def test_both_needs_a_bootstrap_and_grouped_protocols_get_none(tmp_path: Path) -> None:
    common = (*plugin_args(), "bench", "lexical.length", "--suite", "summeval", "--limit",
              "16", "--store", str(tmp_path / "b.db"))
    proc = run_cli(*common, "--interval", "both", "--bootstrap", "0")
    assert proc.returncode == 2 and "'--interval'" in proc.stderr
    proc = run_cli(*common, "--interval", "analytic", "--json")
    assert proc.returncode == 0, proc.stderr
    (card,) = json.loads(proc.stdout)["cards"]
    grouped = [r for r in card["rows"] if r["protocol"].startswith("summary-")
               and r["kind"] == "yours"]
    assert grouped and all("analytic_ci_low" not in r and "ci_low" not in r for r in grouped)
    system = [r for r in card["rows"] if r["protocol"].startswith("system-")
              and r["kind"] == "yours" and r.get("value") is not None]
    assert system and all("analytic_ci_low" in r for r in system)
