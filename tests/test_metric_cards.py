"""`judgebench metrics NAME`: every built-in metric has a description and a citation, and its
card (text and --json) renders from its own declaration: info, options with type, default,
choices and bounds, and an example command that runs."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import run_cli, write_jsonl

from judgebench.metric_card import CARD_FIELDS, OPTION_FIELDS
from judgebench.plugins import build_host

#: The built-in plugins that register metrics or sentinels (plugins/judgebench_*).
BUILTIN = {"lexical", "neural", "judges", "audit"}


def _builtin() -> dict[str, Any]:
    host = build_host()
    entries = host.metrics() | host.sentinels()
    return {name: entry for name, entry in entries.items() if entry.plugin in BUILTIN}


ENTRIES = _builtin()
BUILTIN_METRICS = sorted(ENTRIES)


def card(name: str) -> dict[str, Any]:
    proc = run_cli("metrics", name, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_builtin_plugins_register_the_metrics_this_file_checks() -> None:
    assert len(BUILTIN_METRICS) >= 29
    assert {"lexical.bleu", "neural.bertscore", "judge.geval", "sentinel.cand"} <= set(
        BUILTIN_METRICS)


@pytest.mark.parametrize("name", BUILTIN_METRICS)
def test_every_builtin_metric_has_description_and_citation(name: str) -> None:
    info = ENTRIES[name].info
    assert len(info.description) >= 10, name
    assert len(info.citation) >= 10, name


@pytest.mark.parametrize("name", BUILTIN_METRICS)
def test_every_card_renders_as_text_and_json(name: str) -> None:
    entry = ENTRIES[name]
    data = card(name)
    assert list(data) == list(CARD_FIELDS)
    assert data["name"] == name and data["citation"] == entry.info.citation
    assert data["description"] == entry.info.description
    assert data["requires"] == list(entry.info.requires)
    assert data["higher_is_better"] is entry.info.higher_is_better
    model = entry.options_model
    assert [o["name"] for o in data["options"]] == list(model.model_fields)
    for option in data["options"]:
        assert list(option) == list(OPTION_FIELDS)
    assert data["example"].startswith("judgebench ") and name in data["example"]

    proc = run_cli("metrics", name)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert text.splitlines()[0].startswith(f"{name} (version {entry.info.version}; plugin ")
    for heading in ("options:", "citation:", "example:"):
        assert heading in text.splitlines()
    for option in model.model_fields:
        assert f"  {option} " in text, option
    assert entry.info.citation.split()[0] in text
    assert data["example"] in text


def _option(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(o for o in data["options"] if o["name"] == name)


def test_card_reads_types_defaults_choices_and_bounds_from_the_options_model() -> None:
    bleu = card("lexical.bleu")
    tokenize = _option(bleu, "tokenize")
    assert tokenize["type"] == "str" and tokenize["default"] == "13a"
    assert tokenize["choices"][:2] == ["13a", "intl"] and "flores200" in tokenize["choices"]
    smooth = _option(bleu, "smooth_value")
    assert smooth["type"] == "float | None" and smooth["default"] is None
    assert smooth["choices"] is None and not smooth["required"]
    assert bleu["value_range"] == [0.0, 100.0] and bleu["has_corpus"] is True

    geval = card("judge.geval")
    temperature = _option(geval, "temperature")
    assert (temperature["minimum"], temperature["maximum"]) == (0.0, 2.0)
    sample = _option(geval, "sample_temperature")
    assert sample["exclusive_minimum"] == 0.0 and sample["maximum"] == 2.0
    assert sample["minimum"] is None
    assert _option(geval, "mode")["choices"] == ["auto", "logprobs", "sampling"]

    comet = card("learned.comet")
    assert _option(comet, "model")["required"] is True
    assert "model=MODEL" in comet["example"]
    assert card("lexical.ter")["higher_is_better"] is False
    panel = card("judge.panel")
    assert panel["extra_options"] is True and "models=MODEL_A;MODEL_B" in panel["example"]


def test_card_text_shows_choices_bounds_and_required() -> None:
    text = run_cli("metrics", "judge.geval").stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("temperature "))
    assert "0 <= x <= 2" in line and "0.0" in line
    line = next(x for x in text.splitlines() if x.strip().startswith("mode "))
    assert "auto | logprobs | sampling" in line
    text = run_cli("metrics", "learned.comet").stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("model "))
    assert "(required)" in line
    assert "direction      lower is better" in run_cli("metrics", "lexical.ter").stdout


@pytest.mark.parametrize("name", [n for n in BUILTIN_METRICS if n.startswith("lexical.")])
def test_the_example_command_runs(name: str, tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "generations.jsonl", [
        {"item": "d1", "system": "s1", "output": "a cat sat", "reference": "the cat sat"},
        {"item": "d1", "system": "s2", "output": "dogs ran", "reference": "the cat sat"}])
    args = shlex.split(card(name)["example"])
    assert args[:3] == ["judgebench", "score", "generations.jsonl"]
    proc = run_cli(*args[1:], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert samples.exists() and name in pd.read_csv(tmp_path / "scores.csv").columns


def test_the_list_still_lists_every_metric() -> None:
    proc = run_cli("metrics", "--json")
    assert proc.returncode == 0
    rows = json.loads(proc.stdout)
    assert {r["name"] for r in rows} >= set(BUILTIN_METRICS)
    assert all("citation" in r for r in rows)


FACTORY_PLUGIN = '''
from judgebench.hookspecs import hookimpl
from judgebench.metric import Metric
from judgebench.models import MetricInfo

INFO = MetricInfo(name="factory.const", kind="reference", description="always 1")


class Const(Metric):
    info = INFO

    def score(self, samples):
        return [1.0] * len(samples)


def make(**options):
    return Const(**options)


@hookimpl
def register_metrics(register):
    register(make, info=INFO)
'''


def test_a_factory_metric_without_citation_still_has_a_card(tmp_path: Path) -> None:
    plugin = tmp_path / "factory_plugin.py"
    plugin.write_text(FACTORY_PLUGIN, encoding="utf-8")
    proc = run_cli("-p", str(plugin), "metrics", "factory.const", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["options"] is None and data["citation"] == ""
    assert data["example"] == "judgebench score generations.jsonl -m factory.const -o scores.csv"
    text = run_cli("-p", str(plugin), "metrics", "factory.const").stdout
    assert "not declared (registered as a factory function)" in text
    assert "(none given)" in text
