"""`audit PAIRS --pairwise` shows each judge's Bradley-Terry ranking raw and with style
controlled (the covariates' coefficients with their intervals) where the table has the
outputs' texts (length and markdown) or lengths (length): every number it shows, in the
JSON rows, the report's JSON, its Markdown and its HTML card, equals `aggregate -r
bradley-terry --control ... --winner JUDGE` on the same table (both commands run here); a
judge whose fit has no finite estimate is an error row with aggregate's reason, and a table
without texts or lengths has no such section. Random tables with ties, markdown and
lengths from 0 to 10^6; a table aggregate refuses (an empty text: CSV reads it as
missing) is an error row with aggregate's message. A table without texts (CSV with lengths,
JSONL without) takes those of --pairs, and is then ranked as aggregate ranks the table with
them; --pairs lacking a pair leaves it as given, saying so."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from judgebench.render.card import fmt
from judgebench.render.markdown import text

SYSTEMS = ["alpha", "beta", "gamma", "delta", "eps"]


def text_of(rng: np.random.Generator) -> str:
    parts = [" ".join(["word"] * int(rng.integers(1, 80)))]
    if rng.random() < 0.4:
        parts.insert(0, "## A header")
    if rng.random() < 0.5:
        parts += ["- one", "- two", "1. three"]
    if rng.random() < 0.3:
        parts.append("a **bold** word and __another__")
    return "\n".join(parts)


def table(tmp_path: Path, seed: int, *, shape: str) -> Path:
    """A pairwise table of 120 pairs: two judges (one with ties), a human column and, by
    `shape`, the outputs' texts, their lengths, or neither."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for k in range(120):
        a, b = rng.choice(len(SYSTEMS), 2, replace=False)
        row: dict[str, Any] = {"item": f"i{k}", "system_a": SYSTEMS[a],
                               "system_b": SYSTEMS[b]}
        if shape == "texts":
            row |= {"output_a": text_of(rng), "output_b": text_of(rng)}
        elif shape == "lengths":
            row |= {"length_a": int(rng.choice([0, 5, 300, 10**6])),
                    "length_b": int(rng.integers(1, 2000))}
        # judge.x: ties and a lean to the longer, later system; judge.y: no ties
        lean = 0.15 * (a - b)
        row |= {"human.pref": float(rng.random() < 0.5),
                "judge.x": float(rng.choice([1.0, 0.0, 0.5],
                                            p=[0.4 + lean / 2, 0.4 - lean / 2, 0.2])),
                "judge.y": float(rng.random() < 0.5 + lean)}
        rows.append(row)
    path = tmp_path / f"pairs-{shape}-{seed}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def aggregated(path: Path, judge: str, controls: str) -> dict[str, Any]:
    proc = run_cli("aggregate", str(path), "-r", "bradley-terry", "--control", controls,
                   "--winner", judge, "--json")
    assert proc.returncode == 0, proc.stderr
    [outcome] = json.loads(proc.stdout)
    style: dict[str, Any] = outcome["style_control"]
    return style


def audited(path: Path, tmp_path: Path) -> tuple[list[dict[str, Any]], dict[str, Any], str,
                                                 str]:
    """The audit's `style` rows (--json), its report as JSON, Markdown and HTML."""
    reports = [tmp_path / f"card.{ext}" for ext in ("json", "md", "html")]
    proc = run_cli("audit", str(path), "--pairwise", "--human", "human.pref", "--bootstrap",
                   "0", "--json", *(x for r in reports for x in ("--report", str(r))))
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["type"] == "style"]
    return (rows, json.loads(reports[0].read_text()), reports[1].read_text(),
            reports[2].read_text())


@pytest.mark.parametrize(("seed", "shape", "controls"), [
    (0, "texts", "length,markdown"), (1, "texts", "length,markdown"),
    (2, "lengths", "length")])
def test_the_audit_shows_what_aggregate_computes(tmp_path: Path, seed: int, shape: str,
                                                 controls: str) -> None:
    path = table(tmp_path, seed, shape=shape)
    rows, report, markdown, page = audited(path, tmp_path)
    assert [r["judge"] for r in rows] == ["judge.x", "judge.y"]
    assert [{k: v for k, v in r.items() if k != "type"} for r in rows] == report["style"]
    for row in rows:
        expected = aggregated(path, row["judge"], controls)
        assert expected["status"] == "ok"
        assert row["controls"] == controls.split(",") and row["status"] == "ok"
        assert {k: row[k] for k in expected} == expected  # every number, exactly
        assert row["rule"] == "bradley-terry"
        assert row["signature"].startswith(f"bradley-terry.style@1|controls:{controls}|")
        # the cards show the same numbers (3 decimals), each system and covariate
        for name, system in expected["systems"].items():
            for which in ("raw", "controlled"):
                cell = system[which]
                shown = f"{fmt(cell['estimate'])} [{fmt(cell['low'])}, {fmt(cell['high'])}]"
                assert re.search(rf"^\| {name} \|.*{re.escape(text(shown))}", markdown,
                                 re.MULTILINE)
                assert html.escape(shown) in page
        for name, c in expected["coefficients"].items():
            shown = f"{fmt(c['estimate'])} [{fmt(c['low'])}, {fmt(c['high'])}]"
            assert f"| {name} | {text(shown)} |" in markdown and html.escape(shown) in page
        assert html.escape(row["signature"]) in page and text(row["signature"]) in markdown
    assert "## Rankings with style controlled" in markdown
    assert '<h2 id="style">Rankings with style controlled</h2>' in page


def test_a_judge_without_a_finite_fit_is_an_error_row_with_aggregates_reason(
        tmp_path: Path) -> None:
    path = table(tmp_path, 3, shape="texts")
    frame = pd.read_csv(path, keep_default_na=False)
    # judge.y: alpha never loses (separated): no finite strength
    frame["judge.y"] = [1.0 if a == "alpha" else 0.0 if b == "alpha" else v
                        for a, b, v in zip(frame.system_a, frame.system_b, frame["judge.y"],
                                           strict=True)]
    frame.to_csv(path, index=False)
    rows, _, markdown, _ = audited(path, tmp_path)
    expected = aggregated(path, "judge.y", "length,markdown")
    [row] = [r for r in rows if r["judge"] == "judge.y"]
    assert expected["status"] == "error" and expected["reason"]
    assert (row["status"], row["reason"]) == ("error", expected["reason"])
    assert "no ranking: " + expected["reason"] in markdown
    assert [r["status"] for r in rows if r["judge"] == "judge.x"] == ["ok"]


def test_a_table_without_texts_or_lengths_has_no_style_section(tmp_path: Path) -> None:
    path = table(tmp_path, 4, shape="none")
    rows, report, markdown, page = audited(path, tmp_path)
    assert rows == [] and "style" not in report
    assert "style controlled" not in markdown and 'id="style"' not in page


def test_a_table_aggregate_refuses_is_an_error_row_with_its_message(tmp_path: Path) -> None:
    path = table(tmp_path, 5, shape="texts")
    frame = pd.read_csv(path, keep_default_na=False)
    frame.loc[6, "output_b"] = ""  # CSV reads an empty cell as missing
    frame.to_csv(path, index=False)
    proc = run_cli("aggregate", str(path), "-r", "bradley-terry", "--control",
                   "length,markdown", "--winner", "judge.x", "--json")
    assert proc.returncode == 2
    message = proc.stderr.strip().splitlines()[-1].removeprefix("Error: ")
    assert "line 8" in message and "length_b" in message
    rows, _, markdown, _ = audited(path, tmp_path)
    assert [(r["judge"], r["status"], r["reason"]) for r in rows] == [
        ("judge.x", "error", message), ("judge.y", "error", message)]
    assert "no ranking: " in markdown


@pytest.mark.parametrize(("shape", "suffix"), [("lengths", "csv"), ("none", "jsonl")])
def test_the_texts_of_pairs_give_a_table_without_them_markdown(
        tmp_path: Path, shape: str, suffix: str) -> None:
    """`score`'s pairwise table has the lengths, not the texts: `--pairs` (the samples)
    gives them, and the style control is then aggregate's on the table with the texts; a
    pair `--pairs` lacks leaves the table as it is (length alone, or no section), saying
    why on stderr."""
    with_texts = table(tmp_path, 6, shape="texts")
    frame = pd.read_csv(with_texts, keep_default_na=False)
    key = ["item", "system_a", "system_b"]
    given = frame.drop(columns=["output_a", "output_b"])
    if shape == "lengths":
        given = given.assign(length_a=frame["output_a"].str.len(),
                             length_b=frame["output_b"].str.len())
    path = tmp_path / f"scored.{suffix}"
    if suffix == "csv":
        given.to_csv(path, index=False)
    else:
        given.to_json(path, orient="records", lines=True)
    samples = frame[[*key, "output_a", "output_b"]].sample(frac=1, random_state=0)
    extra = pd.DataFrame([{"item": "other", "system_a": "alpha", "system_b": "beta",
                           "output_a": "# x", "output_b": "y"}])
    pairs = tmp_path / "pairs.jsonl"
    pd.concat([samples, extra]).to_json(pairs, orient="records", lines=True)
    proc = run_cli("audit", str(path), "--pairwise", "--human", "human.pref", "--bootstrap",
                   "0", "--json", "--pairs", str(pairs))
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["type"] == "style"]
    assert [r["judge"] for r in rows] == ["judge.x", "judge.y"]
    for row in rows:
        expected = aggregated(with_texts, row["judge"], "length,markdown")
        assert expected["status"] == "ok" and row["controls"] == ["length", "markdown"]
        assert {k: row[k] for k in expected} == expected  # every number, exactly
    # one pair without its texts: the table as given
    samples.iloc[:-1].to_json(pairs, orient="records", lines=True)
    lacking = samples.iloc[-1]
    proc = run_cli("audit", str(path), "--pairwise", "--human", "human.pref", "--bootstrap",
                   "0", "--json", "--pairs", str(pairs))
    assert proc.returncode == 0, proc.stderr
    assert (f"{pairs} has no text for the pair ({lacking['item']}, {lacking['system_a']}, "
            f"{lacking['system_b']})") in proc.stderr
    rows = [r for r in json.loads(proc.stdout) if r["type"] == "style"]
    if shape == "none":
        assert rows == []
        return
    for row in rows:
        expected = aggregated(path, row["judge"], "length")
        assert row["controls"] == ["length"]
        assert {k: row[k] for k in expected} == expected


def test_a_refusal_on_the_table_with_the_texts_names_the_table_given(tmp_path: Path) -> None:
    """A negative length: aggregate refuses the table; with --pairs' texts the audit's
    reason names the table given and its line, as without them."""
    with_texts = table(tmp_path, 7, shape="texts")
    frame = pd.read_csv(with_texts, keep_default_na=False)
    given = frame.drop(columns=["output_a", "output_b"]).assign(
        length_a=frame["output_a"].str.len(), length_b=frame["output_b"].str.len())
    given.loc[9, "length_a"] = -1
    path = tmp_path / "scored.csv"
    given.to_csv(path, index=False)
    pairs = tmp_path / "pairs.jsonl"
    frame[["item", "system_a", "system_b", "output_a", "output_b"]].to_json(
        pairs, orient="records", lines=True)
    reasons = []
    for extra in ([], ["--pairs", str(pairs)]):
        proc = run_cli("audit", str(path), "--pairwise", "--human", "human.pref",
                       "--bootstrap", "0", "--json", *extra)
        assert proc.returncode == 0, proc.stderr
        rows = [r for r in json.loads(proc.stdout) if r["type"] == "style"]
        assert [r["status"] for r in rows] == ["error", "error"]
        reasons.append([r["reason"] for r in rows])
    assert str(path) in reasons[0][0] and "line 11" in reasons[0][0]
    assert reasons[1] == reasons[0]
