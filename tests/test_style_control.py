"""Bradley-Terry from `aggregate`: each system's standard error and Wald interval, the order
effect and the style-controlled ranking, against statsmodels' binomial GLM fitted to the same
design (features computed here, independently), on random tables with ties, soft verdicts,
weights and extreme magnitudes, and on AlpacaEval's annotations."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from conftest import column, run_cli, write_jsonl
from scipy.stats import norm
from scripted_judge import ScriptedJudge
from test_score_pairwise import (  # noqa: F401 (isolated: a fixture)
    KEY_ENV,
    isolated,
    judge_spec,
    strict_template,
)

from meta_eval.aggregation.style import fit_covariate_bt, markdown_counts

REPO = Path(__file__).resolve().parent.parent
Z95 = float(norm.ppf(0.975))


def _glm(design: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """statsmodels' binomial GLM (logit) with fractional targets: estimates and the inverse
    of the observed information at them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a fractional binomial target warns, fits the same
        fit = sm.GLM(y, design, family=sm.families.Binomial(), var_weights=w).fit(
            tol=1e-14, maxiter=500)
    return np.asarray(fit.params), np.linalg.inv(-np.asarray(fit.model.hessian(fit.params)))


def _centred(params: np.ndarray, cov: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(theta centred, gamma) and their covariance from a fit with system 0 the reference."""
    k = len(params) - (n - 1)
    embed = np.zeros((n + k, n - 1 + k))
    embed[1:n, : n - 1] = np.eye(n - 1)
    embed[:n] -= embed[:n].mean(axis=0)
    embed[n:, n - 1:] = np.eye(k)
    return embed @ params, embed @ cov @ embed.T


def _pairs_design(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    d = np.zeros((len(a), n))
    d[np.arange(len(a)), a] += 1.0
    d[np.arange(len(a)), b] -= 1.0
    return d[:, 1:]


@pytest.mark.parametrize("seed", range(8))
def test_covariate_fit_matches_the_glm(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 7)), int(rng.integers(60, 400))
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    scale = [1.0, 1e-6, 1e6, 1e150][seed % 4]
    unit = rng.normal(size=(m, int(rng.integers(1, 4))))
    unit[:, 0] = np.round(unit[:, 0], 1)  # ties in a covariate
    z = unit * scale
    y = rng.choice([0.0, 0.5, 1.0, 0.25, 0.9], size=m)
    w = rng.integers(1, 4, m).astype(float)
    fit = fit_covariate_bt(a=a, b=b, outcome=y, n_systems=n, covariates=z, weights=w)
    # the GLM on the unscaled covariates, its coefficients then divided by the scale (the
    # MLE is equivariant): a 1e300 information matrix would leave inv() no digits
    params, cov = _glm(np.hstack([_pairs_design(a, b, n), unit]), y, w)
    estimate, covariance = _centred(params, cov, n)
    back = np.concatenate([np.ones(n), np.full(z.shape[1], 1.0 / scale)])
    estimate, covariance = estimate * back, covariance * np.outer(back, back)
    assert fit.theta == pytest.approx(estimate[:n], abs=1e-6)
    assert fit.gamma * scale == pytest.approx(estimate[n:] * scale, abs=1e-6)
    assert fit.se == pytest.approx(np.sqrt(np.diag(covariance)), rel=1e-6)
    low, high = fit.intervals()
    assert high - low == pytest.approx(2 * Z95 * fit.se, rel=1e-12)
    assert fit.theta.sum() == pytest.approx(0.0, abs=1e-9)


def test_separation_is_refused() -> None:
    a, b = np.array([0, 0, 1, 1]), np.array([1, 2, 2, 2])
    with pytest.raises(ValueError, match="no finite estimate"):
        fit_covariate_bt(a=a, b=b, outcome=np.array([1.0, 1.0, 1.0, 0.0]), n_systems=3)


def test_markdown_counts_follow_arena_hard() -> None:
    text = ("# Title\n## Sub\n#not a header\n1. one\n2. two\n  - dash\n* star\n+ plus\n"
            "**bold** and __also__ and ** not\n```\n# in code\n- in code\n**code**\n```\n")
    assert markdown_counts(text) == (2, 5, 2)


# -- the command -------------------------------------------------------------------------
def _header_count(text: str) -> int:
    return sum(1 for line in text.split("\n") if re.match(r"#{1,6} ", line))


def _table(rng: np.random.Generator, n: int, m: int, *, ties: bool) -> pd.DataFrame:
    """A pairwise table with texts, orders, a numeric covariate pair and random verdicts."""
    systems = [f"s{i}" for i in range(n)]
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    strength = rng.normal(size=n)

    def text() -> str:
        lines = ["# Head\n" * int(rng.integers(0, 3)), "- item\n" * int(rng.integers(0, 4)),
                 "**b** " * int(rng.integers(0, 3)), "x" * int(rng.integers(1, 400))]
        return "".join(lines)

    out_a, out_b = [text() for _ in range(m)], [text() for _ in range(m)]
    length = np.array([[len(x), len(y)] for x, y in zip(out_a, out_b, strict=True)], float)
    logit = strength[a] - strength[b] + 0.8 * (length[:, 0] - length[:, 1]) / length.sum(1)
    choices = ["a", "b", "tie"] if ties else ["a", "b"]

    def verdicts(shift: float) -> list[str]:
        p = 1 / (1 + np.exp(-(logit + shift)))
        u = rng.random(m)
        return [choices[-1] if ties and abs(x - 0.5) < 0.1 else ("a" if x < q else "b")
                for x, q in zip(u, p, strict=True)]

    ab, ba = verdicts(0.6), verdicts(-0.6)  # the response shown first is favoured
    combined = [x if x == y else ("tie" if ties else x) for x, y in zip(ab, ba, strict=True)]
    return pd.DataFrame({
        "item": [f"q{k}" for k in range(m)], "system_a": [systems[i] for i in a],
        "system_b": [systems[j] for j in b], "output_a": out_a, "output_b": out_b,
        "quality_a": rng.normal(size=m) * 1e5, "quality_b": rng.normal(size=m) * 1e5,
        "judge": combined, "judge.ab": ab, "judge.ba": ba})


def _features(frame: pd.DataFrame, controls: list[str]) -> np.ndarray:
    """The covariates as arena-hard-auto v2 defines them, computed here from the texts."""
    la = frame["output_a"].str.len().to_numpy(float)
    lb = frame["output_b"].str.len().to_numpy(float)
    columns = []
    for control in controls:
        if control == "length":
            columns.append((la - lb) / (la + lb))
        elif control == "markdown":
            def count(texts: pd.Series, what: str) -> np.ndarray:
                if what == "headers":
                    return texts.map(_header_count).to_numpy(float)
                if what == "lists":
                    return texts.map(lambda t: t.count("- item")).to_numpy(float)
                return texts.map(lambda t: t.count("**b**")).to_numpy(float)
            for what in ("headers", "lists", "bold"):
                da = count(frame["output_a"], what) / la
                db = count(frame["output_b"], what) / lb
                columns.append((da - db) / (da + db + 1))
        else:
            columns.append((frame[f"{control}_a"] - frame[f"{control}_b"]).to_numpy(float))
    x = np.column_stack(columns)
    return (x - x.mean(axis=0)) / x.std(axis=0, ddof=1)


def _aggregate(path: Path, *args: str) -> dict:
    proc = run_cli("aggregate", str(path), "-r", "bradley-terry", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    (out,) = json.loads(proc.stdout)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_aggregate_style_control_matches_the_glm(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 6))
    frame = _table(rng, n, int(rng.integers(80, 200)), ties=seed % 2 == 0)
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    controls = ["length", "markdown", "quality"]
    out = _aggregate(path, "--winner", "judge", "--control", ",".join(controls))
    style = out["style_control"]
    assert style["status"] == "ok" and style["covariates"] == [
        "length", "headers", "lists", "bold", "quality"]
    index = {s: i for i, s in enumerate(dict.fromkeys(
        [x for pair in zip(frame.system_a, frame.system_b, strict=True) for x in pair]))}
    a, b = frame.system_a.map(index).to_numpy(), frame.system_b.map(index).to_numpy()
    y = frame.judge.map({"a": 1.0, "b": 0.0, "tie": 0.5}).to_numpy()
    systems = _pairs_design(a, b, n)
    for which, design in (("raw", systems),
                          ("controlled", np.hstack([systems, _features(frame, controls)]))):
        params, cov = _glm(design, y, np.ones(len(y)))
        estimate, covariance = _centred(params, cov, n)
        se = np.sqrt(np.diag(covariance))
        for s, i in index.items():
            row = style["systems"][s][which]
            assert row["estimate"] == pytest.approx(estimate[i], abs=1e-6)
            assert row["se"] == pytest.approx(se[i], rel=1e-6)
            assert row["low"] == pytest.approx(estimate[i] - Z95 * se[i], abs=1e-6)
        if which == "controlled":
            coefficients = [style["coefficients"][c] for c in style["covariates"]]
            assert [c["estimate"] for c in coefficients] == pytest.approx(estimate[n:],
                                                                          abs=1e-6)
            assert [c["se"] for c in coefficients] == pytest.approx(se[n:], rel=1e-6)


def test_aggregate_se_and_order_effect_match_the_glm(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 4
    frame = _table(rng, n, 300, ties=False)
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    out = _aggregate(path, "--winner", "judge")
    index = {s: i for i, s in enumerate(dict.fromkeys(
        [x for pair in zip(frame.system_a, frame.system_b, strict=True) for x in pair]))}
    a, b = frame.system_a.map(index).to_numpy(), frame.system_b.map(index).to_numpy()
    # no ties: Davidson's model is the plain one, a logistic regression on e_a - e_b
    y = frame.judge.map({"a": 1.0, "b": 0.0}).to_numpy()
    params, cov = _glm(_pairs_design(a, b, n), y, np.ones(len(y)))
    estimate, covariance = _centred(params, cov, n)
    for s, i in index.items():
        assert out["scores"][s] == pytest.approx(estimate[i], abs=1e-6)
        assert out["extra"]["se"][s] == pytest.approx(np.sqrt(covariance[i, i]), rel=1e-6)
        assert out["extra"]["wald_high"][s] == pytest.approx(
            estimate[i] + Z95 * np.sqrt(covariance[i, i]), abs=1e-6)
    # the order effect: every order's verdict, the first-shown response's side as outcome
    first = np.concatenate([a, b])
    second = np.concatenate([b, a])
    won = np.concatenate([frame["judge.ab"].eq("a"), frame["judge.ba"].eq("b")]).astype(float)
    design = np.column_stack([_pairs_design(first, second, n), np.ones(len(first))])
    params, cov = _glm(design, won, np.ones(len(won)))
    effect = out["order_effect"]
    assert effect["status"] == "ok" and effect["judgements"] == 2 * len(frame)
    assert effect["effect"]["estimate"] == pytest.approx(params[-1], abs=1e-6)
    assert effect["effect"]["se"] == pytest.approx(np.sqrt(cov[-1, -1]), rel=1e-6)
    assert effect["effect"]["estimate"] > 0  # the table favours the first-shown response
    assert effect["signature"].startswith("bradley-terry.order-effect@1|")


def test_alpaca_eval_length_control_matches_the_glm() -> None:
    path = REPO / "examples" / "alpaca-eval-jina-chat.csv"
    frame = pd.read_csv(path)
    out = _aggregate(path, "--control", "length")
    x = ((frame.length_a - frame.length_b) / (frame.length_a + frame.length_b)).to_numpy()
    x = (x - x.mean()) / x.std(ddof=1)
    y = frame.preference.to_numpy(float)
    params, cov = _glm(np.column_stack([np.ones(len(y)), x]), y, np.ones(len(y)))
    style = out["style_control"]
    baseline = style["systems"]["gpt4_1106_preview"]["controlled"]
    assert 2 * baseline["estimate"] == pytest.approx(params[0], abs=1e-6)
    assert 2 * baseline["se"] == pytest.approx(np.sqrt(cov[0, 0]), rel=1e-6)
    assert style["coefficients"]["length"]["estimate"] == pytest.approx(params[1], abs=1e-6)
    assert style["coefficients"]["length"]["se"] == pytest.approx(np.sqrt(cov[1, 1]),
                                                                  rel=1e-6)
    assert "order_effect" not in out  # the table does not record the orders


def test_text_output_shows_both_rankings(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    _table(np.random.default_rng(3), 3, 120, ties=True).to_csv(path, index=False)
    proc = run_cli("aggregate", str(path), "-r", "bradley-terry", "--winner", "judge",
                   "--control", "length,quality")
    assert proc.returncode == 0, proc.stderr
    assert "style control (length, quality" in proc.stdout
    assert "raw rank" in proc.stdout and "coefficients" in proc.stdout
    assert "order effect" in proc.stdout and "bradley-terry.style@1|" in proc.stdout
    assert "wald_low" in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("-r", "bradley-terry", "--control", "markdown"), "output_a"),
    (("-r", "elo", "--control", "length"), "-r bradley-terry"),
    (("-r", "bradley-terry", "--control", "nothing"), "no covariate 'nothing'"),
    (("-r", "bradley-terry", "--control", "length,"), "empty name"),
    (("-r", "bradley-terry", "--control", "flat"), "the same on every comparison"),
])
def test_bad_control_is_an_input_error(tmp_path: Path, args: tuple[str, ...],
                                       message: str) -> None:
    path = tmp_path / "pairs.csv"
    pd.DataFrame({"system_a": ["x", "y", "x", "y"], "system_b": ["y", "x", "y", "x"],
                  "winner": ["a", "a", "b", "tie"], "length_a": [3, 5, 8, 1],
                  "length_b": [2, 2, 9, 4], "flat": [1, 1, 1, 1]}).to_csv(path, index=False)
    proc = run_cli("aggregate", str(path), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


def test_a_missing_length_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text("system_a,system_b,winner,length_a,length_b\nx,y,a,3,2\ny,x,b,,4\n"
                    "x,y,b,5,5\n", encoding="utf-8")
    proc = run_cli("aggregate", str(path), "-r", "bradley-terry", "--control", "length")
    assert proc.returncode == 2
    assert "line 3" in proc.stderr and "length_a" in proc.stderr


def test_control_needs_a_pairwise_table(tmp_path: Path) -> None:
    path = tmp_path / "board.csv"
    path.write_text("system,x\nA,1\nB,2\n", encoding="utf-8")
    proc = run_cli("aggregate", str(path), "-r", "mean", "--control", "length")
    assert proc.returncode == 2 and "pairwise table" in proc.stderr


# -- end to end: a scripted judge on a loopback server ---------------------------------------
def test_order_effect_of_a_scored_table(tmp_path: Path) -> None:
    """`score` a pairwise file with two scripted judges (tests/scripted_judge.py): on equal
    quality the plain one names the output shown first, the strict one says tie. The plain
    judge's order effect is positive with an interval above 0; the strict one's is 0, as its
    verdict never depends on the order."""
    rng = np.random.default_rng(11)
    quality = {(s, n): int(rng.integers(1, 4)) for s in ("M0", "M1", "M2") for n in range(16)}
    records = [{"item": f"q{n}", "input": f"Question {n}?", "system_a": a, "system_b": b,
                "output_a": f"answer of {a} q={quality[a, n]}",
                "output_b": f"answer of {b} q={quality[b, n]}"}
               for n in range(16) for a, b in (("M0", "M1"), ("M0", "M2"), ("M1", "M2"))]
    data = write_jsonl(tmp_path / "pairs.jsonl", records)
    table = tmp_path / "pairs.csv"
    with ScriptedJudge() as server:
        plain = judge_spec(server.url)
        strict = judge_spec(server.url, template=str(strict_template(tmp_path)))
        proc = run_cli("score", str(data), "-m", plain, "-m", strict, "-o", str(table),
                       "--store", str(tmp_path / "runs.db"), cwd=tmp_path, env=KEY_ENV)
        assert proc.returncode == 0, proc.stderr
    effects = {}
    for spec in (plain, strict):
        out = _aggregate(table, "--winner", column(spec))
        effects[spec] = out["order_effect"]
        assert effects[spec]["status"] == "ok", effects[spec]["reason"]
    equal = sum(quality[a, n] == quality[b, n] for r in records
                for a, b, n in [(r["system_a"], r["system_b"], int(r["item"][1:]))])
    assert 0 < equal < len(records)
    assert effects[plain]["effect"]["low"] > 0
    assert effects[plain]["ties_left_out"] == 0
    assert effects[strict]["effect"]["estimate"] == pytest.approx(0.0, abs=1e-9)
    assert effects[strict]["ties_left_out"] == 2 * equal


def test_no_standard_errors_above_a_thousand_systems() -> None:
    from meta_eval.aggregation import Comparisons
    from meta_eval.aggregation.rating import bradley_terry

    n = 1001  # a cycle, each pair won once each way: the MLE exists, every theta is 0
    a, b = np.arange(n), (np.arange(n) + 1) % n
    result = bradley_terry(Comparisons([f"s{i}" for i in range(n)], np.tile(a, 2),
                                       np.tile(b, 2), np.repeat([1.0, 0.0], n)))
    assert result.extra is None
    assert "no standard errors above 1000 systems" in result.note
    scores = result.scores
    assert scores is not None
    assert np.abs([scores[f"s{i}"] for i in range(n)]).max() < 1e-6
