"""`judgebench fit --search criteria --rewrite-with SPEC` (critique shadowing) against
scripted loopback judges (tests/fit_judges.py).

The judge answers people's score (rounded) when its prompt holds PHRASE and hash noise
otherwise; the rewriter writes PHRASE into its second proposal only, and its third repeats the
first. Checked: fit chooses rewrite-2; the rewrite prompts show only search rows, the ones
where the starting judge is furthest from people (computed here from the judge's scripted
answers), and never a held-out row's text; the calls are the estimate's (one rewritten
wording fewer: the repeated one is not tried); a rerun asks nothing.
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
    assert "<criterion>" in prompt and RESPONSE.search(prompt) is None
    if "proposal 2 of 3" in prompt:
        return f"Thinking it over.\n<criterion>{PHRASE}: a coherent summary.</criterion>"
    return "<criterion>Is the summary good overall?</criterion>"


def _args(server: ScriptedJudges, store: Path) -> tuple[str, ...]:
    return ("fit", str(EXAMPLE), server.judge("start"), "--human", "coherence", "--search",
            "criteria", "--rewrite-with", server.judge("writer"), "--rewrites", "3",
            "--rewrite-rows", "6", "--folds", "4", "--seed", "3", "--bootstrap", "100",
            "--store", str(store))


def test_the_rewrite_with_the_planted_phrase_is_chosen_and_never_sees_the_held_out_fold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    store, spec = tmp_path / "s.sqlite", tmp_path / "judge.toml"
    with ScriptedJudges({"start": _start, "writer": _writer}) as server:
        dry = run_cli(*_args(server, store), "--dry-run", "--json")
        assert dry.returncode == 0, dry.stderr
        estimate = json.loads(dry.stdout)
        assert (estimate["rewrite_calls"], estimate["candidates"]) == (3, 4)
        assert sum(server.calls.values()) == 0

        proc = run_cli(*_args(server, store), "-o", str(spec), "--json", "--budget-usd", "50")
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert [(r["name"], r["reason"]) for r in result["rewrites"]] == [
            ("rewrite-1", None), ("rewrite-2", None),
            ("rewrite-3", "the same text as rewrite-1 (not tried twice)")]
        assert [c["criterion"] for c in result["candidates"]] == [None, "rewrite-1",
                                                                   "rewrite-2"]
        chosen = next(c for c in result["candidates"] if c["name"] == result["chosen"])
        assert chosen["criterion"] == "rewrite-2"
        assert result["held_out"]["value"] > 0.8 and result["gain_p_value"] < 0.05
        written = tomllib.loads(spec.read_text(encoding="utf-8"))["metrics"]["fitted"]
        assert written["definition"] == f"{PHRASE}: a coherent summary."
        rewrite_2 = hashlib.sha256(written["definition"].encode()).hexdigest()[:12]
        assert f"rewrite-2={rewrite_2}" in result["signature"]

        # the calls: the estimate counted three rewritten wordings, the third was not tried
        s, h = _distinct_prompts(result)
        assert server.calls["writer"] == 3
        assert server.calls["start"] == 3 * s + 2 * h
        assert sum(server.calls.values()) == estimate["calls"] - s

        # no held-out row's text in any rewrite prompt
        asked = [p for m, p in server.prompts if m == "writer"]
        assert len(asked) == 3
        held = _held_rows(result, _rows())
        for row in held:
            for prompt in asked:
                assert row["output"].strip() not in prompt
                assert row["input"][:200] not in prompt
        # the rows shown are search rows, those where the starting judge (its first answers,
        # before any rewrite) is furthest from people
        first = server.prompts[:next(i for i, (m, _) in enumerate(server.prompts)
                                     if m == "writer")]
        judged = {RESPONSE.search(p).group(1).strip(): _start(p)  # type: ignore[union-attr]
                  for _, p in first}
        held_keys = {(r["item"], r["system"]) for r in held}
        distance = {f"{r['item']}/{r['system']}": abs(judged[r["output"].strip()]
                                                      - r["human"]["coherence"])
                    for r in _rows() if (r["item"], r["system"]) not in held_keys}
        shown = result["rewrite_rows"]
        assert len(shown) == 6 and set(shown) <= set(distance)
        assert min(distance[u] for u in shown) >= max(
            d for u, d in distance.items() if u not in shown)
        for prompt in asked:
            rows = SHOWN.findall(prompt)
            assert len(rows) == 6
            for output, judge, human in rows:
                assert float(judge) == judged[output.strip()]
                assert any(abs(float(human) - r["human"]["coherence"]) < 5e-3
                           for r in _rows() if r["output"].strip() == output.strip())

        # a rerun asks nothing: the rewrites and every judgement come from the cache
        calls = dict(server.calls)
        again = run_cli(*_args(server, store), "--json")
        assert again.returncode == 0, again.stderr
        repeat = json.loads(again.stdout)
        assert dict(server.calls) == calls and repeat["spent_usd"] == 0.0
        assert (repeat["chosen"], repeat["held_out"]) == (result["chosen"], result["held_out"])


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
