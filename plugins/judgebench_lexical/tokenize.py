"""A ROUGE tokenizer for any script.

rouge-score's default tokenizer keeps only [a-z0-9] and so scores Chinese, Thai, Arabic or
Hindi text as empty (ROUGE 0 even for identical strings). This one gives the same tokens as
rouge-score on ASCII text (lowercase, split on anything not alphanumeric, Porter stemming of
tokens longer than 3 characters) and on other text keeps Unicode letters, marks and digits:
space-delimited scripts split into words, scripts written without spaces (Han, kana, Thai,
Lao, Khmer, Myanmar) into characters with their combining marks.
"""

from __future__ import annotations

from functools import lru_cache

import regex
from nltk.stem import porter
from rouge_score import tokenize as rouge_tokenize

_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_TOKEN = regex.compile(rf"[{_UNSPACED}]\p{{M}}*|[^\s\p{{P}}\p{{S}}\p{{Z}}\p{{C}}{_UNSPACED}]+")


class UnicodeTokenizer:
    """Drop-in `tokenize(text)` for rouge_score.RougeScorer(tokenizer=...). Results are cached,
    so texts shared by many samples (references) are tokenized once."""

    def __init__(self, stemmer: bool = True) -> None:
        self.stemmer = stemmer
        # The stemmer rouge-score uses, so ASCII tokens match it exactly.
        self._stemmer = porter.PorterStemmer() if stemmer else None
        self.tokenize = lru_cache(maxsize=1 << 16)(self._tokenize)

    def _tokenize(self, text: str) -> list[str]:
        if text.isascii():
            return rouge_tokenize.tokenize(text, self._stemmer)
        tokens = _TOKEN.findall(text.lower())
        if self._stemmer is not None:
            stem = self._stemmer.stem
            tokens = [stem(t) if t.isascii() and len(t) > 3 else t for t in tokens]
        return tokens
