"""PreparedTable.read (one read of a scores table), TaskSet and finite_or_none, each checked
against an independent computation (a pandas pivot, numpy, Task.run one by one)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from judgebench.errors import InputError
from judgebench.services.meta_eval import from_options, meta_eval, task_set
from judgebench.tables.failed import parse_failed_as
from judgebench.tables.prepared import PreparedTable
from meta_eval.numerics import finite_or_none
from meta_eval.task import Task, TaskSet

SYSTEMS = ("A", "B", "C", "D")


def _table(tmp_path: Path, *, seed: int = 0, items: int = 12, failed: int = 3,
           sidecar: dict | None = None) -> tuple[Path, pd.DataFrame]:
    """A wide table with ties, an extreme magnitude, NaN and `failed` cells in `judge`."""
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(items):
        for system in SYSTEMS:
            rows.append({"item": f"i{item:02d}", "system": system,
                         "human.q": float(rng.integers(1, 4)),  # ties
                         "err": float(rng.normal()) * 1e12,       # extreme magnitude
                         "judge": float(rng.integers(0, 5))})
    frame = pd.DataFrame(rows)
    frame.loc[5, "human.q"] = np.nan
    text = frame.astype(object)
    for position in rng.choice(len(frame), failed, replace=False):
        text.loc[position, "judge"] = "failed"
    path = tmp_path / "scores.csv"
    text.to_csv(path, index=False)
    if sidecar is not None:
        Path(f"{path}.meta.json").write_text(json.dumps(sidecar), encoding="utf-8")
    return path, text


def _pivot(frame: pd.DataFrame, column: str) -> np.ndarray:
    wide = frame.pivot(index="item", columns="system", values=column)
    return wide.loc[sorted(frame["item"].unique()), list(SYSTEMS)].to_numpy(dtype=float)


def test_matrices_oriented_and_raw_match_a_pandas_pivot(tmp_path: Path) -> None:
    path, text = _table(tmp_path)
    table = PreparedTable.read(path, ["human.q"], lower=["err"])
    assert table.metrics == ["err", "judge"]
    assert not table.infos["err"].higher_is_better
    assert table.infos["err"].direction_from == "flag"
    expected = text.replace("failed", np.nan).astype({"err": float, "judge": float})
    oriented = table.matrices(["human.q", "err", "judge"])
    raw = table.matrices(["human.q", "err", "judge"], oriented=False)
    np.testing.assert_array_equal(raw["err"], _pivot(expected, "err"))
    np.testing.assert_array_equal(oriented["err"], -_pivot(expected, "err"))
    np.testing.assert_array_equal(oriented["judge"], _pivot(expected, "judge"))
    np.testing.assert_array_equal(raw["human.q"], _pivot(expected.astype({"human.q": float}),
                                                         "human.q"))
    assert table.matrices(["human.q", "err"]) is table.matrices(["human.q", "err"])


@pytest.mark.parametrize("kind", ["min", "max", "-7.5", "missing"])
def test_failed_cells_are_counted_as_failed_as_says(tmp_path: Path, kind: str) -> None:
    path, text = _table(tmp_path, seed=3, failed=4)
    table = PreparedTable.read(path, ["human.q"], ["judge"],
                               failed_as=parse_failed_as(kind, pairwise=False))
    mask = (text["judge"] == "failed").to_numpy()
    others = pd.to_numeric(text["judge"][~mask]).to_numpy(dtype=float)
    fill = {"min": others.min(), "max": others.max(), "-7.5": -7.5, "missing": np.nan}[kind]
    np.testing.assert_array_equal(table.frame["judge"].to_numpy()[mask], np.full(4, fill))
    np.testing.assert_array_equal(table.frame["judge"].to_numpy()[~mask], others)
    assert table.failed["judge"]["rows"] == 4
    assert table.failed["judge"]["told_by"] == "cells"


def test_excluding_systems_keeps_the_failed_masks_on_their_rows(tmp_path: Path) -> None:
    path, text = _table(tmp_path, seed=5, failed=6)
    table = PreparedTable.read(path, ["human.q"], ["judge"], exclude_systems=["A"],
                               failed_as=parse_failed_as("max", pairwise=False))
    kept = text[text["system"] != "A"].reset_index(drop=True)
    mask = (kept["judge"] == "failed").to_numpy()
    assert set(table.frame["system"]) == {"B", "C", "D"}
    assert table.failed["judge"]["rows"] == int(mask.sum())
    # the maximum is over the rows read, of every system (before leaving A out)
    whole = pd.to_numeric(text["judge"][text["judge"] != "failed"]).max()
    np.testing.assert_array_equal(table.frame["judge"].to_numpy()[mask],
                                  np.full(int(mask.sum()), whole))


def test_an_unknown_excluded_system_names_the_file_and_option(tmp_path: Path) -> None:
    path, _ = _table(tmp_path)
    with pytest.raises(InputError) as caught:
        PreparedTable.read(path, ["human.q"], exclude_systems=["Z"])
    assert caught.value.field == "--exclude-system" and str(path) in str(caught.value)


def test_a_text_cell_names_its_line_and_column(tmp_path: Path) -> None:
    path, text = _table(tmp_path, failed=0)
    text.loc[7, "err"] = "oops"
    text.to_csv(path, index=False)
    with pytest.raises(InputError) as caught:
        PreparedTable.read(path, ["human.q"], ["err"])
    assert caught.value.field == "err" and caught.value.line == 9  # header + 0-based 7


def test_turns_are_laid_out_for_the_views(tmp_path: Path) -> None:
    frame = pd.DataFrame({"item": ["c1"] * 4 + ["c2"] * 4,
                          "system": ["A", "A", "B", "B"] * 2,
                          "turn": [1, 2] * 4, "human.q": [1.0, 2, 3, 4, 2, 1, 4, 3],
                          "judge": [0.1, 0.2, 0.3, 0.5, 0.2, 0.1, 0.6, 0.4]})
    by_conversation = PreparedTable.read(frame.copy(), ["human.q"],
                                         views=[("segment", "item")])
    assert by_conversation.layout == "conversation"
    assert list(by_conversation.matrices(["judge"]).systems) == ["A #1", "A #2", "B #1",
                                                                  "B #2"]
    by_unit = PreparedTable.read(frame.copy(), ["human.q"])
    assert by_unit.layout == "unit"
    assert by_unit.matrices(["judge"]).items == ["c1 #1", "c1 #2", "c2 #1", "c2 #2"]
    with pytest.raises(InputError):
        PreparedTable.read(frame.copy(), ["human.q"],
                           views=[("segment", "item"), ("segment", "none")])


def test_corpus_scores_oriented_and_raw(tmp_path: Path) -> None:
    sidecar = {"columns": {"err": {"higher_is_better": False}},
               "corpus": [{"system": s, "metric": "err", "value": v}
                          for s, v in zip(SYSTEMS, (1.5, -2.0, 0.0, 1e9), strict=True)]}
    path, _ = _table(tmp_path, failed=0, sidecar=sidecar)
    table = PreparedTable.read(path, ["human.q"], use_corpus=True)
    assert table.infos["err"].direction_from == "sidecar"
    raw = table.corpus_scores(["D", "A", "Z"], oriented=False)
    np.testing.assert_array_equal(raw["err"], [1e9, 1.5, np.nan])
    np.testing.assert_array_equal(table.corpus_scores(["D", "A"])["err"], [-1e9, -1.5])
    assert "judge" not in raw


def test_taskset_product_order_and_run_match_tasks_run_one_by_one(tmp_path: Path) -> None:
    path, _ = _table(tmp_path, seed=9, failed=2)
    table = PreparedTable.read(path, ["human.q"])
    base = Task(human="human.q", bootstrap=50, seed=4)
    tasks = TaskSet.product(base, view=[("segment", "none"), ("system", "none")],
                            statistic=["pearson", "kendall"])
    assert [(t.level, t.statistic) for t in tasks] == [
        ("segment", "pearson"), ("segment", "kendall"), ("system", "pearson"),
        ("system", "kendall")]
    assert tasks.views == [("segment", "none"), ("system", "none")]
    assert len(tasks + TaskSet((base,))) == 5
    matrices = table.matrices(["human.q", *table.metrics])
    for task, result in zip(tasks, tasks.run(matrices, table.metrics), strict=True):
        alone = task.run(matrices, table.metrics)
        for metric in table.metrics:
            a, b = result[metric].result, alone[metric].result
            assert (a.value, a.ci_low, a.ci_high) == (b.value, b.ci_low, b.ci_high) or (
                math.isnan(a.value) and math.isnan(b.value))
    with pytest.raises(ValueError, match="not Task attributes"):
        TaskSet.product(base, nosuch=[1])


def test_the_service_over_a_taskset_is_the_keyword_form(tmp_path: Path) -> None:
    path, _ = _table(tmp_path, seed=11, failed=3)
    statistics = ("pearson", "acc-eq")
    keywords = from_options(path, humans=["human.q"], grouping="item", lower=["err"],
                            failed_as="min", statistics=statistics, bootstrap=40,
                            compare=True, resamples=60)
    table = PreparedTable.read(path, ["human.q"], lower=["err"],
                               failed_as=parse_failed_as("min", pairwise=False),
                               views=[("segment", "item")])
    tasks = task_set(humans=["human.q"], views=[("segment", "item")], statistics=statistics,
                     bootstrap=40, compare=True, resamples=60)
    assert meta_eval(table, tasks).to_dict() == keywords.to_dict()


def test_finite_or_none() -> None:
    assert finite_or_none(None) is None
    assert finite_or_none(float("nan")) is None
    assert finite_or_none(np.float32("inf")) is None
    assert finite_or_none(-np.inf) is None
    assert finite_or_none(np.float32(0.5)) == 0.5 and type(finite_or_none(np.float32(0.5))) \
        is float
    assert finite_or_none(3) == 3.0
    assert finite_or_none(-1e308) == -1e308
