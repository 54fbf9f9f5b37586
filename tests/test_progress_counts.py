"""What the progress line counts (judgebench.engine.progress_line), end to end: a command that
scores the same column in several runs (`bench` on a second suite, the audit's probes, each
in a run of its own) counts each run's samples from 0 against that run's total, so a count
never passes its total (issue 42: `769/350 samples`, `220/96`); a batch scored at once says
it is being scored while its count stands at 0; a step that moves no count says what it is.

Each command runs in a process of its own with its stderr on a pipe and a short progress
interval; `gate.words` (tests/gate_plugin.py) holds the run of interest at a gate until the
line it is waited for has come through the pipe: the tests wait on events, never on time."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from conftest import REPO
from suites_support import gz, info

from judgebench.engine import progress_line

PATIENCE_S = 300
GATE = Path(__file__).resolve().parent / "gate_plugin.py"
COUNT = re.compile(r"(\S+) (\d+)/(\d+) samples")


class Gated:
    """`judgebench -p tests/gate_plugin.py ARGS` in a process of its own, its `gate.words`
    score call number `call` held at a named pipe; its stderr read line by line."""

    def __init__(self, tmp_path: Path, call: int, *args: str) -> None:
        self.fifo = tmp_path / "gate.fifo"
        os.mkfifo(self.fifo)
        env = {**os.environ, progress_line.INTERVAL_ENV: "0.2", "GATE_FIFO": str(self.fifo),
               "GATE_CALL": str(call), "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "plugins"),
                                             env.get("PYTHONPATH", "")])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "judgebench.cli", "-p", str(GATE), *args], cwd=tmp_path,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern: str) -> re.Match[str]:
        """The first stderr line (from now on) that `pattern` matches in full."""
        while True:
            line = self.lines.get(timeout=PATIENCE_S)
            assert line is not None, "the command ended first:\n" + "\n".join(self.seen)
            self.seen.append(line)
            found = re.fullmatch(pattern, line)
            if found:
                return found

    def open_gate(self) -> None:
        """Let the held call go on (it is waiting: the pipe has its reader)."""
        descriptor = os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(descriptor)

    def finish(self) -> int:
        while (line := self.lines.get(timeout=PATIENCE_S)) is not None:
            self.seen.append(line)
        self.proc.wait(timeout=PATIENCE_S)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@contextlib.contextmanager
def gated(tmp_path: Path, call: int, *args: str) -> Iterator[Gated]:
    run = Gated(tmp_path, call, *args)
    try:
        yield run
    finally:
        run.kill()


def counts(lines: list[str], label: str) -> list[tuple[str, int, int]]:
    """(column, done, total) of every progress line of `label` (`judgebench bench`)."""
    return [(m.group(1), int(m.group(2)), int(m.group(3))) for line in lines
            if line.startswith(f"{label}: ") and (m := COUNT.search(line))]


def _suite(root: Path, name: str, rows: int) -> None:
    """A pointwise suite `root/name` of `rows` outputs of 1..rows words."""
    folder = root / name
    folder.mkdir(parents=True)
    samples = [{"item": f"i{k}", "system": "S", "output": " ".join(["word"] * (k + 1)),
                "reference": "word"} for k in range(rows)]
    human = [{"item": f"i{k}", "system": "S", "human.quality": float(k % 3)}
             for k in range(rows)]
    files = {}
    for file, data in (("samples.jsonl.gz", gz(samples)), ("human.jsonl.gz", gz(human))):
        (folder / file).write_bytes(data)
        files[file] = "sha256:" + hashlib.sha256(data).hexdigest()
    (folder / "suite.json").write_text(json.dumps({**info(files), "name": name}),
                                       encoding="utf-8")


def test_bench_counts_a_second_suite_from_zero_of_its_own_rows(tmp_path: Path) -> None:
    """The second suite's run is held at the gate: its line counts 0 of its 3 rows, its
    whole batch being scored (today's bug: the first suite's 6 carried over, `6/3`)."""
    _suite(tmp_path / "suites", "first", 6)
    _suite(tmp_path / "suites", "second", 3)
    with gated(tmp_path, 2, "bench", "gate.words", "--suite", "first,second", "--suite-path",
               str(tmp_path / "suites"), "--bootstrap", "0", "--store",
               str(tmp_path / "runs.db"), "--workers", "1") as run:
        held = run.wait_for(r"judgebench bench: (gate\.words \d+/3 samples.*), \d+ s")
        run.open_gate()
        assert run.finish() == 0, "\n".join(run.seen)
    assert held.group(1) == "gate.words 0/3 samples (3 being scored)"
    found = counts(run.seen, "judgebench bench")
    assert all(done <= total for _, done, total in found), found
    assert {total for _, _, total in found} <= {6, 3}


def test_the_audit_counts_each_probe_run_against_its_own_samples(tmp_path: Path) -> None:
    """The probes score the metric in three runs: the originals with every changed sample
    (66 here), then the 8 originals renamed (held at the gate), then in another order. Each
    counts its own (today's bug: `66/8`)."""
    rows, scores = [], []
    for item in range(4):
        for system in range(4):
            output = " ".join(["word"] * (3 + item + system)) + ". Another sentence here."
            rows.append({"item": f"i{item}", "system": f"S{system}", "output": output,
                         "reference": "word word word.", "input": "say words"})
            scores.append({"item": f"i{item}", "system": f"S{system}",
                           "gate.words": float(len(output.split())),
                           "human.q": float((item * 7 + system * 3) % 5 + 1)})
    pd.DataFrame(rows).to_json(tmp_path / "gen.jsonl", orient="records", lines=True)
    pd.DataFrame(scores).to_csv(tmp_path / "scores.csv", index=False)
    with gated(tmp_path, 2, "audit", "scores.csv", "--human", "human.q", "--samples",
               "gen.jsonl", "--probe", "gate.words", "--probe-items", "2", "--bootstrap",
               "0", "--resamples", "10", "--level", "system") as run:
        held = run.wait_for(r"judgebench audit: (gate\.words \d+/8 samples.*), \d+ s")
        run.open_gate()
        assert run.finish() == 0, "\n".join(run.seen)
    assert held.group(1) == "gate.words 0/8 samples (8 being scored)"
    found = counts(run.seen, "judgebench audit")
    assert all(done <= total for _, done, total in found), found


def test_a_step_that_moves_no_count_is_said_while_it_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`busy` (what a backend converting its model once says): the line names the step
    beside the count that stands still, and only while the step runs."""
    from test_progress_line import _Stream, watched

    monkeypatch.setenv(progress_line.INTERVAL_ENV, "0.05")
    stream = _Stream()
    with watched(stream):
        progress_line.counting("judge.rubric", 3)
        progress_line.working("judge.rubric", 3)
        with progress_line.busy("converting model.gguf, once"):
            stream.wait_for(r"^judgebench score: judge\.rubric 0/3 samples \(3 being scored\); "
                            r"converting model\.gguf, once, \d+ s$")
        progress_line.scored("judge.rubric", 2, failed=1)
        stream.wait_for(r"^judgebench score: judge\.rubric 2/3 samples \(1 being scored\), "
                        r"1 failed, \d+ s$")
