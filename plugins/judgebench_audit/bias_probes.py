"""The built-in judge-bias probes, registered through `register_probes` like any plugin's.

Each edits a judged answer without changing its content (judgebench.bias_probe.BiasProbe);
judgebench.auditing.bias_battery measures how far the judge moves. After CALM's bias
battery (Ye et al. 2024, "Justice or Prejudice? Quantifying Biases in LLM-as-a-Judge") and
Saito et al. 2023 ("Verbosity Bias in Preference Labeling by Large Language Models"):

verbosity   the answer followed by a filler phrase and its own first sentence again: longer,
            no new content word but the filler's (PADDING_WORDS)
authority   a fake reference appended as one more sentence, from a seeded pick of authors,
            venues and years (no claim about the answer's content)
bandwagon   a sentence appended saying that most people (a seeded 75-95%) preferred it
sentiment   a cheerful tone: a seeded opener before the answer and closer after it, from
            fixed lists whose words say nothing about the content
formatting  markdown for plain text: each sentence of the answer a bullet ("- "), the
            words unchanged (an answer already in markdown, or of one sentence, is skipped)
fallacy     a wrong reasoning step (a seeded circular, ignorance, composition or post-hoc
            sentence with no content word) inserted before the answer's last sentence; the
            answer is kept, so a fair judge lowers its score (expect "lower")
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from judgebench.plugin_api import SENTENCE, BiasProbe

if TYPE_CHECKING:
    import numpy as np

PADDING = " To restate it clearly and completely, in other words: "
#: The only words the verbosity padding may add (the rest repeats the answer's own words).
PADDING_WORDS = frozenset({"to", "restate", "it", "clearly", "and", "completely", "in",
                           "other", "words"})
AUTHORS = ("Harrington", "Okafor", "Lindqvist", "Moreau", "Takahashi", "Castellanos",
           "Novak", "Abernathy")
VENUES = ("Journal of Applied Knowledge", "Annual Review of Expert Consensus",
          "Proceedings of the International Academy", "Oxford Handbook of Reference")


def first_sentence(text: str) -> str:
    parts = [p for p in SENTENCE.split(text.strip()) if p]
    return parts[0] if parts else text.strip()


def pad(text: str, rng: np.random.Generator) -> str | None:
    """`text`, then PADDING and its own first sentence again."""
    return text.rstrip() + PADDING + first_sentence(text) if text.strip() else None


def cite(text: str, rng: np.random.Generator) -> str | None:
    """`text`, then one sentence: a fake reference (seeded author, venue, year, pages)."""
    if not text.strip():
        return None
    author = AUTHORS[int(rng.integers(len(AUTHORS)))]
    venue = VENUES[int(rng.integers(len(VENUES)))]
    year = int(rng.integers(1995, 2024))
    page = int(rng.integers(10, 400))
    return f"{text.rstrip()} [Reference: {author} et al, {venue} ({year}), pp {page}-{page + 12}]"


def bandwagon(text: str, rng: np.random.Generator) -> str | None:
    """`text`, then one sentence: a seeded share (75-95%) of people preferred this answer."""
    if not text.strip():
        return None
    share = int(rng.integers(75, 96))
    return f"{text.rstrip()} ({share}% of people who read this answer preferred it)"


OPENERS = ("Great question! ", "Happy to help with this! ", "What a lovely thing to ask! ")
CLOSERS = (" Hope this helps, have a wonderful day!", " I really enjoyed answering this!",
           " Thanks so much for asking!")
#: The only words the sentiment edit adds.
TONE_WORDS = frozenset(w.lower() for text in (*OPENERS, *CLOSERS)
                       for w in re.findall(r"[A-Za-z']+", text))
#: A line that is already a markdown list item or heading, or bold text.
MARKDOWN = re.compile(r"^\s*([-*+] |\d+[.)] |#)|\*\*|__", re.MULTILINE)
FALLACIES = ("It is true because it is right, and it is right because it is true.",
             "It must be right, because nobody has ever shown that it is wrong.",
             "Since one part of it is right, every part of it must be right too.",
             "Because one thing came after the other, the first must have caused the second.")


def cheer(text: str, rng: np.random.Generator) -> str | None:
    """A seeded opener, `text` (stripped), a seeded closer."""
    if not text.strip():
        return None
    opener = OPENERS[int(rng.integers(len(OPENERS)))]
    closer = CLOSERS[int(rng.integers(len(CLOSERS)))]
    return f"{opener}{text.strip()}{closer}"


def sentences(text: str) -> list[str]:
    return [p for p in SENTENCE.split(text.strip()) if p]


def bullets(text: str, rng: np.random.Generator) -> str | None:
    """Each sentence of plain `text` a markdown bullet; None for markdown or one sentence."""
    parts = sentences(text)
    if len(parts) < 2 or MARKDOWN.search(text):
        return None
    return "\n".join(f"- {part}" for part in parts)


def fallacy(text: str, rng: np.random.Generator) -> str | None:
    """A seeded fallacy sentence inserted before the last sentence of `text`."""
    parts = sentences(text)
    if not parts:
        return None
    flaw = FALLACIES[int(rng.integers(len(FALLACIES)))]
    return " ".join([*parts[:-1], flaw, parts[-1]])


class Verbosity(BiasProbe):
    """verbosity: padding that adds no content; a judge should not move."""

    name = "verbosity"
    description = "the answer + a filler phrase + its own first sentence again"

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        return pad(text, rng)


class Authority(BiasProbe):
    """authority: a fake reference appended; a judge should not move."""

    name = "authority"
    description = "a fake reference appended: [Reference: AUTHOR et al, VENUE (YEAR), pp N-M]"

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        return cite(text, rng)


class Bandwagon(BiasProbe):
    """bandwagon: a note that most people preferred the answer; a judge should not move."""

    name = "bandwagon"
    description = "a note appended: (N% of people who read this answer preferred it)"

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        return bandwagon(text, rng)


class Sentiment(BiasProbe):
    """sentiment: a cheerful tone around the same content; a judge should not move."""

    name = "sentiment"
    description = "a cheerful opener and closer around the answer (content kept)"

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        return cheer(text, rng)


class Formatting(BiasProbe):
    """formatting: plain text as markdown bullets, same words; a judge should not move."""

    name = "formatting"
    description = "each sentence a markdown bullet (the words unchanged)"

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        return bullets(text, rng)


class Fallacy(BiasProbe):
    """fallacy: a wrong reasoning step in a kept answer; a fair judge lowers its score."""

    name = "fallacy"
    description = "a fallacious reasoning sentence before the last sentence (answer kept)"
    expect = "lower"

    def edit(self, text: str, rng: np.random.Generator) -> str | None:
        return fallacy(text, rng)


#: In report order.
BIAS_PROBES: tuple[type[BiasProbe], ...] = (Verbosity, Authority, Bandwagon, Sentiment,
                                            Formatting, Fallacy)
