"""`judgebench audit` end to end on SummEval rows: --json, the JSON/Markdown/HTML reports,
bad input, and the HTML page in headless Chromium (renders, has its plots, loads nothing)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from chromium import Browser, running_browser
from conftest import run_cli, summeval_records, write_jsonl

SENTINELS = {"sentinel.cand", "sentinel.constant", "sentinel.length", "sentinel.random",
             "sentinel.ref", "sentinel.src"}
SETTINGS = {("system", "none"), ("segment", "none"), ("segment", "item"),
            ("segment", "system")}
N_ITEMS = 16


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """16 SummEval documents x 16 systems scored with two lexical metrics, a deliberately bad
    column (noise) and a lower-is-better one, audited once with every report format."""
    root = tmp_path_factory.mktemp("audit")
    samples = write_jsonl(root / "gen.jsonl", summeval_records(16 * N_ITEMS))
    scores = root / "scores.csv"
    run_cli("score", str(samples), "-m", "lexical.rouge1", "-m", "lexical.token_f1",
            "-o", str(scores), "--store", str(root / "runs.db"), check=True)
    frame = pd.read_csv(scores, dtype={"item": str, "system": str})
    rng = np.random.default_rng(7)
    frame["bad"] = rng.normal(size=len(frame))
    frame["inverted"] = -frame["human.relevance"] + rng.normal(0.0, 0.3, size=len(frame))
    frame.to_csv(scores, index=False)
    reports = {fmt: root / f"report.{fmt}" for fmt in ("html", "md", "json")}
    proc = run_cli("audit", str(scores), "--human", "human.relevance", "--samples",
                   str(samples), "--store", str(root / "runs.db"), "--lower-is-better",
                   "inverted", "--bootstrap", "200", "--resamples", "200",
                   *(a for p in reports.values() for a in ("--report", str(p))), "--json")
    assert proc.returncode == 0, proc.stderr
    return {"root": root, "scores": scores, "samples": samples, "reports": reports,
            "stdout": proc.stdout, "stderr": proc.stderr}


def test_json_stdout_is_only_an_array_of_result_objects(audited: dict) -> None:
    results = json.loads(audited["stdout"])
    assert isinstance(results, list)
    correlations = [r for r in results if r["type"] == "correlation"]
    for r in correlations:
        assert {"metric", "human", "level", "grouping", "statistic", "value", "n", "cluster",
                "gate", "kind", "signature"} <= set(r)
    assert {(r["level"], r["grouping"]) for r in correlations} == SETTINGS
    assert {r["metric"] for r in correlations if r["kind"] == "sentinel"} == SENTINELS
    metrics = {r["metric"] for r in correlations if r["kind"] == "metric"}
    assert metrics == {"lexical.rouge1", "lexical.token_f1", "bad", "inverted"}
    assert all(r["gate"] in ("pass", "fail") for r in correlations if r["kind"] == "metric")
    assert all(r["gate"] is None for r in correlations if r["kind"] == "sentinel")
    # CIs where the statistic is defined, and the signature from the score run.
    rouge = [r for r in correlations if r["metric"] == "lexical.rouge1"]
    assert all(r["ci_low"] <= r["value"] <= r["ci_high"] for r in rouge)
    assert rouge[0]["signature"].startswith("lexical.rouge1@1|")
    # The noise column never passes; the negated lower-is-better column is oriented.
    assert all(r["gate"] == "fail" for r in correlations if r["metric"] == "bad")
    inverted = [r for r in correlations if r["metric"] == "inverted"]
    assert all(r["value"] > 0.5 for r in inverted if r["level"] == "segment"
               and r["grouping"] == "none")
    assert "audit: report ->" in audited["stderr"]


def test_json_report_has_every_part_of_the_card(audited: dict) -> None:
    report = json.loads(audited["reports"]["json"].read_text())
    assert report["format"] == "judgebench-audit"
    assert report["inputs"]["items"] == N_ITEMS and report["inputs"]["systems"] == 16
    cards = {c["column"]: c for c in report["metrics"]}
    assert cards["lexical.rouge1"]["statuses"] == {"ok": 16 * N_ITEMS}
    assert cards["lexical.rouge1"]["parse_failure_rate"] == 0.0
    assert cards["lexical.rouge1"]["time_s"] > 0  # from the store
    assert cards["lexical.rouge1"]["cost_usd"] is None  # unknown, not 0
    assert cards["bad"]["signature"] is None and cards["inverted"]["higher_is_better"] is False
    assert {s["column"] for s in report["sentinels"]} == SENTINELS
    assert len(report["blocks"]) == 4
    for block in report["blocks"]:
        assert {g["metric"] for g in block["gate"]} == set(cards)
        assert len(block["rows"]) == len(cards) + len(SENTINELS)
    summary = {g["metric"]: g for g in report["gate_summary"]}
    assert summary["bad"]["passed"] == 0 and summary["bad"]["total"] == 4
    scatter = report["scatter"]["human.relevance"]["lexical.rouge1"]
    assert len(scatter["systems"]) == len(scatter["human"]) == 16
    assert any("inverted is lower-is-better" in w for w in report["warnings"])


def test_markdown_report(audited: dict) -> None:
    text = audited["reports"]["md"].read_text()
    assert text.startswith("# Audit of scores.csv")
    for heading in ("## Gate", "## Metrics", "## Sentinels", "## Agreement with people",
                    "### human.relevance · pearson"):
        assert heading in text
    assert "| metric | system | segment/none | segment/item | segment/system |" in text
    assert "*sentinel.cand*" in text and "✗" in text


def test_html_is_self_contained(audited: dict) -> None:
    html = audited["reports"]["html"].read_text()
    assert html.startswith("<!DOCTYPE html>")
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
    assert csp and "default-src 'none'" in csp.group(1)
    assert not re.search(r"""(?:src|href|action|xlink:href)\s*=\s*["']?\s*(?!#)[^"'\s>]""",
                         html), "only in-page links are allowed"
    assert not re.search(r"https?:|//[a-z0-9.-]+\.[a-z]", html, flags=re.I)
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert "url(" not in html
    assert html.count("<svg") >= 4 + 1 + 10  # CI charts, a margin chart, scatter plots


def test_audit_without_generations_skips_text_sentinels_with_the_reason(
        audited: dict, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    proc = run_cli("audit", str(audited["scores"]), "--human", "human.relevance",
                   "--level", "segment", "--grouping", "item", "--bootstrap", "0",
                   "--resamples", "100", "--metric", "lexical.rouge1", "--report", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# Audit of scores.csv")  # Markdown summary on stdout
    report = json.loads(out.read_text())
    [block] = report["blocks"]
    assert (block["level"], block["grouping"]) == ("segment", "item")
    values = {r["metric"]: r["value"] for r in block["rows"]}
    assert values["sentinel.cand"] is None and values["sentinel.random"] is not None
    assert any("sentinel.cand" in w and "--samples" in w for w in report["warnings"])


@pytest.mark.parametrize(("args", "message"), [
    (["--human", "human.nope"], "field 'human.nope'"),
    (["--human", "human.relevance", "--report", "x.txt"], "unknown report type '.txt'"),
    (["--human", "human.relevance", "--sentinel", "sentinel.nope"], "unknown sentinel"),
    (["--human", "human.relevance", "--statistic", "spa", "--level", "segment"],
     "system-level statistic"),
    (["--human", "human.relevance", "--lower-is-better", "human.coherence"],
     "not a metric column"),
])
def test_bad_usage_exits_2(audited: dict, args: list[str], message: str) -> None:
    proc = run_cli("audit", str(audited["scores"]), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert proc.stdout == ""


def test_non_numeric_cell_names_file_row_and_column(audited: dict, tmp_path: Path) -> None:
    frame = pd.read_csv(audited["scores"], dtype={"item": str, "system": str})
    frame["bad"] = frame["bad"].astype(object)
    frame.loc[4, "bad"] = "oops"
    path = tmp_path / "broken.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("audit", str(path), "--human", "human.relevance", "--metric", "bad")
    assert proc.returncode == 2
    assert f"{path}, line 6, field 'bad'" in proc.stderr and "'oops'" in proc.stderr


# -- the HTML page in a real browser ---------------------------------------------------------
@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with running_browser(tmp_path / "profile") as b:
        yield b


def test_the_browser_harness_sees_a_page_that_loads_from_the_network(
        browser: Browser, tmp_path: Path) -> None:
    page = tmp_path / "leaky.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://leak.test/pixel.png">'
                    '<link rel="stylesheet" href="https://fonts.leak.test/css"></body></html>')
    session = browser.open(page.as_uri())
    requests = browser.requests(session)
    assert page.as_uri() in requests
    assert "http://leak.test/pixel.png" in requests
    assert "https://fonts.leak.test/css" in requests


def test_html_renders_in_chromium_with_plots_and_no_network(audited: dict, browser: Browser,
                                                            tmp_path: Path) -> None:
    page = audited["reports"]["html"]
    session = browser.open(page.resolve().as_uri())
    assert browser.requests(session) == [page.resolve().as_uri()], "only the page itself"
    assert browser.evaluate(session, "document.querySelector('h1').textContent") == \
        "Audit of scores.csv"
    assert browser.evaluate(session, "document.querySelectorAll('svg').length") >= 15
    # The plots are laid out: a CI chart has width and its dots are drawn.
    width = browser.evaluate(session, "document.querySelector('#agreement ~ .grid svg')"
                                      ".getBoundingClientRect().width")
    assert width > 300
    assert browser.evaluate(session, "document.querySelectorAll('svg circle').length") > 100
    height = browser.evaluate(session, "document.documentElement.scrollHeight")
    shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport":
                                                   True, "clip": {"x": 0, "y": 0,
                                                                  "width": 1200,
                                                                  "height": min(height, 4000),
                                                                  "scale": 1}},
                        session=session)
    png = base64.b64decode(shot["data"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    (tmp_path / "report.png").write_bytes(png)
    assert browser.requests(session) == [page.resolve().as_uri()]
