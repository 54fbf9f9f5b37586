"""End to end on CPU with the default local model (SmolLM2-135M-Instruct via transformers):
G-Eval from real token logprobs, a rubric score from real model output, and both-order
pairwise verdicts with the flip recorded, on a few SummEval samples."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")

from conftest import summeval_records

from judgebench.engine import runtime
from judgebench.models import Sample, Status
from judgebench.plugins import build_host

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

SHORTEST = "dm-test-f5fead94ee884800e84a212cc0edc78b11c4ba9f"  # a 632-character article


@pytest.fixture(scope="module")
def records() -> list[dict]:
    everything = summeval_records()
    rows = [r for r in everything if r["item"] == SHORTEST]
    return rows or [r for r in everything if r["item"] == everything[0]["item"]]


@pytest.fixture
def settings(tmp_path):
    with runtime.running(runtime.RunSettings(cache_path=tmp_path)) as s:
        yield s


def test_geval_scores_come_from_the_models_logprobs(records, settings) -> None:
    metric = build_host().metric("judge.geval").build(
        criterion="coherence",
        steps="1. Read the article.\\n2. Read the summary.\\n3. Rate its coherence from 1 to 5.",
    )
    samples = [Sample(**r) for r in records[:2]]
    outcomes = metric.score(samples)
    for o in outcomes:
        assert o.status == Status.OK, o.reason
        assert 1.0 <= o.value <= 5.0
        probs = {int(k): v for k, v in o.extra["probs"].items()}
        assert math.isclose(sum(probs.values()), 1.0, rel_tol=1e-9)
        assert o.value == pytest.approx(sum(s * p for s, p in probs.items()))
        assert 0.0 < o.extra["score_mass"] <= 1.0
        assert o.tokens_in > 100 and o.cost_usd == 0.0
    sig = str(metric.signature())
    assert "model:SmolLM2-135M-Instruct" in sig and "revision:gguf-sha256:" in sig
    assert "mode:logprobs" in sig
    again = metric.score(samples)
    assert [o.value for o in again] == [o.value for o in outcomes]
    assert all(o.extra["cached"] for o in again)


def test_rubric_scores_come_from_the_models_output(records, settings) -> None:
    metric = build_host().metric("judge.rubric").build(criterion="coherence", feedback_tokens=16)
    assert metric.protocol == "two_stage"
    outcomes = metric.score([Sample(**r) for r in records[:2]])
    for o in outcomes:
        assert o.status in (Status.OK, Status.PARSE_ERROR), o.reason
        assert o.raw and o.raw.startswith("Feedback: The response")
        assert o.extra["calls"] == 2
        if o.status == Status.OK:
            assert o.value in {1.0, 2.0, 3.0, 4.0, 5.0} and o.rationale
        else:
            assert o.value is None and o.reason
    assert any(o.status == Status.OK for o in outcomes)


def test_pairwise_records_both_orders_and_the_flip(records, settings) -> None:
    a, b = records[0], records[10]
    pair = Sample(item=a["item"], input="Summarize the article:\n" + a["input"],
                  output_a=a["output"], output_b=b["output"], system_a=a["system"],
                  system_b=b["system"])
    metric = build_host().metric("judge.pairwise").build(feedback_tokens=16)
    outcome = metric.score([pair])[0]
    assert outcome.status in (Status.OK, Status.PARSE_ERROR), outcome.reason
    assert {"raw_ab", "raw_ba", "verdict_ab", "verdict_ba"} <= set(outcome.extra)
    assert outcome.extra["calls"] == 4
    if outcome.status == Status.OK:
        ab, ba = outcome.extra["verdict_ab"], outcome.extra["verdict_ba"]
        assert outcome.extra["flip"] == (ab != ba)
        assert outcome.value == {"a": 1.0, "b": 0.0, "tie": 0.5}[ab if ab == ba else "tie"]
