"""judge.prometheus and judge.prometheus_relative: Prometheus 2's absolute (1-5 against a score
rubric) and relative (A or B) grading (Kim et al. 2024), in prometheus-eval's exact prompts and
with its parsing rules, so its trained judges (e.g. prometheus-eval/prometheus-7b-v2.0 on a
vLLM server) run through any backend and give the numbers prometheus-eval would.

- Prompts: templates/prometheus_absolute.txt and prometheus_relative.txt are prometheus-eval's
  ABSOLUTE_PROMPT / RELATIVE_PROMPT (with a reference answer) and their *_WO_REF forms (without)
  in one file each, with its system prompts; values go in verbatim, as `str.format` puts them.
- Rubrics: `prometheus_rubrics` (by name, or `criteria` plus five `levels`); relative grading
  shows the rubric's criteria line only, as prometheus-eval's `load_rubric(..., "relative")`.
- Answers: "(feedback) [RESULT] N" and "... [RESULT] A"; the accepted forms are
  prometheus-eval's parser's (`absolute_result`, `relative_result`): anything else is a parse
  error, never a default score. prometheus-eval samples again when an answer does not parse;
  `parse_retries=N` does too (each retry a new sample: it needs temperature > 0).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal, TypeVar, cast

from pydantic import Field

from judgebench.plugin_api import (
    MAX_COUNT,
    MAX_TOKENS,
    Constraint,
    InputError,
    MetricInfo,
    Outcome,
    Request,
    Response,
    Sample,
)
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
from judgebench_judges.pairwise import PairwiseJudge, PairwiseOptions
from judgebench_judges.parsing import ParseError
from judgebench_judges.prometheus_rubrics import ScoreRubric, rubric

#: The version of the two parsers below, in the judges' signatures.
PARSER_VERSION = "1"
CITATION = ("Kim et al. (2024). Prometheus 2: An Open Source Language Model Specialized in "
            "Evaluating Other Language Models. EMNLP.")

# The answer must end with a result marker, the number (brackets around it allowed), and at
# most ")", "]", "/5" or "out of 5" after it; the number must be 1-5.
_ABSOLUTE = re.compile(
    r"(?:\[RESULT\]|\[SCORE\]|Score:?|Result:?|\[Result\]:?|score\s+of)\s*[(\[\s]*(\d+)"
    r"(?:[)\]\s]|/\s*5|\s*out\s*of\s*5)?\s*$",
    re.IGNORECASE,
)
# A line must end with a result marker and A or B (a closing bracket allowed).
_RELATIVE = re.compile(
    r"(?:\[RESULT\]|\[RESULT:\s*|\[Response\s+|\[Result\](?:\s+Response)?|\[Result:\s*"
    r"|(?:^|\n)Result:?\s*)\s*(A|B)\]?\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def absolute_result(text: str) -> tuple[int, str]:
    """prometheus-eval's absolute rule: `Feedback ... [RESULT] 4` -> (4, the feedback)."""
    match = _ABSOLUTE.search(text)
    if match is None:
        raise ParseError("the answer does not end with '[RESULT] <score>' (prometheus-eval's "
                         "absolute format)")
    score = int(match.group(1))
    if not 1 <= score <= 5:
        raise ParseError(f"score {score} is outside 1..5")
    return score, _feedback(text[: match.start()])


def relative_result(text: str) -> tuple[str, str]:
    """prometheus-eval's relative rule: `Feedback ... [RESULT] B` -> ("B", the feedback)."""
    match = _RELATIVE.search(text)
    if match is None:
        raise ParseError("no line ends with '[RESULT] A' or '[RESULT] B' (prometheus-eval's "
                         "relative format)")
    return match.group(1).upper(), _feedback(text[: match.start()])


def result_regex(results: Sequence[str], max_tokens: int) -> str:
    """The answer prometheus-eval parses, as a regex a decoder can enforce: any feedback,
    then `[RESULT] ` and one of `results`, and nothing after it (what a Prometheus model
    writes by itself). The feedback is at most `max_tokens - 12` characters, so the answer
    closes within `max_tokens` tokens even at one character a token (the marker and result
    take at most 12)."""
    feedback = max(1, max_tokens - 12)
    return rf"[\s\S]{{1,{feedback}}}\[RESULT\] ({'|'.join(map(re.escape, results))})"


def _feedback(text: str) -> str:
    return re.sub(r"^\s*feedback\s*:\s*", "", text, flags=re.IGNORECASE).strip()


class PrometheusOptions(JudgeOptions):
    #: Prometheus' format is in its prompt: plain text, one call.
    protocol: Literal["text"] = "text"
    rubric: str = "helpfulness"
    criteria: str | None = None
    levels: list[str] | None = None
    use_reference: bool = True
    max_tokens: int = Field(1024, ge=1, le=MAX_TOKENS)  # prometheus-eval's default
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    parse_retries: int = Field(0, ge=0, le=MAX_COUNT)


class PrometheusRelativeOptions(PrometheusOptions, PairwiseOptions):
    both_orders: bool = False  # prometheus-eval judges each pair once, in the order given
    max_tokens: int = Field(1024, ge=1, le=MAX_TOKENS)


#: Filled into the templates' {{reference_given}} and {{reference_section}} when a reference
#: answer is used: the differences between prometheus-eval's prompts with and without one.
_REFERENCE = {
    "absolute": (" a reference answer that gets a score of 5,",
                 "###Reference Answer (Score 5):\n{}\n\n"),
    "relative": (" a reference answer,", "###Reference Answer:\n{}\n\n"),
}

T = TypeVar("T")


def _rubric_of(name: str, options: PrometheusOptions) -> ScoreRubric:
    try:
        return rubric(options.rubric, options.criteria, options.levels)
    except ValueError as exc:
        raise InputError(f"metric {name}: {exc}") from None


def _prompt_values(judge: JudgeMetric[Any], sample: Sample, mode: str) -> dict[str, str]:
    """The instruction (the sample's input, else its source) and the reference parts."""
    options = cast(PrometheusOptions, judge.options)
    values = {"instruction": need(sample, sample.input_text, "input"),
              "reference_given": "", "reference_section": ""}
    if options.use_reference and sample.references:
        given, section = _REFERENCE[mode]
        values.update(reference_given=given, reference_section=section.format(
            sample.references[0]))
    return values


def _constraint(judge: JudgeMetric[Any], results: Sequence[str]) -> dict[str, Any]:
    """The request's constraint where the backend enforces a regex (`judge.constrained`,
    which the signature records): the format prometheus-eval parses, closing within
    max_tokens; nothing where it does not (the parser alone decides, as before)."""
    if judge.constrained is None:
        return {}
    return {"constraint": Constraint(regex=result_regex(results, judge.options.max_tokens))}


async def _ask_parsed(judge: JudgeMetric[Any], request: Request, parse: Callable[[str], T]
                      ) -> tuple[list[Response], T | None, str | None]:
    """The responses, the parsed answer (None if none parsed) and the last parse problem.
    An answer that does not parse is asked again `parse_retries` times, each time as a new
    sample (`sample_index`), as prometheus-eval retries; a failed call ends the tries."""
    options = cast(PrometheusOptions, judge.options)
    responses: list[Response] = []
    problem = None
    for attempt in range(options.parse_retries + 1):
        answer = await judge.ask(request if attempt == 0 else request.with_sample(attempt))
        responses.append(answer)
        if answer.error is not None:
            return responses, None, None
        try:
            return responses, parse(answer.text), None
        except ParseError as exc:
            problem = str(exc)
    return responses, None, problem


class PrometheusJudge(JudgeMetric[PrometheusOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.prometheus", version="1", kind="judge", requires=("output",),
        empty_text=JUDGED_EMPTY,
        value_range=(1, 5), deterministic=False,
        description="Prometheus 2 absolute grading in prometheus-eval's exact format: score "
                    "rubric (rubric=helpfulness|harmlessness|honesty|factual_grounding|"
                    "summary_*, or criteria+levels), reference answer, 'Feedback ... "
                    "[RESULT] N' parsed by prometheus-eval's rules.",
        citation=CITATION,
    )
    Options = PrometheusOptions
    template_name = "prometheus_absolute"
    parser_name = f"prometheus-absolute.{PARSER_VERSION}"
    placeholders: ClassVar[set[str]] = {"instruction", "response", "reference_given",
                                        "reference_section", "rubric"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.score_rubric = _rubric_of(self.info.name, self.options)

    @property
    def protocol(self) -> str:
        return "text"

    protocol_constraint: ClassVar[dict[str, str]] = {"text": "regex"}

    def first_request(self, sample: Sample) -> Request:
        values = _prompt_values(self, sample, "absolute")
        values.update(response=need(sample, sample.output, "output"),
                      rubric=self.score_rubric.text())
        return self.request(self.messages(values), top_p=self.options.top_p,
                            **_constraint(self, [str(n) for n in range(1, 6)]))

    def planned_requests(self, sample: Sample) -> list[Request]:
        return [self.first_request(sample)]

    async def judge(self, sample: Sample) -> Outcome:
        responses, parsed, problem = await _ask_parsed(self, self.first_request(sample),
                                                       absolute_result)
        extra = {**call_extra(responses), "attempts": len(responses)}
        if (failed := failure_outcome(responses, **extra)) is not None:
            return failed
        if parsed is None:
            return parse_failure(responses, ParseError(problem or "no answer"))
        score, feedback = parsed
        outcome = judged(responses, float(score), responses[-1].text, feedback)
        outcome.extra["attempts"] = len(responses)
        return outcome


class PrometheusRelativeJudge(PairwiseJudge):
    """Prometheus 2 relative grading as a pairwise judge: the pairwise table's verdict
    columns, as judge.pairwise writes them (`both_orders=true` judges the swapped order too;
    a pair whose orders disagree is then a tie)."""

    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.prometheus_relative", version="1", kind="judge",
        empty_text=JUDGED_EMPTY,
        requires=("output_a", "output_b"), value_range=(0, 1), deterministic=False,
        description="Prometheus 2 relative grading (A or B) in prometheus-eval's exact format "
                    "and parsing rules; 1 = a wins, 0 = b wins (0.5: the two orders disagree, "
                    "with both_orders=true).",
        citation=CITATION,
    )
    Options = PrometheusRelativeOptions  # type: ignore[assignment]
    template_name = "prometheus_relative"
    parser_name = f"prometheus-relative.{PARSER_VERSION}"
    placeholders: ClassVar[set[str]] = {"instruction", "response_a", "response_b",
                                        "reference_given", "reference_section", "rubric"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.score_rubric = _rubric_of(self.info.name, cast(PrometheusOptions, self.options))

    @property
    def protocol(self) -> str:
        return "text"

    protocol_constraint: ClassVar[dict[str, str]] = {"text": "regex"}

    def order_request(self, sample: Sample, first: str, second: str) -> Request:
        values = _prompt_values(self, sample, "relative")
        values.update(response_a=first, response_b=second,
                      rubric=self.score_rubric.criteria_line())
        options = cast(PrometheusRelativeOptions, self.options)
        return self.request(self.messages(values), top_p=options.top_p,
                            **_constraint(self, ["A", "B"]))

    def planned_requests(self, sample: Sample) -> list[Request]:
        return [self.order_request(sample, first, second)
                for _, first, second in self.orders(sample)]

    async def one_order(self, sample: Sample, first: str, second: str
                        ) -> tuple[list[Response], str | None, str, str | None]:
        responses, parsed, problem = await _ask_parsed(
            self, self.order_request(sample, first, second), relative_result)
        letter = None if parsed is None else parsed[0]
        return responses, letter, responses[-1].text, problem
