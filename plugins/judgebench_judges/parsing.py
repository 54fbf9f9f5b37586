"""Strict parsers for judge answers. An answer that does not match is a ParseError with the
reason; nothing here ever falls back to a default score.

Formats (each parser's version is in the judges' signatures as `parser:`):

- ``[RESULT] n`` (Prometheus, Kim et al. 2024): exactly one score value after ``[RESULT]``,
  an integer in [lo, hi]; the feedback is the text before it.
- ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (MT-Bench, Zheng et al. 2023; C is a tie): exactly one
  distinct verdict in the answer.
- ``[[CORRECT]]`` / ``[[INCORRECT]]``: exactly one distinct verdict.
- JSON (structured output): one JSON object with the schema's keys and types, nothing else.
- A continuation after a forced prefix (``... [RESULT]`` or ``Verdict: [[``): the generated
  text must begin with the score or verdict.
- G-Eval (Liu et al. 2023) score distribution: at the first generated position that is not
  whitespace, the top-k alternatives that are integers in [lo, hi];
  ``score = sum_s s * p(s) / sum_s p(s)``.
- A choice distribution (`choice_distribution`): the probabilities of the allowed choices
  only, renormalised, from the backend's log-probability of every choice
  (`Response.choice_logprobs`) where it gives them, else from the top alternatives at the
  first non-whitespace position.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from judgebench.plugin_api import TokenLogprob

VERSION = "1"


class ParseError(ValueError):
    """The answer does not have the required form; the message says how."""


_RESULT = re.compile(r"\[RESULT\]\s*\(?\s*(-?\d+(?:\.\d+)?)\s*\)?")
_VERDICT = re.compile(r"\[\[\s*(A|B|C)\s*\]\]")
_CORRECT = re.compile(r"\[\[\s*(CORRECT|INCORRECT)\s*\]\]")
_LEADING_INT = re.compile(r"\s*(-?\d+)(?!\d|\.\d)")


def int_in(value: Any, lo: int, hi: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise ParseError(f"{what} {value!r} is not an integer")
    if not lo <= int(value) <= hi:
        raise ParseError(f"{what} {int(value)} is outside {lo}..{hi}")
    return int(value)


def result_score(text: str, lo: int, hi: int) -> tuple[int, str]:
    """``Feedback: ... [RESULT] 4`` -> (4, feedback)."""
    found = _RESULT.findall(text)
    if not found:
        raise ParseError("no '[RESULT] <score>' in the answer")
    values = {float(v) for v in found}
    if len(values) > 1:
        raise ParseError(f"several different [RESULT] scores: {sorted(values)}")
    score = int_in(values.pop(), lo, hi, "score")
    feedback = text[: text.index("[RESULT]")].strip()
    feedback = re.sub(r"^(feedback|explanation)\s*:\s*", "", feedback, flags=re.IGNORECASE)
    return score, feedback


def leading_score(text: str, lo: int, hi: int) -> int:
    """The continuation after a forced prefix must begin with the score."""
    match = _LEADING_INT.match(text)
    if not match:
        raise ParseError(f"the answer does not begin with a score: {text[:40]!r}")
    return int_in(int(match.group(1)), lo, hi, "score")


def verdict(text: str) -> str:
    """``... [[A]]`` -> "A" ("C" is a tie)."""
    found = set(_VERDICT.findall(text))
    if not found:
        raise ParseError("no verdict '[[A]]', '[[B]]' or '[[C]]' in the answer")
    if len(found) > 1:
        raise ParseError(f"conflicting verdicts {sorted(found)}")
    return found.pop()


def leading_verdict(text: str) -> str:
    match = re.match(r"\s*(A|B|C)\s*(?:\]\]|\]|$)", text)
    if not match:
        raise ParseError(f"the answer does not begin with A, B or C: {text[:40]!r}")
    return match.group(1)


def labelled_verdict(text: str, labels: tuple[str, str, str]) -> str:
    """``... [[x]]`` for one of `labels` (first, second, tie) -> "A", "B" or "C" (the
    labels judge.pairwise's ``labels=`` shows instead of A, B and C)."""
    found = set(re.findall(_labels_pattern(labels, r"\[\[\s*", r"\s*\]\]"), text))
    if not found:
        shown = ", ".join(f"'[[{label}]]'" for label in labels)
        raise ParseError(f"no verdict {shown} in the answer")
    if len(found) > 1:
        raise ParseError(f"conflicting verdicts {sorted(found)}")
    return "ABC"[labels.index(found.pop())]


def leading_labelled_verdict(text: str, labels: tuple[str, str, str]) -> str:
    """The continuation after ``Verdict: [[`` must begin with one of `labels` -> A, B or C."""
    match = re.match(_labels_pattern(labels, r"\s*", r"\s*(?:\]\]|\]|$)"), text)
    if not match:
        raise ParseError(f"the answer does not begin with {', '.join(labels)}: {text[:40]!r}")
    return "ABC"[labels.index(match.group(1))]


def _labels_pattern(labels: tuple[str, str, str], before: str, after: str) -> str:
    longest_first = sorted(labels, key=len, reverse=True)
    return before + "(" + "|".join(re.escape(label) for label in longest_first) + ")" + after


def correctness(text: str) -> bool:
    found = set(_CORRECT.findall(text))
    if not found:
        raise ParseError("no verdict '[[CORRECT]]' or '[[INCORRECT]]' in the answer")
    if len(found) > 1:
        raise ParseError("conflicting verdicts CORRECT and INCORRECT")
    return found.pop() == "CORRECT"


def leading_correctness(text: str) -> bool:
    match = re.match(r"\s*(CORRECT|INCORRECT)\b", text)
    if not match:
        raise ParseError(f"the answer does not begin with CORRECT or INCORRECT: {text[:40]!r}")
    return match.group(1) == "CORRECT"


def json_object(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The whole answer must be one JSON object with the schema's required keys and types."""
    try:
        data = json.loads(text.strip())
    except json.JSONDecodeError as exc:
        raise ParseError(f"the answer is not JSON: {exc.msg} at char {exc.pos}") from None
    except ValueError as exc:  # valid JSON that Python refuses, e.g. a too-long integer
        raise ParseError(f"the answer is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ParseError("the answer is JSON but not an object")
    props = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in data:
            raise ParseError(f"the JSON answer has no '{key}'")
        kind = props.get(key, {}).get("type")
        value = data[key]
        if kind == "string" and not isinstance(value, str):
            raise ParseError(f"'{key}' is not a string")
        if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            raise ParseError(f"'{key}' is not an integer")
        if "enum" in props.get(key, {}) and value not in props[key]["enum"]:
            raise ParseError(f"'{key}' is {value!r}, not one of {props[key]['enum']}")
    return data


@dataclass(frozen=True)
class ScoreDistribution:
    mean: float
    probs: dict[int, float] = field(default_factory=dict)  # normalised over score tokens
    mass: float = 0.0  # probability the model put on score tokens at that position
    position: int = 0


def score_distribution(tokens: tuple[TokenLogprob, ...] | None, lo: int, hi: int,
                       min_mass: float = 0.0) -> ScoreDistribution:
    """G-Eval: probability-weighted mean of the score tokens at the score position."""
    if not tokens:
        raise ParseError("the backend returned no token logprobs")
    position = next((i for i, t in enumerate(tokens) if t.token.strip()), None)
    if position is None:
        raise ParseError("the answer is only whitespace")
    probs: dict[int, float] = {}
    alternatives = tokens[position].top or ((tokens[position].token,
                                             tokens[position].logprob or 0.0),)
    for text, logprob in alternatives:
        stripped = text.strip()
        if stripped.isdigit() and lo <= int(stripped) <= hi:
            probs[int(stripped)] = probs.get(int(stripped), 0.0) + math.exp(logprob)
    mass = math.fsum(probs.values())
    if mass <= 0.0:
        raise ParseError(f"no score token {lo}..{hi} among the top alternatives at the score "
                         f"position (the model wrote {tokens[position].token!r})")
    if mass < min_mass:
        raise ParseError(f"score tokens hold {mass:.3f} of the probability at the score "
                         f"position, under min_mass={min_mass}")
    normalised = {s: p / mass for s, p in sorted(probs.items())}
    mean = math.fsum(s * p for s, p in normalised.items())
    return ScoreDistribution(mean=mean, probs=normalised, mass=mass, position=position)


@dataclass(frozen=True)
class ChoiceDistribution:
    """P(choice) renormalised over the allowed choices (choice order); `mass`: the
    probability the model put on them before renormalising; `source`: ``choices`` (every
    choice's log-probability, from the backend) or ``top`` (the top alternatives)."""

    probs: dict[str, float]
    mass: float
    source: str

    def argmax(self) -> str:
        """The most probable choice (the first of equals, in choice order)."""
        return max(self.probs, key=lambda c: self.probs[c])

    def expectation(self, value: dict[str, float]) -> float:
        return math.fsum(value[c] * p for c, p in self.probs.items())


def choice_distribution(choice_logprobs: tuple[tuple[str, float], ...] | None,
                        tokens: tuple[TokenLogprob, ...] | None,
                        choices: tuple[str, ...]) -> ChoiceDistribution:
    """The model's probabilities of `choices` only, renormalised (see the module)."""
    found: dict[str, float] = {}
    if choice_logprobs:
        source = "choices"
        for choice, logprob in choice_logprobs:
            if choice in choices:
                found[choice] = found.get(choice, 0.0) + math.exp(logprob)
    else:
        source = "top"
        if not tokens:
            raise ParseError("the backend returned no token logprobs")
        position = next((t for t in tokens if t.token.strip()), None)
        if position is None:
            raise ParseError("the answer is only whitespace")
        by_text = {c.strip(): c for c in choices}
        for text, logprob in position.top or ((position.token, position.logprob or 0.0),):
            matched = by_text.get(text.strip())
            if matched is not None:
                found[matched] = found.get(matched, 0.0) + math.exp(logprob)
    mass = math.fsum(found.values())
    if mass <= 0.0:
        raise ParseError(f"no probability on any of the choices {list(choices)}")
    probs = {c: found.get(c, 0.0) / mass for c in choices}
    return ChoiceDistribution(probs=probs, mass=mass, source=source)
