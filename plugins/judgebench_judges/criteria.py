"""Built-in criteria: the four SummEval dimensions (Fabbri et al. 2021, as used by G-Eval)
and a general helpfulness rubric. Each has a definition (G-Eval) and one description per
score 1-5 (Prometheus-style rubric). Users may give their own instead."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Criterion:
    name: str
    definition: str
    levels: tuple[str, str, str, str, str]
    object: str = "response"
    source_name: str = "source text"

    def rubric(self, lo: int = 1, hi: int = 5) -> str:
        question = f"{self.name}: {self.definition}"
        if (lo, hi) != (1, 5) or not any(self.levels):
            return f"{question}\nScore {lo} is the worst and score {hi} the best."
        lines = [f"Score {i}: {text}" for i, text in enumerate(self.levels, start=1)]
        return "\n".join([question, *lines])

    def inverted_rubric(self, lo: int = 1, hi: int = 5) -> str:
        """The rubric worded negatively, its scale flipped: how far the response falls short
        of the criterion, score `lo` the best and `hi` the worst (the levels in reverse)."""
        question = (f"Lack of {self.name.lower()}: how far the {self.object} falls short of "
                    f"this: {self.definition}")
        if (lo, hi) != (1, 5) or not any(self.levels):
            return f"{question}\nScore {lo} is the best and score {hi} the worst."
        lines = [f"Score {i}: {text}" for i, text in enumerate(reversed(self.levels), start=1)]
        return "\n".join([question, *lines])


_SUMMARY = {"object": "summary", "source_name": "news article"}

PRESETS: dict[str, Criterion] = {
    "coherence": Criterion(
        "Coherence",
        "the summary is well structured and well organised; it builds from sentence to "
        "sentence into a coherent body of information about the topic, not a heap of "
        "related facts.",
        ("The sentences are unrelated or contradictory; there is no structure.",
         "Some sentences connect, but the order is confusing and the topic drifts.",
         "The summary is mostly organised, with noticeable jumps or repetition.",
         "The summary is well organised with only minor lapses in flow.",
         "Every sentence follows from the previous one; the summary reads as one whole."),
        **_SUMMARY,
    ),
    "consistency": Criterion(
        "Consistency",
        "every fact in the summary is supported by the source document; the summary adds "
        "no hallucinated facts and contradicts nothing in the source.",
        ("Most statements are unsupported by or contradict the source.",
         "Several statements are unsupported or wrong.",
         "One or two statements are unsupported or slightly wrong.",
         "All statements are supported, with a minor imprecision.",
         "Every statement is fully supported by the source."),
        **_SUMMARY,
    ),
    "fluency": Criterion(
        "Fluency",
        "the sentences of the summary are grammatical, well formed and easy to read, with "
        "correct capitalisation and punctuation.",
        ("The text is hard to read; most sentences are ungrammatical or fragments.",
         "Many grammatical errors or fragments make reading difficult.",
         "Some errors, but the text is understandable.",
         "Nearly all sentences are well formed; a few small errors.",
         "All sentences are fluent and well formed."),
        **_SUMMARY,
    ),
    "relevance": Criterion(
        "Relevance",
        "the summary keeps the important information of the source and leaves out "
        "redundant and unimportant detail.",
        ("The summary misses the main points and is mostly irrelevant detail.",
         "The summary has a few important points among much unimportant detail.",
         "The summary has some important points but misses others or adds filler.",
         "The summary has most important points with little filler.",
         "The summary has all the important points and nothing superfluous."),
        **_SUMMARY,
    ),
    "helpfulness": Criterion(
        "Helpfulness",
        "the response does what the instruction asks, correctly, completely and clearly.",
        ("The response ignores the instruction or is wrong.",
         "The response addresses the instruction but is mostly wrong or incomplete.",
         "The response is partly correct and partly complete.",
         "The response is correct and nearly complete, with minor issues.",
         "The response is correct, complete and clear."),
    ),
}


def criterion(name: str, definition: str | None = None,
              levels: list[str] | None = None) -> Criterion:
    """A preset by name, or a custom criterion (name plus definition, optional levels)."""
    preset = PRESETS.get(name.lower())
    if preset is not None and definition is None and levels is None:
        return preset
    if definition is None:
        known = ", ".join(sorted(PRESETS))
        raise ValueError(f"criterion '{name}' is not built in ({known}); give a definition")
    if levels is not None and len(levels) != 5:
        raise ValueError("levels needs five descriptions, one per score 1-5")
    base = preset or Criterion(name, definition, ("",) * 5)
    return Criterion(
        name=base.name if preset else name,
        definition=definition,
        levels=tuple(levels) if levels else base.levels,  # type: ignore[arg-type]
        object=base.object,
        source_name=base.source_name,
    )
