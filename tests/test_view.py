"""`judgebench view`: the read-only web viewer of a store, served by a real `judgebench view`
process on a free loopback port, over a store made by real runs (a rubric judge and a
pairwise judge answered by tests/fault_server.py, lexical metrics, an audit report beside
it), with red-team payloads in item and system names, outputs and judge answers.

Over HTTP: every page answers with the strict headers, GET only, the Host is checked, bad
query strings are named, the store is never written. In headless Chromium: every page
renders with its rows, filters and sorting change what is shown, no script from the data
runs, no request leaves 127.0.0.1; a screenshot of each page is taken (written to
docs/images/view/ when JUDGEBENCH_VIEW_SCREENSHOTS names that folder).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chromium import Browser, running_browser
from conftest import REPO, run_cli, run_cli_process, summeval_records, write_jsonl
from fault_server import FaultServer
from hypothesis import given, settings
from hypothesis import strategies as st
from test_extras import assert_refused, blocked

from judgebench.services.runs import runs

ITEM = '<img src=x onerror="window.__pwned=1">'
SYSTEM = '"><script>window.__pwned=2</script>'
TAIL = ' </pre><script>window.__pwned=3</script><a href="javascript:window.__pwned=4">x</a>'
REPLY = 'Feedback: <svg onload="window.__pwned=5"></svg> clear. [RESULT] {score}'
PAIR_REPLY = "Because <b onmouseover=window.__pwned=6>bold</b>. [[{choice}]]"
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")


def _judge(name: str, server: FaultServer, model: str) -> str:
    return (f"{name}:backend=openai_compat,model={model},api_base={server.url},"
            "protocol=text,max_attempts=1,price_in=1,price_out=2")


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store of four runs: judge A and lexical.length (one answer refused), judge B (every
    score 3) and lexical.length again, a pairwise judge on four pairs, two lexical metrics on
    32 SummEval rows; and an audit report of those beside it."""
    root = tmp_path_factory.mktemp("view")
    folder = root / "st"
    folder.mkdir()
    store = folder / "runs.db"
    records = summeval_records(32)
    chosen = [r for r in records if r["system"] in {records[i]["system"] for i in range(4)}]
    first_item, first_system = chosen[0]["item"], chosen[0]["system"]
    for r in chosen:
        r["item"] = ITEM if r["item"] == first_item else r["item"]
        r["system"] = SYSTEM if r["system"] == first_system else r["system"]
    chosen[1]["output"] += TAIL
    chosen[2]["output"] += " @@fault=refuse*9@@"
    data = write_jsonl(root / "in.jsonl", chosen)
    pairs = write_jsonl(root / "pairs.jsonl", [
        {"item": ITEM if i == 0 else f"p{i}", "input": chosen[i]["input"],
         "output_a": chosen[i]["output"], "output_b": chosen[(i + 1) % 4 + 4]["output"],
         "system_a": chosen[i]["system"], "system_b": chosen[(i + 1) % 4 + 4]["system"]}
        for i in range(4)])
    lexical = write_jsonl(root / "lex.jsonl", records)
    common = ("--store", str(store), "--cache", str(folder / "cache.sqlite"), "--workers", "1")
    with FaultServer(reply=REPLY) as server:
        judge_a = _judge("judge.rubric", server, "judge-a")
        judge_b = _judge("judge.rubric", server, "judge-b")
        first = run_cli("score", str(data), "-m", judge_a, "-m", "lexical.length", "-o",
                        str(root / "a.csv"), *common)
        assert first.returncode == 3, first.stderr  # the refused answer
        server.post("/_reply", {"reply": "Feedback: steady. [RESULT] 3"})
        second = run_cli("score", str(data), "-m", judge_b, "-m", "lexical.length", "-o",
                         str(root / "b.csv"), *common)
        assert second.returncode in (0, 3), second.stderr
        server.post("/_reply", {"reply": PAIR_REPLY})
        third = run_cli("score", str(pairs), "-m", _judge("judge.pairwise", server, "judge-a"),
                        "-o", str(root / "pairs.csv"), *common)
        assert third.returncode == 3, third.stderr  # the pair with the refused output
    scores = root / "lex.csv"
    run_cli("score", str(lexical), "-m", "lexical.rouge1", "-m", "lexical.token_f1", "-o",
            str(scores), "--store", str(store), check=True)
    audit = run_cli("audit", str(scores), "--human", "human.relevance", "--store", str(store),
                    "--bootstrap", "0", "--resamples", "50", "--level", "system",
                    "--report", str(folder / "audit.json"))
    assert audit.returncode == 0, audit.stderr
    (folder / "other.json").write_text('{"format": "something else"}', encoding="utf-8")
    found = {run.id: run for run in runs(store, limit=0, readonly=True).runs}
    return {"root": root, "folder": folder, "store": store, "runs": found,
            "before": _snapshot(folder)}


def _start(store: Path, *args: str, env: dict[str, str] | None = None
           ) -> tuple[subprocess.Popen[str], str]:
    """`judgebench view --store STORE --port 0` in a process of its own, and its URL from the
    line it prints once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", "view", "--store",
                             str(store), "--port", "0", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    line = proc.stdout.readline() if ready else ""
    if "http://" not in line:
        proc.kill()
        raise AssertionError(f"no URL from judgebench view: {line!r} {proc.communicate()[1]}")
    return proc, line.split(" at ", 1)[1].split()[0].rstrip("/")


@pytest.fixture(scope="module")
def viewer(made: dict[str, Any]) -> Iterator[str]:
    proc, base = _start(made["store"])
    try:
        yield base
    finally:
        proc.send_signal(signal.SIGINT)  # uvicorn shuts down cleanly on Ctrl-C
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.communicate()


def _get(url: str, *, method: str = "GET", headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, \
                resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read().decode()


def _signatures(made: dict[str, Any], run: int) -> dict[str, str]:
    return dict(made["runs"][run].metrics or {})


def _pages(made: dict[str, Any], base: str) -> dict[str, str]:
    """Every page of the viewer for this store, by name."""
    from judgebench.view.app import url

    judge_a = next(s for c, s in _signatures(made, 1).items() if "judge-a" in c)
    judge_b = next(s for c, s in _signatures(made, 2).items() if "judge-b" in c)
    [pairwise] = _signatures(made, 3).values()
    _, _, audits = _get(base + "/audits")
    key = audits.split('href="/audits/', 1)[1].split('"', 1)[0]
    return {
        "runs": base + "/",
        "run": base + "/runs/1",
        "score": base + url("/runs/1/score", signature=judge_a, item=ITEM, system=SYSTEM),
        "pairwise": base + url("/runs/3/score", signature=pairwise, item=ITEM,
                               system=f"{SYSTEM} vs {_pair_b(made)}"),
        "compare": base + url("/compare", a=judge_a, b=judge_b),
        "audits": base + "/audits",
        "audit": base + f"/audits/{key}",
    }


def _pair_b(made: dict[str, Any]) -> str:
    rows = [json.loads(line) for line in (made["root"] / "pairs.jsonl").read_text().splitlines()]
    return rows[0]["system_b"]


# -- sorting and filtering, against pandas -----------------------------------------------------
SIGNATURES = {"judge": "judge.rubric@1|m", "len": "lexical.length@1|x"}


def _write_store(path: Path, rows: list[tuple[str, str, str, str, float | None, int | None]],
                 corpus: list[tuple[str, str, float | None]]) -> None:
    """A real store (made by `Store`) of run 1, which wrote `rows` (item, system, signature,
    status, value, tokens_in) and `corpus` (system, signature, value), and of run 2, which
    wrote one score of its own."""
    import sqlite3

    from judgebench.engine.store import Store

    path.unlink(missing_ok=True)
    Store(path).close()
    conn = sqlite3.connect(path)
    for metrics in (SIGNATURES, {"other": "lexical.bleu@1|y"}):
        conn.execute("INSERT INTO runs (started, pid, version, outcome, metrics) VALUES "
                     "('2026-01-01T00:00:00.000Z', 1, 'x', 'ok', ?)", (json.dumps(metrics),))
    conn.executemany(
        "INSERT INTO scores (signature, item, system, sample_index, sample_hash, metric, value,"
        " status, tokens_in, created_at, run_id) VALUES (?, ?, ?, ?, 'h', 'm', ?, ?, ?, 0, 1)",
        [(sig, item, system, n, value, status, tokens)
         for n, (item, system, sig, status, value, tokens) in enumerate(rows)])
    conn.executemany(
        "INSERT INTO corpus_scores (signature, system, items_hash, metric, value, status, n,"
        " created_at, run_id) VALUES (?, ?, ?, 'm', ?, 'ok', 1, 0, 1)",
        [(sig, system, str(n), value) for n, (system, sig, value) in enumerate(corpus)])
    conn.execute("INSERT INTO scores (signature, item, system, sample_hash, metric, value,"
                 " status, created_at, run_id) VALUES ('lexical.bleu@1|y', 'i1', 's', 'h',"
                 " 'm', 0.5, 'ok', 0, 2)")
    conn.commit()
    conn.close()


VALUES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.0, -0.0, 1.0, 1e308, -1e-308]))


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["i1", "i2", "<b>", "é", "Z"]),
                               st.sampled_from(["s1", "s2"]),
                               st.sampled_from([*SIGNATURES.values(), "judge.rubric@1|old"]),
                               st.sampled_from(["ok", "error", "refused"]), VALUES,
                               st.one_of(st.none(), st.integers(0, 2**62))),
                     max_size=40),
       corpus=st.lists(st.tuples(st.sampled_from(["s1", "s2"]),
                                 st.sampled_from(list(SIGNATURES.values())), VALUES),
                       max_size=4),
       sort=st.sampled_from([None, "value", "item", "column", "status", "tokens_in"]),
       descending=st.booleans(), size=st.integers(1, 7), status=st.sampled_from([None, "ok"]))
def test_a_run_page_is_pandas_stable_sort_with_missing_last(
        tmp_path_factory: pytest.TempPathFactory,
        rows: list[tuple[str, str, str, str, float | None, int | None]],
        corpus: list[tuple[str, str, float | None]], sort: str | None, descending: bool,
        size: int, status: str | None) -> None:
    """The pages SQL sorts and cuts, joined, are the run's scores (as `logs` lists them, in
    the order written) filtered and sorted by pandas' stable sort, a missing value (None,
    NaN: SQLite keeps NaN as NULL) last in both directions."""
    import pandas as pd

    from judgebench.services.runs import log_page, logs

    path = tmp_path_factory.getbasetemp() / "sorted.db"
    unique = list({(r[0], r[1], r[2]): r for r in rows}.values())  # one score per key
    _write_store(path, unique, list({(c[0], c[1]): c for c in corpus}.values()))
    statuses = [status] if status else []
    written = logs(path, 1, statuses=statuses, limit=0).entries
    columns = {sig: column for column, sig in SIGNATURES.items()}
    frame = pd.DataFrame({
        "n": range(len(written)),
        "item": pd.Series([e.item for e in written], dtype=object),
        "column": pd.Series([columns.get(e.signature) for e in written], dtype=object),
        "status": [e.status for e in written],
        "value": pd.Series([e.value for e in written], dtype=float),
        "tokens_in": pd.Series([e.tokens_in for e in written], dtype=object)})
    expected = (frame["n"].tolist() if sort is None else frame.sort_values(
        sort, ascending=not descending, kind="stable", na_position="last")["n"].tolist())
    got = []
    offset = 0
    while True:
        page = log_page(path, 1, statuses=statuses, sort=sort, descending=descending,
                        offset=offset, limit=size)
        assert page.matched == len(written)
        if not page.entries:
            break
        got += page.entries
        offset += size
    keys = [(e.level, e.item, e.system, e.signature) for e in written]
    assert [keys.index((e.level, e.item, e.system, e.signature)) for e in got] == expected


def test_filtering_runs_is_the_rule_of_logs_metric_and_dates() -> None:
    from judgebench.services.runs import RunRow
    from judgebench.view.pages import filter_runs

    def run(n: int, started: str, outcome: str, metrics: dict[str, str]) -> RunRow:
        return RunRow(id=n, started=started, ended=None, wall_s=None, outcome=outcome,
                      error=None, command=None, input_path=None, input_hash=None,
                      selection=None, metrics=metrics, statuses=None, rows=None,
                      computed=None, reused=None, ok=None, failed=None, tokens_in=None,
                      tokens_out=None, cost_usd=None, version="x", pid=1, cache=None)

    rows = [run(1, "2026-01-01T23:59:59.999Z", "ok", {"r1": "lexical.rouge1@1|a"}),
            run(2, "2026-01-02T00:00:00.000Z", "error", {"j": "judge.rubric@1|m"}),
            run(3, "2026-01-03T10:00:00.000Z", "killed", {})]
    assert [r.id for r in filter_runs(rows, metric="lexical.rouge1")] == [1]
    assert [r.id for r in filter_runs(rows, metric="j")] == [2]
    assert [r.id for r in filter_runs(rows, metric="judge.rubric@1|m")] == [2]
    assert [r.id for r in filter_runs(rows, metric="judge")] == []  # no substring match
    assert [r.id for r in filter_runs(rows, since="2026-01-02")] == [2, 3]
    assert [r.id for r in filter_runs(rows, until="2026-01-02")] == [1, 2]
    assert [r.id for r in filter_runs(rows, since="2026-01-02", until="2026-01-02")] == [2]
    assert [r.id for r in filter_runs(rows, outcome="killed")] == [3]


# -- the command ------------------------------------------------------------------------------
def test_view_is_refused_without_the_view_extra(made: dict[str, Any], tmp_path: Path) -> None:
    for module in ("starlette", "jinja2", "uvicorn", "psutil"):
        before = {p.name for p in tmp_path.iterdir()}
        proc = run_cli_process("view", "--store", str(made["store"]), "--port", "0",
                               env=blocked(tmp_path, module))
        assert_refused(proc, "judgebench view", module, "view", tmp_path,
                       before | {f"without-{module}"})


def test_a_bad_store_or_port_is_refused_before_serving(made: dict[str, Any],
                                                       tmp_path: Path) -> None:
    proc = run_cli("view", "--store", str(tmp_path / "none.db"), "--port", "0")
    assert proc.returncode == 2 and "store not found" in proc.stderr
    (tmp_path / "x.db").write_text("not sqlite")
    proc = run_cli("view", "--store", str(tmp_path / "x.db"), "--port", "0")
    assert proc.returncode == 2 and "not a SQLite file" in proc.stderr
    proc = run_cli("view", "--store", str(made["store"]), "--port", "0", "--reports",
                   str(tmp_path / "nowhere"))
    assert proc.returncode == 2 and "nowhere" in proc.stderr
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_cli("view", "--store", str(made["store"]), "--port", str(port))
    assert proc.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in proc.stderr


# -- over HTTP --------------------------------------------------------------------------------
def test_every_page_answers_with_the_strict_headers(made: dict[str, Any], viewer: str) -> None:
    for name, page in _pages(made, viewer).items():
        status, headers, body = _get(page)
        assert status == 200, (name, body)
        assert headers["content-type"].startswith("text/html")
        policy = headers["content-security-policy"]
        if name == "audit":  # the audit's own self-contained card
            assert policy.startswith("default-src 'none'; style-src 'unsafe-inline'")
        else:
            assert policy == CSP
        assert "script-src" not in policy and "unsafe-eval" not in policy
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        assert "<script" not in body and "javascript:" not in body.split("<main>")[0]
        assert ITEM not in body and SYSTEM not in body  # escaped wherever they are shown
    status, headers, _ = _get(viewer + "/style.css")
    assert status == 200 and headers["content-type"].startswith("text/css")


def test_payloads_are_shown_as_text(made: dict[str, Any], viewer: str) -> None:
    from markupsafe import escape

    pages = _pages(made, viewer)
    _, _, score = _get(pages["score"])
    assert escape(ITEM) in score and escape(SYSTEM) in score
    assert escape("window.__pwned=5") in score  # the judge's answer, as text
    _, _, run = _get(pages["run"])
    assert escape(ITEM) in run


def test_the_viewer_is_read_only_and_bound_to_its_address(made: dict[str, Any],
                                                          viewer: str) -> None:
    assert viewer.startswith("http://127.0.0.1:")
    for method in ("POST", "PUT", "DELETE"):
        status, _, _ = _get(viewer + "/", method=method)
        assert status == 405, method
    status, _, _ = _get(viewer + "/", headers={"Host": "evil.test"})
    assert status == 400  # DNS rebinding: only the address it is bound to
    status, _, _ = _get(viewer.replace("127.0.0.1", "localhost") + "/")
    assert status == 200


def test_on_every_interface_the_host_is_still_checked(made: dict[str, Any]) -> None:
    """`--host 0.0.0.0` answers the machine's own names and addresses and the names given
    with --allow-host, never any Host (a page elsewhere could read the store through DNS
    rebinding)."""
    import socket

    from judgebench.view.app import allowed_hosts, machine_names

    assert "*" not in allowed_hosts("0.0.0.0") and "*" not in allowed_hosts("::")
    assert socket.gethostname() in allowed_hosts("0.0.0.0")
    assert "[::1]" in allowed_hosts("0.0.0.0") and "127.0.0.1" in allowed_hosts("0.0.0.0")
    assert allowed_hosts("127.0.0.1", ["viewer.test"]) == sorted(
        ["127.0.0.1", "[::1]", "localhost", "viewer.test"])
    proc, base = _start(made["store"], "--host", "0.0.0.0", "--allow-host", "viewer.test",
                        "--allow-host", "10.1.2.3")
    try:
        port = base.rsplit(":", 1)[1]
        local = f"http://127.0.0.1:{port}/"
        assert _get(local, headers={"Host": "evil.test"})[0] == 400
        assert _get(local, headers={"Host": f"evil.test:{port}"})[0] == 400
        for name in ("viewer.test", "10.1.2.3", socket.gethostname(), "127.0.0.1",
                     *sorted(machine_names())[:3]):
            shown = f"[{name}]" if ":" in name else name
            status, _, body = _get(local, headers={"Host": f"{shown}:{port}"})
            assert status == 200, (name, body)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    refused = run_cli("view", "--store", str(made["store"]), "--port", "0", "--allow-host",
                      "a b")
    assert refused.returncode == 2 and "--allow-host" in refused.stderr


@pytest.mark.parametrize(("query", "status", "message"), [
    ("/runs/99", 404, "no run 99"),
    ("/?status=bogus", 400, "unknown outcome"),
    ("/?since=yesterday", 400, "field &#39;since&#39;: a date is YYYY-MM-DD"),
    ("/runs/1?sort=bogus", 400, "field &#39;sort&#39;: unknown sort"),
    ("/runs/1?status=bogus", 400, "unknown status"),
    ("/runs/1?metric=nope", 400, "run 1 has no metric &#39;nope&#39;"),
    ("/runs/1?page=x", 400, "field &#39;page&#39;: a whole number"),
    ("/runs/1/score?item=a", 404, "field &#39;signature&#39;"),
    ("/compare?run_a=1&run_b=1", 400, "the same signature"),
    ("/audits/nope", 404, "no audit report"),
    ("/runs/1?page=%C2%B2", 400, "field &#39;page&#39;: a whole number"),
    ("/runs/1?page=" + "9" * 5000, 400, "field &#39;page&#39;: a number of at most 18 digits"),
    ("/runs/" + "9" * 5000, 404, "no run 99999999999999999999… (5000 characters)"),
    ("/runs/9223372036854775808", 404, "no run 9223372036854775808"),
    ("/runs/99999999999999999999/score?signature=a&item=b&system=c", 404, "no run 9999"),
    ("/runs/%C2%B2", 404, "no run ²"),
    ("/compare?run_a=" + "9" * 5000 + "&run_b=1", 400, "field &#39;run_a&#39;"),
    ("/compare?run_a=9223372036854775808&run_b=1", 400, "at most 18 digits"),
])
def test_bad_query_strings_are_named(viewer: str, query: str, status: int,
                                     message: str) -> None:
    got, _, body = _get(viewer + query)
    assert got == status, body
    assert message in body


def test_a_deep_page_is_the_last_and_the_pages_shown_are_near(made: dict[str, Any],
                                                              viewer: str) -> None:
    from judgebench.view.pages import near_pages

    got, _, body = _get(viewer + "/runs/4?page=999999")
    assert got == 200 and body == _get(viewer + "/runs/4?page=1")[2]
    assert near_pages(1, 1) == [1]
    assert near_pages(50, 10_000) == [1, None, 47, 48, 49, 50, 51, 52, 53, None, 10_000]
    assert near_pages(2, 5) == [1, 2, 3, 4, 5]


def test_pages_never_name_where_the_store_is(made: dict[str, Any], viewer: str) -> None:
    """The runs' command lines name the store by its absolute path (as typed): no page
    shows it, nor the store's folder; the header names the store's file."""
    for name, page in {**_pages(made, viewer), "error": viewer + "/runs/99"}.items():
        _, _, body = _get(page)
        assert str(made["folder"]) not in body, name
        assert str(made["folder"].resolve()) not in body, name
        if name != "audit":
            assert '<span class="store">runs.db</span>' in body, name


def test_filters_and_sorting_change_the_rows(made: dict[str, Any], viewer: str) -> None:
    _, _, every = _get(viewer + "/")
    assert every.count("<tr data-run=") == 4
    _, _, some = _get(viewer + "/?metric=lexical.length")
    assert some.count("<tr data-run=") == 2
    _, _, none = _get(viewer + "/?since=2999-01-01")
    assert none.count("<tr data-run=") == 0
    _, _, refused = _get(viewer + "/runs/1?status=refused")
    assert refused.count('class="status status-refused"') == 1
    assert 'class="status status-ok"' not in refused


def test_the_comparison_is_judgebench_diff_and_its_flips_are_the_tables(
        made: dict[str, Any], viewer: str) -> None:
    """The summary is `judgebench diff STORE STORE --column-a A --column-b B`'s, to the digits
    shown; the flips are counted again from the two runs' scores tables (pandas)."""
    import re

    import pandas as pd

    from judgebench.view.app import number

    judge_a = next(s for c, s in _signatures(made, 1).items() if "judge-a" in c)
    judge_b = next(s for c, s in _signatures(made, 2).items() if "judge-b" in c)
    proc = run_cli("diff", str(made["store"]), str(made["store"]), "--column-a", judge_a,
                   "--column-b", judge_b, "--json")
    assert proc.returncode == 0, proc.stderr
    [column] = json.loads(proc.stdout)["columns"]
    _, _, body = _get(_pages(made, viewer)["compare"])
    summary = body.split('id="summary"', 1)[1].split("</table>", 1)[0]
    for estimate in column["estimates"]:
        cells = re.search(rf"<td>{estimate['statistic']}</td><td class=\"num\">([^<]*)</td>",
                          summary)
        assert cells and cells.group(1) == number(estimate["value"]), estimate
    assert f'<td class="num">{number(column["kl"])}</td>' in summary
    a = pd.read_csv(made["root"] / "a.csv", dtype={"item": str, "system": str})
    b = pd.read_csv(made["root"] / "b.csv", dtype={"item": str, "system": str})
    merged = a.merge(b, on=["item", "system"])
    both = merged.dropna(subset=[a.columns[2], b.columns[2]])
    flips = int((both[a.columns[2]] != both[b.columns[2]]).sum())
    assert f"{flips} flips of {len(both)} scored by both" in body
    assert body.count('<tr class="flip">') == flips
    rate = next(e for e in column["estimates"] if e["statistic"] == "flip_rate")
    assert rate["value"] == pytest.approx(flips / len(both))
    # two runs: each run's first column, here judge A's and judge B's
    _, _, runs_body = _get(viewer + "/compare?run_a=1&run_b=2")
    assert runs_body.split('id="summary"', 1)[1] == body.split('id="summary"', 1)[1]


def test_the_store_is_never_written(made: dict[str, Any], viewer: str) -> None:
    for page in _pages(made, viewer).values():
        _get(page)
    assert _snapshot(made["folder"]) == made["before"]


def _big_store(path: Path, scores: int) -> None:
    """A real store whose run 1 wrote `scores` scores of lexical.length (values in [0, 1))."""
    import sqlite3

    from judgebench.engine.store import Store

    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO runs (started, pid, version, outcome, metrics) VALUES "
                 "('2026-01-01T00:00:00.000Z', 1, 'x', 'ok', ?)",
                 (json.dumps({"len": "lexical.length@1|x"}),))
    conn.execute(
        "INSERT INTO scores (signature, item, system, sample_hash, metric, value, status,"
        " created_at, run_id) WITH RECURSIVE n(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM n"
        " WHERE x < ?) SELECT 'lexical.length@1|x', 'item-' || x, 's', 'h', 'lexical.length',"
        " (x * 7919 % 1000) / 1000.0, 'ok', 0, 1 FROM n", (scores - 1,))
    conn.commit()
    conn.close()


def test_a_store_read_stops_when_its_request_is_stopped(tmp_path: Path) -> None:
    import sqlite3
    import threading

    from judgebench.services.runs import interrupting, log_page

    store = tmp_path / "big.db"
    _big_store(store, 20_000)
    stop = threading.Event()
    with interrupting(stop):
        page = log_page(store, 1, sort="value", offset=10_000, limit=5)
        assert page.matched == 20_000 and len(page.entries) == 5
        stop.set()
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            log_page(store, 1, sort="value", offset=10_000, limit=5)
    assert len(log_page(store, 1, sort="value", offset=10_000, limit=5).entries) == 5


def test_a_serving_viewer_prints_no_progress_line(made: dict[str, Any]) -> None:
    """stderr is a pipe, not a terminal, and the progress interval is a millisecond: while it
    starts the command may say it is `running`; once it listens (its URL printed) a server
    waiting for browsers prints nothing more until it stops (issue 42: `running, N s` every
    10 s for as long as it served)."""
    from judgebench.engine import progress_line

    proc, base = _start(made["store"], env={progress_line.INTERVAL_ENV: "0.001"})
    assert proc.stderr is not None
    pipe = proc.stderr.fileno()
    os.set_blocking(pipe, False)
    with contextlib.suppress(BlockingIOError):  # what it wrote before it listened
        while os.read(pipe, 1 << 16):
            pass
    os.set_blocking(pipe, True)
    try:
        for page in ("/", "/runs/1", "/audits", "/runs/1"):
            assert _get(base + page)[0] == 200
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "judgebench view: stopped" in out
    assert "judgebench view:" not in err, err


def test_ctrl_c_stops_the_viewer_while_requests_run(tmp_path: Path) -> None:
    """Requests reading deep sorted pages of a 300,000-score run are under way (the server
    has started a second worker thread to answer them) when Ctrl-C comes: the server stops
    them rather than waiting for them (each answers 503 or its connection closes) and
    exits cleanly."""
    import threading

    store = tmp_path / "big.db"
    _big_store(store, 300_000)
    proc, base = _start(store)
    assert _get(base + "/runs/1")[0] == 200  # serving: its worker thread is started
    tasks = Path(f"/proc/{proc.pid}/task")
    before = len(list(tasks.iterdir()))
    answers: list[int | str] = []

    def fetch() -> None:
        try:
            answers.append(_get(base + "/runs/1?sort=value&order=desc&page=1500")[0])
        except (urllib.error.URLError, ConnectionError) as exc:
            answers.append(type(exc).__name__)

    fetchers = [threading.Thread(target=fetch) for _ in range(3)]
    for fetcher in fetchers:
        fetcher.start()
    try:
        while len(list(tasks.iterdir())) == before:  # another worker: two requests run
            assert proc.poll() is None
            select.select([], [], [], 0.005)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        for fetcher in fetchers:
            fetcher.join(timeout=60)
    assert proc.returncode == 0 and "judgebench view: stopped" in out, err
    assert "Traceback" not in err, err
    assert len(answers) == 3 and 200 not in answers, answers


def test_a_store_being_written_is_viewable(made: dict[str, Any], tmp_path: Path) -> None:
    """A run a writer has committed but not checkpointed (it is only in the -wal file, as
    while `score` runs) is shown: the viewer reads through the writer's WAL."""
    import shutil
    import sqlite3

    copy = tmp_path / "runs.db"
    shutil.copy(made["store"], copy)
    writer = sqlite3.connect(copy, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("INSERT INTO runs (started, pid, version, command, outcome) VALUES "
                       "('2026-01-01T00:00:00.000Z', ?, 'x', 'judgebench score live', "
                       "'running')", (os.getpid(),))
        assert (tmp_path / "runs.db-wal").stat().st_size > 0
        proc, base = _start(copy)
        try:
            status, _, body = _get(base + "/?status=running")
        finally:
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=20)
        assert status == 200 and body.count("<tr data-run=") == 1
        assert "judgebench score live" in body
        assert proc.returncode == 0
    finally:
        writer.close()


def test_audit_reports_beside_the_store_and_in_reports_folders(made: dict[str, Any],
                                                               tmp_path: Path) -> None:
    """The store's folder and each --reports folder are read (not their subfolders); only
    JSON audit reports are listed, those that read this store first; a report this version
    cannot render is an error page naming the file, not a crash."""
    import shutil

    folder = tmp_path / "store"
    folder.mkdir()
    store = folder / "runs.db"
    shutil.copy(made["store"], store)
    report = json.loads((made["folder"] / "audit.json").read_text(encoding="utf-8"))
    elsewhere = tmp_path / "reports"
    (elsewhere / "deeper").mkdir(parents=True)
    (elsewhere / "mine.json").write_text(json.dumps(
        {**report, "title": "Audit naming this store", "inputs": {**report["inputs"],
                                                                   "store": str(store)}}))
    (elsewhere / "deeper" / "hidden.json").write_text(json.dumps(report))
    (elsewhere / "broken.json").write_text(json.dumps(
        {"format": "judgebench-audit", "title": "Broken <b>report</b>", "inputs": {}}))
    (elsewhere / "list.json").write_text("[1, 2]")
    (elsewhere / "bad.json").write_text("{not json")
    (folder / "audit.json").write_text(json.dumps(report))  # names the original store
    proc, base = _start(store, "--reports", str(elsewhere))
    try:
        _, _, listing = _get(base + "/audits")
        rows = listing.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("<tr>")[1:]
        titles = [row.split('">', 1)[1].split("</a>", 1)[0] for row in rows]
        assert titles == ["Audit naming this store", "Audit of lex.csv",
                          "Broken &lt;b&gt;report&lt;/b&gt;"]
        assert [row.rstrip().endswith("<td>yes</td></tr>") for row in rows] == \
            [True, False, False]
        keys = [row.split('href="/audits/', 1)[1].split('"', 1)[0] for row in rows]
        status, headers, card = _get(base + f"/audits/{keys[0]}")
        assert status == 200 and "Audit naming this store" in card
        # the report is a page of its own: it links back to the viewer's
        back = card.split('<nav class="back">', 1)[1].split("</nav>", 1)[0]
        assert 'href="/audits"' in back and 'href="/"' in back
        assert headers["content-security-policy"].endswith("frame-ancestors 'none'")
        status, _, broken = _get(base + f"/audits/{keys[2]}")
        assert status == 400 and "broken.json" in broken
        assert "not an audit report this version renders" in broken
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)
    assert proc.returncode == 0


# -- in Chromium ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    with running_browser(tmp_path_factory.mktemp("profile")) as b:
        yield b


def _texts(browser: Browser, session: str, selector: str) -> list[str]:
    found = browser.evaluate(session, "JSON.stringify([...document.querySelectorAll("
                                      f"{json.dumps(selector)})].map(e => e.textContent))")
    assert isinstance(found, str)
    return json.loads(found)


def _clean(browser: Browser, session: str, base: str) -> None:
    """No script from the data ran or was parsed, and every request stayed on the viewer."""
    assert browser.evaluate(session, "typeof window.__pwned") == "undefined"
    assert browser.evaluate(session, "document.scripts.length") == 0
    assert browser.evaluate(session, "document.querySelectorAll('[onerror],[onload],"
                                     "[onmouseover]').length") == 0
    requests = browser.requests(session)
    # data: URLs are the browser's own (a date field's calendar icon): nothing leaves
    assert requests and all(r.startswith((base + "/", "data:")) for r in requests), requests


def _screenshot(browser: Browser, session: str, name: str, folder: Path) -> None:
    height = browser.evaluate(session, "document.documentElement.scrollHeight")
    assert isinstance(height, int)
    shot = browser.send("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": 1100, "height": min(height, 760), "scale": 1}},
        session=session)
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.png").write_bytes(png)


def test_every_page_renders_in_chromium_and_no_script_from_the_data_runs(
        made: dict[str, Any], viewer: str, browser: Browser, tmp_path: Path) -> None:
    pages = _pages(made, viewer)
    shots = Path(os.environ.get("JUDGEBENCH_VIEW_SCREENSHOTS") or tmp_path)
    shots = shots if shots.is_absolute() else REPO / shots
    session = browser.open(pages["runs"])
    browser.send("Emulation.setDeviceMetricsOverride", {"width": 1100, "height": 760,
                                                        "deviceScaleFactor": 1,
                                                        "mobile": False}, session=session)
    expected = {
        "runs": ("#runs tbody tr", 4),
        # judge A's 8 scores; run 2 wrote lexical.length's again (the store keeps the latest)
        "run": ("#scores tbody tr", 8),
        "score": (".message", 2),  # the judge's prompt: system and user messages
        "pairwise": (".order", 2),
        "compare": ("#items tbody tr", 7),  # the refused row has neither score
        "audits": ("#audits tbody tr", 1),
        "audit": ("svg", 1),
    }
    for name, page in pages.items():
        browser.navigate(session, page)
        selector, count = expected[name]
        found = len(_texts(browser, session, selector))
        assert found >= count if name in ("score", "audit") else found == count, (name, found)
        _clean(browser, session, viewer)
        _screenshot(browser, session, name, shots)
    # the payloads are on the pages as text
    browser.navigate(session, pages["score"])
    body = browser.evaluate(session, "document.body.textContent")
    assert isinstance(body, str)
    assert ITEM in body and SYSTEM in body and 'onload="window.__pwned=5"' in body
    roles = _texts(browser, session, ".message .role")
    assert [r.lower() for r in roles][-1] == "user"
    browser.navigate(session, pages["pairwise"])
    verdicts = _texts(browser, session, ".order-verdict")
    assert len(verdicts) == 2 and set(verdicts) <= {"a", "b", "tie"}
    assert _texts(browser, session, ".order h2")[0].startswith("A shown first")
    assert "window.__pwned=6" in str(browser.evaluate(session, "document.body.textContent"))
    _clean(browser, session, viewer)


def test_filters_and_sorting_work_in_chromium(made: dict[str, Any], viewer: str,
                                              browser: Browser) -> None:
    pages = _pages(made, viewer)
    session = browser.open(pages["runs"])
    assert len(_texts(browser, session, "#runs tbody tr")) == 4
    browser.loaded(session, lambda: browser.evaluate(session, """
        document.querySelector('select[name=metric]').value = 'lexical.length';
        document.querySelector('form.filters').submit()"""))
    assert len(_texts(browser, session, "#runs tbody tr")) == 2
    browser.navigate(session, pages["run"])
    browser.loaded(session, lambda: browser.evaluate(session, """
        document.querySelector('select[name=status]').value = 'refused';
        document.querySelector('form.filters').submit()"""))
    assert _texts(browser, session, "#scores tbody td.status") == ["refused"]
    browser.navigate(session, viewer + "/runs/2?metric=lexical.length")
    browser.loaded(session, lambda: browser.evaluate(
        session, "document.querySelector('a[data-sort=value]').click()"))
    up = [float(v) for v in _texts(browser, session, "#scores td.value")]
    assert up == sorted(up) and len(up) == 8
    browser.loaded(session, lambda: browser.evaluate(
        session, "document.querySelector('a[data-sort=value]').click()"))
    down = [float(v) for v in _texts(browser, session, "#scores td.value")]
    assert down == sorted(up, reverse=True)
    browser.navigate(session, pages["compare"])
    everything = len(_texts(browser, session, "#items tbody tr"))
    flips = len(_texts(browser, session, "#items tbody tr.flip"))
    assert 0 < flips < everything  # judge B says 3 everywhere; judge A only sometimes
    browser.loaded(session, lambda: browser.evaluate(session, """
        document.querySelector('input[name=flips]').checked = true;
        document.querySelector('form.filters').submit()"""))
    assert len(_texts(browser, session, "#items tbody tr")) == flips
    assert len(_texts(browser, session, "#items tbody tr.flip")) == flips
    _clean(browser, session, viewer)
