"""Power before labelling: the Wishart-drawn simulation against plain Monte Carlo written
here (Gaussian units drawn one by one, Williams' test from Steiger 1980 with numpy's
correlations), the items it asks for reaching the power on fresh studies, Spearman-Brown for
annotators, and `meta-eval --power-for` end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

from judgebench.cli import cli
from meta_eval.power import items_needed, power_plan, simulated_power, spearman_brown


def monte_carlo_power(n, r_a, r_b, r_ab, alpha, sims, seed):
    rng = np.random.default_rng(seed)
    sigma = np.array([[1, r_a, r_b], [r_a, 1, r_ab], [r_b, r_ab, 1]])
    chol = np.linalg.cholesky(sigma)
    hits = 0
    for _ in range(sims):
        x = rng.normal(size=(n, 3)) @ chol.T
        c = np.corrcoef(x.T)
        r1, r2, r12 = c[0, 1], c[0, 2], c[1, 2]
        det = 1 - r1**2 - r2**2 - r12**2 + 2 * r1 * r2 * r12
        t = (r1 - r2) * math.sqrt((n - 1) * (1 + r12) / (
            2 * (n - 1) / (n - 3) * det + ((r1 + r2) / 2) ** 2 * (1 - r12) ** 3))
        hits += scipy.stats.t.sf(t, n - 3) <= alpha
    return hits / sims


@pytest.mark.parametrize(("n", "r_a", "delta", "r_ab"),
                         [(40, 0.6, 0.15, 0.7), (120, 0.4, 0.1, 0.5), (25, 0.8, 0.3, 0.6),
                          (200, 0.3, 0.05, 0.9)])
def test_wishart_power_matches_monte_carlo(n, r_a, delta, r_ab):
    ours = simulated_power(n, r_a=r_a, r_b=r_a - delta, r_ab=r_ab, sims=4000, seed=1)
    theirs = monte_carlo_power(n, r_a, r_a - delta, r_ab, 0.05, 1500, 2)
    se = math.sqrt(theirs * (1 - theirs) / 1500 + ours * (1 - ours) / 4000)
    assert abs(ours - theirs) <= 4 * se + 0.005


def test_items_needed_reach_the_target_on_fresh_studies():
    n, p = items_needed(r_a=0.6, r_b=0.45, r_ab=0.7, sims=2000, seed=0)
    assert p >= 0.8
    fresh = monte_carlo_power(n, 0.6, 0.45, 0.7, 0.05, 1000, 9)
    assert fresh >= 0.8 - 4 * math.sqrt(0.16 / 1000)
    fewer = monte_carlo_power(max(5, int(n * 0.6)), 0.6, 0.45, 0.7, 0.05, 1000, 10)
    assert fewer < 0.8


def test_annotators_by_spearman_brown():
    assert spearman_brown(0.5, 1) == 0.5
    assert spearman_brown(0.5, 3) == pytest.approx(0.75)
    plan = power_plan(0.1, r_a=0.5, r_ab=0.6, rho=0.4, pilot_annotators=2,
                      annotators=(1, 2, 4), sims=1000)
    needed = {k: n for k, (n, _, _) in plan.needed.items()}
    assert needed[1] > needed[2] > needed[4]
    # the delta a single annotator sees is attenuated by sqrt(rel_1 / rel_2)
    assert plan.needed[1][2] == pytest.approx(
        0.1 * math.sqrt(spearman_brown(0.4, 1) / spearman_brown(0.4, 2)))
    with pytest.raises(ValueError, match="smaller delta"):
        power_plan(1.5, r_a=0.9, r_ab=0.95)


def test_cli(tmp_path: Path):
    rng = np.random.default_rng(0)
    n = 80
    truth = rng.normal(size=n)
    raters = {f"r{k}": truth + rng.normal(size=n) for k in range(3)}
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(n)], "system": "s",
                          "human.mean": np.mean(list(raters.values()), axis=0), **raters,
                          "good": truth + rng.normal(scale=0.7, size=n),
                          "bad": truth + rng.normal(scale=1.5, size=n)})
    path = tmp_path / "pilot.csv"
    frame.to_csv(path, index=False)
    result = CliRunner().invoke(cli, ["meta-eval", "power", str(path), "--human", "human.mean",
                                      "--metric", "good", "--metric", "bad", "--rater", "r0",
                                      "--rater", "r1", "--rater", "r2", "--delta", "0.1",
                                      "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["metric"] == "good" and row["against"] == "bad"
    assert row["r_a"] == pytest.approx(np.corrcoef(frame["human.mean"], frame["good"])[0, 1])
    plan = {p["annotators"]: p["items"] for p in row["plan"]}
    assert set(plan) == {1, 2, 3, 5, 6}
    assert plan[1] > plan[3] > plan[6]
    n3, _ = items_needed(r_a=row["r_a"], r_b=row["r_a"] - 0.1, r_ab=row["r_ab"], sims=2000)
    assert plan[3] == n3
    text = CliRunner().invoke(cli, ["meta-eval", "power", str(path), "--human", "human.mean",
                                    "--metric", "good", "--metric", "bad", "--delta", "0.1"],
                              catch_exceptions=False)
    assert "as piloted" in text.stdout


@pytest.mark.parametrize("seed", range(6))
def test_power_uses_analytics_williams_on_random_correlations(seed: int) -> None:
    """power.williams_p is analytic.williams_test elementwise, and both are psych::r.test's
    T2 written out (scipy's t law), on correlations of random data: near-equal pairs,
    |r| near 1, non-positive variance (NaN), NaN input and n from 4 to 10^6."""
    from meta_eval.analytic import williams_test
    from meta_eval.power import williams_p

    rng = np.random.default_rng(4700 + seed)
    n = [4, 7, 30, 500, 10_000, 1_000_000][seed]
    x = rng.normal(size=(300, 40, 3)) @ np.linalg.cholesky(
        np.array([[1, 0.5, 0.45], [0.5, 1, 0.6], [0.45, 0.6, 1]])).T
    x[:100] = np.round(x[:100])  # ties
    c = np.array([np.corrcoef(d.T) for d in x])
    r1, r2, r12 = c[:, 0, 1].copy(), c[:, 0, 2].copy(), c[:, 1, 2].copy()
    r1[:5], r2[:5], r12[:5] = 0.999999, 0.999998, 0.9999995
    r1[5:10], r2[5:10], r12[5:10] = 0.9, -0.9, -1.0  # K <= 0: no test
    r1[10], r2[11], r12[12] = np.nan, np.nan, np.nan
    r2[13] = r1[13]
    got = williams_p(r1, r2, r12, n)
    for i in range(len(r1)):
        one = williams_test(r_ha=r1[i], r_hb=r2[i], r_ab=r12[i], n=n)
        det = 1 - r1[i]**2 - r2[i]**2 - r12[i]**2 + 2 * r1[i] * r2[i] * r12[i]
        var = 2 * (n - 1) / (n - 3) * det + ((r1[i] + r2[i]) / 2) ** 2 * (1 - r12[i]) ** 3
        if not var > 0:
            assert math.isnan(got[i]) and math.isnan(one)
            continue
        t = (r1[i] - r2[i]) * math.sqrt((n - 1) * (1 + r12[i])) / math.sqrt(var)
        want = float(scipy.stats.t.sf(t, n - 3))
        assert got[i] == one
        assert abs(one - want) <= 1e-9 * max(want, 1e-300) or abs(one - want) < 1e-15
    assert got[13] == 0.5
