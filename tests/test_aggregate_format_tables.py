"""`aggregate -f csv|markdown|latex` carry what the text and JSON formats carry: each rule's
per-system figures (Bradley-Terry's standard errors and Wald intervals, win-rate's standard
errors and counts), bradley-terry's order effect and its style-controlled ranking with the
covariates' coefficients, one table each, every number the JSON's (csv to every digit, the
others as shown: 4 decimals)."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from test_style_control import _table

RULES = ("-r", "bradley-terry", "-r", "win-rate")


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "pairs.csv"
    frame = _table(np.random.default_rng(11), 4, 160, ties=True)
    frame["quality_a"] *= 1e3  # coefficients far from 1, standard errors near 1e-4
    frame.to_csv(path, index=False)
    return path


def aggregate(path: Path, fmt: str, *extra: str) -> str:
    proc = run_cli("aggregate", str(path), *RULES, "--winner", "judge", "--control",
                   "length,quality", "-f", fmt, *extra)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def expected(path: Path) -> dict[str, list[dict[str, Any]]]:
    """What each table must hold, read from --json: rows of (keys, numbers)."""
    outs = json.loads(aggregate(path, "json"))
    ranking, order, style, coefficients = [], [], [], []
    for out in outs:
        rule = out["rule"]
        for system in out["ranking"]:
            numbers = {"score": out["scores"][system]}
            numbers |= {key: values[system] for key, values in out["extra"].items()}
            ranking.append({"rule": rule, "system": system, **numbers})
        if "order_effect" in out:
            effect = out["order_effect"]
            order.append({"rule": rule, "h": effect["effect"]["estimate"],
                          "se": effect["effect"]["se"], "ci_low": effect["effect"]["low"],
                          "ci_high": effect["effect"]["high"],
                          "judgements": effect["judgements"],
                          "signature": effect["signature"]})
        if "style_control" in out:
            sc = out["style_control"]
            for system, both in sc["systems"].items():
                c, r = both["controlled"], both["raw"]
                style.append({"rule": rule, "system": system, "rank": c["rank"],
                              "controlled": c["estimate"], "se": c["se"], "ci_low": c["low"],
                              "ci_high": c["high"], "raw_rank": r["rank"], "raw": r["estimate"],
                              "raw_se": r["se"], "raw_ci_low": r["low"],
                              "raw_ci_high": r["high"], "signature": sc["signature"]})
            for name, c in sc["coefficients"].items():
                coefficients.append({"rule": rule, "covariate": name,
                                     "coefficient": c["estimate"], "se": c["se"],
                                     "ci_low": c["low"], "ci_high": c["high"],
                                     "signature": sc["signature"]})
    assert ranking and order and style and coefficients
    assert any("se" in r for r in ranking) and any("standard_error" in r for r in ranking)
    return {"ranking": ranking, "order": order, "style": style, "coefficients": coefficients}


def kind(columns: list[str]) -> str:
    if "h" in columns:
        return "order"
    if "covariate" in columns:
        return "coefficients"
    if "controlled" in columns:
        return "style"
    return "ranking"


def csv_tables(text: str) -> dict[str, list[dict[str, str]]]:
    found = {}
    for block in text.strip("\n").split("\n\n"):
        rows = list(csv.DictReader(io.StringIO(block)))
        found[kind(list(rows[0]))] = rows
    return found


def markdown_tables(text: str) -> dict[str, list[dict[str, str]]]:
    found = {}
    for block in re.findall(r"(?:^\|.*\|$\n?)+", text, flags=re.MULTILINE):
        lines = block.strip("\n").splitlines()
        split = [[c.strip().replace("\\", "") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
                 for line in lines]
        found[kind(split[0])] = [dict(zip(split[0], row, strict=True)) for row in split[2:]]
    return found


def latex_tables(text: str) -> dict[str, list[dict[str, str]]]:
    found = {}
    for block in re.findall(r"\\begin\{tabular\}.*?\\end\{tabular\}", text, flags=re.DOTALL):
        lines = [line.removesuffix(r" \\") for line in block.splitlines()
                 if line.endswith(r" \\")]
        split = [[c.strip().replace(r"\_", "_").replace(r"\textbar{}", "|")
                  for c in line.split(" & ")] for line in lines]
        found[kind(split[0])] = [dict(zip(split[0], row, strict=True)) for row in split[1:]]
    return found


def same(shown: str, value: Any, exact: bool) -> bool:
    if value is None:
        return shown in ("", "--", "-")
    if isinstance(value, str):
        return shown == value
    if exact:
        return float(shown) == float(value)
    number = float(shown)
    return math.isclose(number, float(value), rel_tol=1e-3, abs_tol=5.01e-5)


@pytest.mark.parametrize("fmt", ["csv", "markdown", "latex"])
def test_every_format_holds_the_json_numbers(pairs: Path, fmt: str) -> None:
    want = expected(pairs)
    text = aggregate(pairs, fmt)
    tables = {"csv": csv_tables, "markdown": markdown_tables, "latex": latex_tables}[fmt](text)
    assert set(tables) == set(want), text
    for name, rows in want.items():
        shown = tables[name]
        keys = ("rule", "covariate") if name == "coefficients" else (
            ("rule",) if name == "order" else ("rule", "system"))
        by_key = {tuple(r[k] for k in keys): r for r in shown}
        assert len(by_key) == len(rows), (name, shown)
        for row in rows:
            got = by_key[tuple(row[k] for k in keys)]
            for field, value in row.items():
                assert field in got, (name, field, list(got))
                assert same(got[field], value, fmt == "csv"), (name, field, got[field], value)


def test_the_csv_ranking_table_reads_back_alone(pairs: Path) -> None:
    """The first csv table is the one a single-table reader got before: rule, rank, system,
    score, winner first, then the rule's per-system figures."""
    first = aggregate(pairs, "csv").split("\n\n")[0]
    header = next(csv.reader(io.StringIO(first)))
    assert header[:5] == ["rule", "rank", "system", "score", "winner"]
    assert {"se", "wald_low", "wald_high", "standard_error", "n_total"} <= set(header)


def test_a_fit_without_an_estimate_is_a_row_with_its_reason() -> None:
    from judgebench.render.formats import render_tables
    from judgebench.render.table import (
        COEFFICIENT_COLUMNS,
        ORDER_EFFECT_COLUMNS,
        STYLE_COLUMNS,
        results_table,
    )
    from judgebench.services.bt_models import OrderEffect, StyleControl

    effect = OrderEffect(("j.ab", "j.ba"), 0.95, 12.0, 3, None, "no finite estimate", "sig-o")
    style = StyleControl(("length",), ("length",), 0.95, 12, ("a", "b"), (), (), (),
                         "separated by length", "sig-s")
    tables = [("rankings", results_table([{"rule": "bradley-terry", "system": "a"}], "csv",
                                         ("rule", "system"))),
              ("order", results_table([{"rule": "bt", **effect.row()}], "csv",
                                      ORDER_EFFECT_COLUMNS)),
              ("style", results_table([{"rule": "bt", **r} for r in style.system_rows()],
                                      "csv", STYLE_COLUMNS))]
    assert style.coefficient_rows() == [] and COEFFICIENT_COLUMNS[0] == "rule"
    blocks = render_tables(tables, "csv").split("\n\n")
    order = next(csv.DictReader(io.StringIO(blocks[1])))
    assert (order["status"], order["reason"], order["h"]) == ("error", "no finite estimate", "")
    assert order["signature"] == "sig-o" and order["judgements"] == "12.0"
    row = next(csv.DictReader(io.StringIO(blocks[2])))
    assert (row["status"], row["reason"], row["signature"]) == ("error", "separated by length",
                                                                "sig-s")
    with pytest.raises(ValueError, match="csv, markdown or latex"):
        render_tables(tables, "json")
