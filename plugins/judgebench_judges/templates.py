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
import unicodedata
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from judgebench.plugin_api import InputError

_SECTION = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")
#: The delimiter tags the built-in templates draw around data (custom templates may add more
#: only by reusing these names).
DELIMITERS = ("instruction", "question", "source", "response", "response_a", "response_b",
              "reference", "rubric", "steps")
# How a reader may see text before it reads tags: a tokenizer's NFKC normalisation (fullwidth
# ＜ is <, ｒ is r), case folding, and characters it does not show dropped (soft hyphen,
# zero-width and bidirectional marks, word joiners, the byte-order mark).
_IGNORED = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
                      "\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff]")


def _delimiter_name(delimiter: str) -> str:
    """A delimiter name as a pattern over folded text; an underscore may be any run of
    underscores, hyphens and spaces, or nothing (`response b`, `response-b`)."""
    return "".join(r"[\s_-]*" if c == "_" else re.escape(c) for c in delimiter)


#: The version of `as_data`'s rule, in every template hash (so in every judge's signature).
AS_DATA_VERSION = 2
#: A tag naming a delimiter, over folded text (`_folded`): spaces anywhere inside, attributes
#: (`</response_b x="1">`), a self-closing slash, and also without its closing bracket. The
#: name must end there (`<responses>`, `<source_code>` are other words).
_TAG = re.compile(
    r"<\s*/?\s*(?:"
    + "|".join(_delimiter_name(d) for d in sorted(DELIMITERS, key=len, reverse=True))
    + r")(?![\w-])(?:[^<>]*?>)?"
)


def _folded(text: str) -> tuple[str, list[int]]:
    """`text` as a reader may see it (NFKC, case-folded, ignorable characters dropped), with
    the position in `text` of each folded character."""
    if text.isascii():
        return text.lower(), list(range(len(text)))
    chars: list[str] = []
    origin: list[int] = []
    for position, char in enumerate(text):
        if _IGNORED.match(char):
            continue
        folded = unicodedata.normalize("NFKC", char).casefold()
        chars.append(folded)
        origin += [position] * len(folded)
    return "".join(chars), origin


@dataclass(frozen=True)
class Template:
    name: str
    text: str
    source: str  # where it came from, for error messages

    @property
    def hash(self) -> str:
        """The template text's hash, with the version of the rule (`as_data`) that puts data
        into it: a prompt built by another rule is another prompt."""
        keyed = f"as_data:{AS_DATA_VERSION}\n{self.text}"
        return hashlib.sha256(keyed.encode("utf-8")).hexdigest()[:12]

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
    """Text to place between delimiter tags: no substring of it can open or close one.

    Every substring a reader could take for a delimiter tag (`_TAG` over `_folded` text: any
    case, look-alike and invisible characters, spaces, attributes, no closing bracket) has its
    angle brackets replaced by ‹ and ›, its text kept: `</Response_B foo="1">` becomes
    `‹/Response_B foo="1"›`."""
    if value is None:
        return ""
    text = value.strip()
    folded, origin = _folded(text)
    chars = list(text)
    for match in _TAG.finditer(folded):
        chars[origin[match.start()]] = "‹"
        if match.group().endswith(">"):
            chars[origin[match.end() - 1]] = "›"
    return "".join(chars)


@cache
def _tag_pattern(delimiters: tuple[str, ...]) -> re.Pattern[str]:
    """`_TAG` over `delimiters` (a tag naming one of them, over folded text)."""
    return re.compile(
        r"<\s*/?\s*(?:"
        + "|".join(_delimiter_name(d) for d in sorted(delimiters, key=len, reverse=True))
        + r")(?![\w-])(?:[^<>]*?>)?"
    )


def as_data_with(value: str | None, extra: tuple[str, ...]) -> str:
    """`as_data`, where the tags of the `extra` delimiters (a template's own, e.g. a
    conversation's `turn`) are neutralised as well as the built-in ones."""
    text = as_data(value)
    folded, origin = _folded(text)
    chars = list(text)
    for match in _tag_pattern(extra).finditer(folded):
        chars[origin[match.start()]] = "‹"
        if match.group().endswith(">"):
            chars[origin[match.end() - 1]] = "›"
    return "".join(chars)


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
