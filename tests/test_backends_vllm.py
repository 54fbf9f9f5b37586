"""The vllm backend up to the engine: sampling parameters, structured output, output parsing.

vllm is not installed here (it needs a GPU); benchmarks/gpu_vllm_check.py runs the engine.
"""

from __future__ import annotations

import math
import types

import pytest
from judgebench_backends.vllm_backend import (
    VLLMBackend,
    parse_output,
    sampling_params_dict,
    to_sampling_params,
)

from judgebench.backends import Request, get_backend
from judgebench.errors import JudgebenchError
from judgebench.extras import MissingExtra

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}


def test_sampling_params_follow_the_request() -> None:
    greedy = sampling_params_dict(Request.chat(("user", "x"), max_tokens=5, logprobs=True,
                                               top_logprobs=7, stop=("\n",)))
    assert greedy == {"n": 1, "max_tokens": 5, "temperature": 0.0, "top_p": 1.0, "seed": None,
                      "stop": ["\n"], "logprobs": 7, "prompt_logprobs": None,
                      "skip_special_tokens": True}
    sampled = sampling_params_dict(Request.chat(("user", "x"), temperature=1.0, top_p=0.9,
                                                seed=4, json_schema=SCHEMA))
    assert sampled["temperature"] == 1.0 and sampled["seed"] == 4 and sampled["logprobs"] is None
    assert sampled["structured_outputs"] == {"json": SCHEMA}
    scoring = sampling_params_dict(Request(prompt="x", max_tokens=0, prompt_logprobs=True))
    assert scoring["max_tokens"] == 1 and scoring["prompt_logprobs"] == 1


class _Recorder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def _fake_vllm(new_api: bool) -> types.SimpleNamespace:
    sampling = types.SimpleNamespace()
    if new_api:
        sampling.StructuredOutputsParams = _Recorder
    else:
        sampling.GuidedDecodingParams = _Recorder
    return types.SimpleNamespace(SamplingParams=_Recorder, sampling_params=sampling)


@pytest.mark.parametrize("new_api", [True, False])
def test_structured_output_becomes_the_engines_own_object(new_api: bool) -> None:
    params = sampling_params_dict(Request.chat(("user", "x"), json_schema=SCHEMA))
    built = to_sampling_params(params, _fake_vllm(new_api))
    field = "structured_outputs" if new_api else "guided_decoding"
    assert built.kwargs[field].kwargs == {"json": SCHEMA}
    assert "structured_outputs" not in params or params["structured_outputs"] == {"json": SCHEMA}
    assert built.kwargs["max_tokens"] == 256


def _lp(logprob: float, rank: int, token: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(logprob=logprob, rank=rank, decoded_token=token)


def _output(text="4", token_ids=(52,), finish="stop", prompt_ids=(1, 7, 9), with_prompt=True):
    logprobs = [{52: _lp(-0.2, 1, "4"), 51: _lp(-1.9, 2, "3"), 53: _lp(-3.0, 3, "5")}]
    completion = types.SimpleNamespace(text=text, token_ids=list(token_ids),
                                       logprobs=logprobs[: len(token_ids)], finish_reason=finish)
    prompt_logprobs = [None, {7: _lp(-2.5, 4, " The")}, {9: _lp(-0.5, 1, " cat"),
                                                          8: _lp(-0.1, 0, " dog")}]
    return types.SimpleNamespace(prompt_token_ids=list(prompt_ids),
                                 prompt_logprobs=prompt_logprobs if with_prompt else None,
                                 outputs=[completion])


def test_parse_output_reads_text_logprobs_and_prompt_logprobs() -> None:
    req = Request.chat(("user", "x"), max_tokens=3, logprobs=True, top_logprobs=2,
                       prompt_logprobs=True)
    resp = parse_output(_output(), req, 0.5, "m", decode=lambda ids: f"<{ids[0]}>")
    assert resp.ok and resp.text == "4" and resp.finish_reason == "stop"
    assert resp.tokens_in == 3 and resp.tokens_out == 1 and resp.cost_usd == 0.0
    assert resp.logprobs is not None
    assert resp.logprobs[0].token == "4" and resp.logprobs[0].logprob == -0.2
    assert resp.logprobs[0].top == (("4", -0.2), ("3", -1.9))
    assert resp.prompt_logprobs is not None
    assert [t.token for t in resp.prompt_logprobs] == ["<1>", " The", " cat"]
    assert [t.logprob for t in resp.prompt_logprobs] == [None, -2.5, -0.5]
    assert math.isclose(sum(t.logprob for t in resp.prompt_logprobs[1:]), -3.0)


def test_scoring_only_requests_drop_the_forced_token() -> None:
    req = Request(prompt="x", max_tokens=0, prompt_logprobs=True)
    resp = parse_output(_output(), req, 0.1, "m")
    assert resp.ok and resp.text == "" and resp.tokens_out == 0
    assert resp.prompt_logprobs is not None and len(resp.prompt_logprobs) == 3


def test_inconsistent_engine_output_is_a_malformed_failure() -> None:
    req = Request.chat(("user", "x"), logprobs=True, prompt_logprobs=True)
    missing = parse_output(_output(with_prompt=False), req, 0.1, "m")
    assert missing.error is not None and missing.error.kind == "malformed"
    short = _output()
    short.outputs[0].logprobs = []
    resp = parse_output(short, Request.chat(("user", "x"), logprobs=True), 0.1, "m")
    assert resp.error is not None and "0 logprob entries for 1 tokens" in resp.error.message


def test_backend_builds_without_vllm_and_says_what_to_install() -> None:
    backend = get_backend("vllm", model="/models/judge", max_model_len=4096)
    assert isinstance(backend, VLLMBackend)
    assert backend.engine_args["enable_prefix_caching"] is True
    assert backend.capabilities.prompt_logprobs and backend.capabilities.json_schema
    try:
        import vllm  # noqa: F401
    except ImportError:
        # the signature is taken when a run is prepared: a missing vllm stops it there
        with pytest.raises(MissingExtra, match=r"pip install 'judgebench\[vllm\]'"):
            backend.identity()
        with pytest.raises(JudgebenchError, match="pip install vllm"):
            backend.generate([Request.chat(("user", "x"))])
    else:
        assert backend.identity()["model"] == "/models/judge"


def test_a_vllm_judge_without_vllm_stops_before_any_work(tmp_path) -> None:
    try:
        import vllm  # noqa: F401
        pytest.skip("vllm is installed here")  # a GPU machine: the backend runs
    except ImportError:
        pass
    from conftest import run_cli, summeval_records, write_jsonl

    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    proc = run_cli("score", str(data), "-m", "judge.rubric:backend=vllm,model=/models/judge",
                   "-o", str(tmp_path / "s.csv"), "--store", str(tmp_path / "runs.db"))
    assert proc.returncode == 2, proc.stderr
    assert "pip install 'judgebench[vllm]'" in proc.stderr
    assert not (tmp_path / "s.csv").exists() and not (tmp_path / "runs.db").exists()
