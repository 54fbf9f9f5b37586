"""`judgebench meta-eval` bookkeeping (issue 18): line numbers that pandas does not copy,
and scipy.stats imported only by the statistics that need it (not by the p-values)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgebench.errors import InputError
from judgebench.tables.columns import numeric_columns
from judgebench.tables.io import LineNumbers, read_table

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def table(tmp_path: Path) -> Path:
    path = tmp_path / "scores.csv"
    rows = ["item,system,human.q,m1,m2"]
    rows += [f"d{i},s{s},{(i * s) % 5},{i + s * 0.5},{(i - s) * 0.25}"
             for i in range(30) for s in range(4)]
    rows[77] = "d19,s0,3,oops,1.0"  # line 78 of the file
    path.write_text("\n".join(rows) + "\n")
    return path


def test_line_numbers_are_shared_not_copied(table):
    frame = read_table(table)
    lines = frame.attrs["lines"]
    assert isinstance(lines, LineNumbers) and list(lines) == list(range(2, 122))
    assert copy.deepcopy(lines) is lines and copy.copy(lines) is lines
    assert frame["m2"].attrs["lines"] is lines  # a column access copies nothing
    assert frame[frame["system"] != "s1"].attrs["lines"] is lines
    assert json.loads(json.dumps(frame.attrs)) == {"lines": list(range(2, 122))}


def test_an_error_still_names_the_line_after_column_accesses(table):
    frame = read_table(table)
    for _ in range(3):
        frame["m2"].sum()
    with pytest.raises(InputError) as info:
        numeric_columns(frame, ["m1"], str(table))
    assert info.value.line == 78 and "'oops'" in str(info.value)


def test_a_table_read_with_line_numbers_writes_to_parquet(table, tmp_path):
    frame = read_table(table)
    frame.drop(columns=["m1"]).to_parquet(tmp_path / "out.parquet")
    assert (tmp_path / "out.parquet").stat().st_size > 0


def modules_after(args: list[str]) -> dict[str, bool]:
    code = ("import sys\nfrom judgebench.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as exc:\n    assert not exc.code\n"
            "print({m: m in sys.modules for m in ('scipy.stats', 'meta_eval')})")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'plugins'}")
    out = subprocess.run([sys.executable, "-c", code, "meta-eval", *args], env=env,
                         capture_output=True, text=True, check=True).stdout
    return eval(out.strip().splitlines()[-1])


@pytest.mark.parametrize("options", [["--grouping", "item"],
                                     ["--statistic", "kendall-23"],
                                     ["--statistic", "acc-eq", "--level", "system"]])
def test_statistics_without_a_scipy_p_value_do_not_import_scipy_stats(tmp_path, options):
    path = tmp_path / "t.csv"
    path.write_text("item,system,human.q,m1\n" + "".join(
        f"d{i},s{s},{(i + s) % 3},{i * 0.1 + s}\n" for i in range(6) for s in range(4)))
    assert modules_after([str(path), "--human", "human.q", *options]) == {
        "scipy.stats": False, "meta_eval": True}


@pytest.mark.parametrize("options", [[], ["--statistic", "kendall", "--level", "system"]])
def test_ungrouped_p_values_do_not_import_scipy_stats(tmp_path, options):
    # meta_eval.p_values: scipy.stats' p-values from scipy.special
    path = tmp_path / "t.csv"
    path.write_text("item,system,human.q,m1\n" + "".join(
        f"d{i},s{s},{(i + s) % 3},{i * 0.1 + s}\n" for i in range(6) for s in range(4)))
    assert modules_after([str(path), "--human", "human.q", *options]) == {
        "scipy.stats": False, "meta_eval": True}
