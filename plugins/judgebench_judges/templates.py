"""Prompt templates: plain-text files a user can override, hashed into the signature.

A template file has sections introduced by a line ``=== system ===``, ``=== user ===`` or
``=== assistant ===`` (the last, optional, is a prefill the model continues, used only with
backends that support it). ``{{name}}`` placeholders are filled at render time; any other
text, braces included, is literal. Judged text (responses, sources, references) is data:
each value is put between the delimiter tags the template draws around it, and any copy of
those tags inside the value is neutralised, so a response cannot close its own delimiter and
smuggle instructions into the prompt.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from judgebench.errors import InputError

_SECTION = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")
#: The delimiter tags the built-in templates draw around data (custom templates may add more
#: only by reusing these names).
DELIMITERS = ("instruction", "question", "source", "response", "response_a", "response_b",
              "reference", "rubric", "steps")
_TAG = re.compile(r"<\s*(/?)\s*(" + "|".join(DELIMITERS) + r")\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class Template:
    name: str
    text: str
    source: str  # where it came from, for error messages

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:12]

    @property
    def sections(self) -> list[tuple[str, str]]:
        parts = _SECTION.split(self.text)
        if parts[0].strip():
            raise InputError("text before the first '=== system|user|assistant ===' line",
                             path=self.source)
        found = [(parts[i], parts[i + 1].strip("\n")) for i in range(1, len(parts), 2)]
        if not any(role == "user" for role, _ in found):
            raise InputError("a template needs a '=== user ===' section", path=self.source)
        if any(role == "assistant" for role, _ in found[:-1]):
            raise InputError("'=== assistant ===' (a prefill) may only be the last section",
                             path=self.source)
        return found

    @property
    def placeholders(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.text))

    def check(self, allowed: set[str]) -> Template:
        unknown = self.placeholders - allowed
        if unknown:
            raise InputError(
                f"unknown placeholder(s) {sorted(unknown)}; this judge fills {sorted(allowed)}",
                path=self.source,
            )
        _ = self.sections
        return self

    def render(self, values: dict[str, str], *, prefill: bool) -> tuple[dict[str, str], ...]:
        """Chat messages; the assistant prefill is kept only when `prefill` is true."""
        messages = []
        for role, body in self.sections:
            if role == "assistant" and not prefill:
                continue
            text = _PLACEHOLDER.sub(lambda m: values[m.group(1)], body)
            messages.append({"role": role, "content": text})
        return tuple(messages)


def as_data(value: str | None) -> str:
    """Text to place between delimiter tags: tag-shaped substrings cannot close them."""
    if value is None:
        return ""
    return _TAG.sub(lambda m: f"‹{m.group(1)}{m.group(2)}›", value.strip())


def load_template(name: str, override: str | None = None) -> Template:
    """The built-in template `name`.txt, or the file at `override`."""
    if override:
        path = Path(override).expanduser()
        try:
            return Template(name, path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            raise InputError(f"cannot read template: {exc.strerror}", path=str(path)) from None
    ref = resources.files("judgebench_judges").joinpath("templates", f"{name}.txt")
    where = f"judgebench_judges/templates/{name}.txt"
    return Template(name, ref.read_text(encoding="utf-8"), where)
