"""judge.rubric: direct assessment against a rubric, in the style of Prometheus
(Kim et al. 2024, "Prometheus 2"): instruction, response, optional reference answer and a
rubric with one description per score; the judge writes feedback, then an integer score."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from judgebench.backends import Request
from judgebench.models import MetricInfo, Outcome, Sample
from judgebench_judges import parsing
from judgebench_judges.base import (
    JudgeMetric,
    JudgeOptions,
    call_extra,
    failure_outcome,
    judged,
    need,
    parse_failure,
)
from judgebench_judges.criteria import criterion
from judgebench_judges.templates import as_data

#: Two-stage protocol: appended to the model's feedback; its continuation must start with
#: the score.
MARKER = "\n[RESULT] "


class RubricOptions(JudgeOptions):
    criterion: str = "helpfulness"
    definition: str | None = None
    levels: list[str] | None = None
    min: int = 1
    max: int = 5
    use_reference: bool = True
    max_tokens: int = Field(256, ge=1)


def score_schema(lo: int, hi: int, text_key: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {text_key: {"type": "string"},
                       "score": {"type": "integer", "minimum": lo, "maximum": hi}},
        "required": [text_key, "score"],
        "additionalProperties": False,
    }


class RubricJudge(JudgeMetric[RubricOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.rubric", version="1", kind="judge", requires=("output",),
        value_range=(1, 5), deterministic=False,
        description="Prometheus-style direct assessment: feedback then an integer score "
                    "against a rubric (criterion preset or your own, optional reference).",
        citation="Kim et al. (2024). Prometheus: Inducing Fine-grained Evaluation Capability "
                 "in Language Models. ICLR.",
    )
    Options = RubricOptions
    template_name = "rubric"
    parser_name = "rubric"
    placeholders: ClassVar[set[str]] = {"instruction", "response", "reference_block",
                                        "reference_note", "rubric", "format", "min", "max"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        o = self.options
        if o.min >= o.max:
            from judgebench.errors import InputError

            raise InputError(f"metric {self.info.name}: min must be below max")
        try:
            self.criterion = criterion(o.criterion, o.definition, o.levels)
        except ValueError as exc:
            from judgebench.errors import InputError

            raise InputError(f"metric {self.info.name}: {exc}") from None
        self.schema = score_schema(o.min, o.max, "feedback")

    def format_instruction(self) -> str:
        o = self.options
        if self.protocol == "json":
            return ('Answer with a JSON object with the keys "feedback" (a string) and "score" '
                    f"(an integer from {o.min} to {o.max}), and nothing else.")
        return ("Answer in exactly this format:\n"
                f"Feedback: <your feedback> [RESULT] <an integer from {o.min} to {o.max}>")

    def values(self, sample: Sample) -> dict[str, str]:
        o = self.options
        response = need(sample, sample.output, "output")
        refs = sample.references if o.use_reference else []
        reference_block = ""
        if refs:
            reference_block = ("\nReference answer (would get the highest score):\n"
                               f"<reference>\n{as_data(refs[0])}\n</reference>\n")
        return {
            "instruction": as_data(sample.input or sample.source or "(no instruction given)"),
            "response": as_data(response),
            "reference_block": reference_block,
            "reference_note": "Compare it with the reference answer. " if refs else "",
            "rubric": as_data(self.criterion.rubric(o.min, o.max)),
            "format": self.format_instruction(),
            "min": str(o.min),
            "max": str(o.max),
        }

    def first_request(self, sample: Sample) -> Request:
        return self.protocol_request(self.messages(self.values(sample)), self.schema,
                                     stop=("\n\n", "[RESULT]"))

    def planned_requests(self, sample: Sample) -> list[Request]:
        return self.planned_two_stage(self.first_request(sample), MARKER, max_tokens=3)

    async def judge(self, sample: Sample) -> Outcome:
        o = self.options
        first = self.first_request(sample)
        answer = await self.ask(first)
        if (failed := failure_outcome([answer], **call_extra([answer]))) is not None:
            return failed
        responses = [answer]
        try:
            if self.protocol == "json":
                data = parsing.json_object(answer.text, self.schema)
                score, feedback = parsing.int_in(data["score"], o.min, o.max, "score"), \
                    data["feedback"]
                raw = answer.text
            elif self.protocol == "text":
                raw = answer.text
                score, feedback = parsing.result_score(raw, o.min, o.max)
            else:
                feedback = (self.prefilled(first.messages) + answer.text).strip()
                feedback = feedback.removeprefix("Feedback:").strip()
                second, raw = await self.second_stage(first, answer, MARKER, max_tokens=3)
                responses.append(second)
                if (failed := failure_outcome(responses, **call_extra(responses))) is not None:
                    return failed
                score = parsing.leading_score(second.text, o.min, o.max)
        except parsing.ParseError as exc:
            return parse_failure(responses, exc)
        return judged(responses, float(score), raw, feedback)
