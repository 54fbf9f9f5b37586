"""The built-in metamorphic probes, registered through `register_probes` like any plugin's.

After CheckList's invariance and directional tests (Ribeiro et al. 2020) and the perturbation
checks of Sai et al. 2021 ("Perturbation CheckLists for Evaluating NLG Evaluation Metrics"):
identity (the first reference as the output must score at least the item's best system),
truncation, word shuffle, a dropped sentence, an unrelated output (another item's, same
system), repetition, negation, number change (all must lower the score), case and whitespace
changes (must not matter), renaming every system and changing the batch order (must not
change any score; scored in separate runs). Each is a judgebench.probe.Probe; the transforms
are also plain functions `f(sample, ctx) -> str | None` (None: the probe does not apply).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from judgebench.plugin_api import (
    SENTENCE,
    Context,
    Probe,
    Sample,
    against,
    seeded_rng,
    with_output,
)

AUXILIARIES = ("is", "are", "was", "were", "will", "would", "can", "could", "should", "has",
               "have", "had", "does", "did", "must", "may", "might")
NEGATION = re.compile(r"\b(not|never|no)\b\s*|n't\b", flags=re.IGNORECASE)
AUXILIARY = re.compile(r"\b(" + "|".join(AUXILIARIES) + r")\b", flags=re.IGNORECASE)
NUMBER = re.compile(r"\d+")


# -- transforms: a changed output, or None where the probe does not apply --------------------
def identity(s: Sample, ctx: Context) -> str | None:
    return s.references[0] if s.references else None


def truncation(s: Sample, ctx: Context) -> str | None:
    words = (s.output or "").split()
    return " ".join(words[: len(words) // 2]) if len(words) >= 4 else None


def shuffle(s: Sample, ctx: Context) -> str | None:
    words = (s.output or "").split()
    if len(set(words)) < 2:
        return None
    order = seeded_rng(ctx.seed, "shuffle", s.item, s.system).permutation(len(words))
    changed = " ".join(words[i] for i in order)
    return changed if changed != " ".join(words) else " ".join(reversed(words))


def drop_sentence(s: Sample, ctx: Context) -> str | None:
    sentences = [x for x in SENTENCE.split((s.output or "").strip()) if x]
    if len(sentences) < 2:
        return None
    drop = int(seeded_rng(ctx.seed, "drop", s.item, s.system).integers(len(sentences)))
    return " ".join(x for k, x in enumerate(sentences) if k != drop)


def unrelated(s: Sample, ctx: Context) -> str | None:
    """The same system's output for another item (the next one in sorted order)."""
    others = sorted({x.item for x in ctx.samples if x.system == s.system and x.item != s.item
                     and x.output})
    if not others:
        return None
    later = [i for i in others if i > s.item]
    other = later[0] if later else others[0]
    return next(x.output for x in ctx.samples if x.system == s.system and x.item == other)


def repetition(s: Sample, ctx: Context) -> str | None:
    text = (s.output or "").strip()
    return f"{text} {text}" if text else None


def negation(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    if NEGATION.search(text):
        return NEGATION.sub("", text, count=1)
    match = AUXILIARY.search(text)
    if match is None:
        return None
    return f"{text[:match.end()]} not{text[match.end():]}"


def numbers(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    if not NUMBER.search(text):
        return None
    return NUMBER.sub(lambda m: str(int(m.group()) * 2 + 3), text)


def case(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    changed = text.lower() if text != text.lower() else text.upper()
    return changed if changed != text else None


def whitespace(s: Sample, ctx: Context) -> str | None:
    text = s.output or ""
    if " " not in text.strip():
        return None
    return "  " + "  ".join(text.split(" ")) + " \n"


# -- the probes ------------------------------------------------------------------------------
class OutputProbe(Probe):
    """A probe whose changed output is `change(sample, ctx)`, one of the transforms above."""

    @staticmethod
    def change(sample: Sample, ctx: Context, /) -> str | None:
        raise NotImplementedError

    def transform(self, sample: Sample, ctx: Context) -> str | None:
        return self.change(sample, ctx)


class Identity(Probe):
    """identity: the first reference as the output, scored against it alone, must score at
    least the item's best system scored against the same single reference."""

    name = "identity"
    expect = "best"
    description = "output = the first reference, scored against it alone"
    perturbs = "output and reference"

    def perturb(self, sample: Sample, ctx: Context) -> Sample | None:
        text = identity(sample, ctx)
        if text is None:
            return None
        return with_output(against(sample, [text]), text)


class Truncation(OutputProbe):
    """truncation: first half of the words only; must lower the score."""

    name = "truncation"
    expect = "lower"
    description = "first half of the words only"
    change = staticmethod(truncation)


class Shuffle(OutputProbe):
    """shuffle: words in a random order; must lower the score."""

    name = "shuffle"
    expect = "lower"
    description = "words in a random order"
    change = staticmethod(shuffle)


class DropSentence(OutputProbe):
    """drop-sentence: one sentence removed; must lower the score."""

    name = "drop-sentence"
    expect = "lower"
    description = "one sentence removed"
    change = staticmethod(drop_sentence)


class Unrelated(OutputProbe):
    """unrelated: the same system's output for another item; must lower the score."""

    name = "unrelated"
    expect = "lower"
    description = "the same system's output for another item"
    change = staticmethod(unrelated)


class Repetition(OutputProbe):
    """repetition: the output written twice; must lower the score."""

    name = "repetition"
    expect = "lower"
    description = "the output written twice"
    change = staticmethod(repetition)


class Negation(OutputProbe):
    """negation: a negation added or removed; must lower the score."""

    name = "negation"
    expect = "lower"
    description = "a negation added or removed"
    change = staticmethod(negation)


class Numbers(OutputProbe):
    """numbers: every number changed; must lower the score."""

    name = "numbers"
    expect = "lower"
    description = "every number changed"
    change = staticmethod(numbers)


class Case(OutputProbe):
    """case: letter case changed; must not change the score."""

    name = "case"
    expect = "same"
    description = "letter case changed"
    change = staticmethod(case)


class Whitespace(OutputProbe):
    """whitespace: spaces doubled, leading and trailing whitespace; must not change the score."""

    name = "whitespace"
    expect = "same"
    description = "spaces doubled, leading and trailing whitespace"
    change = staticmethod(whitespace)


class RenameSystems(Probe):
    """rename-systems: every system renamed, in a separate run; no score may change."""

    name = "rename-systems"
    expect = "same"
    description = "every system renamed (separate run)"
    perturbs = "system"
    scope = "run"

    def rerun(self, samples: Sequence[Sample], seed: int) -> tuple[list[Sample], list[int]]:
        renamed = [s.model_copy(update={"system": f"renamed-{_short(s.system)}"})
                   for s in samples]
        return renamed, list(range(len(samples)))


class BatchOrder(Probe):
    """batch-order: the samples in a seeded random order, in a separate run; no score may
    change."""

    name = "batch-order"
    expect = "same"
    description = "samples in another order (separate run)"
    perturbs = "order"
    scope = "run"

    def rerun(self, samples: Sequence[Sample], seed: int) -> tuple[list[Sample], list[int]]:
        order = [int(i) for i in seeded_rng(seed, "order").permutation(len(samples))]
        return [samples[i] for i in order], order


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


#: In report order.
PROBES: tuple[type[Probe], ...] = (Identity, Truncation, Shuffle, DropSentence, Unrelated,
                                   Repetition, Negation, Numbers, Case, Whitespace,
                                   RenameSystems, BatchOrder)
