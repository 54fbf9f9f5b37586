"""judge.pairwise: which of two responses is better, MT-Bench / LLMBar style (Zheng et al.
2023, "Judging LLM-as-a-Judge"; Zeng et al. 2024, "Evaluating LLMs at Evaluating Instruction
Following").

By default the pair is judged in both orders (A=output_a then A=output_b), since judges
favour a position. The combined winner is the one both orders agree on, else a tie
(MT-Bench's conservative rule). Value, from `system_a`'s side: 1 = a wins, 0 = b wins,
0.5 = tie. `extra` keeps each order's verdict (in terms of a/b), its raw answer, and `flip`:
whether swapping the order changed the verdict.

``mode=conversation`` compares two conversations from the same start: ``messages`` shown once,
then ``messages_a`` and ``messages_b`` (template pairwise_conversation.txt), in both orders.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

from judgebench.plugin_api import MetricInfo, Outcome, Request, Response, Sample, Status
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
    need,
)
from judgebench_judges.conversation import rendered
from judgebench_judges.templates import as_data

VALUE = {"a": 1.0, "b": 0.0, "tie": 0.5}
#: Two-stage protocol: appended to the model's explanation; its continuation must start with
#: the verdict letter.
MARKER = "\nVerdict: [["
#: What the continuation after MARKER may be (enforced where the backend can); C is a tie.
CHOICES = ("A", "B", "C")
SCHEMA = {
    "type": "object",
    "properties": {"explanation": {"type": "string"},
                   "verdict": {"type": "string", "enum": ["A", "B", "tie"]}},
    "required": ["explanation", "verdict"],
    "additionalProperties": False,
}


class PairwiseOptions(JudgeOptions):
    both_orders: bool = True
    #: response: the two outputs to the input; conversation: two conversations from the same
    #: start (`messages`, continued by `messages_a` and `messages_b`), shown whole
    mode: Literal["response", "conversation"] = "response"


class PairwiseJudge(JudgeMetric[PairwiseOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.pairwise", version="1", kind="judge", requires=("output_a", "output_b"),
        empty_text=JUDGED_EMPTY,
        value_range=(0, 1), deterministic=False,
        description="A vs B (MT-Bench/LLMBar style), both orders by default; 1 = a wins, "
                    "0 = b wins, 0.5 = tie or the orders disagree; per-order verdicts and flips "
                    "kept in extra.",
        citation="Zheng et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena. "
                 "NeurIPS Datasets and Benchmarks. Zeng et al. (2024). Evaluating Large "
                 "Language Models at Evaluating Instruction Following (LLMBar). ICLR.",
    )
    Options = PairwiseOptions
    template_name = "pairwise"
    parser_name = "pairwise"
    placeholders: ClassVar[set[str]] = {"question", "response_a", "response_b", "format"}
    conversation_placeholders: ClassVar[set[str]] = {"conversation", "conversation_a",
                                                     "conversation_b", "format"}

    def chosen_template(self) -> tuple[str, set[str]]:
        if self.options.mode == "conversation":
            return "pairwise_conversation", self.conversation_placeholders
        return super().chosen_template()

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        if self.options.mode == "response":  # signatures from before conversations
            fields.pop("mode", None)
        return fields

    def format_instruction(self) -> str:
        if self.protocol == "json":
            return ('Answer with a JSON object with the keys "explanation" (a short string) and '
                    '"verdict" ("A" if response A is better, "B" if response B is better, '
                    '"tie" if they are equally good), and nothing else.')
        return ("After a short explanation, give your verdict in exactly this format: "
                '"[[A]]" if response A is better, "[[B]]" if response B is better, '
                '"[[C]]" for a tie.')

    def order_request(self, sample: Sample, first: str, second: str) -> Request:
        if self.options.mode == "conversation":
            start = sample.messages or []
            tails = {"a": sample.messages_a or [], "b": sample.messages_b or []}
            # `first`/`second` name the sides in this order ("a"/"b", see `orders`)
            return self.protocol_request(self.messages({
                "conversation": rendered(start),
                "conversation_a": rendered(tails[first], start=len(start)),
                "conversation_b": rendered(tails[second], start=len(start)),
                "format": self.format_instruction(),
            }), SCHEMA)
        messages = self.messages({
            "question": as_data(sample.input_text or "(no question given)"),
            "response_a": as_data(first),
            "response_b": as_data(second),
            "format": self.format_instruction(),
        })
        return self.protocol_request(messages, SCHEMA)

    def orders(self, sample: Sample) -> list[tuple[str, str, str]]:
        if self.options.mode == "conversation":
            if sample.messages_a is None or sample.messages_b is None:
                raise MissingField(f"sample {sample.item}/{sample.system} has no "
                                   "'messages_a'/'messages_b' (mode=conversation compares two "
                                   "continuations of its 'messages')")
            sides = [("ab", "a", "b")]
            if self.options.both_orders:
                sides.append(("ba", "b", "a"))
            return sides
        a = need(sample, sample.output_a, "output_a")
        b = need(sample, sample.output_b, "output_b")
        pairs = [("ab", a, b)]
        if self.options.both_orders:
            pairs.append(("ba", b, a))
        return pairs

    def planned_requests(self, sample: Sample) -> list[Request]:
        planned = []
        for _, first, second in self.orders(sample):
            planned.extend(self.planned_two_stage(self.order_request(sample, first, second),
                                                  MARKER, max_tokens=3, choices=CHOICES))
        return planned

    async def one_order(self, sample: Sample, first: str, second: str
                        ) -> tuple[list[Response], str | None, str, str | None]:
        """(responses, verdict A/B/C or None, raw text, parse problem)."""
        req = self.order_request(sample, first, second)
        answer = await self.ask(req)
        responses = [answer]
        if answer.error is not None:
            return responses, None, answer.text, None
        try:
            if self.protocol == "json":
                data = parsing.json_object(answer.text, SCHEMA)
                return responses, {"tie": "C"}.get(data["verdict"], data["verdict"]), \
                    answer.text, None
            if self.protocol == "text":
                return responses, parsing.verdict(answer.text), answer.text, None
            follow, raw = await self.second_stage(req, answer, MARKER, max_tokens=3,
                                                  choices=CHOICES)
            responses.append(follow)
            if follow.error is not None:
                return responses, None, raw, None
            return responses, parsing.leading_verdict(follow.text), raw, None
        except parsing.ParseError as exc:
            return responses, None, joined_raw(responses), str(exc)

    async def judge(self, sample: Sample) -> Outcome:
        orders = self.orders(sample)
        results = await asyncio.gather(*(self.one_order(sample, f, s) for _, f, s in orders))
        responses = [r for rs, *_ in results for r in rs]
        extra: dict[str, Any] = call_extra(responses)
        verdicts: dict[str, str | None] = {}
        for (name, _, _), (_, letter, raw, _) in zip(orders, results, strict=True):
            verdicts[name] = None if letter is None else _to_systems(name, letter)
            extra[f"verdict_{name}"] = verdicts[name]
            extra[f"raw_{name}"] = raw
        if (failed := failure_outcome(responses, **extra)) is not None:
            return failed
        problems = [f"order {name}: {problem}" for (name, _, _), (_, _, _, problem)
                    in zip(orders, results, strict=True) if problem]
        if problems:
            return Outcome.failed(Status.PARSE_ERROR, "; ".join(problems),
                                  raw="\n===\n".join(r[2] for r in results), extra=extra,
                                  **accounting(responses))
        values = [v for v in verdicts.values() if v is not None]
        winner = values[0] if len(set(values)) == 1 else "tie"
        extra["winner"] = winner
        if self.options.both_orders:
            extra["flip"] = verdicts["ab"] != verdicts["ba"]
        return Outcome(value=VALUE[winner], raw="\n===\n".join(r[2] for r in results),
                       rationale=results[0][2], extra=extra, **accounting(responses))


def _to_systems(order: str, letter: str) -> str:
    """A verdict letter in one order -> "a", "b" or "tie" in terms of the sample's systems."""
    if letter == "C":
        return "tie"
    first_is_a = order == "ab"
    return ("a" if first_is_a else "b") if letter == "A" else ("b" if first_is_a else "a")
