"""judge.rubric's `invert=true`: the criterion worded negatively and the scale flipped, and
nothing else in the prompt changed (a metamorphic check of every message); the answer s is
mapped back to min + max - s under each protocol; the default's prompt and signature are as
before."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from judgebench.backends import Request, Response
from judgebench.models import Sample, Status

sys.path.insert(0, str(Path(__file__).parent))
from judgebench_judges.criteria import PRESETS
from test_judges_protocols import Scripted, judge, last, text

SAMPLE = Sample(item="q", system="s", input="Summarise the article.", output="A summary.",
                reference="The reference summary.")
_RUBRIC = re.compile(r"<rubric>\n(.*?)\n</rubric>", re.DOTALL)
EXAMPLES: list[dict[str, Any]] = [{"item": "e1", "output": "good one", "score": 5},
            {"item": "e2", "output": "weak one", "score": 2}]


def user_of(request: Request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


@pytest.mark.parametrize("criterion", sorted(PRESETS))
@pytest.mark.parametrize(("lo", "hi", "examples"), [(1, 5, False), (1, 5, True),
                                                    (0, 10, True), (-3, 2, False)])
def test_only_the_rubric_and_the_references_place_change(criterion: str, lo: int, hi: int,
                                                         examples: bool) -> None:
    backend = Scripted(lambda r: text("[RESULT] 1"), prefill=False)
    extra = {"examples": [{**e, "score": min(hi, max(lo, e["score"]))} for e in EXAMPLES]
             } if examples else {}
    plain, inverted = (judge("judge.rubric", backend, protocol="text", criterion=criterion,
                             min=lo, max=hi, invert=flag, **extra).first_request(SAMPLE)
                       for flag in (False, True))
    assert plain.messages[0] == inverted.messages[0]  # the system prompt
    p, i = user_of(plain), user_of(inverted)
    rubric_p, rubric_i = _RUBRIC.search(p), _RUBRIC.search(i)
    assert rubric_p is not None and rubric_i is not None
    outside_p = p.replace(rubric_p.group(0), "").replace("(would get the highest score)", "")
    outside_i = i.replace(rubric_i.group(0), "").replace(
        "(would get the lowest score, the best)", "")
    assert outside_p == outside_i
    name = PRESETS[criterion].name
    rows_p, rows_i = rubric_p.group(1).split("\n"), rubric_i.group(1).split("\n")
    assert rows_i[0] == rows_p[0].replace(
        f"{name}: ", f"Lack of {name.lower()}: how far the {PRESETS[criterion].object} "
                     "falls short of this: ")
    if (lo, hi) == (1, 5):
        levels_p = [row.split(": ", 1)[1] for row in rows_p[1:6]]
        levels_i = [row.split(": ", 1)[1] for row in rows_i[1:6]]
        assert levels_i == levels_p[::-1]
        assert [row.split(":")[0] for row in rows_i[1:6]] == [f"Score {k}" for k in range(1, 6)]
    else:
        assert rows_i[1] == f"Score {lo} is the best and score {hi} the worst."
    if examples:
        shown_p = [int(s) for s in re.findall(r"Score: (-?\d+)", rubric_p.group(1))]
        shown_i = [int(s) for s in re.findall(r"Score: (-?\d+)", rubric_i.group(1))]
        assert shown_i == [lo + hi - s for s in shown_p]
        head = "Scored examples (a person's scores):"
        tail_p, tail_i = (re.sub(r"Score: -?\d+", "Score:", r.group(1).split(head)[1])
                          for r in (rubric_p, rubric_i))
        assert tail_p == tail_i


@pytest.mark.parametrize("protocol", ["text", "json", "two_stage"])
@pytest.mark.parametrize(("lo", "hi", "answer"), [(1, 5, 2), (1, 5, 5), (0, 10, 3),
                                                  (-3, 2, -3)])
def test_the_answer_is_mapped_back_under_each_protocol(protocol: str, lo: int, hi: int,
                                                       answer: int) -> None:
    def reply(req: Request) -> Response:
        if protocol == "json":
            return text(json.dumps({"feedback": "read", "score": answer}))
        if last(req).endswith("[RESULT] "):
            return text(f"{answer}")
        return text(f"Feedback: read. [RESULT] {answer}" if protocol == "text" else " read.")

    backend = Scripted(reply, prefill=protocol == "two_stage", json_schema=protocol == "json")
    plain = judge("judge.rubric", backend, protocol=protocol, min=lo, max=hi,
                  scoring="text").score([SAMPLE])[0]
    inverted = judge("judge.rubric", backend, protocol=protocol, min=lo, max=hi, invert=True,
                     scoring="text").score([SAMPLE])[0]
    assert plain.status == inverted.status == Status.OK
    assert plain.value == answer and "inverted_score" not in plain.extra
    assert inverted.value == lo + hi - answer and inverted.extra["inverted_score"] == answer


def test_the_threshold_reads_the_mapped_back_score() -> None:
    backend = Scripted(lambda r: text("Feedback: x [RESULT] 2"), prefill=False)
    outcome = judge("judge.rubric", backend, protocol="text", invert=True,
                    threshold=4).score([SAMPLE])[0]
    assert (outcome.value, outcome.extra["score"], outcome.extra["inverted_score"]) == (
        1.0, 4.0, 2.0)


def test_the_default_signature_is_as_before_and_invert_is_signed() -> None:
    backend = Scripted(lambda r: text("[RESULT] 1"), prefill=False)
    default = judge("judge.rubric", backend, protocol="text").signature()
    explicit = judge("judge.rubric", backend, protocol="text", invert=False).signature()
    inverted = judge("judge.rubric", backend, protocol="text", invert=True).signature()
    assert str(default) == str(explicit) and "invert" not in default.fields
    assert inverted.fields["invert"] == "yes" and str(inverted) != str(default)
