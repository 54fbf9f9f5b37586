"""What a judge needs to read, as a constraint on a model's answer: one contract for every
backend.

A judge puts a `Constraint` on its `Request`: the whole answer must be one of a set of
``choices`` (a score "1".."5", a verdict "A"/"B"/"C"), match a ``regex`` (Rust/Python common
syntax: classes, alternation, bounded repetition; no look-around or back-references), or be
JSON valid under a ``json_schema``. A backend that can enforce the constraint's kind while
decoding (`Capabilities.enforces`) does so and says which it enforced in
`Response.constrained`; one that cannot answers unconstrained (``constrained=None``) and the
judge's strict parser decides, as before. A constraint is never a reason to fail a call.

`Response.constrained` is one of `ENFORCED`: the constraint's kind, or ``"json_object"``
where a server enforced only "some JSON object" (an OpenAI-compatible server that rejects
``json_schema``), or None.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

ConstraintKind = Literal["choice", "regex", "json"]
#: What a backend reports it enforced (`Response.constrained`).
Enforced = Literal["choice", "regex", "json", "json_object"]
KINDS: tuple[ConstraintKind, ...] = ("choice", "regex", "json")
ENFORCED: tuple[Enforced, ...] = ("choice", "regex", "json", "json_object")


@dataclass(frozen=True)
class Constraint:
    """Exactly one of `choices`, `regex` and `json_schema`."""

    choices: tuple[str, ...] = ()
    regex: str | None = None
    json_schema: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        given = sum((bool(self.choices), self.regex is not None, self.json_schema is not None))
        if given != 1:
            raise ValueError("a Constraint has exactly one of choices, regex and json_schema")
        if self.choices:
            if not isinstance(self.choices, tuple):
                object.__setattr__(self, "choices", tuple(self.choices))
            if any(not isinstance(c, str) or not c for c in self.choices):
                raise ValueError(f"choices are non-empty strings, got {self.choices!r}")
            if len(set(self.choices)) != len(self.choices):
                raise ValueError(f"choices repeat: {self.choices!r}")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"constraint regex {self.regex!r}: {exc}") from None
        if self.json_schema is not None and not isinstance(self.json_schema, dict):
            raise ValueError("a constraint's json_schema is a JSON object (a dict)")

    @classmethod
    def choice(cls, *choices: str) -> Constraint:
        return cls(choices=tuple(choices))

    @property
    def kind(self) -> ConstraintKind:
        if self.choices:
            return "choice"
        return "regex" if self.regex is not None else "json"

    def matches(self, text: str) -> bool:
        """Whether `text` satisfies the constraint (for JSON: parses to an object, or to
        whatever type the schema's top level names; the schema's details are the parser's)."""
        if self.choices:
            return text in self.choices
        if self.regex is not None:
            return re.fullmatch(self.regex, text) is not None
        try:
            value = json.loads(text)
        except ValueError:
            return False
        top = (self.json_schema or {}).get("type")
        return top != "object" or isinstance(value, dict)

    def to_dict(self) -> dict[str, Any]:
        if self.choices:
            return {"choices": list(self.choices)}
        if self.regex is not None:
            return {"regex": self.regex}
        return {"json_schema": self.json_schema}


def choices_regex(choices: tuple[str, ...]) -> str:
    """A regex accepting exactly `choices` (for backends that take a regex but no choice
    list): each escaped so that Python's `re` and Rust's `regex` read it alike."""
    return "(" + "|".join(_escape(c) for c in choices) + ")"


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in r"\.+*?()|[]{}^$" else ch for ch in text)


__all__ = ["ENFORCED", "KINDS", "Constraint", "ConstraintKind", "Enforced", "choices_regex"]
