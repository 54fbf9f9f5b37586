"""`meta-eval` with several --level and --grouping values: every view from one read of the
table, each row exactly the row of the command run for that view alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

STATS = ["--statistic", "pearson", "--statistic", "kendall", "--statistic", "spearman"]


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 items x 5 systems, a rating and three metrics (ties, a NaN)."""
    rng = np.random.default_rng(4)
    lines = ["item,system,human,m1,m2,m3"]
    for i in range(12):
        for s in range(5):
            h = rng.normal()
            m3 = "" if (i, s) == (3, 2) else f"{h + rng.normal():.1f}"
            lines.append(f"i{i},s{s},{round(h * 2) / 2},{h + rng.normal():.6f},"
                         f"{h - rng.normal():.3f},{m3}")
    path = tmp_path_factory.mktemp("views") / "t.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rows(table: Path, *args: str) -> list[dict[str, object]]:
    out = run_cli("meta-eval", str(table), "--human", "human", "--higher-is-better", "m1",
                  "--higher-is-better", "m2", "--higher-is-better", "m3", *args, "--json",
                  check=True)
    return json.loads(out.stdout)


def test_several_views_are_the_separate_commands(table: Path) -> None:
    together = rows(table, "--level", "system", "--level", "segment", "--grouping", "none",
                    "--grouping", "item", "--grouping", "system", *STATS)
    separate = [*rows(table, "--level", "system", *STATS),
                *(row for g in ("none", "item", "system")
                  for row in rows(table, "--level", "segment", "--grouping", g, *STATS))]
    assert together == separate
    assert {(r["level"], r["grouping"]) for r in together} == {
        ("system", "none"), ("segment", "none"), ("segment", "item"), ("segment", "system")}


def test_groupings_alone_and_the_default(table: Path) -> None:
    two = rows(table, "--grouping", "item", "--grouping", "system")
    assert two == [*rows(table, "--grouping", "item"), *rows(table, "--grouping", "system")]
    assert rows(table) == rows(table, "--level", "segment", "--grouping", "none")


def test_text_has_one_block_per_view(table: Path) -> None:
    out = run_cli("meta-eval", str(table), "--human", "human", "--metric", "m1",
                  "--higher-is-better", "m1", "--level", "system", "--level", "segment",
                  "--grouping", "item", check=True)
    titles = [line for line in out.stdout.splitlines() if line.startswith("human ·")]
    assert [t.split(" · ")[2] for t in titles] == ["system", "segment, grouping item"]
    assert "level system, grouping none; level segment, grouping item" in out.stderr


def test_system_level_with_a_grouping_alone_is_still_an_error(table: Path) -> None:
    out = run_cli("meta-eval", str(table), "--human", "human", "--level", "system",
                  "--grouping", "item")
    assert out.returncode == 2 and "grouping 'none'" in out.stderr


@pytest.mark.parametrize("flag", [["--missing-bounds"], ["--system-sensitivity"]])
def test_one_view_options(table: Path, flag: list[str]) -> None:
    out = run_cli("meta-eval", str(table), "--human", "human", "--higher-is-better", "m1",
                  "--higher-is-better", "m2", "--higher-is-better", "m3",
                  "--grouping", "item", "--grouping", "system", *flag)
    assert out.returncode == 2 and "one --level and one --grouping" in out.stderr
