"""judge.geval: G-Eval (Liu et al. 2023, "G-Eval: NLG Evaluation using GPT-4 with Better
Human Alignment").

The criterion and its evaluation steps (given, or generated once by the judge model at
temperature 0 and cached) go into a form-filling prompt that ends at the score. The score is

    score = sum_s s * p(s) / sum_s p(s),   s in {min..max},

the probability-weighted mean over the score tokens at the score position, read from the
top logprobs (``mode=logprobs``). Where the backend has no logprobs, the score is the mean of
``n`` sampled answers at ``sample_temperature`` (``mode=sampling``; G-Eval's own estimate
with n=20 on GPT-4). The mode used is in the signature.

The answer is constrained to the scores (``min..max``, after a space where the prefill ends
without one) where the backend enforces choices. In logprobs mode, where the backend gives
every score's log-probability (`Response.choice_logprobs`, the transformers backend), the
distribution is over all the scores, renormalised (``extra["probs_from"] == "choices"``),
not only those among the top alternatives (``"top"``).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from typing import Any, ClassVar, Literal

from pydantic import Field

from judgebench.plugin_api import (
    MAX_COUNT,
    MAX_SCALE,
    MAX_TOKENS,
    Constraint,
    InputError,
    MetricInfo,
    Outcome,
    Request,
    Response,
    Sample,
    Status,
)
from judgebench_judges import parsing
from judgebench_judges.base import (
    JUDGED_EMPTY,
    JudgeMetric,
    JudgeOptions,
    accounting,
    call_extra,
    failure_outcome,
    joined_raw,
    need,
)
from judgebench_judges.criteria import criterion
from judgebench_judges.templates import as_data, load_template


class GEvalOptions(JudgeOptions):
    criterion: str = "coherence"
    definition: str | None = None
    steps: str | None = None
    object: str | None = None
    source_name: str | None = None
    mode: Literal["auto", "logprobs", "sampling"] = "auto"
    n: int = Field(20, ge=1, le=MAX_COUNT)
    sample_temperature: float = Field(1.0, gt=0.0, le=2.0)
    top_logprobs: int = Field(20, ge=1, le=MAX_COUNT)
    min_mass: float = Field(0.0, ge=0.0, le=1.0)
    min: int = Field(1, ge=-MAX_SCALE, le=MAX_SCALE)
    max: int = Field(5, ge=-MAX_SCALE, le=MAX_SCALE)
    max_tokens: int = Field(3, ge=1, le=MAX_TOKENS)
    steps_tokens: int = Field(160, ge=1, le=MAX_TOKENS)
    steps_template: str | None = None


class GEvalJudge(JudgeMetric[GEvalOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.geval", version="1", kind="judge", requires=("output",),
        empty_text=JUDGED_EMPTY,
        value_range=(1, 5), deterministic=False,
        description="G-Eval: criterion + evaluation steps, form-filling prompt, score = "
                    "probability-weighted mean of the score tokens (or mean of n samples).",
        citation="Liu, Iter, Xu, Wang, Xu and Zhu (2023). G-Eval: NLG Evaluation using GPT-4 "
                 "with Better Human Alignment. EMNLP.",
    )
    Options = GEvalOptions
    template_name = "geval"
    parser_name = "geval"
    placeholders: ClassVar[set[str]] = {"object", "object_label", "source_note", "source_block",
                                        "criterion", "definition", "steps", "response", "min",
                                        "max"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        o = self.options
        if o.min >= o.max or o.min < 0 or o.max > 9:
            raise InputError(f"metric {self.info.name}: scores must be single digits, min < max")
        try:
            self.criterion = criterion(o.criterion, o.definition)
        except ValueError as exc:
            raise InputError(f"metric {self.info.name}: {exc}") from None
        self.steps_template = load_template("geval_steps", o.steps_template).check(
            {"criterion", "definition", "object", "source_note", "min", "max"}
        )
        self._steps: str | None = o.steps.replace("\\n", "\n") if o.steps else None

    @property
    def mode(self) -> str:
        if self.options.mode != "auto":
            return self.options.mode
        return "logprobs" if self.backend.capabilities.logprobs else "sampling"

    @property
    def object(self) -> str:
        return self.options.object or self.criterion.object

    @property
    def source_name(self) -> str:
        return self.options.source_name or self.criterion.source_name

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["protocol"] = "form"
        fields["parser"] = f"geval-{self.mode}-{parsing.VERSION}"
        fields["mode"] = self.mode if self.mode == "logprobs" else \
            f"sampling-n{self.options.n}-t{self.options.sample_temperature:g}"
        fields["steps"] = ("given:" + hashlib.sha256(self._given_steps().encode()).hexdigest()[:12]
                           if self.options.steps else
                           f"generated:{self.steps_template.hash}")
        fields.pop("steps_template", None)
        for unused in ("n", "sample_temperature") if self.mode == "logprobs" else \
                ("top_logprobs", "min_mass"):
            fields.pop(unused, None)
        return fields

    def _given_steps(self) -> str:
        return (self.options.steps or "").replace("\\n", "\n")

    # -- evaluation steps -----------------------------------------------------------------------
    def steps_request(self) -> Request:
        o = self.options
        messages = self.steps_template.render({
            "criterion": self.criterion.name, "definition": self.criterion.definition,
            "object": self.object, "source_note": f" written for a {self.source_name}",
            "min": str(o.min), "max": str(o.max),
        }, prefill=self.backend.capabilities.prefill)
        return Request(messages=messages, max_tokens=o.steps_tokens, temperature=0.0,
                       stop=("\n\n",))

    async def prepare(self) -> None:
        if self._steps is not None:
            return
        request = self.steps_request()
        response = await self.ask(request)
        if response.error is not None:
            status = Status.SKIPPED if response.error.kind == "dry_run" else Status.ERROR
            self._steps_failure = Outcome.failed(
                status, f"could not generate evaluation steps: {response.error}")
            return
        text = self.prefilled(request.messages) + response.text
        if not text.strip():
            self._steps_failure = Outcome.failed(
                Status.PARSE_ERROR, "the model generated empty evaluation steps",
                raw=response.text)
            return
        self._steps = text.strip()
        self.generated_steps = self._steps

    # -- scoring --------------------------------------------------------------------------------
    def form(self, sample: Sample, steps: str) -> tuple[dict[str, str], ...]:
        o = self.options
        source = sample.input_text
        source_block = ""
        if source:
            source_block = (f"\n{self.source_name[:1].upper()}{self.source_name[1:]}:\n"
                            f"<source>\n{as_data(source)}\n</source>\n")
        return self.messages({
            "object": self.object,
            "object_label": self.object[:1].upper() + self.object[1:],
            "source_note": f" written for a {self.source_name}" if source else "",
            "source_block": source_block,
            "criterion": self.criterion.name,
            "definition": self.criterion.definition,
            "steps": as_data(steps),
            "response": as_data(need(sample, sample.output, "output")),
            "min": str(o.min),
            "max": str(o.max),
        })

    @property
    def constrained(self) -> str | None:
        return self.backend.inner.enforcement("choice")

    def score_choices(self, messages: tuple[dict[str, str], ...]) -> tuple[str, ...]:
        o = self.options
        return self.choices_after([str(s) for s in range(o.min, o.max + 1)],
                                  self.prefilled(messages))

    def form_requests(self, sample: Sample, steps: str) -> list[Request]:
        o = self.options
        messages = self.form(sample, steps)
        constraint = Constraint(choices=self.score_choices(messages))
        if self.mode == "logprobs":
            top = min(o.top_logprobs, self.backend.capabilities.max_top_logprobs or o.top_logprobs)
            return [self.request(messages, logprobs=True, top_logprobs=top,
                                 constraint=constraint)]
        base = self.request(messages, temperature=o.sample_temperature, constraint=constraint)
        return [base.with_sample(i, seed=(o.seed or 0) + i) for i in range(o.n)]

    def planned_requests(self, sample: Sample) -> list[Request]:
        steps = self._steps or "1. Read the text.\n2. Compare it with the criterion.\n" \
                               "3. Assign a score."
        planned = self.form_requests(sample, steps)
        if self._steps is None:
            planned.insert(0, self.steps_request())
        return planned

    def all_scores(self, response: Response, request: Request) -> parsing.ScoreDistribution:
        """G-Eval's distribution from every score's log-probability (renormalised over the
        scores), under `min_mass` like the top-alternatives reading."""
        assert request.constraint is not None
        found = parsing.choice_distribution(response.choice_logprobs, None,
                                            request.constraint.choices)
        if found.mass < self.options.min_mass:
            raise parsing.ParseError(f"score tokens hold {found.mass:.3f} of the probability "
                                     f"at the score position, under "
                                     f"min_mass={self.options.min_mass}")
        probs = {int(c.strip()): p for c, p in found.probs.items()}
        return parsing.ScoreDistribution(mean=math.fsum(s * p for s, p in probs.items()),
                                         probs=probs, mass=found.mass)

    async def judge(self, sample: Sample) -> Outcome:
        if self._steps is None:
            return self._steps_failure.model_copy()
        o = self.options
        requests = self.form_requests(sample, self._steps)
        responses = list(await asyncio.gather(*(self.ask(r) for r in requests)))
        extra: dict[str, Any] = {**call_extra(responses), "mode": self.mode,
                                 "steps_sha": hashlib.sha256(self._steps.encode()).hexdigest()[:12]}
        if self.mode == "logprobs":
            response = responses[0]
            if (failed := failure_outcome(responses, **extra)) is not None:
                return failed
            try:
                if response.choice_logprobs:
                    dist = self.all_scores(response, requests[0])
                    extra["probs_from"] = "choices"
                else:
                    dist = parsing.score_distribution(response.logprobs, o.min, o.max,
                                                      o.min_mass)
                    extra["probs_from"] = "top"
            except parsing.ParseError as exc:
                return Outcome.failed(Status.PARSE_ERROR, str(exc), raw=response.text,
                                      extra=extra, **accounting(responses))
            if response.constrained is not None:
                extra["constrained"] = response.constrained
            extra.update({"probs": {str(k): v for k, v in dist.probs.items()},
                          "score_mass": dist.mass})
            return Outcome(value=dist.mean, raw=response.text, extra=extra,
                           **accounting(responses))
        scores, problems = [], []
        for response in responses:
            if response.error is not None:
                problems.append(str(response.error))
                continue
            try:
                scores.append(parsing.leading_score(response.text, o.min, o.max))
            except parsing.ParseError as exc:
                problems.append(str(exc))
        extra.update({"samples": scores, "n": len(responses), "parsed": len(scores)})
        raw = joined_raw(responses)
        if not scores:
            failed_all = all(r.error is not None for r in responses)
            status = Status.ERROR if failed_all else Status.PARSE_ERROR
            if failed_all and all(r.error.kind == "dry_run" for r in responses if r.error):
                status = Status.SKIPPED
            return Outcome.failed(status, f"no sample gave a score: {problems[0]}", raw=raw,
                                  extra=extra, **accounting(responses))
        if problems:
            extra["problems"] = problems[:5]
        return Outcome(value=math.fsum(scores) / len(scores), raw=raw, extra=extra,
                       **accounting(responses))
