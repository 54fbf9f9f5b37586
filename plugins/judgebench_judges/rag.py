"""Retrieval-grounded answers: metrics over a sample's retrieved passages (`context`) and its
answer (`output`), after RAGAS (Es et al., EACL 2024 demos) with ARES's per-instance
judgements (Saad-Falcon et al., NAACL 2024).

- ``rag.faithfulness``: the answer's claims extracted by a judge call, each claim checked
  against the passages by a call of its own; |supported claims| / |claims| (RAGAS' F).
  ``rag.claims`` and ``rag.unsupported_claims`` are the two counts of the same judgement
  (the same calls, answered by the judge cache), as columns meta-eval correlates.
- ``rag.context_precision``: each passage (in retrieved order) judged relevant or not, then
  the mean of precision@k over the ranks k of the relevant ones (RAGAS' context precision,
  i.e. average precision of the ranking); 0 when none is relevant.
- ``rag.context_recall``: each sentence of the reference judged attributable to the passages
  or not; |attributed| / |sentences| (RAGAS' context recall).
- ``rag.answer_relevance``: a judge call writes `n` questions the answer answers (and says
  whether it is noncommittal); the mean cosine between each question's sentence embedding and
  the sample's question (MiniLM, the neural plugin's ``neural.embedding-cosine``), 0 for a
  noncommittal answer (RAGAS' answer relevance).

Every intermediate result (claims, passages, sentences, questions; each one's verdict,
evidence, status) is in ``extra`` under one list, its key in `UNITS`. A unit whose verdict
does not parse has status ``parse_error`` and its reason, and the sample is a parse error
naming it: never a silent 0.

Protocols: ``json`` (the answer constrained to a JSON schema, wherever the backend enforces
one: structured output, or llguidance on the transformers backend) and ``text`` (a strict
parser of a plain answer), ``auto`` the first the backend can; ``two_stage`` does not apply.
"""

from __future__ import annotations

import asyncio
import math
import re
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from judgebench.plugin_api import (
    MAX_TOKENS,
    EmptyText,
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
    JudgeMetric,
    JudgeOptions,
    accounting,
    call_extra,
    failure_outcome,
    joined_raw,
    need,
)
from judgebench_judges.templates import Template, as_data, load_template


def judged_empty(*fields: str) -> EmptyText:
    """What a rag.* judge does with an empty text in each of the `fields` it reads."""
    return EmptyText.model_validate({
        **dict.fromkeys(fields, "scored"),
        "note": "judged like any other text: the prompt shows an empty answer, question, "
                "reference or passage as nothing between its tags (an answer with no word "
                "yields no claim: rag.faithfulness is then skipped, undefined as in RAGAS)"})


#: The key in ``extra`` of each metric's list of judged units.
UNITS = {"rag.faithfulness": "claims", "rag.claims": "claims",
         "rag.unsupported_claims": "claims", "rag.context_precision": "passages",
         "rag.context_recall": "sentences", "rag.answer_relevance": "questions"}

RAGAS = ("Es, James, Espinosa-Anke and Schockaert (2024). RAGAs: Automated Evaluation of "
         "Retrieval Augmented Generation. EACL (system demonstrations).")
ARES = ("Saad-Falcon, Khattab, Potts and Zaharia (2024). ARES: An Automated Evaluation "
        "Framework for Retrieval-Augmented Generation Systems. NAACL.")


# -- the formulas -----------------------------------------------------------------------------
def supported_fraction(verdicts: Sequence[bool]) -> float:
    """RAGAS faithfulness F = |V| / |S|: the share of the answer's claims S that the context
    supports (V). Undefined (ValueError) for an answer with no claim."""
    if not verdicts:
        raise ValueError("no claims: faithfulness is undefined")
    return sum(bool(v) for v in verdicts) / len(verdicts)


def context_precision(relevant: Sequence[bool]) -> float:
    """RAGAS context precision@K = sum_k (precision@k * v_k) / sum_k v_k over the K passages
    in retrieved order, v_k = 1 where passage k is relevant and precision@k the share of
    relevant passages among the first k; 0 when none is relevant (RAGAS divides by the
    count plus 1e-10). This is the average precision of the ranking."""
    hits, total = 0, 0.0
    for k, v in enumerate(relevant, start=1):
        if v:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def attributed_fraction(attributed: Sequence[bool]) -> float:
    """RAGAS context recall = |reference sentences attributable to the context| /
    |reference sentences|. Undefined (ValueError) for a reference with no sentence."""
    if not attributed:
        raise ValueError("no reference sentence: context recall is undefined")
    return sum(bool(a) for a in attributed) / len(attributed)


def answer_relevance(cosines: Sequence[float], noncommittal: bool) -> float:
    """RAGAS answer relevance = (1/n) sum_i cos(E(q_i), E(q)) over the n questions q_i
    generated from the answer, E the sentence embedding of a question and q the asked one;
    0 for a noncommittal answer (RAGAS multiplies by 1 - noncommittal)."""
    if not cosines:
        raise ValueError("no generated question: answer relevance is undefined")
    return 0.0 if noncommittal else math.fsum(cosines) / len(cosines)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def sentences(text: str) -> list[str]:
    """A reference split into sentences: after ., ! or ? followed by whitespace and a capital
    letter or digit (no abbreviation list); blank pieces dropped."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def chunks(sample: Sample) -> list[str]:
    """The sample's retrieved passages in order (a string is one passage)."""
    context = sample.context
    if context is None:
        need(sample, None, "context")
    return [context] if isinstance(context, str) else list(context or [])


def numbered(passages: Sequence[str]) -> str:
    return "\n\n".join(f"[{i}] {as_data(p)}" for i, p in enumerate(passages, start=1))


# -- options ----------------------------------------------------------------------------------
class RagOptions(JudgeOptions):
    #: tokens of each verdict (evidence or reason, then the verdict)
    verdict_tokens: int = Field(160, ge=1, le=MAX_TOKENS)


class FaithfulnessOptions(RagOptions):
    max_claims: int = Field(6, ge=1, le=64)
    #: tokens of the claim list (each claim at most (max_tokens - ~50) / max_claims chars)
    max_tokens: int = Field(512, ge=1, le=MAX_TOKENS)


class AnswerRelevanceOptions(RagOptions):
    n: int = Field(3, ge=1, le=16)
    #: the sentence encoder of the cosine step (neural.embedding-cosine's `model`)
    encoder: str = "all-MiniLM-L6-v2"


def verdict_schema(text_key: str, labels: Sequence[str]) -> dict[str, Any]:
    return {"type": "object",
            "properties": {text_key: {"type": "string"},
                           "verdict": {"type": "string", "enum": list(labels)}},
            "required": [text_key, "verdict"], "additionalProperties": False}


#: Answer relevance's flag beside its questions (RAGAS' noncommittal answer).
NONCOMMITTAL: dict[str, Any] = {"noncommittal": {"type": "boolean"}}


def list_schema(key: str, most: int, extra: dict[str, Any] | None = None, *,
                least: int = 0, max_tokens: int = MAX_TOKENS) -> dict[str, Any]:
    """An object whose `key` is a list of `least`..`most` strings (a decoder that enforces the
    schema writes at least `least`: a small model otherwise closes the list at once), each
    string short enough that the whole object closes within `max_tokens` (a token is at least
    one character: the items share what the keys and punctuation leave)."""
    overhead = 16 + len(key) + 4 * most + sum(len(name) + 12 for name in extra or {})
    longest = max(8, min(300, (max_tokens - overhead) // most))
    properties: dict[str, Any] = {key: {"type": "array", "minItems": least, "maxItems": most,
                                        "items": {"type": "string", "minLength": 1,
                                                  "maxLength": longest}}}
    properties.update(extra or {})
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def string_list(data: dict[str, Any], key: str) -> list[str]:
    value = data.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise parsing.ParseError(f"'{key}' is not a list of strings")
    return [v.strip() for v in value if v.strip()]


_LIST_LINE = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+?)\s*$")


def listed(text: str) -> list[str]:
    """Text protocol: the lines of a list (``- x``, ``* x``, ``1. x``); an answer of only
    ``NONE`` is the empty list, any other answer without a list line a ParseError."""
    found = [m.group(1) for line in text.splitlines() if (m := _LIST_LINE.match(line))]
    if not found and text.strip().strip(".").upper() != "NONE":
        raise parsing.ParseError("the answer has no list line ('- ...')")
    return found


def text_verdict(text: str, labels: Sequence[str]) -> str:
    """Text protocol: the last ``Verdict: LABEL`` of the answer (brackets allowed)."""
    pattern = r"Verdict:\s*\[*\s*(" + "|".join(sorted(map(re.escape, labels), key=len,
                                                      reverse=True)) + r")\b"
    found = re.findall(pattern, text, flags=re.IGNORECASE)
    if not found:
        raise parsing.ParseError(f"no 'Verdict: {' or '.join(labels)}' in the answer")
    return found[-1].upper()


# -- the shared judge ---------------------------------------------------------------------------
class RagJudge(JudgeMetric[Any]):
    """Several judge calls per sample (every one through the judge cache, each in the
    sample's calls, tokens and cost); the prompts are templates of their own, all hashed
    into the signature (``template=`` overrides the verdict prompt)."""

    Options: type[RagOptions] = RagOptions
    parser_name = "rag"
    #: the templates beside the main one (`template_name`), by placeholder set
    extra_templates: ClassVar[dict[str, set[str]]] = {}
    #: the verdict labels, the first the positive one, and the key of its free text
    labels: ClassVar[tuple[str, str]] = ("SUPPORTED", "UNSUPPORTED")
    text_key: ClassVar[str] = "evidence"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options.protocol == "two_stage":
            raise InputError(f"metric {self.info.name}: protocol=two_stage does not apply "
                             "(its answers are lists and verdicts): use json, text or auto",
                             field="protocol")
        self.templates: dict[str, Template] = {
            name: load_template(name).check(allowed)
            for name, allowed in self.extra_templates.items()}

    @property
    def protocol(self) -> str:
        chosen = self.options.protocol
        if chosen != "auto":
            return chosen
        inner = self.backend.inner
        return "json" if inner.enforcement("json") is not None else "text"

    #: options this metric's calls do not read (kept out of its signature)
    unused: ClassVar[tuple[str, ...]] = ("feedback_tokens",)

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["template"] = "+".join([fields["template"], *(
            f"{t.name}:{t.hash}" for t in self.templates.values())])
        for name in self.unused:
            fields.pop(name, None)
        return fields

    def render(self, template: Template, values: dict[str, str]) -> tuple[dict[str, str], ...]:
        return template.render(values, prefill=False)

    def json_or_text(self, messages: tuple[dict[str, str], ...], schema: dict[str, Any],
                     max_tokens: int) -> Request:
        if self.protocol == "json":
            return self.request(messages, json_schema=schema, max_tokens=max_tokens)
        return self.request(messages, max_tokens=max_tokens)

    # -- one verdict ----------------------------------------------------------------------
    def verdict_format(self) -> str:
        positive, negative = self.labels
        if self.protocol == "json":
            return (f'Answer with a JSON object with the keys "{self.text_key}" (a short '
                    f'string) and "verdict" ("{positive}" or "{negative}"), and nothing else.')
        return (f"Write the {self.text_key} on one line, then the verdict in exactly this "
                f"format: Verdict: {positive} or Verdict: {negative}")

    def verdict_request(self, template: Template, values: dict[str, str]) -> Request:
        messages = self.render(template, {**values, "format": self.verdict_format()})
        return self.json_or_text(messages, verdict_schema(self.text_key, self.labels),
                                 self.options.verdict_tokens)

    async def unit(self, text: str, request: Request) -> tuple[dict[str, Any], Response]:
        """One unit (claim, passage, sentence) judged: its record for ``extra``."""
        answer = await self.ask(request)
        record: dict[str, Any] = {"text": text}
        if answer.error is not None:  # the statuses `failure_outcome` gives a failed call
            status = {"refused": Status.REFUSED, "dry_run": Status.SKIPPED}.get(
                answer.error.kind, Status.ERROR)
            return {**record, "status": str(status), "reason": str(answer.error)}, answer
        try:
            if self.protocol == "json":
                data = parsing.json_object(answer.text, verdict_schema(self.text_key,
                                                                       self.labels))
                label, note = data["verdict"], str(data[self.text_key]).strip()
            else:
                label = text_verdict(answer.text, self.labels)
                note = answer.text.split("Verdict:")[0].strip()
        except parsing.ParseError as exc:
            return {**record, "status": str(Status.PARSE_ERROR), "reason": str(exc),
                    "raw": answer.text}, answer
        return {**record, "status": str(Status.OK), "verdict": label.lower(),
                self.text_key: note}, answer

    async def units(self, texts: Sequence[str], requests: Sequence[Request]
                    ) -> tuple[list[dict[str, Any]], list[Response]]:
        done = await asyncio.gather(*(self.unit(t, r) for t, r in zip(texts, requests,
                                                                        strict=True)))
        return [d[0] for d in done], [d[1] for d in done]

    def finish(self, responses: Sequence[Response], units: list[dict[str, Any]],
               value: Any, **counts: Any) -> Outcome:
        """The sample's Outcome: `value()` of the units' verdicts, or the first failed unit's
        status naming it; every unit and the counts in ``extra`` either way."""
        key = UNITS[self.info.name]
        extra = {key: units, **counts, **call_extra(responses)}
        cost = accounting(responses)
        for position, record in enumerate(units, start=1):
            if record["status"] != str(Status.OK):
                what = key.removesuffix("s")
                reason = f"{what} {position} of {len(units)}: {record['reason']}"
                return Outcome.failed(Status(record["status"]), reason,
                                      raw=joined_raw(responses), extra=extra, **cost)
        try:
            number = float(value())
        except ValueError as exc:
            return Outcome.failed(Status.SKIPPED, str(exc), raw=joined_raw(responses),
                                  extra=extra, **cost)
        return Outcome(value=number, raw=joined_raw(responses), extra=extra, **cost)


def positive(units: Sequence[dict[str, Any]], label: str) -> list[bool]:
    return [u.get("verdict") == label.lower() for u in units]


# -- faithfulness -----------------------------------------------------------------------------
class Faithfulness(RagJudge):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="rag.faithfulness", version="1", kind="judge",
        requires=("output", "context"), value_range=(0, 1),
        empty_text=judged_empty("output", "input", "context"),
        deterministic=False,
        description="RAGAS faithfulness: the answer's claims (extracted by the judge), each "
                    "checked against the retrieved passages; the share supported. The claims, "
                    "verdicts and evidence are in extra['claims'].",
        citation=RAGAS)
    Options = FaithfulnessOptions
    template_name = "rag_verdict"
    placeholders: ClassVar[set[str]] = {"context", "claim", "format"}
    extra_templates: ClassVar[dict[str, set[str]]] = {
        "rag_claims": {"question", "response", "max_claims", "format"}}
    #: what the value is: the share supported, the number of claims, or of unsupported ones
    report: ClassVar[str] = "fraction"

    def claims_format(self) -> str:
        if self.protocol == "json":
            return ('Answer with a JSON object with the key "claims" (a list of strings), and '
                    "nothing else.")
        return "Write each claim on a line of its own starting with '- ' (NONE if there is none)."

    def claims_request(self, sample: Sample) -> Request:
        o = self.options
        answer = need(sample, sample.output, "output")
        messages = self.render(self.templates["rag_claims"], {
            "question": as_data(sample.input_text or "(no question given)"),
            "response": as_data(answer), "max_claims": str(o.max_claims),
            "format": self.claims_format()})
        return self.json_or_text(messages, self.claims_schema(answer), o.max_tokens)

    def claims_schema(self, answer: str) -> dict[str, Any]:
        """At least one claim from an answer with a word in it, none from one without."""
        return list_schema("claims", self.options.max_claims,
                           least=1 if re.search(r"\w", answer) else 0,
                           max_tokens=self.options.max_tokens)

    def claim_request(self, sample: Sample, claim: str) -> Request:
        return self.verdict_request(self.template, {"context": numbered(chunks(sample)),
                                                    "claim": as_data(claim)})

    def planned_requests(self, sample: Sample) -> list[Request]:
        # the claims are unknown before the call: one verdict per sentence of the answer
        guess = sentences(need(sample, sample.output, "output"))[: self.options.max_claims]
        return [self.claims_request(sample),
                *(self.claim_request(sample, s) for s in guess or ["x"])]

    async def judge(self, sample: Sample) -> Outcome:
        first = self.claims_request(sample)
        chunks(sample)
        answer = await self.ask(first)
        if (failed := failure_outcome([answer], **call_extra([answer]))) is not None:
            return failed
        try:
            claims = (string_list(parsing.json_object(answer.text, first.json_schema or {}),
                                  "claims") if self.protocol == "json" else listed(answer.text))
        except parsing.ParseError as exc:
            return Outcome.failed(Status.PARSE_ERROR, f"claim extraction: {exc}",
                                  raw=answer.text, extra={"claims": [], **call_extra([answer])},
                                  **accounting([answer]))
        claims = claims[: self.options.max_claims]
        records, answers = await self.units(claims, [self.claim_request(sample, c)
                                                     for c in claims])
        supported = positive(records, self.labels[0])
        n_claims, n_unsupported = len(claims), len(claims) - sum(supported)
        value = {"fraction": lambda: supported_fraction(supported),
                 "claims": lambda: float(n_claims),
                 "unsupported": lambda: float(n_unsupported)}[self.report]
        return self.finish([answer, *answers], records, value, n_claims=n_claims,
                           n_unsupported=n_unsupported)


class ClaimCount(Faithfulness):
    info: ClassVar[MetricInfo] = Faithfulness.info.model_copy(update={
        "name": "rag.claims", "value_range": (0, None),
        "description": "The number of claims rag.faithfulness extracts from the answer (the "
                       "same judge calls, answered from the judge cache when both run)."})
    report = "claims"


class UnsupportedClaims(Faithfulness):
    info: ClassVar[MetricInfo] = Faithfulness.info.model_copy(update={
        "name": "rag.unsupported_claims", "value_range": (0, None), "higher_is_better": False,
        "description": "The number of the answer's claims that rag.faithfulness finds "
                       "unsupported by the passages (the same judge calls)."})
    report = "unsupported"


# -- context precision ------------------------------------------------------------------------
class ContextPrecision(RagJudge):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="rag.context_precision", version="1", kind="judge",
        requires=("input", "context"),
        empty_text=judged_empty("input", "reference", "context"), value_range=(0, 1),
        deterministic=False,
        description="RAGAS context precision: each retrieved passage judged relevant to the "
                    "question (and the reference answer, where the sample has one); the mean "
                    "of precision@k over the relevant ranks (average precision).",
        citation=f"{RAGAS} Passage relevance as in {ARES}")
    template_name = "rag_chunk"
    placeholders: ClassVar[set[str]] = {"question", "reference_block", "reference_note",
                                        "chunk", "format"}
    labels = ("RELEVANT", "IRRELEVANT")
    text_key = "reason"
    unused = ("feedback_tokens", "max_tokens")

    def chunk_request(self, sample: Sample, chunk: str) -> Request:
        refs = sample.references
        block = (f"\nReference answer:\n<reference>\n{as_data(refs[0])}\n</reference>\n"
                 if refs else "")
        return self.verdict_request(self.template, {
            "question": as_data(need(sample, sample.input_text, "input")),
            "reference_block": block,
            "reference_note": " (the reference answer shows what is needed)" if refs else "",
            "chunk": as_data(chunk)})

    def planned_requests(self, sample: Sample) -> list[Request]:
        return [self.chunk_request(sample, c) for c in chunks(sample)]

    async def judge(self, sample: Sample) -> Outcome:
        passages = chunks(sample)
        records, answers = await self.units(passages, self.planned_requests(sample))
        relevant = positive(records, self.labels[0])
        return self.finish(answers, records, lambda: context_precision(relevant),
                           n_passages=len(passages), n_relevant=sum(relevant))


# -- context recall ---------------------------------------------------------------------------
class ContextRecall(RagJudge):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="rag.context_recall", version="1", kind="judge",
        requires=("reference", "context"),
        empty_text=judged_empty("input", "reference", "context"), value_range=(0, 1),
        deterministic=False,
        description="RAGAS context recall: each sentence of the reference judged attributable "
                    "to the retrieved passages or not; the share attributed.",
        citation=RAGAS)
    template_name = "rag_attribution"
    placeholders: ClassVar[set[str]] = {"question", "context", "sentence", "format"}
    labels = ("ATTRIBUTED", "NOT_ATTRIBUTED")
    unused = ("feedback_tokens", "max_tokens")

    def reference_sentences(self, sample: Sample) -> list[str]:
        refs = sample.references
        if not refs:
            need(sample, None, "reference")
        return sentences(refs[0])

    def planned_requests(self, sample: Sample) -> list[Request]:
        context = numbered(chunks(sample))
        question = as_data(sample.input_text or "(no question given)")
        return [self.verdict_request(self.template, {"question": question, "context": context,
                                                     "sentence": as_data(s)})
                for s in self.reference_sentences(sample)]

    async def judge(self, sample: Sample) -> Outcome:
        found = self.reference_sentences(sample)
        records, answers = await self.units(found, self.planned_requests(sample))
        attributed = positive(records, self.labels[0])
        return self.finish(answers, records, lambda: attributed_fraction(attributed),
                           n_sentences=len(found), n_attributed=sum(attributed))


# -- answer relevance -------------------------------------------------------------------------
class AnswerRelevance(RagJudge):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="rag.answer_relevance", version="1", kind="judge",
        requires=("input", "output"), value_range=(-1, 1),
        empty_text=judged_empty("input", "output"),
        deterministic=False,
        description="RAGAS answer relevance: n questions generated from the answer; the mean "
                    "cosine of their MiniLM sentence embeddings to the asked question's, 0 "
                    "for a noncommittal answer. The questions and cosines are in "
                    "extra['questions'].",
        citation=RAGAS)
    Options = AnswerRelevanceOptions
    template_name = "rag_questions"
    unused = ("feedback_tokens", "verdict_tokens")
    placeholders: ClassVar[set[str]] = {"response", "n", "format"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._cosine: Any = None
        self._cosine_lock = threading.Lock()  # samples embed in threads of their own

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["encoder"] = self.options.encoder
        return fields

    def schema(self) -> dict[str, Any]:
        return list_schema("questions", self.options.n, NONCOMMITTAL, least=1,
                           max_tokens=self.options.max_tokens)

    def questions_format(self) -> str:
        if self.protocol == "json":
            return ('Answer with a JSON object with the keys "questions" (a list of strings) '
                    'and "noncommittal" (true or false), and nothing else.')
        return ("Write each question on a line of its own starting with '- ', then a last "
                "line: Noncommittal: yes or Noncommittal: no")

    def planned_requests(self, sample: Sample) -> list[Request]:
        need(sample, sample.input_text, "input")
        messages = self.render(self.template, {
            "response": as_data(need(sample, sample.output, "output")),
            "n": str(self.options.n), "format": self.questions_format()})
        return [self.json_or_text(messages, self.schema(), self.options.max_tokens)]

    def parse(self, text: str) -> tuple[list[str], bool]:
        if self.protocol == "json":
            data = parsing.json_object(text, self.schema())
            if not isinstance(data.get("noncommittal"), bool):
                raise parsing.ParseError("'noncommittal' is not true or false")
            return string_list(data, "questions"), data["noncommittal"]
        found = re.findall(r"Noncommittal:\s*(yes|no)\b", text, flags=re.IGNORECASE)
        if not found:
            raise parsing.ParseError("no 'Noncommittal: yes|no' line in the answer")
        return [q for q in listed(text.split("Noncommittal:")[0])], found[-1].lower() == "yes"

    def cosines(self, question: str, generated: Sequence[str]) -> list[Outcome | float]:
        """cos(E(q_i), E(q)) for each generated question, by neural.embedding-cosine
        (loaded on first use)."""
        with self._cosine_lock:
            if self._cosine is None:
                self._cosine = self.host.metric("neural.embedding-cosine").factory(
                    against="input", model=self.options.encoder)
            return list(self._cosine.score([Sample(item=str(i), system="q", output=g,
                                                   input=question)
                                            for i, g in enumerate(generated)]))

    async def judge(self, sample: Sample) -> Outcome:
        question = need(sample, sample.input_text, "input")
        request = self.planned_requests(sample)[0]
        answer = await self.ask(request)
        if (failed := failure_outcome([answer], **call_extra([answer]))) is not None:
            return failed
        try:
            generated, noncommittal = self.parse(answer.text)
        except parsing.ParseError as exc:
            return Outcome.failed(Status.PARSE_ERROR, f"question generation: {exc}",
                                  raw=answer.text, extra={"questions": [],
                                                          **call_extra([answer])},
                                  **accounting([answer]))
        generated = generated[: self.options.n]
        scored = await asyncio.to_thread(self.cosines, question, generated) if generated else []
        records: list[dict[str, Any]] = []
        for text, cos in zip(generated, scored, strict=True):
            if isinstance(cos, Outcome):
                records.append({"text": text, "status": str(cos.status),
                                "reason": cos.reason or "no cosine"})
            else:
                records.append({"text": text, "status": str(Status.OK), "cosine": float(cos)})
        values = [r["cosine"] for r in records if "cosine" in r]
        return self.finish([answer], records, lambda: answer_relevance(values, noncommittal),
                           noncommittal=noncommittal)

    def close(self) -> None:
        if self._cosine is not None:
            self._cosine.close()
            self._cosine = None
        super().close()


METRICS = (Faithfulness, ClaimCount, UnsupportedClaims, ContextPrecision, ContextRecall,
           AnswerRelevance)
