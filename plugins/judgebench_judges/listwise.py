"""judge.listwise: which of a prompt's N candidates is best (best of N, as RewardBench 2
asks of a reward model; Malik et al. 2025), one call per prompt.

A listwise sample (`judgebench.plugin_api.listwise_candidates`: `score` groups a listwise
file's rows by item) is shown as its question and its candidates labelled A, B, C, ... in an
order drawn from `order_seed` and the item (`order=shuffled`, default; the seed is in the
signature) or in the input's order (`order=given`). The answer is constrained where the
backend can (json: a schema whose `best` is one of the labels; two_stage: the continuation
after ``Best: [[`` one of the labels) and parsed strictly to the candidate's id: value = the
candidate's position in the input (0-based), `extra.pick` its id, `extra.shown` the ids in the
order shown. An answer naming no label, or two, is a parse error; a call that failed is its
status: never a pick made up.

Its pairwise reduction (the pick against each other candidate) is degenerate: a judge that
only picks scores 1 for one candidate and 0 for the rest, so the reduction is the same
accuracy seen another way; RewardBench 2's reduction is meaningful for reward models, whose
scores order every candidate.
"""

from __future__ import annotations

import hashlib
import random
import re
from typing import Any, ClassVar, Literal

from pydantic import Field

from judgebench.plugin_api import (
    MAX_SEED64,
    MIN_SEED64,
    MetricInfo,
    Outcome,
    Request,
    Sample,
    Status,
    listwise_candidates,
)
from judgebench_judges import parsing
from judgebench_judges.base import (
    JUDGED_EMPTY,
    JudgeMetric,
    JudgeOptions,
    MissingField,
    accounting,
    call_extra,
    failure_outcome,
    joined_raw,
)
from judgebench_judges.templates import as_data

#: Two-stage protocol: appended to the explanation; the continuation must start with a label.
MARKER = "\nBest: [["
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


class ListwiseOptions(JudgeOptions):
    #: shuffled: the candidates shown in an order drawn from order_seed and the item; given:
    #: in the input's order
    order: Literal["shuffled", "given"] = "shuffled"
    order_seed: int = Field(0, ge=MIN_SEED64, le=MAX_SEED64)


class ListwiseJudge(JudgeMetric[ListwiseOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.listwise", version="1", kind="judge", requires=("output",),
        empty_text=JUDGED_EMPTY, value_range=(0, None), deterministic=False, listwise=True,
        description="The best of a prompt's N candidates (one call per prompt, the order "
                    "shuffled by order_seed); value = the pick's position in the input, "
                    "extra.pick its id. `score` writes the listwise table (1 = the pick) "
                    "that `meta-eval listwise` reads.",
        citation="Malik et al. (2025). RewardBench 2: Advancing Reward Model Evaluation.",
    )
    Options = ListwiseOptions
    template_name = "listwise"
    parser_name = "listwise"
    placeholders: ClassVar[set[str]] = {"question", "responses", "format"}

    def shown(self, sample: Sample) -> list[tuple[str, str]]:
        """The candidates in the order shown (`order`)."""
        try:
            candidates = listwise_candidates(sample)
        except ValueError as exc:
            raise MissingField(str(exc)) from None
        if len(candidates) < 2:
            raise MissingField(f"item {sample.item} has {len(candidates)} candidate(s): "
                               "the best of N needs at least 2")
        if len(candidates) > len(LABELS):
            raise MissingField(f"item {sample.item} has {len(candidates)} candidates: "
                               f"judge.listwise labels at most {len(LABELS)}")
        if self.options.order == "given":
            return candidates
        digest = hashlib.sha256(f"{self.options.order_seed}\x00{sample.item}".encode())
        order = list(candidates)
        random.Random(int.from_bytes(digest.digest()[:8], "big")).shuffle(order)
        return order

    @staticmethod
    def schema(labels: list[str]) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"explanation": {"type": "string"},
                               "best": {"type": "string", "enum": labels}},
                "required": ["explanation", "best"], "additionalProperties": False}

    def format_instruction(self, labels: list[str]) -> str:
        listed = ", ".join(labels)
        if self.protocol == "json":
            return ('Answer with a JSON object with the keys "explanation" (a short string) '
                    f'and "best" (the label of the best response: one of {listed}), and '
                    "nothing else.")
        return ("After a short explanation, give the label of the best response in exactly "
                f'this format: "[[X]]", where X is one of {listed}.')

    def build_request(self, sample: Sample) -> tuple[Request, list[tuple[str, str]], list[str]]:
        shown = self.shown(sample)
        labels = list(LABELS[:len(shown)])
        blocks = [f"Response {label}:\n<response>\n{as_data(text)}\n</response>"
                  for label, (_, text) in zip(labels, shown, strict=True)]
        request = self.protocol_request(self.messages({
            "question": as_data(sample.input_text or "(no question given)"),
            "responses": "\n\n".join(blocks),
            "format": self.format_instruction(labels),
        }), self.schema(labels))
        return request, shown, labels

    def planned_requests(self, sample: Sample) -> list[Request]:
        request, _, labels = self.build_request(sample)
        return self.planned_two_stage(request, MARKER, max_tokens=3,
                                      choices=self.choices_after(labels, MARKER))

    async def judge(self, sample: Sample) -> Outcome:
        request, shown, labels = self.build_request(sample)
        ids = [cid for cid, _ in shown]
        extra: dict[str, Any] = {"shown": ids}
        answer = await self.ask(request)
        responses = [answer]
        raw = answer.text
        label: str | None = None
        try:
            if answer.error is None and self.protocol == "json":
                label = str(parsing.json_object(answer.text, self.schema(labels))["best"])
            elif answer.error is None and self.protocol == "text":
                label = picked(answer.text, labels)
            elif answer.error is None:
                follow, raw = await self.second_stage(
                    request, answer, MARKER, max_tokens=3,
                    choices=self.choices_after(labels, MARKER))
                responses.append(follow)
                if follow.error is None:
                    label = leading_pick(follow.text, labels)
        except parsing.ParseError as exc:
            return Outcome.failed(Status.PARSE_ERROR, str(exc), raw=joined_raw(responses),
                                  extra={**call_extra(responses), **extra},
                                  **accounting(responses))
        extra.update(call_extra(responses), raw=raw)
        if (failed := failure_outcome(responses, **extra)) is not None:
            return failed
        if label is None:
            raise AssertionError("every call answered and no label was read")
        pick = ids[labels.index(label)]
        order = [cid for cid, _ in listwise_candidates(sample)]
        extra.update(pick=pick, label=label)
        return Outcome(value=float(order.index(pick)), raw=raw, rationale=answer.text or None,
                       extra=extra, **accounting(responses))


def picked(text: str, labels: list[str]) -> str:
    """The one label in ``[[X]]`` marks of an answer; ParseError for none or several."""
    found = {m for m in re.findall(r"\[\[\s*([A-Z])\s*\]\]", text) if m in labels}
    if not found:
        raise parsing.ParseError(f"no pick '[[X]]' with X one of {', '.join(labels)} in the "
                                 "answer")
    if len(found) > 1:
        raise parsing.ParseError(f"conflicting picks {sorted(found)}")
    return found.pop()


def leading_pick(text: str, labels: list[str]) -> str:
    """The continuation after ``Best: [[`` must begin with one of `labels`."""
    match = re.match(r"\s*([A-Z])\s*(?:\]\]|\]|$)", text)
    if not match or match.group(1) not in labels:
        raise parsing.ParseError(f"the answer does not begin with one of {', '.join(labels)}: "
                                 f"{text[:40]!r}")
    return match.group(1)
