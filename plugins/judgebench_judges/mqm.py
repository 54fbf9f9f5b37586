"""judge.mqm: GEMBA-MQM (Kocmi & Federmann 2023, "GEMBA-MQM: Detecting Translation Quality
Error Spans with GPT-4", WMT): the judge marks the translation's error spans, each with an
MQM category and a severity (critical, major, minor), and the score is minus their weighted
sum. The prompt is GEMBA-MQM's (github.com/MicrosoftTranslator/GEMBA, MIT licence,
`gemba/gemba_mqm_utils.py`): its system line, its instruction, and its three few-shot
examples (en-de, en-cs, zh-en) inlined before the segment (``examples=false``: none).

Answer forms, by protocol:

- ``json`` (auto wherever the backend enforces a JSON schema while decoding: structured
  output, or llguidance on the transformers backend): ``{"errors": [{"span", "category",
  "severity"}]}``, at most ``max_errors`` errors, category and severity from GEMBA's lists,
  and with ``spans=output`` (default) each span one of the translation's runs of 1 to
  ``max_span_words`` words and punctuation marks (up to 500 runs; a longer output, an
  empty one or ``spans=free`` gets a free-text span): a span the backend enforces is in
  the output by construction.
- ``text`` (elsewhere): GEMBA's own format, ``Critical:`` / ``Major:`` / ``Minor:`` headers
  each followed by ``category - "span"`` lines or ``no-error``.

Each span is located in the output (the first occurrence not taken by an earlier span of the
same text); a span not found there (an omission quoted from the source, a paraphrase) is kept
with no offsets and counted in ``extra["unlocated"]``: it still weighs in the score, as it
does in GEMBA. Weights (``weights=``):

- ``wmt`` (default): the WMT MQM weights of Freitag et al. (2021), "Experts, Errors, and
  Context" (those of the human MQM scores this judge is compared with): Major 5, Minor 1,
  Minor Fluency/Punctuation 0.1, Non-translation 25. WMT MQM has no Critical severity: a
  critical error weighs as a major one.
- ``gemba``: GEMBA-MQM's own (`parse_mqm_answer`): critical 25, major 5, minor 1,
  non-translation counted as critical; only the first five errors count, and the total is
  capped at 25.

The spans are in ``extra["spans"]`` (text, start, end, category, severity, weight) with the
output their offsets index (``extra["output"]``), read by ``meta-eval --spans`` and shown by
``logs`` (the output with the spans marked, then the list).
"""

from __future__ import annotations

import json
import re
from typing import Any, ClassVar, Literal

from pydantic import Field

from judgebench.plugin_api import MAX_TOKENS, MetricInfo, Outcome, Request, Sample
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
from judgebench_judges.templates import as_data

SEVERITIES = ("critical", "major", "minor")
#: GEMBA-MQM's categories (its prompt's list), as class/subclass.
CATEGORIES = (
    "accuracy/addition", "accuracy/mistranslation", "accuracy/omission",
    "accuracy/untranslated text", "fluency/character encoding", "fluency/grammar",
    "fluency/inconsistency", "fluency/punctuation", "fluency/register", "fluency/spelling",
    "style/awkward", "terminology/inappropriate for context", "terminology/inconsistent use",
    "non-translation", "other",
)
_CLASSES = ("accuracy", "fluency", "locale convention", "style", "terminology",
            "non-translation", "other")

#: GEMBA-MQM's few-shot examples (source language, source, target language, translation,
#: errors as (severity, category, span)).
EXAMPLES: tuple[tuple[str, str, str, str, tuple[tuple[str, str, str], ...]], ...] = (
    ("English", "I do apologise about this, we must gain permission from the account holder "
     "to discuss an order with another person, I apologise if this was done previously, "
     "however, I would not be able to discuss this with yourself without the account holders "
     "permission.", "German",
     "Ich entschuldige mich dafür, wir müssen die Erlaubnis einholen, um eine Bestellung mit "
     "einer anderen Person zu besprechen. Ich entschuldige mich, falls dies zuvor geschehen "
     "wäre, aber ohne die Erlaubnis des Kontoinhabers wäre ich nicht in der Lage, dies mit "
     "dir involvement.",
     (("major", "accuracy/mistranslation", "involvement"),
      ("major", "accuracy/omission", "the account holder"),
      ("minor", "fluency/grammar", "wäre"), ("minor", "fluency/register", "dir"))),
    ("English", "Talks have resumed in Vienna to try to revive the nuclear pact, with both "
     "sides trying to gauge the prospects of success after the latest exchanges in the "
     "stop-start negotiations.", "Czech",
     "Ve Vídni se ve Vídni obnovily rozhovory o oživení jaderného paktu, přičemž obě partaje "
     "se snaží posoudit vyhlídky na úspěch po posledních výměnách v jednáních.",
     (("major", "accuracy/addition", "ve Vídni"),
      ("major", "accuracy/omission", "the stop-start"),
      ("minor", "terminology/inappropriate for context", "partaje"))),
    ("Chinese", "大众点评乌鲁木齐家居卖场频道为您提供高铁居然之家地址，电话，"
     "营业时间等最新商户信息，找装修公司，就上大众点评", "English",
     "Urumqi Home Furnishing Store Channel provides you with the latest business information "
     "such as the address, telephone number, business hours, etc., of high-speed rail, and "
     "find a decoration company, and go to the reviews.",
     (("critical", "accuracy/addition", "of high-speed rail"),
      ("major", "accuracy/mistranslation", "go to the reviews"),
      ("minor", "style/awkward", "etc.,"))),
)

_TOKEN = re.compile(r"\w+|[^\w\s]")
#: The most spans a schema enumerates (OpenAI's structured outputs take at most 1,000 enum
#: values per schema); an output with more word runs gets a free-text span.
MAX_RUNS = 500
_LINE = re.compile(r'^(?P<category>[a-z][a-z /-]*?)\s*-\s*"(?P<span>.*)"\s*$')


class MqmOptions(JudgeOptions):
    protocol: Literal["auto", "json", "text"] = "auto"
    weights: Literal["wmt", "gemba"] = "wmt"
    examples: bool = True
    source_lang: str | None = None
    target_lang: str | None = None
    max_errors: int = Field(5, ge=1, le=50)
    spans: Literal["output", "free"] = "output"
    max_span_words: int = Field(6, ge=1, le=50)
    max_tokens: int = Field(384, ge=1, le=MAX_TOKENS)


def weight(category: str, severity: str, scheme: str = "wmt") -> float:
    """One error's MQM penalty under `scheme` (module docstring)."""
    if scheme == "gemba":
        return 25.0 if severity == "critical" or category == "non-translation" else (
            5.0 if severity == "major" else 1.0)
    if category == "non-translation":
        return 25.0
    if severity == "minor":
        return 0.1 if category == "fluency/punctuation" else 1.0
    return 5.0


def penalty(errors: list[dict[str, Any]], scheme: str = "wmt") -> float:
    """The weighted sum of `errors` (GEMBA: the first five, capped at 25)."""
    weights = [e["weight"] for e in errors]
    if scheme == "gemba":
        return min(25.0, sum(weights[:5]))
    return float(sum(weights))


def word_runs(text: str, most: int) -> list[str]:
    """Every run of 1 to `most` consecutive words and punctuation marks of `text`, as the
    text from its first token's start to its last token's end, each once, in order."""
    tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
    runs: dict[str, None] = {}
    for i, (start, _) in enumerate(tokens):
        for j in range(i, min(len(tokens), i + most)):
            runs.setdefault(text[start:tokens[j][1]], None)
    return list(runs)


def error_schema(runs: list[str] | None, max_errors: int) -> dict[str, Any]:
    span: dict[str, Any] = {"type": "string"} if runs is None else {"enum": runs}
    return {
        "type": "object",
        "properties": {"errors": {
            "type": "array", "maxItems": max_errors,
            "items": {"type": "object",
                      "properties": {"span": span,
                                     "category": {"enum": list(CATEGORIES)},
                                     "severity": {"enum": list(SEVERITIES)}},
                      "required": ["span", "category", "severity"],
                      "additionalProperties": False}}},
        "required": ["errors"],
        "additionalProperties": False,
    }


def gemba_text(errors: tuple[tuple[str, str, str], ...] | list[tuple[str, str, str]]) -> str:
    """Errors as GEMBA-MQM writes them: a header per severity, then its errors or no-error."""
    lines = []
    for level in SEVERITIES:
        lines.append(f"{level.capitalize()}:")
        found = [f'{c} - "{s}"' for sev, c, s in errors if sev == level]
        lines += found or ["no-error"]
    return "\n".join(lines)


def gemba_json(errors: tuple[tuple[str, str, str], ...]) -> str:
    return json.dumps({"errors": [{"span": s, "category": c, "severity": sev}
                                  for sev, c, s in errors]}, ensure_ascii=False)


def category_of(text: str) -> str:
    """GEMBA's class of a free-text category (`parse_error_class`, with our names): the
    known class/subclass it names, else its class, else ParseError."""
    text = text.strip().lower()
    for known in CATEGORIES:
        if text == known:
            return known
    for known in CATEGORIES:
        main, _, sub = known.partition("/")
        if text.startswith(main) and sub and sub in text:
            return known
    for main in _CLASSES:
        if text.startswith(main):
            return main
    raise parsing.ParseError(f"unknown error category {text!r}")


def parse_text(answer: str) -> list[tuple[str, str, str]]:
    """(severity, category, span) of each error in GEMBA's text format. A line outside it
    (no severity header before it, not ``category - "span"``) is a ParseError naming it."""
    errors: list[tuple[str, str, str]] = []
    level: str | None = None
    headers = 0
    for raw_line in answer.splitlines():
        line = raw_line.strip()
        lowered = line.lower()
        if not line or lowered in ("no-error", "no error", "no-error.", "none"):
            continue
        if lowered.rstrip(":") in SEVERITIES and lowered.endswith(":"):
            level, headers = lowered.rstrip(":"), headers + 1
            continue
        found = _LINE.match(lowered)
        if level is None or found is None:
            raise parsing.ParseError(f"not a GEMBA-MQM line: {line[:80]!r}")
        category = category_of(found.group("category"))
        span = line[found.start("span"):found.end("span")]
        severity = "critical" if category == "non-translation" else level
        errors.append((severity, category, span))
    if not headers:
        raise parsing.ParseError("no Critical:/Major:/Minor: header in the answer")
    return errors


def parse_json(answer: str, schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    data = parsing.json_object(answer, schema)
    items = data["errors"]
    if not isinstance(items, list):
        raise parsing.ParseError("'errors' is not a list")
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or not all(
                isinstance(item.get(k), str) for k in ("span", "category", "severity")):
            raise parsing.ParseError(f"error {n}: not an object with string span, category, "
                                     "severity")
        severity = item["severity"].strip().lower()
        if severity not in SEVERITIES:
            raise parsing.ParseError(f"error {n}: severity {item['severity']!r}, not one of "
                                     f"{list(SEVERITIES)}")
        out.append((severity, category_of(item["category"]), item["span"]))
    return out


def locate(output: str, errors: list[tuple[str, str, str]], scheme: str
           ) -> list[dict[str, Any]]:
    """Each error with its span's [start, end) in `output` (None when the span is not
    there), category, severity and weight."""
    taken: dict[str, int] = {}
    spans = []
    for severity, category, text in errors:
        needle = text.strip().strip('"').strip()
        start: int | None = None
        if needle:
            at = output.find(needle, taken.get(needle, 0))
            if at < 0:
                at = output.find(needle)
            if at >= 0:
                start, taken[needle] = at, at + len(needle)
        spans.append({"text": text, "start": start,
                      "end": None if start is None else start + len(needle),
                      "category": category, "severity": severity,
                      "weight": weight(category, severity, scheme)})
    return spans


class MqmJudge(JudgeMetric[MqmOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.mqm", version="1", kind="judge", requires=("output", "input"),
        empty_text=JUDGED_EMPTY, higher_is_better=True, value_range=(None, 0.0),
        deterministic=False,
        description="GEMBA-MQM: error spans with MQM category and severity; score = minus "
                    "their MQM-weighted sum (WMT weights by default). Spans in extra.",
        citation="Kocmi & Federmann (2023). GEMBA-MQM: Detecting Translation Quality Error "
                 "Spans with GPT-4. WMT.",
    )
    Options = MqmOptions
    template_name = "mqm"
    parser_name = "mqm"
    placeholders: ClassVar[set[str]] = {"examples", "source_lang", "source", "target_lang",
                                        "translation", "format"}

    @property
    def protocol(self) -> str:
        chosen = self.options.protocol
        if chosen != "auto":
            return chosen
        inner = self.backend.inner
        return "json" if inner.capabilities.json_schema or inner.enforcement("json") else "text"

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["weights"] = self.options.weights
        return fields

    def schema(self, output: str) -> dict[str, Any]:
        o = self.options
        runs = word_runs(output, o.max_span_words) if o.spans == "output" else None
        return error_schema(runs if runs and len(runs) <= MAX_RUNS else None, o.max_errors)

    def format_instruction(self) -> str:
        o = self.options
        if self.protocol == "json":
            return ('Answer with a JSON object {"errors": [...]}, one entry per error (at most '
                    f'{o.max_errors}) with the keys "span" (the erroneous words, copied from '
                    'the translation), "category" and "severity" (critical, major or minor); '
                    '{"errors": []} if there is no error. Nothing else.')
        return ('Answer in this format: the line "Critical:", then one line per critical '
                'error as category - "erroneous words" (or no-error), then "Major:" and '
                '"Minor:" the same way. Nothing else.')

    def examples_block(self) -> str:
        if not self.options.examples:
            return ""
        write = gemba_json if self.protocol == "json" else gemba_text
        shots = [f"Example:\n{sl} source:\n```{src}```\n{tl} translation:\n```{mt}```\n"
                 f"Answer:\n{write(errors)}\n" for sl, src, tl, mt, errors in EXAMPLES]
        return "\n".join(shots) + "\nNow the segment to annotate:\n"

    def values(self, sample: Sample) -> dict[str, str]:
        o = self.options
        output = need(sample, sample.output, "output")
        source = need(sample, sample.input_text, "source")
        src = o.source_lang or sample.metadata.get("source_lang")
        tgt = o.target_lang or sample.metadata.get("target_lang")
        return {
            "examples": self.examples_block(),
            "source_lang": f"{src} source" if src else "Source",
            "source": as_data(source),
            "target_lang": f"{tgt} translation" if tgt else "Translation",
            "translation": as_data(output),
            "format": self.format_instruction(),
        }

    def first_request(self, sample: Sample) -> Request:
        messages = self.messages(self.values(sample))
        if self.protocol == "json":
            return self.request(messages, json_schema=self.schema(sample.output or ""))
        return self.request(messages)

    def planned_requests(self, sample: Sample) -> list[Request]:
        return [self.first_request(sample)]

    async def judge(self, sample: Sample) -> Outcome:
        o = self.options
        request = self.first_request(sample)
        answer = await self.ask(request)
        if (failed := failure_outcome([answer], **call_extra([answer]))) is not None:
            return failed
        try:
            if self.protocol == "json":
                assert request.json_schema is not None
                errors = parse_json(answer.text, request.json_schema)
            else:
                errors = parse_text(answer.text)
        except parsing.ParseError as exc:
            return parse_failure([answer], exc)
        spans = locate(sample.output or "", errors, o.weights)
        unlocated = sum(1 for s in spans if s["start"] is None)
        value = -penalty(spans, o.weights)
        rationale = "\n".join(f'{s["severity"]} {s["category"]}: "{s["text"]}"'
                              + ("" if s["start"] is not None else " (not in the output)")
                              for s in spans) or "no error"
        outcome = judged([answer], value + 0.0, answer.text, rationale)
        extra = {**outcome.extra, "spans": spans, "unlocated": unlocated,
                 "weights": o.weights, "output": sample.output or ""}
        return outcome.model_copy(update={"extra": extra})
