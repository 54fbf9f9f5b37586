"""Each built-in bias probe's edit changes only what it claims (metamorphic checks on the
bundled SummEval outputs and on random texts): the answer is kept verbatim, the padding adds
no content word of its own, the citation and the bandwagon note are the only added sentence;
edits are seeded; the battery changes nothing but the output (pointwise) or the two outputs
and their systems (pairwise)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from judgebench_audit.bias_probes import (
    AUTHORS,
    BIAS_PROBES,
    CLOSERS,
    FALLACIES,
    OPENERS,
    PADDING,
    PADDING_WORDS,
    TONE_WORDS,
    VENUES,
    Authority,
    Bandwagon,
    Fallacy,
    Formatting,
    Sentiment,
    Verbosity,
    first_sentence,
    sentences,
)

from judgebench.auditing import bias_battery
from judgebench.bias_probe import BiasProbe
from judgebench.models import Sample
from judgebench.plugins import build_host
from judgebench.probe import SENTENCE, seeded_rng

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "summeval-sample.jsonl"
WORD = re.compile(r"[A-Za-z0-9']+")
CITATION = re.compile(r"\[Reference: (?P<author>[A-Za-z]+) et al, (?P<venue>[A-Za-z ]+) "
                      r"\((?P<year>\d{4})\), pp (?P<first>\d+)-(?P<last>\d+)\]")
NOTE = re.compile(r"\((?P<share>\d+)% of people who read this answer preferred it\)")


def outputs() -> list[str]:
    lines = EXAMPLES.read_text(encoding="utf-8").splitlines()
    rng = np.random.default_rng(0)
    vocabulary = ["the", "model", "said", "42", "Paris", "isn't", "Dr.", "e.g.", "ok!", "why?"]
    randoms = [" ".join(rng.choice(vocabulary, int(rng.integers(1, 30))))
               for _ in range(40)]
    return [json.loads(line)["output"] for line in lines] + randoms + ["one", "  padded  "]


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def edit(probe: BiasProbe, text: str, key: object = 0) -> str:
    changed = probe.edit(text, seeded_rng(key, probe.name))
    assert changed is not None
    return changed


@pytest.mark.parametrize("text", outputs())
def test_verbosity_pads_with_the_answers_own_words_and_the_filler_only(text: str) -> None:
    changed = edit(Verbosity(), text)
    kept = text.rstrip()
    assert changed.startswith(kept) and len(changed) > len(kept)
    added = changed[len(kept):]
    assert added == PADDING + first_sentence(text)
    assert set(words(added)) - set(words(text)) <= PADDING_WORDS
    # no content word is added: every word of the edit is the answer's or the filler's
    assert set(words(changed)) <= set(words(text)) | PADDING_WORDS


@pytest.mark.parametrize("text", outputs())
def test_authority_adds_one_citation_sentence_and_nothing_else(text: str) -> None:
    changed = edit(Authority(), text)
    kept = text.rstrip()
    assert changed.startswith(kept + " ")
    citation = changed[len(kept) + 1:]
    match = CITATION.fullmatch(citation)
    assert match is not None, citation
    assert match["author"] in AUTHORS and match["venue"] in VENUES
    assert int(match["last"]) - int(match["first"]) == 12
    assert [p for p in SENTENCE.split(citation) if p] == [citation]  # one sentence
    if re.search(r"[.!?]$", kept):
        assert [p for p in SENTENCE.split(changed) if p] == [
            *(p for p in SENTENCE.split(kept) if p), citation]


@pytest.mark.parametrize("text", outputs())
def test_bandwagon_adds_one_note_and_nothing_else(text: str) -> None:
    changed = edit(Bandwagon(), text)
    kept = text.rstrip()
    assert changed.startswith(kept + " ")
    note = changed[len(kept) + 1:]
    match = NOTE.fullmatch(note)
    assert match is not None and 75 <= int(match["share"]) <= 95
    assert [p for p in SENTENCE.split(note) if p] == [note]


@pytest.mark.parametrize("text", outputs())
def test_sentiment_wraps_the_same_answer_in_tone_words_only(text: str) -> None:
    changed = edit(Sentiment(), text)
    opener = next(o for o in OPENERS if changed.startswith(o))
    closer = next(c for c in CLOSERS if changed.endswith(c))
    assert changed[len(opener):len(changed) - len(closer)] == text.strip()
    assert set(words(opener + closer)) <= TONE_WORDS
    # every content word of the answer is kept, and none is added
    assert set(words(changed)) <= set(words(text)) | TONE_WORDS


@pytest.mark.parametrize("text", outputs())
def test_formatting_turns_sentences_into_bullets_and_keeps_every_word(text: str) -> None:
    changed = Formatting().edit(text, seeded_rng(0))
    if len(sentences(text)) < 2:
        assert changed is None
        return
    assert changed is not None
    lines = changed.split("\n")
    assert all(line.startswith("- ") for line in lines)
    assert [line[2:] for line in lines] == sentences(text)
    assert " ".join(line[2:] for line in lines).split() == text.split()


def test_formatting_leaves_markdown_alone() -> None:
    for text in ("- one. - two.", "Intro.\n1. first. 2. second.", "# Title\nBody. More.",
                 "Some **bold** text. And more."):
        assert Formatting().edit(text, seeded_rng(0)) is None


@pytest.mark.parametrize("text", outputs())
def test_fallacy_inserts_one_flawed_step_and_keeps_the_answer(text: str) -> None:
    changed = edit(Fallacy(), text)
    original = sentences(text)
    flaw = next(f for f in FALLACIES if f in changed)
    assert changed == " ".join([*original[:-1], flaw, original[-1]])
    # the answer's own sentences, in order, and its final sentence last
    assert changed.replace(flaw + " ", "", 1) == " ".join(original)


@pytest.mark.parametrize("probe", [p() for p in BIAS_PROBES], ids=lambda p: p.name)
def test_edits_are_seeded_and_refuse_empty_text(probe: BiasProbe) -> None:
    text = outputs()[0]
    assert edit(probe, text, "seed-1") == edit(probe, text, "seed-1")
    assert probe.edit("", seeded_rng(1)) is None and probe.edit("  \n", seeded_rng(1)) is None


def test_the_seed_varies_the_citation_and_the_share() -> None:
    text = outputs()[0]
    assert len({edit(Authority(), text, k) for k in range(30)}) > 10
    assert len({edit(Bandwagon(), text, k) for k in range(30)}) > 5


def test_the_probes_register_through_the_probe_hook_beside_the_metamorphic_ones() -> None:
    host = build_host()
    bias = host.bias_probes()
    assert list(bias) == ["verbosity", "authority", "bandwagon", "sentiment", "formatting",
                          "fallacy"]
    assert [bias[n].probe.expect for n in ("authority", "fallacy")] == ["same", "lower"]
    assert {e.plugin for e in bias.values()} == {"audit"}
    assert not set(bias) & set(host.probes())


def test_the_battery_changes_only_the_output_of_a_pointwise_sample() -> None:
    samples = [Sample(item=f"i{k}", system="s", output=t, input="question", reference="r")
                for k, t in enumerate(outputs()[:6])]
    seen: list[Sample] = []

    def score(batch):
        seen.extend(batch)
        return [1.0] * len(batch)

    bias_battery.pointwise(samples, score, probes=[Authority()], judge="j",
                           higher_is_better=True, seed=3, confidence=0.95)
    originals = {s.item: s for s in samples}
    edited = seen[len(samples):]
    assert len(edited) == len(samples)
    for s in edited:
        before = originals[s.item]
        assert s.model_dump(exclude={"output", "system"}) == before.model_dump(
            exclude={"output", "system"})
        assert s.system == "s~bias-authority" and s.output != before.output


def test_the_pairwise_battery_judges_each_answer_against_its_edit_in_both_orders() -> None:
    pair = Sample(item="i", system="x vs y", system_a="x", system_b="y",
                  output_a="First answer.", output_b="Second answer.", input="q")
    seen: list[Sample] = []

    def score(batch):
        seen.extend(batch)
        return [0.5] * len(batch)

    [result] = bias_battery.pairwise([pair], score, probes=[Bandwagon()], judge="j",
                                     center=0.5, seed=0, confidence=0.95)
    assert len(seen) == 2  # one answer per pair, two orders
    first, second = seen
    assert first.output_b == second.output_a == "First answer."
    assert first.output_a == second.output_b != "First answer."
    assert NOTE.search(first.output_a or "")
    assert first.input == second.input == "q"
    assert (result.value, result.n, result.extra["verdict"]) == (0.0, 1, "undetermined")
    assert result.extra["ci_low"] is None and result.extra["ci_high"] is None  # not NaN


@pytest.mark.parametrize("higher", [True, False])
def test_the_pointwise_shift_is_the_mean_oriented_sign_computed_directly(higher: bool) -> None:
    """A judge whose value is a seeded draw per text (ties, failures: None, huge values)."""
    from scipy import stats

    samples = [Sample(item=f"i{k}", system=f"s{k % 3}", output=t)
               for k, t in enumerate(outputs()[:50])]
    rng = np.random.default_rng(11)
    values: dict[str, float | None] = {}

    def value(text: str) -> float | None:
        if text not in values:
            draw = rng.random()
            values[text] = (None if draw < 0.1 else float(rng.integers(1, 4)) * 1e300
                            if draw < 0.7 else float(rng.integers(1, 4)))
        return values[text]

    [result] = bias_battery.pointwise(samples, lambda b: [value(s.output or "") for s in b],
                                      probes=[Verbosity()], judge="j", higher_is_better=higher,
                                      seed=5, confidence=0.9)
    moves = []
    for s in samples:
        before = value(s.output or "")
        after = value(edit_with(Verbosity(), s, 5))
        if before is None or after is None:
            continue
        moves.append(float(np.sign(after - before)) * (1 if higher else -1))
    assert result.n == len(moves) and result.extra["failed"] == len(samples) - len(moves)
    assert result.value == pytest.approx(float(np.mean(moves)), abs=1e-12)
    ci = stats.ttest_1samp(moves, 0.0).confidence_interval(0.9)
    assert result.extra["ci_low"] == pytest.approx(max(-1.0, float(ci.low)), abs=1e-10)
    assert result.extra["ci_high"] == pytest.approx(min(1.0, float(ci.high)), abs=1e-10)


def edit_with(probe: BiasProbe, s: Sample, seed: int) -> str:
    changed = probe.edit(s.output or "", seeded_rng(seed, "bias", probe.name, s.item, s.system))
    assert changed is not None
    return changed
