"""neural.embedding-cosine: our pooling of the bundled MiniLM equals sentence-transformers'."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import summeval_records

pytest.importorskip("torch", reason="the [neural] extra is not installed")

from judgebench_neural.embedding import EmbeddingCosine
from judgebench_neural.loading import resolve_model

from judgebench.models import Outcome, Sample, Status

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)

RECORDS = summeval_records(16)
SAMPLES = [Sample(**{k: r[k] for k in ("item", "system", "output", "reference", "input")})
           for r in RECORDS]


@pytest.fixture(scope="module")
def sentence_transformer():
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(resolve_model("all-MiniLM-L6-v2").path), device="cpu")


def test_embeddings_equal_sentence_transformers(sentence_transformer) -> None:
    metric = EmbeddingCosine()
    texts = [s.output for s in SAMPLES] + [RECORDS[0]["input"]]  # the article is truncated
    ours = metric.encoder.sentence_embeddings(texts)
    theirs = sentence_transformer.encode(texts, normalize_embeddings=True, batch_size=8)
    np.testing.assert_allclose(ours, theirs, atol=2e-5)


@pytest.mark.parametrize("multi_ref", ["max", "mean"])
def test_cosine_to_references_matches_sentence_transformers(sentence_transformer,
                                                            multi_ref: str) -> None:
    got = EmbeddingCosine(multi_ref=multi_ref).score(SAMPLES)
    texts = list(dict.fromkeys(t for s in SAMPLES for t in (s.output, *s.references)))
    table = dict(zip(texts, sentence_transformer.encode(texts, normalize_embeddings=True),
                     strict=True))
    expected = []
    for sample in SAMPLES:
        sims = np.array([table[r] @ table[sample.output] for r in sample.references])
        expected.append(sims.max() if multi_ref == "max" else sims.mean())
    assert got == pytest.approx(expected, abs=1e-5)


def test_against_input_and_edge_cases() -> None:
    to_input = EmbeddingCosine(against="input").score(SAMPLES[:4])
    to_refs = EmbeddingCosine().score(SAMPLES[:4])
    assert all(-1 <= v <= 1 for v in to_input) and to_input != to_refs
    same, empty, no_ref = EmbeddingCosine().score([
        Sample(item="1", system="a", output="The cat sat.", reference=["A dog ran.",
                                                                       "The cat sat."]),
        Sample(item="1", system="b", output="", reference="The cat sat."),
        Sample(item="1", system="c", output="The cat sat."),
    ])
    assert same == pytest.approx(1.0, abs=1e-6)
    assert isinstance(empty, Outcome) and empty.status == Status.SKIPPED
    assert isinstance(no_ref, Outcome) and "no reference" in no_ref.reason
