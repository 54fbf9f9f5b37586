"""`judgebench estimate --statistic win-rate`: each system's win rate against each other one
equals a direct computation on the pairwise table (the rows of the pair picked and oriented
here, PPI++ by the authors' ppi-python, the classical interval by hand), for both sides of
every pair, on verdicts written a/b/tie and as numbers, with ties, pairs of very different
sizes and labels almost all one way; the refusals exit 2 naming the column and line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest
from conftest import run_cli
from scipy.stats import norm

SYSTEMS = ("ant", "bee", "cat", "dog")
WORDS = {1.0: "a", 0.0: "b", 0.5: "tie"}


def pairs_table(path: Path, *, seed: int, words: bool) -> Path:
    """Pairs of four systems: one pair with 300 rows, one with 6, the rest ~40; each row in
    either order; the true verdict 1/0/0.5 with many ties, and for (ant, bee) almost always
    ant; the judge right 70% of the time, else a random verdict; about a third labelled
    (every row of the small pair but one)."""
    rng = np.random.default_rng(seed)
    rows = []
    sizes = {("ant", "bee"): 300, ("cat", "dog"): 6}
    for i, a in enumerate(SYSTEMS):
        for b in SYSTEMS[i + 1:]:
            for k in range(sizes.get((a, b), int(rng.integers(30, 50)))):
                if (a, b) == ("ant", "bee"):
                    truth = 1.0 if rng.random() < 0.97 else 0.5
                else:
                    truth = float(rng.choice([0.0, 0.5, 1.0], p=[0.3, 0.3, 0.4]))
                judge = truth if rng.random() < 0.7 else float(rng.choice([0.0, 0.5, 1.0]))
                swap = rng.random() < 0.5
                first, second = (b, a) if swap else (a, b)
                truth, judge = (1 - truth, 1 - judge) if swap else (truth, judge)
                labelled = (k < 5 if (a, b) == ("cat", "dog")
                            else rng.random() < 0.35 or k < 2)
                rows.append({"item": f"q{k:03d}", "system_a": first, "system_b": second,
                             "judge": WORDS[judge] if words else judge,
                             "human.pref": truth if labelled else np.nan})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def oriented(frame: pd.DataFrame, x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
    """(judge, human) of the rows comparing x and y, as P(x better)."""
    values = {"a": 1.0, "b": 0.0, "tie": 0.5}
    rows = frame[((frame["system_a"] == x) & (frame["system_b"] == y))
                 | ((frame["system_a"] == y) & (frame["system_b"] == x))]
    judge = np.asarray([values.get(v, v) for v in rows["judge"]], dtype=float)
    human = rows["human.pref"].to_numpy(dtype=float)
    flip = (rows["system_a"] == y).to_numpy()
    return np.where(flip, 1 - judge, judge), np.where(flip, 1 - human, human)


def direct(judge: np.ndarray, human: np.ndarray, confidence: float
           ) -> dict[str, tuple[float, float, float]]:
    """method -> (point, lower, upper) computed without judgebench."""
    z = norm.ppf(0.5 + confidence / 2)
    labelled = np.isfinite(human)
    y, yhat, rest = human[labelled], judge[labelled], judge[~labelled]
    se = y.std() / np.sqrt(y.size)
    out = {"human-only": (y.mean(), y.mean() - z * se, y.mean() + z * se)}
    se_judge = judge.std() / np.sqrt(judge.size)
    out["judge-only"] = (judge.mean(), judge.mean() - z * se_judge, judge.mean() + z * se_judge)
    if rest.size == 0:  # every row labelled: PPI++ is the human-only estimate
        out["win-rate-ppi++"] = out["human-only"]
    else:
        point = float(ppi_py.ppi_mean_pointestimate(y, yhat, rest)[0])
        (lower,), (upper,) = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=1 - confidence)
        out["win-rate-ppi++"] = (point, lower, upper)
    return out


def records(path: Path, *args: str) -> list[dict]:
    proc = run_cli("estimate", str(path), "--judge", "judge", "--human", "human.pref",
                   "--statistic", "win-rate", *args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize(("seed", "words", "confidence"),
                         [(0, True, 0.95), (1, False, 0.9), (2, True, 0.8)])
def test_every_side_of_every_pair_equals_the_direct_computation(
        tmp_path: Path, seed: int, words: bool, confidence: float) -> None:
    path = pairs_table(tmp_path / "pairs.csv", seed=seed, words=words)
    frame = pd.read_csv(path)
    found = records(path, "--confidence", str(confidence))
    keyed = {(r["system"], r["against"], r["method"]): r for r in found}
    assert len(keyed) == len(found) == 4 * 3 * 3  # 12 ordered pairs x 3 methods
    for x in SYSTEMS:
        for y in SYSTEMS:
            if x == y:
                continue
            judge, human = oriented(frame, x, y)
            for method, (point, lower, upper) in direct(judge, human, confidence).items():
                record = keyed[(x, y, method)]
                scale = 1e-12
                assert record["point"] == pytest.approx(point, abs=scale), (x, y, method)
                assert record["lower"] == pytest.approx(lower, abs=1e-10), (x, y, method)
                assert record["upper"] == pytest.approx(upper, abs=1e-10), (x, y, method)
                assert record["items"] == (judge.size if method != "human-only"
                                           else int(np.isfinite(human).sum()))
                assert record["biased"] == (method == "judge-only")
                assert "|statistic:win-rate|" in record["signature"]
            moved = keyed[(x, y, "win-rate-ppi++")]["moved"]
            assert moved == pytest.approx(keyed[(x, y, "win-rate-ppi++")]["point"]
                                          - keyed[(x, y, "judge-only")]["point"], abs=1e-12)
    lopsided = keyed[("ant", "bee", "win-rate-ppi++")]
    assert lopsided["point"] > 0.9 and lopsided["labels"] > 50
    assert keyed[("cat", "dog", "human-only")]["labels"] == 5


def test_a_pair_with_one_label_is_undefined_not_a_number(tmp_path: Path) -> None:
    path = pairs_table(tmp_path / "pairs.csv", seed=3, words=True)
    frame = pd.read_csv(path)
    small = frame["system_a"].isin(["cat", "dog"]) & frame["system_b"].isin(["cat", "dog"])
    keep = small & (frame["human.pref"].notna().cumsum() == frame["human.pref"].notna().cumsum()
                    [small & frame["human.pref"].notna()].min())
    frame.loc[small & ~keep, "human.pref"] = np.nan
    assert frame.loc[small, "human.pref"].notna().sum() == 1
    frame.to_csv(path, index=False)
    keyed = {(r["system"], r["against"], r["method"]): r for r in records(path)}
    for side in (("cat", "dog"), ("dog", "cat")):
        for method in ("human-only", "win-rate-ppi++"):
            record = keyed[(*side, method)]
            assert record["point"] is None and record["lower"] is None
            assert "1 of the 6 rows" in record["undefined"]
        assert keyed[(*side, "judge-only")]["point"] is not None
    assert keyed[("ant", "bee", "win-rate-ppi++")]["point"] is not None
    text = run_cli("estimate", str(path), "--judge", "judge", "--human", "human.pref",
                   "--statistic", "win-rate")
    assert text.returncode == 0, text.stderr
    assert "win-rate-ppi++: undefined: 1 of the 6 rows of cat against dog" in text.stdout
    assert text.stdout.count("against") - text.stdout.count("rows of") == 6  # each pair once


def test_target_width_names_unlabelled_pairs(tmp_path: Path) -> None:
    path = pairs_table(tmp_path / "pairs.csv", seed=4, words=False)
    frame = pd.read_csv(path)
    keyed = {(r["system"], r["against"], r["method"]): r
             for r in records(path, "--target-width", "0.3", "--next", "3")}
    record = keyed[("ant", "cat", "win-rate-ppi++")]
    assert record["labels_to_reach"] > 0
    assert len(record["next_items"]) == min(record["labels_to_reach"], 3)
    unlabelled = {f"{i} ({a} vs {b})" for i, a, b, h in frame[
        ["item", "system_a", "system_b", "human.pref"]].itertuples(index=False)
        if np.isnan(h) and {a, b} == {"ant", "cat"}}
    assert set(record["next_items"]) <= unlabelled
    assert keyed[("cat", "ant", "win-rate-ppi++")]["next_items"] == record["next_items"]


@pytest.mark.parametrize(("change", "args", "words"), [
    (lambda d: d.assign(judge=d["judge"].where(d.index != 4)), (),
     ("'judge'", "line 6", "every pair")),
    (lambda d: d.assign(judge=d["judge"].where(d.index != 2, "maybe")), (),
     ("'judge'", "line 4", "not a verdict")),
    (lambda d: d.assign(**{"human.pref": np.nan}), (), ("'human.pref'", "no labels")),
    (lambda d: d.assign(system_b=d["system_b"].where(d.index != 3, d["system_a"])), (),
     ("compares system", "with itself")),
    (lambda d: d, ("--compare",), ("--compare",)),
    (lambda d: d, ("--by", "none"), ("--by",)),
    (lambda d: d, ("--method", "rogan-gladen"), ("--method",)),
])
def test_bad_input_exits_2(tmp_path: Path, change: object, args: tuple[str, ...],
                           words: tuple[str, ...]) -> None:
    path = pairs_table(tmp_path / "pairs.csv", seed=5, words=True)
    change(pd.read_csv(path)).to_csv(path, index=False)  # type: ignore[operator]
    proc = run_cli("estimate", str(path), "--judge", "judge", "--human", "human.pref",
                   "--statistic", "win-rate", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_the_bundled_pairs_estimate_with_labels_hidden(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[1] / "examples" / "summeval-pairs.csv"
    frame = pd.read_csv(source)
    items = list(dict.fromkeys(frame["item"]))
    frame.loc[frame["item"].isin(items[1::2]), "human.relevance"] = np.nan  # 2 of 4 articles
    path = tmp_path / "half.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("estimate", str(path), "--judge", "lexical.chrf", "--human",
                   "human.relevance", "--statistic", "win-rate", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    systems = sorted(set(frame["system_a"]) | set(frame["system_b"]))
    corrected = [r for r in found if r["method"] == "win-rate-ppi++"]
    assert len(corrected) == len(systems) * (len(systems) - 1)
    assert all(r["labels"] == 2 and r["items"] == 4 for r in corrected)
