"""The audit's "Agreement, error and calibration" section: the confusion table and the
reliability diagram in JSON, Markdown and HTML, rendered in real headless Chromium (as
tests/test_audit_report.py does), and the direction of the gate for error statistics."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from test_audit_report import Browser, browser  # noqa: F401  (the fixture)

from meta_eval.reliability import expected_calibration_error


def half_up(x: np.ndarray) -> np.ndarray:
    return np.floor(x + 0.5)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """30 items x 5 systems: a 1-5 judge and human means of 3 raters; a probabilistic judge
    and 0/1 labels."""
    root = tmp_path_factory.mktemp("agree")
    rng = np.random.default_rng(0)
    items, systems = 30, 5
    quality = rng.integers(1, 6, (items, systems))
    raters = np.clip(quality[None] + rng.integers(-1, 2, (3, items, systems)), 1, 5)
    truth = rng.random((items, systems))
    frame = pd.DataFrame({
        "item": np.repeat([f"i{i}" for i in range(items)], systems),
        "system": np.tile([f"s{s}" for s in range(systems)], items),
        "human.x": (raters.sum(axis=0) / 3).ravel(),
        "human.good": (rng.random((items, systems)) < truth).astype(float).ravel(),
        "judge": np.clip(quality + rng.integers(-1, 2, quality.shape), 1, 5).astype(float)
        .ravel(),
        "judge.p": np.clip(truth + rng.normal(size=truth.shape) * 0.1, 0, 1).ravel(),
    })
    path = root / "scores.csv"
    frame.to_csv(path, index=False)
    return {"root": root, "path": path, "frame": frame}


def audit(table: dict, name: str, *args: str) -> dict[str, object]:
    root: Path = table["root"]  # type: ignore[assignment]
    reports = {fmt: root / f"{name}.{fmt}" for fmt in ("html", "md", "json")}
    proc = run_cli("audit", str(table["path"]), *args, "--level", "segment",
                   "--bootstrap", "100", "--resamples", "200",
                   *(a for p in reports.values() for a in ("--report", str(p))), "--json")
    assert proc.returncode == 0, proc.stderr
    return {"reports": reports, "rows": json.loads(proc.stdout), "stderr": proc.stderr}


@pytest.fixture(scope="module")
def kappa_audit(table: dict) -> dict[str, object]:
    return audit(table, "kappa", "--human", "human.x", "--metric", "judge", "--statistic",
                 "qwk", "--statistic", "mae", "--grouping", "none", "--grouping", "item")


@pytest.fixture(scope="module")
def calibration_audit(table: dict) -> dict[str, object]:
    return audit(table, "calib", "--human", "human.good", "--metric", "judge.p",
                 "--statistic", "brier", "--statistic", "ece", "--statistic", "ece-mass",
                 "--grouping", "none")


def test_confusion_table_in_the_json_report(kappa_audit: dict, table: dict) -> None:
    data = json.loads(kappa_audit["reports"]["json"].read_text())
    [entry] = [e for e in data["scales"] if e["type"] == "confusion"]
    frame = table["frame"]
    want = pd.crosstab(frame["judge"], half_up(frame["human.x"]))
    assert entry["metric"] == "judge" and entry["human"] == "human.x"
    assert entry["metric_labels"] == entry["human_labels"] == [1, 2, 3, 4, 5]
    for i, m in enumerate(entry["metric_labels"]):
        for j, h in enumerate(entry["human_labels"]):
            assert entry["counts"][i][j] == want.loc[m, h]
    assert entry["n"] == len(frame)
    assert not [e for e in data["scales"] if e["type"] == "reliability"]


def test_the_gate_ranks_the_lowest_mae_first(kappa_audit: dict) -> None:
    rows = [r for r in kappa_audit["rows"] if r.get("statistic") == "mae"
            and r["grouping"] == "none" and r["value"] is not None]
    judge = next(r for r in rows if r["metric"] == "judge")
    others = [r for r in rows if r["metric"] != "judge"]
    assert judge["cluster"] == 1 and all(judge["value"] < r["value"] for r in others)
    assert judge["gate"] == "pass"
    assert all(r["cluster"] > 1 for r in others)


def test_confusion_table_in_markdown(kappa_audit: dict, table: dict) -> None:
    md = kappa_audit["reports"]["md"].read_text()
    assert "## Agreement, error and calibration" in md
    section = md.split("## Agreement, error and calibration", 1)[1]
    frame = table["frame"]
    first = int(((frame["judge"] == 1) & (half_up(frame["human.x"]) == 1)).sum())
    row_one = next(line for line in section.splitlines() if line.startswith("| 1 |"))
    assert row_one.split("|")[2].strip() == str(first)
    assert "| total | " in section and f"| {len(frame)} |" in section


def test_reliability_in_json_and_markdown(calibration_audit: dict, table: dict) -> None:
    data = json.loads(calibration_audit["reports"]["json"].read_text())
    curves = {e["binning"]: e for e in data["scales"] if e["type"] == "reliability"}
    assert set(curves) == {"width", "mass"}
    frame = table["frame"]
    for binning, curve in curves.items():
        want = expected_calibration_error(human=frame["human.good"].to_numpy(),
                                          metric=frame["judge.p"].to_numpy(), binning=binning)
        assert curve["ece"] == pytest.approx(want.value, rel=1e-12)
        assert sum(curve["count"]) == curve["n"] == len(frame)
    ece_row = next(r for r in calibration_audit["rows"]
                   if r.get("statistic") == "ece" and r["metric"] == "judge.p")
    assert ece_row["value"] == pytest.approx(curves["width"]["ece"], rel=1e-12)
    md = calibration_audit["reports"]["md"].read_text()
    assert "reliability (width bins)" in md and "reliability (mass bins)" in md
    assert "| [0.9, 1] |" in md and "| [0, 0.1) |" in md
    assert "sentinel.random is not a probability" in md


def test_bad_probability_is_an_input_error_before_work(table: dict, tmp_path: Path) -> None:
    frame = table["frame"].copy()
    frame.loc[4, "judge.p"] = 1.25
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    proc = run_cli("audit", str(path), "--human", "human.good", "--metric", "judge.p",
                   "--statistic", "brier", "--level", "segment")
    assert proc.returncode == 2
    assert "line 6" in proc.stderr and "'judge.p'" in proc.stderr and "1.25" in proc.stderr


def test_sections_render_in_chromium(kappa_audit: dict, calibration_audit: dict,
                                     browser: Browser, tmp_path: Path) -> None:  # noqa: F811
    page = kappa_audit["reports"]["html"].resolve()
    session = browser.open(page.as_uri())
    assert browser.requests(session) == [page.as_uri()], "only the page itself"
    assert browser.evaluate(session, "document.querySelector("
                                     "'#agreement-error-calibration').textContent") == \
        "Agreement, error and calibration"
    cells = browser.evaluate(session, "Array.from(document.querySelectorAll("
                                      "'table.confusion tbody tr')).map(r => r.children.length)")
    assert cells == [7] * 6  # 5 categories + label + total, 5 rows + total
    width = browser.evaluate(session, "document.querySelector('table.confusion')"
                                      ".getBoundingClientRect().width")
    assert width > 150

    page = calibration_audit["reports"]["html"].resolve()
    session = browser.open(page.as_uri())
    assert browser.requests(session) == [page.as_uri()]
    diagrams = browser.evaluate(session, "document.querySelectorAll("
                                         "'#reliability-diagrams svg').length")
    assert diagrams == 2
    box = browser.evaluate(session, "(() => { const s = document.querySelector("
                                    "'#reliability-diagrams svg');"
                                    " const b = s.getBoundingClientRect();"
                                    " return [b.width, b.height, "
                                    "s.querySelectorAll('circle').length]; })()")
    assert box[0] > 200 and box[1] > 200 and box[2] == 10  # ten non-empty equal-width bins
    shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
    assert len(shot["data"]) > 10_000


def test_errors_take_a_lower_is_better_column_as_it_is(table: dict, tmp_path: Path) -> None:
    frame = table["frame"]
    proc = run_cli("audit", str(table["path"]), "--human", "human.x", "--metric", "judge",
                   "--lower-is-better", "judge", "--statistic", "mae", "--statistic",
                   "pearson", "--level", "segment", "--grouping", "none", "--bootstrap", "0",
                   "--resamples", "50", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = {r["statistic"]: r for r in json.loads(proc.stdout)
            if r.get("metric") == "judge" and r["type"] == "correlation"}
    assert rows["mae"]["value"] == pytest.approx(
        float(np.mean(np.abs(frame["judge"] - frame["human.x"]))), rel=1e-12)
    assert rows["pearson"]["value"] == pytest.approx(
        -float(np.corrcoef(frame["judge"], frame["human.x"])[0, 1]), rel=1e-9)
