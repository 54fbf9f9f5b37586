"""The position-bias probe through a real judge: judge.pairwise with the default CPU model
(SmolLM2-135M-Instruct via transformers), one order per call, on two SummEval pairs."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch", reason="the [local] extra is not installed")
pytest.importorskip("transformers", reason="the [local] extra is not installed")

from conftest import summeval_records

from judgebench.auditing.bias import center_of, pairs_from_samples, run_bias
from judgebench.auditing.probes import runner_score_fn
from judgebench.models import Sample
from judgebench.plugins import build_host
from judgebench.spec import parse_spec

pytestmark = pytest.mark.slow  # runs the local SmolLM2 judge

SHORTEST = "dm-test-f5fead94ee884800e84a212cc0edc78b11c4ba9f"  # a 632-character article


def test_position_probe_runs_through_the_local_pairwise_judge(model_cache,
                                                              monkeypatch) -> None:
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(model_cache))
    host = build_host()
    if "judge.pairwise" not in host.metrics():
        pytest.fail("the judges plugin does not register judge.pairwise")
    records = [r for r in summeval_records() if r["item"] == SHORTEST]
    samples = [Sample(**{**r, "input": "Summarize the article:\n" + r["input"]})
               for r in records]
    human = {(s.item, s.system): s.human["relevance"] for s in samples}
    pairs, labels = pairs_from_samples(samples, human, count=2, seed=0)
    spec = parse_spec("judge.pairwise:both_orders=false,feedback_tokens=16")
    center = center_of(host.metric(spec.name).info.value_range)
    assert center == 0.5
    results = {r.measure: r for r in run_bias(pairs, runner_score_fn(spec, host),
                                              judge=spec.column, center=center,
                                              human=labels, probes=["position"])}
    flip, first = results["flip_rate"], results["first_position_wins"]
    # Both orders of at least one pair came back as verdicts from the model.
    assert 1 <= flip.n <= 2 and first.n == 2 * flip.n
    assert 0.0 <= flip.value <= 1.0 and 0.0 <= first.value <= 1.0
    assert math.isclose(first.value * first.n % 1, 0.0, abs_tol=1e-9)  # a count of wins
    # Every verdict came through the judge cache of this test: the model really answered.
    assert any(entry.name != "models" for entry in model_cache.iterdir())
