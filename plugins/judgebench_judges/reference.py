"""judge.reference: is the response correct, judged against a reference answer?

``mode=binary`` gives 1 (correct) or 0 (incorrect); ``mode=graded`` an integer from ``min``
to ``max`` (how fully the response matches the reference). With several references, any of
them counts as a correct answer.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from judgebench.plugin_api import MAX_SCALE, MetricInfo, Outcome, Request, Sample
from judgebench_judges import parsing
from judgebench_judges.base import (
    JUDGED_EMPTY,
    JudgeMetric,
    JudgeOptions,
    call_extra,
    failure_outcome,
    judged,
    need,
    parse_failure,
)
from judgebench_judges.rubric import score_schema
from judgebench_judges.templates import as_data

BINARY_SCHEMA = {
    "type": "object",
    "properties": {"explanation": {"type": "string"},
                   "verdict": {"type": "string", "enum": ["CORRECT", "INCORRECT"]}},
    "required": ["explanation", "verdict"],
    "additionalProperties": False,
}


class ReferenceOptions(JudgeOptions):
    mode: Literal["binary", "graded"] = "binary"
    min: int = Field(1, ge=-MAX_SCALE, le=MAX_SCALE)
    max: int = Field(5, ge=-MAX_SCALE, le=MAX_SCALE)


class ReferenceJudge(JudgeMetric[ReferenceOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.reference", version="1", kind="judge", requires=("output", "reference"),
        empty_text=JUDGED_EMPTY,
        value_range=(0, 5), deterministic=False,
        description="Correctness against a reference answer: binary (1/0) or graded (min..max).",
        citation="Zheng et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena. "
                 "NeurIPS Datasets and Benchmarks (reference-guided grading).",
    )
    Options = ReferenceOptions
    template_name = "reference"
    parser_name = "reference"
    placeholders: ClassVar[set[str]] = {"question", "reference", "response", "format"}

    @property
    def schema(self) -> dict[str, Any]:
        o = self.options
        return BINARY_SCHEMA if o.mode == "binary" else score_schema(o.min, o.max, "explanation")

    @property
    def marker(self) -> str:
        return "\nVerdict: [[" if self.options.mode == "binary" else " [RESULT]"

    @property
    def answer_choices(self) -> tuple[str, ...]:
        """What the two-stage continuation after the marker may be."""
        o = self.options
        values = (["CORRECT", "INCORRECT"] if o.mode == "binary"
                  else [str(s) for s in range(o.min, o.max + 1)])
        return self.choices_after(values, self.marker)

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["parser"] = f"reference-{self.options.mode}-{self.protocol}-{parsing.VERSION}"
        if self.options.mode == "binary":
            fields.pop("min", None)
            fields.pop("max", None)
        return fields

    def format_instruction(self) -> str:
        o = self.options
        if self.protocol == "json":
            if o.mode == "binary":
                return ('Answer with a JSON object with the keys "explanation" (a short string) '
                        'and "verdict" ("CORRECT" or "INCORRECT"), and nothing else.')
            return ('Answer with a JSON object with the keys "explanation" (a short string) and '
                    f'"score" (an integer from {o.min} to {o.max}: how fully the response '
                    "gives the reference's answer), and nothing else.")
        if o.mode == "binary":
            return ("After a short explanation, give your verdict in exactly this format: "
                    '"[[CORRECT]]" or "[[INCORRECT]]".')
        return ("After a short explanation, give a score for how fully the response gives the "
                f"reference's answer, in exactly this format: [RESULT] <an integer from {o.min} "
                f"to {o.max}>")

    def first_request(self, sample: Sample) -> Request:
        refs = sample.references
        if not refs:
            need(sample, None, "reference")
        reference = refs[0] if len(refs) == 1 else "\n".join(
            f"({i}) {r}" for i, r in enumerate(refs, start=1)
        )
        messages = self.messages({
            "question": as_data(sample.input_text or "(no question given)"),
            "reference": as_data(reference),
            "response": as_data(need(sample, sample.output, "output")),
            "format": self.format_instruction(),
        })
        return self.protocol_request(messages, self.schema)

    def planned_requests(self, sample: Sample) -> list[Request]:
        return self.planned_two_stage(self.first_request(sample), self.marker, max_tokens=4,
                                      choices=self.answer_choices)

    async def judge(self, sample: Sample) -> Outcome:
        o = self.options
        first = self.first_request(sample)
        answer = await self.ask(first)
        responses = [answer]
        if (failed := failure_outcome(responses, **call_extra(responses))) is not None:
            return failed
        try:
            if self.protocol == "json":
                data = parsing.json_object(answer.text, self.schema)
                value = (float(data["verdict"] == "CORRECT") if o.mode == "binary" else
                         float(parsing.int_in(data["score"], o.min, o.max, "score")))
                raw, rationale = answer.text, data["explanation"]
            elif self.protocol == "text":
                raw = answer.text
                if o.mode == "binary":
                    value, rationale = float(parsing.correctness(raw)), raw
                else:
                    score, rationale = parsing.result_score(raw, o.min, o.max)
                    value = float(score)
            else:
                rationale = answer.text.strip()
                follow, raw = await self.second_stage(first, answer, self.marker, max_tokens=4,
                                                      choices=self.answer_choices)
                responses.append(follow)
                if (failed := failure_outcome(responses, **call_extra(responses))) is not None:
                    return failed
                value = (float(parsing.leading_correctness(follow.text)) if o.mode == "binary"
                         else float(parsing.leading_score(follow.text, o.min, o.max)))
        except parsing.ParseError as exc:
            return parse_failure(responses, exc)
        return judged(responses, value, raw, rationale)
