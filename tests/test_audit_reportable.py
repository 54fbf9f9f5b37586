"""The audit's "What you can report": where people labelled a subset, each system's people's
mean with each metric as the judge equals the authors' PPI++ (ppi-python) on that system's
rows, the human-only interval and the effective labels a direct computation; a system without
2 labels or with a missing metric score says why; a fully labelled column has no section; the
section is in --json, the JSON, Markdown and HTML reports, and the HTML shows it in Chromium."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest
from chromium import Browser, running_browser
from conftest import run_cli
from scipy.stats import norm

SYSTEMS = ("sys-a", "sys-b", "sys-c", "sys-d")
ITEMS = 60


def table(path: Path) -> Path:
    """Four systems on 60 items: people's 1-5 ratings (ties) on about 40% of the rows, the
    last system with a single label; `close` tracks people, `errors` is lower-is-better and
    huge (1e100 scale), `noise` is unrelated; one `close` score missing in sys-b."""
    rng = np.random.default_rng(3)
    rows = []
    for s, system in enumerate(SYSTEMS):
        for i in range(ITEMS):
            truth = float(np.clip(np.round(rng.normal(3 + 0.4 * s, 1.0)), 1, 5))
            labelled = (i == 0) if system == "sys-d" else (rng.random() < 0.4 or i < 2)
            rows.append({"item": f"i{i:02d}", "system": system,
                         "close": truth + rng.normal(scale=0.7),
                         "errors": (6 - truth + rng.normal(scale=0.9)) * 1e100,
                         "noise": rng.normal(),
                         "human.overall": truth if labelled else np.nan,
                         "human.full": truth})
    frame = pd.DataFrame(rows)
    frame.loc[(frame["system"] == "sys-b") & (frame["item"] == "i07"), "close"] = np.nan
    frame.to_csv(path, index=False)
    return path


def audit(path: Path, *extra: str) -> list[dict]:
    proc = run_cli("audit", str(path), "--human", "human.overall", "--lower-is-better",
                   "errors", "--bootstrap", "0", "--resamples", "100", "--level", "system",
                   "--ci", "0.9", *extra, "--json")
    assert proc.returncode == 0, proc.stderr
    records: list[dict] = json.loads(proc.stdout)
    return records


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("reportable")
    path = table(root / "scores.csv")
    reports = {fmt: root / f"card.{fmt}" for fmt in ("md", "html", "json")}
    records = audit(path, *(a for p in reports.values() for a in ("--report", str(p))))
    return {"path": path, "records": records, "reports": reports}


def test_each_system_equals_ppi_python_and_a_direct_computation(audited: dict) -> None:
    frame = pd.read_csv(audited["path"])
    rows = {(r["metric"], r["system"]): r for r in audited["records"]
            if r["type"] == "reportable"}
    assert set(rows) == {(m, s) for m in ("close", "errors", "noise") for s in SYSTEMS}
    z = norm.ppf(0.95)
    for (metric, system), row in rows.items():
        part = frame[frame["system"] == system]
        judge = part[metric].to_numpy(dtype=float)
        human = part["human.overall"].to_numpy(dtype=float)
        labelled = np.isfinite(human)
        assert (row["labels"], row["items"]) == (int(labelled.sum()), ITEMS)
        if system == "sys-d":
            assert row["undefined"] == "1 of its 60 rows labelled: an estimate needs at least 2"
            continue
        if (metric, system) == ("close", "sys-b"):
            assert "close has no score on 1 of its 60 rows" in row["undefined"]
            continue
        if metric == "errors":
            judge = -judge  # lower is better: negated, as PPI++ tunes lam in [0, 1]
            assert "|judge_sign:negated|" in row["signature"]
            # ppi-python squares the raw scores (1e200) and cancels catastrophically at this
            # scale; PPI++ on judge / c is the same estimate while lam stays inside (0, 1)
            assert 0 < row["lam"] * 1e100 < 1
            judge = judge / 1e100
        y, yhat, rest = human[labelled], judge[labelled], judge[~labelled]
        scale = max(1.0, float(np.abs(y).max()))
        (lower,), (upper,) = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.1)
        point = float(ppi_py.ppi_mean_pointestimate(y, yhat, rest)[0])
        for got, want in ((row["point"], point), (row["lower"], lower),
                          (row["upper"], upper)):
            assert abs(got - want) <= 1e-8 * scale, (metric, system)
        se_human = y.std() / np.sqrt(y.size)
        alone = row["human_only"]
        assert alone["point"] == pytest.approx(y.mean(), rel=1e-12)
        assert alone["lower"] == pytest.approx(y.mean() - z * se_human, rel=1e-12)
        se = (upper - lower) / (2 * z)
        assert row["effective_labels"] == pytest.approx(y.size * (se_human / se) ** 2,
                                                        rel=1e-6)
        assert row["labels_worth"] == pytest.approx(row["effective_labels"] - y.size)
        assert row["signature"].startswith("estimate.ppi++@1|statistic:mean|judge:")
    assert rows[("close", "sys-c")]["labels_worth"] > 5  # a good judge saves labels
    assert rows[("errors", "sys-a")]["lam"] * 1e100 > 0.3  # the negated metric is used


def test_the_reports_carry_the_section(audited: dict) -> None:
    report = json.loads(audited["reports"]["json"].read_text())
    assert len(report["reportable"]) == 12
    markdown = audited["reports"]["md"].read_text()
    assert "## What you can report" in markdown
    assert "| human.overall | close | sys-c | " in markdown
    assert "n/a: 1 of its 60 rows labelled" in markdown
    assert 'id="reportable"' in audited["reports"]["html"].read_text()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with running_browser(tmp_path / "profile") as b:
        yield b


def test_the_html_section_renders(audited: dict, browser: Browser) -> None:
    page = audited["reports"]["html"].resolve()
    session = browser.open(page.as_uri())
    rows = browser.evaluate(
        session, "document.querySelector('#reportable').nextElementSibling"
                 ".nextElementSibling.querySelectorAll('tbody tr').length")
    assert rows == 12
    assert browser.evaluate(session, "document.querySelector('#reportable').textContent") == \
        "What you can report"


def test_a_fully_labelled_column_has_no_section(audited: dict, tmp_path: Path) -> None:
    proc = run_cli("audit", str(audited["path"]), "--human", "human.full", "--bootstrap", "0",
                   "--resamples", "100", "--level", "system")
    assert proc.returncode == 0, proc.stderr
    assert "What you can report" not in proc.stdout
