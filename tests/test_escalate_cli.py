"""`judgebench escalate`: each judge's threshold, coverage, held-out agreement and AUGRC equal
meta_eval.escalation's functions called directly on the same data (the table read here with
pandas, the cascade and the agreement worked out here); a cascade where the second judge
decides what the first escalates; a judge without a threshold says so; the refusals exit 2
naming the column or option."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

import judgebench.api
from meta_eval.escalation import agreement_at, augrc, calibrate_threshold

REPO = Path(__file__).resolve().parent.parent
VERDICTS = REPO / "examples" / "summeval-verdicts.csv"


def table(path: Path, *, items: int = 150, seed: int = 0) -> Path:
    """Two systems; people's 1-5 ratings (some halves, which round up) on about half the
    rows; a cheap judge right mostly where it is confident (confidences tied, in units of
    1e12), missing on some rows (its confidence too); a strong judge right more often."""
    rng = np.random.default_rng(seed)
    rows = []
    for system in ("alpha", "beta"):
        for i in range(items):
            truth = float(rng.integers(1, 6))
            sure = float(rng.integers(0, 11)) / 10
            cheap = truth if rng.random() < 0.45 + 0.55 * sure else float(rng.integers(1, 6))
            strong_sure = float(rng.integers(0, 21)) / 20
            strong = truth if rng.random() < 0.7 + 0.3 * strong_sure else truth % 5 + 1
            scored = rng.random() < 0.9
            rows.append({
                "item": f"i{i:03d}", "system": system,
                "cheap": cheap + rng.choice([-0.3, 0.0, 0.2]) if scored else np.nan,
                "cheap.sure": sure * 1e12 if scored else np.nan,
                "strong": strong, "strong.sure": strong_sure,
                "human": (truth - rng.choice([0.0, 0.5]) if rng.random() < 0.5 else np.nan)})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def escalate(*args: str) -> dict:
    proc = run_cli("escalate", *args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    result: dict = json.loads(proc.stdout)
    return result


def rounded(values: np.ndarray, decimals: int) -> np.ndarray:
    """Halves away from zero, for values whose halves are exact in binary (k/2, k/20)."""
    scaled = values * 10 ** decimals
    return np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)


def expected(frame: pd.DataFrame, judges: list[tuple[str, str]], human: str, *,
             alpha: float, delta: float, heldout: np.ndarray, decimals: int = 0
             ) -> tuple[list[dict], np.ndarray]:
    """The cascade worked out here: per judge, the meta_eval functions on the calibration
    rows that reached it with a verdict; and the rows no judge kept."""
    labels = frame[human].to_numpy(dtype=float)
    labelled = ~np.isnan(labels)
    calibration = labelled & ~heldout
    undecided = np.ones(len(frame), dtype=bool)
    stages = []
    for judge, confidence in judges:
        verdict = frame[judge].to_numpy(dtype=float)
        sure = frame[confidence].to_numpy(dtype=float)
        reached = undecided & ~np.isnan(verdict)
        agree = (rounded(verdict, decimals) == rounded(labels, decimals)).astype(float)
        cal = reached & calibration
        chosen = calibrate_threshold(confidence=sure[cal], agree=agree[cal], alpha=alpha,
                                     delta=delta)
        keeps = reached & (sure >= chosen.threshold) if chosen.threshold is not None \
            else np.zeros(len(frame), dtype=bool)
        stage = {"threshold": chosen.threshold, "kept": int(keeps.sum()),
                 "coverage": keeps.mean(), "calibration_kept": chosen.kept,
                 "calibration_items": int(cal.sum()),
                 "augrc": augrc(confidence=sure[cal], correct=agree[cal]),
                 "reached": int(reached.sum())}
        if heldout.any():
            held = reached & heldout
            at = agreement_at(confidence=sure[held], agree=agree[held],
                              threshold=chosen.threshold)
            stage.update(heldout_kept=at.kept, heldout_items=int(held.sum()),
                         heldout_agreement=None if np.isnan(at.agreement) else at.agreement)
        stages.append(stage)
        undecided &= ~keeps
    return stages, undecided


def names(frame: pd.DataFrame) -> np.ndarray:
    return (frame["item"] + " (" + frame["system"] + ")").to_numpy()


def check(result: dict, stages: list[dict], queue: np.ndarray, frame: pd.DataFrame) -> None:
    assert len(result["judges"]) == len(stages)
    for got, want in zip(result["judges"], stages, strict=True):
        for key, value in want.items():
            if isinstance(value, float):
                assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
            else:
                assert got[key] == value, key
    assert result["queue"]["items"] == names(frame)[queue].tolist()
    assert result["queue"]["count"] == int(queue.sum())


@pytest.mark.parametrize(("alpha", "delta"), [(0.1, 0.1), (0.2, 0.05), (0.35, 0.2)])
def test_cascade_equals_the_meta_eval_functions(tmp_path: Path, alpha: float,
                                                delta: float) -> None:
    path = table(tmp_path / "t.csv")
    frame = pd.read_csv(path)
    judges = [("cheap", "cheap.sure"), ("strong", "strong.sure")]
    result = escalate(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                      "--cascade", "strong=strong.sure", "--human", "human",
                      "--alpha", str(alpha), "--delta", str(delta))
    stages, queue = expected(frame, judges, "human", alpha=alpha, delta=delta,
                             heldout=np.zeros(len(frame), dtype=bool))
    check(result, stages, queue, frame)
    for got in result["judges"]:
        assert got["guaranteed_agreement"] == (
            None if got["threshold"] is None else pytest.approx(1 - alpha))


def test_holdout_agreement_equals_agreement_at(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv", seed=3)
    frame = pd.read_csv(path)
    result = escalate(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                      "--cascade", "strong=strong.sure", "--human", "human",
                      "--alpha", "0.25", "--holdout", "0.3", "--seed", "7")
    labelled = int(frame["human"].notna().sum())
    assert result["heldout_items"] == round(0.3 * labelled)
    heldout = np.isin(names(frame), result["heldout"])
    assert heldout.sum() == result["heldout_items"]
    assert frame["human"][heldout].notna().all()
    stages, queue = expected(frame, [("cheap", "cheap.sure"), ("strong", "strong.sure")],
                             "human", alpha=0.25, delta=0.1, heldout=heldout)
    check(result, stages, queue, frame)
    again = escalate(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                     "--cascade", "strong=strong.sure", "--human", "human",
                     "--alpha", "0.25", "--holdout", "0.3", "--seed", "8")
    assert again["heldout"] != result["heldout"]


def test_the_second_judge_decides_what_the_first_escalates(tmp_path: Path) -> None:
    """The cheap judge is right only where it is sure (half the rows); the strong one is
    right everywhere: the cheap one keeps its sure half, the strong one the rest, but for
    the unlabelled rows less confident than any calibration row it saw."""
    rng = np.random.default_rng(5)
    n = 400
    truth = rng.integers(0, 2, n).astype(float)
    sure = rng.random(n) < 0.5
    cheap = np.where(sure, truth, rng.integers(0, 2, n))
    frame = pd.DataFrame({"item": [f"q{i}" for i in range(n)], "system": "s",
                          "cheap": cheap, "cheap.p": np.where(sure, 0.9, 0.5),
                          "strong": truth, "strong.p": rng.random(n),
                          "human.label": np.where(rng.random(n) < 0.5, truth, np.nan)})
    path = tmp_path / "cascade.csv"
    frame.to_csv(path, index=False)
    result = escalate(str(path), "--judge", "cheap", "--confidence-column", "cheap.p",
                      "--cascade", "strong=strong.p", "--human", "human.label")
    first, second = result["judges"]
    assert first["threshold"] == 0.9
    assert first["kept"] == int(sure.sum())
    assert second["reached"] == n - first["kept"]
    assert second["threshold"] == pytest.approx(frame["strong.p"][~sure & frame[
        "human.label"].notna()].min())
    below = frame["strong.p"].to_numpy() < second["threshold"]
    assert second["kept"] == int((~sure & ~below).sum()) > 0.9 * (n - first["kept"])
    assert result["queue"]["count"] == int((~sure & below).sum())  # below every label
    assert result["decided"] == first["kept"] + second["kept"]


def test_a_judge_without_a_threshold_says_so(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    n = 200
    truth = rng.integers(0, 2, n).astype(float)
    frame = pd.DataFrame({"item": [f"q{i}" for i in range(n)], "system": "s",
                          "coin": rng.integers(0, 2, n).astype(float), "coin.p": rng.random(n),
                          "human": truth})
    path = tmp_path / "coin.csv"
    frame.to_csv(path, index=False)
    args = (str(path), "--judge", "coin", "--confidence-column", "coin.p", "--human", "human")
    result = escalate(*args)
    (stage,) = result["judges"]
    assert stage["threshold"] is None and stage["kept"] == 0
    assert stage["guaranteed_agreement"] is None
    assert "escalates everything" in stage["escalates"]
    assert result["queue"]["count"] == n == result["queue"]["labelled"]
    text = run_cli("escalate", *args)
    assert text.returncode == 0, text.stderr
    assert "coin keeps nothing: no confidence threshold shows agreement >= 0.9" in text.stdout
    assert "labelling queue: 200 items" in text.stdout


def test_pairwise_table_with_ties_kept_apart(tmp_path: Path) -> None:
    """The bundled pairwise verdicts (P(A better): 0, 0.5, 1), compared to one decimal."""
    frame = pd.read_csv(VERDICTS)
    result = escalate(str(VERDICTS), "--judge", "rougeL", "--confidence-column",
                      "rougeL.margin", "--cascade", "chrf=chrf.margin", "--human",
                      "human.relevance", "--decimals", "1", "--alpha", "0.3")
    stages, queue = expected(frame, [("rougeL", "rougeL.margin"), ("chrf", "chrf.margin")],
                             "human.relevance", alpha=0.3, delta=0.1,
                             heldout=np.zeros(len(frame), dtype=bool), decimals=1)
    assert stages[1]["kept"] > 0  # the example shows a judge that keeps something
    pair_names = (frame["item"] + " (" + frame["system_a"] + " vs " + frame["system_b"]
                  + ")").to_numpy()
    assert result["queue"]["items"] == pair_names[queue].tolist()
    for got, want in zip(result["judges"], stages, strict=True):
        assert got["threshold"] == want["threshold"]
        assert got["kept"] == want["kept"]
        assert got["augrc"] == pytest.approx(want["augrc"], rel=1e-12)


def test_api_escalate_takes_a_dataframe(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv", seed=1)
    frame = pd.read_csv(path, dtype={"item": str, "system": str})
    result = judgebench.api.escalate(frame, judge="cheap", confidence_column="cheap.sure",
                                     human="human", alpha=0.3)
    cli = escalate(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                   "--human", "human", "--alpha", "0.3")
    api = result.to_dict()
    assert api["judges"] == cli["judges"] and api["queue"] == cli["queue"]


def refused(*args: str) -> str:
    proc = run_cli("escalate", *args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    return proc.stderr


def test_refuses_a_human_column_without_labels(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv")
    frame = pd.read_csv(path)
    frame["human"] = np.nan
    frame.to_csv(path, index=False)
    error = refused(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                    "--human", "human")
    assert "field 'human'" in error and "no labels" in error


def test_refuses_a_missing_confidence_where_the_judge_scored(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv")
    frame = pd.read_csv(path)
    row = int(np.flatnonzero(frame["cheap"].notna().to_numpy())[3])
    frame.loc[row, "cheap.sure"] = np.nan
    frame.to_csv(path, index=False)
    error = refused(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                    "--human", "human")
    assert "field 'cheap.sure'" in error
    assert f"line {row + 2}" in error
    assert repr(f"{frame['item'][row]} ({frame['system'][row]})") in error
    # the strong judge's confidence, on a row only the strong judge reaches
    frame = pd.read_csv(table(tmp_path / "u.csv"))
    frame.loc[5, "strong.sure"] = np.nan
    frame.to_csv(tmp_path / "u.csv", index=False)
    error = refused(str(tmp_path / "u.csv"), "--judge", "cheap", "--confidence-column",
                    "cheap.sure", "--cascade", "strong=strong.sure", "--human", "human")
    assert "field 'strong.sure'" in error and "line 7" in error


@pytest.mark.parametrize(("option", "value"), [("--alpha", "0"), ("--alpha", "1"),
                                               ("--alpha", "1.5"), ("--delta", "0"),
                                               ("--delta", "-0.1"), ("--delta", "nan"),
                                               ("--holdout", "1")])
def test_refuses_a_level_outside_zero_one(tmp_path: Path, option: str, value: str) -> None:
    path = table(tmp_path / "t.csv")
    error = refused(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                    "--human", "human", option, value)
    assert f"field '{option}'" in error and "strictly between 0 and 1" in error


@pytest.mark.parametrize("cascade", ["strong", "strong=", "=strong.sure", "a=b=c"])
def test_refuses_a_cascade_that_is_not_judge_equals_confidence(tmp_path: Path,
                                                               cascade: str) -> None:
    path = table(tmp_path / "t.csv")
    error = refused(str(path), "--judge", "cheap", "--confidence-column", "cheap.sure",
                    "--human", "human", "--cascade", cascade)
    assert "field '--cascade'" in error and "JUDGE=CONFIDENCE" in error


def test_refuses_a_column_that_is_not_there(tmp_path: Path) -> None:
    path = table(tmp_path / "t.csv")
    error = refused(str(path), "--judge", "cheap", "--confidence-column", "cheap.margin",
                    "--human", "human")
    assert "field 'cheap.margin'" in error and "no column 'cheap.margin'" in error
    error = refused(str(VERDICTS), "--judge", "rougeL", "--confidence-column", "rougeL.margin",
                    "--human", "human.coherence")
    assert "field 'human.coherence'" in error


def test_a_failed_pairwise_verdict_escalates(tmp_path: Path) -> None:
    frame = pd.read_csv(VERDICTS).astype(object)
    frame.loc[2, "rougeL"] = "failed"
    frame.loc[2, "rougeL.margin"] = np.nan
    path = tmp_path / "failed.csv"
    frame.to_csv(path, index=False)
    result = escalate(str(path), "--judge", "rougeL", "--confidence-column", "rougeL.margin",
                      "--human", "human.relevance", "--decimals", "1", "--alpha", "0.4")
    (stage,) = result["judges"]
    assert stage["reached"] == len(frame) - 1 == stage["calibration_items"]
    name = f"{frame['item'][2]} ({frame['system_a'][2]} vs {frame['system_b'][2]})"
    assert name in result["queue"]["items"]


def test_rounding_halves_away_from_zero_as_written() -> None:
    """round_half_away against exact rational arithmetic on the value as written, with halves,
    NaN, negative values and magnitudes up to 1e15."""
    import math
    from fractions import Fraction

    from judgebench.services.escalate import round_half_away

    rng = np.random.default_rng(11)
    values = np.concatenate([
        rng.integers(-40, 40, 200) / 8, np.round(rng.normal(size=200) * 10, 3),
        rng.integers(-10**15, 10**15, 50) + 0.5, [np.nan, 0.285, -0.285, 2.675, 1e-300]])
    for decimals in (0, 1, 2):
        got = round_half_away(values, decimals)
        for value, rounded_value in zip(values, got, strict=True):
            if math.isnan(value):
                assert math.isnan(rounded_value)
                continue
            scaled = abs(Fraction(repr(float(value)))) * 10 ** decimals
            whole = math.floor(scaled + Fraction(1, 2))
            want = float(Fraction(whole if value >= 0 else -whole, 10 ** decimals))
            assert rounded_value == want, (value, decimals)
