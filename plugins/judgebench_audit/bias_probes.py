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
"""

from __future__ import annotations

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


#: In report order.
BIAS_PROBES: tuple[type[BiasProbe], ...] = (Verbosity, Authority, Bandwagon)
