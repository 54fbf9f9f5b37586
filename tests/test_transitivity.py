"""Intransitivity and Bradley-Terry misfit: cyclic triples against brute force over every
triple, the likelihood-ratio test against a Bradley-Terry fit written here (Hunter's 2004 MM
algorithm), its size on data simulated from Bradley-Terry, its power on planted cycles, and
`meta-eval --pairwise --transitivity` end to end."""

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
from meta_eval.transitivity import transitivity


def brute_cycles(a, b, p):
    systems = sorted(set(a) | set(b))
    wins = {(x, y): 0.0 for x in systems for y in systems}
    for x, y, v in zip(a, b, p, strict=True):
        if np.isfinite(v):
            wins[(x, y)] += v
            wins[(y, x)] += 1 - v

    def beats(x, y):
        return wins[(x, y)] > wins[(y, x)]

    cyclic = triples = 0
    for x, y, z in itertools.combinations(systems, 3):
        if any(wins[(u, v)] == wins[(v, u)] for u, v in ((x, y), (y, z), (x, z))):
            continue
        triples += 1
        if (beats(x, y) and beats(y, z) and beats(z, x)) or \
                (beats(y, x) and beats(z, y) and beats(x, z)):
            cyclic += 1
    return cyclic, triples, wins, systems


def mm_bradley_terry(wins, systems, iterations=20000):
    """Hunter (2004) MM updates: pi_i = W_i / sum_j n_ij / (pi_i + pi_j)."""
    pi = {s: 1.0 for s in systems}
    for _ in range(iterations):
        new = {}
        for i in systems:
            w = sum(wins[(i, j)] for j in systems if j != i)
            d = sum((wins[(i, j)] + wins[(j, i)]) / (pi[i] + pi[j])
                    for j in systems if j != i)
            new[i] = w / d
        total = sum(new.values())
        pi = {s: v / total for s, v in new.items()}
    return pi


def brute_lr(wins, systems):
    pi = mm_bradley_terry(wins, systems)
    g = 0.0
    pairs = 0
    for i, j in itertools.combinations(systems, 2):
        n = wins[(i, j)] + wins[(j, i)]
        if n == 0:
            continue
        pairs += 1
        for x, y in ((i, j), (j, i)):
            if wins[(x, y)] > 0:
                g += 2 * wins[(x, y)] * (math.log(wins[(x, y)] / n)
                                         - math.log(pi[x] / (pi[x] + pi[y])))
    df = pairs - (len(systems) - 1)
    return g, df, float(scipy.stats.chi2.sf(g, df))


def simulate(rng, systems=5, items=40, cycle=0.0, soft=False):
    strength = rng.normal(size=systems)
    rows = []
    for item in range(items):
        for i, j in itertools.combinations(range(systems), 2):
            logit = strength[i] - strength[j]
            if cycle and (j - i) % systems in (1,):  # planted: each beats the next
                logit += cycle
            if cycle and (j - i) == systems - 1:
                logit -= 3 * cycle
            prob = 1 / (1 + math.exp(-logit))
            v = prob if soft else float(rng.random() < prob)
            if rng.random() < 0.1:
                v = 0.5  # ties
            if rng.random() < 0.05:
                v = math.nan
            rows.append((f"i{item}", f"s{i}", f"s{j}", v))
    items_, a, b, p = (np.array(x) for x in zip(*rows, strict=True))
    return items_, a, b, p.astype(float)


@pytest.mark.parametrize("seed", range(8))
def test_cycles_and_lr_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    items, a, b, p = simulate(rng, systems=int(rng.integers(3, 7)), items=int(rng.integers(3, 9)),
                              cycle=float(rng.choice([0.0, 1.5])), soft=bool(seed % 2))
    got = transitivity(items=items, system_a=a, system_b=b, preference=p, bootstrap=50)
    cyclic, triples, wins, systems = brute_cycles(a, b, p)
    assert (got.cyclic, got.triples) == (cyclic, triples)
    for pair in got.cycle_pairs:
        x, y = pair["system_a"], pair["system_b"]
        others = [z for z in systems if z not in (x, y)]
        count = sum(1 for z in others if all(wins[(u, v)] != wins[(v, u)]
                                             for u, v in ((x, y), (y, z), (x, z)))
                    and brute_cycles(*_triple(a, b, p, (x, y, z)))[0])
        assert pair["cycles"] == count
    if got.p_value is not None:
        g, df, pv = brute_lr(wins, systems)
        assert got.df == df
        assert got.lr_statistic == pytest.approx(g, rel=1e-5, abs=1e-6)
        assert got.p_value == pytest.approx(pv, rel=1e-4, abs=1e-8)


def _triple(a, b, p, keep):
    ok = np.isin(a, keep) & np.isin(b, keep)
    return a[ok], b[ok], p[ok]


def test_lr_size_under_bradley_terry_and_power_on_cycles():
    rng = np.random.default_rng(42)
    rejected = 0
    for _ in range(200):
        items, a, b, p = simulate(rng, systems=5, items=30)
        got = transitivity(items=items, system_a=a, system_b=b, preference=p, bootstrap=0)
        rejected += got.p_value is not None and got.p_value <= 0.05
    assert rejected / 200 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)
    items, a, b, p = simulate(np.random.default_rng(1), systems=5, items=60, cycle=2.0)
    got = transitivity(items=items, system_a=a, system_b=b, preference=p, bootstrap=200)
    assert got.p_value < 1e-6 and got.cyclic > 0
    assert got.ci[0] <= got.share <= got.ci[1]


def test_cli(tmp_path: Path):
    items, a, b, p = simulate(np.random.default_rng(3), systems=4, items=30, cycle=2.0)
    verdict = np.where(np.isnan(p), "failed", np.where(p == 0.5, "tie",
                                                       np.where(p == 1, "a", "b")))
    frame = pd.DataFrame({"item": items, "system_a": a, "system_b": b, "judge.x": verdict,
                          "human.pref": np.where(np.isnan(p), "tie", verdict)})
    path = tmp_path / "pairs.csv"
    frame.to_csv(path, index=False)
    result = CliRunner().invoke(cli, ["meta-eval", "transitivity", str(path), "--human",
                                      "human.pref", "--json",
                                      "--bootstrap", "100"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = {r["judge"]: r for r in json.loads(result.stdout)}
    assert set(out) == {"judge.x", "human.pref"}
    got = transitivity(items=items, system_a=a, system_b=b, preference=p, bootstrap=100)
    assert out["judge.x"]["cyclic_triples"] == got.cyclic
    assert out["judge.x"]["bt_p_value"] == pytest.approx(got.p_value)
    text = CliRunner().invoke(cli, ["meta-eval", "transitivity", str(path), "--human",
                                    "human.pref"], catch_exceptions=False)
    assert "cyclic triples" in text.stdout
