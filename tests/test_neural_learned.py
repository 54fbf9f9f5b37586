"""learned.classifier on a real (small, randomly initialised) BERT classifier saved to disk,
learned.comet's errors, and offline model resolution."""

from __future__ import annotations

import hashlib
import importlib.util
import time
from pathlib import Path

import pytest
from conftest import summeval_records

torch = pytest.importorskip("torch", reason="the [neural] extra is not installed")

from judgebench_neural.learned import Classifier, Comet  # noqa: E402
from judgebench_neural.loading import resolve_model, revision_of  # noqa: E402

from judgebench.errors import InputError, JudgebenchError  # noqa: E402
from judgebench.models import Outcome, Sample, Status  # noqa: E402

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)

RECORDS = summeval_records(6)
SAMPLES = [Sample(**{k: r[k] for k in ("item", "system", "output", "reference", "input")})
           for r in RECORDS]


def _make_classifier(directory: Path, num_labels: int) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(num_labels)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, num_labels=num_labels)
    BertForSequenceClassification(config).eval().save_pretrained(directory)
    AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2").path).save_pretrained(
        directory)
    return directory


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("classifiers")
    return {n: _make_classifier(root / f"labels{n}", n) for n in (1, 2, 3)}


def _direct(directory: Path, first: str, second: str | None = None):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    with torch.inference_mode():
        inputs = tokenizer(first, second, truncation=True, max_length=512, return_tensors="pt")
        return model(**inputs).logits[0]


def test_reward_head_and_label_logits_equal_a_direct_forward(classifiers) -> None:
    got = Classifier(model=str(classifiers[1])).score(SAMPLES)
    expected = [float(_direct(classifiers[1], s.output)[0]) for s in SAMPLES]
    assert got == pytest.approx(expected, abs=1e-5)
    probs = Classifier(model=str(classifiers[3]), label=2, transform="probability").score(SAMPLES)
    expected = [float(torch.softmax(_direct(classifiers[3], s.output), -1)[2]) for s in SAMPLES]
    assert probs == pytest.approx(expected, abs=1e-5)


def test_cross_encoder_pairs_take_the_best_reference(classifiers) -> None:
    path = classifiers[2]
    got = Classifier(model=str(path), pair="reference", multi_ref="max").score(SAMPLES[:2])
    mean = Classifier(model=str(path), pair="reference", multi_ref="mean").score(SAMPLES[:2])
    for sample, best, average in zip(SAMPLES[:2], got, mean, strict=True):
        per_ref = [float(_direct(path, ref, sample.output)[1]) for ref in sample.references]
        assert best == pytest.approx(max(per_ref), abs=1e-5)
        assert average == pytest.approx(sum(per_ref) / len(per_ref), abs=1e-5)


def test_classifier_errors_and_signature(classifiers) -> None:
    with pytest.raises(InputError, match=r"choose one with label=0\.\.2"):
        Classifier(model=str(classifiers[3])).score(SAMPLES[:1])
    with pytest.raises(InputError, match="label=5 but the model has 2 labels"):
        Classifier(model=str(classifiers[2]), label=5).score(SAMPLES[:1])
    with pytest.raises(InputError, match="model"):
        Classifier()
    skipped = Classifier(model=str(classifiers[1]), pair="input").score(
        [Sample(item="1", system="a", output="text")])[0]
    assert isinstance(skipped, Outcome) and skipped.status == Status.SKIPPED
    fields = Classifier(model=str(classifiers[2])).signature().fields
    assert fields["model"] == str(classifiers[2]) and fields["label"] == "1"
    assert fields["rev"] == revision_of(classifiers[2]) and fields["rev"].startswith("sha256:")


def test_comet_says_what_is_missing(tmp_path: Path) -> None:
    if importlib.util.find_spec("comet") is None:
        with pytest.raises(JudgebenchError, match="unbabel-comet"):
            Comet(model=str(tmp_path / "model.ckpt"))
    else:
        with pytest.raises(InputError, match="COMET checkpoint not found"):
            Comet(model=str(tmp_path / "model.ckpt"))


def test_a_missing_model_is_a_quick_clear_error_not_a_download() -> None:
    started = time.perf_counter()
    with pytest.raises(InputError, match="never downloads models") as info:
        resolve_model("someone/not-a-real-model-xyz")
    assert "model=DIR" in str(info.value)
    assert time.perf_counter() - started < 10
    from judgebench_neural.bertscore import BertScore

    with pytest.raises(InputError, match="never downloads"):
        BertScore(model="/no/such/dir").signature()


def test_revisions(tmp_path: Path) -> None:
    snapshot = tmp_path / "models--org--name" / "snapshots" / ("ab12" * 10)
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"weights")
    assert revision_of(snapshot) == "ab12" * 10
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "model.safetensors").write_bytes(b"weights")
    inner = hashlib.sha256(b"weights").hexdigest()
    assert revision_of(plain) == "sha256:" + hashlib.sha256(inner.encode()).hexdigest()[:16]
    (plain / "model.safetensors").write_bytes(b"other weights")
    assert revision_of(plain) != "sha256:" + hashlib.sha256(inner.encode()).hexdigest()[:16]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no weight files"):
        revision_of(tmp_path / "empty")


def test_classifier_runs_through_the_api(classifiers) -> None:
    import judgebench

    spec = f"learned.classifier:model={classifiers[1]},pair=reference"
    records = [{k: r[k] for k in ("item", "system", "output", "reference")} for r in RECORDS]
    table = judgebench.score(records, [spec]).to_pandas()
    expected = Classifier(model=str(classifiers[1]), pair="reference").score(SAMPLES)
    assert table[spec].tolist() == pytest.approx(expected, abs=1e-6)
    assert f"model:{classifiers[1]}" in table.attrs["signatures"][spec]
