"""Sequential meta-evaluation: the empirical-Bernstein confidence sequence against the
formula written here as a loop (Waudby-Smith and Ramdas 2024, Theorem 2), its time-uniform
coverage, and simulated studies with known truth: the rate of studies with any wrong
decision stays at or below alpha, with the items saved reported (a 1,000-study version is
slow); `meta-eval --sequential` end to end."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from judgebench.cli import cli
from meta_eval.sequential import eb_confidence_sequence, sequential_clusters
from meta_eval.statistics import group_values


def loop_cs(x, alpha):
    lows, highs, low, high = [], [], 0.0, 1.0
    s_x = s_dev = s_lam = s_lam_x = s_vpsi = 0.0
    mu_prev, s2_prev = 0.5, 0.25
    for t, xi in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * math.log(1 + t))), 0.5)
        psi = (-math.log(1 - lam) - lam) / 4
        s_vpsi += 4 * (xi - mu_prev) ** 2 * psi
        s_lam += lam
        s_lam_x += lam * xi
        s_x += xi
        mu = (0.5 + s_x) / (t + 1)
        s_dev += (xi - mu) ** 2
        s2 = (0.25 + s_dev) / (t + 1)
        centre, width = s_lam_x / s_lam, (math.log(2 / alpha) + s_vpsi) / s_lam
        low, high = max(low, centre - width, 0.0), min(high, centre + width, 1.0)
        lows.append(low)
        highs.append(high)
        mu_prev, s2_prev = mu, s2
    return np.array(lows), np.array(highs)


@pytest.mark.parametrize("seed", range(4))
def test_confidence_sequence_matches_the_formula(seed):
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 5, size=300) if seed % 2 else rng.integers(0, 2, 300).astype(float)
    low, high = eb_confidence_sequence(x, 0.05)
    ref_low, ref_high = loop_cs(x, 0.05)
    np.testing.assert_allclose(low, ref_low, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, rtol=1e-12, atol=1e-12)


def test_time_uniform_coverage():
    rng = np.random.default_rng(0)
    misses = 0
    for _ in range(400):
        x = rng.beta(0.5, 0.5, size=500)  # mean 0.5, high variance
        low, high = eb_confidence_sequence(x, 0.1)
        misses += bool(np.any((low > 0.5) | (high < 0.5)))
    assert misses / 400 <= 0.1


NOISE = (0.6, 0.6, 1.6, 1.6)  # pairs (0,1) and (2,3) equal by exchangeability


def simulate_values(rng, items, systems=6):
    quality = rng.normal(size=(items, systems))
    human = quality + rng.normal(scale=0.5, size=quality.shape)
    metrics = [quality + rng.normal(scale=s, size=quality.shape) for s in NOISE]
    return np.column_stack([group_values("pearson", human=human, metric=m)
                            for m in metrics]), np.stack(metrics)


@functools.cache
def true_differences():
    values, _ = simulate_values(np.random.default_rng(123), 200_000)
    return np.nanmean(values, axis=0)


def wrong(result, truth, margin):
    index = {f"m{k}": k for k in range(len(NOISE))}
    for d in result.decisions:
        a, b = index[d.better], index[d.worse]
        gap = truth[a] - truth[b]
        equal = NOISE[a] == NOISE[b]
        if d.decision == "better" and (equal or gap < 0):
            return True
        if d.decision == "equivalent" and abs(gap) > margin:
            return True
    return False


def run_studies(studies, items, margin, alpha=0.05, seed=0):
    truth = true_differences()
    assert truth[0] - truth[2] > 4 * margin  # the unequal pairs are far apart
    rng = np.random.default_rng(seed)
    errors, used, settled = 0, [], 0
    names = [f"m{k}" for k in range(len(NOISE))]
    for s in range(studies):
        values, _ = simulate_values(rng, items)
        result = sequential_clusters(values, names, alpha=alpha, margin=margin, batch=25,
                                     seed=s)
        errors += wrong(result, truth, margin)
        used.append(result.items_used)
        settled += result.settled
    return errors / studies, float(np.mean(used)) / items, settled / studies


def test_wrong_decisions_at_most_alpha_fast():
    rate, used, settled = run_studies(100, 3000, margin=0.07)
    print(f"100 studies: wrong-decision rate {rate:.3f}, items used {used:.1%}, "
          f"settled {settled:.1%}")
    assert rate <= 0.05
    assert used < 1 and settled > 0.5  # it stops early, and usually settles


@pytest.mark.slow
def test_wrong_decisions_at_most_alpha_1000_studies():
    rate, used, settled = run_studies(1000, 3000, margin=0.07, seed=1)
    print(f"1000 studies: wrong-decision rate {rate:.4f}, items used {used:.1%} "
          f"(saved {1 - used:.1%}), settled {settled:.1%}")
    assert rate <= 0.05


def test_top_k_and_greedy():
    rng = np.random.default_rng(5)
    values, scores = simulate_values(rng, 1500)
    names = [f"m{k}" for k in range(4)]
    top = sequential_clusters(values, names, top_k=2, batch=25)
    assert top.settled and {d.better for d in top.decisions if d.decision == "better"} \
        <= {"m0", "m1"}
    assert top.clusters["m0"] == top.clusters["m1"] < top.clusters["m2"]
    greedy = sequential_clusters(values, names, top_k=2, batch=25, order="greedy",
                                 metric_scores=scores)
    assert greedy.to_dict()["anytime_valid"] is False


def test_cli(tmp_path: Path):
    rng = np.random.default_rng(9)
    items, systems = 400, 5
    quality = rng.normal(size=(items, systems))
    human = quality + rng.normal(scale=0.5, size=quality.shape)
    rows = [{"item": f"i{i}", "system": f"s{j}", "human.q": human[i, j],
             "good": quality[i, j] + rng.normal(scale=0.3),
             "bad": quality[i, j] + rng.normal(scale=3.0)}
            for i in range(items) for j in range(systems)]
    path = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    args = ["meta-eval", str(path), "--human", "human.q", "--grouping", "item",
            "--sequential", "--batch", "20"]
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = {r["metric"]: r["sequential"] for r in json.loads(result.stdout)}
    seq = out["good"]
    assert seq["settled"] and seq["items_used"] < items and seq["cluster"] == 1
    assert out["bad"]["cluster"] == 2
    assert seq["judge_calls_saved"] == 2 * systems * seq["items_saved"]
    assert seq["human_labels_saved"] == systems * seq["items_saved"]
    bad = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "human.q",
                                   "--sequential"])
    assert bad.exit_code == 2 and "--grouping item" in bad.output
