"""`--failed-as`: a failed verdict counted missing, wrong or tie (pairwise) and missing, min,
max or a value (numeric), on hand-built tables with failures whose every statistic is
computed here independently (plain loops, scikit-learn's cohen_kappa_score, scipy), and
LLMBar's own evaluate.py loop for `wrong`."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import column as column_of
from conftest import run_cli
from sklearn.metrics import cohen_kappa_score

VERDICTS = ["a", "b", "tie", "failed", ""]


def random_pairs(seed: int, n: int = 80, *, gold_ties: bool = True) -> pd.DataFrame:
    """Pairs with gold labels, two judges with both orders (one also with a combined
    column), verdicts a/b/tie, `failed` and empty cells; items repeat."""
    rng = np.random.default_rng(seed)
    gold = ["a", "b", "tie"] if gold_ties else ["a", "b"]
    frame = pd.DataFrame({
        "item": [f"i{k}" for k in rng.integers(0, n // 2, n)],
        "system_a": [f"s{k}" for k in range(n)], "system_b": "base",
        "human.gold": rng.choice(gold, n),
    })
    for judge in ("j1", "j2"):
        for order in ("ab", "ba"):
            frame[f"{judge}.{order}"] = rng.choice(VERDICTS, n, p=[.3, .3, .12, .18, .1])
    frame["j2"] = rng.choice(VERDICTS, n, p=[.35, .35, .1, .15, .05])
    return frame


def counted(value: str, convention: str) -> str | None:
    """A cell as the convention reads it: None (missing), or a label ('failed' its own)."""
    if value == "":
        return None
    if value == "failed":
        return {"missing": None, "tie": "tie", "wrong": "failed"}[convention]
    return value


def credit(v: str | None, h: str | None, ties: str) -> float | None:
    if v is None or h is None or (ties == "drop" and h == "tie"):
        return None
    if v == h:
        return 1.0
    if ties == "half" and v != "failed" and "tie" in (v, h):
        return 0.5
    return 0.0


def mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def kappa(x: list[str | None], y: list[str | None]) -> float | None:
    both = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    if not both or len({v for pair in both for v in pair}) < 2:
        return None
    value = cohen_kappa_score([a for a, _ in both], [b for _, b in both])
    return None if math.isnan(value) else float(value)


def combined_of(ab: str, ba: str, convention: str) -> str | None:
    """judge.pairwise's combined verdict of two orders: failed where an order failed."""
    if "failed" in (ab, ba):
        return counted("failed", convention)
    x, y = counted(ab, convention), counted(ba, convention)
    if x is None or y is None:
        return x if y is None else y
    return x if x == y else "tie"


def expected(frame: pd.DataFrame, judge: str, convention: str, ties: str
             ) -> dict[str, tuple[float | None, int]]:
    """Every statistic of `judge` and how many pairs it found failed, by hand."""
    gold = [None if g == "" else g for g in frame["human.gold"]]
    raw_ab, raw_ba = list(frame[f"{judge}.ab"]), list(frame[f"{judge}.ba"])
    ab = [counted(v, convention) for v in raw_ab]
    ba = [counted(v, convention) for v in raw_ba]
    if judge in frame.columns:
        raw_c = list(frame[judge])
        combined = [counted(v, convention) for v in raw_c]
        failed_c = sum(v == "failed" for v in raw_c)
    else:
        combined = [combined_of(x, y, convention) for x, y in zip(raw_ab, raw_ba, strict=True)]
        failed_c = sum("failed" in (x, y) for x, y in zip(raw_ab, raw_ba, strict=True))
    c_ab = [credit(v, h, ties) for v, h in zip(ab, gold, strict=True)]
    c_ba = [credit(v, h, ties) for v, h in zip(ba, gold, strict=True)]
    both = [min(x, y) for x, y in zip(c_ab, c_ba, strict=True)
            if x is not None and y is not None]
    pairs = [(x, y) for x, y in zip(ab, ba, strict=True) if x is not None and y is not None]
    verdicts = [v for v in ab + ba if v is not None]
    kappa_gold = [None if ties == "drop" and h == "tie" else h for h in gold]
    acc_ab, acc_ba = mean(c_ab), mean(c_ba)
    n_ab, n_ba = sum(v == "failed" for v in raw_ab), sum(v == "failed" for v in raw_ba)
    n_any = sum("failed" in (x, y) for x, y in zip(raw_ab, raw_ba, strict=True))
    return {
        "accuracy-ab": (acc_ab, n_ab), "accuracy-ba": (acc_ba, n_ba),
        "accuracy": (None if acc_ab is None or acc_ba is None else (acc_ab + acc_ba) / 2,
                     n_any),
        "both-correct": (mean(list(both)), n_any),
        "consistency": (mean([float(x == y) for x, y in pairs]), n_any),
        "tie-rate": (sum(v == "tie" for v in verdicts) / len(verdicts), n_any),
        "kappa-orders": (kappa(ab, ba), n_any),
        "kappa": (kappa(combined, kappa_gold), failed_c),
    }


def run_pairwise(path: Path, *args: str) -> list[dict]:
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.gold", "--json",
                   *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("ties", ["drop", "half", "class"])
@pytest.mark.parametrize("convention", ["missing", "wrong", "tie"])
def test_every_pairwise_statistic_under_each_convention(tmp_path, seed, ties, convention):
    frame = random_pairs(seed)
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    rows = run_pairwise(path, "--failed-as", convention, "--human-ties", ties)
    checked = 0
    for judge in ("j1", "j2"):
        for statistic, (value, failed) in expected(frame, judge, convention, ties).items():
            row = next(r for r in rows if r["metric"] == judge and r["statistic"] == statistic)
            assert row["failed_as"] == convention
            assert row["failed"]["rows"] == failed, (judge, statistic)
            assert row["failed"]["told_by"] == "cells"
            if value is None:
                assert row["value"] is None, (judge, statistic)
            else:
                assert row["value"] == pytest.approx(value, abs=1e-12), (judge, statistic)
            checked += 1
    assert checked == 16


def test_counted_as_is_stated_per_statistic(tmp_path):
    path = tmp_path / "pairs.csv"
    random_pairs(3).to_csv(path, index=False)
    words = {r["statistic"]: r["failed"]["counted_as"]
             for r in run_pairwise(path, "--failed-as", "wrong") if r["metric"] == "j1"}
    assert words["accuracy"] == "wrong (credit 0)"
    assert words["consistency"] == "a value of its own: two failed orders agree"
    assert words["kappa-orders"] == "a class of its own"
    missing = run_pairwise(path)
    assert {r["failed"]["counted_as"] for r in missing if "failed" in r} == {"dropped"}
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.gold",
                   "--failed-as", "tie")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "human.gold · human ties drop · failed as tie"
    assert "failed verdicts (pairs):\n  j1: " in proc.stdout
    assert "empty cells are missing" in proc.stderr


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_wrong_is_llmbar_evaluate_py(tmp_path, seed):
    """LLMBar's evaluate.py loop (princeton-nlp/LLMBar, LLMEvaluator/evaluate.py), with a
    parse failure as its None winner: correct_False/True/average/both and equal."""
    rng = np.random.default_rng(seed)
    n = 50
    label = rng.choice(["1", "2"], n)
    winners = {s: rng.choice(["1", "2", None], n, p=[.45, .4, .15]) for s in ("False", "True")}
    correct_false = correct_true = correct_both = equal = 0
    for k in range(n):
        out_false, out_true = winners["False"][k], winners["True"][k]
        correct_false += out_false == label[k]
        correct_true += out_true == label[k]
        correct_both += (out_false == label[k]) and (out_true == label[k])
        equal += out_true == out_false
    word = {"1": "a", "2": "b", None: "failed"}
    frame = pd.DataFrame({"item": range(n), "system_a": "o1", "system_b": "o2",
                          "human.gold": [word[v] for v in label],
                          "m.ab": [word[v] for v in winners["False"]],
                          "m.ba": [word[v] for v in winners["True"]]})
    path = tmp_path / "llmbar.csv"
    frame.to_csv(path, index=False)
    got = {r["statistic"]: r["value"] for r in run_pairwise(path, "--failed-as", "wrong")}
    assert got["accuracy-ab"] == pytest.approx(correct_false / n, abs=1e-12)
    assert got["accuracy-ba"] == pytest.approx(correct_true / n, abs=1e-12)
    assert got["accuracy"] == pytest.approx((correct_false + correct_true) / 2 / n, abs=1e-12)
    assert got["both-correct"] == pytest.approx(correct_both / n, abs=1e-12)
    assert got["consistency"] == pytest.approx(equal / n, abs=1e-12)


def test_sidecar_statuses_tell_failed_from_never_judged(tmp_path):
    """A table written by `score`: its empty cells failed when the sidecar counts as many
    failed scores; an order cell failed on a failed row; counts that differ leave them
    missing, with a note."""
    frame = pd.DataFrame({
        "item": ["1", "2", "3", "4", "5", "6"], "system_a": "x", "system_b": "y",
        "human.gold": ["a", "b", "a", "b", "a", "b"],
        "j": ["a", None, None, "b", "a", "b"],
        "j.ab": ["a", "a", None, "b", "a", "b"],
        "j.ba": ["a", None, None, "b", "a", "b"],
    })
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    sidecar = {"table": "pairwise", "columns": {"j": {"metric": "judge.pairwise",
                                                      "statuses": {"ok": 4, "parse_error": 2}}}}
    Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    rows = {r["statistic"]: r for r in run_pairwise(path, "--failed-as", "wrong")}
    gold = ["a", "b", "a", "b", "a", "b"]
    ab = ["a", "a", "failed", "b", "a", "b"]
    ba = ["a", "failed", "failed", "b", "a", "b"]
    combined = ["a", "failed", "failed", "b", "a", "b"]
    assert rows["accuracy-ab"]["value"] == pytest.approx(
        sum(x == g for x, g in zip(ab, gold, strict=True)) / 6)
    assert rows["accuracy-ba"]["value"] == pytest.approx(
        sum(x == g for x, g in zip(ba, gold, strict=True)) / 6)
    assert rows["consistency"]["value"] == pytest.approx(
        sum(x == y for x, y in zip(ab, ba, strict=True)) / 6)
    assert rows["kappa"]["value"] == pytest.approx(cohen_kappa_score(combined, gold))
    assert rows["kappa"]["failed"] == {"rows": 2, "counted_as": "a class of its own",
                                       "told_by": "sidecar"}
    assert rows["accuracy-ab"]["failed"]["rows"] == 1
    sidecar["columns"]["j"]["statuses"] = {"ok": 4, "parse_error": 1, "skipped": 1}
    Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.gold", "--json",
                   "--failed-as", "wrong")
    assert proc.returncode == 0, proc.stderr
    assert "the sidecar counts 1 failed scores but 2 cells are empty" in proc.stderr
    rows = {r["statistic"]: r for r in json.loads(proc.stdout)}
    assert rows["accuracy-ab"]["value"] == pytest.approx(4 / 5)  # row 3 missing: dropped
    assert rows["kappa"]["failed"]["rows"] == 0


def test_bad_convention_is_exit_2(tmp_path):
    path = tmp_path / "pairs.csv"
    random_pairs(0, 10).to_csv(path, index=False)
    proc = run_cli("meta-eval", "pairwise", str(path), "--human", "human.gold",
                   "--failed-as", "min")
    assert proc.returncode == 2
    assert "--failed-as" in proc.stderr and "missing, wrong, tie" in proc.stderr


def random_scores(seed: int, n_items: int = 12, systems: int = 4) -> pd.DataFrame:
    """A wide table: a 1-5 judge with ties, a score with extreme values; `failed` and empty
    cells in both; a human column with ties and missing cells."""
    rng = np.random.default_rng(seed)
    n = n_items * systems
    judge = rng.integers(1, 6, n).astype(object)
    wide = rng.choice([-1e300, -1.5, 0.0, 2.25, 1e300, 7.0], n).astype(object)
    for column in (judge, wide):
        column[rng.random(n) < 0.15] = "failed"
        column[rng.random(n) < 0.08] = None
    human = rng.integers(1, 4, n).astype(float)
    human[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"item": np.repeat([f"i{k}" for k in range(n_items)], systems),
                         "system": np.tile([f"s{k}" for k in range(systems)], n_items),
                         "judge.rubric": judge, "other": wide, "human.q": human})


def filled(values: pd.Series, convention: str) -> tuple[np.ndarray, str]:
    """The column as the convention reads it, by hand, and how it says it counted them."""
    failed = values.map(lambda v: v == "failed").to_numpy(dtype=bool)
    numbers = np.array([np.nan if v is None or v == "failed" else float(v) for v in values])
    if convention == "missing":
        return numbers, "dropped"
    if convention in ("min", "max"):
        value = float(np.nanmin(numbers) if convention == "min" else np.nanmax(numbers))
        return np.where(failed, value, numbers), f"the column's {convention}imum ({value!r})"
    return np.where(failed, float(convention), numbers), f"the value {float(convention)!r}"


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("convention", ["missing", "min", "max", "-3.5"])
def test_every_numeric_statistic_under_each_convention(tmp_path, seed, convention):
    import scipy.stats

    frame = random_scores(seed)
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--statistic", "pearson",
                   "--statistic", "spearman", "--statistic", "kendall", "--failed-as",
                   convention, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    human = frame["human.q"].to_numpy(dtype=float)
    kernels = {"pearson": scipy.stats.pearsonr, "spearman": scipy.stats.spearmanr,
               "kendall": scipy.stats.kendalltau}
    for column in ("judge.rubric", "other"):
        x, counted_as = filled(frame[column], convention)
        both = np.isfinite(x) & np.isfinite(human)
        for statistic, kernel in kernels.items():
            row = next(r for r in rows if r["metric"] == column and r["statistic"] == statistic)
            want = float(kernel(x[both], human[both])[0])
            assert row["value"] == pytest.approx(want, rel=1e-9, abs=1e-12), (column, statistic)
            assert row["n"] == int(both.sum())
            assert row["failed_as"] == convention
            assert row["failed"] == {"rows": int((frame[column] == "failed").sum()),
                                     "counted_as": counted_as, "told_by": "cells"}


def test_numeric_sidecar_statuses_and_bad_value(tmp_path):
    frame = pd.DataFrame({"item": ["1", "1", "2", "2", "3", "3"], "system": ["x", "y"] * 3,
                          "j": [4.0, None, 2.0, 5.0, None, 1.0],
                          "human.q": [4.0, 1.0, 2.0, 5.0, 3.0, 1.0]})
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    sidecar = {"columns": {"j": {"metric": "judge.rubric", "higher_is_better": True,
                                 "statuses": {"ok": 4, "refused": 1, "parse_error": 1}}}}
    Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--failed-as", "min",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    x = np.array([4.0, 1.0, 2.0, 5.0, 1.0, 1.0])
    assert row["value"] == pytest.approx(float(np.corrcoef(x, frame["human.q"])[0, 1]))
    assert row["failed"] == {"rows": 2, "counted_as": "the column's minimum (1.0)",
                             "told_by": "sidecar"}
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--failed-as", "min",
                   "--exclude-system", "y", "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)  # the sidecar counts the whole table: still told
    assert row["failed"] == {"rows": 1, "counted_as": "the column's minimum (2.0)",
                             "told_by": "sidecar"}
    assert row["value"] == pytest.approx(float(np.corrcoef([4.0, 2.0, 2.0],
                                                           [4.0, 2.0, 3.0])[0, 1]))
    markdown = run_cli("meta-eval", str(path), "--human", "human.q", "--failed-as", "min",
                       "-f", "markdown", check=True).stdout
    assert markdown.splitlines()[0].endswith("| failed_as |")
    assert markdown.splitlines()[2].endswith("| min |")
    for bad in ("wrong", "nan", "inf"):
        proc = run_cli("meta-eval", str(path), "--human", "human.q", "--failed-as", bad)
        assert proc.returncode == 2, bad
        assert "--failed-as" in proc.stderr


def present(*columns: list[str | None]) -> list[tuple[str, ...]]:
    return [row for row in zip(*columns, strict=True) if all(v is not None for v in row)]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("convention", ["missing", "wrong", "tie"])
def test_compare_judges_pairwise_under_each_convention(tmp_path, seed, convention):
    frame = random_pairs(seed, 90)
    path = tmp_path / "pairs.csv"
    frame[["item", "system_a", "system_b", "human.gold", "j1.ab", "j2"]].to_csv(
        path, index=False)
    # human ties as a class: the statistics below count them (the default drops them)
    proc = run_cli("compare-judges", str(path), "--a", "j1.ab", "--b", "j2", "--human",
                   "human.gold", "--human-ties", "class", "--bootstrap", "0", "--failed-as",
                   convention, "--json")
    assert proc.returncode == 0, proc.stderr
    got = {r["statistic"]: r for r in json.loads(proc.stdout)}
    a = [counted(v, convention) for v in frame["j1.ab"]]
    b = [counted(v, convention) for v in frame["j2"]]
    h = list(frame["human.gold"])
    ab = present(a, b)
    abh = present(a, b, h)
    want = {
        "flip_rate": sum(x != y for x, y in ab) / len(ab),
        "kappa": cohen_kappa_score([x for x, _ in ab], [y for _, y in ab]),
        "kappa_a_human": kappa(a, h), "kappa_b_human": kappa(b, h),
        "negative_flips": sum(x == g != y for x, y, g in abh) / len(abh),
        "positive_flips": sum(y == g != x for x, y, g in abh) / len(abh),
        "accuracy_a": sum(x == g for x, _, g in abh) / len(abh),
        "accuracy_b": sum(y == g for _, y, g in abh) / len(abh),
    }
    for statistic, value in want.items():
        assert got[statistic]["value"] == pytest.approx(value, abs=1e-12), statistic
        assert got[statistic]["failed_as"] == convention
    failed = got["flip_rate"]["failed"]
    assert failed["j1.ab"]["rows"] == int((frame["j1.ab"] == "failed").sum())
    assert failed["j2"]["rows"] == int((frame["j2"] == "failed").sum())


def test_compare_judges_wide_scores_take_the_numeric_convention(tmp_path):
    frame = random_scores(2)
    frame["second"] = frame["judge.rubric"].sample(frac=1.0, random_state=0).to_numpy()
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("compare-judges", str(path), "--a", "judge.rubric", "--b", "second",
                   "--bootstrap", "0", "--failed-as", "max", "--json")
    assert proc.returncode == 0, proc.stderr
    got = {r["statistic"]: r for r in json.loads(proc.stdout)}
    x, counted_x = filled(frame["judge.rubric"], "max")
    y, _ = filled(frame["second"], "max")
    both = np.isfinite(x) & np.isfinite(y)
    assert got["flip_rate"]["value"] == pytest.approx(float(np.mean(x[both] != y[both])))
    assert got["kappa"]["value"] == pytest.approx(cohen_kappa_score(x[both], y[both]))
    assert got["kappa"]["failed"]["judge.rubric"]["counted_as"] == counted_x
    proc = run_cli("compare-judges", str(path), "--a", "judge.rubric", "--b", "second",
                   "--failed-as", "wrong")
    assert proc.returncode == 2 and "--failed-as" in proc.stderr


@pytest.mark.parametrize("convention", ["missing", "min", "max", "2.5"])
def test_aggregate_leaderboard_mean_under_each_convention(tmp_path, convention):
    rng = np.random.default_rng(7)
    systems = [f"s{k}" for k in range(6)]
    frame = pd.DataFrame({"system": systems})
    for task in ("t1", "t2", "t3", "t4"):
        column = rng.choice([0.0, 1.0, 3.5, 1e6, -2.0], len(systems)).astype(object)
        column[rng.random(len(systems)) < 0.25] = "failed"
        column[rng.random(len(systems)) < 0.1] = None
        frame[task] = column
    path = tmp_path / "board.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("aggregate", str(path), "-r", "mean", "--failed-as", convention, "--json")
    assert proc.returncode == 0, proc.stderr
    (rule,) = json.loads(proc.stdout)
    columns = {t: filled(frame[t], convention) for t in ("t1", "t2", "t3", "t4")}
    values = np.stack([x for x, _ in columns.values()], axis=1)
    for k, system in enumerate(systems):
        row = values[k][np.isfinite(values[k])]
        want = float(row.mean()) if row.size else None
        got = rule["scores"].get(system)
        assert (got is None) if want is None else got == pytest.approx(want), system
    assert rule["failed_as"] == convention
    for task, (_, counted_as) in columns.items():
        assert rule["failed"][task] == {"rows": int((frame[task] == "failed").sum()),
                                        "counted_as": counted_as, "told_by": "cells"}


@pytest.mark.parametrize("convention", ["missing", "tie"])
def test_aggregate_pairwise_win_rate_under_each_convention(tmp_path, convention):
    rng = np.random.default_rng(8)
    n = 60
    a = rng.choice(["m1", "m2", "m3"], n)
    b = np.where(a == "m1", "m2", np.where(a == "m2", "m3", "m1"))
    verdicts = rng.choice(["a", "b", "tie", "failed", ""], n, p=[.35, .3, .1, .2, .05])
    frame = pd.DataFrame({"item": range(n), "system_a": a, "system_b": b, "j": verdicts})
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("aggregate", str(path), "-r", "win-rate", "--failed-as", convention,
                   "--json")
    assert proc.returncode == 0, proc.stderr
    (rule,) = json.loads(proc.stdout)
    p_a = {"a": 1.0, "b": 0.0, "tie": 0.5}
    for system in ("m1", "m2", "m3"):
        won = []
        for x, y, v in zip(a, b, verdicts, strict=True):
            v = counted(v, convention)
            if v is None or system not in (x, y):
                continue
            won.append(p_a[v] if system == x else 1 - p_a[v])
        assert rule["scores"][system] == pytest.approx(100 * sum(won) / len(won)), system
    assert rule["failed"]["j"]["rows"] == int((frame["j"] == "failed").sum())
    proc = run_cli("aggregate", str(path), "-r", "win-rate", "--failed-as", "wrong")
    assert proc.returncode == 2 and "needs a human label" in proc.stderr


def test_audit_counts_failed_scores_by_the_convention(tmp_path):
    import scipy.stats

    frame = random_scores(3, n_items=10, systems=3)
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("audit", str(path), "--human", "human.q", "--metric", "judge.rubric",
                   "--level", "segment", "--grouping", "none", "--bootstrap", "20",
                   "--resamples", "20", "--failed-as", "max", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout)
            if r["type"] == "correlation" and r.get("metric", r.get("column")) ==
            "judge.rubric"]
    assert rows, proc.stdout[:2000]
    x, counted_as = filled(frame["judge.rubric"], "max")
    human = frame["human.q"].to_numpy(dtype=float)
    both = np.isfinite(x) & np.isfinite(human)
    assert rows[0]["value"] == pytest.approx(float(scipy.stats.pearsonr(x[both],
                                                                        human[both])[0]))
    assert rows[0]["failed_as"] == "max"
    assert rows[0]["failed"] == {"rows": int((frame["judge.rubric"] == "failed").sum()),
                                 "counted_as": counted_as, "told_by": "cells"}


def test_audit_pairwise_takes_the_pairwise_convention(tmp_path):
    frame = random_pairs(9, 40)
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("audit", str(path), "--pairwise", "--human", "human.gold",
                   "--bootstrap", "0", "--resamples", "20", "--failed-as", "wrong", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["type"] == "pairwise"]
    for judge in ("j1", "j2"):
        for statistic, (value, failed) in expected(frame, judge, "wrong", "drop").items():
            row = next(r for r in rows if r["metric"] == judge and r["statistic"] == statistic)
            assert row["failed_as"] == "wrong" and row["failed"]["rows"] == failed
            assert (row["value"] is None) if value is None else \
                row["value"] == pytest.approx(value, abs=1e-12), (judge, statistic)


def test_the_store_tells_each_row_where_the_sidecar_counts_cannot(tmp_path):
    """A pairwise table whose empty cells are a skipped and two failed scores: the sidecar's
    counts (2 failed, 3 empty) cannot say which; the store, row by row, can."""
    from judgebench.engine.store import Store
    from judgebench.models import Score, Status

    gold = ["a", "b", "a", "b", "a", "b", "a"]
    j1 = ["a", None, None, "b", None, "a", "b"]
    j2 = ["a", "b", "b", "b", "a", "b", "tie"]
    status = [Status.OK, Status.PARSE_ERROR, Status.SKIPPED, Status.OK, Status.REFUSED,
              Status.OK, Status.OK]
    frame = pd.DataFrame({"item": [str(k) for k in range(7)], "system_a": "x",
                          "system_b": "y", "human.gold": gold, "j1": j1, "j2": j2})
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    sidecar = {"table": "pairwise", "columns": {
        "j1": {"signature": "sig1", "statuses": {"ok": 4, "parse_error": 1, "refused": 1,
                                                 "skipped": 1}},
        "j2": {"signature": "sig2", "statuses": {"ok": 7}}}}
    Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    db = tmp_path / "runs.db"
    with Store(db) as store:
        store.put([Score(item=str(k), system="x vs y", metric="judge.pairwise", value=None,
                         status=s, signature="sig1") for k, s in enumerate(status)],
                  [f"h{k}" for k in range(7)])
    args = ("compare-judges", str(path), "--a", "j1", "--b", "j2", "--human", "human.gold",
            "--bootstrap", "0", "--failed-as", "wrong", "--json")
    without = json.loads(run_cli(*args, check=True).stdout)
    assert without[0]["failed"]["j1"]["rows"] == 0  # counts differ: all three missing
    got = {r["statistic"]: r for r in json.loads(run_cli(*args, "--store", str(db),
                                                         check=True).stdout)}
    assert got["flip_rate"]["failed"]["j1"] == {
        "rows": 2, "counted_as": got["flip_rate"]["failed"]["j1"]["counted_as"],
        "told_by": "store"}
    with Store(tmp_path / "other.db") as store:  # another run's store: the sidecar decides
        store.put([Score(item="0", system="x vs y", metric="m", value=1.0, signature="s")],
                  ["h"])
    other = json.loads(run_cli(*args, "--store", str(tmp_path / "other.db"),
                               check=True).stdout)
    assert other[0]["failed"]["j1"]["rows"] == 0
    assert "cannot be told apart" in run_cli(*args, "--store", str(tmp_path / "other.db")
                                             ).stderr
    a = ["a", "failed", None, "b", "failed", "a", "b"]
    kept = [(x, y, g) for x, y, g in zip(a, j2, gold, strict=True) if x is not None]
    assert got["flip_rate"]["value"] == pytest.approx(sum(x != y for x, y, _ in kept) / 6)
    assert got["accuracy_a"]["value"] == pytest.approx(sum(x == g for x, _, g in kept) / 6)
    assert got["kappa"]["value"] == pytest.approx(cohen_kappa_score(
        [x for x, _, _ in kept], [y for _, y, _ in kept]))


LLMBAR_FAILED = Path(__file__).parent / "data" / "pairwise" / "llmbar_failed"
RATES = {"correct_False": "accuracy-ab", "correct_True": "accuracy-ba",
         "correct_average": "accuracy", "correct_both": "both-correct",
         "equal": "consistency"}


def stored_rate(text: str) -> float:
    """LLMBar writes "77 / 100 = 77.0%" or "82.0%"."""
    return float(text.split("=")[-1].strip().rstrip("%")) / 100


def test_llmbar_statistics_with_parse_failures_are_reproduced_by_wrong():
    """Three LLMBar evaluators with 32 parse failures: `--failed-as wrong` gives LLMBar's
    stored rates for every subset (75 numbers); `missing` does not."""
    stats = json.loads((LLMBAR_FAILED / "statistics.json").read_text(encoding="utf-8"))
    runs = {c: run_pairwise(LLMBAR_FAILED / "pairs.csv", "--by", "category", "--failed-as", c)
            for c in ("wrong", "missing")}
    checked = differ = 0
    for subset, evaluators in stats.items():
        category = subset.split("/")[-1]
        for judge, numbers in evaluators.items():
            for key, statistic in RATES.items():
                def value(rows: list[dict], statistic: str = statistic, judge: str = judge,
                          category: str = category) -> float:
                    return next(r["value"] for r in rows if r["metric"] == judge
                                and r["statistic"] == statistic and r["category"] == category)

                assert value(runs["wrong"]) == pytest.approx(stored_rate(numbers[key]),
                                                             abs=1e-9), (subset, judge, key)
                differ += value(runs["missing"]) != pytest.approx(stored_rate(numbers[key]))
                checked += 1
    assert checked == 75 and differ > 0


def test_llmbar_kappa_agreement_codes_a_failure_as_output_2():
    """What the README says of LLMBar's kappa_agreement: evaluate.py codes a failure as 0,
    as output 2 (b), so it is Cohen's kappa with `failed` read as b, not a class of its own."""
    frame = pd.read_csv(LLMBAR_FAILED / "pairs.csv", dtype=str, keep_default_na=False)
    stats = json.loads((LLMBAR_FAILED / "statistics.json").read_text(encoding="utf-8"))
    rows = run_pairwise(LLMBAR_FAILED / "pairs.csv", "--by", "category", "--failed-as",
                        "wrong")
    own_class_differs = 0
    for subset, evaluators in stats.items():
        part = frame[frame["category"] == subset.split("/")[-1]]
        for judge, numbers in evaluators.items():
            ab, ba = (part[f"{judge}.{o}"].replace("failed", "b") for o in ("ab", "ba"))
            assert cohen_kappa_score(ab, ba) == pytest.approx(numbers["kappa_agreement"])
            ours = next(r["value"] for r in rows if r["metric"] == judge and r["statistic"]
                        == "kappa-orders" and r["category"] == subset.split("/")[-1])
            want = cohen_kappa_score(part[f"{judge}.ab"], part[f"{judge}.ba"])
            assert ours == pytest.approx(want)
            own_class_differs += ours != pytest.approx(numbers["kappa_agreement"])
    assert own_class_differs > 0


@pytest.mark.parametrize("convention", ["missing", "wrong", "tie"])
def test_a_scored_table_tells_failures_by_its_sidecar(tmp_path, monkeypatch, convention):
    """`judgebench score` with a scripted judge on a loopback server (two pairs unparseable,
    q4 in one order, q5 in both): meta-eval --pairwise reads the empty cells of the failed
    scores as failed (the sidecar counts 2 parse errors and the verdict column has 2 empty
    cells) and counts them by the convention, as by hand."""
    sys.path.insert(0, str(Path(__file__).parent))
    from conftest import write_jsonl
    from scripted_judge import ScriptedJudge
    from test_score_pairwise import KEY_ENV, judge_spec, pair_records

    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    for k, v in KEY_ENV.items():
        monkeypatch.setenv(k, v)
    data = write_jsonl(tmp_path / "pairs.jsonl", pair_records())
    with ScriptedJudge() as server:
        spec = judge_spec(server.url)
        run_cli("score", str(data), "--allow-failures", "-m", spec, "-o",
                str(tmp_path / "pairs.csv"), "--store", str(tmp_path / "runs.db"),
                cwd=tmp_path, env=KEY_ENV, check=True)
    spec = column_of(spec)
    by_hand = pd.DataFrame({"human.gold": ["a", "b", "tie", "b", ""],
                            spec: ["a", "b", "tie", "failed", "failed"],
                            f"{spec}.ab": ["a", "b", "a", "failed", "failed"],
                            f"{spec}.ba": ["a", "b", "b", "b", "failed"]})
    table = pd.read_csv(tmp_path / "pairs.csv", dtype=str)
    rows = json.loads(run_cli("meta-eval", "pairwise", str(tmp_path / "pairs.csv"),
                              "--human", "human.pref", "--json", "--failed-as", convention,
                              check=True).stdout)
    assert table[spec].isna().sum() == 2  # the two failed scores leave the verdict empty
    for statistic, (value, failed) in expected(by_hand, spec, convention, "drop").items():
        row = next(r for r in rows if r["statistic"] == statistic)
        assert row["failed"]["rows"] == failed, statistic
        assert row["failed"]["told_by"] == "sidecar"
        assert (row["value"] is None) if value is None else \
            row["value"] == pytest.approx(value, abs=1e-12), statistic


@pytest.mark.parametrize("convention", ["missing", "wrong", "tie"])
def test_a_soft_judges_brier_score_under_each_convention(tmp_path, convention):
    """A judge of probabilities with failed cells: Brier (scikit-learn's brier_score_loss)
    with a failure as dropped, P = 0.5, or P on the wrong side of the human label."""
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(11)
    n = 70
    gold = rng.choice(["a", "b", "tie"], n, p=[.45, .45, .1])
    p = rng.choice([0.0, 0.13, 0.37, 0.62, 0.88, 1.0, 0.999999], n).astype(object)
    p[rng.random(n) < 0.2] = "failed"
    frame = pd.DataFrame({"item": range(n), "system_a": "x", "system_b": "y",
                          "human.gold": gold, "soft": p})
    path = tmp_path / "soft.csv"
    frame.to_csv(path, index=False)
    rows = run_pairwise(path, "--failed-as", convention)
    brier = next(r for r in rows if r["statistic"] == "brier")
    labels, probabilities = [], []
    for g, v in zip(gold, p, strict=True):
        if g == "tie" or (v == "failed" and convention == "missing"):
            continue
        label = 1.0 if g == "a" else 0.0
        labels.append(label)
        probabilities.append({"tie": 0.5, "wrong": 1 - label}.get(convention, 0.0)
                             if v == "failed" else float(v))
    assert brier["value"] == pytest.approx(brier_score_loss(labels, probabilities))
    assert brier["n"] == len(labels)
    assert brier["failed"]["rows"] == int((frame["soft"] == "failed").sum())


@pytest.mark.parametrize("convention", ["missing", "min", "max", "0.25"])
def test_failed_corpus_scores_at_system_level(tmp_path, convention):
    """A corpus-only metric whose corpus score failed for two systems (the sidecar's corpus
    rows say so; a skipped one stays missing): system-level pearson, by hand."""
    import scipy.stats

    rng = np.random.default_rng(12)
    systems = [f"s{k}" for k in range(8)]
    frame = pd.DataFrame({"item": np.repeat([f"i{k}" for k in range(5)], 8),
                          "system": np.tile(systems, 5),
                          "human.q": rng.normal(size=40).round(3)})
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    values = dict(zip(systems, rng.normal(size=8).round(3).tolist(), strict=True))
    status = {"s2": "error", "s5": "parse_error", "s6": "skipped"}
    corpus = [{"system": s, "metric": "corpus.m", "value": None if s in status else v,
               "status": status.get(s, "ok")} for s, v in values.items()]
    Path(f"{path}.meta.json").write_text(json.dumps({"columns": {}, "corpus": corpus}),
                                         encoding="utf-8")
    proc = run_cli("meta-eval", str(path), "--human", "human.q", "--level", "system",
                   "--metric", "corpus.m", "--failed-as", convention, "--json")
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)
    ok = [values[s] for s in systems if s not in status]
    fill = {"missing": None, "min": min(ok), "max": max(ok)}.get(convention, 0.25)
    x = np.array([np.nan if s == "s6" or (s in status and fill is None) else
                  fill if s in status else values[s] for s in systems])
    human = frame.groupby("system")["human.q"].mean().reindex(systems).to_numpy()
    keep = np.isfinite(x)
    assert row["value"] == pytest.approx(float(scipy.stats.pearsonr(x[keep], human[keep])[0]))
    assert row["system_score"] == "corpus"
    assert row["failed"]["rows"] == 2 and row["failed"]["unit"] == "system"


@pytest.mark.parametrize("convention", ["missing", "min", "-1"])
def test_aggregate_corpus_table_tells_failures_by_its_status(tmp_path, convention):
    rows = [("x", "bleu", 0.3, "ok"), ("y", "bleu", None, "error"), ("z", "bleu", 0.5, "ok"),
            ("w", "bleu", 0.1, "ok"), ("x", "chrf", 0.6, "ok"), ("y", "chrf", 0.7, "ok"),
            ("z", "chrf", None, "skipped"), ("w", "chrf", None, "refused")]
    path = tmp_path / "corpus.csv"
    pd.DataFrame(rows, columns=["system", "metric", "value", "status"]).to_csv(path,
                                                                               index=False)
    proc = run_cli("aggregate", str(path), "-r", "mean", "--failed-as", convention, "--json")
    assert proc.returncode == 0, proc.stderr
    (rule,) = json.loads(proc.stdout)
    by_metric: dict[str, dict[str, float | None]] = {}
    for system, metric, value, status in rows:
        by_metric.setdefault(metric, {})[system] = value if status == "ok" else (
            "failed" if status != "skipped" else None)
    for metric, scores in by_metric.items():
        ok = [v for v in scores.values() if isinstance(v, float)]
        fill = {"missing": None, "min": min(ok)}.get(convention, -1.0)
        by_metric[metric] = {s: fill if v == "failed" else v for s, v in scores.items()}
    for system in ("x", "y", "z", "w"):
        present = [m[system] for m in by_metric.values() if m[system] is not None]
        assert rule["scores"][system] == pytest.approx(sum(present) / len(present)), system
    assert {c: f["rows"] for c, f in rule["failed"].items()} == {"bleu": 1, "chrf": 1}
    assert {f["told_by"] for f in rule["failed"].values()} == {"status"}
