"""`judgebench fit` on the bundled SummEval sample, against a real loopback judge server whose
answers depend on the prompt's few-shot examples (or the criterion's wording): with the planted
example (wording) in the prompt it answers the people's score, without it a score drawn from a
hash of the prompt (noise).

Checked: fit chooses a candidate showing the planted example; its held-out number is what
`score -m @judge.toml` and scipy give on the held-out rows; the starting judge's too; the
held-out number is not above the in-search one by more than chance; the second run pays for
nothing (judge cache and store); the budget is refused before any call; -o never overwrites
an input. meta_eval.fitting's functions are checked against direct computations.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Iterator
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import EXAMPLE, run_cli, write_jsonl
from fit_judges import ScriptedJudges
from scipy import stats

from meta_eval import fitting

RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.S)
EXAMPLE_RESPONSE = re.compile(r"Response: (.*?)\nScore: ", re.S)


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]


class PlantedJudge:
    """An OpenAI-compatible judge on 127.0.0.1 (port 0) that knows every row's human
    coherence by its output text. It answers the people's score (rounded) where the prompt's
    examples include `planted`, and hash noise otherwise; it counts the judgements it
    answered (a /tokenize request is answered 404, as by a server without a tokenizer)."""

    def __init__(self, planted: str | None, wording: str | None = None,
                 scale: int | None = None) -> None:
        self.planted = planted
        self.wording = wording
        self.scale = scale
        self.truth = {r["output"].strip(): r["human"]["coherence"] for r in _rows()}

    def answer(self, prompt: str) -> int:
        judged = RESPONSE.search(prompt)
        assert judged is not None, prompt[:400]
        shown = [m.strip() for m in EXAMPLE_RESPONSE.findall(prompt)]
        if self.scale is not None and f"an integer from 1 to {self.scale}" in prompt:
            return _on(self.scale, self.truth[judged.group(1).strip()])
        if (self.planted is not None and self.planted in shown) or \
                (self.wording is not None and self.wording in prompt):
            return int(np.clip(np.floor(self.truth[judged.group(1).strip()] + 0.5), 1, 5))
        return 1 + int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "big") % 5

    def __enter__(self) -> PlantedJudge:
        self.server = ScriptedJudges({"planted": self.answer})
        self.server.__enter__()
        return self

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def calls(self) -> int:
        """The judgements it answered."""
        return self.server.calls["planted"]

    def __exit__(self, *exc: Any) -> None:
        self.server.__exit__(*exc)


def _judge(url: str) -> str:
    return (f"judge.rubric:backend=openai_compat,model=planted,api_base={url},"
            "criterion=coherence,price_in=1,price_out=1")


SEARCH = ("--human", "coherence", "--shots", "1,2", "--draws", "2", "--folds", "4",
          "--seed", "3", "--bootstrap", "200")


def _planted_unit() -> tuple[str, str, str]:
    """The (item, system, output) of the example of the plan's second one-shot candidate."""
    from judgebench.services.fit import FitSettings, plan_fit

    plan = plan_fit(EXAMPLE, "judge.rubric", FitSettings(human="coherence", shots=(1, 2),
                                                         draws=2, folds=4, seed=3))
    one_shot = [d for d in plan.draws if len(d) == 1]
    unit = plan.units[one_shot[1][0]]
    return unit.item, unit.system, (unit.output or "").strip()


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PlantedJudge]:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with PlantedJudge(_planted_unit()[2]) as server:
        yield server


def test_fit_finds_the_planted_example_and_reports_it_out_of_fold(tmp_path: Path,
                                                                 planted: PlantedJudge) -> None:
    store, spec = tmp_path / "runs.sqlite", tmp_path / "judge.toml"
    rows = _rows()
    rng = np.random.default_rng(5)
    for r in rows:  # three raters of coherence, for the human ceiling
        r["human"].update({f"r{k}": float(np.clip(np.round(r["human"]["coherence"]
                                                           + rng.normal(0, 0.8)), 1, 5))
                           for k in range(3)})
    rows[0]["human"]["r1"] = None  # a rater who did not rate one row
    data = tmp_path / "raters.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    proc = run_cli("fit", str(data), _judge(planted.url), *SEARCH, "--store", str(store),
                   "-o", str(spec), "--json", "--budget-usd", "50", "--raters", "r0,r1,r2")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    item, system, _ = _planted_unit()
    chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
    assert f"{item}/{system}" in chosen["examples"]
    # every candidate that shows the planted example beats every one that does not
    with_it = [c["in_search"] for c in result["candidates"]
               if f"{item}/{system}" in c["examples"]]
    without = [c["in_search"] for c in result["candidates"]
               if f"{item}/{system}" not in c["examples"]]
    assert min(with_it) > max(without)
    assert result["held_out"]["value"] > 0.8 and result["gain_p_value"] < 0.05
    assert result["held_out"]["ci_low"] <= result["held_out"]["value"] <= \
        result["held_out"]["ci_high"]
    assert result["gain"]["ci_low"] > 0
    assert len(result["candidates"]) == 5  # no example, 2 draws of 1, 2 draws of 2

    # the fitted judge, as written, gives the reported held-out number through `score`
    written = tomllib.loads(spec.read_text(encoding="utf-8"))
    fitted = written["metrics"]["fitted"]
    assert fitted["metric"] == "judge.rubric"
    assert [(e["item"], e["system"]) for e in fitted["examples"]] == \
        [tuple(u.split("/")) for u in chosen["examples"]]
    assert "held-out-fold=" in fitted["fitted"]
    held = _held_rows(result, rows)
    held_file = tmp_path / "held.jsonl"
    held_file.write_text("".join(json.dumps(r) + "\n" for r in held), encoding="utf-8")
    calls = planted.calls
    scored = run_cli("score", str(held_file), "-m", f"@{spec}", "-m", _judge(planted.url),
                     "--store", str(tmp_path / "other.sqlite"), "-o",
                     str(tmp_path / "held.csv"))
    assert scored.returncode == 0, scored.stderr
    assert planted.calls == calls  # every answer came from the judge cache
    table = pd.read_csv(tmp_path / "held.csv")
    human = table["human.coherence"].to_numpy(float)
    start_column = next(c for c in table.columns if c.startswith("judge.rubric"))
    assert table["fitted"].notna().all()
    assert result["held_out"]["value"] == pytest.approx(
        stats.pearsonr(human, table["fitted"].to_numpy(float))[0], abs=1e-12)
    assert result["held_out_start"]["value"] == pytest.approx(
        stats.pearsonr(human, table[start_column].to_numpy(float))[0], abs=1e-12)
    # the human ceiling: each rater against the mean of the others, averaged
    ratings = np.array([[np.nan if r["human"][f"r{k}"] is None else r["human"][f"r{k}"]
                         for k in range(3)] for r in held])
    by_key = {(r["item"], r["system"]): i for i, r in enumerate(held)}
    order = [by_key[(i, s)] for i, s in zip(table["item"], table["system"], strict=True)]
    ratings = ratings[order]
    ceiling, fitted_there, start_there = [], [], []
    for k in range(3):
        others = np.nanmean(np.delete(ratings, k, axis=1), axis=1)
        ceiling.append(_pearson(others, ratings[:, k]))
        fitted_there.append(_pearson(others, table["fitted"].to_numpy(float)))
        start_there.append(_pearson(others, table[start_column].to_numpy(float)))
    assert result["ceiling"] == pytest.approx(np.mean(ceiling), abs=1e-12)
    assert result["ceiling_fitted"] == pytest.approx(np.mean(fitted_there), abs=1e-12)
    assert result["ceiling_start"] == pytest.approx(np.mean(start_there), abs=1e-12)
    meta = json.loads((tmp_path / "held.csv.meta.json").read_text(encoding="utf-8"))
    signature = json.dumps(meta)
    assert result["fitted_signature"].split("|")[0] in signature
    assert re.search(r"examples:k1-[0-9a-f]{12}", result["fitted_signature"])
    assert "fitted:fit" in result["fitted_signature"]
    assert "|search:few-shot|shots:1,2|draws:2|" in result["signature"]

    # rerun: nothing is asked again
    again = run_cli("fit", str(data), _judge(planted.url), *SEARCH, "--store", str(store),
                    "--raters", "r0,r1,r2")
    assert again.returncode == 0, again.stderr
    assert planted.calls == calls
    held_line = next(line for line in again.stdout.splitlines()
                     if "held out, fitted judge" in line)
    assert f"{result['held_out']['value']:.3f}" in held_line
    assert f"human ceiling (held out)    {result['ceiling']:.3f}" in again.stdout


def _held_rows(result: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from judgebench.services.fit import FitSettings, plan_fit

    plan = plan_fit(EXAMPLE, "judge.rubric", FitSettings(human="coherence", folds=4, seed=3))
    keys = {(u.item, u.system) for u in plan.held_units}
    held = [r for r in rows if (r["item"], r["system"]) in keys]
    assert len(held) == result["held_out_units"]
    return held


def test_noise_judge_held_out_is_not_above_the_search_by_more_than_chance(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No candidate is better than another: the best of the search is optimistic, and the
    held-out number of the chosen one is no better than chance would give."""
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    with PlantedJudge(None) as server:
        proc = run_cli("fit", str(EXAMPLE), _judge(server.url), *SEARCH, "--shots", "1",
                       "--search", "few-shot,threshold", "--store", str(tmp_path / "s.sqlite"),
                       "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    held, search = result["held_out"], result["in_search"]
    assert len(result["candidates"]) == 3 * 5  # (none, 2 draws of 1) x (no threshold, 2..5)
    # the held-out value exceeds the in-search one by no more than the held-out interval's
    # half-width (its sampling error): the selection's optimism is not carried over
    half = (held["ci_high"] - held["ci_low"]) / 2
    assert held["value"] <= search["value"] + half
    assert held["ci_low"] < 0 < held["ci_high"]
    assert result["gain_p_value"] > 0.05
    assert result["cross_fitted"]["value"] < search["value"]


def test_budget_is_refused_before_any_call(tmp_path: Path, planted: PlantedJudge) -> None:
    proc = run_cli("fit", str(EXAMPLE), _judge(planted.url), *SEARCH, "--store",
                   str(tmp_path / "s.sqlite"), "--budget-usd", "0.01")
    assert proc.returncode == 2
    assert "fit would cost about $" in proc.stderr and "over --budget-usd 0.01" in proc.stderr
    assert planted.calls == 0
    dry = run_cli("fit", str(EXAMPLE), _judge(planted.url), *SEARCH, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    found = json.loads(dry.stdout)
    assert found["candidates"] == 5 and found["calls"] > 0 and found["cost_usd"] > 0.01
    assert planted.calls == 0


def test_output_never_overwrites_an_input(tmp_path: Path) -> None:
    copy = tmp_path / "samples.jsonl"
    copy.write_bytes(EXAMPLE.read_bytes())
    proc = run_cli("fit", str(copy), "judge.rubric", "--human", "coherence", "-o", str(copy),
                   "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2
    assert copy.read_bytes() == EXAMPLE.read_bytes()


@pytest.mark.parametrize("args, message", [
    (("judge.geval", "--human", "coherence"), "fit fits judge.rubric"),
    (("judge.rubric:threshold=3", "--human", "coherence"), "already has threshold="),
    (("judge.rubric", "--human", "nothing"), "no row has a human score 'nothing'"),
    (("judge.rubric", "--human", "coherence", "--search", "panels"), "--search takes"),
    (("judge.rubric", "--human", "coherence", "--search", "scale"), "go together"),
    (("judge.rubric", "--human", "coherence", "--statistic", "kappa"), "fit chooses by"),
    (("judge.rubric", "--human", "coherence", "--shots", "0"), "--shots are 1 or more"),
])
def test_bad_input_is_refused_with_a_reason(tmp_path: Path, args: tuple[str, ...],
                                            message: str) -> None:
    proc = run_cli("fit", str(EXAMPLE), *args, "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


# -- meta_eval.fitting against direct computations -------------------------------------------
def test_example_draws_are_distinct_subsets_of_the_pool() -> None:
    pool = [3, 5, 8, 13, 21, 34]
    drawn = fitting.example_draws(pool=pool, shots=(0, 1, 2, 6), draws=4, seed=1)
    assert drawn[0] == ()
    assert len(drawn) == len(set(drawn)) == 1 + 4 + 4 + 1
    assert all(set(d) <= set(pool) and list(d) == sorted(d) for d in drawn)
    assert [len(d) for d in drawn] == [0, 1, 1, 1, 1, 2, 2, 2, 2, 6]
    assert drawn == fitting.example_draws(pool=pool, shots=(0, 1, 2, 6), draws=4, seed=1)
    # fewer subsets than draws: all of them
    assert fitting.example_draws(pool=[1, 2, 3], shots=(2,), draws=9, seed=0) == \
        list(combinations([1, 2, 3], 2))
    with pytest.raises(ValueError, match="7 examples asked for"):
        fitting.example_draws(pool=pool, shots=(7,), draws=1, seed=0)


def _noisy(rng: np.random.Generator, n: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    human = np.round(rng.normal(3, 1, n) * 2) / 2  # ties
    human[rng.choice(n, 3, replace=False)] = np.nan
    candidates = {}
    for k in range(5):
        metric = np.round(human + rng.normal(0, 0.5 + k, n))  # ties, then noisier
        metric[rng.choice(n, 4, replace=False)] = np.nan
        candidates[f"c{k}"] = metric * 1e6 if k == 2 else metric  # a large magnitude
    return human, candidates


def _pearson(h: np.ndarray, m: np.ndarray) -> float:
    ok = np.isfinite(h) & np.isfinite(m)
    return float(stats.pearsonr(h[ok], m[ok])[0])


@pytest.mark.parametrize("statistic, direct, sign", [
    ("pearson", _pearson, 1),
    ("kendall", lambda h, m: float(stats.kendalltau(h[np.isfinite(h) & np.isfinite(m)],
                                                    m[np.isfinite(h) & np.isfinite(m)])[0]), 1),
    ("mae", lambda h, m: float(np.nanmean(np.abs(h - m))), -1),
])
def test_best_and_cross_fitted_equal_a_direct_computation(statistic: str, direct: Any,
                                                          sign: int) -> None:
    rng = np.random.default_rng(7)
    human, candidates = _noisy(rng, 90)
    if statistic == "mae":
        candidates = {k: v / 1e6 if k == "c2" else v for k, v in candidates.items()}
    folds = np.arange(90) % 4
    search = folds != 3
    name, found = fitting.best(statistic, human=human, candidates=candidates, use=search)
    values = {k: direct(np.where(search, human, np.nan), v) for k, v in candidates.items()}
    expected = max(values, key=lambda k: sign * values[k])
    assert name == expected and found == pytest.approx(values[expected], rel=1e-12)

    pooled, chosen = fitting.cross_fitted(statistic, human=human, candidates=candidates,
                                          folds=folds, search=search)
    want = np.full(90, np.nan)
    for fold in (0, 1, 2):
        train = search & (folds != fold)
        scores = {k: direct(np.where(train, human, np.nan), v) for k, v in candidates.items()}
        pick = max(scores, key=lambda k: sign * scores[k])
        assert chosen[fold] == pick
        want[folds == fold] = candidates[pick][folds == fold]
    np.testing.assert_array_equal(pooled, want)
    assert fitting.value(statistic, human=human, metric=pooled).value == pytest.approx(
        direct(human, pooled), rel=1e-12)


def test_thresholded_is_a_direct_comparison() -> None:
    scores = np.array([1.0, 2.0, 3.0, np.nan, 5.0, 2.9999999])
    np.testing.assert_array_equal(fitting.thresholded(scores, 3.0),
                                  [0.0, 0.0, 1.0, np.nan, 1.0, 0.0])
    assert fitting.thresholded(scores, None) is scores


def test_gain_interval_is_the_paired_percentile_bootstrap() -> None:
    rng = np.random.default_rng(11)
    human = rng.normal(size=40)
    a = human + rng.normal(0, 0.5, 40)
    b = human + rng.normal(0, 1.5, 40)
    a[5] = np.nan
    low, high = fitting.gain_interval("pearson", human=human, metric_a=a, metric_b=b,
                                      resamples=200, seed=4)
    ok = np.isfinite(a)
    h, ma, mb = human[ok], a[ok], b[ok]
    draws = np.random.default_rng(4)
    # a unit's code is the rank of its id as text (item_bootstrap's coding)
    codes = np.unique(np.array([str(i) for i in range(h.size)]), return_inverse=True)[1]
    gains = []
    for _ in range(200):
        counts = np.bincount(draws.integers(0, h.size, size=h.size), minlength=h.size)
        idx = np.repeat(np.arange(h.size), counts[codes])
        gains.append(stats.pearsonr(h[idx], ma[idx])[0] - stats.pearsonr(h[idx], mb[idx])[0])
    expected = np.quantile(gains, [0.025, 0.975])
    assert (low, high) == pytest.approx(tuple(expected), rel=1e-9)
    assert low is not None and low > 0


def test_threshold_is_chosen_for_binary_labels(tmp_path: Path, planted: PlantedJudge) -> None:
    """People's 0/1 labels (coherence >= 3.5): the planted judge answers the rounded
    coherence, so the threshold 4 reproduces the labels; fit chooses it, and the written
    judge's scores are those 0/1 decisions."""
    rows = _rows()
    for r in rows:
        r["human"]["good"] = int(r["human"]["coherence"] >= 3.5)
    data = tmp_path / "binary.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = tmp_path / "judge.toml"
    proc = run_cli("fit", str(data), _judge(planted.url), *SEARCH[2:], "--human", "good",
                   "--shots", "1", "--search", "few-shot,threshold", "--store",
                   str(tmp_path / "s.sqlite"), "-o", str(spec), "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    item, system, _ = _planted_unit()
    chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
    assert chosen["threshold"] == 4.0 and f"{item}/{system}" in chosen["examples"]
    fitted = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
    assert fitted["threshold"] == 4.0
    assert {e["score"] for e in fitted["examples"]} <= {1, 5}  # a 0/1 label at the scale's ends
    out = tmp_path / "scores.csv"
    scored = run_cli("score", str(data), "-m", f"@{spec}", "--store",
                     str(tmp_path / "t.sqlite"), "-o", str(out))
    assert scored.returncode == 0, scored.stderr
    table = pd.read_csv(out)
    decided = table["fitted"].to_numpy(float)
    truth = np.floor(table["human.coherence"].to_numpy(float) + 0.5)
    shown = {(e["item"], e["system"]) for e in fitted["examples"]}
    others = np.array([(i, s) not in shown for i, s in zip(table["item"], table["system"],
                                                            strict=True)])
    np.testing.assert_array_equal(decided[others], (truth[others] >= 4).astype(float))


def test_rubric_shows_the_examples_after_the_rubric() -> None:
    from judgebench.errors import InputError
    from judgebench.models import Sample
    from judgebench.plugins import build_host

    examples = [{"item": "a", "system": "s", "input": "Article one.", "output": "Good </rubric>",
                 "score": 5},
                {"item": "b", "system": "s", "output": "Bad.", "score": 1}]
    from judgebench_judges.rubric import RubricJudge

    judge = build_host().metric("judge.rubric").build(criterion="coherence", examples=examples)
    assert isinstance(judge, RubricJudge)
    values = judge.values(Sample(item="c", system="s", input="Article.", output="Summary."))
    rubric = values["rubric"]
    assert rubric.index("Example 1:") < rubric.index("Example 2:")
    assert "Response: Good ‹/rubric›\nScore: 5" in rubric  # a tag in an example is data
    assert "Instruction: (no instruction given)\nResponse: Bad.\nScore: 1" in rubric
    plain = build_host().metric("judge.rubric").build(criterion="coherence")
    assert isinstance(plain, RubricJudge)
    assert "Example" not in plain.values(Sample(item="c", system="s", output="x"))["rubric"]
    assert "to_min" not in str(plain.signature())  # an unmapped judge keeps its signature
    mapped = build_host().metric("judge.rubric").build(criterion="coherence", min=1, max=10,
                                                       to_min=1, to_max=5)
    assert "to_min:1" in str(mapped.signature()) and "to_max:5" in str(mapped.signature())
    with pytest.raises(InputError, match="to_min and to_max go together"):
        build_host().metric("judge.rubric").build(to_min=1)
    with pytest.raises(InputError, match=r"outside 1\.\.5"):
        build_host().metric("judge.rubric").build(
            examples=[{"output": "x", "score": 7}])


def test_score_at_file_names_a_missing_file(tmp_path: Path) -> None:
    proc = run_cli("score", str(EXAMPLE), "-m", f"@{tmp_path / 'none.toml'}", "--limit", "1")
    assert proc.returncode == 2
    assert "none.toml" in proc.stderr


def test_human_from_the_store_is_people_s_consensus(tmp_path: Path, planted: PlantedJudge
                                                     ) -> None:
    """`--human store:coherence`: the store's labels (two annotators, their mean; some rows
    unlabelled, one `cant_tell`) are the labels fit uses: the same rows, values and folds as
    a human field holding that mean, computed here directly; the fit runs on them."""
    from judgebench.engine import labels as store_labels

    store = tmp_path / "runs.sqlite"
    store_labels.define_criterion(store, "coherence", kind="scale", low=1, high=5)
    rows = _rows()
    new, expected = [], {}
    for i, r in enumerate(rows):
        if i % 5 == 4:
            continue  # nobody labelled it
        a = int(np.clip(np.floor(r["human"]["coherence"] + 0.5), 1, 5))
        b = min(5, a + (i % 3 == 0))
        new.append(store_labels.NewLabel("coherence", "ann-a", r["item"], r["system"], a))
        if i % 7 == 0:
            new.append(store_labels.NewLabel("coherence", "ann-b", r["item"], r["system"],
                                             status="cant_tell"))
            expected[(r["item"], r["system"])] = float(a)
        else:
            new.append(store_labels.NewLabel("coherence", "ann-b", r["item"], r["system"], b))
            expected[(r["item"], r["system"])] = (a + b) / 2
    store_labels.save_labels(store, new)
    plain = [{**r, "human": {}} for r in rows]
    data = write_jsonl(tmp_path / "unlabelled.jsonl", plain)
    direct = write_jsonl(tmp_path / "direct.jsonl", [
        {**r, "human": {"mean": expected.get((r["item"], r["system"]))}} for r in rows])
    from judgebench.services.fit import FitSettings, plan_fit

    plans = [plan_fit(path, "judge.rubric", FitSettings(human=h, store=str(store), seed=3))
             for path, h in ((data, "store:coherence"), (direct, "mean"))]
    np.testing.assert_array_equal(plans[0].human, plans[1].human)
    np.testing.assert_array_equal(plans[0].folds, plans[1].folds)
    assert [(u.item, u.system) for u in plans[0].units] == list(expected)
    args = ("--shots", "1", "--draws", "1", "--folds", "4", "--seed", "3", "--bootstrap", "50",
            "--json")
    from_store = run_cli("fit", str(data), _judge(planted.url), "--human", "store:coherence",
                         "--store", str(store), *args)
    assert from_store.returncode == 0, from_store.stderr
    got = json.loads(from_store.stdout)
    assert got["units"] == len(expected) < len(rows)
    assert got["human"] == "store:coherence" and "human:store:coherence" in got["signature"]
    assert got["held_out_units"] == int(plans[1].held.sum())

    missing = run_cli("fit", str(data), _judge(planted.url), "--human", "store:nothing",
                      "--store", str(store), *args)
    assert missing.returncode == 2 and "nothing" in missing.stderr
    absent = run_cli("fit", str(data), _judge(planted.url), "--human",
                     f"store:{tmp_path / 'none.sqlite'}:coherence", "--store", str(store),
                     *args)
    assert absent.returncode == 2 and "none.sqlite" in absent.stderr


WORDINGS = {
    "plain": "Is the summary easy to follow?",
    "planted": "The summary reads as a well-structured whole, sentence after sentence.",
}


def test_fit_finds_the_planted_wording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                       ) -> None:
    """--search criteria: each wording of --criteria-file is a judge.rubric definition; the
    judge answers people's scores only under the planted one, and fit chooses it."""
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    wordings = tmp_path / "wordings.toml"
    wordings.write_text("".join(f"[{name}]\ntext = {json.dumps(text)}\n\n"
                                for name, text in WORDINGS.items()), encoding="utf-8")
    spec = tmp_path / "judge.toml"
    with PlantedJudge(None, WORDINGS["planted"]) as server:
        proc = run_cli("fit", str(EXAMPLE), _judge(server.url), "--human", "coherence",
                       "--search", "criteria", "--criteria-file", str(wordings), "--folds",
                       "4", "--seed", "3", "--bootstrap", "100", "--store",
                       str(tmp_path / "s.sqlite"), "-o", str(spec), "--json")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert [c["criterion"] for c in result["candidates"]] == [None, *WORDINGS]
        chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
        assert chosen["criterion"] == "planted"
        others = [c["in_search"] for c in result["candidates"] if c["criterion"] != "planted"]
        assert "|search:criteria|folds:" in result["signature"]  # no examples: no shots
        assert chosen["in_search"] > 0.8 > max(others)
        assert result["held_out"]["value"] > 0.8 and result["gain_p_value"] < 0.05
        calls = server.calls
        # the Python API gives the command's result, every answer from the cache and store
        import judgebench

        again = judgebench.fit(EXAMPLE, _judge(server.url), human="coherence",
                               search=["criteria"], criteria_file=wordings, folds=4, seed=3,
                               bootstrap=100, store=tmp_path / "s.sqlite")
        assert server.calls == calls
        assert again.spent_usd == 0.0 < result["spent_usd"]  # nothing paid twice
        costs = ("spent_usd", "estimated_usd", "spec_path")
        assert {k: v for k, v in again.to_dict().items() if k not in costs} == \
            {k: v for k, v in result.items() if k not in costs}
        from judgebench.errors import InputError

        with pytest.raises(InputError, match="criteria_file"):
            judgebench.fit(EXAMPLE, _judge(server.url), human="coherence",
                           search=["criteria"], criteria_file=wordings, output=wordings)
        digest = hashlib.sha256(WORDINGS["planted"].encode()).hexdigest()[:12]
        assert f"planted={digest}" in result["signature"]
        fitted = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
        assert fitted["definition"] == WORDINGS["planted"]
        assert WORDINGS["planted"] in result["fitted_signature"]
        # the written judge scores the held-out rows as reported, from the cache
        held = _held_rows(result, _rows())
        calls = server.calls
        out = tmp_path / "held.csv"
        scored = run_cli("score", str(write_jsonl(tmp_path / "held.jsonl", held)), "-m",
                         f"@{spec}", "--store", str(tmp_path / "t.sqlite"), "-o", str(out))
        assert scored.returncode == 0, scored.stderr
        assert server.calls == calls
    table = pd.read_csv(out)
    assert result["held_out"]["value"] == pytest.approx(stats.pearsonr(
        table["human.coherence"], table["fitted"])[0], abs=1e-12)


BAD_WORDINGS = [
    ("w.toml", "[a]\ntext = \"x\"\nlevels = 3\n", "field 'levels'"),
    ("w.toml", "[a]\ntext = \"\"\n", "table [a]: the wording is a non-empty string"),
    ("w.toml", "a = 1\n", "field 'a'"),
    ("w.toml", "[a]\ntext = \"x\"\n[b]\ntext = \" x \"\n", "the same text as 'a'"),
    ("w.toml", "[a\n", "not TOML"),
    ("w.jsonl", '{"name": "a", "text": "x"}\n{"name": "a", "text": "y"}\n',
     "line 2, field 'name'"),
    ("w.jsonl", '{"name": "a", "text": "x"}\n\n{"name": "b", "txt": "y"}\n',
     "line 3, field 'txt'"),
    ("w.jsonl", '{"name": "a b", "text": "x"}\n', "line 1, field 'name'"),
    ("w.jsonl", '["a"]\n', "line 1: not an object"),
    ("w.jsonl", "", "holds no wording"),
]


def test_bad_wordings_are_refused_before_any_call(tmp_path: Path, planted: PlantedJudge
                                                  ) -> None:
    for n, (name, text, message) in enumerate(BAD_WORDINGS):
        path = tmp_path / f"{n}-{name}"
        path.write_text(text, encoding="utf-8")
        proc = run_cli("fit", str(EXAMPLE), _judge(planted.url), "--human", "coherence",
                       "--search", "criteria", "--criteria-file", str(path), "--store",
                       str(tmp_path / "s.sqlite"))
        assert proc.returncode == 2, proc.stderr
        assert str(path) in proc.stderr and message in proc.stderr, (message, proc.stderr)
    assert planted.calls == 0


def test_criteria_search_and_file_go_together(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "w.jsonl", [{"name": "a", "text": "x"}])
    for args in (("--criteria-file", str(path)), ("--search", "few-shot,criteria")):
        proc = run_cli("fit", str(EXAMPLE), "judge.rubric", "--human", "coherence", *args,
                       "--store", str(tmp_path / "s.sqlite"))
        assert proc.returncode == 2 and "go together" in proc.stderr


def _on(top: int, human: float) -> int:
    """People's 1..5 score asked on 1..top: mapped linearly, rounded half up."""
    return int(np.floor(1 + (human - 1) * (top - 1) / 4 + 0.5))


def test_fit_finds_the_planted_scale_and_maps_it_back(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """--search scale: the judge answers people's scores (on 1..10) only when asked on 1..10;
    fit chooses that scale, and its held-out MAE is that of the 1..10 answers mapped back
    linearly onto 1..5, computed here directly from people's scores."""
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "judge.toml"
    with PlantedJudge(None, scale=10) as server:
        proc = run_cli("fit", str(EXAMPLE), _judge(server.url), "--human", "coherence",
                       "--search", "scale", "--scales", "1-5,1-10", "--statistic", "mae",
                       "--folds", "4", "--seed", "3", "--bootstrap", "100", "--store",
                       str(tmp_path / "s.sqlite"), "-o", str(spec), "--json")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert [c["scale"] for c in result["candidates"]] == [None, "1-10"]  # 1-5: the start
        chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
        assert chosen["scale"] == "1-10"
        held = _held_rows(result, _rows())
        human = np.array([r["human"]["coherence"] for r in held])
        mapped = np.array([1 + (_on(10, h) - 1) * 4 / 9 for h in human])
        assert result["held_out"]["value"] == pytest.approx(np.mean(np.abs(human - mapped)),
                                                            rel=1e-12)
        fitted = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
        assert (fitted["min"], fitted["max"], fitted["to_min"], fitted["to_max"]) == \
            (1, 10, 1, 5)
        calls = server.calls
        out = tmp_path / "held.csv"
        scored = run_cli("score", str(write_jsonl(tmp_path / "held.jsonl", held)), "-m",
                         f"@{spec}", "--store", str(tmp_path / "t.sqlite"), "-o", str(out))
        assert scored.returncode == 0, scored.stderr
        assert server.calls == calls
    table = pd.read_csv(out).set_index(["item", "system"])
    want = dict(zip([(r["item"], r["system"]) for r in held], mapped, strict=True))
    np.testing.assert_allclose(table["fitted"].to_numpy(float),
                               [want[k] for k in table.index], rtol=1e-12)
    bad = run_cli("fit", str(EXAMPLE), "judge.rubric", "--human", "coherence", "--search",
                  "scale", "--scales", "5-1", "--store", str(tmp_path / "s.sqlite"))
    assert bad.returncode == 2 and "MIN below MAX" in bad.stderr


def test_written_spec_keeps_any_text_an_example_holds(tmp_path: Path) -> None:
    """An example's text with a character outside the BMP (an emoji: JSON would escape it as
    a surrogate pair, which TOML refuses), a DEL and a quote; a held-out number that could
    not be computed (None) left out, not written as the string "None"."""
    from judgebench.services.fit import FitResult, Number, write_spec
    from judgebench.spec import MetricSpec, specs_of

    text = 'Great 😀 "quoted" \x7f\\ end'
    spec = MetricSpec(name="judge.rubric", column="fitted",
                      options={"criterion": "coherence", "examples": [
                          {"item": "d1", "system": "M1", "output": text, "score": 4,
                           "input": None}]})
    none = Number(value=float("nan"), ci_low=None, ci_high=None, n=0)
    result = FitResult(
        judge="start|sig", fitted_signature="fitted|sig", statistic="kendall-tau",
        human="coherence", units=9, search_units=6, held_out_units=3, held_out_fold=3,
        candidates=[], chosen="fit-0", in_search=none, cross_fitted=none,
        cross_fitted_choices={}, held_out=Number(value=None, ci_low=None, ci_high=None,  # type: ignore[arg-type]
                                                   n=0),
        held_out_start=none, gain=none, gain_p_value=float("nan"), ceiling=None,
        ceiling_fitted=None, ceiling_start=None, estimated_usd=None, spent_usd=0.0, failed=0,
        spec_path=None, signature="fit|sig")
    path = tmp_path / "judge.toml"
    write_spec(spec, result, path)
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    [example] = document["metrics"]["fitted"]["examples"]
    assert example == {"item": "d1", "system": "M1", "output": text, "score": 4}
    assert "held_out_kendall_tau" not in document["fit"]
    assert document["fit"]["held_out_fold"] == 3 and document["fit"]["chosen"] == "fit-0"
    [read] = specs_of(f"@{path}")
    assert read.name == "judge.rubric" and read.options["examples"][0]["output"] == text
