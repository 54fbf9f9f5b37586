"""`meta-eval --pairwise` on a judge whose verdicts are probabilities (a soft pairwise judge,
AlpacaEval's weighted annotator, a logprob verdict): its Brier score and ECE against people's
preferences, checked against scikit-learn and a plain binning loop."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from sklearn.metrics import brier_score_loss


def _table(tmp_path: Path, seed: int) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n = 300
    human = rng.choice(["a", "b", "tie"], size=n, p=[0.45, 0.4, 0.15])
    truth = np.where(human == "a", 0.8, np.where(human == "b", 0.25, 0.5))
    soft = np.clip(truth + rng.normal(0, 0.2, n), 0, 1).round(3)
    soft[:10] = [0, 1, 0.5, 1, 0, 0.3, 0.7, 1e-9, 1 - 1e-9, 0.1]  # edges and exact verdicts
    frame = pd.DataFrame({"item": [f"i{k // 3}" for k in range(n)], "system_a": "x",
                          "system_b": [f"y{k % 3}" for k in range(n)], "human.pref": human,
                          "soft": soft,
                          "hard": np.where(soft > 0.5, "a", np.where(soft < 0.5, "b", "tie"))})
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    total = 0.0
    for b in range(bins):
        inside = [k for k in range(len(p))
                  if (b / bins <= p[k] < (b + 1) / bins) or (b == bins - 1 and p[k] == 1.0)]
        if inside:
            total += len(inside) / len(p) * abs(y[inside].mean() - p[inside].mean())
    return total


@pytest.mark.parametrize("seed", [0, 1])
def test_soft_judge_brier_and_ece_equal_references(tmp_path: Path, seed: int) -> None:
    path, frame = _table(tmp_path, seed)
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.pref",
                   "--bootstrap", "200", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {(r["metric"], r["statistic"]): r for r in json.loads(proc.stdout)}
    decided = (frame["human.pref"] != "tie").to_numpy()
    y = (frame["human.pref"][decided] == "a").to_numpy(dtype=float)
    p = frame["soft"][decided].to_numpy(dtype=float)
    brier = rows[("soft", "brier")]
    assert brier["value"] == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert brier["n"] == decided.sum()
    assert rows[("soft", "ece")]["value"] == pytest.approx(_ece(p, y), abs=1e-12)
    for statistic in ("brier", "ece"):
        row = rows[("soft", statistic)]
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
        assert row["better"] == "lower"
    # verdicts a/b/tie are not probabilities: no calibration for the hard judge
    assert ("hard", "brier") not in rows and ("hard", "accuracy") in rows
    text = run_cli("meta-eval", "pairwise", str(path), "--human", "human.pref")
    assert text.returncode == 0 and "brier" in text.stdout and "ece" in text.stdout
