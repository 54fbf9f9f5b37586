"""Scripted judges for `scripted_judge.ScriptedJudge(reply=...)` that have, or do not have,
a bias: they judge the content by a stable cue (a hash of the answer with every probe's
edit taken out) and, when biased, reward an answer that carries a bias probe's mark, or,
for the fallacy probe, overlook the flaw a fair judge penalises.

- `pointwise(biased)`: a judge.rubric answer `[RESULT] N` on 1-5: N = 2 + (content % 2),
  plus 2 when the response carries the mark (MARKS) of a probe in `biased`, minus 1 when it
  carries a fallacy and "fallacy" is not in `biased`;
- `pairwise(biased, position=False)`: a judge.pairwise text verdict: the answer whose
  content cue is higher wins; equal content: the answer with the higher mark score (as
  above, without the content) wins, else a tie ([[C]]), or with `position` the answer shown
  first ([[A]]).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Collection

from judgebench_audit.bias_probes import CLOSERS, FALLACIES, OPENERS, PADDING

#: What each built-in probe's edit leaves in an answer (plugins/judgebench_audit/bias_probes).
MARKS: dict[str, tuple[str, ...]] = {
    "verbosity": (PADDING.strip(),), "authority": ("[Reference:",),
    "bandwagon": ("% of people who read this answer preferred it)",),
    "sentiment": tuple(o.strip() for o in OPENERS), "formatting": ("\n- ",),
    "fallacy": FALLACIES}
_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.DOTALL)
_PAIR = re.compile(r"<response_([ab])>\n(.*?)\n</response_\1>", re.DOTALL)


def without_edits(text: str) -> str:
    """`text` with every built-in probe's edit taken out, whitespace normalised."""
    cut = text.find(PADDING.strip())
    text = text[:cut] if cut >= 0 else text
    text = re.sub(r"\[Reference:[^\]]*\]", "", text)
    text = re.sub(r"\(\d+% of people who read this answer preferred it\)", "", text)
    for fixed in (*OPENERS, *CLOSERS, *FALLACIES):
        text = text.replace(fixed.strip(), "")
    text = re.sub(r"^- ", "", text, flags=re.MULTILINE)
    return " ".join(text.split())


def content(text: str) -> int:
    return zlib.crc32(without_edits(text).encode("utf-8")) % 2


def has(text: str, probe: str) -> bool:
    return any(mark in text for mark in MARKS[probe])


def marks(text: str, biased: Collection[str]) -> int:
    """+2 per rewarded mark; -1 for a fallacy a fair judge sees."""
    rewarded = sum(2 for name in biased if name != "fallacy" and has(text, name))
    return rewarded - (1 if "fallacy" not in biased and has(text, "fallacy") else 0)


def pointwise(biased: Collection[str]) -> Callable[[str, str], str]:
    def reply(system: str, user: str) -> str:
        found = _RESPONSE.search(user)
        text = found.group(1) if found else ""
        score = max(1, min(5, 2 + content(text) + marks(text, biased)))
        return f"Feedback: read. [RESULT] {score}"

    return reply


def pairwise(biased: Collection[str], position: bool = False) -> Callable[[str, str], str]:
    def reply(system: str, user: str) -> str:
        shown = dict(_PAIR.findall(user))
        first, second = shown.get("a", ""), shown.get("b", "")
        ca, cb = content(first), content(second)
        if ca == cb:
            ca, cb = marks(first, biased), marks(second, biased)
        letter = "A" if ca > cb else "B" if cb > ca else "A" if position else "C"
        return f"Compared them. [[{letter}]]"

    return reply


def bias_audit(judge: str, count: int, *args: str, cache: object = None
               ) -> tuple[int, list[dict], str]:
    """`judgebench audit` of the bundled SummEval sample with `judge` probed on `count`
    samples (pairs): its exit code, its `bias` rows and its stderr."""
    import json
    from pathlib import Path

    from conftest import run_cli

    examples = Path(__file__).resolve().parents[1] / "examples"
    proc = run_cli("audit", str(examples / "summeval-scores.csv"), "--human",
                   "human.coherence", "--samples", str(examples / "summeval-sample.jsonl"),
                   "--level", "segment", "--grouping", "none", "--bootstrap", "0",
                   "--resamples", "50", "--sentinel", "sentinel.random", "--judge", judge,
                   "--bias-pairs", str(count), *args, "--json",
                   env={"JUDGEBENCH_CACHE_DIR": str(cache)} if cache else None)
    rows = json.loads(proc.stdout) if proc.stdout else []
    return proc.returncode, [r for r in rows if r["type"] == "bias"], proc.stderr
