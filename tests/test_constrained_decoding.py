"""Constrained decoding, one contract for every backend: the `Constraint` on a Request, its
mapping for each backend (pure functions), the transformers backend really constraining the
real small model (llguidance), the openai_compat fallback chain against a real loopback
server that rejects json_schema, litellm's mapping and a call through litellm to a loopback
vLLM-like server, choice probabilities renormalised (checked by hand), and judge signatures
that say whether the score came from a constrained decoder."""

from __future__ import annotations

import json
import math
import threading
import types
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from judgebench_backends.openai_format import (
    optional_fields,
    rejects_response_format,
    vllm_structured_fields,
)
from judgebench_backends.vllm_backend import (
    VLLMBackend,
    parse_output,
    sampling_params_dict,
    to_sampling_params,
)
from judgebench_judges import parsing
from loopback_server import LoopbackHTTPServer

from judgebench.backends import Backend, Capabilities, Constraint, Request, Response, TokenLogprob
from judgebench.backends.base import Enforced
from judgebench.engine.judge_cache import CachedBackend
from judgebench.models import Sample, Status
from judgebench.plugins import build_host

SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"],
          "additionalProperties": False}
SCORES = Constraint.choice("1", "2", "3", "4", "5")


# -- the contract ---------------------------------------------------------------------------
def test_a_constraint_is_exactly_one_kind_and_says_what_matches() -> None:
    assert SCORES.kind == "choice" and SCORES.matches("4") and not SCORES.matches(" 4")
    date = Constraint(regex=r"[0-9]{4}-[0-9]{2}")
    assert date.kind == "regex" and date.matches("2024-01") and not date.matches("2024-1")
    obj = Constraint(json_schema=SCHEMA)
    assert obj.kind == "json" and obj.matches('{"score": 3}') and not obj.matches("[3]")
    for bad in ({}, {"choices": ("A",), "regex": "A"}, {"choices": ("A", "A")},
                {"choices": ("",)}, {"regex": "("}):
        with pytest.raises(ValueError):
            Constraint(**bad)


def test_json_schema_is_a_json_constraint_and_keeps_the_request_hash() -> None:
    by_schema = Request.chat(("user", "x"), json_schema=SCHEMA)
    by_constraint = Request.chat(("user", "x"), constraint=Constraint(json_schema=SCHEMA))
    assert by_schema.constraint == by_constraint.constraint
    assert by_constraint.json_schema == SCHEMA
    assert by_schema.to_dict() == by_constraint.to_dict()
    assert "constraint" not in by_schema.to_dict()  # same hash as before constraints existed
    identity = {"backend": "b", "model": "m"}
    plain = Request.chat(("user", "x"))
    chosen = Request.chat(("user", "x"), constraint=SCORES)
    assert chosen.to_dict()["constraint"] == {"choices": ["1", "2", "3", "4", "5"]}
    assert plain.content_hash(identity) != chosen.content_hash(identity)
    with pytest.raises(ValueError):
        Request.chat(("user", "x"), json_schema=SCHEMA, constraint=SCORES)


def test_a_response_keeps_what_was_enforced_through_the_cache_format() -> None:
    response = Response(text="4", constrained="choice",
                        choice_logprobs=(("1", -2.0), ("4", -0.1)))
    again = Response.from_dict(json.loads(json.dumps(response.to_dict())))
    assert again == response
    old = response.to_dict()
    del old["constrained"], old["choice_logprobs"]  # a cache entry from before
    assert Response.from_dict(old).constrained is None


def test_capabilities_say_which_kinds_are_enforced() -> None:
    assert Capabilities(json_schema=True).enforces("json")
    assert not Capabilities(json_schema=True).enforces("choice")
    assert Capabilities(constraints=frozenset({"choice"})).enforces("choice")
    assert VLLMBackend(model="/m").enforcement("regex") == "regex"


# -- vLLM in process: the request mapping --------------------------------------------------
@pytest.mark.parametrize(("constraint", "expected"), [
    (SCORES, {"choice": ["1", "2", "3", "4", "5"]}),
    (Constraint(regex=r"\d+"), {"regex": r"\d+"}),
    (Constraint(json_schema=SCHEMA), {"json": SCHEMA}),
])
@pytest.mark.parametrize("new_api", [True, False])
def test_vllm_structured_outputs_for_each_kind(constraint, expected, new_api) -> None:
    request = Request.chat(("user", "x"), constraint=constraint)
    params = sampling_params_dict(request)
    assert params["structured_outputs"] == expected
    assert "structured_outputs" not in sampling_params_dict(Request.chat(("user", "x")))

    class Recorder:
        def __init__(self, **kwargs: Any) -> None:
            self.kwargs = kwargs

    sampling = types.SimpleNamespace()
    setattr(sampling, "StructuredOutputsParams" if new_api else "GuidedDecodingParams", Recorder)
    built = to_sampling_params(params, types.SimpleNamespace(SamplingParams=Recorder,
                                                             sampling_params=sampling))
    field = "structured_outputs" if new_api else "guided_decoding"
    assert built.kwargs[field].kwargs == expected
    completion = types.SimpleNamespace(text="4", token_ids=[52], logprobs=None,
                                       finish_reason="stop")
    output = types.SimpleNamespace(prompt_token_ids=[1], prompt_logprobs=None,
                                   outputs=[completion])
    assert parse_output(output, request, 0.1, "m").constrained == constraint.kind


# -- OpenAI-shaped requests -------------------------------------------------------------------
def test_openai_fields_for_each_structured_step() -> None:
    request = Request.chat(("user", "x"), json_schema=SCHEMA)
    strict = optional_fields(request)["response_format"]
    assert strict == {"type": "json_schema",
                      "json_schema": {"name": "judgement", "schema": SCHEMA, "strict": True}}
    assert optional_fields(request, structured="json_object")["response_format"] == {
        "type": "json_object"}
    assert "response_format" not in optional_fields(request, structured="none")
    assert "response_format" not in optional_fields(Request.chat(("user", "x"),
                                                                 constraint=SCORES))
    assert vllm_structured_fields(SCORES) == {
        "structured_outputs": {"choice": ["1", "2", "3", "4", "5"]}}
    assert vllm_structured_fields(SCORES, legacy=True) == {
        "guided_choice": ["1", "2", "3", "4", "5"]}
    assert vllm_structured_fields(Constraint(regex="a+"), legacy=True) == {"guided_regex": "a+"}
    assert rejects_response_format(400, b'{"error": "response_format json_schema unsupported"}')
    assert not rejects_response_format(400, b'{"error": "context length exceeded"}')
    assert not rejects_response_format(500, b"response_format")


# -- a real loopback server: vLLM-like or one that rejects json_schema -------------------------
class Server:
    """An OpenAI-compatible chat server on 127.0.0.1 in a thread. `reject` lists the
    response_format types it answers 400 to; `owner` is what GET /v1/models says; every
    chat body is kept in `bodies`. The answer is `reply(body)`."""

    def __init__(self, reply: Callable[[dict], str], reject: tuple[str, ...] = (),
                 owner: str = "someone", bad: str | None = None) -> None:
        self.bodies: list[dict] = []
        self.models_asked = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                outer.models_asked += 1
                self._send(200, {"object": "list",
                                 "data": [{"id": "judge", "owned_by": owner}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append(body)
                kind = (body.get("response_format") or {}).get("type")
                if bad is not None:
                    self._send(400, {"error": {"message": bad, "code": 400}})
                    return
                if kind in reject:
                    self._send(400, {"error": {"message": f"response_format type {kind} is "
                                                          "not supported", "code": 400}})
                    return
                self._send(200, {"id": "x", "object": "chat.completion", "model": "judge",
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant",
                                                          "content": reply(body)}}],
                                 "usage": {"prompt_tokens": 5, "completion_tokens": 2}})

        self.httpd = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def compat(on: Server, **options: Any) -> Backend:
    from judgebench.backends import get_backend

    return get_backend("openai_compat", model="judge", api_base=on.url, timeout_s=5.0,
                       max_attempts=1, **options)


def json_request() -> Request:
    return Request.chat(("user", "Rate it."), json_schema=SCHEMA, max_tokens=16)


@pytest.mark.parametrize(("reject", "steps", "enforced"), [
    ((), ["json_schema"], "json"),
    (("json_schema",), ["json_schema", "json_object"], "json_object"),
    (("json_schema", "json_object"), ["json_schema", "json_object", None], None),
])
def test_openai_compat_falls_back_from_json_schema_to_json_object_to_the_prompt(
        reject, steps, enforced) -> None:
    with Server(lambda body: '{"score": 4}', reject=reject) as server:
        backend = compat(server)
        first = backend.generate([json_request()])[0]
        assert first.ok and first.text == '{"score": 4}', first.error
        assert first.constrained == enforced
        assert [(b.get("response_format") or {}).get("type") for b in server.bodies] == steps
        assert backend.enforcement("json") == enforced
        # the step reached is remembered: the next call (and backend) starts from it
        server.bodies.clear()
        again = compat(server).generate([json_request()])[0]
        assert again.constrained == enforced
        assert [(b.get("response_format") or {}).get("type") for b in server.bodies] == steps[-1:]


def test_openai_compat_other_bad_requests_do_not_drop_the_schema() -> None:
    with Server(lambda body: "{}", bad="max_tokens is too large") as server:
        backend = compat(server)
        response = backend.generate([json_request()])[0]
        assert response.error is not None and response.error.kind == "bad_request"
        assert [b["response_format"]["type"] for b in server.bodies] == ["json_schema"]
        assert backend.enforcement("json") == "json"
    with Server(lambda body: "{}", reject=("json_schema",)) as server:
        response = compat(server, structured="json_object").generate([json_request()])[0]
        assert response.constrained == "json_object"
        assert [b["response_format"]["type"] for b in server.bodies] == ["json_object"]


def judge_with(backend: Backend, name: str = "judge.rubric", **options: Any) -> Any:
    metric: Any = build_host().metric(name).build(cache=False, **options)
    metric._backend = CachedBackend(backend, None)
    return metric


def test_the_judges_signature_says_the_server_fell_back() -> None:
    with Server(lambda body: '{"feedback": "ok", "score": 4}', reject=("json_schema",)) as srv:
        backend = compat(srv)
        metric = judge_with(backend)
        assert metric.protocol == "json"
        before = str(metric.signature())
        assert "constrained:json|" in before
        outcome = metric.score([Sample(item="i", system="s", output="o", input="q")])[0]
        assert outcome.status == Status.OK and outcome.value == 4.0
        assert outcome.extra["constrained"] == "json_object"
        assert "constrained:json_object" in str(metric.signature())


def test_a_vllm_server_enforces_choices_and_regexes() -> None:
    def reply(body: dict) -> str:
        return body.get("structured_outputs", {}).get("choice", ["free text"])[0]

    with Server(reply, owner="vllm") as server:
        backend = compat(server, prefill=True)
        assert backend.enforcement("choice") == "choice"  # found out from GET /v1/models
        answer = backend.generate([Request.chat(("user", "x"), constraint=SCORES)])[0]
        assert answer.text == "1" and answer.constrained == "choice"
        assert server.bodies[-1]["structured_outputs"] == {"choice": ["1", "2", "3", "4", "5"]}
        regex = backend.generate([Request.chat(("user", "x"),
                                               constraint=Constraint(regex="[AB]"))])[0]
        assert regex.constrained == "regex"
        assert server.bodies[-1]["structured_outputs"] == {"regex": "[AB]"}
    with Server(reply, owner="someone") as plain:
        backend = compat(plain)
        answer = backend.generate([Request.chat(("user", "x"), constraint=SCORES)])[0]
        assert answer.text == "free text" and answer.constrained is None
        assert "structured_outputs" not in plain.bodies[-1]
    with Server(reply) as legacy:
        compat(legacy, server="vllm-guided").generate([Request.chat(("user", "x"),
                                                                    constraint=SCORES)])
        assert legacy.bodies[-1]["guided_choice"] == ["1", "2", "3", "4", "5"]
        assert legacy.models_asked == 0


# -- litellm -----------------------------------------------------------------------------------
def test_litellm_mapping_follows_what_the_provider_takes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("litellm", reason="the [api] extra is not installed")
    from judgebench_backends.litellm_backend import LiteLLMBackend

    monkeypatch.setenv("OPENAI_API_KEY", "unused")  # openai/ models need one to be built

    openai = LiteLLMBackend(model="openai/gpt-4o-mini")
    kwargs = openai.call_kwargs(json_request())
    assert kwargs["response_format"]["json_schema"]["schema"] == SCHEMA
    assert openai.enforced(json_request()) == "json"
    assert openai.enforcement("choice") is None
    assert "extra_body" not in openai.call_kwargs(Request.chat(("user", "x"), constraint=SCORES))
    known_without = LiteLLMBackend(model="ollama/llama3")  # in litellm's table: no schema
    assert "response_format" not in known_without.call_kwargs(json_request())
    assert known_without.enforced(json_request()) is None
    own_server = LiteLLMBackend(model="openai/my-judge", api_base="http://127.0.0.1:1/v1")
    assert own_server.enforced(json_request()) == "json"  # unknown model: the option decides
    off = LiteLLMBackend(model="openai/my-judge", json_schema=False)
    assert "response_format" not in off.call_kwargs(json_request())
    vllm = LiteLLMBackend(model="hosted_vllm/judge", api_base="http://127.0.0.1:1/v1")
    assert vllm.call_kwargs(json_request())["response_format"]["type"] == "json_schema"
    assert vllm.call_kwargs(Request.chat(("user", "x"), constraint=SCORES))["extra_body"] == {
        "structured_outputs": {"choice": ["1", "2", "3", "4", "5"]}}


def test_litellm_sends_the_choices_to_a_vllm_server_and_says_so() -> None:
    pytest.importorskip("litellm", reason="the [api] extra is not installed")
    from judgebench.backends import get_backend

    with Server(lambda body: body["structured_outputs"]["choice"][-1], owner="vllm") as server:
        backend = get_backend("litellm", model="hosted_vllm/judge", api_base=server.url,
                              timeout_s=5.0, max_attempts=1)
        answer = backend.generate([Request.chat(("user", "x"), constraint=SCORES)])[0]
        assert answer.ok, answer.error
        assert answer.text == "5" and answer.constrained == "choice"
        assert server.bodies[-1]["structured_outputs"] == {"choice": ["1", "2", "3", "4", "5"]}


# -- choice probabilities, by hand -------------------------------------------------------------
def test_choice_probabilities_are_renormalised_over_the_choices_only() -> None:
    logprobs = (("1", math.log(0.1)), ("2", math.log(0.3)), ("3", math.log(0.1)))
    found = parsing.choice_distribution(logprobs, None, ("1", "2", "3"))
    # 0.1 + 0.3 + 0.1 = 0.5 of the mass; renormalised: 0.2, 0.6, 0.2
    assert found.mass == pytest.approx(0.5) and found.source == "choices"
    assert found.probs == pytest.approx({"1": 0.2, "2": 0.6, "3": 0.2})
    assert found.argmax() == "2"
    assert found.expectation({"1": 1, "2": 2, "3": 3}) == pytest.approx(0.2 + 1.2 + 0.6)
    # from the top alternatives: non-choices ignored, " 2" is the choice "2"
    tokens = (TokenLogprob(" ", -0.01), TokenLogprob("2", math.log(0.4), (
        ("2", math.log(0.4)), ("The", math.log(0.3)), (" 1", math.log(0.2)),
        ("7", math.log(0.05)))))
    top = parsing.choice_distribution(None, tokens, ("1", "2", "3"))
    assert top.source == "top" and top.mass == pytest.approx(0.6)
    assert top.probs == pytest.approx({"1": 1 / 3, "2": 2 / 3, "3": 0.0})
    with pytest.raises(parsing.ParseError):
        parsing.choice_distribution(None, (TokenLogprob("x", -0.1, (("x", -0.1),)),), ("1",))


# -- judges: what they ask for, and their signatures -----------------------------------------------
class Scripted(Backend):
    """Answers with `answer(request)`; `constraints` are the kinds it claims to enforce."""

    name = "scripted"

    def __init__(self, answer: Callable[[Request], Response], constraints: frozenset[str],
                 logprobs: bool = False) -> None:
        super().__init__("scripted-model", "r1")
        self.answer = answer
        self.capabilities = Capabilities(prefill=True, constraints=constraints,
                                         logprobs=logprobs, max_top_logprobs=20 if logprobs else 0)
        self.sent: list[Request] = []

    def generate_sync(self, requests: list[Request]) -> list[Response]:
        self.sent.extend(requests)
        return [self.answer(r) for r in requests]


def rubric_answer(request: Request) -> Response:
    if request.constraint is None:
        return Response(text=" is on topic.")
    enforced: Enforced | None = "choice" if request.constraint.choices else None
    logprobs = (("1", -3.0), ("2", -2.0), ("3", -0.5), ("4", -0.4), ("5", -4.0))
    return Response(text="4", constrained=enforced,
                    choice_logprobs=logprobs if request.logprobs else None)


SAMPLE = Sample(item="i", system="s", input="Summarise.", output="A summary.")


def test_the_two_stage_judges_ask_for_their_choices() -> None:
    backend = Scripted(rubric_answer, frozenset({"choice"}))
    judge_with(backend).score([SAMPLE])
    assert backend.sent[1].constraint == Constraint.choice("1", "2", "3", "4", "5")
    backend.sent.clear()
    pair = Sample(item="i", system="a|b", system_a="a", system_b="b", output_a="x",
                  output_b="y", input="q")
    judge_with(backend, "judge.pairwise").score([pair])
    assert {r.constraint for r in backend.sent if r.constraint} == {Constraint.choice("A", "B",
                                                                                      "C")}
    backend.sent.clear()
    graded = Sample(item="i", system="s", input="q", output="4", reference="four")
    judge_with(backend, "judge.reference", mode="graded").score([graded])
    assert backend.sent[1].constraint == Constraint.choice(" 1", " 2", " 3", " 4", " 5")
    backend.sent.clear()
    judge_with(backend, "judge.reference").score([graded])
    assert backend.sent[1].constraint == Constraint.choice("CORRECT", "INCORRECT")


def test_signatures_differ_constrained_or_not_and_both_work() -> None:
    free = judge_with(Scripted(lambda r: Response(text=" 4" if r.constraint else " fine."),
                               frozenset()))
    bound = judge_with(Scripted(rubric_answer, frozenset({"choice"})))
    assert free.protocol == bound.protocol == "two_stage"
    assert "constrained:" not in str(free.signature())
    assert "constrained:choice" in str(bound.signature())
    assert str(free.signature()) != str(bound.signature())
    unconstrained = free.score([SAMPLE])[0]  # the backend cannot constrain: parsed as before
    assert unconstrained.status == Status.OK and unconstrained.value == 4.0
    assert "constrained" not in unconstrained.extra
    constrained = bound.score([SAMPLE])[0]
    assert constrained.status == Status.OK and constrained.extra["constrained"] == "choice"


def test_json_protocol_without_the_capability_still_parses_the_prompted_json() -> None:
    backend = Scripted(lambda r: Response(text='{"feedback": "ok", "score": 2}'), frozenset())
    metric = judge_with(backend, protocol="json")
    assert "constrained:" not in str(metric.signature())
    outcome = metric.score([SAMPLE])[0]
    assert outcome.status == Status.OK and outcome.value == 2.0
    assert backend.sent[0].json_schema is not None


@pytest.mark.parametrize(("scoring", "value"), [("argmax", 4.0), ("auto", 4.0),
                                                ("expectation", None), ("text", 4.0)])
def test_rubric_scores_from_the_choices_probabilities(scoring, value) -> None:
    metric = judge_with(Scripted(rubric_answer, frozenset({"choice"}), logprobs=True),
                        scoring=scoring)
    outcome = metric.score([SAMPLE])[0]
    assert outcome.status == Status.OK, outcome.reason
    expected_scoring = "argmax" if scoring == "auto" else scoring
    assert f"scoring:{expected_scoring}" in str(metric.signature())
    if scoring == "text":
        assert "probs" not in outcome.extra
        return
    weights = {s: math.exp(lp) for s, lp in (("1", -3.0), ("2", -2.0), ("3", -0.5), ("4", -0.4),
                                              ("5", -4.0))}
    total = sum(weights.values())
    assert outcome.extra["probs"] == pytest.approx({s: w / total for s, w in weights.items()})
    assert outcome.extra["choice_mass"] == pytest.approx(total)
    mean = sum(int(s) * w / total for s, w in weights.items())
    assert outcome.value == pytest.approx(value if value is not None else mean)


def test_free_json_strings_are_bounded_to_fit_max_tokens() -> None:
    from judgebench_backends.guided_decoding import bounded_strings

    schema: dict[str, Any] = {"type": "object", "required": ["feedback", "score", "verdict"],
                              "properties": {"feedback": {"type": "string"},
                                             "score": {"type": "integer"},
                                             "verdict": {"type": "string", "enum": ["A", "B"]},
                                             "short": {"type": "string", "maxLength": 5}}}
    bounded = bounded_strings(schema, 256)
    limit = bounded["properties"]["feedback"]["maxLength"]
    assert 100 < limit < 256 - len('{"feedback":"","score":0,"verdict":"A","short":""}') + 1
    assert bounded["properties"]["verdict"] == schema["properties"]["verdict"]
    assert bounded["properties"]["short"] == {"type": "string", "maxLength": 5}
    assert "maxLength" not in schema["properties"]["feedback"]  # the request's own is kept
    assert bounded_strings({"type": "array"}, 10) == {"type": "array"}


# -- transformers: the real small model, really constrained --------------------------------------
@pytest.fixture(scope="module")
def small_model() -> Iterator[Backend]:
    pytest.importorskip("torch", reason="the [local] extra is not installed")
    pytest.importorskip("llguidance", reason="the [local] extra is not installed")
    from judgebench.backends import get_backend

    backend = get_backend("transformers")
    assert backend.capabilities.constraints == frozenset({"choice", "regex", "json"})
    yield backend


PROMPTS = ["Rate this sentence from 1 to 5: 'The cat sat on the mat.'",
           "Is the sky green? Answer now.", "Write a long poem about the sea.",
           "Which is better, A or B? A: hello. B: goodbye."]


@pytest.mark.slow
def test_transformers_choices_and_regexes_always_match(small_model) -> None:
    verdicts = Constraint.choice("A", "B", "tie")
    date = Constraint(regex=r"(19|20)[0-9]{2}-[01][0-9]-[0-3][0-9]")
    requests = [Request.chat(("user", p), max_tokens=12, constraint=c)
                for p in PROMPTS for c in (verdicts, date)]
    requests.append(Request.chat(("user", PROMPTS[0]), max_tokens=40,
                                 constraint=Constraint(json_schema={
                                     "type": "object", "additionalProperties": False,
                                     "properties": {"score": {"type": "integer", "minimum": 1,
                                                              "maximum": 5}},
                                     "required": ["score"]})))
    feedback = {"type": "object", "additionalProperties": False, "required": ["why", "score"],
                "properties": {"why": {"type": "string"}, "score": {"type": "integer"}}}
    requests.append(Request.chat(("user", PROMPTS[2]), max_tokens=40,
                                 constraint=Constraint(json_schema=feedback)))
    answers = small_model.generate(requests)
    # a free string is bounded so that the object closes within max_tokens
    assert set(json.loads(answers[-1].text)) == {"why", "score"}, answers[-1].text
    for request, answer in zip(requests, answers, strict=True):
        assert answer.ok, answer.error
        assert request.constraint is not None and request.constraint.matches(answer.text), (
            request.constraint, answer.text)
        assert answer.constrained == request.constraint.kind
    unconstrained = small_model.generate([Request.chat(("user", PROMPTS[2]), max_tokens=12)])[0]
    assert unconstrained.constrained is None and not verdicts.matches(unconstrained.text)


@pytest.mark.slow
def test_transformers_choice_logprobs_are_exact_for_one_token_choices(small_model) -> None:
    prefix = Request.chat(("user", PROMPTS[0]), ("assistant", "Score:"), max_tokens=4,
                          logprobs=True, top_logprobs=50,
                          constraint=Constraint.choice(" 1", " 2", " 3", " 4", " 5"))
    plain = Request.chat(("user", PROMPTS[0]), ("assistant", "Score: "), max_tokens=4,
                         logprobs=True, top_logprobs=50, constraint=SCORES)
    for request in (prefix, plain):
        answer = small_model.generate([request])[0]
        assert answer.ok and answer.constrained == "choice"
        assert answer.choice_logprobs is not None
        found = dict(answer.choice_logprobs)
        assert request.constraint is not None
        assert set(found) == set(request.constraint.choices)
        # greedy under the constraint = the most probable allowed choice
        assert answer.text == max(found, key=lambda c: found[c])
        assert all(lp < 0 for lp in found.values())
    # the unconstrained distribution at that position agrees with the raw logits' top-k
    free = small_model.generate([Request.chat(("user", PROMPTS[0]), ("assistant", "Score: "),
                                              max_tokens=1, logprobs=True,
                                              top_logprobs=50)])[0]
    top = dict(free.logprobs[0].top)
    constrained = dict(small_model.generate([plain])[0].choice_logprobs)
    for choice, logprob in constrained.items():
        if choice in top:
            assert logprob == pytest.approx(top[choice], abs=1e-4)
    # choices of several tokens and unequal lengths get no choice_logprobs
    mixed = small_model.generate([Request.chat(("user", PROMPTS[3]), max_tokens=6,
                                               logprobs=True,
                                               constraint=Constraint.choice("A", "both equal"))])[0]
    assert mixed.constrained == "choice" and mixed.choice_logprobs is None
