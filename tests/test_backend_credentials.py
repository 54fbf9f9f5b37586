"""What a backend can know before its first call is checked then: `backend=litellm` whose
provider needs a key the environment lacks stops `score` and `bench` with exit 2 naming the
variable, before any work (no store, no request reaches the loopback server), as a missing
extra does; a dry run, `api_key_env` and a provider that needs no key go on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import EXAMPLE, run_cli
from fault_server import FaultServer
from suites_support import plugin_args, plugin_env

REPLY = "Feedback: ok. [RESULT] {score}"


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "cache"))


def judge(server: FaultServer, model: str = "openai/judge", extra: str = "") -> str:
    return (f"judge.rubric:backend=litellm,model={model},api_base={server.url},"
            f"protocol=text,max_attempts=1{extra}")


def test_a_missing_key_stops_score_before_any_call(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    with FaultServer(reply=REPLY, log=tmp_path / "served.jsonl") as server:
        proc = run_cli("score", str(EXAMPLE), "--limit", "3", "-m", "lexical.chrf", "-m",
                       judge(server), "-o", str(tmp_path / "s.csv"), "--store", str(store))
        assert server.served() == []
    assert proc.returncode == 2, proc.stderr
    assert ("model openai/judge needs $OPENAI_API_KEY, which is not set: set it, or name the "
            "variable that holds the key with api_key_env=VAR") in proc.stderr
    assert not store.exists() and not (tmp_path / "s.csv").exists()


def test_a_missing_key_stops_bench_before_any_work(tmp_path: Path) -> None:
    with FaultServer(reply=REPLY, log=tmp_path / "served.jsonl") as server:
        spec = (f"judge.pairwise:backend=litellm,model=openai/judge,api_base={server.url},"
                "max_attempts=1")
        proc = run_cli(*plugin_args(), "bench", spec, "--suite", "llmbar", "--limit", "4",
                       "--store", str(tmp_path / "runs.db"), "--workdir",
                       str(tmp_path / "work"), env=plugin_env())
        assert server.served() == []
    assert proc.returncode == 2 and "$OPENAI_API_KEY" in proc.stderr
    assert not (tmp_path / "runs.db").exists() and not (tmp_path / "work").exists()


def test_what_needs_no_key_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dry run makes no call; `api_key_env` names the key (the server checks it); a vLLM
    server (`hosted_vllm/`) takes none."""
    with FaultServer("--require-key-env", "JB_CRED_KEY", reply=REPLY,
                     env={"JB_CRED_KEY": "sk-cred-test"},
                     log=tmp_path / "keyed.jsonl") as keyed:
        dry = run_cli("score", str(EXAMPLE), "--limit", "3", "-m", judge(keyed), "--dry-run",
                      "-o", str(tmp_path / "dry.csv"), "--store", str(tmp_path / "dry.db"))
        assert dry.returncode == 0, dry.stderr
        assert keyed.served() == []
        monkeypatch.setenv("JB_CRED_KEY", "sk-cred-test")
        named = run_cli("score", str(EXAMPLE), "--limit", "3", "-m",
                        judge(keyed, extra=",api_key_env=JB_CRED_KEY"), "-o",
                        str(tmp_path / "named.csv"), "--store", str(tmp_path / "named.db"),
                        "--json")
        assert named.returncode == 0, named.stderr
        assert len(keyed.served()) == 3
    with FaultServer(reply=REPLY, log=tmp_path / "vllm.jsonl") as vllm:
        served = run_cli("score", str(EXAMPLE), "--limit", "3", "-m",
                         judge(vllm, model="hosted_vllm/judge"), "-o",
                         str(tmp_path / "vllm.csv"), "--store", str(tmp_path / "vllm.db"))
        assert served.returncode == 0, served.stderr
        assert len(vllm.served()) == 3
    assert json.loads((tmp_path / "vllm.csv.meta.json").read_text())["columns"]
