"""backend=vllm_server's lifecycle, with real processes: judgebench starts a server (here
tests/fake_vllm_server.py in place of ``vllm serve``, through $JUDGEBENCH_VLLM_SERVE), waits
for it to be healthy, shares it between the metrics of a run, and stops it at the end, on
Ctrl-C and on an error; a server that crashes or never becomes healthy is a clear error with
the end of its output, and no process is left behind. Its API key stays in its environment.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, run_cli, summeval_records, write_jsonl
from fake_vllm_server import char_logprob

from judgebench.backends import get_backend
from judgebench.errors import JudgebenchError
from judgebench.models import Sample
from judgebench.plugins import build_host

FAKE_SERVER = Path(__file__).parent / "fake_vllm_server.py"
ROOT = "/ckpt/judge-7b-instruct"


@pytest.fixture
def log(monkeypatch, tmp_path) -> Path:
    path = tmp_path / "server.jsonl"
    scratch = tmp_path / "tmp"  # where servers keep their output while they run
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setenv("JUDGEBENCH_VLLM_SERVE", shlex.join([sys.executable, str(FAKE_SERVER),
                                                            "serve"]))
    monkeypatch.setenv("FAKE_VLLM_LOG", str(path))
    monkeypatch.setenv("FAKE_VLLM_ROOT", ROOT)
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    yield path
    from judgebench_backends.vllm_server import servers

    assert len(servers) == 0, "a server outlived the metrics that held it"
    assert list(scratch.glob("judgebench-vllm-*")) == [], "a server's output was left behind"


def starts(log: Path) -> list[dict]:
    if not log.exists():
        return []
    return [e for e in map(json.loads, log.read_text().splitlines()) if "argv" in e]


def requests(log: Path, path: str) -> list[dict]:
    return [e for e in map(json.loads, log.read_text().splitlines()) if e.get("path") == path]


def gone(pid: int, within_s: float = 10.0) -> bool:
    """The process has exited (a zombie awaiting its reaper counts as exited)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return True
        if "\nState:\tZ" in state:
            return True
        time.sleep(0.05)
    return False


def spec(metric: str = "judge.rubric", **options: str) -> str:
    opts = {"backend": "vllm_server", "model": "/models/judge", "criterion": "coherence",
            **options}
    return metric + ":" + ",".join(f"{k}={v}" for k, v in opts.items())


def test_starts_waits_for_health_scores_and_stops_at_the_end(log, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    result = run_cli("score", str(data), "-m", spec(tensor_parallel_size="2",
                                                    max_model_len="2048", enforce_eager="true"),
                     "-o", str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"))
    assert result.returncode == 0, result.stderr
    (start,) = starts(log)
    argv = start["argv"]
    assert argv[:2] == ["serve", "/models/judge"] and "--enforce-eager" in argv
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--max-model-len") + 1] == "2048"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    key = start["api_key"]
    assert key and key not in " ".join(argv)  # in the child's environment only
    assert len(requests(log, "/v1/chat/completions")) == 3
    assert gone(start["pid"])
    table = (tmp_path / "out.csv").read_text()
    assert table.count(",4.0") == 3
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))
    assert f"served:{ROOT}".encode() in stored and b"vllm:0.11.0-fake" in stored
    cached = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    for place in (stored, cached, table.encode(), (result.stdout + result.stderr).encode()):
        assert key.encode() not in place


def test_two_metrics_naming_the_same_model_share_one_server(log, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    result = run_cli("score", str(data), "-m", spec(), "-m", spec(criterion="fluency"),
                     "-m", spec(max_model_len="1024"), "-o", str(tmp_path / "out.csv"),
                     "--store", str(tmp_path / "runs.db"))
    assert result.returncode == 0, result.stderr
    started = starts(log)
    assert len(started) == 2  # both criteria share; other options are another server
    assert sorted("--max-model-len" in s["argv"] for s in started) == [False, True]
    assert all(gone(s["pid"]) for s in started)


def test_a_dry_run_counts_tokens_with_the_server_and_makes_no_call(log, tmp_path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    result = run_cli("score", str(data), "-m", spec(), "--dry-run", "--json",
                     "--store", str(tmp_path / "runs.db"))
    assert result.returncode == 0, result.stderr
    (start,) = starts(log)
    assert len(requests(log, "/tokenize")) >= 2
    assert requests(log, "/v1/chat/completions") == []
    assert gone(start["pid"])


def _wait_for(predicate, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'plugins'}", **extra}


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_mid_run_stops_the_server(log, tmp_path, stop) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    run = subprocess.Popen(
        [sys.executable, "-m", "judgebench.cli", "score", str(data), "-m", spec(),
         "--store", str(tmp_path / "runs.db"), "-o", str(tmp_path / "out.csv")],
        env=_env(FAKE_VLLM_LATENCY_S="60"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert _wait_for(lambda: log.exists() and requests(log, "/v1/chat/completions"), 60), \
            "the run never reached the server"
        (start,) = starts(log)
        run.send_signal(stop)
        run.wait(30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode != 0
    assert gone(start["pid"]), f"{stop.name} left the server running"
    assert start["api_key"].encode() not in run.stderr.read() + run.stdout.read()


SCRIPT = """
import sys
from judgebench.backends import get_backend
backend = get_backend("vllm_server", model="/models/judge")
backend.ensure_started()
print(backend.server.process.pid, flush=True)
raise RuntimeError("the run failed")
"""


def test_an_error_after_the_start_stops_the_server(log, tmp_path) -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT], env=_env(), capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 1 and "the run failed" in run.stderr
    (start,) = starts(log)
    assert int(run.stdout.split()[0]) == start["pid"]
    assert gone(start["pid"]), "an uncaught error left the server running"


def test_a_server_that_never_becomes_healthy_is_a_clear_error(log, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_MODE", "never_healthy")
    backend = get_backend("vllm_server", model="/models/judge", startup_timeout_s=1.5)
    with pytest.raises(JudgebenchError, match=r"not healthy after 1\.5s") as error:
        backend.ensure_started()
    assert "INFO fake vllm serving /models/judge" in str(error.value)  # its output's tail
    (start,) = starts(log)
    assert start["api_key"] not in str(error.value)
    assert gone(start["pid"], within_s=5), "the unhealthy server was left running"


def test_a_server_that_exits_quotes_its_output(log, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_MODE", "crash")
    backend = get_backend("vllm_server", model="/models/judge")
    with pytest.raises(JudgebenchError, match="exited with status 3") as error:
        backend.ensure_started()
    assert "CUDA out of memory (fake)" in str(error.value)


def test_a_command_that_does_not_exist_says_what_to_install(log) -> None:
    backend = get_backend("vllm_server", model="/m", command="/nonexistent/vllm serve")
    with pytest.raises(JudgebenchError, match="install vllm"):
        backend.ensure_started()


def test_likelihood_and_lora_through_the_managed_server(log, tmp_path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"r": 16}')
    likelihood = build_host().metric("neural.likelihood").build(
        backend="vllm_server", model="/models/lm", given="none", lora=str(adapter),
        max_model_len=512)
    samples = [Sample(**r) for r in summeval_records(2)]
    values = likelihood.score(samples)
    for sample, value in zip(samples, values, strict=True):
        scored = sample.output[1:]  # nothing conditions the first token
        assert value == pytest.approx(sum(map(char_logprob, scored)) / len(scored))
    (start,) = starts(log)
    argv = start["argv"]
    assert "--enable-lora" in argv and argv[argv.index("--max-lora-rank") + 1] == "64"
    (loaded,) = [r["body"] for r in requests(log, "/v1/load_lora_adapter")]
    assert loaded["lora_path"] == str(adapter.resolve())
    assert {r["body"]["model"] for r in requests(log, "/v1/completions")} == {
        loaded["lora_name"]}
    fields = likelihood.signature().fields
    assert fields["served"] == str(adapter.resolve())  # /v1/models names the adapter
    assert len(fields["lora"]) == 16 and fields["vllm"] == "0.11.0-fake"
    assert fields["batch_invariant"] == "off" and fields["max_model_len"] == "512"
    likelihood.close()
    assert gone(start["pid"])


def test_api_base_is_refused_it_makes_its_own(log) -> None:
    from judgebench.errors import InputError

    with pytest.raises(InputError, match="starts its own server"):
        get_backend("vllm_server", model="/m", api_key_env="HOME")


def test_learned_metrics_on_a_managed_pooling_server(log, tmp_path) -> None:
    model = tmp_path / "rm"
    model.mkdir()
    (model / "config.json").write_text('{"num_labels": 1}')
    (model / "model.safetensors").write_bytes(b"weights")
    samples = [Sample(item="1", system="s", output="abcd", input="xy", reference="abcdef")]
    host = build_host()
    reward = host.metric("learned.classifier").build(model=str(model), backend="vllm_server")
    cross = host.metric("learned.classifier").build(
        model=str(model), backend="vllm_server", pair="input", transform="probability")
    cosine = host.metric("neural.embedding-cosine").build(model=str(model),
                                                            backend="vllm_server")
    assert reward.score(samples) == [4.0]  # the fake's /pooling: the text's length
    assert cross.score(samples) == [pytest.approx(2 / 6)]  # its /score: len(a)/(len(a)+len(b))
    (value,) = cosine.score(samples)
    assert value == pytest.approx((4 * 6 + 1) / ((17 ** 0.5) * (37 ** 0.5)))
    (start,) = starts(log)  # one server for the three metrics
    assert start["argv"][start["argv"].index("--runner") + 1] == "pooling"
    assert requests(log, "/pooling") and requests(log, "/score")
    assert requests(log, "/v1/embeddings")
    assert reward.signature().fields["backend"] == "vllm_server"
    for m in (reward, cross, cosine):
        m.close()
    assert gone(start["pid"])


def test_adapters_of_one_base_model_share_its_server(log, tmp_path) -> None:
    paths = []
    for name, rank in (("a", 8), ("b", 32)):
        path = tmp_path / name
        path.mkdir()
        (path / "adapter_config.json").write_text(f'{{"r": {rank}}}')
        (path / "adapter_model.safetensors").write_bytes(name.encode())
        paths.append(path)
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    result = run_cli("score", str(data), "-m", spec(lora=str(paths[0])),
                     "-m", spec(lora=str(paths[1])), "-o", str(tmp_path / "out.csv"),
                     "--store", str(tmp_path / "runs.db"))
    assert result.returncode == 0, result.stderr
    (start,) = starts(log)  # one server, both adapters loaded into it
    loaded = {r["body"]["lora_path"]: r["body"]["lora_name"]
              for r in requests(log, "/v1/load_lora_adapter")}
    assert set(loaded) == {str(p.resolve()) for p in paths}
    models = {r["body"]["model"] for r in requests(log, "/v1/chat/completions")}
    assert models == set(loaded.values()) and len(models) == 2
    assert gone(start["pid"])


def test_a_server_that_ignores_sigterm_is_killed(log, monkeypatch) -> None:
    from judgebench_backends import vllm_server

    monkeypatch.setenv("FAKE_VLLM_MODE", "ignore_term")
    monkeypatch.setattr(vllm_server, "STOP_GRACE_S", 0.5)
    backend = get_backend("vllm_server", model="/models/judge")
    process = backend.ensure_started().process
    assert process is not None
    started = time.monotonic()
    backend.close()
    assert process.returncode == -signal.SIGKILL  # terminate, wait, then kill
    assert time.monotonic() - started < 5


def test_the_cache_key_names_no_port_and_the_engine_options(log) -> None:
    """Each start takes a free port: the judge cache's key names the server's options, not
    its address, so a rerun's new server finds the answers the last one gave."""
    keys = []
    for _ in range(2):
        backend = get_backend("vllm_server", model="/models/judge", startup_timeout_s=60)
        try:
            identity = backend.cache_identity()
            keys.append(identity)
        finally:
            backend.close()
    ports = [e["argv"][e["argv"].index("--port") + 1] for e in starts(log)]
    assert len(ports) == 2 and not any(port in str(keys) for port in ports)
    assert keys[0] == keys[1] and "api_base" not in keys[0]
    assert not any(name.startswith("option.") for name in keys[0])
    quantized = get_backend("vllm_server", model="/models/judge", quantization="fp8")
    try:
        assert quantized.cache_identity()["option.quantization"] == "fp8"
    finally:
        quantized.close()
