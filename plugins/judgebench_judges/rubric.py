"""judge.rubric: direct assessment against a rubric, in the style of Prometheus
(Kim et al. 2024, "Prometheus 2"): instruction, response, optional reference answer and a
rubric with one description per score; the judge writes feedback, then an integer score.

Under the two-stage protocol the score is the model's continuation after ``[RESULT] ``,
constrained to the scores ``min..max`` where the backend enforces choices. Where the backend
also returns logprobs, ``scoring=auto`` reads the score from the probabilities of the allowed
scores only, renormalised (``scoring=argmax``: the most probable score, an integer;
``scoring=expectation``: their probability-weighted mean); ``scoring=text`` parses the text.
The scoring used is in the signature, the probabilities in ``extra["probs"]``.

``examples`` (few-shot: responses with a person's score, shown after the rubric) and
``threshold`` (the score becomes 1 at or above it, else 0) are what `judgebench fit` chooses;
``fitted`` says how (the fit's folds, seed and statistic). Each is in the signature when set
(the examples as their number and a digest of their texts and scores); unset, the signature
is as before. ``to_min``/``to_max`` map the score read on ``min..max`` linearly onto another
scale (`fit --search scale`: a judge asked on 1-10 reported on the labels' 1-5).

``invert=true`` words the criterion negatively and flips the scale (`Criterion.inverted_rubric`:
"Lack of coherence: how far the summary falls short of this: ...", score min the best, the
levels in reverse, few-shot scores and the reference's place flipped); the judge's answer s
is mapped back to min + max - s, so the value points the same way as without it (the answer
in ``extra["inverted_score"]``). The audit's scale-inversion probe compares the two. Unset,
the signature is as before.

``criteria=coherence;fluency`` (or ``criteria="coherence,fluency"``) rates several built-in
criteria in one call (template rubric_criteria.txt: each criterion's rubric in the order
given): the answer is one JSON object with a feedback and one integer field per criterion, in
that order (the schema constrained where the backend enforces it; ``protocol=auto`` is json,
else text, whose answer must be that JSON object too). A missing criterion, another key or a
score outside min..max is a parse failure with the reason. The metric's value is the score of
``report=`` (default: the first criterion); every criterion's score is kept in
``extra["criteria"]`` (in the order asked). The signature names the criteria in their order
(``criteria:``) and the reported one (``report:``); unset, it is as before. The audit's
criteria-order probe asks the criteria in reverse.

``mode=turn`` judges a conversation's judged turn in its context (the messages up to it, the
turn marked; template rubric_turn.txt), ``mode=conversation`` the whole conversation
(rubric_conversation.txt); the default ``mode=response`` reads ``input`` and ``output`` (a
conversation's derived ones) and leaves the signature as it was (judgebench_judges.conversation)."""

from __future__ import annotations

import hashlib
import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from judgebench.plugin_api import (
    MAX_SCALE,
    MAX_TOKENS,
    MetricInfo,
    Outcome,
    Request,
    Response,
    Sample,
)
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
from judgebench_judges.calibration import apply_knots, check_knots, knots_digest
from judgebench_judges.conversation import Mode, conversation_of
from judgebench_judges.criteria import PRESETS, Criterion, criterion
from judgebench_judges.templates import as_data

#: Two-stage protocol: appended to the model's feedback; its continuation must start with
#: the score.
MARKER = "\n[RESULT] "


class Example(BaseModel):
    """A few-shot example: a response (and its instruction) with the score a person gave."""

    model_config = ConfigDict(extra="forbid")

    item: str = ""
    system: str = ""
    input: str | None = None
    output: str
    score: int = Field(ge=-MAX_SCALE, le=MAX_SCALE)


class RubricOptions(JudgeOptions):
    criterion: str = "helpfulness"
    definition: str | None = None
    levels: list[str] | None = None
    min: int = Field(1, ge=-MAX_SCALE, le=MAX_SCALE)
    max: int = Field(5, ge=-MAX_SCALE, le=MAX_SCALE)
    use_reference: bool = True
    max_tokens: int = Field(256, ge=1, le=MAX_TOKENS)
    scoring: Literal["auto", "text", "argmax", "expectation"] = "auto"
    #: what is judged: the sample's input and output (response), or for a conversation its
    #: judged turn in context (turn) or the whole conversation (conversation)
    mode: Mode = "response"
    #: few-shot examples shown after the rubric (in the order given)
    examples: list[Example] | None = None
    #: the score becomes 1.0 where it is >= threshold, else 0.0 (a decision threshold)
    threshold: float | None = Field(None, ge=-MAX_SCALE, le=MAX_SCALE, allow_inf_nan=False)
    #: how `judgebench fit` chose this judge (kept in the signature, asks nothing)
    fitted: str | None = None
    #: the score read on min..max mapped linearly onto to_min..to_max (both or neither),
    #: before the threshold: a judge asked on another scale reports on the labels' one
    to_min: int | None = Field(None, ge=-MAX_SCALE, le=MAX_SCALE)
    to_max: int | None = Field(None, ge=-MAX_SCALE, le=MAX_SCALE)
    #: a monotone calibration map of the score onto people's scale, as [[raw, calibrated],
    #: ...] knots (raw strictly increasing, calibrated non-decreasing), applied after to_min/
    #: to_max and before the threshold (judgebench_judges.calibration)
    calibration: list[tuple[float, float]] | None = None
    #: the criterion worded negatively, the scale flipped; the answer mapped back
    invert: bool = False
    #: built-in criteria rated in one call, in this order (a JSON field each)
    criteria: list[str] | None = Field(None, examples=["coherence;fluency"])
    #: which of the criteria gives the metric's value (default: the first)
    report: str | None = None

    @field_validator("calibration", mode="before")
    @classmethod
    def _knots_text(cls, value: Any) -> Any:
        """On the command line the knots are one quoted JSON value:
        calibration="[[1, 1.4], [3, 3.2]]" (a TOML spec file writes them as an array)."""
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"calibration= is a JSON list of [raw, calibrated] knots, "
                                 f"quoted: calibration=\"[[1, 1.4], [3, 3.2]]\" ({exc})"
                                 ) from None
        return value

    @field_validator("calibration")
    @classmethod
    def _knots(cls, value: list[tuple[float, float]] | None) -> list[tuple[float, float]] | None:
        if value is not None:
            check_knots(value)
        return value

    @field_validator("criteria", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.replace(";", ",").split(",")]
        return value


#: What criteria= cannot go with: each option's value there, and why.
_NOT_WITH_CRITERIA = {"mode": "mode=response only", "examples": "no few-shot examples",
                      "invert": "no invert=", "definition": "built-in criteria only",
                      "levels": "built-in criteria only", "criterion": "criteria= instead"}


def criteria_schema(keys: list[str], lo: int, hi: int) -> dict[str, Any]:
    """A feedback string, then one integer in lo..hi per criterion, in order."""
    score = {"type": "integer", "minimum": lo, "maximum": hi}
    return {
        "type": "object",
        "properties": {"feedback": {"type": "string"}, **{k: dict(score) for k in keys}},
        "required": ["feedback", *keys],
        "additionalProperties": False,
    }


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
        empty_text=JUDGED_EMPTY,
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

    #: what the conversation templates fill (rubric_turn.txt, rubric_conversation.txt)
    conversation_placeholders: ClassVar[set[str]] = {
        "conversation", "turn", "reference_block", "reference_note", "rubric", "format",
        "min", "max"}

    def chosen_template(self) -> tuple[str, set[str]]:
        if self.options.criteria is not None:
            return "rubric_criteria", self.placeholders
        if self.options.mode != "response":
            return f"rubric_{self.options.mode}", self.conversation_placeholders
        return super().chosen_template()

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        o = self.options
        for example in o.examples or []:
            if not o.min <= example.score <= o.max:
                from judgebench.plugin_api import InputError

                raise InputError(f"metric {self.info.name}: example {example.item}/"
                                 f"{example.system} has score {example.score}, outside "
                                 f"{o.min}..{o.max}", field="examples")
        if o.min >= o.max:
            from judgebench.plugin_api import InputError

            raise InputError(f"metric {self.info.name}: min must be below max")
        if (o.to_min is None) != (o.to_max is None) or (
                o.to_min is not None and o.to_max is not None and o.to_min >= o.to_max):
            from judgebench.plugin_api import InputError

            raise InputError(f"metric {self.info.name}: to_min and to_max go together, "
                             "to_min below to_max", field="to_min")
        try:
            self.criterion = criterion(o.criterion, o.definition, o.levels)
        except ValueError as exc:
            from judgebench.plugin_api import InputError

            raise InputError(f"metric {self.info.name}: {exc}") from None
        self.rated: list[tuple[str, Criterion]] = self.checked_criteria()
        self.schema = (criteria_schema([k for k, _ in self.rated], o.min, o.max)
                       if self.rated else score_schema(o.min, o.max, "feedback"))

    def checked_criteria(self) -> list[tuple[str, Criterion]]:
        """criteria= as (key, criterion) pairs in order ([] unset), each a built-in
        criterion named once, report= one of them, nothing it cannot go with."""
        from judgebench.plugin_api import InputError

        o = self.options
        name = self.info.name
        if o.criteria is None:
            if o.report is not None:
                raise InputError(f"metric {name}: report= names one of criteria=, which is "
                                 "not set", field="report")
            return []
        keys = [k.lower() for k in o.criteria]
        if not keys or "" in keys or len(set(keys)) != len(keys):
            raise InputError(f"metric {name}: criteria= names each criterion once, none "
                             f"empty (got {o.criteria})", field="criteria")
        unknown = [k for k in keys if k not in PRESETS]
        if unknown:
            raise InputError(f"metric {name}: criteria= takes built-in criteria "
                             f"({', '.join(sorted(PRESETS))}), not {', '.join(unknown)}",
                             field="criteria")
        clash = [f"{field}= ({why})" for field, why in _NOT_WITH_CRITERIA.items()
                 if field in o.model_fields_set
                 and getattr(o, field) != RubricOptions.model_fields[field].default]
        if o.protocol == "two_stage" or o.scoring in ("argmax", "expectation"):
            clash.append("protocol=two_stage or scoring from probabilities (one JSON answer)")
        if clash:
            raise InputError(f"metric {name}: criteria= rates several criteria in one JSON "
                             f"answer; it cannot go with {'; '.join(clash)}", field="criteria")
        if o.report is not None and o.report.lower() not in keys:
            raise InputError(f"metric {name}: report={o.report} is not one of criteria= "
                             f"({', '.join(keys)})", field="report")
        return [(k, PRESETS[k]) for k in keys]

    @property
    def reported(self) -> str:
        """The criterion whose score is the metric's value (criteria= only)."""
        o = self.options
        return o.report.lower() if o.report is not None else self.rated[0][0]

    @property
    def protocol(self) -> str:
        """As every judge's, but criteria= reads one JSON answer: auto is json where the
        backend takes a schema, else text."""
        if self.options.criteria is not None and self.options.protocol == "auto":
            return "json" if self.backend.capabilities.json_schema else "text"
        return super().protocol

    @property
    def scoring(self) -> str:
        """How the score is read: from the text, or from the choices' probabilities
        (`argmax`/`expectation`; two-stage only, where the backend returns logprobs)."""
        chosen = self.options.scoring
        if self.protocol != "two_stage":
            return "text"
        if chosen == "auto":
            return "argmax" if self.backend.capabilities.logprobs else "text"
        return chosen

    @property
    def score_choices(self) -> tuple[str, ...]:
        o = self.options
        return self.choices_after([str(s) for s in range(o.min, o.max + 1)], MARKER)

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["scoring"] = self.scoring
        if self.options.mode == "response":  # signatures from before conversations
            fields.pop("mode", None)
        for name in ("examples", "threshold", "fitted", "to_min", "to_max",
                     "calibration"):  # signatures from before `fit` have none of them
            if getattr(self.options, name) is None:
                fields.pop(name, None)
        if not self.options.invert:  # signatures from before invert=
            fields.pop("invert", None)
        fields.pop("report", None)
        fields.pop("criteria", None)
        if self.rated:  # signatures from before criteria= have neither
            fields.pop("criterion", None)
            fields["criteria"] = ">".join(k for k, _ in self.rated)
            fields["report"] = self.reported
        if self.options.examples is not None:
            fields["examples"] = examples_digest(self.options.examples)
        if self.options.calibration is not None:
            fields["calibration"] = knots_digest(self.options.calibration)
        return fields

    def follow_logprobs(self) -> int:
        if self.scoring == "text":
            return 0
        return min(20, self.backend.capabilities.max_top_logprobs or 20)

    def format_instruction(self) -> str:
        o = self.options
        if self.rated:
            keys = " then ".join(f'"{k}"' for k, _ in self.rated)
            return ('Answer with a JSON object with the keys "feedback" (a string), then '
                    f"{keys}, in this order (each an integer from {o.min} to {o.max}), and "
                    "nothing else.")
        if self.protocol == "json":
            return ('Answer with a JSON object with the keys "feedback" (a string) and "score" '
                    f"(an integer from {o.min} to {o.max}), and nothing else.")
        return ("Answer in exactly this format:\n"
                f"Feedback: <your feedback> [RESULT] <an integer from {o.min} to {o.max}>")

    def values(self, sample: Sample) -> dict[str, str]:
        o = self.options
        refs = sample.references if o.use_reference else []
        reference_block = ""
        if refs:
            best = "the lowest score, the best" if o.invert else "the highest score"
            reference_block = (f"\nReference answer (would get {best}):\n"
                               f"<reference>\n{as_data(refs[0])}\n</reference>\n")
        if o.mode != "response":
            conversation, turn = conversation_of(sample, o.mode)
            return {
                "conversation": conversation,
                "turn": "" if turn is None else str(turn),
                "reference_block": reference_block,
                "reference_note": "Compare it with the reference answer. " if refs else "",
                "rubric": self.rubric_text(),
                "format": self.format_instruction(),
                "min": str(o.min),
                "max": str(o.max),
            }
        response = need(sample, sample.output, "output")
        return {
            "instruction": as_data(sample.input_text or "(no instruction given)"),
            "response": as_data(response),
            "reference_block": reference_block,
            "reference_note": "Compare it with the reference answer. " if refs else "",
            "rubric": self.rubric_text(),
            "format": self.format_instruction(),
            "min": str(o.min),
            "max": str(o.max),
        }

    def rubric_text(self) -> str:
        """The rubric, then the few-shot examples (each response with a person's score)."""
        o = self.options
        if self.rated:
            return "\n\n".join(f"Criterion {n} ({key}): {as_data(c.rubric(o.min, o.max))}"
                               for n, (key, c) in enumerate(self.rated, 1))
        text = as_data(self.criterion.inverted_rubric(o.min, o.max) if o.invert
                       else self.criterion.rubric(o.min, o.max))
        if not o.examples:
            return text
        shown = [f"Example {n}:\nInstruction: "
                 f"{as_data(e.input or '(no instruction given)')}\n"
                 f"Response: {as_data(e.output)}\nScore: {self.shown_score(e.score)}"
                 for n, e in enumerate(o.examples, 1)]
        return text + "\n\nScored examples (a person's scores):\n\n" + "\n\n".join(shown)

    def shown_score(self, score: float) -> float:
        """A score on the scale the prompt uses (flipped under invert), or back from it."""
        o = self.options
        if not o.invert:
            return score
        back = o.min + o.max - score
        return int(back) if float(back).is_integer() else back

    def first_request(self, sample: Sample) -> Request:
        return self.protocol_request(self.messages(self.values(sample)), self.schema,
                                     stop=("\n\n", "[RESULT]"))

    def planned_requests(self, sample: Sample) -> list[Request]:
        return self.planned_two_stage(self.first_request(sample), MARKER, max_tokens=3,
                                      choices=self.score_choices,
                                      top_logprobs=self.follow_logprobs())

    async def judge(self, sample: Sample) -> Outcome:
        o = self.options
        first = self.first_request(sample)
        answer = await self.ask(first)
        if (failed := failure_outcome([answer], **call_extra([answer]))) is not None:
            return failed
        responses = [answer]
        if self.rated:
            return self.rated_outcome(answer)
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
                second, raw = await self.second_stage(
                    first, answer, MARKER, max_tokens=3, choices=self.score_choices,
                    top_logprobs=self.follow_logprobs())
                responses.append(second)
                if (failed := failure_outcome(responses, **call_extra(responses))) is not None:
                    return failed
                if self.scoring != "text":
                    return self.from_probabilities(responses, second, raw, feedback)
                score = parsing.leading_score(second.text, o.min, o.max)
        except parsing.ParseError as exc:
            return parse_failure(responses, exc)
        return self.decided(judged(responses, float(score), raw, feedback))

    def rated_outcome(self, answer: Response) -> Outcome:
        """criteria=: the answer's JSON object read strictly (every criterion, an integer in
        min..max, no other key), the reported criterion's score the value."""
        o = self.options
        try:
            data = parsing.json_object(answer.text, self.schema)
            stray = sorted(set(data) - set(self.schema["required"]))
            if stray:
                raise parsing.ParseError(f"the JSON answer has keys not asked for: {stray}")
            scores = {key: parsing.int_in(data[key], o.min, o.max, f"'{key}'")
                      for key, _ in self.rated}
        except parsing.ParseError as exc:
            return parse_failure([answer], exc)
        outcome = judged([answer], float(scores[self.reported]), answer.text,
                         data["feedback"])
        return self.decided(outcome.model_copy(update={"extra": {
            **outcome.extra, "criteria": scores, "report": self.reported}}))

    def mapped_back(self, outcome: Outcome) -> Outcome:
        """Under invert, the answer s as min + max - s, the answer kept in extra."""
        if not self.options.invert or outcome.value is None:
            return outcome
        return outcome.model_copy(update={
            "value": float(self.shown_score(outcome.value)),
            "extra": {**outcome.extra, "inverted_score": outcome.value}})

    def decided(self, outcome: Outcome) -> Outcome:
        """`outcome` with its answer mapped back under invert (min + max - s), then onto
        to_min..to_max (when set; the score read kept in ``extra["read_score"]``), then
        through the calibration map (when set; the score before it kept in
        ``extra["uncalibrated_score"]``; a value the map sends off the finite numbers is a
        failure with its reason), then turned into 1.0 or 0.0 by the threshold (when set;
        the score itself kept in ``extra["score"]``)."""
        outcome = self.mapped_back(outcome)
        o = self.options
        if o.to_min is not None and o.to_max is not None and outcome.value is not None:
            read = outcome.value
            mapped = o.to_min + (read - o.min) * (o.to_max - o.to_min) / (o.max - o.min)
            outcome = outcome.model_copy(update={
                "value": mapped, "extra": {**outcome.extra, "read_score": read,
                                           "read_scale": f"{o.min}..{o.max}"}})
        if o.calibration is not None and outcome.value is not None:
            outcome = calibrated(outcome, o.calibration)
        t = o.threshold
        if t is None or outcome.value is None:
            return outcome
        return outcome.model_copy(update={
            "value": 1.0 if outcome.value >= t else 0.0,
            "extra": {**outcome.extra, "score": outcome.value, "threshold": t}})

    def from_probabilities(self, responses: list[Response], answer: Response, raw: str,
                           feedback: str) -> Outcome:
        """The score from the allowed scores' renormalised probabilities (argmax or
        expectation), the probabilities kept in ``extra``."""
        choices = self.score_choices
        dist = parsing.choice_distribution(answer.choice_logprobs, answer.logprobs, choices)
        numbers = {c: float(c.strip()) for c in choices}
        value = (numbers[dist.argmax()] if self.scoring == "argmax"
                 else dist.expectation(numbers))
        outcome = judged(responses, value, raw, feedback)
        extra = {**outcome.extra, "scoring": self.scoring, "choice_mass": dist.mass,
                 "probs": {c.strip(): p for c, p in dist.probs.items()},
                 "probs_from": dist.source}
        return self.decided(outcome.model_copy(update={"extra": extra}))


def calibrated(outcome: Outcome, knots: list[tuple[float, float]]) -> Outcome:
    """`outcome` with its value through the calibration map (a failure where the map's
    arithmetic leaves the finite numbers: knots of extreme magnitudes)."""
    import math

    assert outcome.value is not None
    value = apply_knots(knots, outcome.value)
    if not math.isfinite(value):
        from judgebench.plugin_api import Status

        return outcome.model_copy(update={
            "value": None, "status": Status.ERROR,
            "reason": f"the calibration map sends the score {outcome.value!r} to {value!r}, "
                      "not a finite number",
            "extra": {**outcome.extra, "uncalibrated_score": outcome.value}})
    return outcome.model_copy(update={
        "value": value, "extra": {**outcome.extra, "uncalibrated_score": outcome.value}})


def examples_digest(examples: list[Example]) -> str:
    """`k<number>-<12 hex>`: how many examples, and a digest of their texts and scores in
    order (what the prompt shows; the item and system names are not shown)."""
    shown = [[e.input, e.output, e.score] for e in examples]
    digest = hashlib.sha256(json.dumps(shown).encode()).hexdigest()[:12]
    return f"k{len(examples)}-{digest}"
