"""`--format text|json|csv|markdown|latex` for meta-eval and aggregate: csv reads back to the
values --json prints, markdown and latex escape every special character, --json is
--format json, and aggregate's text shows each rule's scores."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from judgebench.render.formats import render
from judgebench.render.latex import latex_escape
from judgebench.render.markdown import markdown_escape
from judgebench.render.table import Table, results_table

#: A column (and a system) named with every character LaTeX or Markdown treat specially.
SPECIAL = "a_b%c&d#e$f{g}h~i^j\\k|l"
SPECIAL_LATEX = (r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j"
                 r"\textbackslash{}k\textbar{}l")
SPECIAL_MARKDOWN = "a_b%c&d#e$f{g}h~i^j\\\\k\\|l"
#: A name that needs CSV quoting.
QUOTED = 'x, "y"'


@pytest.fixture
def scores(tmp_path: Path) -> Path:
    rng = np.random.default_rng(7)
    rows = []
    for item in range(10):
        for system in range(5):
            q = rng.normal() + 0.4 * system
            rows.append({"item": f"d{item}", "system": f"s{system}", "good": q + rng.normal(),
                         SPECIAL: rng.normal(), "human.quality": q,
                         "r1": q + rng.normal(), "r2": q + rng.normal()})
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture
def leaderboard(tmp_path: Path) -> Path:
    frame = pd.DataFrame({"system": ["A", SPECIAL, QUOTED, "D"],
                          "t1": [0.9, 0.5, 0.4, 0.1], "t2": [0.5, 0.9, 0.3, 0.2],
                          "t3": [0.2, 0.8, 0.9, 0.1]})
    path = tmp_path / "board.csv"
    frame.to_csv(path, index=False)
    return path


def output(*args: str) -> str:
    proc = run_cli(*args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def same(csv_value: Any, json_value: Any) -> bool:
    if json_value is None:
        return csv_value is None or (isinstance(csv_value, float) and math.isnan(csv_value))
    if isinstance(json_value, list | dict):
        return json.loads(csv_value) == json_value
    if isinstance(json_value, bool):
        return bool(csv_value) is json_value and isinstance(csv_value, bool | np.bool_)
    return csv_value == json_value


def read_csv(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])


# -- meta-eval ------------------------------------------------------------------------------
META = ("--human", "human.quality", "--metric", "good", "--metric", SPECIAL,
        "--statistic", "pearson", "--statistic", "kendall", "--bootstrap", "30",
        "--rater", "r1", "--rater", "r2")


def test_meta_eval_csv_reads_back_to_the_json_values(scores: Path) -> None:
    records = json.loads(output("meta-eval", str(scores), *META, "--json"))
    table = read_csv(output("meta-eval", str(scores), *META, "--format", "csv"))
    assert len(table) == len(records) == 6  # 2 metrics + the ceiling, for 2 statistics
    assert set(table.columns) == {key for record in records for key in record}
    assert list(table.columns[:6]) == ["metric", "human", "statistic", "level", "grouping",
                                       "value"]
    for record, (_, row) in zip(records, table.iterrows(), strict=True):
        for key, value in record.items():
            assert same(row[key], value), (key, row[key], value)
    assert SPECIAL in set(table["metric"])
    ceiling = table[table["metric"] == "(human ceiling)"].iloc[0]
    assert len(json.loads(ceiling["per_rater"])) == 2


def test_meta_eval_json_is_format_json_and_text_is_the_default(scores: Path) -> None:
    args = ("meta-eval", str(scores), "--human", "human.quality", "--metric", "good")
    assert output(*args, "--json") == output(*args, "-f", "json")
    assert output(*args) == output(*args, "--format", "text")
    proc = run_cli(*args, "--json", "--format", "csv")
    assert proc.returncode == 2 and "--json means --format json" in proc.stderr


def test_meta_eval_latex_escapes_every_special_character(scores: Path) -> None:
    text = output("meta-eval", str(scores), *META, "-f", "latex")
    lines = text.splitlines()
    assert lines[0].startswith(r"\begin{tabular}{") and lines[-1] == r"\end{tabular}"
    assert r"\toprule" in lines and r"\midrule" in lines and r"\bottomrule" in lines
    header = lines[lines.index(r"\toprule") + 1]
    assert header.startswith(r"metric & human & statistic") and r"ci\_low" in header
    body = lines[lines.index(r"\midrule") + 1:lines.index(r"\bottomrule")]
    assert len(body) == 6
    columns = len(re.findall(r"(?<!\\)&", header)) + 1
    assert all(len(re.findall(r"(?<!\\)&", row)) == columns - 1 for row in body)
    special = [row for row in body if row.startswith(SPECIAL_LATEX + " & ")]
    assert len(special) == 2  # one row per statistic, name escaped as a whole
    assert SPECIAL not in text


def _markdown_cells(line: str) -> list[str]:
    inner = line.strip()[1:-1]
    cells = re.split(r"(?<!\\)\|", inner)
    return [re.sub(r"\\(.)", r"\1", cell.strip()) for cell in cells]


def test_meta_eval_markdown_escapes_pipes_and_backslashes(scores: Path) -> None:
    text = output("meta-eval", str(scores), *META, "-f", "markdown")
    lines = text.splitlines()
    header = _markdown_cells(lines[0])
    assert header[:3] == ["metric", "human", "statistic"]
    assert re.fullmatch(r"\|(---:?\|)+", lines[1])
    rows = [_markdown_cells(line) for line in lines[2:]]
    assert all(len(row) == len(header) for row in rows)  # no pipe broke a row
    assert [row[0] for row in rows].count(SPECIAL) == 2
    assert SPECIAL_MARKDOWN in text
    records = json.loads(output("meta-eval", str(scores), *META, "--json"))
    value = header.index("value")
    for record, row in zip(records, rows, strict=True):
        assert row[0] == record["metric"]
        assert float(row[value]) == pytest.approx(record["value"], abs=5e-5)


# -- aggregate ------------------------------------------------------------------------------
AGG = ("-r", "mean", "-r", "borda", "-r", "kemeny", "--bootstrap", "40")


def test_aggregate_csv_reads_back_to_the_json_values(leaderboard: Path) -> None:
    results = json.loads(output("aggregate", str(leaderboard), *AGG, "--json"))
    table = read_csv(output("aggregate", str(leaderboard), *AGG, "--format", "csv"))
    assert list(table.columns) == ["rule", "rank", "system", "score", "winner", "rank_low",
                                   "rank_high", "p_win"]
    for result in results:
        rows = table[table["rule"] == result["rule"]]
        assert list(rows["system"]) == result["ranking"]
        for _, row in rows.iterrows():
            system = row["system"]
            expected = None if result["scores"] is None else result["scores"][system]
            assert same(row["score"], expected)
            assert same(row["winner"], system in result["winners"])
            boot = result["bootstrap"]["systems"][system]
            for key in ("rank_low", "rank_high", "p_win"):
                assert same(row[key], boot[key]), key
            ahead = result["ranking"].index(system)
            tied = next((tier for tier in result["ties"] if system in tier), [system])
            assert row["rank"] == 1 + min(result["ranking"].index(s) for s in tied) <= 1 + ahead
    assert {SPECIAL, QUOTED} <= set(table["system"])


def test_aggregate_latex_and_markdown_escape_system_names(leaderboard: Path) -> None:
    latex = output("aggregate", str(leaderboard), *AGG, "-f", "latex")
    assert f"& {SPECIAL_LATEX} &" in latex and SPECIAL not in latex
    body = latex.splitlines()[4:-2]
    assert len(body) == 12 and all(len(re.findall(r"(?<!\\)&", r)) == 7 for r in body)
    markdown = output("aggregate", str(leaderboard), *AGG, "-f", "markdown")
    rows = [_markdown_cells(line) for line in markdown.splitlines()[2:]]
    assert all(len(row) == 8 for row in rows)
    assert {row[2] for row in rows} == {"A", SPECIAL, QUOTED, "D"}


def test_aggregate_json_is_format_json(leaderboard: Path) -> None:
    args = ("aggregate", str(leaderboard), "-r", "borda")
    assert output(*args, "--json") == output(*args, "--format", "json")
    proc = run_cli(*args, "--json", "-f", "latex")
    assert proc.returncode == 2 and "--json means --format json" in proc.stderr


def test_aggregate_text_shows_scores_beside_the_ranking(leaderboard: Path) -> None:
    results = {r["rule"]: r for r in json.loads(output("aggregate", str(leaderboard), "-r",
                                                       "mean", "-r", "kemeny", "--json"))}
    lines = output("aggregate", str(leaderboard), "-r", "mean", "-r", "kemeny").splitlines()
    assert lines[0].split() == ["rank", "mean", "kemeny"]
    mean = results["mean"]
    best = mean["ranking"][0]
    assert f"{best} {mean['scores'][best]:.4g}" in lines[1]
    assert results["kemeny"]["scores"] is None  # a rule without scores shows the ranking only
    assert lines[1].rstrip().endswith(results["kemeny"]["ranking"][0])


def test_list_rules_in_every_format() -> None:
    rules = json.loads(output("aggregate", "--list-rules", "--json"))
    table = read_csv(output("aggregate", "--list-rules", "-f", "csv"))
    assert list(table["name"]) == [r["name"] for r in rules]
    assert [json.loads(x) for x in table["inputs"]] == [r["inputs"] for r in rules]
    assert "\\begin{tabular}" in output("aggregate", "--list-rules", "-f", "latex")


# -- the renderer itself ----------------------------------------------------------------------
def test_renderer_formats_numbers_for_people_and_keeps_them_for_machines() -> None:
    table = Table(["name", "value", "rank", "p"], [["a", 0.123456789, 1.0, 3e-12],
                                                   ["b", None, 2.0, 0.5]])
    text = render(table, "text")
    assert "0.1235" in text and "3.00e-12" in text and " -" in text
    assert read_csv(render(table, "csv"))["value"][0] == 0.123456789
    assert "| a | 0.1235 | 1 | 3.00e-12 |" in render(table, "markdown")
    assert json.loads(render(table, "json"))[1] == {"name": "b", "value": None, "rank": 2.0,
                                                    "p": 0.5}
    assert markdown_escape("a|b\nc") == "a\\|b<br>c"
    assert latex_escape("\\&") == r"\textbackslash{}\&"


def test_a_table_with_no_rows_keeps_its_header() -> None:
    # e.g. aggregate --format csv when every rule failed on the data
    for fmt in ("csv", "markdown", "latex", "text"):
        empty = results_table([], fmt, ["rule", "system"])
        assert empty.columns == ["rule", "system"] and empty.rows == []
    assert render(results_table([], "csv", ["rule", "system"]), "csv") == "rule,system"
    empty = render(Table(["rule", "system"], []), "markdown")
    assert empty.splitlines() == ["| rule | system |", "|---|---|"]
