"""neural.bertscore agrees with the bert-score package on the bundled MiniLM model, on real
SummEval text with 11 references per summary."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import summeval_records, write_jsonl

pytest.importorskip("torch", reason="the [neural] extra is not installed")
bert_score = pytest.importorskip("bert_score", reason="the [neural-parity] extra is not installed")

from judgebench_neural.bertscore import BertScore, idf_table  # noqa: E402
from judgebench_neural.encoder import get_encoder  # noqa: E402
from judgebench_neural.loading import resolve_model  # noqa: E402

from judgebench.errors import InputError  # noqa: E402
from judgebench.models import Outcome, Sample, Status  # noqa: E402

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)

RECORDS = summeval_records(32)  # 2 documents x 16 systems, 11 references each
ALL_SAMPLES = [Sample(**{k: r[k] for k in ("item", "system", "output", "reference")})
               for r in RECORDS]
SAMPLES = ALL_SAMPLES[:16]
MODEL_DIR = str(resolve_model("all-MiniLM-L6-v2").path)
PARTS = {"precision": 0, "recall": 1, "f1": 2}


def _reference(**kwargs) -> np.ndarray:
    p, r, f = bert_score.score([s.output for s in SAMPLES], [s.references for s in SAMPLES],
                               model_type=MODEL_DIR, device="cpu", nthreads=0, **kwargs)
    return np.stack([p.numpy(), r.numpy(), f.numpy()])


def _ours(**options) -> np.ndarray:
    return np.stack([np.array(BertScore(part=part, **options).score(SAMPLES), dtype=float)
                     for part in PARTS])


@pytest.mark.parametrize("layer", [6, 3])
def test_parity_with_bert_score_package(layer: int) -> None:
    expected = _reference(num_layers=layer)
    got = _ours(layer=layer) if layer != 6 else _ours()
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def test_idf_parity_and_idf_table(tmp_path: Path) -> None:
    references = list(dict.fromkeys(r for s in SAMPLES for r in s.references))
    corpus = write_jsonl(tmp_path / "corpus.jsonl", RECORDS[:16])
    tokenizer = get_encoder(resolve_model(MODEL_DIR)).tokenizer
    theirs = bert_score.utils.get_idf_dict(references, tokenizer, nthreads=0)
    table = idf_table(get_encoder(resolve_model(MODEL_DIR)).token_ids(references))
    for token in [*list(table.df)[:200], tokenizer.convert_tokens_to_ids("zebra")]:
        assert table.weight(token) == pytest.approx(theirs[token], abs=1e-12)
    expected = _reference(num_layers=6, idf=theirs)
    got = _ours(idf=True, idf_from=str(corpus))
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)
    assert not np.allclose(got, _ours())  # IDF really changes the numbers


def test_rescale_parity_with_a_baseline_file(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.csv"
    rows = ["LAYER,P,R,F"] + [f"{i},{0.5 + i / 100},{0.45 + i / 100},{0.47 + i / 100}"
                              for i in range(7)]
    baseline.write_text("\n".join(rows) + "\n")
    expected = _reference(num_layers=6, lang="en", rescale_with_baseline=True,
                          baseline_path=str(baseline))
    got = _ours(rescale=True, baseline=str(baseline))
    np.testing.assert_allclose(got, expected, atol=1e-4, rtol=0)


def test_references_shared_by_systems_are_embedded_once() -> None:
    metric = BertScore(model=MODEL_DIR, layer=4)
    first, second = ALL_SAMPLES[:16], ALL_SAMPLES[16:]
    metric.score(first)
    cache = metric.encoder.cache
    before = len(cache)
    metric.score(ALL_SAMPLES)  # the first document's texts are cached already
    new = {t for s in second for t in (s.output, *s.references)}
    assert len(cache) - before == len(new) == 16 + 11
    misses = cache.misses
    metric.score(ALL_SAMPLES)
    assert cache.misses == misses


def test_signature_names_model_and_weights_hash() -> None:
    weights = Path(MODEL_DIR) / "model.safetensors"
    inner = hashlib.sha256(weights.read_bytes()).hexdigest()
    revision = "sha256:" + hashlib.sha256(inner.encode()).hexdigest()[:16]
    signature = str(BertScore(part="recall").signature())
    assert signature.startswith("neural.bertscore@1|")
    fields = BertScore(part="recall").signature().fields
    assert fields["model"] == "all-MiniLM-L6-v2" and fields["rev"] == revision
    assert f"|rev:{revision}" in signature
    assert "|layer:6|" in signature and "|part:recall|" in signature
    assert "device" not in signature and "batch_size" not in signature


def test_empty_output_and_missing_reference_are_skipped_with_a_reason() -> None:
    samples = [Sample(item="1", system="a", output="   ", reference="A cat sat."),
               Sample(item="1", system="b", output="A cat sat.", reference=["", " "]),
               Sample(item="1", system="c", output="A cat sat.", reference="A cat sat.")]
    empty, no_ref, same = BertScore().score(samples)
    assert isinstance(empty, Outcome) and empty.status == Status.SKIPPED
    assert "empty output" in empty.reason
    assert isinstance(no_ref, Outcome) and "no non-empty reference" in no_ref.reason
    assert same == pytest.approx(1.0, abs=1e-5)


def test_bad_options_are_input_errors_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="idf_from"):
        BertScore(idf=True)
    with pytest.raises(InputError, match="baseline"):
        BertScore(rescale=True)
    with pytest.raises(InputError, match="layer"):
        BertScore(layer=9).score(SAMPLES[:1])
    with pytest.raises(InputError, match="part"):
        BertScore(part="f2")
    bad = tmp_path / "bad.csv"
    bad.write_text("LAYER,X\n0,1\n")
    with pytest.raises(InputError, match="LAYER,P,R,F"):
        BertScore(rescale=True, baseline=str(bad)).score(SAMPLES[:1])


def test_runs_through_judgebench_score(tmp_path: Path) -> None:
    from conftest import run_cli

    data = write_jsonl(tmp_path / "in.jsonl", RECORDS)
    out = tmp_path / "scores.csv"
    proc = run_cli("score", str(data), "-m", "neural.bertscore:part=precision",
                   "-m", "neural.embedding-cosine", "-m", "neural.vendi",
                   "-m", "neural.mauve:num_buckets=2", "-o", str(out),
                   "--store", str(tmp_path / "runs.db"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    import pandas as pd

    table = pd.read_csv(out)
    assert table["neural.bertscore:part=precision"].notna().all()
    assert table["neural.embedding-cosine"].between(-1, 1).all()
    expected = BertScore(part="precision").score(ALL_SAMPLES)
    np.testing.assert_allclose(table["neural.bertscore:part=precision"], expected, atol=1e-6)
    meta = json.loads(Path(str(out) + ".meta.json").read_text())
    for column, info in meta["columns"].items():
        assert "model:all-MiniLM-L6-v2" in info["signature"], column
        assert "rev:sha256:" in info["signature"], column
    corpus = {(c["metric"], c["system"]): c for c in meta["corpus"]}
    assert len([k for k in corpus if k[0] == "neural.vendi"]) == 16
    assert all(c["status"] == "ok" for c in corpus.values())
