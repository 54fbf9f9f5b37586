"""`wasserstein-real` (Wasserstein-1 on real-valued scores) and the weighted tau options
(`weighted-tau-human`, `-metric`, `-product`), kernel and `meta-eval --json`, against
scipy.stats.wasserstein_distance and scipy.stats.weightedtau on random data with ties, NaN
cells (a unit missing either side is dropped) and magnitudes from 1e-300 to 1e300."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import run_cli

from meta_eval.distribution import wasserstein_real_groups
from meta_eval.pairs import snap


def sides(rng: np.random.Generator, shape: tuple[int, ...], kind: int
          ) -> tuple[np.ndarray, np.ndarray]:
    latent = rng.normal(size=shape)
    h = latent + rng.normal(size=shape) * rng.uniform(0.1, 2)
    m = 0.7 * latent + rng.normal(size=shape) + rng.uniform(-1, 1)
    if kind == 1:  # ratings and a rounded metric: ties within and across the sides
        h, m = np.round(h * 2) / 2, np.round(m, 1)
    elif kind == 2:  # tiny people, huge metric
        h, m = h * 1e-300, m * 1e300
    elif kind == 3:  # both huge, opposite signs: differences near 2e300
        h, m = h * 1e300, -m * 1e300
    elif kind == 4:  # identical multisets, shuffled: W1 = 0
        m = rng.permutation(h, axis=-1)
    h[rng.random(shape) < 0.15] = np.nan
    m[rng.random(shape) < 0.15] = np.nan
    return h, m


def close(got: float, want: float, scale: float) -> bool:
    return abs(got - want) <= 1e-12 * max(abs(want), scale * 1e-3, 1e-300)


@pytest.mark.parametrize("seed", range(25))
def test_kernel_is_scipys_per_group(seed: int) -> None:
    rng = np.random.default_rng(4900 + seed)
    groups, units = int(rng.integers(1, 5)), int(rng.integers(1, 40))
    h, m = sides(rng, (groups, units), seed % 5)
    got = wasserstein_real_groups(human=h, metric=m)
    assert got.shape == (groups,)
    for g in range(groups):
        ok = np.isfinite(h[g]) & np.isfinite(m[g])
        if not ok.any():
            assert np.isnan(got[g])
            continue
        want = scipy.stats.wasserstein_distance(h[g][ok], m[g][ok])
        scale = float(np.abs(np.concatenate([h[g][ok], m[g][ok]])).max())
        assert close(float(got[g]), float(want), scale), (g, got[g], want)
        if seed % 5 == 4 and ok.all():
            assert got[g] == 0.0


def test_edges() -> None:
    nan = np.nan
    got = wasserstein_real_groups(human=np.array([[nan, 1.0], [2.0, 3.0], [nan, nan]]),
                                  metric=np.array([[1.0, nan], [2.0, 3.0], [1.0, 1.0]]))
    assert np.isnan(got[0]) and got[1] == 0.0 and np.isnan(got[2])
    extreme = wasserstein_real_groups(human=np.array([1.7e308, -1.7e308]),
                                      metric=np.array([-1.7e308, 1.7e308]))
    assert float(extreme) == 0.0  # the same two values: no overflow on the way
    shifted = wasserstein_real_groups(human=np.array([-1.7e308, 0.0]),
                                      metric=np.array([0.0, 1.7e308]))
    assert float(shifted) == pytest.approx(1.7e308, rel=1e-15)
    tiny = wasserstein_real_groups(human=np.array([3e-300, 1e-300]),
                                   metric=np.array([1e-300, 2e-300]))
    assert float(tiny) == pytest.approx(0.5e-300, rel=1e-15)


def table(tmp_path: Path, seed: int, kind: int) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    h, m = sides(rng, (8, 6), kind)
    a = np.round(h * 0.5, 1) if kind != 2 else h * 3
    frame = pd.DataFrame({"item": np.repeat([f"i{i}" for i in range(8)], 6),
                          "system": np.tile([f"s{j}" for j in range(6)], 8),
                          "human.q": h.ravel(), "m": m.ravel(), "a": a.ravel()})
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path, frame


@pytest.mark.parametrize("kind", range(5))
def test_cli_numbers_are_scipys(tmp_path: Path, kind: int) -> None:
    path, frame = table(tmp_path, 77 + kind, kind)
    names = ["wasserstein-real", "weighted-tau", "weighted-tau-human", "weighted-tau-metric",
             "weighted-tau-product"]
    for grouping in ("none", "item"):
        proc = run_cli("meta-eval", str(path), "--human", "human.q", "--grouping", grouping,
                       *[arg for n in names for arg in ("--statistic", n)], "--json")
        assert proc.returncode == 0, proc.stderr
        rows = json.loads(proc.stdout)
        assert {r["statistic"] for r in rows} == set(names)
        for row in rows:
            groups = [frame] if grouping == "none" else [g for _, g in frame.groupby("item")]
            want = []
            for g in groups:
                h, m = g["human.q"].to_numpy(float), g[row["metric"]].to_numpy(float)
                ok = np.isfinite(h) & np.isfinite(m)
                h, m = h[ok], m[ok]
                if row["statistic"] == "wasserstein-real":
                    want.append(scipy.stats.wasserstein_distance(h, m) if ok.any() else np.nan)
                    continue
                hs, ms = snap(h), snap(m)
                if len(h) < 2 or np.ptp(hs) == 0 or np.ptp(ms) == 0:
                    want.append(np.nan)
                    continue
                options: dict[str, dict[str, Any]] = {"weighted-tau": {"rank": True},
                           "weighted-tau-human": {"rank": None},
                           "weighted-tau-metric": {"rank": None},
                           "weighted-tau-product": {"rank": True, "additive": False}}
                x, y = (ms, hs) if row["statistic"] == "weighted-tau-metric" else (hs, ms)
                want.append(scipy.stats.weightedtau(x, y, **options[row["statistic"]])
                            .statistic)
            expected = float(np.nanmean(np.asarray(want, dtype=float)))
            scale = float(np.nanmax(np.abs(frame[["human.q", row["metric"]]].to_numpy())))
            assert row["value"] is not None
            assert close(row["value"], expected, scale if row["statistic"] ==
                         "wasserstein-real" else 1.0), (row, expected)
            if row["statistic"] == "wasserstein-real":
                assert row["better"] == "lower" and row["flipped"] is False
