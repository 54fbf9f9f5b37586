"""Self-preference of a judge that scores one output, through `judgebench audit` on the
bundled SummEval sample against a scripted loopback judge that agrees with people, with and
without a bonus for its own family's answers: found when present (exit 4 under --fail-on),
not invented when absent."""

from __future__ import annotations

import json
import re
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli
from scripted_judge import ScriptedJudge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")


def rubric(server: ScriptedJudge) -> str:
    return f"judge.rubric:backend=openai_compat,model=m,api_base={server.url},protocol=text"


def quality(text: str) -> int:
    return 1 + zlib.crc32(text.encode("utf-8")) % 3


def self_preferring(own: set[str], bias: int) -> Callable[[str, str], str]:
    """A rubric judge that gives each answer its quality (the people's score of the table
    below), plus `bias` for an answer of its own family (capped at 5)."""
    def reply(system: str, user: str) -> str:
        found = re.search(r"<response>\n(.*?)\n</response>", user, re.DOTALL)
        text = found.group(1) if found else ""
        return f"Feedback: read. [RESULT] {min(5, quality(text) + (bias if text in own else 0))}"

    return reply


@pytest.mark.parametrize("bias", [2, 0])
def test_self_preference_of_a_pointwise_judge_is_found_against_people(tmp_path: Path,
                                                                      bias: int) -> None:
    """People score each answer by its quality; the judge agrees with them, and with a
    bias adds 2 to its own family's (M0, M1) answers."""
    records = [json.loads(line) for line in
               (EXAMPLES / "summeval-sample.jsonl").read_text(encoding="utf-8").splitlines()]
    scores = tmp_path / "scores.csv"
    pd.DataFrame([{"item": r["item"], "system": r["system"], "human.q": quality(r["output"]),
                   "m": len(r["output"])} for r in records]).to_csv(scores, index=False)
    own = {r["output"] for r in records if r["system"] in ("M0", "M1")}
    with ScriptedJudge(reply=self_preferring(own, bias)) as server:
        proc = run_cli("audit", str(scores), "--human", "human.q", "--samples",
                       str(EXAMPLES / "summeval-sample.jsonl"), "--level", "segment",
                       "--grouping", "none", "--bootstrap", "0", "--resamples", "50",
                       "--sentinel", "sentinel.random", "--judge", rubric(server),
                       "--bias-probe", "self-preference", "--bias-pairs", "20",
                       "--judge-family", "smol", "--system-family", "M0=smol",
                       "--system-family", "M1=smol", "--system-family", "M2=other",
                       "--system-family", "M5=other", "--system-family", "M8=other",
                       "--fail-on", "bias:self-preference>0.1", "--json")
    assert proc.returncode == (4 if bias else 0), proc.stderr
    [row] = [r for r in json.loads(proc.stdout) if r["type"] == "bias"]
    extra = row["extra"]
    assert (row["probe"], row["measure"], extra["mode"]) == ("self-preference", "shift",
                                                             "pointwise")
    # 4 items x 2 own x 3 other systems with a family: 24 pairs, 20 drawn
    assert row["n"] == extra["pairs"] == 20 and extra["family"] == "smol"
    if bias:
        assert extra["verdict"] == "biased" and row["value"] >= 0.25 and extra["ci_low"] > 0.1
        assert "FAIL judge.rubric:" in proc.stderr
    else:
        # no pair moved: 20 pairs bound the shift only to +-0.168 (Clopper-Pearson)
        assert (row["value"], extra["verdict"]) == (0.0, "inconclusive")
        assert extra["ci_low"] == pytest.approx(-(1 - 0.025 ** (1 / 20)))
