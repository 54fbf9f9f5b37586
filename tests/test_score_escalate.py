"""`score --escalate`: a cascade of two rubric judges on real loopback OpenAI-compatible
servers that count their calls. The outputs carry their script: `q=N` is the quality people
gave; an `easy` output is judged N by both judges on every draw; a `hard` one gets N on the
first draw and N+2 on the second from the cheap judge (its two draws disagree: confidence 0,
and their mean N+1 disagrees with people), N on both from the strong judge; a `hardest` one
gets N then N+2 from both. With alpha = delta = 0.2 (8 kept calibration rows needed), the cheap
judge keeps the easy rows, the strong judge the hard ones, and the hardest unlabelled rows
are the labelling queue."""

from __future__ import annotations

import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, run_cli, write_jsonl
from loopback_server import LoopbackHTTPServer

from judgebench.engine import labels as store_labels
from judgebench.services.escalate import escalate
from meta_eval.escalation import calibrate_threshold

SEED = 7
KINDS = ["easy"] * 20 + ["hard"] * 12 + ["hardest"] * 8
#: labelled rows of each kind: 12 easy, 8 hard, 2 hardest (22 labels of 40 rows)
LABELLED = set(range(12)) | set(range(20, 28)) | {32, 33}
PYTHONPATH = os.pathsep.join([str(REPO), str(REPO / "plugins")])


def _spread(kind: str, quality: int) -> dict[int, float]:
    """G-Eval's score probabilities: 0.96 on the quality of an easy row (0.01 on each other
    score), 0.2 on every score of the others."""
    if kind == "easy":
        return {s: 0.96 if s == quality else 0.01 for s in range(1, 6)}
    return dict.fromkeys(range(1, 6), 0.2)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        data = json.dumps({"object": "list", "data": [
            {"id": m, "object": "model"} for m in ("cheap", "strong")]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        row = int(user.split("row=")[1].split()[0])
        kind = KINDS[row]
        quality = 1 + row % 3
        first = body.get("seed") == SEED
        wobbles = kind == "hardest" or (kind == "hard" and body["model"] == "cheap")
        if self.server.hold is not None and body["model"] == self.server.hold:
            self.server.held.set()  # a request of the held model arrived: never answered
            self.server.release.wait()
            return
        score = quality if first or not wobbles else quality + 2
        with self.server.lock:
            self.server.rows[body["model"]].append(row)
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": f"Feedback: read. [RESULT] {score}"}}
        if body.get("logprobs"):  # G-Eval: the score token, sure on easy rows only
            choice["message"]["content"] = str(quality)
            choice["logprobs"] = {"content": [{
                "token": str(quality), "logprob": math.log(_spread(kind, quality)[quality]),
                "top_logprobs": [{"token": str(s), "logprob": math.log(p)}
                                 for s, p in _spread(kind, quality).items()]}]}
        data = json.dumps({
            "id": "chatcmpl-x", "object": "chat.completion", "model": body["model"],
            "choices": [choice],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Judges:
    """Both models on one loopback server; `rows[model]` lists the row of every answered
    call. `hold=MODEL`: that model's requests are never answered (`held` is set when the
    first arrives)."""

    def __init__(self, hold: str | None = None) -> None:
        self.hold = hold

    def __enter__(self) -> Judges:
        self.server = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.lock = threading.Lock()  # type: ignore[attr-defined]
        self.server.rows = {"cheap": [], "strong": []}  # type: ignore[attr-defined]
        self.server.hold = self.hold  # type: ignore[attr-defined]
        self.server.held = threading.Event()  # type: ignore[attr-defined]
        self.server.release = threading.Event()  # type: ignore[attr-defined]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def rows(self) -> dict[str, list[int]]:
        return {k: list(v) for k, v in self.server.rows.items()}  # type: ignore[attr-defined]

    def spec(self, model: str, price: float) -> str:
        return (f"judge.rubric:backend=openai_compat,model={model},protocol=text,"
                f"api_base=http://127.0.0.1:{self.server.server_address[1]}/v1,"
                f"api_key_env=JB_ESC_KEY,temperature=1,seed={SEED},price_in={price},"
                f"price_out={price}")

    def __exit__(self, *exc: Any) -> None:
        self.server.release.set()  # type: ignore[attr-defined]
        self.server.shutdown()
        self.server.server_close()


def _samples(tmp_path: Path, *, with_labels: bool = True) -> Path:
    records = []
    for row, kind in enumerate(KINDS):
        quality = 1 + row % 3
        record: dict[str, Any] = {"item": f"doc{row // 4}", "system": f"sys{row % 4}",
                                  "input": "Summarise.",
                                  "output": f"row={row} {kind} summary q={quality}"}
        if with_labels:
            record["human"] = {"quality": quality if row in LABELLED else None}
        records.append(record)
    return write_jsonl(tmp_path / "in.jsonl", records)


def _define(store: Path) -> None:
    store_labels.define_criterion(store, "quality", kind="scale", low=1, high=5)


def _args(judges: Judges, data: Path, store: Path, human: str, out: Path) -> list[str]:
    return ["score", str(data), "-m", judges.spec("cheap", 0.5), "--cascade",
            judges.spec("strong", 20.0), "--escalate", human, "--repeats", "2",
            "--alpha", "0.2", "--delta", "0.2", "--store", str(store), "-o", str(out)]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"JB_ESC_KEY": "sk-escalate-test", "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}


def _key(row: int) -> tuple[str, str]:
    return f"doc{row // 4}", f"sys{row % 4}"


def test_the_strong_judge_is_called_only_on_calibration_and_escalated_rows(
        tmp_path: Path, env: dict[str, str]) -> None:
    data, store, out = _samples(tmp_path), tmp_path / "runs.db", tmp_path / "t.csv"
    _define(store)
    with Judges() as judges:
        proc = run_cli(*_args(judges, data, store, "human.quality", out), "--json",
                       env=env)
        calls = judges.rows
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    easy_unlabelled = {r for r in range(20) if r not in LABELLED}
    escalated = {r for r in range(20, 40) if r not in LABELLED}
    assert Counter(calls["cheap"]) == dict.fromkeys(range(40), 2)  # every row, both draws
    assert Counter(calls["strong"]) == dict.fromkeys(LABELLED | escalated, 2)
    assert not easy_unlabelled & set(calls["strong"])
    cheap, strong = result["judges"]
    assert (cheap["threshold"], cheap["kept"], cheap["sent_on"]) == (1.0, 20, 20)
    assert (strong["threshold"], strong["kept"], strong["sent_on"]) == (1.0, 12, 8)
    assert (cheap["scored"], strong["scored"]) == (40, 32)
    assert strong["calibration_items"] == 10 and strong["calibration_kept"] == 8
    assert result["failed"] == 0 and result["decided"] == 32
    # the queue: the hardest rows nobody labelled, recorded in the store
    queue = {_key(r) for r in range(34, 40)}
    assert {(q["item"], q["system"]) for q in result["queue"]["items"]} == queue
    sample = store_labels.get_sample(store, result["queue"]["sample_id"])
    assert sample.strategy == "escalate" and sample.criterion == "quality"
    assert {(s.item, s.system) for s in sample.items} == queue
    assert {s.inclusion_probability for s in sample.items} == {1.0}
    # the thresholds are meta_eval's on the calibration rows each judge faced
    table = pd.read_csv(out)
    cheap_col = [c for c in table.columns if "model=cheap" in c and c.endswith(".confidence")]
    labelled = table["human.quality"].notna().to_numpy()
    verdict = table[cheap_col[0].removesuffix(".confidence")].to_numpy()
    agree = (verdict.round() == table["human.quality"].to_numpy())[labelled]
    direct = calibrate_threshold(confidence=table[cheap_col[0]].to_numpy()[labelled],
                                 agree=agree, alpha=0.2, delta=0.2)
    assert direct.threshold == cheap["threshold"] and direct.kept == cheap["calibration_kept"]
    assert (table["decided_by"].fillna("") != "").sum() == 32
    # the cost paid, from the store's recorded costs, against the strong judge on every row
    with sqlite3.connect(store) as conn:
        paid = dict(conn.execute("SELECT signature, SUM(cost_usd) FROM scores GROUP BY "
                                 "signature").fetchall())
    cheap_paid, strong_paid = (paid[cheap["signature"]], paid[strong["signature"]])
    cost = result["cost"]
    assert math.isclose(cost["cascade_per_item_usd"], (cheap_paid + strong_paid) / 40,
                        rel_tol=1e-12)
    assert math.isclose(cost["strongest_per_item_usd"], strong_paid / 32, rel_tol=1e-12)
    assert math.isclose(cost["saving"], 1 - (cheap_paid + strong_paid) / (strong_paid / 32 * 40),
                        rel_tol=1e-12)
    # `judgebench escalate` on the table written chooses the same thresholds (its Python
    # API: the command's --cascade splits at the commas these spec-named columns hold)
    cols = [c for c in table.columns if c.endswith(".confidence")]
    again = escalate(out, judge=cols[0].removesuffix(".confidence"),
                     confidence_column=cols[0],
                     cascade=[(cols[1].removesuffix(".confidence"), cols[1])],
                     human="human.quality", alpha=0.2, delta=0.2)
    assert [(s.threshold, s.kept) for s in again.stages] == [(1.0, 20), (1.0, 12)]
    assert again.queue_labelled == 2 and len(again.queue) == 8


def test_the_text_report_and_a_judge_that_fails_exit_3(tmp_path: Path,
                                                        env: dict[str, str]) -> None:
    data, store, out = _samples(tmp_path), tmp_path / "runs.db", tmp_path / "t.csv"
    _define(store)
    with Judges() as judges:
        args = _args(judges, data, store, "human.quality", out)
        args[args.index("--cascade") + 1] += ",min=1,max=2"  # 3 and above: parse errors
        proc = run_cli(*args, env=env)
    assert proc.returncode == 3, proc.stderr
    # the strong judge's answers of 3 and above do not parse: every draw of the rows of
    # quality 3 (one in three) and the second draw (+2) of its other wobbling rows fail
    asked = Counter(judges.rows["strong"])
    failing = sum(n for r, n in asked.items() if 1 + r % 3 == 3)
    failing += sum(1 for r in asked if KINDS[r] == "hardest" and 1 + r % 3 != 3)
    without = sum(1 for r in asked if 1 + r % 3 == 3)
    assert (failing, without) == (27, 11)
    assert (f"FAILED: {failing} failed score(s); {without} row(s) without a verdict"
            in proc.stdout), proc.stdout
    assert "sent on, never kept" in proc.stdout and "parse_error" in proc.stdout
    assert "threshold" in proc.stdout and "labelling queue" in proc.stdout
    table = pd.read_csv(out)
    strong = next(c for c in table.columns
                  if "model=strong" in c and not c.endswith(".confidence"))
    quality_3 = table[[1 + r % 3 == 3 for r in range(40)]]
    assert quality_3[strong].isna().all()  # a failure is a missing cell, never a kept 0
    assert not (quality_3["decided_by"].fillna("") == strong).any()


def test_nothing_is_paid_before_the_labels_and_the_queue_criterion_are_known(
        tmp_path: Path, env: dict[str, str]) -> None:
    data, store, out = _samples(tmp_path), tmp_path / "runs.db", tmp_path / "t.csv"
    with Judges() as judges:
        undefined = run_cli(*_args(judges, data, store, "human.quality", out), env=env)
        _define(store)
        bare = tmp_path / "bare"
        bare.mkdir()
        unlabelled = run_cli(*_args(judges, _samples(bare, with_labels=False), store,
                                    "human.quality", out), env=env)
        no_repeats = run_cli(*[a for a in _args(judges, data, store, "human.quality", out)
                               if a not in ("--repeats", "2")], env=env)
        args = _args(judges, data, store, "human.quality", out)
        limited = run_cli(*args, "--limit", "5", env=env)
        no_output = run_cli(*args[:-2], env=env)
        where = args.index("--escalate")
        no_escalate = run_cli(*args[:where], *args[where + 2:], env=env)
        calls = judges.rows
    assert limited.returncode == 2 and "leave out --limit" in limited.stderr
    assert no_output.returncode == 2 and "give -o" in no_output.stderr
    assert no_escalate.returncode == 2 and "go with --escalate HUMAN" in no_escalate.stderr
    assert undefined.returncode == 2 and "does not define" in undefined.stderr
    assert unlabelled.returncode == 2 and "no row has a label" in unlabelled.stderr
    assert no_repeats.returncode == 2 and "--repeats K with K >= 2" in no_repeats.stderr
    assert calls == {"cheap": [], "strong": []} and not out.exists()


def test_a_run_killed_in_the_strong_judge_resumes_without_paying_the_cheap_one_again(
        tmp_path: Path, env: dict[str, str]) -> None:
    data, store, out = _samples(tmp_path, with_labels=False), tmp_path / "runs.db", \
        tmp_path / "t.csv"
    _define(store)
    store_labels.save_labels(store, [store_labels.NewLabel(
        "quality", "ann", *_key(r), 1 + r % 3) for r in sorted(LABELLED)])
    with Judges(hold="strong") as judges:
        args = [*_args(judges, data, store, "store:quality", out), "--resume"]
        proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args],
                                env={**os.environ, **env, "PYTHONPATH": PYTHONPATH},
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert judges.server.held.wait(timeout=120), proc.stderr  # type: ignore[attr-defined]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        first = judges.rows
        judges.server.hold = None  # type: ignore[attr-defined]
        judges.server.release.set()  # type: ignore[attr-defined]
        resumed = run_cli(*args, "--json", env=env)
        again = judges.rows
    assert first["strong"] == [] and len(first["cheap"]) == 80
    assert resumed.returncode == 0, resumed.stderr
    assert again["cheap"] == first["cheap"]  # the store holds every cheap draw: none paid twice
    again["strong"] = again["strong"][len(first["strong"]):]
    escalated = {r for r in range(20, 40) if r not in LABELLED}
    assert Counter(again["strong"]) == dict.fromkeys(LABELLED | escalated, 2)
    result = json.loads(resumed.stdout)
    assert result["queue"]["count"] == 6 and result["human"] == "store:quality"


def test_the_probability_of_the_verdict_is_a_g_eval_judges_confidence(
        tmp_path: Path, env: dict[str, str]) -> None:
    data, store, out = _samples(tmp_path), tmp_path / "runs.db", tmp_path / "t.csv"
    _define(store)
    with Judges() as judges:
        spec = judges.spec("cheap", 0.5).replace("judge.rubric", "judge.geval").replace(
            ",protocol=text", "").replace(",temperature=1", "") + ",steps=1. Rate it."
        proc = run_cli("score", str(data), "-m", spec, "--escalate", "quality",
                       "--confidence", "probs", "--alpha", "0.2", "--delta", "0.2",
                       "--store", str(store), "-o", str(out), "--json", env=env)
        calls = judges.rows
    assert proc.returncode == 0, proc.stderr
    assert Counter(calls["cheap"]) == dict.fromkeys(range(40), 1)
    result = json.loads(proc.stdout)
    (judge,) = result["judges"]
    table = pd.read_csv(out)
    confidence = table[judge["confidence_column"]].to_numpy()
    # the probability G-Eval put on the score its weighted mean rounds to
    sure = [_spread(KINDS[r], 1 + r % 3) for r in range(40)]
    for r in range(40):
        mean = sum(s * p for s, p in sure[r].items())
        assert table[judge["judge"]][r] == pytest.approx(mean, abs=1e-12)
        assert confidence[r] == pytest.approx(sure[r][int(mean + 0.5)], abs=1e-12)
    assert judge["threshold"] == pytest.approx(0.96) and judge["kept"] == 20
    assert result["queue"]["count"] == 10  # the unlabelled hard and hardest rows
