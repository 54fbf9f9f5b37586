"""Manski bounds and tipping points over missing cells against brute force written here
(every filling enumerated with itertools, the statistics from scipy), on small random tables
with ties; and `meta-eval --missing-bounds` end to end."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

from judgebench.cli import cli
from meta_eval.levels import evaluate
from meta_eval.missingness import domain, manski_bounds, tipping_point


def scipy_value(statistic: str, grouping: str, h: np.ndarray, m: np.ndarray) -> float:
    """The statistic from scipy over the units where both are present."""
    def one(x, y):
        ok = np.isfinite(x) & np.isfinite(y)
        x, y = x[ok], y[ok]
        if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
            return math.nan
        if statistic == "pearson":
            return float(scipy.stats.pearsonr(x, y)[0])
        if statistic == "spearman":
            return float(scipy.stats.spearmanr(x, y)[0])
        return float(scipy.stats.kendalltau(x, y)[0])

    if grouping == "none":
        return one(h.ravel(), m.ravel())
    values = [one(h[i], m[i]) for i in range(h.shape[0])]
    values = [v for v in values if math.isfinite(v)]
    return float(np.mean(values)) if values else math.nan


def table(rng, items=4, systems=4, missing=3):
    h = rng.integers(1, 4, (items, systems)).astype(float)  # ties
    m = np.round(h + rng.normal(0, 1.0, h.shape), 0)
    present = rng.random(h.shape) > 0.1
    h[~present] = m[~present] = np.nan
    cells = np.argwhere(present)
    for k in rng.choice(len(cells), missing, replace=False):
        (h if rng.random() < 0.3 else m)[tuple(cells[k])] = np.nan
    return h, m, present


def brute_bounds(statistic, grouping, h, m, present, dh, dm):
    cells = [(0, tuple(c)) for c in np.argwhere(present & np.isnan(h))] + \
            [(1, tuple(c)) for c in np.argwhere(present & np.isnan(m))]
    values = []
    for fill in itertools.product(*[dh if s == 0 else dm for s, _ in cells]):
        hh, mm = h.copy(), m.copy()
        for (s, c), v in zip(cells, fill, strict=True):
            (hh if s == 0 else mm)[c] = v
        v = scipy_value(statistic, grouping, hh, mm)
        if math.isfinite(v):
            values.append(v)
    return min(values), max(values)


def brute_tipping(statistic, grouping, h, m, present, dm, threshold):
    cells = [tuple(c) for c in np.argwhere(present & np.isnan(m) & np.isfinite(h))]
    for j in range(0, len(cells) + 1):
        for chosen in itertools.combinations(cells, j):
            for fill in itertools.product(dm, repeat=j):
                mm = m.copy()
                for c, v in zip(chosen, fill, strict=True):
                    mm[c] = v
                v = scipy_value(statistic, grouping, h, mm)
                if math.isfinite(v) and v <= threshold:
                    return j
    return None


CASES = [(s, g) for s in ("pearson", "spearman", "kendall") for g in ("none", "item")]


@pytest.mark.parametrize(("statistic", "grouping"), CASES)
@pytest.mark.parametrize("seed", range(4))
def test_bounds_match_brute_force(statistic, grouping, seed):
    rng = np.random.default_rng(seed)
    h, m, present = table(rng)
    dh, dm = domain(h), domain(m)

    def value(hh, mm):
        return evaluate(statistic, human=hh, metric=mm, grouping=grouping).value

    got = manski_bounds(value, human=h, metric=m, present=present, human_domain=dh,
                        metric_domain=dm)
    low, high = brute_bounds(statistic, grouping, h, m, present, dh, dm)
    assert got.exact and got.cells == 3
    assert got.low == pytest.approx(low, abs=1e-12)
    assert got.high == pytest.approx(high, abs=1e-12)
    observed = value(h, m)
    assert got.low <= observed + 1e-12 and observed <= got.high + 1e-12
    # the coordinate search (forced by a tiny limit) finds attained fillings: inside
    searched = manski_bounds(value, human=h, metric=m, present=present, human_domain=dh,
                             metric_domain=dm, limit=1)
    assert not searched.exact
    assert low - 1e-12 <= searched.low <= searched.high <= high + 1e-12


@pytest.mark.parametrize(("statistic", "grouping"), CASES)
@pytest.mark.parametrize("seed", range(4))
def test_tipping_point_matches_brute_force(statistic, grouping, seed):
    rng = np.random.default_rng(100 + seed)
    h, m, present = table(rng, missing=4)

    def value(hh, mm):
        return evaluate(statistic, human=hh, metric=mm, grouping=grouping).value

    dm = domain(m)
    observed = value(h, m)
    for drop in (0.05, 0.2, 0.6):
        threshold = observed - drop
        got = tipping_point(value, human=h, metric=m, present=present, metric_domain=dm,
                            threshold=threshold, limit=10**6)
        assert got.exact
        assert got.cells == brute_tipping(statistic, grouping, h, m, present, dm, threshold)
        greedy = tipping_point(value, human=h, metric=m, present=present, metric_domain=dm,
                               threshold=threshold, limit=1)
        if got.cells is not None and greedy.cells is not None:
            assert greedy.cells >= got.cells  # greedy: an upper bound on the fewest


def test_domain_is_the_scale_or_quartiles():
    assert domain(np.array([1.0, 3, 3, np.nan, 5])) == (1.0, 3.0, 5.0)
    x = np.arange(100.0)
    assert domain(x) == tuple(np.quantile(x, [0, 0.25, 0.5, 0.75, 1]))


def test_no_missing_cells_is_a_point():
    h = np.array([[1.0, 2, 3]])
    out = manski_bounds(lambda a, b: evaluate("pearson", human=a, metric=b).value,
                        human=h, metric=h, present=np.ones_like(h, bool),
                        human_domain=(1.0,), metric_domain=(1.0,))
    assert (out.low, out.high) == pytest.approx((1.0, 1.0))
    assert (out.cells, out.exact) == (0, True)


def test_cli_missing_bounds(tmp_path: Path):
    rng = np.random.default_rng(5)
    rows = []
    for item in range(3):
        for system in range(3):
            q = float(rng.integers(1, 6))
            rows.append({"item": f"i{item}", "system": f"s{system}", "human.q": q,
                         "good": float(np.clip(q + rng.integers(-1, 2), 1, 5)),
                         "bad": float(rng.integers(1, 6))})
    frame = pd.DataFrame(rows).astype({"good": object})
    frame.loc[[1, 4], "good"] = "failed"
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    result = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "human.q",
                                      "--statistic", "kendall", "--missing-bounds", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = {r["metric"]: r for r in json.loads(result.stdout)}
    h = frame["human.q"].to_numpy(float).reshape(3, 3)
    good = pd.to_numeric(frame["good"], errors="coerce").to_numpy(float).reshape(3, 3)
    present = np.ones((3, 3), bool)
    low, high = brute_bounds("kendall", "none", h, good, present, domain(h), domain(good))
    bounds = out["good"]["missing_bounds"]
    assert (bounds["low"], bounds["high"]) == pytest.approx((low, high))
    assert bounds["cells"] == 2 and bounds["exact"]
    assert out["bad"]["missing_bounds"]["cells"] == 0
    ranked = [r["metric"] for r in json.loads(result.stdout)]
    if ranked[0] == "good":
        tip = out["good"]["tipping_point"]
        assert tip["against"] == "bad" and tip["of"] == 2
        assert tip["cells"] == brute_tipping("kendall", "none", h, good, present,
                                             domain(good), out["bad"]["value"])
    text = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "human.q",
                                    "--statistic", "kendall", "--missing-bounds"],
                              catch_exceptions=False)
    assert "over 2 missing cells" in text.stdout
