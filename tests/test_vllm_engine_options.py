"""The in-process vllm backend's engine: options from a metric spec and TOML reach
``vllm.LLM``, one engine per distinct (model, options) shared by a run's metrics, LoRA
adapters per request, and a signature that records what changes numbers.

vllm cannot run here (no GPU), so tests/fake_vllm (a minimal module that records what it is
handed) stands in for it on sys.path; what is checked is judgebench's side. The real engine
is benchmarks/gpu_vllm_check.py's job.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_cli, summeval_records, write_jsonl

from judgebench.models import Sample, Status
from judgebench.plugins import build_host

FAKE = Path(__file__).parent / "fake_vllm"


@pytest.fixture
def vllm(monkeypatch, tmp_path):
    """The fake vllm, importable (and its dist-info visible) for this test only."""
    monkeypatch.syspath_prepend(str(FAKE))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    import vllm as fake

    fake.ENGINES.clear()
    yield fake
    from judgebench_backends.vllm_backend import shared_engine

    assert len(shared_engine) == 0, "an engine outlived the metrics that held it"


def metric(name: str, **options):
    return build_host().metric(name).build(**options)


def samples(n: int = 2) -> list[Sample]:
    return [Sample(**r) for r in summeval_records(n)]


ENGINE = {"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "max_model_len": 2048,
          "gpu_memory_utilization": 0.5, "quantization": "awq", "dtype": "bfloat16",
          "enforce_eager": True, "max_num_seqs": 8, "enable_prefix_caching": False}


def test_spec_options_reach_the_engine(vllm) -> None:
    judge = metric("judge.rubric", backend="vllm", model="/models/judge", criterion="coherence",
                   **ENGINE)
    outcomes = judge.score(samples())
    judge.close()
    assert [o.status for o in outcomes] == [Status.OK, Status.OK], [o.reason for o in outcomes]
    assert [o.value for o in outcomes] == [4.0, 4.0]
    (engine,) = vllm.ENGINES
    assert engine.kwargs == {"model": "/models/judge", "seed": 0, **ENGINE}
    assert "enable_lora" not in engine.kwargs


def test_option_a_backend_does_not_take_is_an_error_naming_it(vllm) -> None:
    from judgebench.errors import InputError

    judge = metric("judge.rubric", backend="transformers", criterion="coherence",
                   tensor_parallel_size=2)
    with pytest.raises(InputError, match="does not take the option tensor_parallel_size"):
        judge.backend_options()


def test_in_process_data_parallel_points_to_the_server(vllm) -> None:
    from judgebench.errors import InputError

    judge = metric("judge.rubric", backend="vllm", model="/m", criterion="coherence",
                   data_parallel_size=2)
    with pytest.raises(InputError, match="backend=vllm_server"):
        judge.backend  # noqa: B018


def test_metrics_with_the_same_model_and_options_share_one_engine(vllm) -> None:
    rubric = metric("judge.rubric", backend="vllm", model="/m", criterion="coherence",
                    max_model_len=1024)
    geval = metric("judge.geval", backend="vllm", model="/m", criterion="coherence",
                   max_model_len=1024)
    other = metric("judge.rubric", backend="vllm", model="/m", criterion="coherence",
                   max_model_len=4096)
    for m in (rubric, geval, other):
        m.score(samples(1))
    assert [e.kwargs["max_model_len"] for e in vllm.ENGINES] == [1024, 4096]
    assert len(vllm.ENGINES[0].calls) >= 2  # both metrics' calls went to the shared engine
    for m in (rubric, geval, other):
        m.close()


def _adapter(path: Path, weights: bytes, rank: int = 16) -> Path:
    path.mkdir()
    (path / "adapter_config.json").write_text(json.dumps({"r": rank}))
    (path / "adapter_model.safetensors").write_bytes(weights)
    return path


def test_lora_adapters_share_the_base_engine_one_request_each(vllm, tmp_path) -> None:
    first = _adapter(tmp_path / "a", b"weights-a", rank=12)
    second = _adapter(tmp_path / "b", b"weights-b", rank=12)
    judges = [metric("judge.rubric", backend="vllm", model="/base", criterion="coherence",
                     lora=str(path)) for path in (first, second)]
    for judge in judges:
        judge.score(samples(1))
    (engine,) = vllm.ENGINES
    assert engine.kwargs["enable_lora"] is True and engine.kwargs["max_lora_rank"] == 16
    used = [call["lora_request"] for call in engine.calls]
    assert {r.lora_path for r in used} == {str(first.resolve()), str(second.resolve())}
    assert len({r.lora_int_id for r in used}) == 2  # vLLM tells adapters apart by id
    signatures = [str(j.signature()) for j in judges]
    assert signatures[0] != signatures[1]
    for judge in judges:
        judge.close()


def test_signature_records_what_changes_numbers(vllm, tmp_path, monkeypatch) -> None:
    adapter = _adapter(tmp_path / "adapter", b"v1")
    judge = metric("judge.rubric", backend="vllm", model="/m", criterion="coherence",
                   quantization="awq", max_model_len=2048, dtype="float16", lora=str(adapter))
    fields = judge.signature().fields
    assert fields["vllm"] == "0.11.0"  # from the installed package's metadata, no import
    assert (fields["dtype"], fields["quantization"], fields["max_model_len"]) == (
        "float16", "awq", "2048")
    assert fields["batch_invariant"] == "off" and len(fields["lora"]) == 16
    assert "tensor_parallel_size" not in fields and "command" not in fields  # unset: absent
    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")
    assert judge.signature().fields["batch_invariant"] == "on"
    (adapter / "adapter_model.safetensors").write_bytes(b"v2")
    from judgebench_backends import vllm_backend

    vllm_backend._adapter_hashes.clear()  # a new process would hash the files anew
    changed = metric("judge.rubric", backend="vllm", model="/m", criterion="coherence",
                     quantization="awq", max_model_len=2048, dtype="float16", lora=str(adapter))
    assert changed.signature().fields["lora"] != fields["lora"]


def test_a_judge_without_engine_options_keeps_its_signature(vllm) -> None:
    judge = metric("judge.rubric", backend="transformers", criterion="coherence")
    fields = judge.signature().fields
    assert not set(fields) & {"tensor_parallel_size", "lora", "quantization", "command"}


def test_likelihood_runs_on_vllm_with_engine_options(vllm) -> None:
    likelihood = metric("neural.likelihood", backend="vllm", model="/lm", given="none",
                        max_model_len=512, enforce_eager=True)
    values = likelihood.score(samples(2))
    assert values == [pytest.approx(-0.5), pytest.approx(-0.5)]
    (engine,) = vllm.ENGINES
    assert engine.kwargs["max_model_len"] == 512 and engine.kwargs["enforce_eager"] is True
    assert likelihood.signature().fields["vllm"] == "0.11.0"
    likelihood.close()


def test_toml_engine_options_reach_the_engine(vllm, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    config = tmp_path / "judges.toml"
    config.write_text('[metrics.rubric]\nmetric = "judge.rubric"\nbackend = "vllm"\n'
                      'model = "/models/judge"\ncriterion = "coherence"\n'
                      'tensor_parallel_size = 4\nmax_num_seqs = 16\n')
    result = run_cli("score", str(data), "--config", str(config), "-o",
                     str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"))
    assert result.returncode == 0, result.stderr
    (engine,) = vllm.ENGINES
    assert engine.kwargs["tensor_parallel_size"] == 4 and engine.kwargs["max_num_seqs"] == 16


# -- pooling models for learned metrics ------------------------------------------------------
def _model_dir(path: Path, num_labels: int) -> Path:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"num_labels": num_labels}))
    (path / "model.safetensors").write_bytes(b"weights")  # its hash is the revision
    return path


def _records(n: int = 2) -> list[Sample]:
    return [Sample(item=f"d{i}", system="s", output="x" * (3 + i), input="in" * (i + 1),
                   reference="ref") for i in range(n)]


def test_reward_model_reads_the_raw_score_on_a_pooling_engine(vllm, tmp_path) -> None:
    model = _model_dir(tmp_path / "rm", num_labels=1)
    reward = metric("learned.classifier", model=str(model), backend="vllm",
                    max_model_len=1024)
    assert reward.score(_records()) == [3.0, 4.0]  # the fake's reward: the text's length
    (engine,) = vllm.ENGINES
    assert engine.kwargs["runner"] == "pooling" and engine.kwargs["max_model_len"] == 1024
    assert engine.calls[0]["method"] == "reward" and engine.calls[0]["inputs"] == ["xxx", "xxxx"]
    fields = reward.signature().fields
    assert fields["backend"] == "vllm" and fields["vllm"] == "0.11.0"
    reward.close()


def test_reward_probability_is_the_sigmoid_of_the_score(vllm, tmp_path) -> None:
    model = _model_dir(tmp_path / "rm", num_labels=1)
    reward = metric("learned.classifier", model=str(model), backend="vllm",
                    transform="probability")
    assert reward.score(_records(1)) == [pytest.approx(1 / (1 + math.exp(-3.0)))]
    reward.close()


def test_cross_encoder_pairs_use_the_score_runner(vllm, tmp_path) -> None:
    model = _model_dir(tmp_path / "ce", num_labels=1)
    cross = metric("learned.classifier", model=str(model), backend="vllm", pair="input",
                   transform="probability")
    assert cross.score(_records(1)) == [pytest.approx(2 / 5)]  # len(in) / (len + len(xxx))
    (engine,) = vllm.ENGINES
    assert engine.calls[0]["method"] == "score" and engine.calls[0]["inputs"] == [("in", "xxx")]
    logit = metric("learned.classifier", model=str(model), backend="vllm", pair="input")
    assert logit.score(_records(1)) == [pytest.approx(math.log(0.4 / 0.6))]
    cross.close()
    logit.close()


def test_multi_label_classifier_reads_its_label_probability(vllm, tmp_path) -> None:
    from judgebench.errors import InputError

    model = _model_dir(tmp_path / "clf", num_labels=2)
    clf = metric("learned.classifier", model=str(model), backend="vllm",
                 transform="probability")
    assert clf.score(_records(1)) == [0.75]  # label 1 of a binary classifier
    as_logit = metric("learned.classifier", model=str(model), backend="vllm")
    with pytest.raises(InputError, match="transform=probability"):
        as_logit.score(_records(1))
    clf.close()
    as_logit.close()


def test_embedding_cosine_on_a_pooling_engine(vllm, tmp_path) -> None:
    model = _model_dir(tmp_path / "emb", num_labels=1)
    cosine = metric("neural.embedding-cosine", model=str(model), backend="vllm")
    (value,) = cosine.score([Sample(item="1", system="s", output="abc", reference="abcdef")])
    u, v = np.array([3.0, 1.0]), np.array([6.0, 1.0])  # the fake's [len, 1] vectors
    assert value == pytest.approx(float(u @ v / np.linalg.norm(u) / np.linalg.norm(v)))
    assert vllm.ENGINES[0].calls[0]["method"] == "embed"
    cosine.close()


def test_transformers_learned_signatures_do_not_change(vllm) -> None:
    fields = metric("neural.embedding-cosine").signature_fields()
    assert "backend" not in fields and "tensor_parallel_size" not in fields
