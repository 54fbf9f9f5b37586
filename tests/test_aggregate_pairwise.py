"""`aggregate` on the pairwise table a pairwise judge's scoring writes: which column holds the
verdicts, soft preferences in Bradley-Terry and Elo, bootstrap intervals over pairs, and the
wide shape refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from meta_eval.aggregation import RULES, Comparisons
from meta_eval.aggregation.tables import comparisons_from_pairwise

JUDGE = "judge.pairwise:model=m"


def run_json(path: Path, *args: str) -> tuple[dict[str, dict], str]:
    proc = run_cli("aggregate", str(path), *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return {o["rule"]: o for o in json.loads(proc.stdout)}, proc.stderr


def judge_table(rng: np.random.Generator, n_items: int = 30) -> pd.DataFrame:
    """The DESIGN.md pairwise table: every pair of three systems on every item, a human
    preference, one judge's combined verdict and its two orders (some soft, one missing)."""
    rows = []
    systems = ["M0", "M1", "M2"]
    strength = {"M0": 1.0, "M1": 0.0, "M2": -1.0}
    for item in range(n_items):
        for i in range(3):
            for j in range(i + 1, 3):
                a, b = systems[i], systems[j]
                if rng.random() < 0.5:
                    a, b = b, a
                p = float(expit(strength[a] - strength[b] + rng.normal()))
                ab = "a" if p > 0.5 else "b"
                ba = ab if rng.random() < 0.7 else "tie"
                combined: object = ab if ab == ba else "tie"
                if rng.random() < 0.3:
                    combined = round(p, 3)  # a soft verdict
                rows.append({"item": f"q{item}", "system_a": a, "system_b": b,
                             "category": "writing" if item % 2 else "math",
                             "human.pref": "A" if rng.random() < p else "B",
                             JUDGE: combined, f"{JUDGE}.ab": ab, f"{JUDGE}.ba": ba})
    rows[5][JUDGE] = None  # the judge failed on one pair
    return pd.DataFrame(rows)


def p_of(value: object, a: str, b: str) -> float:
    if isinstance(value, str):
        return {"a": 1.0, "b": 0.0, "tie": 0.5}.get(value.lower(), 1.0 if value == a else 0.0)
    return float(value)  # type: ignore[arg-type]


def loop_win_rate(frame: pd.DataFrame, column: str, system: str, baseline: str) -> float:
    """Plain loop: mean P(system beats baseline) over the rows with a verdict."""
    ps = []
    for _, row in frame.iterrows():
        v = row[column]
        if v is None or (isinstance(v, float) and np.isnan(v)):
            continue
        p = p_of(v, row["system_a"], row["system_b"])
        if (row["system_a"], row["system_b"]) == (system, baseline):
            ps.append(p)
        elif (row["system_a"], row["system_b"]) == (baseline, system):
            ps.append(1.0 - p)
    return 100.0 * float(np.mean(ps))


def test_the_judge_table_is_read_directly(tmp_path: Path) -> None:
    frame = judge_table(np.random.default_rng(0))
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    out, log = run_json(path, "-r", "win-rate:baseline=M2", "-r", "bradley-terry")
    assert f"verdicts from '{JUDGE}'" in log and "1 row(s) without a verdict left out" in log
    wr = out["win-rate:baseline=M2"]
    for s in ("M0", "M1"):
        assert wr["scores"][s] == pytest.approx(loop_win_rate(frame, JUDGE, s, "M2"))
    assert out["bradley-terry"]["ranking"] == ["M0", "M1", "M2"]
    # any other column on request: one order's verdicts, or the people's
    for column in (f"{JUDGE}.ab", f"{JUDGE}.ba", "human.pref"):
        out, log = run_json(path, "-r", "win-rate:baseline=M2", "--winner", column)
        assert f"verdicts from '{column}'" in log
        for s in ("M0", "M1"):
            assert out["win-rate:baseline=M2"]["scores"][s] == pytest.approx(
                loop_win_rate(frame, column, s, "M2"))


def test_several_judges_need_winner(tmp_path: Path) -> None:
    frame = judge_table(np.random.default_rng(1), n_items=3)
    frame["judge.other"] = "tie"
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("aggregate", str(path))
    assert proc.returncode == 2
    assert f"2 judges' verdict columns ['{JUDGE}', 'judge.other']" in proc.stderr
    assert "--winner COL" in proc.stderr
    out, _ = run_json(path, "-r", "win-rate", "--winner", "judge.other")
    assert set(out["win-rate"]["scores"].values()) == {50.0}
    proc = run_cli("aggregate", str(path), "--winner", "judge.nope")
    assert proc.returncode == 2 and "no column 'judge.nope'" in proc.stderr


def test_a_wide_table_of_pairs_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text(f"item,system,{JUDGE}\n1,M0 vs M1,1\n2,M0 vs M1,0\n1,M1 vs M2,0.5\n",
                    encoding="utf-8")
    proc = run_cli("aggregate", str(path))
    assert proc.returncode == 2, proc.stdout
    assert f"{path}, line 2, field 'system'" in proc.stderr
    assert "system_a" in proc.stderr and "system_b" in proc.stderr
    leaderboard = tmp_path / "lb.csv"
    leaderboard.write_text("system,t1\nA vs B,1\nB vs C,2\n", encoding="utf-8")
    assert run_cli("aggregate", str(leaderboard)).returncode == 2
    fine = tmp_path / "fine.csv"
    fine.write_text("system,t1\nA vs B,1\nC,2\n", encoding="utf-8")
    assert run_cli("aggregate", str(fine), "-r", "mean").returncode == 0


def test_winner_as_probability_in_the_old_shape(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("system_a,system_b,winner\nX,Y,0.75\nY,X,Y\nX,Z,TIE\nZ,Y,0.1\nZ,X,b\n",
                    encoding="utf-8")
    out, log = run_json(path, "-r", "win-rate")
    assert "(2 soft preferences)" in log
    # X: 0.75; row 2 names Y (system_a) the winner: 0; tie: 0.5; row 5 'b' = X wins: 1
    assert out["win-rate"]["scores"]["X"] == pytest.approx(100 * (0.75 + 0.0 + 0.5 + 1) / 4)
    assert out["win-rate"]["scores"]["Y"] == pytest.approx(100 * (0.25 + 1.0 + 0.9) / 3)
    assert out["win-rate"]["scores"]["Z"] == pytest.approx(100 * (0.5 + 0.1 + 0.0) / 3)


# -- soft preferences in Bradley-Terry and Elo -------------------------------------------------
def soft_comparisons(rng: np.random.Generator, m: int = 240, n: int = 4) -> Comparisons:
    a = rng.integers(0, n, size=m)
    b = (a + rng.integers(1, n, size=m)) % n
    theta = np.linspace(1.0, -1.0, n)
    outcome = np.clip(expit(theta[a] - theta[b] + rng.normal(size=m)), 0.05, 0.95)
    outcome[:40] = np.round(outcome[:40])  # some hard verdicts
    outcome[outcome == 0.5] = 0.51
    return Comparisons(systems=tuple(f"s{i}" for i in range(n)), a=a, b=b, outcome=outcome)


def independent_bt(a: np.ndarray, b: np.ndarray, p: np.ndarray, n: int) -> np.ndarray:
    """Bradley-Terry with fractional wins, by BFGS on the plain log-likelihood."""
    def nll(theta: np.ndarray) -> float:
        d = theta[a] - theta[b]
        return float(-(p * log_expit(d) + (1 - p) * log_expit(-d)).sum() + theta.sum() ** 2)

    theta = minimize(nll, np.zeros(n), method="BFGS", options={"gtol": 1e-10}).x
    return theta - theta.mean()


@pytest.mark.parametrize("seed", [0, 1])
def test_bradley_terry_counts_soft_preferences_as_fractional_wins(seed: int) -> None:
    comps = soft_comparisons(np.random.default_rng(seed))
    result = RULES["bradley-terry"].rank(comps)
    expected = independent_bt(comps.a, comps.b, comps.outcome, comps.n_systems)
    np.testing.assert_allclose([result.scores[s] for s in comps.systems], expected, atol=1e-5)
    # the same as splitting each row into a win of weight P and a loss of weight 1 - P
    split = Comparisons(comps.systems, np.r_[comps.a, comps.a], np.r_[comps.b, comps.b],
                        np.r_[np.ones(len(comps.a)), np.zeros(len(comps.a))],
                        weights=np.r_[comps.outcome, 1 - comps.outcome])
    np.testing.assert_allclose([RULES["bradley-terry"].rank(split).scores[s]
                                for s in comps.systems], expected, atol=1e-5)


def test_elo_takes_a_soft_verdict_as_the_game_score() -> None:
    comps = Comparisons(systems=("A", "B"), a=[0], b=[1], outcome=[0.8])
    result = RULES["elo"].with_options(k=32).rank(comps)
    # one game from 1000 each: E = 0.5, A gains K * (0.8 - 0.5)
    assert result.scores["A"] == pytest.approx(1000 + 32 * 0.3)
    assert result.scores["B"] == pytest.approx(1000 - 32 * 0.3)


def test_bootstrap_intervals_match_an_independent_resampling() -> None:
    comps = soft_comparisons(np.random.default_rng(7), m=120)
    n, seed = 40, 3
    result = RULES["bradley-terry"].with_options(bootstrap=n, seed=seed).rank(comps)
    rng = np.random.default_rng(seed)
    m = len(comps.a)
    draws = []
    for _ in range(n):
        idx = rng.integers(0, m, size=m)
        draws.append(independent_bt(comps.a[idx], comps.b[idx], comps.outcome[idx],
                                    comps.n_systems))
    low, high = np.quantile(draws, 0.025, axis=0), np.quantile(draws, 0.975, axis=0)
    for i, s in enumerate(comps.systems):
        assert result.extra["ci_low"][s] == pytest.approx(low[i], abs=1e-4)
        assert result.extra["ci_high"][s] == pytest.approx(high[i], abs=1e-4)
        assert result.extra["ci_low"][s] <= result.scores[s] <= result.extra["ci_high"][s]
    assert "from 40 bootstrap resamples of the compared pairs (seed 3)" in result.note
    # the point estimate is the full-data fit, unchanged by asking for intervals
    assert result.scores == RULES["bradley-terry"].rank(comps).scores


def test_elo_intervals_and_the_text_output(tmp_path: Path) -> None:
    frame = judge_table(np.random.default_rng(2), n_items=20)
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    out, _ = run_json(path, "-r", "elo:bootstrap=20,seed=1,permutations=5,level=0.9")
    elo = out["elo:bootstrap=20,seed=1,permutations=5,level=0.9"]
    for s, score in elo["scores"].items():
        assert elo["extra"]["ci_low"][s] < score < elo["extra"]["ci_high"][s]
    assert "90% percentile intervals from 20 bootstrap" in elo["note"]
    proc = run_cli("aggregate", str(path), "-r", "bradley-terry:bootstrap=30")
    assert proc.returncode == 0, proc.stderr
    assert "ci_low" in proc.stdout and "ci_high" in proc.stdout
    row = next(x for x in proc.stdout.splitlines() if x.strip().startswith("M0  "))
    score, low, high = (float(v) for v in row.split()[1:4])
    assert low <= score <= high


def test_bootstrap_needs_two_resamples() -> None:
    comps = soft_comparisons(np.random.default_rng(0), m=20)
    with pytest.raises(ValueError, match="bootstrap >= 2"):
        RULES["bradley-terry"].with_options(bootstrap=1).rank(comps)


def test_output_texts_give_lengths_in_characters() -> None:
    frame = pd.DataFrame({"system_a": ["A", "B"], "system_b": ["B", "A"], "winner": ["a", 0.2],
                          "output_a": ["héllo", ""], "output_b": ["hi", None]})
    comps = comparisons_from_pairwise(frame)
    assert comps.lengths[0].tolist() == [5.0, 2.0]
    assert comps.lengths[1, 0] == 0.0 and np.isnan(comps.lengths[1, 1])  # None: missing


def test_a_missing_length_stops_only_the_rule_that_needs_it(tmp_path: Path) -> None:
    """The table `score` writes: text verdicts (numbers as decimal text), Int64 lengths with
    an empty cell where an output was missing."""
    path = tmp_path / "pairs.csv"
    path.write_text(f"item,system_a,system_b,length_a,length_b,{JUDGE},{JUDGE}.ab,{JUDGE}.ba\n"
                    "1,X,Y,10,20,a,a,a\n2,X,Y,,30,0.25,b,\n3,Y,X,5,6,tie,a,b\n",
                    encoding="utf-8")
    out, _ = run_json(path, "-r", "win-rate:baseline=Y", "-r", "bradley-terry")
    assert out["win-rate:baseline=Y"]["scores"]["X"] == pytest.approx(100 * (1 + 0.25 + 0.5) / 3)
    proc = run_cli("aggregate", str(path), "-r", "lc-win-rate:baseline=Y")
    assert proc.returncode == 2 and "field 'length_a'" in proc.stderr


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_parquet_and_jsonl_with_pandas_missing_values(tmp_path: Path, suffix: str) -> None:
    """String verdict columns and Int64 lengths holding pd.NA, as `score` writes them."""
    frame = pd.DataFrame({
        "item": ["1", "2", "3", "4"], "system_a": ["X", "X", "Y", "X"],
        "system_b": ["Y", "Y", "X", "Y"],
        "length_a": pd.array([1, None, 3, 7], dtype="Int64"),
        "length_b": pd.array([4, 2, 3, 1], dtype="Int64"),
        JUDGE: pd.array(["a", None, "0.3", "tie"], dtype="string")})
    path = tmp_path / f"pairs{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    out, log = run_json(path, "-r", "win-rate:baseline=Y")
    assert "1 row(s) without a verdict left out" in log
    assert out["win-rate:baseline=Y"]["scores"]["X"] == pytest.approx(100 * (1 + 0.7 + 0.5) / 3)
    lc = run_json(path, "-r", "lc-win-rate:baseline=Y,instruction=false")[0]
    assert lc["lc-win-rate:baseline=Y,instruction=false"]["extra"]["n_total"]["X"] == 3
