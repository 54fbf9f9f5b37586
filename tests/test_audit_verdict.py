"""The verdict an audit report opens with, on real SummEval verdicts: per human criterion,
which metrics pass the gate where and why not elsewhere, in the JSON, the Markdown and the
HTML report (in headless Chromium: first on the page, reasons visible, partial passes and
total failures told apart)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chromium import Browser, need_chromium
from conftest import run_cli, scored_summeval

from judgebench.auditing.verdict import verdicts, where

ROWS = 400  # 25 SummEval documents x 16 systems
METRICS = ("lexical.token_f1", "lexical.chrf", "lexical.bleu")
CAND = ("people's scores follow what the output alone shows (fluency, style, a system's "
        "habits), not how it relates to the input or reference")
# System level, and segment level grouped by item and by system.
SETTINGS = ("--level", "system", "--level", "segment", "--grouping", "item",
            "--grouping", "system")
FAST = ("--bootstrap", "0", "--resamples", "200")


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verdict")
    samples, scores, _ = scored_summeval(root, METRICS, ROWS)
    reports = {fmt: root / f"report.{fmt}" for fmt in ("json", "md", "html")}
    proc = run_cli("audit", str(scores), "--human", "human.relevance", "--human",
                   "human.coherence", "--samples", str(samples), *SETTINGS, *FAST,
                   *(a for p in reports.values() for a in ("--report", str(p))))
    assert proc.returncode == 0, proc.stderr
    return reports


def _by_human(data: dict) -> dict[str, dict]:
    return {v["human"]: v for v in data["verdict"]}


def test_a_metric_passes_for_relevance_and_nothing_beats_the_sentinel_for_coherence(
        audited: dict[str, Path]) -> None:
    data = json.loads(audited["json"].read_text())
    relevance, coherence = (_by_human(data)[h] for h in ("human.relevance",
                                                         "human.coherence"))
    system = {v["human"]: next(s for s in v["settings"] if s["level"] == "system")
              for v in (relevance, coherence)}
    # Relevance: token F1 beats every sentinel at system level (chrF and BLEU are corpus
    # metrics there: not gated, and said so).
    assert system["human.relevance"]["state"] == "pass"
    assert system["human.relevance"]["passed"] == ["lexical.token_f1"]
    assert system["human.relevance"]["ungated"] == ["lexical.chrf", "lexical.bleu"]
    assert system["human.relevance"]["reason"] == (
        "every gated metric beats sentinel.length, the best sentinel, at system level")
    # Coherence: reading only the summary does as well as any metric.
    assert system["human.coherence"]["state"] == "fail"
    assert system["human.coherence"]["passed"] == []
    assert system["human.coherence"]["reason"] == (
        f"nothing beats sentinel.cand at system level for human.coherence: {CAND}")
    assert system["human.coherence"]["failed"] == [{
        "metric": "lexical.token_f1",
        "reason": "cluster 1: not significantly better than sentinel.cand (cluster 1)"}]


def test_partial_pass_and_total_failure_in_words(audited: dict[str, Path]) -> None:
    data = json.loads(audited["json"].read_text())
    relevance, coherence = (_by_human(data)[h] for h in ("human.relevance",
                                                         "human.coherence"))
    assert [s["where"] for s in relevance["settings"]] == [
        "system level", "segment level, grouped by item", "segment level, grouped by system"]
    assert [s["state"] for s in relevance["settings"]] == ["pass", "partial", "fail"]
    assert relevance["state"] == "partial" and coherence["state"] == "fail"
    item = relevance["settings"][1]
    assert item["reason"] == ("lexical.token_f1, lexical.chrf beat sentinel.length at segment "
                              "level, grouped by item; lexical.bleu does not")
    assert relevance["summary"] == (
        "metrics pass the gate in some settings, not in others — lexical.token_f1 passes at "
        "system level and at segment level, grouped by item; lexical.chrf passes at segment "
        "level, grouped by item; nothing beats sentinel.length at segment level, grouped by "
        "system: people's scores follow output length here.")
    assert coherence["summary"] == (
        "no metric passes the gate in any setting — nothing beats sentinel.cand at system "
        f"level and at segment level, grouped by item: {CAND}; nothing beats sentinel.length "
        "at segment level, grouped by system: people's scores follow output length here.")
    states = {m["metric"]: m["state"] for m in relevance["metrics"]}
    assert states == {"lexical.token_f1": "partial", "lexical.chrf": "partial",
                      "lexical.bleu": "fail"}


def test_the_json_report_opens_with_the_verdict_computed_by_one_function(
        audited: dict[str, Path]) -> None:
    data = json.loads(audited["json"].read_text())
    assert list(data)[:4] == ["format", "format_version", "title", "verdict"]
    assert data["verdict"] == [v.to_dict() for v in verdicts(data)]
    assert data["failures"] == [] and data["fail_on"] == []


def test_markdown_opens_with_the_verdict(audited: dict[str, Path]) -> None:
    text = audited["md"].read_text()
    lines = [line for line in text.splitlines() if line]
    assert lines[:2] == ["# Audit of scores.csv", "## Verdict"]
    assert lines[2].startswith("**human.relevance: PARTIAL PASS.** metrics pass the gate")
    assert text.index("## Verdict") < text.index("Scores `") < text.index("## Gate")
    assert "**human.coherence: FAIL.** no metric passes the gate in any setting" in text
    assert (f"| system level | fail | none | lexical.token_f1 (cluster 1: not significantly "
            f"better than sentinel.cand (cluster 1)) | nothing beats sentinel.cand at system "
            f"level for human.coherence: {CAND} (not gated: lexical.chrf, lexical.bleu) |"
            in text)


def test_where_names_the_grouping_and_the_statistic_when_there_are_several() -> None:
    assert where("system", "none") == "system level"
    assert where("segment", "none") == "segment level, no grouping"
    assert where("segment", "item", "kendall") == "segment level, grouped by item (kendall)"


def _block(statistic: str, gate: list[dict], rows: list[dict]) -> dict:
    return {"human": "human.x", "statistic": statistic, "level": "segment",
            "grouping": "item", "gate": gate, "rows": rows, "notes": []}


def test_no_defined_sentinel_and_several_statistics_in_words() -> None:
    """Hand-made blocks for what SummEval does not show: no sentinel with a defined
    statistic (nothing to beat), a metric whose statistic is undefined, two statistics."""
    rows = [{"metric": "m", "kind": "metric"}, {"metric": "u", "kind": "metric"}]
    undefined = {"metric": "u", "passed": False, "cluster": None, "sentinel": None,
                 "sentinel_cluster": None, "reason": "the statistic is undefined for this "
                                                     "metric"}
    data = {"humans": ["human.x"],
            "settings": {"statistics": ["pearson", "kendall"],
                         "levels": [{"level": "segment", "grouping": "item"}]},
            "blocks": [
                _block("pearson", [{"metric": "m", "passed": True, "cluster": 1,
                                    "sentinel": None, "sentinel_cluster": None,
                                    "reason": "no sentinel has a defined statistic here"},
                                   undefined], rows),
                _block("kendall", [{**undefined, "metric": "m"}, undefined], rows)]}
    [v] = verdicts(data)
    pearson, kendall = v.settings
    assert pearson.where == "segment level, grouped by item (pearson)"
    assert (pearson.state, kendall.state, v.state) == ("partial", "fail", "partial")
    assert pearson.reason == ("m has a defined statistic at segment level, grouped by item "
                              "(pearson); u does not")
    assert kendall.reason == ("kendall is undefined for every metric at segment level, "
                              "grouped by item (kendall)")
    assert v.summary.endswith("— m passes at segment level, grouped by item (pearson); the "
                              "statistic is undefined for every metric at segment level, "
                              "grouped by item (kendall).")


@pytest.fixture
def browser(tmp_path: Path):
    need_chromium()
    b = Browser(tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


VISIBLE = """(el) => { const s = getComputedStyle(el), r = el.getBoundingClientRect();
  return s.display !== 'none' && s.visibility !== 'hidden' && Number(s.opacity) > 0
         && r.width > 0 && r.height > 0; }"""


@pytest.mark.slow
def test_html_verdict_is_first_visible_and_tells_partial_from_total(
        audited: dict[str, Path], browser: Browser) -> None:
    page = audited["html"].resolve().as_uri()
    session = browser.open(page)
    assert browser.requests(session) == [page]

    def js(expression: str) -> object:
        return browser.evaluate(session, f"(() => {{ const visible = {VISIBLE}; "
                                         f"return {expression}; }})()")

    # The first content element after the title is the verdict.
    assert js("document.querySelector('main').firstElementChild.tagName") == "H1"
    assert js("document.querySelector('h1').nextElementSibling.id") == "verdict"
    criteria = js("[...document.querySelectorAll('#verdict div.criterion')].map(d => "
                  "[d.querySelector('h3').textContent, d.className])")
    assert criteria == [["human.relevance: partial pass", "criterion verdict-partial"],
                        ["human.coherence: fail", "criterion verdict-fail"]]
    # Partial pass and total failure look different, not only read differently.
    colours = js("['.criterion.verdict-partial', '.criterion.verdict-fail'].map(c => "
                 "getComputedStyle(document.querySelector(c)).backgroundColor)")
    assert isinstance(colours, list) and colours[0] != colours[1]
    # The reasons are on the page as visible text, not in tooltips.
    reason = f"nothing beats sentinel.cand at system level for human.coherence: {CAND}"
    cell = (f"[...document.querySelectorAll('#verdict td')].find(td => "
            f"td.textContent.startsWith({json.dumps(reason)}))")
    assert js(f"visible({cell})") is True
    gate_reasons = js("[...document.querySelectorAll('#verdict .reason')].filter(visible)"
                      ".map(e => e.textContent)")
    assert isinstance(gate_reasons, list)
    assert "cluster 1: not significantly better than sentinel.cand (cluster 1)" in gate_reasons
    assert js("visible(document.querySelector('#verdict p.summary'))") is True
    rows = js("[...document.querySelectorAll('#verdict tbody tr')].map(r => r.className)")
    assert rows == ["verdict-pass", "verdict-partial", "verdict-fail",
                    "verdict-fail", "verdict-fail", "verdict-fail"]
    # The verdict is above the fold: it starts within the first screen.
    top = js("document.querySelector('#verdict').getBoundingClientRect().top")
    assert isinstance(top, int | float) and top < 200
