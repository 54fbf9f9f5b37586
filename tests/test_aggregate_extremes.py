"""Aggregation on huge but finite scores: no overflow, same ranking as exact arithmetic."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from meta_eval import aggregation as agg


def _exact_means(frame: pd.DataFrame, weights: dict[str, float]) -> dict[str, Fraction]:
    total = sum(Fraction(w) for w in weights.values())
    return {row.system: sum(Fraction(getattr(row, c)) * Fraction(w) for c, w in weights.items())
            / total for row in frame.itertuples()}


@pytest.mark.parametrize("seed", range(5))
def test_mean_and_borda_on_scores_near_the_largest_float(seed: int) -> None:
    rng = np.random.default_rng(seed)
    systems = [f"s{i}" for i in range(6)]
    frame = pd.DataFrame({"system": systems,
                          **{f"v{j}": rng.choice([-1.0, 1.0], 6) * rng.uniform(0.5, 1.79, 6)
                             * 1e308 for j in range(4)}})
    frame.loc[1, "v0"] = frame.loc[2, "v0"]  # a tie within a voter
    weights = {"v0": 42.0, "v1": 26.0, "v2": 15.0, "v3": 17.0}
    profile = agg.profile_from_leaderboard(frame, system="system", weights=weights)
    result = agg.RULES["mean"].rank(profile)
    exact = _exact_means(frame, weights)
    for system, value in result.to_dict()["scores"].items():
        assert np.isfinite(value)
        assert value == pytest.approx(float(exact[system]), rel=1e-12)
    assert result.ranking == sorted(systems, key=lambda s: (-exact[s], s))
    borda = agg.RULES["borda"].rank(profile).to_dict()["scores"]
    for system in systems:  # points: weighted count of systems beaten plus half the ties
        points = 0.0
        for column, w in weights.items():
            mine = frame.set_index("system")[column]
            points += w * ((mine[system] > mine).sum() + 0.5 * ((mine[system] == mine).sum() - 1))
        assert borda[system] == pytest.approx(points, rel=1e-12)
