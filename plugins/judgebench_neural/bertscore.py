"""BERTScore (Zhang et al., 2020, "BERTScore: Evaluating Text Generation with BERT").

With unit-length contextual token vectors x_i of the reference x and y_j of the candidate y,
and token weights w (1 for every token but [CLS]/[SEP], or IDF):

    R = sum_i w(x_i) max_j x_i . y_j / sum_i w(x_i)
    P = sum_j w(y_j) max_i x_i . y_j / sum_j w(y_j)
    F = 2 P R / (P + R)

IDF over a corpus of M reference documents is idf(t) = log((M + 1) / (df(t) + 1)) (a token in
no document gets log(M + 1)). Baseline rescaling maps s to (s - b) / (1 - b) with b, per part,
the row of a baseline file for the layer used (the `bert-score` package's CSV format:
``LAYER,P,R,F``). With several references the score of each part is its best over the
references, as `bert-score` does (P, R and F may come from different references).

This follows the `bert-score` package (tokenisation with special tokens, truncation at the
model's length, [CLS]/[SEP] weighted 0 but still matchable) and agrees with it to 1e-4 on the
same model; it differs only where that package lets padding take part in the max (a token
whose best similarity is negative), where this takes the max over real tokens.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from judgebench.plugin_api import (
    MAX_COUNT,
    EmptyText,
    InputError,
    MetricInfo,
    Outcome,
    Sample,
    Status,
)
from judgebench_neural.base import EncoderMetric, ModelOptions

PARTS = ("precision", "recall", "f1")


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies of token ids over `n_docs` documents."""

    df: dict[int, int]
    n_docs: int

    def weight(self, token: int) -> float:
        return math.log((self.n_docs + 1) / (self.df.get(token, 0) + 1))

    def weights(self, ids: np.ndarray) -> np.ndarray:
        return np.array([self.weight(int(t)) for t in ids], dtype=np.float32)


def idf_table(documents: Iterable[Sequence[int]]) -> IdfTable:
    """Count in how many documents each token id occurs (each document counted once)."""
    df: Counter[int] = Counter()
    n_docs = 0
    for ids in documents:
        df.update(set(ids))
        n_docs += 1
    return IdfTable(dict(df), n_docs)


def uniform_weights(ids: np.ndarray, special: Iterable[int]) -> np.ndarray:
    """Weight 1 for every token, 0 for the special tokens given (BERTScore: [CLS], [SEP])."""
    weights = np.ones(len(ids), dtype=np.float32)
    weights[np.isin(ids, np.fromiter(special, dtype=np.int64))] = 0.0
    return weights


def greedy_match(candidate: np.ndarray, candidate_weights: np.ndarray,
                 references: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """(k, 3) array of P, R, F of one candidate against each of k references.

    `candidate` (m, d) and each reference block (n_k, d) hold unit rows; the weights are
    per token (they need not sum to 1). One matrix product covers all references; the
    per-reference maxima are segment reductions over its columns.
    """
    blocks = np.concatenate([vectors for vectors, _ in references])
    sim = candidate @ blocks.T  # (m, sum n_k)
    starts = np.cumsum([0] + [len(v) for v, _ in references[:-1]])
    ref_weights = np.concatenate([w for _, w in references])
    best_for_candidate = np.maximum.reduceat(sim, starts, axis=1)  # (m, k)
    precision = candidate_weights @ best_for_candidate / candidate_weights.sum()
    recall = (np.add.reduceat(sim.max(axis=0) * ref_weights, starts)
              / np.add.reduceat(ref_weights, starts))
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2 * precision * recall / (precision + recall)
    return np.stack([precision, recall, f1], axis=1).astype(np.float64)


def rescale(values: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """(s - b) / (1 - b), part by part."""
    return (values - baseline) / (1 - baseline)


def read_baseline(path: str | Path, layer: int) -> np.ndarray:
    """P, R, F baselines of `layer` from a `bert-score` baseline CSV (LAYER,P,R,F)."""
    import pandas as pd

    try:
        table = pd.read_csv(path)
    except FileNotFoundError:
        raise InputError("baseline file not found", path=str(path), field="baseline") from None
    except Exception as exc:
        raise InputError(f"cannot read baseline CSV: {exc}", path=str(path),
                         field="baseline") from None
    missing = [c for c in ("P", "R", "F") if c not in table.columns]
    if missing:
        raise InputError(f"baseline file lacks column(s) {missing}; expected LAYER,P,R,F",
                         path=str(path), field="baseline")
    if not 0 <= layer < len(table):
        raise InputError(f"baseline file has no row for layer {layer}", path=str(path),
                         field="baseline")
    return table.iloc[layer][["P", "R", "F"]].to_numpy(dtype=np.float64)


def read_documents(path: str | Path) -> list[str]:
    """IDF documents: the distinct references of a generations file, or the lines of a .txt."""
    path = Path(path)
    if path.suffix.lower() == ".txt":
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise InputError("IDF corpus not found", path=str(path), field="idf_from") from None
        documents = [line for line in lines if line.strip()]
    else:
        from judgebench.plugin_api import read_samples

        documents = list(dict.fromkeys(r for s in read_samples(path) for r in s.references))
    if not documents:
        raise InputError("IDF corpus has no documents", path=str(path), field="idf_from")
    return documents


class BertScoreOptions(ModelOptions):
    layer: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    idf: bool = False
    idf_from: str | None = None
    rescale: bool = False
    baseline: str | None = None
    part: Literal["f1", "precision", "recall"] = "f1"


#: bert-score itself prints a warning and sets an empty text's raw P, R and F to 0; judgebench
#: skips it instead, as the formula's 0/0 has no value.
BERTSCORE_EMPTY = EmptyText(
    output="skipped", reference="skipped",
    note="skipped: BERTScore is undefined for a text with no tokens (0/0; bert-score warns "
         "and writes 0); an empty reference among several is left out")


class BertScore(EncoderMetric[BertScoreOptions]):
    """BERTScore P, R or F1 (option `part`) against the best of the references."""

    info = MetricInfo(
        name="neural.bertscore", version="1", kind="reference", requires=("output", "reference"),
        empty_text=BERTSCORE_EMPTY,
        value_range=(None, 1.0),
        description="BERTScore (Zhang et al. 2020): greedy cosine matching of contextual token "
                    "embeddings; options model, layer, idf/idf_from, rescale/baseline, "
                    "part=f1|precision|recall.",
        citation="Zhang, Kishore, Wu, Weinberger and Artzi (2020). BERTScore: Evaluating Text "
                 "Generation with BERT. ICLR.",
    )
    Options = BertScoreOptions
    batch_size = 512  # samples per call: a larger pool of texts sorts into tighter batches

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self.options.idf and not self.options.idf_from:
            raise InputError("neural.bertscore: idf=true needs idf_from=PATH, the corpus whose "
                             "references give document frequencies (a generations file or a "
                             ".txt with one document per line)", field="idf_from")
        if self.options.rescale and not self.options.baseline:
            raise InputError("neural.bertscore: rescale=true needs baseline=PATH, a CSV with "
                             "columns LAYER,P,R,F (the bert-score package's format)",
                             field="baseline")
        self._idf: IdfTable | None = None
        self._baseline: np.ndarray | None = None

    @property
    def layer(self) -> int:
        """The layer option, else the model's last layer (read from its config, no loading)."""
        if self.options.layer is not None:
            return self.options.layer
        config = json.loads((self.model_ref.path / "config.json").read_text(encoding="utf-8"))
        layers = config.get("num_hidden_layers") or config.get("n_layer")
        return int(layers) if layers else self.encoder.num_layers

    def signature_fields(self) -> dict[str, str]:
        fields = super().signature_fields()
        fields["layer"] = str(self.layer)
        for name in ("idf_from", "baseline"):
            path = getattr(self.options, name)
            fields[name] = f"{Path(path).name}#{_file_hash(path)}" if path else "none"
        return fields

    def score(self, samples: Sequence[Sample]) -> list[float | Outcome]:
        encoder = self.encoder
        part = PARTS.index(self.options.part)
        special = {t for t in (encoder.tokenizer.cls_token_id, encoder.tokenizer.sep_token_id)
                   if t is not None}
        idf = self._idf_table() if self.options.idf else None
        baseline = self._read_baseline() if self.options.rescale else None

        todo = [(s.output, [r for r in s.references if r.strip()]) for s in samples]
        texts = [t for out, refs in todo if out and out.strip() and refs for t in (out, *refs)]
        embedded = dict(zip(texts, encoder.token_embeddings(
            texts, layer=self.layer, batch_size=self.options.batch_size), strict=True))

        prepared: dict[str, tuple[np.ndarray, np.ndarray]] = {}

        def weighted(text: str) -> tuple[np.ndarray, np.ndarray]:
            if text not in prepared:
                emb = embedded[text]
                w = idf.weights(emb.ids) if idf else uniform_weights(emb.ids, special)
                prepared[text] = emb.vectors, w
            return prepared[text]

        results: list[float | Outcome] = []
        for output, refs in todo:
            if not output or not output.strip():
                results.append(Outcome.failed(Status.SKIPPED, "empty output: BERTScore is "
                                              "undefined for a text with no tokens"))
                continue
            if not refs:
                results.append(Outcome.failed(Status.SKIPPED, "sample has no non-empty reference"))
                continue
            vectors, weights = weighted(output)
            per_ref = greedy_match(vectors, weights, [weighted(r) for r in refs])
            best = np.fmax.reduce(per_ref, axis=0)  # best reference per part, NaN-tolerant
            if baseline is not None:
                best = rescale(best, baseline)
            value = float(best[part])
            if math.isnan(value):
                results.append(Outcome.failed(Status.ERROR, "BERTScore is undefined here: every "
                                              "token has weight 0 (IDF) or P + R = 0"))
            else:
                results.append(value)
        return results

    def _idf_table(self) -> IdfTable:
        if self._idf is None:
            documents = read_documents(self.options.idf_from or "")
            self._idf = idf_table(self.encoder.token_ids(documents))
        return self._idf

    def _read_baseline(self) -> np.ndarray:
        if self._baseline is None:
            self._baseline = read_baseline(self.options.baseline or "", self.layer)
        return self._baseline


def _file_hash(path: str) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    except FileNotFoundError:
        raise InputError("file not found", path=path) from None
