"""One name per accuracy on a pairwise table, the same in `meta-eval pairwise` and
`compare-judges`: `accuracy` is the mean of the two orders' accuracies (LLMBar's Acc.),
`accuracy-combined` the combined verdict's (a tie on a decided pair wrong), `accuracy-ab` and
`accuracy-ba` an order's; each against a direct count on random verdicts with ties and
missing cells, and the always-first judge that tells the first two apart (0.5 against 0)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

LABELS = np.array(["a", "b", "tie"])


def table(path: Path, seed: int, n: int = 300) -> pd.DataFrame:
    """People prefer a, b or call a tie; judge `first` names whichever output is shown first;
    judge `noisy` answers at random in each order (ties and empty cells included), and its
    combined column is judge.pairwise's rule (the common verdict, else a tie)."""
    rng = np.random.default_rng(seed)
    human = rng.choice(LABELS, size=n, p=[0.45, 0.45, 0.1])
    ab = rng.choice([*LABELS, ""], size=n, p=[0.4, 0.3, 0.2, 0.1])
    ba = rng.choice([*LABELS, ""], size=n, p=[0.3, 0.4, 0.2, 0.1])
    combined = np.where(ab == "", ba, np.where(ba == "", ab, np.where(ab == ba, ab, "tie")))
    frame = pd.DataFrame({"item": [f"i{k // 2}" for k in range(n)], "system_a": "x",
                          "system_b": [f"y{k % 2}" for k in range(n)], "human": human,
                          "first": "tie", "first.ab": "a", "first.ba": "b",
                          "noisy": combined, "noisy.ab": ab, "noisy.ba": ba})
    frame.to_csv(path, index=False)
    return frame


def right(verdict: np.ndarray, human: np.ndarray) -> float:
    """The share of the pairs people decided (their ties dropped) where the verdict is
    theirs: a judge's tie is wrong; empty cells are left out."""
    keep = (human != "tie") & (verdict != "")
    return float(np.mean(verdict[keep] == human[keep]))


@pytest.mark.parametrize("seed", [0, 1])
def test_each_accuracy_is_its_own_definition_in_both_commands(tmp_path: Path,
                                                              seed: int) -> None:
    frame = table(tmp_path / "pairs.csv", seed)
    h = frame["human"].to_numpy()
    out = run_cli("meta-eval", "pairwise", str(tmp_path / "pairs.csv"), "--human", "human",
                  "--judge", "first", "--judge", "noisy", "--bootstrap", "0", "--json",
                  check=True)
    meta = {(r["metric"], r["statistic"]): r["value"] for r in json.loads(out.stdout)}
    decided = h != "tie"
    assert meta[("first", "accuracy")] == pytest.approx(0.5, abs=1e-15)
    assert meta[("first", "accuracy-combined")] == 0.0
    assert meta[("first", "accuracy-ab")] == pytest.approx(np.mean(h[decided] == "a"))
    ab, ba = frame["noisy.ab"].to_numpy(), frame["noisy.ba"].to_numpy()
    combined = frame["noisy"].to_numpy()
    assert meta[("noisy", "accuracy-ab")] == pytest.approx(right(ab, h), abs=1e-15)
    assert meta[("noisy", "accuracy-ba")] == pytest.approx(right(ba, h), abs=1e-15)
    assert meta[("noisy", "accuracy")] == pytest.approx((right(ab, h) + right(ba, h)) / 2,
                                                        abs=1e-15)
    assert meta[("noisy", "accuracy-combined")] == pytest.approx(right(combined, h),
                                                                 abs=1e-15)
    for a, b, names in (("first", "noisy", ("accuracy-combined_a", "accuracy-combined_b")),
                        ("noisy.ab", "noisy.ba", ("accuracy-ab_a", "accuracy-ba_b"))):
        out = run_cli("compare-judges", str(tmp_path / "pairs.csv"), "--a", a, "--b", b,
                      "--human", "human", "--bootstrap", "0", "--json", check=True)
        rows = json.loads(out.stdout)
        current = {r["statistic"]: r["value"] for r in rows if "deprecated" not in r}
        assert not {"accuracy", "accuracy_a", "accuracy_b"} & set(current)
        # compare-judges counts the pairs where both judges and people have a label: over
        # them, each is the count of its column's verdicts equal to people's
        va, vb = frame[a].to_numpy(), frame[b].to_numpy()
        both = (va != "") & (vb != "")
        for name, verdicts in zip(names, (va, vb), strict=True):
            assert current[name] == pytest.approx(right(verdicts[both], h[both]),
                                                  abs=1e-15), name
        if a == "first":  # no empty cell in either: the very numbers of meta-eval
            assert current["accuracy-combined_a"] == meta[("first", "accuracy-combined")]
            assert current["accuracy-combined_b"] == pytest.approx(
                meta[("noisy", "accuracy-combined")], abs=1e-15)
        # the old names still answer, for one release, marked deprecated
        old = {r["statistic"]: r for r in rows if "deprecated" in r}
        assert old["accuracy_a"]["value"] == current[names[0]]
        assert old["accuracy_b"]["deprecated"].startswith(f"renamed {names[1]}")
        text = run_cli("compare-judges", str(tmp_path / "pairs.csv"), "--a", a, "--b", b,
                       "--human", "human", "--bootstrap", "0", check=True).stdout
        assert names[0] in text and "accuracy_a" not in text


def test_a_wide_table_keeps_its_score_accuracy(tmp_path: Path) -> None:
    """On a scores table a judge is right when its score is the label (within --tolerance):
    not a pairwise accuracy, so its name stays."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(40)], "system": "s",
                          "human": rng.integers(1, 6, size=40),
                          "j1": rng.integers(1, 6, size=40), "j2": rng.integers(1, 6, size=40)})
    frame.to_csv(tmp_path / "wide.csv", index=False)
    rows = json.loads(run_cli("compare-judges", str(tmp_path / "wide.csv"), "--a", "j1", "--b",
                              "j2", "--human", "human", "--bootstrap", "0", "--json",
                              check=True).stdout)
    found = {r["statistic"]: r["value"] for r in rows}
    assert found["accuracy_a"] == pytest.approx(np.mean(frame["j1"] == frame["human"]))
    assert not any("deprecated" in r for r in rows)
