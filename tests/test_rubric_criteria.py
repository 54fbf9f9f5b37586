"""judge.rubric's `criteria=`: several built-in criteria rated in one call, a strict JSON
answer with one integer field per criterion; the value is the first criterion's score (or
report='s), every criterion's score in extra, the criteria and their order in the
signature; a missing, extra, non-integer or out-of-range field is a parse failure with the
reason; options it cannot go with are refused; reversing the criteria changes only their
order in the prompt and the schema (a metamorphic check of every message)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from judgebench.backends import Request
from judgebench.errors import InputError
from judgebench.models import Sample, Status

sys.path.insert(0, str(Path(__file__).parent))
from test_judges_protocols import Scripted, judge, text

SAMPLE = Sample(item="q", system="s", input="Summarise the article.", output="A summary.",
                reference="The reference summary.")
_BLOCK = re.compile(r"^Criterion \d+ \((\w+)\): ", re.MULTILINE)


def user_of(request: Request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


def asked(request: Request) -> list[str]:
    """The criteria in the order the prompt lists them."""
    return _BLOCK.findall(user_of(request))


def answering(scores: dict[str, Any], **more: Any):
    """A JSON answer with `scores` (criterion -> value) and a feedback."""
    return lambda request: text(json.dumps({"feedback": "read", **scores, **more}))


@pytest.mark.parametrize("protocol", ["json", "text", "auto"])
@pytest.mark.parametrize(("criteria", "report", "value"), [
    ("coherence;fluency", None, 4.0), ("coherence,fluency,relevance", "fluency", 2.0),
    ("relevance;coherence", None, 5.0)])
def test_one_call_rates_every_criterion(protocol: str, criteria: str, report: str | None,
                                        value: float) -> None:
    scores = {"coherence": 4, "fluency": 2, "relevance": 5}
    keys = re.split("[,;]", criteria)
    backend = Scripted(answering({k: scores[k] for k in keys}), prefill=True,
                       json_schema=protocol != "text")
    options = {"report": report} if report else {}
    metric = judge("judge.rubric", backend, protocol=protocol, criteria=criteria, **options)
    outcome = metric.score([SAMPLE])[0]
    assert outcome.status == Status.OK, outcome
    assert outcome.value == value and outcome.rationale == "read"
    assert outcome.extra["criteria"] == {k: scores[k] for k in keys}
    assert list(outcome.extra["criteria"]) == keys
    assert outcome.extra["report"] == (report or keys[0]) and outcome.extra["calls"] == 1
    [request] = backend.sent
    assert asked(request) == keys
    assert request.messages[-1]["role"] == "user"  # no prefill: the answer is the JSON
    read = "json" if protocol != "text" else "text"
    schema = request.json_schema if read == "json" else None
    if read == "json":
        assert schema is not None and schema["required"] == ["feedback", *keys]
        assert list(schema["properties"]) == ["feedback", *keys]
    else:
        assert request.json_schema is None
    fields = metric.signature().fields
    assert fields["criteria"] == ">".join(keys) and fields["report"] == (report or keys[0])
    assert fields["protocol"] == read and "criterion" not in fields


def test_without_criteria_the_signature_and_prompt_are_as_before() -> None:
    backend = Scripted(lambda r: text("Feedback: ok [RESULT] 3"), prefill=False)
    metric = judge("judge.rubric", backend, protocol="text")
    assert metric.score([SAMPLE])[0].value == 3.0
    fields = metric.signature().fields
    assert "criteria" not in fields and "report" not in fields
    assert fields["criterion"] == "helpfulness" and fields["template"].startswith("rubric:")
    assert asked(backend.sent[0]) == []


@pytest.mark.parametrize(("answer", "reason"), [
    ({"coherence": 4}, "the JSON answer has no 'fluency'"),
    ({"fluency": 4, "coherence": 3, "relevance": 2}, "keys not asked for: ['relevance']"),
    ({"coherence": 4, "fluency": 6}, "'fluency' 6 is outside 1..5"),
    ({"coherence": 4, "fluency": 0}, "'fluency' 0 is outside 1..5"),
    ({"coherence": "4", "fluency": 3}, "'coherence' is not an integer"),
    ({"coherence": 4.5, "fluency": 3}, "'coherence' is not an integer"),
    ({"coherence": True, "fluency": 3}, "'coherence' is not an integer"),
])
@pytest.mark.parametrize("protocol", ["json", "text"])
def test_an_answer_without_every_criterion_in_range_is_a_parse_failure(
        answer: dict[str, Any], reason: str, protocol: str) -> None:
    backend = Scripted(answering(answer), prefill=False, json_schema=protocol == "json")
    outcome = judge("judge.rubric", backend, protocol=protocol,
                    criteria="coherence;fluency").score([SAMPLE])[0]
    assert outcome.status == Status.PARSE_ERROR and outcome.value is None
    assert reason in (outcome.reason or ""), outcome.reason
    assert json.loads(outcome.raw or "")["feedback"] == "read"  # the answer is kept


@pytest.mark.parametrize("reply", ["Feedback: fine [RESULT] 4",
                                   '{"feedback": "read", "coherence": 4} trailing',
                                   '["feedback", 4, 4]'])
def test_an_answer_that_is_not_one_json_object_is_a_parse_failure(reply: str) -> None:
    backend = Scripted(lambda r: text(reply), prefill=False)
    outcome = judge("judge.rubric", backend, protocol="text",
                    criteria="coherence;fluency").score([SAMPLE])[0]
    assert outcome.status == Status.PARSE_ERROR and "JSON" in (outcome.reason or "")


@pytest.mark.parametrize(("options", "message"), [
    ({"criteria": "coherence;banana"}, "built-in criteria"),
    ({"criteria": "coherence;coherence"}, "each criterion once"),
    ({"criteria": "coherence;;fluency"}, "each criterion once"),
    ({"criteria": "coherence;fluency", "report": "relevance"}, "report=relevance is not one"),
    ({"report": "coherence"}, "report= names one of criteria="),
    ({"criteria": "coherence;fluency", "invert": "true"}, "invert="),
    ({"criteria": "coherence;fluency", "mode": "turn"}, "mode=response only"),
    ({"criteria": "coherence;fluency", "criterion": "fluency"}, "criteria= instead"),
    ({"criteria": "coherence;fluency", "definition": "x"}, "built-in criteria only"),
    ({"criteria": "coherence;fluency", "examples": [{"output": "o", "score": 3}]},
     "no few-shot examples"),
    ({"criteria": "coherence;fluency", "protocol": "two_stage"}, "protocol=two_stage"),
    ({"criteria": "coherence;fluency", "scoring": "expectation"}, "probabilities"),
])
def test_criteria_with_what_it_cannot_go_with_is_refused(options: dict[str, Any],
                                                          message: str) -> None:
    backend = Scripted(lambda r: text("{}"), prefill=True)
    with pytest.raises(InputError, match=re.escape(message)):
        judge("judge.rubric", backend, **options)
    assert backend.sent == []


@pytest.mark.parametrize("criteria", [["coherence", "fluency"],
                                      ["fluency", "relevance", "consistency", "coherence"],
                                      ["helpfulness", "coherence", "relevance"]])
@pytest.mark.parametrize("protocol", ["json", "text"])
def test_reversing_the_criteria_changes_only_their_order(criteria: list[str],
                                                          protocol: str) -> None:
    """Metamorphic: the same texts, the same criterion blocks (each word for word) and the
    same schema fields, in the reverse order; nothing else in any message differs."""
    def sent(order: list[str]) -> Request:
        backend = Scripted(answering({k: 3 for k in order}), prefill=False,
                           json_schema=protocol == "json")
        judge("judge.rubric", backend, protocol=protocol, criteria=";".join(order),
              report=criteria[0]).score([SAMPLE])
        [request] = backend.sent
        return request

    plain, reordered = sent(criteria), sent(criteria[::-1])
    assert asked(plain) == criteria and asked(reordered) == criteria[::-1]

    def parts(request: Request) -> tuple[list[tuple[str, str]], dict[str, str]]:
        """Every message with the criterion blocks and the key list cut out, and each
        criterion's block (its text without its number)."""
        user = user_of(request)
        rubric = re.search(r"<rubric>\n(.*?)\n</rubric>", user, re.DOTALL)
        assert rubric is not None
        blocks = {m.group(1): m.group(2) for m in re.finditer(
            r"Criterion \d+ \((\w+)\): (.*?)(?=\n\nCriterion \d+ |\Z)", rubric.group(1),
            re.DOTALL)}
        cut = user.replace(rubric.group(1), "")
        cut = re.sub(r'then (.*?), in this order', "then KEYS, in this order", cut)
        return [(m["role"], cut if m["role"] == "user" else m["content"])
                for m in request.messages], blocks

    assert parts(plain) == parts(reordered)
    assert set(parts(plain)[1]) == set(criteria)
    keys = re.search(r'then (.*?), in this order', user_of(reordered))
    assert keys is not None and keys.group(1) == " then ".join(f'"{k}"' for k in criteria[::-1])
    if protocol == "json":
        a, b = plain.json_schema, reordered.json_schema
        assert a is not None and b is not None
        assert a["properties"] == b["properties"] and set(a["required"]) == set(b["required"])
        assert list(b["properties"]) == ["feedback", *criteria[::-1]]
    assert (plain.temperature, plain.max_tokens, plain.stop) == (
        reordered.temperature, reordered.max_tokens, reordered.stop)


def test_logs_shows_every_criterions_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """`score` through a real loopback server, then `logs`: each row's value is the
    reported criterion's, every criterion's score is in its extra, in the order asked."""
    from conftest import run_cli
    from scripted_judge import ScriptedJudge

    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    samples = tmp_path / "s.jsonl"
    samples.write_text("".join(json.dumps({"item": f"i{k}", "system": "s", "input": "Sum.",
                                           "output": "x" * (k + 1)}) + "\n"
                               for k in range(3)), encoding="utf-8")

    def reply(system: str, user: str) -> str:
        found = re.search(r"<response>\n(x*)\n</response>", user)
        assert found is not None
        size = len(found.group(1))
        return json.dumps({"feedback": "ok", "fluency": size, "relevance": 6 - size})

    store = tmp_path / "runs.db"
    with ScriptedJudge(reply=reply) as server:
        proc = run_cli("score", str(samples), "-m",
                       f"judge.rubric:backend=openai_compat,model=m,api_base={server.url},"
                       "criteria=fluency;relevance,report=relevance", "-o",
                       str(tmp_path / "out.csv"), "--store", str(store))
    assert proc.returncode == 0, proc.stderr
    logs = run_cli("logs", "--store", str(store), "-n", "0", "--json")
    assert logs.returncode == 0, logs.stderr
    entries = sorted(json.loads(logs.stdout), key=lambda e: e["item"])
    assert [(e["value"], e["extra"]["criteria"], e["extra"]["report"]) for e in entries] == [
        (6.0 - k, {"fluency": k, "relevance": 6 - k}, "relevance") for k in (1, 2, 3)]
    assert all(list(e["extra"]["criteria"]) == ["fluency", "relevance"] for e in entries)
    assert "criteria:fluency>relevance" in entries[0]["signature"]
    assert "report:relevance" in entries[0]["signature"]
    text = run_cli("logs", "--store", str(store), "-n", "0")
    assert '"criteria": {"fluency": 1, "relevance": 5}' in text.stdout
