"""openai_compat against a vLLM-shaped server on loopback (tests/fake_vllm_server.py, a real
HTTP server): completions with echoed prompt logprobs for neural.likelihood, the served
checkpoint from /v1/models in the signature, exact /tokenize counts for --dry-run, and
continue_final_message for prefills. The API key is sent and never recorded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl
from fake_vllm_server import FakeVLLMServer, char_logprob, render_chat

from judgebench.backends import Request, get_backend
from judgebench.errors import JudgebenchError
from judgebench.models import Sample, Status
from judgebench.plugins import build_host

SECRET = "sk-vllm-test-NEVER-STORED-0123456789"


@pytest.fixture
def server():
    with FakeVLLMServer("judge", api_key=SECRET, root="/ckpt/qwen2.5-7b-instruct") as srv:
        yield srv


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JB_VLLM_KEY", SECRET)


def backend(server, **options):
    return get_backend("openai_compat", model="judge", api_base=server.url,
                       api_key_env="JB_VLLM_KEY", **options)


def test_likelihood_through_completions_with_echoed_prompt_logprobs(server) -> None:
    metric = build_host().metric("neural.likelihood").build(
        backend="openai_compat", model="judge", api_base=server.url, api_key_env="JB_VLLM_KEY")
    samples = [Sample(**r) for r in summeval_records(2)]
    values = metric.score(samples)
    for sample, value in zip(samples, values, strict=True):
        expected = sum(char_logprob(c) for c in sample.output) / len(sample.output)
        assert value == pytest.approx(expected, abs=1e-9)
    sent = [r for r in server.requests if r["path"] == "/v1/completions"]
    assert sent and all(r["body"]["echo"] is True and r["body"]["logprobs"] >= 1
                        for r in sent)
    fields = metric.signature().fields
    assert fields["served"] == "/ckpt/qwen2.5-7b-instruct"


def test_scoring_request_drops_the_generated_token(server) -> None:
    (answer,) = backend(server).generate([Request(prompt="abc", max_tokens=0,
                                                  prompt_logprobs=True)])
    assert answer.ok, answer.error
    assert answer.text == "" and answer.finish_reason == "prompt_only"
    assert [t.token for t in answer.prompt_logprobs] == ["a", "b", "c"]
    assert answer.prompt_logprobs[0].logprob is None
    assert answer.prompt_logprobs[2].logprob == pytest.approx(char_logprob("c"))


def test_completion_with_token_logprobs_keeps_only_the_generated_text(server) -> None:
    (answer,) = backend(server).generate([Request(prompt="xy", max_tokens=2, logprobs=True,
                                                  prompt_logprobs=True)])
    assert answer.text == "ok" and [t.token for t in answer.logprobs] == ["o", "k"]
    assert len(answer.prompt_logprobs) == 2


def test_completion_token_logprobs_without_echo(server) -> None:
    (answer,) = backend(server).generate([Request(prompt="xy", max_tokens=3, logprobs=True)])
    assert answer.text == "ok!" and answer.prompt_logprobs is None
    assert [(t.token, t.logprob) for t in answer.logprobs] == [
        (c, pytest.approx(char_logprob(c))) for c in "ok!"]
    body = [r["body"] for r in server.requests if r["path"] == "/v1/completions"][-1]
    assert "echo" not in body and body["logprobs"] == 1


def test_served_checkpoint_is_in_a_judges_signature_and_not_the_key(server) -> None:
    judge = build_host().metric("judge.rubric").build(
        backend="openai_compat", model="judge", api_base=server.url, api_key_env="JB_VLLM_KEY",
        criterion="coherence")
    signature = str(judge.signature())
    assert "served:/ckpt/qwen2.5-7b-instruct" in signature and SECRET not in signature
    outcomes = judge.score([Sample(**r) for r in summeval_records(1)])
    assert outcomes[0].status == Status.OK, outcomes[0].reason


def test_no_model_list_leaves_served_out_and_is_asked_once(server, monkeypatch) -> None:
    import urllib.request

    other = backend(server)
    other.base = server.url + "/none"  # the server answers 404 there: it has no model list
    asked = []
    real = urllib.request.urlopen
    monkeypatch.setattr(urllib.request, "urlopen",
                        lambda req, **kw: asked.append(req.full_url) or real(req, **kw))
    assert all("served" not in other.identity() for _ in range(3))
    assert asked == [server.url + "/none/models"]  # not once per request


def test_a_server_that_never_answers_its_model_list_refuses_to_start() -> None:
    # nothing listens there: the signature cannot say what it serves, so there is none
    other = get_backend("openai_compat", model="judge", api_base="http://127.0.0.1:9/v1",
                        max_attempts=3, backoff_base_s=0.001)
    with pytest.raises(JudgebenchError, match=r"GET http://127.0.0.1:9/v1/models did not "
                       r"answer in 3 attempts \(URLError: .*refused\).*start the server"):
        other.identity()


def test_tokenize_gives_exact_counts_outside_the_call_loop(server) -> None:
    chat = Request.chat(("system", "Judge."), ("user", "Rate this text."))
    assert backend(server).count_tokens(chat) == len(
        render_chat([dict(m) for m in chat.messages], add_generation_prompt=True))
    assert backend(server).count_tokens(Request(prompt="hello")) == 5
    asked = [r["body"] for r in server.requests if r["path"] == "/tokenize"]
    assert asked[0]["messages"][1] == {"role": "user", "content": "Rate this text."}
    without = backend(server, tokenize=False)
    assert without.count_tokens(Request(prompt="hello")) != 5  # the estimate


def test_dry_run_token_counts_come_from_the_server(server, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "api_key_env=JB_VLLM_KEY,criterion=coherence")
    result = run_cli("score", str(data), "-m", spec, "--dry-run", "--json",
                     "--store", str(tmp_path / "runs.db"))
    assert result.returncode == 0, result.stderr
    tokenized = [r for r in server.requests if r["path"] == "/tokenize"]
    assert len(tokenized) >= 2
    assert not [r for r in server.requests if r["path"].endswith("completions")]
    assert SECRET not in result.stdout + result.stderr
    assert str(sum(len(render_chat(r["body"]["messages"], True)) for r in tokenized)) in (
        result.stdout + result.stderr)


def test_prefill_continues_the_final_message(server) -> None:
    prefill = Request.chat(("user", "Rate it."), ("assistant", "Score: "), max_tokens=1)
    backend(server, prefill=True).generate([prefill])
    body = [r["body"] for r in server.requests if r["path"] == "/v1/chat/completions"][-1]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    backend(server).generate([prefill])  # a server not known to continue: nothing extra
    body = [r["body"] for r in server.requests if r["path"] == "/v1/chat/completions"][-1]
    assert "continue_final_message" not in body


def test_chat_request_for_prompt_logprobs_is_unsupported(server) -> None:
    (answer,) = backend(server).generate([Request.chat(("user", "x"), max_tokens=0,
                                                       prompt_logprobs=True)])
    assert answer.error is not None and answer.error.kind == "unsupported"
    assert not [r for r in server.requests if r["path"].endswith("completions")]
