"""`judgebench view` shows the path an item took through a compound judge (judge.dag): the
five-node DAG of tests/dag_support.py scored by a real loopback judge, a real `judgebench view`
process, the score page read in headless Chromium."""

from __future__ import annotations

import json
import signal
import sqlite3
import sys
import urllib.parse
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from chromium import running_browser
from conftest import run_cli
from dag_support import expected, reply, write_dag
from scripted_judge import ScriptedJudge
from test_judge_dag import KEY_ENV, dag_spec, tagged_samples
from test_view import _start


def test_the_viewer_shows_the_path_an_item_took_in_chromium(tmp_path: Path) -> None:
    data, tags = tagged_samples(tmp_path, 8, seed=7)
    write_dag(tmp_path)
    env = {**KEY_ENV, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
    with ScriptedJudge(reply=reply) as server:
        spec = dag_spec(server.url)
        proc = run_cli("score", str(data), "-m", spec, "-o", "out.csv", "--store", "s.db",
                       cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
    walked = [expected(t) for t in tags]
    longest = max(range(len(walked)), key=lambda i: len(walked[i][0]))
    table = pd.read_csv(tmp_path / "out.csv")
    with sqlite3.connect(tmp_path / "s.db") as db:
        [signature] = {s for (s,) in db.execute("SELECT signature FROM scores")}
    query = urllib.parse.urlencode({"signature": signature, "item": table["item"][longest],
                                    "system": table["system"][longest]})
    viewer, base = _start(tmp_path / "s.db", env=env)
    try:
        with running_browser(tmp_path / "profile") as browser:
            session = browser.open(f"{base}/runs/1/score?{query}")
            shown = browser.evaluate(session, "JSON.stringify([...document.querySelectorAll("
                                              "'.dag-path .dag-node')].map(e => e.textContent))")
    finally:
        viewer.send_signal(signal.SIGINT)
        viewer.communicate(timeout=30)
    assert isinstance(shown, str)
    nodes = json.loads(shown)
    path, value, _ = walked[longest]
    assert [n.split(":", 1)[0] for n in nodes] == path
    assert nodes[0] == "on-topic: 1 (people: human.on_topic)"
    assert nodes[-1] == f"{path[-1]}: {value:g}"
