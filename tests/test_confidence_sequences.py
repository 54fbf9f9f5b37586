"""The hedged betting confidence sequence (Waudby-Smith and Ramdas 2024, Theorem 3, PrPl
bets) against the paper's capital processes written here as plain products over a grid; its
time-uniform coverage over 1,000 seeded studies; its width at SummEval's size against a
fixed-n interval, where the empirical-Bernstein form it replaces could not separate what a
permutation test separates; and `score --until-settled` saying when the items ran out."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli, write_jsonl

from meta_eval.sequential import (
    GRID,
    betting_confidence_sequence,
    eb_confidence_sequence,
    sequential_clusters,
)


def loop_betting(x: np.ndarray, alpha: float, c: float = 0.5, theta: float = 0.5,
                 grid: int = GRID) -> tuple[np.ndarray, np.ndarray]:
    """The paper's PrPl-Hedged sequence, one observation at a time: the capital of every
    grid point m as a running product, C_t the points whose hedged capital is below 1/alpha
    (each end widened to the grid point just outside), intersected over time (a time that
    would empty it passed over)."""
    m = np.linspace(0.0, 1.0, grid)
    up, down = np.ones(grid), np.ones(grid)
    total = deviations = 0.0
    mu_prev, s2_prev = 0.5, 0.25
    low, high = 0.0, 1.0
    lows, highs = [], []
    for t, xi in enumerate(x, start=1):
        bet = math.sqrt(2 * math.log(2 / alpha) / (s2_prev * t * math.log(1 + t)))
        for j, mj in enumerate(m):
            plus = min(bet, c / mj) if mj > 0 else bet
            minus = min(bet, c / (1 - mj)) if mj < 1 else bet
            up[j] *= 1 + plus * (xi - mj)
            down[j] *= 1 - minus * (xi - mj)
        inside = np.flatnonzero(np.maximum(theta * up, (1 - theta) * down) < 1 / alpha)
        if inside.size:
            a = max(low, m[max(inside[0] - 1, 0)])
            b = min(high, m[min(inside[-1] + 1, grid - 1)])
            if a <= b:
                low, high = a, b
        lows.append(low)
        highs.append(high)
        total += xi
        mu = (0.5 + total) / (t + 1)
        deviations += (xi - mu) ** 2
        mu_prev, s2_prev = mu, (0.25 + deviations) / (t + 1)
    del mu_prev
    return np.array(lows), np.array(highs)


def samples(kind: str, rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    """n draws in [0, 1] of a distribution with a known mean: heavy ties, both ends, and
    the narrow spread of per-item correlation differences."""
    if kind == "bernoulli":
        return (rng.random(n) < 0.3).astype(float), 0.3
    if kind == "three-points":
        return rng.choice([0.0, 0.5, 1.0], size=n, p=[0.2, 0.5, 0.3]), 0.55
    if kind == "beta":
        return rng.beta(2, 5, size=n), 2 / 7
    return rng.uniform(0.45, 0.61, size=n), 0.53  # a difference of correlations, rescaled


@pytest.mark.parametrize("kind", ["bernoulli", "three-points", "beta", "narrow"])
def test_the_sequence_is_the_papers_capital_processes(kind: str) -> None:
    rng = np.random.default_rng(len(kind))
    x, _ = samples(kind, rng, 60)
    got_low, got_high = betting_confidence_sequence(x, 0.05, grid=401)
    ref_low, ref_high = loop_betting(x, 0.05, grid=401)
    step = 1 / 400
    # products against sums of logs: a point whose capital is 1/alpha to rounding may fall
    # either side, moving a bound by one grid step at most
    assert np.max(np.abs(got_low - ref_low)) <= step + 1e-12
    assert np.max(np.abs(got_high - ref_high)) <= step + 1e-12
    assert np.mean(got_low == ref_low) >= 0.95 and np.mean(got_high == ref_high) >= 0.95
    assert np.all(np.diff(got_low) >= 0) and np.all(np.diff(got_high) <= 0)


def test_constant_and_extreme_sequences() -> None:
    for value in (0.0, 1.0, 0.5):
        x = np.full(200, value)
        low, high = betting_confidence_sequence(x, 0.05)
        assert low[-1] <= value <= high[-1]
        assert high[-1] - low[-1] < 0.05  # no spread: it closes in on the value
    assert betting_confidence_sequence(np.zeros(0), 0.05)[0].size == 0


def test_time_uniform_coverage_over_1000_seeded_studies() -> None:
    """The true mean leaves the sequence at some time in at most alpha of the studies."""
    alpha, misses, widths = 0.1, 0, []
    kinds = ("bernoulli", "three-points", "beta", "narrow")
    for study in range(1000):
        rng = np.random.default_rng([7, study])
        x, mean = samples(kinds[study % 4], rng, 100)
        low, high = betting_confidence_sequence(x, alpha)
        misses += bool(np.any((low > mean) | (high < mean)))
        widths.append(high[-1] - low[-1])
    print(f"1000 studies: the mean missed in {misses / 1000:.3f} (alpha {alpha})")
    assert misses / 1000 <= alpha


def test_at_summeval_size_it_separates_what_a_permutation_test_does() -> None:
    """100 items whose per-item Kendall differences have SummEval's ROUGE-1-against-random
    mean and spread (0.20 and 0.30): a sign-flip permutation test puts p far below 0.005;
    the betting sequence's lower bound is above 0 at 100 items, about 2.5 times the
    half-width of a fixed-n t interval, where the empirical-Bernstein form was about 5 times
    as wide and could not decide."""
    rng = np.random.default_rng(0)
    d = np.clip(rng.normal(0.20, 0.30, size=100), -2, 2)
    flips = rng.choice([-1.0, 1.0], size=(20000, d.size))
    assert np.mean((flips * d).mean(axis=1) >= d.mean()) < 0.005
    fixed = 1.984 * d.std(ddof=1) / math.sqrt(d.size)  # t(99) quantile 0.975
    x = (d + 2) / 4
    bet_low, bet_high = betting_confidence_sequence(x, 0.05)
    eb_low, eb_high = eb_confidence_sequence(x, 0.05)
    assert 4 * bet_low[-1] - 2 > 0 > 4 * eb_low[-1] - 2
    assert 2 * (bet_high[-1] - bet_low[-1]) / fixed < 3 < 4.5 < 2 * (eb_high[-1] - eb_low[-1]
                                                                    ) / fixed
    values = np.column_stack([d, np.zeros_like(d)])
    betting = sequential_clusters(values, ["rouge1", "random"], order="given")
    eb = sequential_clusters(values, ["rouge1", "random"], order="given", form="eb")
    assert betting.clusters == {"rouge1": 1, "random": 2} and betting.settled
    assert not eb.settled and eb.exhausted
    assert betting.to_dict()["confidence_sequence"].startswith("hedged betting")


def test_until_settled_says_when_the_items_ran_out(tmp_path: Path) -> None:
    """Two metrics that score alike cannot be told apart on 20 items: the run says the items
    ran out, not that it settled."""
    rng = np.random.default_rng(1)
    words = [f"w{k}" for k in range(8)]
    records = [{"item": f"d{i}", "system": f"s{j}", "input": "x", "reference": " ".join(words),
                "output": " ".join(rng.choice(words, size=int(rng.integers(2, 8)))),
                "human": {"q": float(rng.normal())}}
               for i in range(20) for j in range(4)]
    samples_path = write_jsonl(tmp_path / "gen.jsonl", records)
    proc = run_cli("score", str(samples_path), "-m", "lexical.token_f1", "-m",
                   "lexical.rouge1", "--until-settled", "human.q", "-o",
                   str(tmp_path / "s.csv"), "--store", str(tmp_path / "runs.db"), "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert not summary["settled"] and summary["exhausted"]
    assert summary["items_scored"] == summary["items_total"] == 20
    assert "score: not settled (items exhausted): all 20 items scored" in proc.stderr
    assert "settled after" not in proc.stderr
