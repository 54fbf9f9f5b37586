"""`judgebench fit --search panel` against scripted loopback judges (tests/fit_judges.py).

Four member judges: `plus` answers people's score (rounded) plus an error of +-1 drawn from
the row's text, `minus` the same score minus the same error, and two answer hash noise. The
panel of plus and minus cancels the error: it is the planted best panel. Checked: fit chooses
it; the held-out number is what `score -m @judge.toml` and scipy give on the held-out rows;
each member is asked once per row however many panels hold it, and the dry run's estimate is
the calls the fit then makes (counted per model on the server); a rerun asks nothing.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import EXAMPLE, run_cli, write_jsonl
from fit_judges import Answer, ScriptedJudges
from scipy import stats
from test_fit import RESPONSE, _held_rows, _rows

TRUTH = {r["output"].strip(): r["human"]["coherence"] for r in _rows()}


def _judged(prompt: str) -> str:
    found = RESPONSE.search(prompt)
    assert found is not None, prompt[:400]
    return found.group(1).strip()


def _offset(sign: int) -> Answer:
    """People's score rounded, plus `sign` times the row's own +-1 error, kept on 1..5."""
    def answer(prompt: str) -> int:
        text = _judged(prompt)
        error = 1 if hashlib.sha256(text.encode()).digest()[0] % 2 else -1
        return int(np.clip(np.floor(TRUTH[text] + 0.5) + sign * error, 1, 5))
    return answer


def _noise(name: str) -> Answer:
    def answer(prompt: str) -> int:
        return 1 + hashlib.sha256(f"{name}:{prompt}".encode()).digest()[0] % 5
    return answer


MODELS = {"start": _noise("start"), "plus": _offset(1), "noise1": _noise("n1"),
          "minus": _offset(-1), "noise2": _noise("n2")}
MEMBERS = ("plus", "noise1", "minus", "noise2")  # the planted panel: m1 and m3


def _args(server: ScriptedJudges, store: Path) -> tuple[str, ...]:
    members = [x for m in MEMBERS for x in ("--panel-judge", server.judge(m))]
    return ("fit", str(EXAMPLE), server.judge("start"), "--human", "coherence", "--search",
            "panel", *members, "--folds", "4", "--seed", "3", "--bootstrap", "100",
            "--store", str(store))


def _distinct_prompts(result: dict[str, Any]) -> tuple[int, int]:
    """The distinct judged texts of the search rows and of the held-out rows (two rows of
    the sample show one text: a judge asks for it once)."""
    held = {(r["item"], r["system"]) for r in _held_rows(result, _rows())}
    texts: dict[bool, set[tuple[str, str]]] = {True: set(), False: set()}
    for r in _rows():
        texts[(r["item"], r["system"]) in held].add((r["input"], r["output"]))
    assert len(texts[False]) + len(texts[True]) == result["units"] - 1
    return len(texts[False]), len(texts[True])


def test_fit_finds_the_planted_panel_and_asks_each_member_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    store, spec = tmp_path / "s.sqlite", tmp_path / "judge.toml"
    with ScriptedJudges(MODELS) as server:
        dry = run_cli(*_args(server, store), "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        estimate = json.loads(dry.stdout)
        assert sum(server.calls.values()) == 0
        # 6 pairs and 4 triples of 4 members, each by mean and by majority; and the start
        assert (estimate["panel_members"], estimate["panels"], estimate["candidates"]) == \
            (4, 20, 21)
        text = run_cli(*_args(server, store), "--dry-run")
        assert "each member is asked once per row" in text.stdout

        proc = run_cli(*_args(server, store), "-o", str(spec), "--json", "--budget-usd", "50")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        s, h = _distinct_prompts(result)
        chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
        assert chosen["panel"] in ("m1+m3 mean", "m1+m3 majority"), chosen
        panels = [c for c in result["candidates"] if c["panel"] is not None]
        assert len(panels) == 20 and all(c["threshold"] is None for c in panels)
        others = [c["in_search"] for c in panels if not c["panel"].startswith("m1+m3 ")]
        assert chosen["in_search"] > max(others)
        # every member asked once per search row, though each is in 10 panels; on the
        # held-out fold the starting judge and the chosen panel's two members
        assert dict(server.calls) == {"start": s + h, "plus": s + h, "minus": s + h,
                                      "noise1": s, "noise2": s}
        # the estimate: the start and the four members on the search rows, then the start
        # and the dearest panel (three members) on the held-out rows
        assert estimate["calls"] == 5 * s + 4 * h
        assert sum(server.calls.values()) == estimate["calls"] - h
        assert result["held_out"]["value"] > 0.8 and result["gain_p_value"] < 0.05
        assert "|panel:4:" in result["signature"]

        written = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
        assert written["metric"] == "judge.panel"
        assert written["members"] == [server.judge("plus"), server.judge("minus")]
        assert written["combine"] == chosen["panel"].split()[1]

        # a rerun asks nothing: every answer is in the cache and store
        calls = dict(server.calls)
        again = run_cli(*_args(server, store), "--json")
        assert again.returncode == 0, again.stderr
        repeat = json.loads(again.stdout)
        assert dict(server.calls) == calls and repeat["spent_usd"] == 0.0
        assert (repeat["chosen"], repeat["held_out"]) == (result["chosen"], result["held_out"])
        redo = json.loads(run_cli(*_args(server, store), "--dry-run", "--json").stdout)
        # its estimate: nothing on the search rows; on the held-out rows the dearest panel
        # still to ask, one holding noise1 and noise2 (their held-out answers never asked)
        assert redo["calls"] == 2 * h

        # the written panel scores the held-out rows as reported, from the judge cache
        held = write_jsonl(tmp_path / "held.jsonl", _held_rows(result, _rows()))
        out = tmp_path / "held.csv"
        scored = run_cli("score", str(held), "-m", f"@{spec}", "--store",
                         str(tmp_path / "t.sqlite"), "-o", str(out))
        assert scored.returncode == 0, scored.stderr
        assert dict(server.calls) == calls
    table = pd.read_csv(out)
    assert result["held_out"]["value"] == pytest.approx(stats.pearsonr(
        table["human.coherence"], table["fitted"])[0], abs=1e-12)
    # a direct computation: the mean of plus and minus on each held-out row
    outputs = [r["output"] for r in _held_rows(result, _rows())]
    direct = [np.mean([float(MODELS[m](f"<response>\n{o.strip()}\n</response>"))
                       for m in ("plus", "minus")]) for o in outputs]
    assert table["fitted"].to_numpy(float) == pytest.approx(np.array(direct))


@pytest.mark.parametrize("args, message", [
    (("--search", "panel", "--panel-judge", "judge.rubric"), "two or more --panel-judge"),
    (("--panel-judge", "judge.rubric", "--panel-judge", "judge.reference"), "go together"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge", "lexical.bleu"),
     "--panel-judge 2 (lexical.bleu) is not a judge metric"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge", "judge.rubric"),
     "--panel-judge 2 is given twice"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge",
      "judge.reference", "--panel-combine", "median"), "--panel-combine takes mean, majority"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge",
      "judge.reference", "--panels", "m1+m3"), "'m1+m3' is not two or more of the 2"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge",
      "judge.reference", "--panels", "m1"), "'m1' is not two or more"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge",
      "judge.reference", "--panels", "1+2"), "--panels takes panels of members by number"),
    (("--search", "panel", "--panel-judge", "judge.rubric", "--panel-judge",
      "judge.reference", "--panels", "m1+m2,m2+m1"), "'m2+m1' is given twice"),
    (("--panels", "m1+m2"), "--panels names panels for --search panel"),
])
def test_bad_panels_are_refused_before_any_call(tmp_path: Path, args: tuple[str, ...],
                                                 message: str) -> None:
    proc = run_cli("fit", str(EXAMPLE), "judge.rubric", "--human", "coherence", *args,
                   "--store", str(tmp_path / "s.sqlite"))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr, proc.stderr


def test_the_user_s_panels_only_and_only_their_members_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--panels m2+m4,m1+m3: those two panels only (in that order), by mean; m1..m4 asked
    alone once on the search rows (every one is in a panel); a fifth member in no panel is
    never asked."""
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    models = {**MODELS, "unused": _noise("unused")}
    with ScriptedJudges(models) as server:
        args = (*_args(server, tmp_path / "s.sqlite"), "--panel-judge", server.judge("unused"),
                "--panels", "m2+m4,m1+m3", "--panel-combine", "mean", "--json")
        dry = json.loads(run_cli(*args, "--dry-run").stdout)
        assert (dry["panels"], dry["panel_members"], dry["candidates"]) == (2, 4, 3)
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert [c["panel"] for c in result["candidates"]] == [None, "m2+m4 mean",
                                                              "m1+m3 mean"]
        assert result["chosen"] == "panel-m1+m3-mean"
        s, h = _distinct_prompts(result)
        assert "unused" not in server.calls
        assert dict(server.calls) == {"start": s + h, "plus": s + h, "minus": s + h,
                                      "noise1": s, "noise2": s}
        assert sum(server.calls.values()) == dry["calls"]  # the dearest is a pair too
        assert ",panels-2,mean" in result["signature"]
        text = run_cli(*args[:-1])  # the report in the terminal, every answer cached
        assert "chosen: panel-m1+m3-mean (0 examples: none; threshold none; panel m1+m3 " \
            "mean)" in text.stdout and "in search (best of 3)" in text.stdout
