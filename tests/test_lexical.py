"""Lexical metrics agree with sacrebleu and rouge-score called directly, and ROUGE handles
every script."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu
from conftest import summeval_records
from judgebench_lexical.metrics import split_sentences, squad_normalize, token_f1
from rouge_score import rouge_scorer

import judgebench
from judgebench.models import Sample
from judgebench.plugins import build_host

RECORDS = summeval_records(48)
# TER's shift search is slow on 60-word summaries with 11 references: test it on short ones.
SHORT = [{**r, "output": " ".join(r["output"].split()[:12]),
          "reference": [" ".join(x.split()[:12]) for x in r["reference"][:2]]} for r in RECORDS]


def _scores(spec: str, records: list[dict] = RECORDS) -> np.ndarray:
    return judgebench.score(records, metrics=[spec]).to_pandas()[spec].to_numpy()


def _metric(name: str, **options: str):
    return build_host().metric(name).build(**options)


@pytest.mark.parametrize(
    ("spec", "direct"),
    [
        ("lexical.bleu", lambda h, r: sacrebleu.sentence_bleu(h, r).score),
        ("lexical.chrf", lambda h, r: sacrebleu.sentence_chrf(h, r).score),
        ("lexical.chrf++", lambda h, r: sacrebleu.sentence_chrf(h, r, word_order=2).score),
        ("lexical.ter", lambda h, r: sacrebleu.sentence_ter(h, r).score),
        ("lexical.bleu:tokenize=intl,lowercase=true",
         lambda h, r: sacrebleu.sentence_bleu(h, r, tokenize="intl", lowercase=True).score),
    ],
)
def test_sacrebleu_sentence_parity(spec: str, direct) -> None:
    records = SHORT if "ter" in spec else RECORDS
    expected = [direct(r["output"], r["reference"]) for r in records]
    assert _scores(spec, records) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
@pytest.mark.parametrize("multi_ref", ["max", "mean"])
def test_rouge_parity_with_rouge_score(rouge_type: str, multi_ref: str) -> None:
    scorer = rouge_scorer.RougeScorer([rouge_type], use_stemmer=True)
    expected = []
    for r in RECORDS:
        prep = (lambda t: split_sentences(t, "auto")) if rouge_type == "rougeLsum" else str
        if multi_ref == "max":
            expected.append(scorer.score_multi([prep(x) for x in r["reference"]],
                                               prep(r["output"]))[rouge_type].fmeasure)
        else:
            expected.append(np.mean([scorer.score(prep(x), prep(r["output"]))[rouge_type].fmeasure
                                     for x in r["reference"]]))
    got = _scores(f"lexical.{rouge_type}:multi_ref={multi_ref}")
    assert got == pytest.approx(expected, abs=1e-12)


def test_rouge_options_change_the_numbers() -> None:
    plain = _scores("lexical.rouge1")
    assert not np.allclose(plain, _scores("lexical.rouge1:stemmer=false"))
    recall = _scores("lexical.rouge1:measure=r,multi_ref=mean")
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    r = RECORDS[0]
    assert recall[0] == pytest.approx(np.mean(
        [scorer.score(x, r["output"])["rouge1"].recall for x in r["reference"]]))


@pytest.mark.parametrize(
    "text",
    [
        "我们今天在北京开会，讨论了新的计划。",
        "วันนี้อากาศดีมาก เราไปเที่ยวทะเลกัน",
        "ذهب الطالب إلى المدرسة في الصباح الباكر",
        "आज मौसम बहुत अच्छा है और हम बाहर जा रहे हैं",
        "東京で会議がありました。",
    ],
)
@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL", "rougeLsum"])
def test_rouge_scores_any_script(text: str, rouge_type: str) -> None:
    metric = _metric(f"lexical.{rouge_type}")
    same = Sample(item="1", system="s", output=text, reference=text)
    other = Sample(item="1", system="t", output="completely unrelated words", reference=text)
    half = Sample(item="1", system="u", output=text[: len(text) // 2], reference=text)
    identical, unrelated, partial = metric.score([same, other, half])
    assert identical == 1.0
    assert unrelated == 0.0
    assert 0.0 < partial < 1.0
    rouge_score_default = _metric(f"lexical.{rouge_type}", tokenizer="rouge_score")
    assert rouge_score_default.score([same])[0] == 0.0  # the silent failure we replace


def test_bleu_chinese_tokenizer_matches_sacrebleu() -> None:
    hyp, ref = "我们今天在北京开会。", "今天我们在北京开了会。"
    sample = Sample(item="1", system="s", output=hyp, reference=ref)
    got = _metric("lexical.bleu", tokenize="zh").score([sample])[0]
    assert got == pytest.approx(sacrebleu.sentence_bleu(hyp, [ref], tokenize="zh").score)
    assert got != pytest.approx(_metric("lexical.bleu").score([sample])[0])


def test_corpus_scores_match_sacrebleu_with_variable_reference_counts() -> None:
    samples = [
        Sample(item="1", system="s", output="the cat sat on the mat",
               reference=["the cat sat on a mat", "a cat was on the mat"]),
        Sample(item="2", system="s", output="dogs bark loudly", reference="the dogs bark"),
    ]
    for name, fn in [("lexical.bleu", sacrebleu.corpus_bleu), ("lexical.chrf",
                                                             sacrebleu.corpus_chrf),
                     ("lexical.ter", sacrebleu.corpus_ter)]:
        refs = [["the cat sat on a mat", "the dogs bark"], ["a cat was on the mat", None]]
        assert _metric(name).corpus_score(samples) == pytest.approx(
            fn([s.output for s in samples], refs).score)


def test_signature_carries_sacrebleu_signature() -> None:
    signature = str(_metric("lexical.bleu", tokenize="zh").signature())
    assert signature.startswith("lexical.bleu@1|")
    assert "sacrebleu:[case:mixed|tok:zh|smooth:exp|version:" in signature
    assert "tokenize:zh" in signature


@pytest.mark.parametrize(
    ("output", "references", "em", "f1"),
    [
        ("The Eiffel Tower!", ["eiffel tower"], 1.0, 1.0),
        ("Paris, France", ["Paris"], 0.0, 2 / 3),
        ("an apple", ["a banana", "the apple"], 1.0, 1.0),
        ("nothing in common", ["zebra"], 0.0, 0.0),
    ],
)
def test_exact_match_and_token_f1(output: str, references: list[str], em: float,
                                  f1: float) -> None:
    sample = Sample(item="1", system="s", output=output, reference=references)
    assert _metric("lexical.exact_match").score([sample]) == [em]
    assert _metric("lexical.token_f1").score([sample]) == [pytest.approx(f1)]


def test_squad_helpers() -> None:
    assert squad_normalize("  The  Quick, brown fox.  ") == "quick brown fox"
    assert token_f1("a b c", "a b d") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0


def test_length() -> None:
    sample = Sample(item="1", system="s", output="three short words")
    assert _metric("lexical.length").score([sample]) == [3.0]
    assert _metric("lexical.length", unit="chars").score([sample]) == [17.0]


def test_split_sentences() -> None:
    assert split_sentences("One . Two ! Three ?", "punct") == "One .\nTwo !\nThree ?"
    assert split_sentences("keep\nlines. as is", "auto") == "keep\nlines. as is"
    assert split_sentences("第一句。第二句。", "auto") == "第一句。\n第二句。"
