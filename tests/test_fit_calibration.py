"""`judgebench fit --search calibration`: a monotone (isotonic) calibration map of the judge's
score onto people's scale, cross-fitted on the search folds, applied by the judge itself
(`calibration=` knots).

Checked: the judge's map equals scikit-learn's IsotonicRegression.predict bit for bit (ties,
extreme magnitudes; a failed score stays failed, a value the map's arithmetic sends off the
finite numbers is a failure); the out-of-fold map against a direct pool-adjacent-violators
fit; a real loopback judge whose answers are a monotone distortion of people's gets a
calibration chosen, its held-out Pearson above the raw judge's and equal to what
`score -m @judge.toml` gives on the held-out rows from the judge cache; calibration asks the
judge nothing (the loopback server's request count); bad knots are refused naming the option.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import EXAMPLE, run_cli
from scipy import stats
from sklearn.isotonic import IsotonicRegression
from test_fit import RESPONSE, PlantedJudge, _held_rows, _judge, _rows

from judgebench.models import Outcome, Status
from judgebench.plugins import build_host
from meta_eval import fitting
from meta_eval import score_calibration as sc


def _rubric(knots: list[list[float]], **options: Any) -> Any:
    return build_host().metric("judge.rubric").build(cache=False, calibration=knots,
                                                     **options)


def _tied(rng: np.random.Generator, n: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    raw = np.round(rng.normal(0, 2, n)) * scale  # ties
    human = np.round(raw / scale + rng.normal(0, 1.5, n)) / 2 + 3  # not monotone in raw
    return raw, human


@pytest.mark.parametrize("x_scale, y_scale", [(1.0, 1.0), (1e-200, 1.0), (1e200, 1.0),
                                              (1e-200, 1e200), (1e200, 1e-200)])
def test_the_judges_map_is_sklearns_predict(x_scale: float, y_scale: float) -> None:
    rng = np.random.default_rng(7)
    raw, human = _tied(rng, 80, x_scale)
    human = human * y_scale
    model = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(raw, human)
    knots = list(zip(model.X_thresholds_, model.y_thresholds_, strict=True))
    if x_scale >= 1:  # below float64's resolution sklearn merges every score into one
        assert sc.knots(raw=raw, human=human) == knots
    else:
        assert len(knots) == 1 and len(sc.knots(raw=raw, human=human)) > 1
    judge = _rubric([list(k) for k in knots])
    queries = np.concatenate([raw, model.X_thresholds_, rng.normal(0, 4, 40) * x_scale,
                              [-1e300, 1e300, 0.0]])
    with np.errstate(all="ignore"):
        expected = model.predict(queries)
    for q, e in zip(queries, expected, strict=True):
        got = judge.decided(Outcome(value=float(q)))
        if math.isfinite(e):
            assert got.status == Status.OK and got.value == e  # bit for bit
            assert got.extra["uncalibrated_score"] == q
        else:  # 1e200 / 1e-200 overflows in sklearn's arithmetic too
            assert got.value is None and got.status == Status.ERROR
            assert "not a finite number" in (got.reason or "")
    failed = Outcome.failed(Status.PARSE_ERROR, "no score")
    assert judge.decided(failed) == failed  # a failed score stays failed
    # the same map in the fit service: NaN (a failed score) kept, the rest as sklearn
    with_nan = queries.copy()
    with_nan[::7] = np.nan
    mapped = sc.apply(knots, with_nan)
    assert np.isnan(mapped[::7]).all()
    keep = np.isfinite(with_nan)
    np.testing.assert_array_equal(mapped[keep], expected[keep])


def test_a_map_off_the_finite_numbers_is_a_failure_with_its_reason() -> None:
    knots = [[0.0, 0.0], [1e-300, 1e300]]  # a slope of 1e600
    assert not math.isfinite(float(np.interp(5e-301, [0.0, 1e-300], [0.0, 1e300])))
    got = _rubric(knots).decided(Outcome(value=5e-301))
    assert got.value is None and got.status == Status.ERROR
    assert "not a finite number" in (got.reason or "")
    assert got.extra["uncalibrated_score"] == 5e-301


def test_one_knot_is_a_constant_and_the_threshold_reads_the_calibrated_score() -> None:
    assert _rubric([[2.0, 3.5]]).decided(Outcome(value=-7.0)).value == 3.5
    judge = _rubric([[1, 1.0], [5, 3.0]], threshold=2.5)
    assert judge.decided(Outcome(value=4.0)).value == 1.0  # 2.5 >= 2.5
    assert judge.decided(Outcome(value=3.9)).value == 0.0  # 2.45


def _pava(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Isotonic least squares directly: ties in x pooled to their mean, then adjacent
    violators pooled (Barlow et al. 1972)."""
    xs = np.unique(x)
    # (mean, weight, how many distinct x values) of each block
    blocks = [(float(y[x == v].mean()), float((x == v).sum()), 1) for v in xs]
    k = 0
    while k < len(blocks) - 1:
        if blocks[k][0] > blocks[k + 1][0]:
            (m1, w1, c1), (m2, w2, c2) = blocks[k], blocks[k + 1]
            blocks[k:k + 2] = [((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2)]
            k = max(k - 1, 0)
        else:
            k += 1
    return xs, np.repeat([b[0] for b in blocks], [b[2] for b in blocks])


def _direct(raw: np.ndarray, human: np.ndarray, fit_on: np.ndarray, at: np.ndarray
            ) -> np.ndarray:
    keep = fit_on & np.isfinite(raw) & np.isfinite(human)
    xs, ys = _pava(raw[keep], human[keep])
    out = np.full(at.sum(), np.nan)
    finite = np.isfinite(raw[at])
    out[finite] = np.interp(np.clip(raw[at][finite], xs[0], xs[-1]), xs, ys)
    return out


@pytest.mark.parametrize("scale", [1.0, 1e-200, 1e200])
def test_out_of_fold_calibration_against_a_direct_fit(scale: float) -> None:
    rng = np.random.default_rng(11)
    raw, human = _tied(rng, 90, scale)
    raw[rng.choice(90, 6, replace=False)] = np.nan  # failed scores
    human[rng.choice(90, 5, replace=False)] = np.nan  # unlabelled
    folds = np.arange(90) % 4
    use = folds != 3
    out = sc.out_of_fold(raw=raw, human=human, folds=folds, use=use)
    for fold in range(3):
        at = folds == fold
        np.testing.assert_allclose(out[at], _direct(raw, human, use & ~at, at),
                                   rtol=1e-12, atol=0)
    np.testing.assert_allclose(out[~use], _direct(raw, human, use, ~use), rtol=1e-12, atol=0)
    assert np.isnan(out[np.isnan(raw)]).all()
    # the held-out fold's labels are never read
    changed = human.copy()
    changed[~use] = rng.normal(0, 100, (~use).sum())
    np.testing.assert_array_equal(
        sc.out_of_fold(raw=raw, human=changed, folds=folds, use=use), out)


def test_cross_fitted_takes_each_folds_own_scores() -> None:
    rng = np.random.default_rng(3)
    human = rng.normal(0, 1, 60)
    folds = np.arange(60) % 4
    search = folds != 3
    noise = np.where(search, human + rng.normal(0, 3, 60), np.nan)
    good = np.where(search, human + rng.normal(0, 0.1, 60), np.nan)
    bad = np.where(search, -human, np.nan)
    # fold 0's choice sees "c" as good, the others as bad
    pooled, chosen = fitting.cross_fitted("pearson", human=human, candidates={
        "n": noise, "c": bad}, folds=folds, search=search, per_fold={0: {"c": good}})
    assert chosen == {0: "c", 1: "n", 2: "n"}
    np.testing.assert_array_equal(pooled[folds == 0], good[folds == 0])
    np.testing.assert_array_equal(pooled[folds == 1], noise[folds == 1])


class Distorted(PlantedJudge):
    """Answers a monotone distortion of the people's score: 1 below 2.2, 4 below 3.5, else 5
    (the low scores pushed down, the middle up; the order kept up to ties)."""

    def answer(self, prompt: str) -> int:
        judged = RESPONSE.search(prompt)
        assert judged is not None
        h = self.truth[judged.group(1).strip()]
        return 1 if h < 2.2 else 4 if h < 3.5 else 5


FIT = ("--human", "coherence", "--shots", "1", "--draws", "1", "--folds", "4", "--seed", "3",
       "--bootstrap", "200")


def test_a_distorted_judge_gets_a_calibration_that_score_reproduces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "judge.toml"
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with Distorted(None) as server:
        proc = run_cli("fit", str(EXAMPLE), _judge(server.url), *FIT, "--search",
                       "few-shot,calibration", "--store", str(tmp_path / "s.sqlite"),
                       "-o", str(spec), "--json")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        calls = server.calls
        # a calibrated candidate for each judge spec, its knots counted
        names = [c["name"] for c in result["candidates"]]
        assert names == ["fit-0", "fit-1", "fit-0@cal", "fit-1@cal"]
        assert result["chosen"].endswith("@cal")
        chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
        assert result["held_out"]["value"] > result["held_out_start"]["value"]

        written = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
        knots = written["calibration"]
        assert len(knots) == chosen["calibration_knots"] == len(result["options"][
            "calibration"])
        assert knots == result["options"]["calibration"]
        assert all(a[0] < b[0] and a[1] <= b[1] for a, b in itertools.pairwise(knots))
        assert re.search(rf"calibration:n{len(knots)}-[0-9a-f]{{12}}",
                         result["fitted_signature"])
        # the knots are the map fitted on the search rows by sklearn, the held-out never
        from judgebench.services.fit import FitSettings, plan_fit

        plan = plan_fit(EXAMPLE, "judge.rubric", FitSettings(human="coherence", folds=4,
                                                             seed=3))
        held = _held_rows(result, _rows())
        search = [u for u in plan.units if u not in plan.held_units]
        raw = np.array([server.answer(f"<response>\n{u.output}\n</response>")
                        for u in search], float)
        human = np.array([u.human["coherence"] for u in search], float)
        shown = set(chosen["examples"])
        keep = np.array([f"{u.item}/{u.system}" not in shown for u in search])
        model = IsotonicRegression(out_of_bounds="clip").fit(raw[keep], human[keep])
        assert knots == [[x, y] for x, y in zip(model.X_thresholds_, model.y_thresholds_,
                                                 strict=True)]

        held_file = tmp_path / "held.jsonl"
        held_file.write_text("".join(json.dumps(r) + "\n" for r in held), encoding="utf-8")
        scored = run_cli("score", str(held_file), "-m", f"@{spec}", "--store",
                         str(tmp_path / "other.sqlite"), "-o", str(tmp_path / "held.csv"))
        assert scored.returncode == 0, scored.stderr
        assert server.calls == calls  # the judge cache answered every row
        import pandas as pd

        table = pd.read_csv(tmp_path / "held.csv")
        assert table["fitted"].notna().all()
        truth = table["human.coherence"].to_numpy(float)
        assert result["held_out"]["value"] == pytest.approx(
            stats.pearsonr(truth, table["fitted"].to_numpy(float))[0], abs=1e-12)
        outputs = {(r["item"], r["system"]): r["output"] for r in held}
        raw_held = np.array([server.answer(f"<response>\n{outputs[(i, sy)]}\n</response>")
                             for i, sy in zip(table["item"].astype(str),
                                              table["system"].astype(str), strict=True)],
                            float)
        assert result["held_out_start"]["value"] == pytest.approx(
            stats.pearsonr(truth, raw_held)[0], abs=1e-12)
        np.testing.assert_array_equal(table["fitted"].to_numpy(float),
                                      model.predict(raw_held))
        errors = result["held_out_errors"]
        for which, values in (("fitted", table["fitted"].to_numpy(float)), ("start", raw_held)):
            assert errors["mae"][which] == pytest.approx(np.abs(values - truth).mean(),
                                                         rel=1e-12)
            assert errors["bias"][which] == pytest.approx((values - truth).mean(), rel=1e-12)
        assert errors["mae"]["fitted"] < errors["mae"]["start"]

        # a rank statistic: the note says it cannot gain; nothing new is asked
        ranked = run_cli("fit", str(EXAMPLE), _judge(server.url), *FIT, "--search",
                         "few-shot,calibration", "--statistic", "spearman", "--store",
                         str(tmp_path / "s.sqlite"))
        assert ranked.returncode == 0, ranked.stderr
        assert "spearman ranks the scores" in ranked.stdout
        assert "cannot gain from calibration" in ranked.stdout
        assert server.calls == calls


def test_calibration_adds_no_judge_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    counts = []
    for k, search in enumerate(("few-shot", "few-shot,calibration")):
        monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / f"cache{k}"))
        with Distorted(None) as server:
            proc = run_cli("fit", str(EXAMPLE), _judge(server.url), *FIT, "--search", search,
                           "--store", str(tmp_path / f"s{k}.sqlite"))
            assert proc.returncode == 0, proc.stderr
            counts.append(server.calls)
    assert counts[0] == counts[1] > 0


@pytest.mark.parametrize("knots, message", [
    ("[[2.0, 1.0], [1.0, 2.0]]", "raw scores are strictly increasing"),
    ("[[1.0, 1.0], [1.0, 2.0]]", "raw scores are strictly increasing"),
    ("[[1.0, 3.0], [2.0, 2.0]]", "calibrated scores do not decrease"),
    ("[[1.0, nan], [2.0, 2.0]]", "is not finite"),
    ("[[1.0, 1.0], [inf, 2.0]]", "is not finite"),
    ("[]", "one or more"),
    ("[[1.0, 2.0, 3.0]]", "calibration"),
])
def test_bad_knots_are_refused_naming_the_option(tmp_path: Path, knots: str,
                                                  message: str) -> None:
    spec = tmp_path / "judge.toml"
    spec.write_text('[metrics.fitted]\nmetric = "judge.rubric"\nmodel = "m"\n'
                    'backend = "openai_compat"\napi_base = "http://127.0.0.1:9/v1"\n'
                    f"calibration = {knots}\n", encoding="utf-8")
    proc = run_cli("score", str(EXAMPLE), "-m", f"@{spec}", "--store",
                   str(tmp_path / "s.sqlite"), "-o", str(tmp_path / "out.csv"))
    assert proc.returncode == 2, proc.stderr
    assert "option 'calibration" in proc.stderr and message in proc.stderr
    assert not (tmp_path / "out.csv").exists()


def test_knots_on_the_command_line_are_one_quoted_json_value(tmp_path: Path) -> None:
    """calibration="[[...]]" in a spec string reads as the TOML file's array: the same
    options and signature; text that is not JSON is refused naming the option."""
    from judgebench.spec import parse_spec, specs_of

    spec = tmp_path / "judge.toml"
    spec.write_text('[metrics.fitted]\nmetric = "judge.rubric"\n'
                    "calibration = [[1.0, 1.5], [3.0, 3.25]]\n", encoding="utf-8")
    [from_file] = specs_of(f"@{spec}")
    typed = parse_spec('judge.rubric:calibration="[[1.0, 1.5], [3.0, 3.25]]"')
    factory = build_host().metric("judge.rubric")
    one, two = (factory.build(**s.options) for s in (from_file, typed))
    assert one.options.calibration == two.options.calibration == [(1.0, 1.5), (3.0, 3.25)]
    assert str(one.signature()) == str(two.signature())
    assert "calibration:n2-" in str(one.signature())
    proc = run_cli("score", str(EXAMPLE), "-m", 'judge.rubric:calibration="[[1, 2], [3"',
                   "--dry-run")
    assert proc.returncode == 2, proc.stderr
    assert "option 'calibration'" in proc.stderr and "quoted" in proc.stderr


def test_fit_refuses_a_starting_judge_with_a_map(tmp_path: Path) -> None:
    start = tmp_path / "start.toml"
    start.write_text('[metrics.start]\nmetric = "judge.rubric"\n'
                     "calibration = [[1.0, 1.0], [5.0, 5.0]]\n", encoding="utf-8")
    proc = run_cli("fit", str(EXAMPLE), f"@{start}", "--human",
                   "coherence", "--search", "calibration", "--store",
                   str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2, proc.stderr
    assert "already has calibration=" in proc.stderr
