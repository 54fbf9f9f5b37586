"""The scoring primitives (`judgebench.engine.scoring`): a run looks each metric spec up and
builds it once, in one pass; the workers and the Ray actors build theirs with the same step."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from judgebench.engine.runner import run, run_stream, survey
from judgebench.engine.runtime import RunSettings
from judgebench.engine.scoring import build, prepare
from judgebench.engine.store import Store
from judgebench.models import Sample
from judgebench.plugins import build_host
from judgebench.registry import MetricEntry
from judgebench.spec import parse_spec

SAMPLES = [Sample(item=str(k), system=s, output=f"the cat sat {k}", reference="the cat sat")
           for k in range(6) for s in ("a", "b")]


def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Counter[str], Counter[str]]:
    """A real plugin host, and how many times each metric is looked up and built."""
    host = build_host()
    looked_up: Counter[str] = Counter()
    built: Counter[str] = Counter()
    lookup, make = host.metric, MetricEntry.build

    def metric(name: str) -> MetricEntry:
        looked_up[name] += 1
        return lookup(name)

    def counted_build(entry: MetricEntry, **options: Any) -> Any:
        built[entry.name] += 1
        return make(entry, **options)

    monkeypatch.setattr(host, "metric", metric)
    monkeypatch.setattr(MetricEntry, "build", counted_build)
    return host, looked_up, built


def test_a_run_looks_up_and_builds_each_spec_once(monkeypatch: pytest.MonkeyPatch) -> None:
    host, looked_up, built = counted(monkeypatch)
    specs = [parse_spec("lexical.bleu"), parse_spec("lexical.chrf"),
             parse_spec("lexical.rouge1:multi_ref=mean")]
    with Store(":memory:") as store:
        result = run(SAMPLES, specs, store=store, host=host)
    assert looked_up == {"lexical.bleu": 1, "lexical.chrf": 1, "lexical.rouge1": 1}
    assert built == looked_up
    assert [p.signature for p in result.metrics] == [
        str(host.metric(s.name).build(**s.options).signature()) for s in specs]


def test_a_dry_run_times_local_metrics_on_one_fresh_instance_more(
        monkeypatch: pytest.MonkeyPatch) -> None:
    host, looked_up, built = counted(monkeypatch)
    with Store(":memory:") as store:
        found = run_stream(lambda: SAMPLES, survey(SAMPLES), [parse_spec("lexical.bleu")],
                           store=store, settings=RunSettings(dry_run=True), host=host,
                           estimate_from=SAMPLES)
    assert found.estimates["lexical.bleu"]["estimated_s"] is not None
    assert looked_up == {"lexical.bleu": 2} and built == {"lexical.bleu": 2}


def test_build_and_prepare_are_the_host_s_entry_built_with_the_spec_s_options() -> None:
    host = build_host()
    spec = parse_spec("lexical.rouge1:multi_ref=mean")
    direct = host.metric("lexical.rouge1").build(multi_ref="mean")
    assert build(spec, host).signature() == direct.signature()
    prepared = prepare(spec, host, host.metric(spec.name))
    assert prepared.signature == str(direct.signature()) and prepared.column == spec.column
