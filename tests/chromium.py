"""Headless Chromium driven over the DevTools protocol, for the tests of HTML pages (the audit's
report card, `judgebench view`): the `Browser` harness, and `running_browser` for a test
module's `browser` fixture."""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio",
         # Nothing resolves but the loopback address (where `judgebench view` listens): even
         # a request that slipped through could not leave the machine.
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")


def need_chromium() -> str:
    if CHROMIUM is None:  # .ci/run installs it; a skipped browser test would hide a gap
        pytest.fail("the HTML report test needs chromium: apt-get install -y chromium")
    return CHROMIUM


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fds 3 and 4).

    Requests are observed per page (Network.requestWillBeSent in the page's own session),
    so the browser's own background traffic is not mistaken for the page's.
    """

    def __init__(self, profile: Path) -> None:
        to_child, self._out = os.pipe()
        self._in, from_child = os.pipe()

        def wire() -> None:
            a, b = os.dup(to_child), os.dup(from_child)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [need_chromium(), *FLAGS, f"--user-data-dir={profile}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30.0) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait(self, method: str, timeout: float = 30.0, *, since: int = 0,
             session: str | None = None) -> dict:
        """The first event `method` (of `session`, if given) from the `since`-th event on."""
        deadline = time.monotonic() + timeout

        def matches(event: dict) -> bool:
            return event.get("method") == method and (session is None
                                                      or event.get("sessionId") == session)

        for event in self.events[since:]:
            if matches(event):
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if matches(event):
                return event

    def wait_where(self, match: Callable[[dict], bool], timeout: float = 30.0, *,
                   since: int = 0) -> dict:
        """The first event `match` accepts, from the `since`-th event on."""
        deadline = time.monotonic() + timeout
        for event in self.events[since:]:
            if match(event):
                return event
        while True:
            event = self._read(deadline)
            self.events.append(event)
            if match(event):
                return event

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._in], [], [], max(left, 0))
            if not ready:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise AssertionError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> str:
        """A new tab with network events on; navigate to `url`; return its session id."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target,
                                                      "flatten": True})["sessionId"]
        self.send("Network.enable", session=session)
        self.send("Page.enable", session=session)
        self.send("Page.setLifecycleEventsEnabled", {"enabled": True}, session=session)
        self.navigate(session, url)
        return session

    def navigate(self, session: str, url: str) -> None:
        """Load `url` in the tab of `session` and wait until it has loaded."""
        self.loaded(session, lambda: self.send("Page.navigate", {"url": url}, session=session))

    def loaded(self, session: str, action: Callable[[], object]) -> None:
        """Do `action` (a navigation, a form submitted) and wait for the page it loads."""
        since = len(self.events)
        action()
        self.wait("Page.loadEventFired", since=since, session=session)
        # anything the page would fetch late: Chromium's own "no request for 500 ms" event
        self.wait_where(lambda e: e.get("method") == "Page.lifecycleEvent"
                        and e.get("sessionId") == session
                        and e["params"].get("name") == "networkIdle", since=since)

    def requests(self, session: str) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"
                and e.get("sessionId") == session]

    def evaluate(self, session: str, expression: str) -> object:
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True}, session=session)
        return result["result"].get("value")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._out)
        os.close(self._in)


@contextlib.contextmanager
def running_browser(profile: Path) -> Iterator[Browser]:
    """A headless Chromium with its profile in `profile`, closed on exit (a test module's
    `browser` fixture)."""
    need_chromium()
    b = Browser(profile)
    try:
        yield b
    finally:
        b.close()
