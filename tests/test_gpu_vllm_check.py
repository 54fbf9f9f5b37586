"""benchmarks/gpu_vllm_check.py imports, documents itself and fails clearly without vllm (the
GPU run itself happens on a GPU machine; benchmarks/README.md says where it stands)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "gpu_vllm_check.py"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'plugins'}"}


def test_help_documents_every_check_without_vllm() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--help"], env=_env(),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    for words in ("--model", "--out", "vllm_server", "1e-3", "within 20% of raw",
                  "structured output never fails to parse", "--classifier-model"):
        assert words in run.stdout, words


def test_it_imports_without_vllm() -> None:
    spec = importlib.util.spec_from_file_location("gpu_vllm_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    before = {name for name in sys.modules if name.split(".")[0] in ("vllm", "torch")}
    spec.loader.exec_module(module)
    after = {name for name in sys.modules if name.split(".")[0] in ("vllm", "torch")}
    assert after == before  # nothing heavy is imported until it runs
    assert module.parse_args(["--model", "/m"]).tolerance == 1e-3


def test_without_vllm_it_writes_why_and_exits_2(tmp_path) -> None:
    out = tmp_path / "r.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--model", "/nonexistent", "--out",
                          str(out)], env=_env(), capture_output=True, text=True, timeout=60)
    try:
        import vllm  # noqa: F401
    except ImportError:
        assert run.returncode == 2, run.stderr
        assert "vllm is not importable" in json.loads(out.read_text())["error"]


@pytest.mark.slow
def test_every_check_runs_through_on_the_fake_engine(tmp_path, default_model_store) -> None:
    """The script's own code paths, on tests/fake_vllm and the fake server (whose fixed
    answers fail the checks: what matters is that each one runs and is recorded), with the
    session's converted SmolLM2 as the model."""
    small_lm = sorted(default_model_store.glob("SmolLM2-135M-Instruct*/config.json"))
    assert small_lm, f"no converted SmolLM2 in {default_model_store}"
    out = tmp_path / "r.json"
    tests = REPO / "tests"
    env = {**_env(), "PYTHONPATH": _env()["PYTHONPATH"] + os.pathsep + str(tests / "fake_vllm"),
           "JUDGEBENCH_VLLM_SERVE": f"{sys.executable} {tests / 'fake_vllm_server.py'} serve",
           "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, str(SCRIPT), "--model", str(small_lm[0].parent),
                          "--samples", "4", "--n", "8", "--repeats", "1", "--out", str(out)],
                         env=env, capture_output=True, text=True, timeout=300)
    report = json.loads(out.read_text())
    checks = report["checks"]
    assert set(checks) == {"judges.vllm", "judges.vllm_server", "likelihood", "throughput"}
    assert run.returncode == 1  # the fake's answers are not a model's
    for side in ("judges.vllm", "judges.vllm_server"):
        judges = checks[side]["judges"]
        assert {"judge.rubric", "judge.geval", "judge.pairwise", "judge.reference",
                "judge.panel", "judge.dag"} <= set(judges)
        assert all("error" not in j for j in judges.values()), judges
        assert judges["judge.rubric"]["ok"] and judges["judge.rubric"]["protocol"] == "json"
    assert "neural.likelihood" in checks["likelihood"] and "traceback" not in checks["likelihood"]
    assert checks["throughput"]["parse_errors"] == 0
