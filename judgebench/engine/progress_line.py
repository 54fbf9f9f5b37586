"""One line of what a command is doing, on a stderr that is not a terminal (a CI log, a file,
a pipe: no progress bar there), once nothing has been printed on it for `INTERVAL_S`
seconds, then again after each further interval of silence:

    judgebench score: judge.rubric 120/500 samples (16 being scored), 2 failed, 41 s

(the batch being scored now, and the column's failures, only when there are some). The counts
are the current run's: a command that runs the same column again (`bench` on a second
suite, the audit's probes) starts it again from 0 of that run's samples, so a count never
passes its total.

The `judgebench` group watches every command it runs (`watching`): stderr is wrapped so that
every write there counts as a sign of life, and a thread prints the line when there has been
none for an interval. The work reports what it is doing through the module's functions
(`counting`, `scoring`, `working`, `scored`, `doing`, `busy`), which do nothing when no
command is watched (the Python API, a terminal), so the runner, the services and the plugins
call them unconditionally. On a terminal nothing is watched: tqdm's bar is there. `quiet()`
ends the watch of the command running now (`score --no-progress`).

`JUDGEBENCH_PROGRESS_INTERVAL` (seconds, > 0; `0` or `off`: never) overrides `INTERVAL_S`.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, TextIO

from judgebench.display import safe
from judgebench.errors import InputError

#: Seconds of silence on stderr before the line is printed.
INTERVAL_S = 10.0
#: The environment variable that overrides `INTERVAL_S` (`0` or `off`: no line).
INTERVAL_ENV = "JUDGEBENCH_PROGRESS_INTERVAL"
#: A longer column name (a spec with its options) is cut to this many characters.
COLUMN_CHARS = 48


def interval() -> float | None:
    """The interval in seconds: `INTERVAL_S`, or `INTERVAL_ENV`'s; None: no line."""
    text = os.environ.get(INTERVAL_ENV, "").strip()
    if not text:
        return INTERVAL_S
    if text.lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise InputError(f"environment variable {INTERVAL_ENV}={text!r}: give seconds (a "
                         "number > 0), or 0 or off for no progress line")
    return value or None


class _Activity:
    """What the watched command is doing now; written by the work, read by the watch thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.what = "running"
        self.column: str | None = None  # when the work is scoring a column's samples
        self.done: dict[str, int] = {}
        self.total: dict[str, int] = {}
        self.failed: dict[str, int] = {}
        self.under_way: dict[str, int] = {}  # the samples of the batch being scored now
        self.notes: list[str] = []  # `busy` steps under way, innermost last

    def describe(self) -> str:
        with self.lock:
            column = self.column
            note = f"; {self.notes[-1]}" if self.notes else ""
            if column is None:
                return self.what + note
            shown = column if len(column) <= COLUMN_CHARS else column[:COLUMN_CHARS - 3] + "..."
            under_way = self.under_way.get(column, 0)
            batch = f" ({under_way} being scored)" if under_way else ""
            failed = self.failed.get(column, 0)
            return (f"{shown} {self.done.get(column, 0)}/{self.total.get(column, '?')} "
                    f"samples{batch}{', ' + str(failed) + ' failed' if failed else ''}{note}")


class _Tracked:
    """A text stream that remembers when it was last written to."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.last = time.monotonic()
        self.lock = threading.RLock()  # a write that writes again (a warning) must not block

    def write(self, text: str) -> int:
        with self.lock:
            if text:
                self.last = time.monotonic()
            return self.stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _Watch:
    def __init__(self, label: str, seconds: float, tracked: _Tracked) -> None:
        self.label = label
        self.seconds = seconds
        self.tracked = tracked
        self.activity = _Activity()
        self.began = time.monotonic()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="judgebench-progress-line",
                                       daemon=True)

    def _run(self) -> None:
        while True:
            wait = self.seconds - (time.monotonic() - self.tracked.last)
            if wait > 0:
                if self.stopped.wait(wait):
                    return
                continue
            line = safe(f"{self.label}: {self.activity.describe()}, "
                        f"{elapsed(time.monotonic() - self.began)}") + "\n"
            try:
                self.tracked.write(line)
                self.tracked.flush()
            except (OSError, ValueError):  # stderr closed under us: nothing left to tell
                return

    def stop(self) -> None:
        self.stopped.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join()


def elapsed(seconds: float) -> str:
    """`41 s`, `12 min 5 s`, `2 h 3 min`."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


_watch: _Watch | None = None  # the command watched now (one per process: the CLI's)
_watch_lock = threading.Lock()


@contextlib.contextmanager
def watching(label: str) -> Iterator[None]:
    """Print the progress line (`label: ...`) on sys.stderr while the block runs, unless
    stderr is a terminal, the interval is off or a command is watched already."""
    global _watch
    seconds = interval()
    stream = sys.stderr
    isatty = getattr(stream, "isatty", None)
    if seconds is None or stream is None or (isatty is not None and isatty()) \
            or _watch is not None:
        yield
        return
    tracked = _Tracked(stream)
    watch = _Watch(label, seconds, tracked)
    with _watch_lock:
        _watch = watch
    sys.stderr = tracked
    watch.thread.start()
    try:
        yield
    finally:
        watch.stop()
        with _watch_lock:
            if _watch is watch:
                _watch = None
        if sys.stderr is tracked:
            sys.stderr = stream


def quiet() -> None:
    """No progress line for the rest of the command watched now."""
    watch = _watch
    if watch is not None:
        watch.stop()


def doing(what: str) -> None:
    """The command is now doing `what` (a log message: `human.coherence pearson: a vs b`)."""
    watch = _watch
    if watch is not None:
        with watch.activity.lock:
            watch.activity.what, watch.activity.column = what, None


def counting(column: str, total: int) -> None:
    """A run of `column` begins: it will score `total` samples (each draw of --repeats
    counted); nothing of them is done yet, whatever an earlier run of the same column did."""
    watch = _watch
    if watch is not None:
        with watch.activity.lock:
            activity = watch.activity
            activity.total[column] = total
            activity.done[column] = activity.failed[column] = activity.under_way[column] = 0


def scoring(column: str) -> None:
    """The command is scoring `column`'s samples now."""
    watch = _watch
    if watch is not None:
        with watch.activity.lock:
            watch.activity.column = column


def working(column: str, samples: int) -> None:
    """A batch of `samples` of `column`'s samples is being scored now (the count moves when
    it comes back: a metric that scores a batch at once moves it by the whole batch)."""
    watch = _watch
    if watch is not None:
        with watch.activity.lock:
            watch.activity.column = column
            watch.activity.under_way[column] = samples


def scored(column: str, samples: int, failed: int = 0) -> None:
    """`samples` more of `column`'s samples are done (computed, or reused from the store),
    `failed` of them failed."""
    watch = _watch
    if watch is not None:
        with watch.activity.lock:
            activity = watch.activity
            activity.column = column
            activity.done[column] = activity.done.get(column, 0) + samples
            activity.under_way[column] = max(0, activity.under_way.get(column, 0) - samples)
            activity.failed[column] = activity.failed.get(column, 0) + failed


@contextlib.contextmanager
def busy(what: str) -> Iterator[None]:
    """While the block runs, the line says `what` too: a long step inside the work that
    moves no count (a backend converting its model, once), so that a count standing still
    is explained. Any thread may call it; blocks may nest (the innermost is shown)."""
    watch = _watch
    if watch is None:
        yield
        return
    with watch.activity.lock:
        watch.activity.notes.append(what)
    try:
        yield
    finally:
        with watch.activity.lock, contextlib.suppress(ValueError):
            watch.activity.notes.remove(what)
