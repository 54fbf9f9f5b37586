"""judge.pairwise: which of two responses is better, MT-Bench / LLMBar style (Zheng et al.
2023, "Judging LLM-as-a-Judge"; Zeng et al. 2024, "Evaluating LLMs at Evaluating Instruction
Following").

By default the pair is judged in both orders (A=output_a then A=output_b), since judges
favour a position. The combined winner is the one both orders agree on, else a tie
(MT-Bench's conservative rule). Value, from `system_a`'s side: 1 = a wins, 0 = b wins,
0.5 = tie. `extra` keeps each order's verdict (in terms of a/b), its raw answer, and `flip`:
whether swapping the order changed the verdict.

``labels`` names the two responses in the prompt and the verdict tokens the parser expects:
``ab`` (default: "Response A"/"Response B", ``[[A]]``/``[[B]]``/``[[C]]``, the signature as
before), ``12`` ("Response 1"/"Response 2", ``[[1]]``/``[[2]]``/``[[tie]]``) or ``random-ids``
(two five-character ids drawn from a hash of the question and the two responses in the order
shown, so a request is the same each time; ``[[tie]]`` a tie). Only the labels change (template
pairwise_labels.txt: pairwise.txt with ``{{label_a}}``/``{{label_b}}`` for A and B); the
audit's label-scheme probe judges the same pairs under each.

``mode=conversation`` compares two conversations from the same start: ``messages`` shown once,
then ``messages_a`` and ``messages_b`` (template pairwise_conversation.txt), in both orders.
"""

from __future__ import annotations

import asyncio
import hashlib
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
#: labels= -> (first, second, tie) as shown and parsed; random-ids draws its own per request.
LABELS: dict[str, tuple[str, str, str]] = {"ab": ("A", "B", "C"), "12": ("1", "2", "tie")}
ID_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
SCHEMA: dict[str, Any] = {
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


class PairwiseLabelOptions(PairwiseOptions):
    """judge.pairwise's own options (a judge built on it, judge.prometheus_relative, has its
    own template and takes no labels=)."""

    #: how the responses are labelled in the prompt and the verdict: A/B (ab), 1/2 (12) or
    #: ids drawn per request (random-ids)
    labels: Literal["ab", "12", "random-ids"] = "ab"


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
    Options = PairwiseLabelOptions
    template_name = "pairwise"
    parser_name = "pairwise"
    placeholders: ClassVar[set[str]] = {"question", "response_a", "response_b", "format"}
    conversation_placeholders: ClassVar[set[str]] = {"conversation", "conversation_a",
                                                     "conversation_b", "format"}

    @property
    def scheme(self) -> str:
        """labels= (ab where the judge's options have none)."""
        return str(getattr(self.options, "labels", "ab"))

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.scheme != "ab" and self.options.mode == "conversation":
            from judgebench.plugin_api import InputError

            raise InputError(f"metric {self.info.name}: labels= applies to mode=response "
                             "only", field="labels")

    def chosen_template(self) -> tuple[str, set[str]]:
        if self.options.mode == "conversation":
            return "pairwise_conversation", self.conversation_placeholders
        if self.scheme != "ab":
            return "pairwise_labels", self.placeholders | {"label_a", "label_b"}
        return super().chosen_template()

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        if self.options.mode == "response":  # signatures from before conversations
            fields.pop("mode", None)
        if self.scheme == "ab":  # signatures from before labels=
            fields.pop("labels", None)
        return fields

    def shown_labels(self, sample: Sample, first: str, second: str) -> tuple[str, str, str]:
        """(first, second, tie) labels of one presentation (`first` shown first)."""
        if self.scheme != "random-ids" or self.options.mode == "conversation":
            return LABELS[self.scheme]
        shown = [sample.input_text or "", first, second]
        for attempt in range(64):
            digest = hashlib.sha256(json_text([*shown, attempt]).encode()).digest()
            ids = ["".join(ID_ALPHABET[b % len(ID_ALPHABET)] for b in digest[k:k + 5])
                   for k in (0, 5)]
            if ids[0] != ids[1]:
                break
        return ids[0], ids[1], "tie"

    def schema(self, labels: tuple[str, str, str]) -> dict[str, Any]:
        if self.scheme == "ab":
            return SCHEMA
        verdict = {"type": "string", "enum": [labels[0], labels[1], "tie"]}
        return {**SCHEMA, "properties": {**SCHEMA["properties"], "verdict": verdict}}

    def format_instruction(self, labels: tuple[str, str, str] = LABELS["ab"]) -> str:
        if self.scheme == "ab":
            if self.protocol == "json":
                return ('Answer with a JSON object with the keys "explanation" (a short string) '
                        'and "verdict" ("A" if response A is better, "B" if response B is '
                        'better, "tie" if they are equally good), and nothing else.')
            return ("After a short explanation, give your verdict in exactly this format: "
                    '"[[A]]" if response A is better, "[[B]]" if response B is better, '
                    '"[[C]]" for a tie.')
        a, b, tie = labels
        if self.protocol == "json":
            return ('Answer with a JSON object with the keys "explanation" (a short string) and '
                    f'"verdict" ("{a}" if response {a} is better, "{b}" if response {b} is '
                    'better, "tie" if they are equally good), and nothing else.')
        return ("After a short explanation, give your verdict in exactly this format: "
                f'"[[{a}]]" if response {a} is better, "[[{b}]]" if response {b} is better, '
                f'"[[{tie}]]" for a tie.')

    @property
    def verdict_tokens(self) -> int:
        """The second stage's max_tokens: a letter (3, as before labels=) or an id."""
        return 3 if self.scheme == "ab" else 8

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
        labels = self.shown_labels(sample, first, second)
        values = {
            "question": as_data(sample.input_text or "(no question given)"),
            "response_a": as_data(first),
            "response_b": as_data(second),
            "format": self.format_instruction(labels),
        }
        if self.scheme != "ab":
            values.update(label_a=labels[0], label_b=labels[1])
        return self.protocol_request(self.messages(values), self.schema(labels))

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
            planned.extend(self.planned_two_stage(
                self.order_request(sample, first, second), MARKER,
                max_tokens=self.verdict_tokens, choices=self.choices(sample, first, second)))
        return planned

    async def one_order(self, sample: Sample, first: str, second: str
                        ) -> tuple[list[Response], str | None, str, str | None]:
        """(responses, verdict A/B/C or None, raw text, parse problem)."""
        req = self.order_request(sample, first, second)
        labels = self.shown_labels(sample, first, second)
        answer = await self.ask(req)
        responses = [answer]
        if answer.error is not None:
            return responses, None, answer.text, None
        try:
            if self.protocol == "json":
                data = parsing.json_object(answer.text, self.schema(labels))
                return responses, _letter(data["verdict"], labels), answer.text, None
            if self.protocol == "text":
                return responses, self.parsed(answer.text, labels, leading=False), \
                    answer.text, None
            follow, raw = await self.second_stage(req, answer, MARKER,
                                                  max_tokens=self.verdict_tokens,
                                                  choices=self.choices(sample, first, second))
            responses.append(follow)
            if follow.error is not None:
                return responses, None, raw, None
            return responses, self.parsed(follow.text, labels, leading=True), raw, None
        except parsing.ParseError as exc:
            return responses, None, joined_raw(responses), str(exc)

    def choices(self, sample: Sample, first: str, second: str) -> tuple[str, ...]:
        """What the continuation after MARKER may be (C, or tie, a tie)."""
        if self.scheme == "ab":
            return CHOICES
        return self.shown_labels(sample, first, second)

    def parsed(self, text: str, labels: tuple[str, str, str], *, leading: bool) -> str:
        """A, B or C from an answer (`leading`: a continuation after MARKER)."""
        if self.scheme == "ab":
            return parsing.leading_verdict(text) if leading else parsing.verdict(text)
        return (parsing.leading_labelled_verdict(text, labels) if leading
                else parsing.labelled_verdict(text, labels))

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


def _letter(verdict: str, labels: tuple[str, str, str]) -> str:
    """A JSON verdict (a label or "tie") -> A, B or C."""
    if verdict == "tie":
        return "C"
    return "ABC"[labels.index(verdict)] if verdict in labels[:2] else verdict


def json_text(values: list[Any]) -> str:
    import json

    return json.dumps(values, ensure_ascii=False)


def _to_systems(order: str, letter: str) -> str:
    """A verdict letter in one order -> "a", "b" or "tie" in terms of the sample's systems."""
    if letter == "C":
        return "tie"
    first_is_a = order == "ab"
    return ("a" if first_is_a else "b") if letter == "A" else ("b" if first_is_a else "a")
