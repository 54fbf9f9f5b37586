"""What answered a judge (issue 28, part 3): the API's system_fingerprint, the model name it
returned and the served checkpoint, kept beside each score in the store (not in the
signature), and the warnings of `score` and `runs` when it changes during a run or between
runs of one signature. Driven through a real loopback server (tests/fault_server.py) whose
fingerprint is set, switched after N answers, or changed between runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import column, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.engine.store import SCHEMA_VERSION, Store

REPLY = "Feedback: Clear. [RESULT] {score}"


def _spec(server: FaultServer) -> str:
    return (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
            "protocol=text,max_attempts=1")


def _fp(**fields: str) -> str:
    return json.dumps(fields, sort_keys=True)


def _stored(store: Path) -> dict[tuple[int, str | None], int]:
    with sqlite3.connect(store) as conn:
        rows = conn.execute("SELECT run_id, fingerprint, COUNT(*) FROM scores"
                            " WHERE metric = 'judge.rubric' GROUP BY 1, 2").fetchall()
    return {(run, fp): n for run, fp, n in rows}


def _score(data: Path, spec: str, store: Path, cache: Path, tmp_path: Path, *more: str):
    return run_cli("score", str(data), "-m", spec, "-o", str(tmp_path / "out.csv"),
                   "--store", str(store), "--cache", str(cache), "--workers", "1", *more,
                   cwd=tmp_path)


def test_a_fingerprint_is_kept_beside_each_score_and_not_in_the_signature(tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(4))
    with FaultServer("--fingerprint", "fp_a", "--served-model", "judge-2024-08-06",
                     reply=REPLY) as server:
        proc = _score(data, _spec(server), tmp_path / "a.db", tmp_path / "c", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    want = _fp(model="judge-2024-08-06", revision="judge", system_fingerprint="fp_a")
    assert _stored(tmp_path / "a.db") == {(1, want): 4}
    with sqlite3.connect(tmp_path / "a.db") as conn:
        signature, extra = conn.execute("SELECT signature, extra FROM scores LIMIT 1").fetchone()
    assert "fp_a" not in signature and "fingerprint" not in json.loads(extra)
    (run,) = json.loads(run_cli("runs", "--store", str(tmp_path / "a.db"), "--json").stdout)
    assert run["fingerprints"] == {column(_spec(server)): {want: 4}}
    assert run["warnings"] == []
    logs = json.loads(run_cli("logs", "--store", str(tmp_path / "a.db"), "--json").stdout)
    assert {json.dumps(e["extra"]["fingerprint"], sort_keys=True) for e in logs} == {want}


def test_a_change_mid_run_warns_on_stderr_and_in_runs(tmp_path):
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(5))
    with FaultServer("--fingerprint", "fp_a", "--fingerprint-after", "2=fp_b",
                     reply=REPLY) as server:
        spec = _spec(server)
        proc = _score(data, spec, tmp_path / "a.db", tmp_path / "c", tmp_path)
    assert proc.returncode == 0, proc.stderr
    a = _fp(model="judge", revision="judge", system_fingerprint="fp_a")
    b = _fp(model="judge", revision="judge", system_fingerprint="fp_b")
    assert _stored(tmp_path / "a.db") == {(1, a): 2, (1, b): 3}
    expected = (f"{column(spec)}: what answered changed during run 1: model=judge, "
                "revision=judge, system_fingerprint=fp_b (3 scores); model=judge, "
                "revision=judge, system_fingerprint=fp_a (2 scores)")
    assert f"warning: {expected}" in proc.stderr
    (run,) = json.loads(run_cli("runs", "--store", str(tmp_path / "a.db"), "--json").stdout)
    assert run["warnings"] == [expected]
    text = run_cli("runs", "--store", str(tmp_path / "a.db")).stdout
    assert f"warning: {expected}" in text


def test_a_change_between_runs_of_one_signature_warns_and_a_replay_does_not(tmp_path):
    records = summeval_records(8)
    first = write_jsonl(tmp_path / "first.jsonl", records[:4])
    second = write_jsonl(tmp_path / "second.jsonl", records[4:])
    store, cache = tmp_path / "a.db", tmp_path / "c"
    with FaultServer("--fingerprint", "fp_a", reply=REPLY) as server:
        spec = _spec(server)
        assert _score(first, spec, store, cache, tmp_path).returncode == 0
        server.post("/_fingerprint", {"system_fingerprint": "fp_b"})
        proc = _score(second, spec, store, cache, tmp_path)
        assert proc.returncode == 0, proc.stderr
        a = _fp(model="judge", revision="judge", system_fingerprint="fp_a")
        b = _fp(model="judge", revision="judge", system_fingerprint="fp_b")
        assert _stored(store) == {(1, a): 4, (2, b): 4}
        expected = (f"{column(spec)}: run 2 was answered by model=judge, revision=judge, "
                    "system_fingerprint=fp_b (4 scores), but run 1 of the same signature by "
                    "model=judge, revision=judge, system_fingerprint=fp_a (4 scores)")
        assert f"warning: {expected}" in proc.stderr
        runs = json.loads(run_cli("runs", "--store", str(store), "--json").stdout)
        assert [r["warnings"] for r in runs] == [[expected], []]
        # A replay from the judge cache keeps what answered then: no call, no warning.
        server.post("/_fingerprint", {"system_fingerprint": "fp_c"})
        replay = _score(first, spec, tmp_path / "b.db", cache, tmp_path)
        assert replay.returncode == 0 and "warning" not in replay.stderr
        assert "4 from the judge cache, 0 asked of a model" in replay.stderr
        assert _stored(tmp_path / "b.db") == {(1, a): 4}


def test_a_version_2_store_gains_the_column_and_keeps_its_rows(tmp_path):
    import judgebench.engine.store as store_module

    path = tmp_path / "v2.db"
    shutil.copyfile(Path(__file__).parent / "data" / "stores" / "main-1710a54.db", path)
    conn = sqlite3.connect(path, isolation_level=None)
    for statement in store_module.MIGRATION_V2:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 2")
    before = conn.execute("SELECT * FROM scores ORDER BY rowid").fetchall()
    conn.close()
    with Store(path, readonly=True) as store:
        assert store.kind == "v2"
    Store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (5,)
    columns = [r[1] for r in conn.execute("PRAGMA table_info(scores)")]
    assert columns[-1] == "fingerprint"
    after = conn.execute("SELECT * FROM scores ORDER BY rowid").fetchall()
    assert [row[:-1] for row in after] == before and {row[-1] for row in after} == {None}
    conn.close()


def test_litellm_and_openai_compat_read_what_answered(monkeypatch):
    from judgebench.plugin_api import Request, get_backend

    monkeypatch.setenv("JB_FP_KEY", "sk-fingerprint-test")

    with FaultServer("--fingerprint", "fp_x", "--served-model", "judge-snap") as server:
        for name, model in (("litellm", "openai/judge"), ("openai_compat", "judge")):
            b = get_backend(name, model=model, api_base=server.url, max_attempts=1,
                            api_key_env="JB_FP_KEY")
            b.identity()  # as every run does first: openai_compat asks GET /models there
            (r,) = b.generate([Request.chat(("user", "hello"), max_tokens=8)])
            assert r.ok, r.error
            assert r.system_fingerprint == "fp_x" and r.model == "judge-snap", name
            served = {"revision": "judge"} if name == "openai_compat" else {}
            assert r.fingerprint() == {"model": "judge-snap", "system_fingerprint": "fp_x",
                                       **served}
            b.close()
