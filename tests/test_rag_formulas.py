"""The rag.* formulas against independent computations: context precision against
scikit-learn's average precision and a brute force over precision@k, the fractions against
counting, answer relevance against numpy; the sentence splitter, the list parsers, the
schema's length bounds and logs' lines for judged units."""

from __future__ import annotations

import math

import numpy as np
import pytest
from judgebench_judges import parsing
from judgebench_judges.rag import (
    answer_relevance,
    attributed_fraction,
    context_precision,
    listed,
    sentences,
    supported_fraction,
    text_verdict,
)
from sklearn.metrics import average_precision_score


def brute_precision(relevant: list[bool]) -> float:
    """RAGAS' code path: sum_k precision@k * v_k / (sum v_k + 1e-10)."""
    at_k = [sum(relevant[: k + 1]) / (k + 1) for k in range(len(relevant))]
    return sum(p * v for p, v in zip(at_k, relevant, strict=True)) / (sum(relevant) + 1e-10)


@pytest.mark.parametrize("seed", range(40))
def test_context_precision_is_average_precision(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 30))
    relevant = [bool(v) for v in rng.random(k) < rng.random()]
    ours = context_precision(relevant)
    assert ours == pytest.approx(brute_precision(relevant), abs=1e-9)
    if any(relevant):  # sklearn: the ranking is the retrieved order (scores descending)
        scores = np.arange(k, 0, -1, dtype=float)
        assert ours == pytest.approx(average_precision_score(relevant, scores), abs=1e-12)
    else:
        assert ours == 0.0


def test_context_precision_by_hand() -> None:
    assert context_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)
    assert context_precision([False, True]) == pytest.approx(0.5)
    assert context_precision([]) == 0.0
    assert context_precision([True] * 1000) == 1.0


@pytest.mark.parametrize("seed", range(20))
def test_fractions_count_the_positive_verdicts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    verdicts = [bool(v) for v in rng.random(int(rng.integers(1, 50))) < 0.5]
    assert supported_fraction(verdicts) == sum(verdicts) / len(verdicts)
    assert attributed_fraction(verdicts) == np.mean(verdicts)


def test_undefined_fractions_say_so() -> None:
    with pytest.raises(ValueError, match="no claims"):
        supported_fraction([])
    with pytest.raises(ValueError, match="no reference sentence"):
        attributed_fraction([])
    with pytest.raises(ValueError, match="no generated question"):
        answer_relevance([], False)


@pytest.mark.parametrize("seed", range(20))
def test_answer_relevance_is_the_mean_cosine(seed: int) -> None:
    rng = np.random.default_rng(seed)
    asked = rng.normal(size=16) * 10.0 ** rng.integers(-3, 4)
    generated = rng.normal(size=(int(rng.integers(1, 6)), 16))
    cos = [float(g @ asked / (np.linalg.norm(g) * np.linalg.norm(asked))) for g in generated]
    expected = float(np.mean(generated @ asked / (np.linalg.norm(generated, axis=1)
                                                   * np.linalg.norm(asked))))
    assert answer_relevance(cos, False) == pytest.approx(expected, abs=1e-12)
    assert answer_relevance(cos, True) == 0.0
    assert math.isclose(answer_relevance([1e-300, -1e-300], False), 0.0, abs_tol=1e-300)


def test_sentences_split_on_stops_before_capitals() -> None:
    assert sentences("Paris is in France. It has 2 million people! Is it big? yes.") == [
        "Paris is in France.", "It has 2 million people!", "Is it big? yes."]
    assert sentences("  ") == []
    assert sentences("e.g. this stays one") == ["e.g. this stays one"]


def test_text_lists_and_verdicts_parse_strictly() -> None:
    assert listed("Claims:\n- one\n2. two\n* three") == ["one", "two", "three"]
    assert listed("NONE") == []
    with pytest.raises(parsing.ParseError, match="no list line"):
        listed("I cannot help with that.")
    assert text_verdict("quote\nVerdict: [[unsupported]]", ("SUPPORTED", "UNSUPPORTED")) \
        == "UNSUPPORTED"
    assert text_verdict("Verdict: NOT_ATTRIBUTED", ("ATTRIBUTED", "NOT_ATTRIBUTED")) \
        == "NOT_ATTRIBUTED"
    with pytest.raises(parsing.ParseError, match="no 'Verdict"):
        text_verdict("It is supported.", ("SUPPORTED", "UNSUPPORTED"))


@pytest.mark.parametrize("seed", range(30))
def test_the_longest_list_the_schema_allows_closes_within_max_tokens(seed: int) -> None:
    """A token is at least one character, so the longest JSON the schema admits (every item
    at maxLength, maxItems of them, compact as llguidance writes it) fits in max_tokens."""
    import json

    from judgebench_judges.rag import NONCOMMITTAL, list_schema

    rng = np.random.default_rng(seed)
    most = int(rng.integers(1, 17))
    extra = NONCOMMITTAL if seed % 2 else None
    max_tokens = int(rng.integers(40 + 12 * most, 2048))
    schema = list_schema("claims", most, extra, least=1, max_tokens=max_tokens)
    spec = schema["properties"]["claims"]
    longest: dict[str, object] = {"claims": ["\u00e9" * spec["items"]["maxLength"]] * most}
    if extra:
        longest["noncommittal"] = False
    assert len(json.dumps(longest, separators=(",", ":"), ensure_ascii=False)) <= max_tokens
    assert spec["minItems"] == 1 and spec["maxItems"] == most


def test_logs_show_each_judged_unit_on_a_line() -> None:
    from judgebench.render.text import block
    from judgebench.services.runs import LogEntry

    units = [{"text": "Paris is in France.", "status": "ok", "verdict": "supported",
              "evidence": "Paris is the capital of France."},
             {"text": "It has 90 million people.", "status": "parse_error",
              "reason": "no 'Verdict: SUPPORTED or UNSUPPORTED' in the answer", "raw": "Hmm."},
             {"text": "What is Paris?", "status": "ok", "cosine": 0.81234}]
    entry = LogEntry(run_id=1, level="segment", column="rag.faithfulness",
                     metric="rag.faithfulness", signature="s", item="q1", system="rag",
                     status="parse_error", reason="claim 2 of 3: no verdict", value=None,
                     extra={"claims": units, "n_claims": 3, "calls": 4})
    lines = block(entry).splitlines()
    at = lines.index("  claims (3):")
    assert lines[at + 1:] == [
        "    1. [supported] Paris is in France.",
        "       evidence: Paris is the capital of France.",
        "    2. [parse_error] It has 90 million people.",
        "       reason: no 'Verdict: SUPPORTED or UNSUPPORTED' in the answer",
        "       raw: Hmm.",
        "    3. [ok] What is Paris?",
        "       cosine: 0.8123",
        '  extra: {"n_claims": 3, "calls": 4}']
    plain = LogEntry(run_id=1, level="segment", column="c", metric="m", signature="s",
                     item="q", system="s", status="ok", reason=None, value=1.0,
                     extra={"claims": [], "probs": [{"text": "no status"}]})
    assert block(plain).splitlines()[-1] == (
        '  extra: {"claims": [], "probs": [{"text": "no status"}]}')
