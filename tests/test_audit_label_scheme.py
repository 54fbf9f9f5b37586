"""The label-scheme probe through `judgebench audit` on the bundled SummEval sample, against
scripted judge.pairwise judges on real loopback OpenAI-compatible servers: a judge whose
verdict depends on the labels ("A/B" vs "1/2" vs random ids) is found biased, one that reads
only the content is not, and `--fail-on bias:label-scheme>X` gates on it (exit 4)."""

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
_SHOWN = re.compile(r"^Response (\S+):\n<response_([ab])>\n(.*?)\n</response_\2>",
                    re.DOTALL | re.MULTILINE)
_TIE = re.compile(r'"\[\[(\w+)\]\]" for a tie')


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")


def content(text: str) -> int:
    return zlib.crc32(" ".join(text.split()).encode("utf-8")) % 3


def reply(biased: bool):
    """A text-protocol judge.pairwise answer in the prompt's own labels: the response with
    the higher content cue wins, equal cues tie. Biased: under labels other than A/B it
    answers as if the labels were ranks it cannot follow: the tie where the cues differ, the
    first label where they are equal (so every pair's verdict changes with the labels)."""
    def answer(system: str, user: str) -> str:
        found = _SHOWN.findall(user)
        labels = {side: label for label, side, _ in found}
        texts = {side: text for _, side, text in found}
        tie = found_tie.group(1) if (found_tie := _TIE.search(user)) else "C"
        ca, cb = content(texts["a"]), content(texts["b"])
        winner = labels["a"] if ca > cb else labels["b"] if cb > ca else tie
        if biased and labels["a"] != "A":
            winner = labels["a"] if ca == cb else tie
        return f"Compared them. [[{winner}]]"

    return answer


def audit(url: str, *args: str, cache: Path | None = None) -> tuple[int, list[dict], str]:
    judge = f"judge.pairwise:backend=openai_compat,model=m,api_base={url},protocol=text"
    return bias_audit(judge, COUNT, *args, cache=cache)


@pytest.mark.parametrize("biased", [True, False], ids=["biased", "fair"])
def test_a_judge_whose_verdict_follows_the_labels_is_found_and_a_fair_one_is_not(
        biased: bool) -> None:
    with ScriptedJudge(reply=reply(biased)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "label-scheme")
        prompts = server.prompts
    assert code == 0, stderr
    assert [(r["probe"], r["measure"]) for r in rows] == [("label-scheme", "shift")]
    row = rows[0]
    extra = row["extra"]
    assert row["n"] == COUNT and extra["failed"] == 0 and extra["mode"] == "pairwise"
    value = 1.0 if biased else 0.0
    bound = 1 - 0.025 ** (1 / COUNT)  # every unit alike: Clopper-Pearson, 0.31 on 10
    assert row["value"] == value
    # a share in [0, 1]: [0, 0.31] where no verdict changed, [0.69, 1] where every one did
    assert extra["ci_low"] == pytest.approx(max(0, value - bound * value))
    assert extra["ci_high"] == pytest.approx(min(1, value + bound * (1 - value)))
    assert extra["verdict"] == ("biased" if biased else "inconclusive")
    assert extra["signature"].startswith("bias.label-scheme@")
    assert "mode:pairwise" in extra["signature"] and "statistic:shift" in extra["signature"]
    # each pair judged in the order shown (the one the probe reads) under each scheme
    assert len(prompts) == 3 * COUNT
    shown = {tuple(label for label, _, _ in _SHOWN.findall(m[-1]["content"]))
             for m in prompts}
    assert {("A", "B"), ("1", "2")} < shown and len(shown) == 2 + COUNT
    counts = {s: extra[f"verdicts_{s}"] for s in extra["schemes"]}
    assert all(sum(c.values()) == COUNT for c in counts.values())
    if not biased:
        assert counts["ab"] == counts["12"] == counts["random-ids"]


def test_fail_on_label_scheme_exits_4_for_a_biased_judge_and_0_for_a_fair_one(
        tmp_path: Path) -> None:
    with ScriptedJudge(reply=reply(True)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "label-scheme",
                                   "--fail-on", "bias:label-scheme>0.2")
    assert code == 4, stderr
    assert "label-scheme moves it by +1.000" in stderr
    assert rows[0]["extra"]["threshold"] == 0.2
    with ScriptedJudge(reply=reply(False)) as server:
        code, rows, stderr = audit(server.url, "--bias-probe", "label-scheme",
                                   "--fail-on", "bias:label-scheme>0.2",
                                   cache=tmp_path / "fresh")
    assert code == 0, stderr
    assert rows[0]["extra"]["verdict"] == "inconclusive"  # not a bias, not ruled out on 10


def test_label_scheme_asked_of_a_pointwise_judge_is_refused_before_any_work() -> None:
    with ScriptedJudge(reply=reply(False)) as server:
        judge = f"judge.rubric:backend=openai_compat,model=m,api_base={server.url}"
        proc = run_cli("audit", str(EXAMPLES / "summeval-scores.csv"), "--human",
                       "human.coherence", "--samples", str(EXAMPLES / "summeval-sample.jsonl"),
                       "--judge", judge, "--bias-probe", "label-scheme", "--bootstrap", "0")
        assert server.calls == 0
    assert proc.returncode == 2
    assert "field '--judge'" in proc.stderr and "label-scheme" in proc.stderr


def test_label_scheme_asked_of_a_pairwise_judge_without_labels_is_a_skipped_row() -> None:
    with ScriptedJudge(reply=reply(False)) as server:
        judge = f"judge.prometheus_relative:backend=openai_compat,model=m,api_base={server.url}"
        proc = run_cli("audit", str(EXAMPLES / "summeval-scores.csv"), "--human",
                       "human.coherence", "--samples", str(EXAMPLES / "summeval-sample.jsonl"),
                       "--judge", judge, "--bias-probe", "label-scheme", "--bootstrap", "0",
                       "--resamples", "50", "--sentinel", "sentinel.random", "--bias-pairs",
                       "3", "--json")
        assert server.calls == 0
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["type"] == "bias"]
    assert [(r["probe"], r["measure"], r["note"]) for r in rows] == [
        ("label-scheme", "skipped",
         "skipped: the judge has no labels= option (judge.pairwise has)")]
