"""`judgebench label` in real headless Chromium, driven by key presses over the DevTools
protocol (tests/chromium.py), against real `judgebench label` processes (tests/label_server.py).

Two annotators, each in a browser context of their own, label 40 items of the bundled
SummEval sample at once (their saves sent together each round); once, while the store's
write lock is held by this test as another writer would hold it, annotator A's save is in
flight (the browser sent the POST and the server opened the store to write it) and the
server is killed; it is started again with `--sample-id`, both pages are
loaded again and the labelling goes on. Every save the page confirmed is then in the store
and in `labels export`'s table, the killed save left no row, and the agreement page's
numbers equal the `krippendorff` package and scikit-learn's kappa. A second test presses the
other keys (undo, next/previous, reveal, critique, a pair's a/b/t) on a pair whose output
holds a `<script>` payload, which stays text.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import psutil
import pytest
from chromium import Browser, running_browser
from conftest import EXAMPLE, run_cli, write_jsonl
from label_server import base, start, stop
from sklearn.metrics import cohen_kappa_score

from judgebench.engine import labels as L
from judgebench.services.label_session import shown_left

ITEMS = 40
KILLED_AT = 17
PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with running_browser(tmp_path_factory.mktemp("profile")) as b:
        yield b


@pytest.fixture
def servers() -> Iterator[list[subprocess.Popen[str]]]:
    """The label servers a test starts; one still running when it ends (a failure) is
    killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _open(browser: Browser, url: str) -> str:
    """A tab in a browser context of its own (its own cookies and cache), loaded at `url`."""
    context = browser.send("Target.createBrowserContext")["browserContextId"]
    target = browser.send("Target.createTarget", {"url": "about:blank",
                                                  "browserContextId": context})["targetId"]
    session = browser.send("Target.attachToTarget", {"targetId": target,
                                                     "flatten": True})["sessionId"]
    browser.send("Network.enable", session=session)
    browser.send("Page.enable", session=session)
    _go(browser, session, url)
    return session


def _go(browser: Browser, session: str, url: str) -> None:
    since = len(browser.events)
    browser.send("Page.navigate", {"url": url}, session=session)
    _loaded(browser, session, since)


def _loaded(browser: Browser, session: str, since: int) -> None:
    """Wait for the page of this server that the tab loads after event `since` (its main
    frame navigated to it, then its load event: the deferred script has run)."""
    navigated = browser.wait_where(
        lambda e: e.get("sessionId") == session and e.get("method") == "Page.frameNavigated"
        and not e["params"]["frame"].get("parentId")
        and e["params"]["frame"]["url"].startswith("http://"), since=since, timeout=60)
    after = next(i for i in range(since, len(browser.events))
                 if browser.events[i] is navigated)
    browser.wait("Page.loadEventFired", since=after, session=session, timeout=60)


def _key(key: str, ctrl: bool = False) -> dict[str, Any]:
    if key == "Enter":
        spec: dict[str, Any] = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13,
                                "text": "\r"}
    elif key == "Escape":
        spec = {"key": "Escape", "code": "Escape", "windowsVirtualKeyCode": 27}
    elif key.isdigit():
        spec = {"key": key, "code": f"Digit{key}", "windowsVirtualKeyCode": ord(key),
                "text": key}
    else:
        spec = {"key": key, "code": f"Key{key.upper()}", "windowsVirtualKeyCode":
                ord(key.upper()), "text": key}
    return {**spec, "modifiers": 2 if ctrl else 0}


def _press(browser: Browser, session: str, *keys: str, ctrl: bool = False) -> None:
    for key in keys:
        spec = _key(key, ctrl)
        browser.send("Input.dispatchKeyEvent", {"type": "keyDown", **spec}, session=session)
        up = {k: v for k, v in spec.items() if k != "text"}
        browser.send("Input.dispatchKeyEvent", {"type": "keyUp", **up}, session=session)


def _text(browser: Browser, session: str, selector: str) -> str | None:
    found = browser.evaluate(session, f"(e => e && e.textContent)(document.querySelector("
                                      f"{json.dumps(selector)}))")
    assert found is None or isinstance(found, str)
    return found


def _position(browser: Browser, session: str) -> int:
    state = browser.evaluate(session, "[document.URL, document.readyState, "
                                      "document.body.dataset.keys, document.body.innerText]")
    assert isinstance(state, list) and state[2] == "ready", state
    return int(_text(browser, session, "#position") or 0)


def _plan(seed: int) -> dict[str, dict[int, str]]:
    """Each annotator's keys per position: a value 1-5 (bob near ann's), c or s."""
    rng = random.Random(seed)
    plan: dict[str, dict[int, str]] = {"ann": {}, "bob": {}}
    for position in range(1, ITEMS + 1):
        a = rng.randint(1, 5)
        b = min(5, max(1, a + rng.choice((-1, 0, 0, 1))))
        for name, value in (("ann", a), ("bob", b)):
            draw = rng.random()
            plan[name][position] = "c" if draw < 0.08 else "s" if draw < 0.12 else str(value)
    for name in plan:  # every value at least once
        for value in range(1, 6):
            plan[name][value] = str(value)
    return plan


def _in_flight(browser: Browser, session: str, since: int) -> str:
    """The request id of the POST the tab sent after event `since`."""
    sent = browser.wait_where(lambda e: e.get("method") == "Network.requestWillBeSent"
                              and e.get("sessionId") == session
                              and e["params"]["request"]["method"] == "POST", since=since)
    return str(sent["params"]["requestId"])


def _opened_store(pid: int, store: Path, timeout: float = 30.0) -> None:
    """Wait until the server process has the store open (a save's transaction begins)."""
    deadline = time.monotonic() + timeout
    process = psutil.Process(pid)
    while time.monotonic() < deadline:
        if any(Path(f.path) == store.resolve() for f in process.open_files()):
            return
        time.sleep(0.005)
    raise AssertionError("the server never opened the store for the save")


def test_two_annotators_label_40_items_by_keys_through_a_killed_server(
        browser: Browser, tmp_path: Path, servers: list[subprocess.Popen[str]]) -> None:
    started = time.monotonic()
    store = tmp_path / "runs.db"
    args = [str(EXAMPLE), "--store", str(store), "--criterion", "relevance", "--scale",
            "1-5", "--annotator", "ann", "--sample", str(ITEMS), "--seed", "7"]
    proc, url = start(*args, "--port", "0")
    servers.append(proc)
    root = base(url)
    tabs = {name: _open(browser, f"{root}/?annotator={name}") for name in ("ann", "bob")}
    plan = _plan(3)
    plan["ann"][KILLED_AT] = "4"  # the save in flight when the server is killed
    confirmed: dict[str, dict[int, str]] = {"ann": {}, "bob": {}}
    position = {name: 1 for name in tabs}
    killed = False
    while any(p <= ITEMS for p in position.values()):
        since = len(browser.events)
        pressing = [name for name in tabs if position[name] <= ITEMS]
        for name in pressing:
            assert _position(browser, tabs[name]) == position[name]
        if position["ann"] == KILLED_AT and not killed:
            killed = True
            _kill_mid_save(browser, tabs["ann"], proc, store, plan["ann"][KILLED_AT], since)
            proc, url = start(*args[:-4], "--sample-id", "1", "--port", "0")
            servers.append(proc)
            root = base(url)
            for name, tab in tabs.items():  # stale pages: their token was the old server's
                _go(browser, tab, f"{root}/?annotator={name}")
            assert _position(browser, tabs["ann"]) == KILLED_AT  # that save is not there
            continue
        for name in pressing:  # both saves are sent before either page comes back
            keys = plan[name][position[name]]
            _press(browser, tabs[name], *([keys, "Enter"] if keys.isdigit() else [keys]))
        for name in pressing:
            _loaded(browser, tabs[name], since)
            confirmed[name][position[name]] = plan[name][position[name]]
            position[name] += 1
    assert killed
    for tab in tabs.values():
        assert _text(browser, tab, "#done") == "Every item is labelled"
    _go(browser, tabs["ann"], f"{root}/agreement")  # the numbers as labels arrived
    alpha = browser.evaluate(tabs["ann"], "document.getElementById('alpha').dataset.value")
    kappa = browser.evaluate(tabs["ann"], "document.querySelector('tr.kappa td[data-value]')"
                                          ".dataset.value")
    assert browser.evaluate(tabs["ann"], "document.scripts.length") == 0
    stop(proc)

    # the store: every confirmed save, nothing of the killed one, not damaged
    with sqlite3.connect(store) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    (sample,) = L.samples(store)
    drawn = [(s.item, s.system) for s in sample.items]
    expected: dict[str, dict[Any, float | str]] = {}
    for name, done in confirmed.items():
        assert sorted(done) == list(range(1, ITEMS + 1))
        history = L.label_history(store, criterion="relevance", annotator=name)
        assert len(history) == ITEMS  # one row per save, the killed one none
        current = {lab.key: lab for lab in L.current_labels(store, criterion="relevance",
                                                            annotator=name)}
        expected[name] = {drawn[p - 1]: float(k) if k.isdigit() else
                          {"c": "cant_tell", "s": "skipped"}[k] for p, k in done.items()}
        assert {k: lab.value if lab.status == "answered" else lab.status
                for k, lab in current.items()} == expected[name]
        assert all(lab.sample_id == sample.id and lab.inclusion_probability == ITEMS / 64
                   and lab.source == "browser" for lab in current.values())

    # the exported human table
    out = tmp_path / "human.csv"
    run_cli("labels", "export", "--store", str(store), "-o", str(out), check=True)
    table = pd.read_csv(out, dtype={"item": str, "system": str}).set_index(["item", "system"])
    for name in confirmed:
        column = table[f"human.relevance.{name}"]
        for key, value in expected[name].items():
            got = column.get(key, np.nan)
            assert (got == value) if isinstance(value, float) else np.isnan(got), (name, key)

    # the agreement page, against the krippendorff package and scikit-learn
    matrix = np.array([[v if isinstance(v := expected[name].get(k), float) else np.nan
                        for k in drawn] for name in ("ann", "bob")])
    assert float(str(alpha)) == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"),
        rel=1e-12)
    both = np.isfinite(matrix).all(axis=0)
    a, b = matrix[0, both].astype(int), matrix[1, both].astype(int)
    labels = list(range(min(a.min(), b.min()), max(a.max(), b.max()) + 1))
    assert float(str(kappa)) == pytest.approx(
        cohen_kappa_score(a, b, weights="quadratic", labels=labels), rel=1e-12)
    assert time.monotonic() - started < 60


def _kill_mid_save(browser: Browser, tab: str, proc: Any, store: Path, key: str,
                   since: int) -> None:
    """Press `key` and Enter in `tab` while this test holds the store's write lock; once
    the POST is sent and the server has opened the store to write it, kill the server
    (SIGKILL) and let the lock go."""
    holder = sqlite3.connect(store, timeout=30, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        _press(browser, tab, key, "Enter")
        request = _in_flight(browser, tab, since)
        _opened_store(proc.pid, store)
        proc.kill()
        proc.communicate()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    browser.wait_where(lambda e: e.get("method") == "Network.loadingFailed"
                       and e["params"]["requestId"] == request, since=since)


def test_the_other_keys_and_a_payload_that_stays_text(
        browser: Browser, tmp_path: Path, servers: list[subprocess.Popen[str]]) -> None:
    pairs = [json.loads(line) for line in
             (EXAMPLE.parent / "pairs-sample.jsonl").read_text().splitlines()[:3]]
    for pair in pairs:
        pair["output_a"] += PAYLOAD
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    store = tmp_path / "runs.db"
    proc, url = start(str(data), "--store", str(store), "--criterion", "better", "--pairwise",
                      "--annotator", "ann", "--seed", "2", "--port", "0")
    servers.append(proc)
    try:
        tab = _open(browser, url)
        root = base(url)
        assert browser.evaluate(tab, "typeof window.__pwned") == "undefined"
        assert browser.evaluate(tab, "document.scripts.length") == 1  # /label.js
        assert PAYLOAD in str(_text(browser, tab, "#left")) + str(_text(browser, tab, "#right"))
        requests = [e["params"]["request"]["url"] for e in browser.events
                    if e.get("method") == "Network.requestWillBeSent"
                    and e.get("sessionId") == tab]
        assert requests and all(r.startswith(root + "/") for r in requests), requests
        for position, key in enumerate(("a", "b", "t"), start=1):
            assert _position(browser, tab) == position
            since = len(browser.events)
            if key == "b":  # a critique: e, typing (an s typed is not a skip), Esc, b,
                # then Ctrl-Enter saves from the field
                _press(browser, tab, "e")
                browser.send("Input.insertText", {"text": "right one"}, session=tab)
                _press(browser, tab, "s", "Escape", "b", "e")
                _press(browser, tab, "Enter", ctrl=True)
            else:
                _press(browser, tab, key, "Enter")
            _loaded(browser, tab, since)
        assert _text(browser, tab, "#done") == "Every item is labelled"
        session_items = L.label_history(store)
        assert session_items == L.current_labels(store, criterion="better")
        for lab, key in zip(session_items, ("a", "b", "t"), strict=True):
            pair = lab.system
            assert isinstance(pair, tuple)
            left = shown_left(2, "ann", lab.item, pair)
            assert lab.shown_left == left
            side = {"a": left, "b": pair[1] if left == pair[0] else pair[0]}.get(key)
            assert lab.value == (0.5 if key == "t" else 1.0 if side == pair[0] else 0.0)
        assert session_items[1].critique == "right ones"
        # k goes back, r reveals once answered, u undoes the last, j goes on
        _go(browser, tab, f"{root}/item/3?annotator=ann")
        since = len(browser.events)
        _press(browser, tab, "k")
        _loaded(browser, tab, since)
        assert _position(browser, tab) == 2
        since = len(browser.events)
        _press(browser, tab, "r")
        _loaded(browser, tab, since)
        assert _text(browser, tab, "#revealed-left") is not None
        since = len(browser.events)
        _press(browser, tab, "u")
        _loaded(browser, tab, since)
        assert _position(browser, tab) == 3 and _text(browser, tab, "#said")
        assert len(L.current_labels(store, criterion="better")) == 2
        since = len(browser.events)
        _press(browser, tab, "j")  # item 3 has no next: nothing happens
        _press(browser, tab, "c")
        _loaded(browser, tab, since)
        assert L.current_labels(store, criterion="better")[-1].status == "cant_tell"
        assert browser.evaluate(tab, "typeof window.__pwned") == "undefined"
    finally:
        stop(proc)
