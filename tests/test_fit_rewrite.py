"""`judgebench fit --search criteria --rewrite-with SPEC` (critique shadowing) against
scripted loopback judges (tests/fit_judges.py).

The judge answers people's score (rounded) when its prompt holds PHRASE and hash noise
otherwise; the rewriter writes PHRASE into its second proposal only, and its first and third
proposals one generic wording per set of rows shown. Checked: fit chooses rewrite-2, and each
fold's cross-fitted choice is the PHRASE wording too; each split's rewrite prompts (the final
search's, each search fold's) show its own training rows, those where the starting judge is
furthest from people (computed here from the judge's scripted answers), never a row of a fold
it is tested on and never a held-out row; the calls are the estimate's, less the repeated
prompts and wordings it counted; a rerun asks nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import EXAMPLE, run_cli
from fit_judges import ScriptedJudges
from test_fit import RESPONSE, _held_rows, _rows
from test_fit_panels import TRUTH, _distinct_prompts

PHRASE = "Each sentence leads to the next one"
SHOWN = re.compile(r"Response:\n(.*?)\n\nThe judge's score: (\S+); people's score: (\S+)\n",
                   re.S)


def _start(prompt: str) -> int:
    found = RESPONSE.search(prompt)
    assert found is not None, prompt[:400]
    if PHRASE in prompt:
        return int(np.clip(np.floor(TRUTH[found.group(1).strip()] + 0.5), 1, 5))
    return 1 + hashlib.sha256(prompt.encode()).digest()[0] % 5


def _writer(prompt: str) -> str:
    """PHRASE in proposal 2; proposals 1 and 3 one generic wording per set of rows shown."""
    assert "<criterion>" in prompt and RESPONSE.search(prompt) is None
    if "proposal 2 of 3" in prompt:
        return f"Thinking it over.\n<criterion>{PHRASE}: a coherent summary.</criterion>"
    rows = hashlib.sha256(prompt.split("This is proposal")[0].encode()).hexdigest()[:8]
    return f"<criterion>Is the summary good overall ({rows})?</criterion>"


def _args(server: ScriptedJudges, store: Path) -> tuple[str, ...]:
    return ("fit", str(EXAMPLE), server.judge("start"), "--human", "coherence", "--search",
            "criteria", "--rewrite-with", server.judge("writer"), "--rewrites", "3",
            "--rewrite-rows", "6", "--folds", "4", "--seed", "3", "--bootstrap", "100",
            "--store", str(store))


def _folds() -> dict[str, int]:
    """Each row's fold (item/system), as fit deals them with --folds 4 --seed 3."""
    from judgebench.services.fit import FitSettings, plan_fit

    plan = plan_fit(EXAMPLE, "judge.rubric", FitSettings(human="coherence", folds=4, seed=3))
    return {f"{u.item}/{u.system}": int(f) for u, f in zip(plan.units, plan.folds, strict=True)}


def test_the_rewrite_with_the_planted_phrase_is_chosen_and_never_sees_its_test_rows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    store, spec = tmp_path / "s.sqlite", tmp_path / "judge.toml"
    with ScriptedJudges({"start": _start, "writer": _writer}) as server:
        dry = run_cli(*_args(server, store), "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        estimate = json.loads(dry.stdout)
        # 3 rewrites for each of 4 splits: the final search's and each search fold's
        assert (estimate["rewrite_calls"], estimate["candidates"]) == (12, 13)
        assert sum(server.calls.values()) == 0

        proc = run_cli(*_args(server, store), "-o", str(spec), "--json", "--budget-usd", "50")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        final = [r for r in result["rewrites"] if r["fold"] is None]
        assert [(r["name"], r["reason"]) for r in final] == [
            ("rewrite-1", None), ("rewrite-2", None),
            ("rewrite-3", "the same text as rewrite-1 (not tried twice)")]
        for r in result["rewrites"]:
            if r["fold"] is not None and r["name"].endswith("-2"):  # PHRASE again
                assert r["tried_as"] == "rewrite-2"
        assert any(c["split"] is not None for c in result["candidates"])
        main = [c for c in result["candidates"] if c["split"] is None]
        assert [c["criterion"] for c in main] == [None, "rewrite-1", "rewrite-2"]
        for c in result["candidates"]:
            if c["split"] is not None:
                assert c["criterion"] == f"rewrite-f{c['split'].split('-')[1]}-1"
        chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
        assert chosen["criterion"] == "rewrite-2"
        assert result["held_out"]["value"] > 0.8 and result["gain_p_value"] < 0.05
        # each fold's cross-fitted choice is the PHRASE wording, tried as rewrite-2
        by_name = {c["name"]: c for c in result["candidates"]}
        assert {by_name[n]["criterion"] for n in result["cross_fitted_choices"].values()} == \
            {"rewrite-2"}
        written = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
        assert written["definition"] == f"{PHRASE}: a coherent summary."
        rewrite_2 = hashlib.sha256(written["definition"].encode()).hexdigest()[:12]
        assert f"rewrite-2={rewrite_2}" in result["signature"]
        assert f"candidates:{len(main)}|" in result["signature"]

        # the calls: the estimate counted 12 rewritten wordings and 12 rewrite prompts; a
        # repeated prompt is asked once and a repeated wording tried once
        s, h = _distinct_prompts(result)
        asked = [p for m, p in server.prompts if m == "writer"]
        assert server.calls["writer"] == len(set(asked)) <= 12
        wordings = sum(1 for c in result["candidates"] if c["criterion"] is not None)
        assert server.calls["start"] == (1 + wordings) * s + 2 * h
        assert sum(server.calls.values()) == estimate["calls"] - (12 - wordings) * s - (
            12 - server.calls["writer"])

        # what each split's prompts showed: its own training rows, furthest from people
        folds = _folds()
        first = server.prompts[:next(i for i, (m, _) in enumerate(server.prompts)
                                     if m == "writer")]
        judged = {RESPONSE.search(p).group(1).strip(): _start(p)  # type: ignore[union-attr]
                  for _, p in first}
        rows = {f"{r['item']}/{r['system']}": r for r in _rows()}
        assert set(result["rewrite_rows"]) == {"final", "fold-0", "fold-1", "fold-2"}
        for split, shown in result["rewrite_rows"].items():
            left_out = {3} if split == "final" else {3, int(split.split("-")[1])}
            train = {u: abs(judged[r["output"].strip()] - r["human"]["coherence"])
                     for u, r in rows.items() if folds[u] not in left_out}
            assert len(shown) == 6 and set(shown) <= set(train)
            assert min(train[u] for u in shown) >= max(
                d for u, d in train.items() if u not in shown)
            outputs = {rows[u]["output"].strip() for u in shown}
            mine = [p for p in asked if {o.strip() for o, _, _ in SHOWN.findall(p)} == outputs]
            assert mine, split
            for prompt in mine:
                for output, judge, human in SHOWN.findall(prompt):
                    assert float(judge) == judged[output.strip()]
                    assert any(abs(float(human) - rows[u]["human"]["coherence"]) < 5e-3
                               for u in shown if rows[u]["output"].strip() == output.strip())
                for u, r in rows.items():  # no row of a fold it is tested on
                    if folds[u] in left_out:
                        assert r["output"].strip() not in prompt
                        assert r["input"][:200] not in prompt
        for prompt in asked:  # no held-out row in any rewrite prompt
            for r in _held_rows(result, _rows()):
                assert r["output"].strip() not in prompt and r["input"][:200] not in prompt

        # a rerun asks nothing: the rewrites and every judgement come from the cache
        calls = dict(server.calls)
        again = run_cli(*_args(server, store), "--json")
        assert again.returncode == 0, again.stderr
        repeat = json.loads(again.stdout)
        assert dict(server.calls) == calls and repeat["spent_usd"] == 0.0
        assert (repeat["chosen"], repeat["held_out"]) == (result["chosen"], result["held_out"])
        # its estimate reads the rewrites from the cache: exact, with no stand-in; on the
        # held-out rows it counts the dearest candidate, one never asked there
        redo = json.loads(run_cli(*_args(server, store), "--dry-run", "--json").stdout)
        assert (redo["rewrite_calls"], redo["candidates"], redo["calls"]) == (
            0, len(result["candidates"]), h)
        text = run_cli(*_args(server, store)).stdout
        assert "in search (best of 3)" in text
        assert "rewrite-3: the same text as rewrite-1 (not tried twice) (written from the 6 " \
            "rows furthest from people of the search folds)" in text
        assert "rewrite-f0-1: tried (written from the 6 rows furthest from people of the " \
            "search folds but 0; for the cross-fitted choice on fold 0 only)" in text
        assert dict(server.calls) == calls


@pytest.mark.parametrize("args, message", [
    (("--rewrite-with", "judge.rubric"), "go together"),
    (("--search", "criteria", "--rewrite-with", "lexical.bleu"), "is not an LLM judge"),
    (("--search", "criteria", "--rewrite-with", "judge.rubric", "--rewrites", "0"),
     "--rewrites"),
])
def test_bad_rewrites_are_refused_before_any_call(tmp_path: Path, args: tuple[str, ...],
                                                  message: str) -> None:
    proc = run_cli("fit", str(EXAMPLE), "judge.rubric", "--human", "coherence", *args,
                   "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr


def test_cross_fitted_with_allowed_candidates_equals_a_direct_computation() -> None:
    """meta_eval.fitting.cross_fitted(allowed=...): each fold chooses among its own
    candidates only; checked against scipy's Pearson on the other search folds (ties, NaN and
    a candidate scaled by 1e200 included)."""
    from scipy import stats

    from meta_eval import fitting

    rng = np.random.default_rng(11)
    n = 80
    human = rng.integers(1, 6, n).astype(float)
    human[rng.choice(n, 6, replace=False)] = np.nan
    candidates = {name: np.where(rng.random(n) < 0.1, np.nan,
                                 human * w + rng.integers(0, 4, n) * (1 - w)) * scale
                  for name, w, scale in (("a", 0.2, 1.0), ("b", 0.6, 1e200), ("c", 0.9, 1.0),
                                         ("d", 0.4, 1e-200))}
    folds = rng.integers(0, 4, n)
    search = folds != 3
    allowed = {0: {"a", "b"}, 1: {"a", "c", "d"}, 2: {"d"}}
    pooled, chosen = fitting.cross_fitted("pearson", human=human, candidates=candidates,
                                          folds=folds, search=search, allowed=allowed)
    expected = np.full(n, np.nan)
    for fold, names in allowed.items():
        train = search & (folds != fold)
        values = {}
        for name in sorted(names):
            keep = train & np.isfinite(human) & np.isfinite(candidates[name])
            values[name] = stats.pearsonr(human[keep], candidates[name][keep])[0]
        best = max(values, key=lambda k: values[k])
        assert chosen[fold] == best
        test = search & (folds == fold)
        expected[test] = candidates[best][test]
    assert np.array_equal(pooled, expected, equal_nan=True)
    assert chosen[1] == "c" and chosen[0] == "b"
