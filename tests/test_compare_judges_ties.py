"""compare-judges and meta-eval --pairwise read human ties by one default (drop: the pairs
people called a tie are left out of the statistics against people), printed in both outputs;
`--human-ties class` keeps tie as a third label. Checked against numpy and scikit-learn's
`cohen_kappa_score` on random verdicts with ties, soft verdicts and missing cells."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from sklearn.metrics import cohen_kappa_score

LABELS = np.array(["a", "b", "tie"])


def _hard(value: object) -> str | None:
    """A verdict or P(A better) as a hard label (the README's coding)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str) and value.lower() in LABELS:
        return value.lower()
    p = float(value)  # type: ignore[arg-type]
    return "a" if p > 0.5 else "b" if p < 0.5 else "tie"


@pytest.fixture
def pairs(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(11)
    n = 80
    human = rng.choice(LABELS, n, p=[0.4, 0.35, 0.25]).astype(object)
    human[[3, 30]] = None  # missing human labels
    a = rng.choice(LABELS, n, p=[0.5, 0.3, 0.2]).astype(object)
    a[[5, 6, 7]] = ["0.5", "0.9", "0.2"]  # soft verdicts: tie, a, b
    a[[8, 9]] = ["TIE", "A"]
    b = rng.choice(LABELS, n, p=[0.3, 0.5, 0.2]).astype(object)
    frame = pd.DataFrame({"item": [f"i{k // 3}" for k in range(n)],
                          "system_a": ["x"] * n, "system_b": [f"y{k % 3}" for k in range(n)],
                          "human.pref": human, "j.ab": a, "j.ba": b})
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _by_statistic(*args: str) -> dict[str, dict]:
    proc = run_cli("compare-judges", *args, "--bootstrap", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    return {r["statistic"]: r for r in json.loads(proc.stdout)}


def _expected(frame: pd.DataFrame, keep_ties: bool) -> dict[str, float]:
    h, a, b = ([_hard(v) for v in frame[c]] for c in ("human.pref", "j.ab", "j.ba"))
    rows = [(x, y, z) for x, y, z in zip(h, a, b, strict=True)
            if x is not None and (keep_ties or x != "tie")]
    hh, aa, bb = (np.array(col) for col in zip(*rows, strict=True))
    return {"accuracy_a": float(np.mean(aa == hh)), "accuracy_b": float(np.mean(bb == hh)),
            "negative_flips": float(np.mean((aa == hh) & (bb != hh))),
            "positive_flips": float(np.mean((aa != hh) & (bb == hh))),
            "kappa_a_human": float(cohen_kappa_score(aa, hh)),
            "kappa_b_human": float(cohen_kappa_score(bb, hh)), "n": len(rows)}


@pytest.mark.parametrize("flag,keep_ties", [((), False), (("--human-ties", "drop"), False),
                                            (("--human-ties", "class"), True)])
def test_human_ties_against_numpy_and_sklearn(pairs, flag, keep_ties):
    path, frame = pairs
    got = _by_statistic(str(path), "--a", "j.ab", "--b", "j.ba", "--human", "human.pref",
                        *flag)
    expected = _expected(frame, keep_ties)
    for name in ("accuracy_a", "accuracy_b", "negative_flips", "positive_flips",
                 "kappa_a_human", "kappa_b_human"):
        assert got[name]["value"] == pytest.approx(expected[name], abs=1e-12), name
        assert got[name]["n"] == expected["n"]
    policy = "class" if keep_ties else "drop"
    assert {r["human_ties"] for r in got.values()} == {policy}
    # the judges against each other do not depend on people's ties
    assert got["flip_rate"]["n"] == len(frame)


def test_one_default_printed_in_both_commands(pairs):
    path, _ = pairs
    judges = _by_statistic(str(path), "--a", "j.ab", "--b", "j.ba", "--human", "human.pref")
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.pref", "--json")
    assert proc.returncode == 0, proc.stderr
    meta = {r["statistic"]: r for r in json.loads(proc.stdout) if r["metric"] == "j"}
    assert meta["accuracy-ab"]["human_ties"] == judges["accuracy_a"]["human_ties"] == "drop"
    assert meta["accuracy-ab"]["value"] == pytest.approx(judges["accuracy_a"]["value"])
    assert meta["accuracy-ba"]["value"] == pytest.approx(judges["accuracy_b"]["value"])
    text = run_cli("compare-judges", str(path), "--a", "j.ab", "--b", "j.ba", "--human",
                   "human.pref", "--bootstrap", "0")
    assert text.returncode == 0, text.stderr
    assert "human ties drop" in text.stdout.splitlines()[0]
    assert "left out of the statistics against people" in text.stderr
    meta_text = run_cli("meta-eval", "pairwise", str(path), "--human", "human.pref")
    assert "human ties drop" in meta_text.stdout


def test_human_ties_on_a_wide_table_is_an_input_error(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text("item,system,x,y,human.q\ni1,s1,1,2,1\ni1,s2,2,2,2\n")
    proc = run_cli("compare-judges", str(wide), "--a", "x", "--b", "y", "--human", "human.q",
                   "--human-ties", "drop")
    assert proc.returncode == 2
    assert "--human-ties" in proc.stderr and "is for a pairwise table" in proc.stderr
