"""Corpus-level neural metrics: MAUVE (against the mauve-text package) and the Vendi score."""

from __future__ import annotations

import inspect
import json

import numpy as np
import pytest
from conftest import summeval_records

pytest.importorskip("torch", reason="the [neural] extra is not installed")

from judgebench_neural.encoder import get_encoder
from judgebench_neural.loading import resolve_model
from judgebench_neural.mauve import Mauve, area, mauve
from judgebench_neural.vendi import Vendi, vendi_from_embeddings, vendi_from_similarity

from judgebench.models import Outcome, Sample, Status

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)

RECORDS = summeval_records(320)  # 20 documents x 16 systems
SYSTEMS = sorted({r["system"] for r in RECORDS})


def _samples(system: str) -> list[Sample]:
    return [Sample(**{k: r[k] for k in ("item", "system", "output", "reference")})
            for r in RECORDS if r["system"] == system]


@pytest.fixture(scope="module")
def features() -> dict[str, np.ndarray]:
    encoder = get_encoder(resolve_model("all-MiniLM-L6-v2"))
    refs = list(dict.fromkeys(t for r in RECORDS[::16] for t in r["reference"]))
    by_system = {s: encoder.sentence_embeddings([x.output for x in _samples(s)])
                 for s in SYSTEMS[:3]}
    # Python source lines: real text from another world than news summaries.
    code = [line.strip() for line in inspect.getsource(json.decoder).splitlines()
            if len(line.strip()) > 20][:100]
    return {"refs": encoder.sentence_embeddings(refs), "code": encoder.sentence_embeddings(code),
            **by_system}


@pytest.mark.parametrize("num_buckets", [None, 8])
def test_mauve_equals_the_mauve_text_package(features, num_buckets) -> None:
    reference = pytest.importorskip("mauve", reason="the [neural-parity] extra is not installed")
    p, q = features["refs"], features[SYSTEMS[0]]
    theirs = reference.compute_mauve(p_features=p, q_features=q,
                                     num_buckets=num_buckets or "auto", seed=7)
    ours = mauve(p, q, num_buckets=num_buckets, seed=7)
    assert ours.num_buckets == theirs.num_buckets
    np.testing.assert_array_equal(ours.p_hist, theirs.p_hist)
    np.testing.assert_array_equal(ours.q_hist, theirs.q_hist)
    assert ours.mauve == pytest.approx(theirs.mauve, abs=1e-12)
    assert ours.mauve_star == pytest.approx(theirs.mauve_star, abs=1e-12)
    assert ours.frontier_integral == pytest.approx(theirs.frontier_integral, abs=1e-12)


def test_mauve_sanity_identical_disjoint_and_seeded(features) -> None:
    refs, code, outputs = features["refs"], features["code"], features[SYSTEMS[1]]
    assert mauve(refs, refs.copy()).mauve > 0.99
    assert mauve(refs[:100], code).mauve < 0.05
    first = mauve(refs, outputs, seed=3, num_buckets=5)
    again = mauve(refs, outputs, seed=3, num_buckets=5)
    assert first.mauve == again.mauve
    np.testing.assert_array_equal(first.p_hist, again.p_hist)
    # Half news, half code: between the two extremes.
    mixed = mauve(refs, np.vstack([outputs, code[:20]]), num_buckets=5).mauve
    assert 0.05 < mixed < 0.99


def test_mauve_area_is_the_trapezoid_rule_on_this_numpy() -> None:
    """numpy 2 names the rule np.trapezoid and numpy 1 np.trapz; CI runs this file on both."""
    assert area(np.array([[0.0, 1.0], [0.5, 0.5], [1.0, 0.0]])) == 0.5
    # along x: (1 + 0.9) / 2 * 0.5 + 0.9 / 2 * 0.5; along y: (1 + 0.5) / 2 * 0.9 + 0.5 / 2 * 0.1
    assert area(np.array([[0.0, 1.0], [0.5, 0.9], [1.0, 0.0]])) == pytest.approx(0.7, abs=1e-12)


def test_mauve_metric_per_system() -> None:
    samples = _samples(SYSTEMS[2])
    result = Mauve(num_buckets=3, kmeans_num_redo=2).corpus_score(samples)
    assert isinstance(result, Outcome) and result.status == Status.OK
    assert 0.0 < result.value <= 1.0
    assert result.extra["n_output"] == 20 and result.extra["n_human"] == 220
    too_few = Mauve().corpus_score(samples[:1])
    assert isinstance(too_few, Outcome) and too_few.status == Status.SKIPPED


def test_vendi_of_known_matrices() -> None:
    assert vendi_from_similarity(np.ones((5, 5))) == pytest.approx(1.0)
    assert vendi_from_similarity(np.eye(7)) == pytest.approx(7.0)
    block = np.kron(np.eye(3), np.ones((2, 2)))  # three pairs of duplicates
    assert vendi_from_similarity(block) == pytest.approx(3.0)
    for q in (0.5, 2.0, float("inf")):
        assert vendi_from_similarity(np.eye(4), q=q) == pytest.approx(4.0)
    mixed = np.array([[1.0, 0.5], [0.5, 1.0]])  # eigenvalues of K/2: 0.75, 0.25
    entropy = -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))
    assert vendi_from_similarity(mixed) == pytest.approx(np.exp(entropy))
    assert vendi_from_similarity(mixed, q=2) == pytest.approx(1 / (0.75**2 + 0.25**2))
    assert vendi_from_similarity(mixed, q=float("inf")) == pytest.approx(1 / 0.75)


def test_vendi_metric_on_real_outputs(features) -> None:
    samples = _samples(SYSTEMS[0])
    value = Vendi().corpus_score(samples).value
    assert value == pytest.approx(vendi_from_embeddings(features[SYSTEMS[0]]), rel=1e-6)
    assert 1.0 < value < len(samples)
    repeated = [s.model_copy(update={"output": samples[0].output}) for s in samples]
    assert Vendi().corpus_score(repeated).value == pytest.approx(1.0, abs=1e-4)
    assert Vendi(q=2).corpus_score(samples).value < value  # higher orders weigh common modes
