"""Lexical metrics: sacrebleu's BLEU, chrF, chrF++ and TER; rouge-score's ROUGE; SQuAD-style
exact match and token F1; output length.

sacrebleu and rouge-score are imported when a metric is first built, not with the plugin.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from functools import cached_property
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judgebench.plugin_api import (
    MAX_COUNT,
    MAX_MAGNITUDE,
    EmptyText,
    Metric,
    MetricInfo,
    Sample,
    WithStatistics,
)


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- sacrebleu ------------------------------------------------------------------------------
BleuTokenizer = Literal[
    "13a", "intl", "zh", "ja-mecab", "ko-mecab", "char", "flores101", "flores200", "spm", "none"
]


class BleuOptions(_Options):
    tokenize: BleuTokenizer = "13a"
    smooth_method: Literal["exp", "floor", "add-k", "none"] = "exp"
    smooth_value: float | None = Field(None, ge=0, le=MAX_MAGNITUDE)
    lowercase: bool = False
    #: sacrebleu's `force`: no warning for output that looks tokenized (lines ending in " .").
    #: It changes no score, so like sacrebleu's own signature ours leaves it out.
    force: bool = False
    #: The corpus score with effective order (sacrebleu's `corpus_bleu(...,
    #: use_effective_order=True)`: n-gram orders with no n-gram in the corpus are left out of
    #: the geometric mean). Sentence scores always use effective order, as `sentence_bleu` does.
    corpus_effective_order: bool = False


#: The largest chrF n-gram order: each order is one more pass over every sentence.
MAX_ORDER = 100


class ChrfOptions(_Options):
    char_order: int = Field(6, ge=0, le=MAX_ORDER)
    word_order: int = Field(0, ge=0, le=MAX_ORDER)
    beta: int = Field(2, ge=0, le=MAX_COUNT)
    lowercase: bool = False
    whitespace: bool = False
    eps_smoothing: bool = False

    @model_validator(mode="after")
    def _some_order(self) -> ChrfOptions:
        if self.char_order + self.word_order == 0:
            raise ValueError("char_order and word_order are both 0: no n-gram to count")
        return self


class ChrfPlusPlusOptions(ChrfOptions):
    word_order: int = Field(2, ge=0, le=MAX_ORDER)


class TerOptions(_Options):
    normalized: bool = False
    no_punct: bool = False
    asian_support: bool = False
    case_sensitive: bool = False


SACREBLEU_EMPTY = ("as sacrebleu: 0 for an empty output or against an empty reference (another "
                   "reference may still match); an empty output counts in the corpus "
                   "statistics (length 0, no n-grams)")


def _reference_streams(samples: Sequence[Sample]) -> list[list[str | None]]:
    """sacrebleu wants one stream per reference position; shorter lists are padded with
    None, which sacrebleu reads as 'no reference here'."""
    width = max(len(s.references) for s in samples)
    return [[s.references[i] if i < len(s.references) else None for s in samples]
            for i in range(width)]


SacrebleuOptionsT = TypeVar("SacrebleuOptionsT", bound=_Options)


class SacrebleuMetric(Metric[SacrebleuOptionsT]):
    """Sentence scores as `sentence_score` computes them, the corpus score as `corpus_score`
    does (not the mean of sentence scores). sacrebleu's own signature is kept inside ours.

    sacrebleu scores a corpus from the sum of its sentences' statistics (BLEU: lengths and
    n-gram counts; chrF: n-gram counts; TER: edits and mean reference length), and a sentence
    gets the same statistics either way: each sentence keeps its own references, so a
    reference list shorter than another item's is just fewer references for that item. So
    `score` keeps each sentence's statistics with its result and `corpus_from_statistics`
    gives `corpus_score`'s value exactly from their sum in input order. The options that
    differ between the two levels (BLEU's effective order) act on the final formula only."""

    batch_size: ClassVar[int] = 256

    def _build(self, sentence: bool) -> Any:
        raise NotImplementedError

    @cached_property
    def _sentence_metric(self) -> Any:
        return self._build(sentence=True)

    @cached_property
    def _corpus_metric(self) -> Any:
        return self._build(sentence=False)

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        probe = self._build(sentence=True)
        probe.sentence_score("a b c", ["a b c"])  # sacrebleu fills its signature on first use
        # nrefs depends on the data; eff (effective order) on sentence vs corpus level.
        parts = [p for p in probe.get_signature().format().split("|")
                 if not p.startswith(("nrefs:", "eff:"))]
        fields["sacrebleu"] = "[" + "|".join(parts) + "]"
        return fields

    def _sentence(self, sample: Sample) -> list[list[Any]]:
        """`sentence_score`'s statistics step: a one-element list of the sentence's
        statistics."""
        metric = self._sentence_metric
        metric._check_sentence_score_args(sample.output, sample.references)
        return metric._extract_corpus_statistics(
            [sample.output], [[r] for r in sample.references])

    def _statistics(self, samples: Sequence[Sample]) -> list[list[Any]]:
        """Each sample's statistics, one sentence at a time."""
        return [self._sentence(sample)[0] for sample in samples]

    def score(self, samples: Sequence[Sample]) -> list[WithStatistics]:
        metric = self._sentence_metric
        results = []
        for stats in self._statistics(samples):
            kept = list(stats)  # before the score: BLEU's add-k smoothing adds in place
            results.append(WithStatistics(metric._aggregate_and_compute([stats]).score, kept))
        return results

    def statistics(self, samples: Sequence[Sample]) -> list[list[float]]:
        return [list(stats) for stats in self._statistics(samples)]

    def corpus_from_statistics(self, total: list[float]) -> float:
        return float(self._corpus_metric._compute_score_from_stats(list(total)).score)

    def corpus_score(self, samples: Sequence[Sample]) -> float:
        outputs = [s.output or "" for s in samples]  # an empty output counts: it has length 0
        return self._corpus_metric.corpus_score(outputs, _reference_streams(samples)).score


class Bleu(SacrebleuMetric[BleuOptions]):
    info = MetricInfo(
        name="lexical.bleu", kind="reference", requires=("output", "reference"),
        value_range=(0.0, 100.0), has_corpus=True,
        description="sacrebleu BLEU (sentence: effective order; corpus: corpus BLEU)",
        empty_text=EmptyText(output="scored", reference="scored", note=SACREBLEU_EMPTY),
        citation="Papineni, Roukos, Ward and Zhu (2002). BLEU: a Method for Automatic "
                 "Evaluation of Machine Translation. ACL. Post (2018). A Call for Clarity in "
                 "Reporting BLEU Scores. WMT.",
    )
    Options = BleuOptions

    def _build(self, sentence: bool) -> Any:
        from sacrebleu.metrics import BLEU

        o = self.options
        return BLEU(tokenize=o.tokenize, smooth_method=o.smooth_method,
                    smooth_value=o.smooth_value, lowercase=o.lowercase,
                    effective_order=sentence or o.corpus_effective_order, force=o.force)

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields.pop("force")
        if not self.options.corpus_effective_order:
            # the default: signatures (and stored scores) from before the option stay valid
            fields.pop("corpus_effective_order")
        return fields

    def _statistics(self, samples: Sequence[Sample]) -> list[list[Any]]:
        """The whole batch in one sacrebleu call: the same statistics as one sentence at a
        time, and sacrebleu's check for tokenized output (100 lines ending in " .") sees the
        batch as in its `corpus_score` (`force` turns it off; `judgebench -v` shows it)."""
        metric = self._sentence_metric
        outputs = [s.output for s in samples]
        streams = _reference_streams(samples)
        metric._check_corpus_score_args(outputs, streams)
        return list(metric._extract_corpus_statistics(outputs, streams))


class Chrf(SacrebleuMetric[ChrfOptions]):
    info = MetricInfo(
        name="lexical.chrf", kind="reference", requires=("output", "reference"),
        value_range=(0.0, 100.0), has_corpus=True, description="sacrebleu chrF",
        empty_text=EmptyText(output="scored", reference="scored", note=SACREBLEU_EMPTY),
        citation="Popović (2015). chrF: character n-gram F-score for automatic MT evaluation. "
                 "WMT. Post (2018). A Call for Clarity in Reporting BLEU Scores. WMT.",
    )
    Options = ChrfOptions

    def _build(self, sentence: bool) -> Any:
        from sacrebleu.metrics import CHRF

        o = self.options
        return CHRF(char_order=o.char_order, word_order=o.word_order, beta=o.beta,
                    lowercase=o.lowercase, whitespace=o.whitespace,
                    eps_smoothing=o.eps_smoothing)


class ChrfPlusPlus(Chrf):
    info = Chrf.info.model_copy(update={
        "name": "lexical.chrf++", "description": "sacrebleu chrF++ (word bigrams too)",
        "citation": "Popović (2017). chrF++: words helping character n-grams. WMT. Post "
                    "(2018). A Call for Clarity in Reporting BLEU Scores. WMT."})
    Options = ChrfPlusPlusOptions


class Ter(SacrebleuMetric[TerOptions]):
    info = MetricInfo(
        name="lexical.ter", kind="reference", requires=("output", "reference"),
        higher_is_better=False, value_range=(0.0, None), has_corpus=True,
        description="sacrebleu TER (edits per reference word, x100)",
        empty_text=EmptyText(output="scored", reference="scored",
                             note="as sacrebleu: 100 for an empty output against a non-empty "
                                  "reference (and for an output against an empty one), 0 when "
                                  "both are empty; an empty output counts in the corpus "
                                  "statistics (its edits, the reference length)"),
        citation="Snover, Dorr, Schwartz, Micciulla and Makhoul (2006). A Study of Translation "
                 "Edit Rate with Targeted Human Annotation. AMTA. Post (2018). A Call for "
                 "Clarity in Reporting BLEU Scores. WMT.",
    )
    Options = TerOptions

    def _build(self, sentence: bool) -> Any:
        from sacrebleu.metrics import TER

        o = self.options
        return TER(normalized=o.normalized, no_punct=o.no_punct,
                   asian_support=o.asian_support, case_sensitive=o.case_sensitive)


# -- ROUGE ----------------------------------------------------------------------------------
class RougeOptions(_Options):
    multi_ref: Literal["max", "mean"] = "max"
    measure: Literal["f", "p", "r"] = "f"
    stemmer: bool = True
    tokenizer: Literal["unicode", "rouge_score"] = "unicode"


class RougeLsumOptions(RougeOptions):
    split: Literal["auto", "newline", "punct"] = "auto"


RougeOptionsT = TypeVar("RougeOptionsT", bound=RougeOptions)


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_MEASURE = {"f": "fmeasure", "p": "precision", "r": "recall"}


def split_sentences(text: str, how: str) -> str:
    """Sentences one per line, as rouge-score's rougeLsum expects. `auto` keeps existing line
    breaks and otherwise splits after sentence-final punctuation."""
    if how == "newline" or (how == "auto" and "\n" in text.strip()):
        return text
    return "\n".join(s for s in _SENTENCE_END.split(text.strip()) if s)


class Rouge(Metric[RougeOptionsT]):
    """ROUGE F-measure (or P/R) from rouge-score. Several references: `max` takes the
    reference with the best F-measure (rouge-score's score_multi), `mean` averages."""

    rouge_type: ClassVar[str]
    batch_size: ClassVar[int] = 256

    @cached_property
    def _scorer(self) -> Any:
        from rouge_score import rouge_scorer

        from judgebench_lexical.tokenize import UnicodeTokenizer

        o = self.options
        tokenizer = UnicodeTokenizer(stemmer=o.stemmer) if o.tokenizer == "unicode" else None
        return rouge_scorer.RougeScorer([self.rouge_type], use_stemmer=o.stemmer,
                                        tokenizer=tokenizer)

    def signature_fields(self) -> dict[str, str]:
        from importlib.metadata import version

        return {**super().signature_fields(), "rouge_score": version("rouge-score")}

    def _prepare(self, text: str) -> str:
        return text

    def score(self, samples: Sequence[Sample]) -> list[float]:
        scorer, kind = self._scorer, self.rouge_type
        attr = _MEASURE[self.options.measure]
        values = []
        for sample in samples:
            prediction = self._prepare(sample.output or "")
            per_ref = [scorer.score(self._prepare(r), prediction)[kind]
                       for r in sample.references]
            if self.options.multi_ref == "mean":
                values.append(sum(getattr(s, attr) for s in per_ref) / len(per_ref))
            else:
                best = max(range(len(per_ref)), key=lambda i: per_ref[i].fmeasure)
                values.append(getattr(per_ref[best], attr))
        return values


ROUGE_CITATION = ("Lin (2004). ROUGE: A Package for Automatic Evaluation of Summaries. Text "
                  "Summarization Branches Out (ACL workshop); computed with Google's "
                  "rouge-score package.")
SQUAD_CITATION = ("Rajpurkar, Zhang, Lopyrev and Liang (2016). SQuAD: 100,000+ Questions for "
                  "Machine Comprehension of Text. EMNLP.")


ROUGE_EMPTY = EmptyText(output="scored", reference="scored",
                        note="as rouge-score: 0 (precision, recall and F) when the output or "
                             "the reference has no tokens, both empty included")


def _rouge_info(rouge_type: str, description: str) -> MetricInfo:
    return MetricInfo(name=f"lexical.{rouge_type}", kind="reference",
                      requires=("output", "reference"), value_range=(0.0, 1.0),
                      description=description, citation=ROUGE_CITATION, empty_text=ROUGE_EMPTY)


class Rouge1(Rouge[RougeOptions]):
    rouge_type = "rouge1"
    Options = RougeOptions
    info = _rouge_info("rouge1", "ROUGE-1 (unigram overlap)")


class Rouge2(Rouge[RougeOptions]):
    rouge_type = "rouge2"
    Options = RougeOptions
    info = _rouge_info("rouge2", "ROUGE-2 (bigram overlap)")


class RougeL(Rouge[RougeOptions]):
    rouge_type = "rougeL"
    Options = RougeOptions
    info = _rouge_info("rougeL", "ROUGE-L (longest common subsequence, whole text)")


class RougeLsum(Rouge[RougeLsumOptions]):
    rouge_type = "rougeLsum"
    info = _rouge_info("rougeLsum", "ROUGE-Lsum (summary-level LCS over sentences)")
    Options = RougeLsumOptions

    def _prepare(self, text: str) -> str:
        return split_sentences(text, self.options.split)


# -- SQuAD-style answer matching ------------------------------------------------------------
class AnswerOptions(_Options):
    normalize: Literal["squad", "none"] = "squad"


_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def squad_normalize(text: str) -> str:
    """Lowercase, drop punctuation and English articles, collapse whitespace (SQuAD v1.1)."""
    text = _ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION))
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall over the bag of tokens (SQuAD v1.1)."""
    pred, ref = prediction.split(), reference.split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


class _AnswerMetric(Metric[AnswerOptions]):
    Options = AnswerOptions
    batch_size: ClassVar[int] = 1024

    def _norm(self, text: str) -> str:
        return squad_normalize(text) if self.options.normalize == "squad" else text.strip()

    def _compare(self, prediction: str, reference: str) -> float:
        raise NotImplementedError

    def score(self, samples: Sequence[Sample]) -> list[float]:
        return [
            max(self._compare(self._norm(s.output or ""), self._norm(r)) for r in s.references)
            for s in samples
        ]


class ExactMatch(_AnswerMetric):
    info = MetricInfo(name="lexical.exact_match", kind="reference",
                      requires=("output", "reference"), value_range=(0.0, 1.0),
                      description="1 if the normalised output equals a normalised reference",
                      citation=SQUAD_CITATION,
                      empty_text=EmptyText(output="scored", reference="scored",
                                           note="as SQuAD's script: 1 when both normalise to "
                                                "the empty text, else 0"))

    def _compare(self, prediction: str, reference: str) -> float:
        return float(prediction == reference)


class TokenF1(_AnswerMetric):
    info = MetricInfo(name="lexical.token_f1", kind="reference",
                      requires=("output", "reference"), value_range=(0.0, 1.0),
                      description="SQuAD token F1, best over references",
                      citation=SQUAD_CITATION,
                      empty_text=EmptyText(output="scored", reference="scored",
                                           note="as SQuAD v2.0's script: 1 when both have no "
                                                "tokens, 0 when only one has none"))

    def _compare(self, prediction: str, reference: str) -> float:
        return token_f1(prediction, reference)


# -- length ---------------------------------------------------------------------------------
LENGTH_CITATION = ("No paper: a count. Why it matters (length drives judges and people): "
                   "Dubois, Galambosi, Liang and Hashimoto (2024). Length-Controlled "
                   "AlpacaEval: A Simple Way to Debias Automatic Evaluators. arXiv:2404.04475.")


class LengthOptions(_Options):
    unit: Literal["words", "chars"] = "words"


class Length(Metric[LengthOptions]):
    info = MetricInfo(name="lexical.length", kind="reference", requires=("output",),
                      value_range=(0.0, None), description="output length in words or characters",
                      citation=LENGTH_CITATION,
                      empty_text=EmptyText(output="scored", note="0 words, 0 characters"))
    Options = LengthOptions
    batch_size: ClassVar[int] = 4096

    def score(self, samples: Sequence[Sample]) -> list[float]:
        if self.options.unit == "chars":
            return [float(len(s.output or "")) for s in samples]
        return [float(len((s.output or "").split())) for s in samples]


ALL: tuple[type[Metric], ...] = (
    Bleu, Chrf, ChrfPlusPlus, Ter, Rouge1, Rouge2, RougeL, RougeLsum, ExactMatch, TokenF1, Length,
)
