"""The progress line (judgebench.engine.progress_line): on a stderr that is not a terminal, a run
that has printed nothing there for an interval says what it is doing, then again after each
further interval of silence; nothing on a terminal, after `quiet()`, or with the interval off.

The end-to-end test holds a judge request in a real loopback server (tests/fault_server.py)
until the line has come through the pipe, then releases it: it waits on events, never on
time."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, run_cli, summeval_records, write_jsonl
from fault_server import FaultServer

from judgebench.engine import progress_line
from judgebench.errors import InputError

#: How long a test waits for an event that should come at once (a stuck run, not a slow one).
PATIENCE_S = 300


class _Stream:
    """A stderr that is not a terminal and tells a waiting test each time it is written."""

    def __init__(self, tty: bool = False) -> None:
        self.text = ""
        self.tty = tty
        self.written = threading.Condition()

    def write(self, text: str) -> int:
        with self.written:
            self.text += text
            self.written.notify_all()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self.tty

    def wait_for(self, pattern: str) -> re.Match[str]:
        with self.written:
            found = self.written.wait_for(lambda: re.search(pattern, self.text, re.M),
                                          timeout=PATIENCE_S)
        assert found, f"no line matching {pattern!r} in {self.text!r}"
        return found


@pytest.fixture
def stderr(monkeypatch: pytest.MonkeyPatch) -> _Stream:
    monkeypatch.setenv(progress_line.INTERVAL_ENV, "0.05")
    return _Stream()


@contextlib.contextmanager
def watched(stream: _Stream) -> Iterator[None]:
    """`progress_line.watching` with `stream` as sys.stderr (set here, in the test's body:
    pytest's capture sets sys.stderr anew when a test's call begins)."""
    saved, sys.stderr = sys.stderr, stream
    try:
        with progress_line.watching("judgebench score"):
            yield
    finally:
        sys.stderr = saved


def test_the_line_says_which_column_how_far_and_how_many_failed(stderr: _Stream) -> None:
    with watched(stderr):
        assert isinstance(sys.stderr, progress_line._Tracked)  # wrapped, to see every write
        progress_line.counting("judge.rubric", 10)
        progress_line.scored("judge.rubric", 3, failed=1)
        found = stderr.wait_for(r"^judgebench score: judge\.rubric 3/10 samples, 1 failed, "
                                r"(\d+) s$")
        assert int(found.group(1)) >= 0
        progress_line.doing("human.coherence pearson: lexical.bleu vs lexical.chrf")
        stderr.wait_for(r"^judgebench score: human\.coherence pearson: lexical\.bleu vs "
                        r"lexical\.chrf, \d+ s$")
    before = stderr.text
    progress_line.scored("judge.rubric", 1)  # nothing watched: nothing happens
    assert stderr.text == before


def test_a_long_column_is_cut_and_every_line_is_safe(stderr: _Stream) -> None:
    column = "judge.rubric:backend=openai_compat,model=judge,api_base=http://h/v1\x1b[2J"
    with watched(stderr):
        progress_line.counting(column, 4)
        progress_line.scoring(column)
        found = stderr.wait_for(r"^judgebench score: (\S+) 0/4 samples, \d+ s$")
    assert found.group(1) == column[:progress_line.COLUMN_CHARS - 3] + "..."
    assert "\x1b" not in stderr.text


def test_another_write_to_stderr_restarts_the_silence(stderr: _Stream) -> None:
    """The line comes only after an interval in which nothing was written: writes that keep
    coming hold it off (a long interval here, so none can lapse between two writes)."""
    os.environ[progress_line.INTERVAL_ENV] = "3600"
    with watched(stderr):
        for number in range(50):
            print(f"message {number}", file=sys.stderr)
    assert "judgebench score:" not in stderr.text
    assert stderr.text.count("message") == 50


def test_nothing_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(progress_line.INTERVAL_ENV, "0.05")
    terminal = _Stream(tty=True)
    with watched(terminal):
        assert sys.stderr is terminal and progress_line._watch is None


@pytest.mark.parametrize("value", ["0", "off", "OFF"])
def test_nothing_with_the_interval_off(stderr: _Stream, value: str) -> None:
    os.environ[progress_line.INTERVAL_ENV] = value
    assert progress_line.interval() is None
    with watched(stderr):
        assert progress_line._watch is None


def test_quiet_ends_the_watch(stderr: _Stream) -> None:
    with watched(stderr):
        watch = progress_line._watch
        assert watch is not None and watch.thread.is_alive()
        progress_line.quiet()
        assert not watch.thread.is_alive()


def test_the_interval_comes_from_one_constant_or_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(progress_line.INTERVAL_ENV, raising=False)
    assert progress_line.interval() == progress_line.INTERVAL_S == 10.0
    monkeypatch.setenv(progress_line.INTERVAL_ENV, " 2.5 ")
    assert progress_line.interval() == 2.5
    for bad in ("soon", "-1", "nan", "inf"):
        monkeypatch.setenv(progress_line.INTERVAL_ENV, bad)
        with pytest.raises(InputError, match=progress_line.INTERVAL_ENV):
            progress_line.interval()


def test_a_bad_interval_is_a_usage_error_naming_the_variable() -> None:
    proc = run_cli("metrics", env={progress_line.INTERVAL_ENV: "soon"})
    assert proc.returncode == 2
    assert f"{progress_line.INTERVAL_ENV}='soon'" in proc.stderr


def test_elapsed_reads_in_seconds_minutes_hours() -> None:
    assert [progress_line.elapsed(s) for s in (0.4, 41.9, 60, 725, 3600, 7385)] == [
        "0 s", "41 s", "1 min 0 s", "12 min 5 s", "1 h 0 min", "2 h 3 min"]


def _score(tmp_path: Path, data: Path, spec: str, interval: str) -> subprocess.Popen[str]:
    env = {**os.environ, progress_line.INTERVAL_ENV: interval, "OPENAI_API_KEY": "unused",
           "JUDGEBENCH_CACHE_DIR": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(REPO / "plugins"),
                                         env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [sys.executable, "-m", "judgebench.cli", "score", str(data), "-m", spec,
         "-o", str(tmp_path / "out.csv"), "--store", str(tmp_path / "runs.db"),
         "--cache", str(tmp_path / "cache.sqlite"), "--workers", "1", "--allow-failures"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)


def _lines(pipe: object) -> queue.Queue[str | None]:
    """The pipe's lines as they come (None at its end), read by a thread."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in pipe:  # type: ignore[attr-defined]
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return lines


def test_a_held_judge_call_gets_a_progress_line_on_a_pipe(tmp_path: Path) -> None:
    """The first judge call fails (HTTP 500, no retry), the second is held until the line
    that says so (the other two of the batch being scored) has come through the pipe;
    earlier lines (`running`, `0/3`: the failure not yet in) may come first, and each line
    only after a silence."""
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(3))
    held = re.compile(r"judgebench score: (\S+) 1/3 samples \(2 being scored\), 1 failed, "
                      r"\d+ s")
    any_line = re.compile(r"judgebench score: (running|\S+ [0-3]/3 samples"
                          r"( \([1-3] being scored\))?(, 1 failed)?), \d+ s")
    with FaultServer("--hang", str(PATIENCE_S)) as server:
        server.post("/_faults", {"next": ["500", "hold"]})
        spec = (f"judge.rubric:backend=openai_compat,model=judge,api_base={server.url},"
                "protocol=text,cache=false,max_attempts=1,concurrency=1")
        proc = _score(tmp_path, data, spec, "0.2")
        assert proc.stderr is not None
        lines, seen = _lines(proc.stderr), list[str]()
        while not seen or not held.fullmatch(seen[-1]):
            line = lines.get(timeout=PATIENCE_S)
            assert line is not None, "the run ended first:\n" + "\n".join(seen)
            seen.append(line)
        server.post("/_release", {})
        while (line := lines.get(timeout=PATIENCE_S)) is not None:
            seen.append(line)
        assert proc.wait(timeout=PATIENCE_S) == 0, "\n".join(seen)
    found = held.fullmatch(next(s for s in seen if held.fullmatch(s)))
    assert found and spec.startswith(found.group(1).removesuffix("..."))
    assert len(found.group(1)) == progress_line.COLUMN_CHARS  # a long spec, cut
    progress = [s for s in seen if s.startswith("judgebench score:")]
    assert all(any_line.fullmatch(s) for s in progress), progress
    assert "scored 3 rows" in "\n".join(seen) and "1 error" in "\n".join(seen)


def test_a_fast_run_prints_no_progress_line(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "in.jsonl", summeval_records(2))
    proc = _score(tmp_path, data, "lexical.bleu", "60")
    _, err = proc.communicate(timeout=PATIENCE_S)
    assert proc.returncode == 0, err
    assert "scored 2 rows" in err and "judgebench score:" not in err
