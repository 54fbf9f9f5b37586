"""Trained sentinels: regressors that see only the candidate, only the input or only the
reference (Perrella et al. 2024, "Guardians of the Machine Translation Meta-Evaluation:
Sentinel Metrics Fall In!", SENTINEL-CAND/-SRC/-REF), fitted on the user's human scores.

Cross-fitting over items (meta_eval.combination, shared with `judgebench combine`): items are
shuffled (seeded) and dealt into K folds; the scores of fold k come from a model trained on the
other K-1 folds only, so an item's score never comes from a model that saw that item (not its
human score, nor its text as a training row). With K >= the number of items this is
leave-one-item-out.

Features: TF-IDF of word 1-2-grams (sublinear tf, fitted on the training folds' texts, each
distinct text counted once) with ridge regression (scikit-learn), or, with
features=embedding, pooled sentence embeddings from the neural plugin's encoder (needs the
`neural` extra; default the bundled all-MiniLM-L6-v2) with the same ridge:

    w = argmin_w ||y - b - X w||^2 + alpha ||w||^2
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from judgebench.plugin_api import (
    MAX_COUNT,
    MAX_MAGNITUDE,
    MAX_SEED,
    MAX_TOKENS,
    EmptyText,
    InputError,
    MetricInfo,
    Outcome,
    Sample,
    Sentinel,
    Status,
    require,
)
from judgebench_audit.sentinels import SENTINEL_CITATION
from meta_eval.combination import cross_fit, item_folds


class RegressorOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    folds: int = Field(default=5, ge=2, le=MAX_COUNT)
    alpha: float = Field(default=1.0, gt=0, le=MAX_MAGNITUDE)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    features: Literal["tfidf", "embedding"] = "tfidf"
    max_features: int = Field(default=50_000, ge=1, le=MAX_TOKENS)
    #: Sentence encoder for features=embedding (a local directory or the bundled MiniLM).
    model: str = "all-MiniLM-L6-v2"


class TextSentinel(Sentinel[RegressorOptions]):
    """A regressor from one text field to the human score, cross-fitted over items."""

    trained: ClassVar[bool] = True
    Options = RegressorOptions
    #: Which text the regressor sees: "output", "input" or "reference".
    field: ClassVar[str]

    def text_of(self, sample: Sample) -> str | None:
        if self.field == "output":
            return sample.output
        if self.field == "input":
            return sample.input_text
        refs = sample.references
        return "\n".join(refs) if refs else None

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        require(self.info.name, "audit", "sklearn")
        import sklearn

        fields["sklearn"] = sklearn.__version__
        if self.options.features == "tfidf":
            fields.pop("model", None)
        else:
            fields.pop("max_features", None)
            require(f"{self.info.name}:features=embedding", "neural", "torch", "transformers")
            fields["model_revision"] = _encoder_ref(self.options.model).revision
        fields["sees"] = self.field
        return fields

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        raise InputError(f"{self.info.name} is trained on human scores: it scores through "
                         "`judgebench audit` (fit_predict), not `judgebench score`")

    def fit_predict(self, samples: Sequence[Sample],
                    human: Sequence[float | None]) -> list[float | Outcome]:
        if len(human) != len(samples):
            raise ValueError(f"{len(samples)} samples but {len(human)} human scores")
        texts = [self.text_of(s) for s in samples]
        has_text = np.array([t is not None and t.strip() != "" for t in texts])
        target = np.array([np.nan if h is None else float(h) for h in human])
        target[~has_text] = np.nan
        folds = item_folds([s.item for s in samples], self.options.folds, self.options.seed)
        usable = np.flatnonzero(has_text)
        model = self._model([texts[i] or "" for i in usable])
        prediction = np.full(len(samples), np.nan)
        if usable.size:
            prediction[usable], trained = cross_fit(model, target[usable], folds[usable])
        else:
            trained = {}
        out: list[float | Outcome] = []
        for i, value in enumerate(prediction):
            if not has_text[i]:
                out.append(Outcome.failed(Status.SKIPPED, f"sample has no {self.field} text"))
            elif not np.isfinite(value):
                out.append(Outcome.failed(
                    Status.SKIPPED, f"fold {folds[i]} has {trained.get(int(folds[i]), 0)} "
                    "training rows with human scores (needs 2)"))
            else:
                out.append(float(value))
        return out

    def _model(self, texts: list[str]
               ) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
        """fit_predict over row indices of `texts`."""
        from sklearn.linear_model import Ridge

        alpha = self.options.alpha
        if self.options.features == "embedding":
            vectors = _embed(texts, self.options.model)

            def on_embeddings(train: np.ndarray, y: np.ndarray, test: np.ndarray) -> np.ndarray:
                return Ridge(alpha=alpha).fit(vectors[train], y).predict(vectors[test])

            return on_embeddings

        from sklearn.feature_extraction.text import TfidfVectorizer

        max_features = self.options.max_features
        # A text shared by many rows (an input read by 16 systems) is one document: it is
        # vectorised once and counts once in the document frequencies.
        unique, inverse = np.unique(np.array(texts, dtype=object), return_inverse=True)
        cache = self.__dict__.setdefault("_tfidf", {})
        corpus_key = hashlib.sha256("\x1e".join(unique).encode("utf-8")).hexdigest()

        def on_tfidf(train: np.ndarray, y: np.ndarray, test: np.ndarray) -> np.ndarray:
            in_train = np.unique(inverse[train])
            key = (corpus_key, in_train.tobytes())
            if key not in cache:  # the features do not depend on the target: reuse them
                vectorizer = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2),
                                             max_features=max_features)
                vectorizer.fit([unique[u] for u in in_train])
                cache[key] = vectorizer.transform(list(unique))
            matrix = cache[key]
            ridge = Ridge(alpha=alpha).fit(matrix[inverse[train]], y)
            return ridge.predict(matrix[inverse[test]])

        return on_tfidf


def _encoder_ref(model: str) -> Any:  # a judgebench_neural.loading.ModelRef
    try:
        from judgebench_neural.loading import resolve_model
    except ImportError as exc:
        raise InputError("features=embedding needs the neural plugin and its extra "
                         f"(pip install 'judgebench[neural]'): {exc}",
                         field="features") from None
    return resolve_model(model, what="sentinel encoder")


def _embed(texts: list[str], model: str) -> np.ndarray:
    from judgebench_neural.encoder import get_encoder

    unique = list(dict.fromkeys(texts))
    encoder = get_encoder(_encoder_ref(model))
    vectors = dict(zip(unique, encoder.sentence_embeddings(unique), strict=True))
    return np.stack([np.asarray(vectors[t], dtype=float) for t in texts])


def _info(name: str, field: str, what: str) -> MetricInfo:
    return MetricInfo(
        name=name, version="1", kind="sentinel", requires=(field,),
        description=f"Ridge regression on TF-IDF of the {what} only, trained on the human "
                    "scores with K-fold cross-fitting over items.",
        citation=SENTINEL_CITATION,
        empty_text=EmptyText.model_validate({
            field: "skipped",
            "note": f"skipped ('sample has no {field} text'): an empty (or blank) {field} has no "
                    "features, and it is left out of the training rows"}),
    )


class CandSentinel(TextSentinel):
    """sentinel.cand: sees only the candidate output."""

    info = _info("sentinel.cand", "output", "candidate output")
    field = "output"


class SrcSentinel(TextSentinel):
    """sentinel.src: sees only the input (source)."""

    info = _info("sentinel.src", "input", "input (source)")
    field = "input"


class RefSentinel(TextSentinel):
    """sentinel.ref: sees only the reference(s), joined."""

    info = _info("sentinel.ref", "reference", "reference(s)")
    field = "reference"
