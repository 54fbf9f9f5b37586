"""The neural and learned metrics on empty texts, with real small models on CPU: each does what
its `MetricInfo.empty_text` declares (issue 23, item 1). An empty output is skipped with a
reason; an empty reference among several is left out (the score is the one without it), and
a sample left with none is skipped; the corpus metrics leave empty outputs out of the set."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import summeval_records

torch = pytest.importorskip("torch", reason="the [neural] extra is not installed")

from judgebench_neural.loading import resolve_model  # noqa: E402

from judgebench.metric import outcome_of  # noqa: E402
from judgebench.models import Outcome, Sample, Status  # noqa: E402
from judgebench.plugins import build_host  # noqa: E402

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)

TEXT = "The council approved a new park."
OTHER = "A new park was approved by the city council."


def _classifier(directory: Path) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(1)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, num_labels=1)
    BertForSequenceClassification(config).eval().save_pretrained(directory)
    AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2").path).save_pretrained(
        directory)
    return directory


@pytest.fixture(scope="module")
def classifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _classifier(tmp_path_factory.mktemp("classifier"))


SEGMENT = {
    "neural.bertscore": {},
    "neural.embedding-cosine": {},
    "neural.likelihood": {"given": "reference"},
    "learned.classifier": {"pair": "reference"},
}


@pytest.mark.parametrize("name", sorted(SEGMENT))
def test_segment_metrics_do_what_they_declare(name: str, classifier: Path) -> None:
    options = dict(SEGMENT[name])
    if name == "learned.classifier":
        options["model"] = str(classifier)
    metric = build_host().metric(name).build(**options)
    declared = metric.info.empty_text
    assert declared.output == "skipped" and declared.reference == "skipped"
    samples = [Sample(item="1", system="s", output="", reference=OTHER),
               Sample(item="2", system="s", output=TEXT, reference=""),
               Sample(item="3", system="s", output=TEXT, reference=["", OTHER]),
               Sample(item="4", system="s", output=TEXT, reference=OTHER),
               Sample(item="5", system="s", output=TEXT, reference=[OTHER])]
    try:
        empty_output, empty_ref, one_empty, plain, single = (
            outcome_of(r) for r in metric.score(samples))
    finally:
        metric.close()
    assert empty_output.status == Status.SKIPPED and "empty output" in empty_output.reason
    assert empty_ref.status == Status.SKIPPED and "reference" in empty_ref.reason
    assert plain.status == one_empty.status == Status.OK
    assert one_empty.value == pytest.approx(single.value, abs=1e-6)  # "" left out
    assert one_empty.value == pytest.approx(plain.value, abs=1e-6)


def _corpus_samples(empty: set[int]) -> list[Sample]:
    records = summeval_records(16)
    return [Sample(item=r["item"], system="s", output="" if k in empty else r["output"],
                   reference=r["reference"]) for k, r in enumerate(records)]


@pytest.mark.parametrize(("name", "options"), [
    ("neural.vendi", {}), ("neural.mauve", {"num_buckets": 2, "kmeans_num_redo": 1})])
def test_corpus_metrics_leave_empty_outputs_out(name: str, options: dict) -> None:
    metric = build_host().metric(name).build(**options)
    assert metric.info.empty_text.output == "skipped"
    with_empty = _corpus_samples({0, 5, 9})
    without = [s for s in with_empty if s.output != ""]
    got, want = (outcome_of(metric.corpus_score(s)) for s in (with_empty, without))
    assert got.status == want.status == Status.OK
    assert got.value == pytest.approx(want.value, rel=1e-9)
    none_left = metric.corpus_score(_corpus_samples(set(range(16))))
    assert isinstance(none_left, Outcome) and none_left.status == Status.SKIPPED
    assert none_left.reason
