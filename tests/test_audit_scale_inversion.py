"""The scale-inversion probe through `judgebench audit` on the bundled SummEval sample,
against scripted judge.rubric judges on real loopback OpenAI-compatible servers: a judge that
reads the criterion's wording (a negatively worded criterion gets the flipped score) is not
moved by the inversion, one that gives the same numbers whatever the wording is found
biased, and `--fail-on bias:scale-inversion>X` gates on it (exit 4)."""

from __future__ import annotations

import json
import re
import sys
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from bias_script import bias_audit
from conftest import run_cli
from scripted_judge import ScriptedJudge

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
COUNT = 10
_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.DOTALL)


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")


def reply(biased: bool):
    """A text-protocol judge.rubric answer on 1-5: the content's score c = 1 + (a hash of
    the response % 2); under a negatively worded criterion ("Lack of ...") a fair judge
    answers 6 - c, a biased one c all the same (mapped back: 6 - c > c, a move up)."""
    def answer(system: str, user: str) -> str:
        found = _RESPONSE.search(user)
        c = 1 + zlib.crc32((found.group(1) if found else "").encode("utf-8")) % 2
        inverted = "<rubric>\nLack of " in user
        return f"Feedback: read. [RESULT] {6 - c if inverted and not biased else c}"

    return answer


def audit(url: str, *args: str, cache: Path | None = None) -> tuple[int, list[dict], str]:
    judge = f"judge.rubric:backend=openai_compat,model=m,api_base={url},protocol=text"
    return bias_audit(judge, COUNT, *args, cache=cache)


@pytest.mark.parametrize("biased", [True, False], ids=["biased", "fair"])
def test_a_judge_blind_to_the_wording_is_found_and_a_fair_one_is_not(biased: bool) -> None:
    with ScriptedJudge(reply=reply(biased)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "scale-inversion")
        prompts = server.prompts
    assert code == 0, stderr
    assert [(r["probe"], r["measure"]) for r in rows] == [("scale-inversion", "shift")]
    row = rows[0]
    extra = row["extra"]
    assert row["n"] == COUNT and extra["failed"] == 0 and extra["mode"] == "pointwise"
    value = 1.0 if biased else 0.0
    bound = 1 - 0.025 ** (1 / COUNT)  # every unit alike: Clopper-Pearson, 0.31 on 10
    assert row["value"] == value
    assert extra["ci_low"] == pytest.approx(max(-1, value - bound * (value + 1)))
    assert extra["ci_high"] == pytest.approx(min(1, value + bound * (1 - value)))
    assert extra["verdict"] == ("biased" if biased else "inconclusive")
    assert extra["signature"].startswith("bias.scale-inversion@")
    assert "mode:pointwise" in extra["signature"]
    # each sample scored plainly and inverted: 6 - 2c moves 4 (c=1) or 2 (c=2); fair: 0
    cues = [1 + zlib.crc32(m.group(1).encode("utf-8")) % 2
            for p in prompts if "Lack of" not in p[-1]["content"]
            and (m := _RESPONSE.search(p[-1]["content"]))]
    assert len(prompts) == 2 * COUNT and len(cues) == COUNT
    assert extra["mean_delta"] == pytest.approx(
        sum(6 - 2 * c for c in cues) / COUNT if biased else 0.0)


def test_fail_on_scale_inversion_exits_4_for_a_biased_judge_and_0_for_a_fair_one(
        tmp_path: Path) -> None:
    with ScriptedJudge(reply=reply(True)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "scale-inversion",
                                   "--fail-on", "bias:scale-inversion>0.25")
    assert code == 4, stderr
    assert "scale-inversion moves it by +1.000" in stderr
    assert rows[0]["extra"]["threshold"] == 0.25
    with ScriptedJudge(reply=reply(False)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "scale-inversion",
                                   "--fail-on", "bias:scale-inversion>0.25",
                                   cache=tmp_path / "fresh")
    assert code == 0, stderr
    assert rows[0]["extra"]["verdict"] == "inconclusive"  # not a bias, not ruled out on 10


def test_scale_inversion_asked_of_a_judge_without_invert_is_a_skipped_row() -> None:
    with ScriptedJudge(reply=lambda system, user: "2") as server:
        judge = (f"judge.geval:backend=openai_compat,model=m,api_base={server.url},"
                 "protocol=text,steps=Read it.")
        proc = run_cli("audit", str(EXAMPLES / "summeval-scores.csv"), "--human",
                       "human.coherence", "--samples", str(EXAMPLES / "summeval-sample.jsonl"),
                       "--judge", judge, "--bias-probe", "scale-inversion", "--bootstrap",
                       "0", "--resamples", "50", "--sentinel", "sentinel.random",
                       "--bias-pairs", "3", "--json")
        assert server.calls == 0
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["type"] == "bias"]
    assert [(r["probe"], r["measure"], r["note"]) for r in rows] == [
        ("scale-inversion", "skipped",
         "skipped: the judge has no invert= option (judge.rubric has)")]
