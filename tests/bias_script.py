"""Scripted judges for `scripted_judge.ScriptedJudge(reply=...)` that have, or do not have,
a bias: they judge the content by a stable cue (the first word of an answer) and, when
biased, reward an answer that carries a bias probe's mark.

- `pointwise(biased)`: a judge.rubric answer `[RESULT] N` on 1-5: N = 1 + crc32(first
  word) % 3 (1-3; no probe's edit touches the first word), plus 2 for each probe in `biased`
  whose mark (MARKS) the response carries (capped at 5);
- `pairwise(biased, position=False)`: a judge.pairwise text verdict: an answer whose
  content cue is higher wins; equal content: the one that alone carries a mark of `biased`
  wins, else a tie ([[C]]), or with `position` the answer shown first ([[A]]).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Collection

#: What each built-in probe's edit leaves in an answer (plugins/judgebench_audit/bias_probes).
MARKS = {"verbosity": "To restate it clearly", "authority": "[Reference:",
         "bandwagon": "% of people who read this answer preferred it)"}
_RESPONSE = re.compile(r"<response>\n(.*?)\n</response>", re.DOTALL)
_PAIR = re.compile(r"<response_([ab])>\n(.*?)\n</response_\1>", re.DOTALL)


def content(text: str) -> int:
    words = text.split()
    return zlib.crc32(words[0].encode("utf-8")) % 3 if words else 0


def marked(text: str, biased: Collection[str]) -> int:
    return sum(1 for name in biased if MARKS[name] in text)


def pointwise(biased: Collection[str]) -> Callable[[str, str], str]:
    def reply(system: str, user: str) -> str:
        found = _RESPONSE.search(user)
        text = found.group(1) if found else ""
        score = min(5, 1 + content(text) + 2 * marked(text, biased))
        return f"Feedback: read. [RESULT] {score}"

    return reply


def pairwise(biased: Collection[str], position: bool = False) -> Callable[[str, str], str]:
    def reply(system: str, user: str) -> str:
        shown = dict(_PAIR.findall(user))
        first, second = shown.get("a", ""), shown.get("b", "")
        ca, cb = content(first), content(second)
        if ca == cb:
            ca, cb = marked(first, biased), marked(second, biased)
        letter = "A" if ca > cb else "B" if cb > ca else "A" if position else "C"
        return f"Compared them. [[{letter}]]"

    return reply
