"""The ranking `estimate --compare` gives (meta_eval.rank_intervals): the rank intervals equal a
direct computation from the authors' PPI++ intervals (ppi-python) of every paired difference
at the Bonferroni level; the clusters equal a direct walk with scipy's normal tail; over 1,000
simulated studies with a judge biased by a covariate (length) the intervals hold every true
rank at once at least as often as promised; and the command's `rank` rows are those numbers."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import ppi_py
import pytest
from conftest import run_cli
from scipy.stats import norm

from meta_eval.estimation import paired_difference, ppi_mean
from meta_eval.rank_intervals import (
    corrected_clusters,
    one_sided_p,
    rank_intervals,
    ranks_cover,
)


def study(rng: np.random.Generator, *, systems: int, items: int, share: float,
          scale: float = 1.0, gaps: float = 0.25
          ) -> tuple[dict[str, float], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """True system means (people's expected rating), and per system the judge on every item
    and the human score on a labelled share (the same items for every system). The judge is
    lenient on long outputs (a covariate it mixes into its score), and ratings are rounded to
    halves (ties)."""
    names = [f"s{k}" for k in range(systems)]
    truth = {n: gaps * k * scale for k, n in enumerate(names)}
    labelled = rng.random(items) < share
    labelled[:3] = True
    difficulty = rng.normal(size=items)
    judges, humans = {}, {}
    for n in names:
        length = rng.gamma(2.0, 1.0, size=items)
        human = np.round((truth[n] / scale + difficulty + rng.normal(size=items)) * 2) / 2
        judge = 0.8 * human + 0.4 * length + rng.normal(scale=0.5, size=items)
        judges[n] = judge * scale
        humans[n] = np.where(labelled, human * scale, np.nan)
    return truth, judges, humans


def direct_intervals(judges: dict[str, np.ndarray], humans: dict[str, np.ndarray],
                     confidence: float) -> dict[str, tuple[int, int]]:
    """Each system's rank interval from ppi-python's interval of every paired difference at
    level 1 - (1 - confidence) / m."""
    names = list(judges)
    m = len(names) * (len(names) - 1) // 2
    above = dict.fromkeys(names, 0)
    below = dict.fromkeys(names, 0)
    for a, b in itertools.combinations(names, 2):
        d = humans[a] - humans[b]
        dhat = judges[a] - judges[b]
        lab = np.isfinite(d)
        (lower,), (upper,) = ppi_py.ppi_mean_ci(d[lab], dhat[lab], dhat[~lab],
                                                 alpha=(1 - confidence) / m)
        if lower > 0:  # a surely better than b
            above[b] += 1
            below[a] += 1
        elif upper < 0:
            above[a] += 1
            below[b] += 1
    return {n: (1 + above[n], len(names) - below[n]) for n in names}


def ours(judges: dict[str, np.ndarray], humans: dict[str, np.ndarray], confidence: float):
    points = {n: ppi_mean(judge=judges[n], human=humans[n], confidence=confidence).point
              for n in judges}
    differences = {}
    for a, b in itertools.combinations(judges, 2):
        e = paired_difference(judge_a=judges[a], judge_b=judges[b], human_a=humans[a],
                              human_b=humans[b], confidence=confidence)
        differences[(a, b)] = (e.point, e.standard_error)
    return points, differences


@pytest.mark.parametrize(("seed", "scale", "confidence"), [
    (0, 1.0, 0.95), (1, 1e-120, 0.9), (2, 1e150, 0.8), (3, 1.0, 0.99), (4, 1.0, 0.5)])
def test_rank_intervals_equal_bonferroni_ppi_intervals(seed: int, scale: float,
                                                       confidence: float) -> None:
    rng = np.random.default_rng(seed)
    _, judges, humans = study(rng, systems=6, items=400, share=0.15, scale=scale, gaps=0.15)
    points, differences = ours(judges, humans, confidence)
    found = {r.system: (r.rank_low, r.rank_high)
             for r in rank_intervals(points=points, differences=differences,
                                     confidence=confidence)}
    assert found == direct_intervals(judges, humans, confidence)
    assert any(low > 1 or high < 6 for low, high in found.values())  # something decided


def test_ranks_tie_within_relative_1e_12_and_a_missing_pair_is_undecided() -> None:
    points = {"a": 0.3, "b": 0.1 + 0.2, "c": 0.1}
    assert points["a"] != points["b"]
    differences = {("a", "c"): (0.2, 0.01), ("b", "c"): (0.2, 0.01)}
    found = {r.system: r for r in rank_intervals(points=points, differences=differences)}
    assert found["a"].rank == found["b"].rank == 1 and found["c"].rank == 3
    assert (found["a"].rank_low, found["a"].rank_high) == (1, 2)  # (a, b) never compared
    assert (found["c"].rank_low, found["c"].rank_high) == (3, 3)
    with pytest.raises(ValueError, match="standard error"):
        rank_intervals(points=points, differences={("a", "b"): (0.0, math.nan)})


def test_clusters_equal_a_direct_walk() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        k = int(rng.integers(3, 8))
        names = [f"m{i}" for i in range(k)]
        values = np.round(rng.normal(size=k), 1)  # ties
        points = dict(zip(names, values.tolist(), strict=True))
        differences = {(a, b): (points[a] - points[b] + float(rng.normal(scale=0.05)),
                                float(rng.choice([0.0, 0.05, 0.2])))
                       for a, b in itertools.combinations(names, 2)}
        alpha = 0.1
        found = corrected_clusters(points=points, differences=differences, alpha=alpha)

        def p(better: str, worse: str, pairs: dict = differences) -> float:
            if (better, worse) in pairs:
                d, se = pairs[(better, worse)]
            else:
                d, se = pairs[(worse, better)]
                d = -d
            if se == 0:
                return 0.0 if d > 0 else 1.0 if d < 0 else 0.5
            return float(norm.sf(d / se))

        order = [m.metric for m in found.metrics]
        assert [points[n] for n in order] == sorted(values.tolist(), reverse=True)
        cluster, start, expected = 1, 0, []
        for i, name in enumerate(order):
            if any(p(better, name) <= alpha for better in order[start:i]):
                cluster, start = cluster + 1, i
            expected.append(cluster)
        assert [m.cluster for m in found.metrics] == expected
        for (better, worse), value in found.p_values.items():
            assert value == pytest.approx(p(better, worse), abs=1e-15)
    assert one_sided_p(0.0, 0.0) == 0.5


def test_rank_intervals_cover_every_true_rank_in_1000_studies() -> None:
    """Nominal 0.9 for all ranks at once; the Bonferroni intervals are conservative, so the
    bar is the nominal level minus three Monte-Carlo standard errors."""
    rng = np.random.default_rng(2024)
    studies, confidence = 1000, 0.9
    covered = 0
    widths = []
    for _ in range(studies):
        truth, judges, humans = study(rng, systems=4, items=120, share=0.25, gaps=0.3)
        points, differences = ours(judges, humans, confidence)
        intervals = rank_intervals(points=points, differences=differences,
                                   confidence=confidence)
        covered += ranks_cover(intervals, truth)
        widths += [r.rank_high - r.rank_low for r in intervals]
    floor = confidence - 3 * math.sqrt(confidence * (1 - confidence) / studies)
    assert covered / studies >= floor, covered
    assert np.mean(widths) < 2.5  # the intervals decide something: not all [1, 4]


def test_compare_prints_the_ranking_of_the_corrected_estimates(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    _, judges, humans = study(rng, systems=5, items=200, share=0.3, gaps=0.5)
    rows = [{"item": f"i{k:03d}", "system": n, "judge": judges[n][k], "human": humans[n][k]}
            for n in judges for k in range(200)]
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    proc = run_cli("estimate", str(path), "--judge", "judge", "--human", "human", "--compare",
                   "--confidence", "0.9", "-f", "json")
    assert proc.returncode == 0, proc.stderr
    ranks = [r for r in json.loads(proc.stdout) if r["type"] == "rank"]
    points, differences = ours(judges, humans, 0.9)
    expected = rank_intervals(points=points, differences=differences, confidence=0.9)
    assert [(r["system"], r["rank"], r["rank_low"], r["rank_high"]) for r in ranks] == [
        (r.system, r.rank, r.rank_low, r.rank_high) for r in expected]
    for r in ranks:
        assert r["point"] == pytest.approx(points[r["system"]], rel=1e-12)
        assert "estimate.rank@1|statistic:mean|" in r["signature"]
        assert "|rank_ci:bonferroni|" in r["signature"]
    clusters = corrected_clusters(points=points, differences=differences, alpha=0.1)
    assert {r["system"]: r["cluster"] for r in ranks} == {
        m.metric: m.cluster for m in clusters.metrics}
    assert max(r["cluster"] for r in ranks) > 1
    text = run_cli("estimate", str(path), "--judge", "judge", "--human", "human", "--compare")
    assert text.returncode == 0, text.stderr
    assert "ranking by PPI++" in text.stdout and "rank interval" in text.stdout
