"""neural.likelihood through the transformers backend on the default SmolLM2-135M model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")

from judgebench_neural.likelihood import Likelihood  # noqa: E402

from judgebench.errors import InputError  # noqa: E402
from judgebench.models import Outcome, Sample, Status  # noqa: E402
from judgebench.plugins import build_host  # noqa: E402

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)

ARTICLE = ("The city council approved a new public park on Monday. Construction will begin in "
           "the spring and is expected to cost two million dollars.")
GOOD = "The council approved a new park that will cost two million dollars."
SHUFFLED = "dollars park two council million new cost a approved will that The."
REFERENCES = ["A new park was approved by the city council.",
              "The council backed a two million dollar park."]
SAMPLES = [Sample(item="1", system=name, output=text, input=ARTICLE, reference=REFERENCES)
           for name, text in (("good", GOOD), ("shuffled", SHUFFLED))]


def likelihood(**options: object) -> Likelihood:
    """The metric built directly, given a host of the installed plugins (its backend's)."""
    built = Likelihood(**options)
    built.host = build_host()
    return built


@pytest.fixture(scope="module")
def metric() -> Likelihood:
    m = likelihood()
    yield m
    m.close()


def _direct(metric: Likelihood, prefix: str, target: str) -> float:
    model, tokenizer = metric.backend.load()
    head = tokenizer(prefix, add_special_tokens=False)["input_ids"] if prefix else []
    ids = tokenizer(prefix + target, add_special_tokens=False)["input_ids"]
    assert ids[: len(head)] == head
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].float(), -1)
    start = max(len(head), 1)
    values = [float(logp[i - 1, ids[i]]) for i in range(start, len(ids))]
    return sum(values) / len(values)


def test_mean_logprob_equals_a_direct_forward_pass(metric: Likelihood) -> None:
    got = metric.score(SAMPLES)
    expected = [_direct(metric, ARTICLE + "\n", s.output) for s in SAMPLES]
    assert got == pytest.approx(expected, abs=2e-3)
    assert got[0] > got[1]  # the fluent summary is likelier than its shuffled words
    assert all(v < 0 for v in got)


def test_given_reference_best_or_mean_and_given_none(metric: Likelihood) -> None:
    backend_options = {"backend": "transformers"}
    best = likelihood(given="reference", **backend_options)
    best._backend = metric.backend  # share the loaded model
    mean = likelihood(given="reference", multi_ref="mean", **backend_options)
    mean._backend = metric.backend
    per_ref = [_direct(metric, r + "\n", GOOD) for r in REFERENCES]
    assert best.score(SAMPLES[:1])[0] == pytest.approx(max(per_ref), abs=2e-3)
    assert mean.score(SAMPLES[:1])[0] == pytest.approx(sum(per_ref) / 2, abs=2e-3)
    plain = likelihood(given="none", reduce="sum")
    plain._backend = metric.backend
    _, tokenizer = metric.backend.load()
    n = len(tokenizer(GOOD, add_special_tokens=False)["input_ids"])
    total = plain.score(SAMPLES[:1])[0]
    assert total == pytest.approx(_direct(metric, "", GOOD) * (n - 1), abs=1e-2)


def test_missing_context_signature_and_bad_options(metric: Likelihood) -> None:
    skipped = metric.score([Sample(item="1", system="a", output="Some text.")])[0]
    assert isinstance(skipped, Outcome) and skipped.status == Status.SKIPPED
    assert "no input" in skipped.reason
    fields = metric.signature().fields
    assert fields["model"] == "SmolLM2-135M-Instruct"
    assert fields["rev"].startswith("gguf-sha256:")
    assert fields["template"] == '"{context}\\n"'
    with pytest.raises(InputError, match="template"):
        Likelihood(template="no placeholder")
    with pytest.raises(InputError, match=r"neither a local model directory"):
        likelihood(model="/no/such/model").score(SAMPLES[:1])


class _NoTokeniser:
    """The real backend seen through its public Backend interface only (as vllm or an
    OpenAI-compatible server would be): no one-argument `prompt_ids`."""

    def __init__(self, backend) -> None:
        self._backend = backend
        self.capabilities = backend.capabilities

    def generate(self, requests):
        return self._backend.generate(requests)

    def identity(self):
        return self._backend.identity()

    def close(self) -> None:
        pass


def test_backends_without_a_tokeniser_give_the_same_scores(metric: Likelihood) -> None:
    plain = likelihood()
    plain._backend = _NoTokeniser(metric.backend)
    assert plain.score(SAMPLES) == pytest.approx(metric.score(SAMPLES), abs=1e-9)
