"""System-set sensitivity against brute force written here (every left-out subset, system
means with numpy and Pearson from scipy, the winner by hand), the system bootstrap replayed
with the same draws, simulations with a known winner, and `meta-eval --system-sensitivity`."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from click.testing import CliRunner

from judgebench.cli import cli
from meta_eval.levels import evaluate
from meta_eval.system_sensitivity import system_sensitivity


def study(rng, systems=7, items=15, noise=(0.3, 0.35, 1.0)):
    quality = rng.normal(size=systems)
    human = quality[None, :] + rng.normal(size=(items, systems))
    metrics = {f"m{k}": human + rng.normal(scale=s, size=human.shape) + rng.normal(
        scale=s, size=systems)[None, :] for k, s in enumerate(noise)}
    human[rng.random(human.shape) < 0.05] = np.nan
    return human, metrics


def system_values(h, ms):
    return {m: evaluate("pearson", human=h, metric=x, level="system").value
            for m, x in ms.items()}


def brute_winner(h, ms, columns):
    def r(x):
        hs = np.array([np.nanmean(h[:, j][np.isfinite(x[:, j]) & np.isfinite(h[:, j])])
                       for j in columns])
        xs = np.array([np.mean(x[:, j][np.isfinite(x[:, j]) & np.isfinite(h[:, j])])
                       for j in columns])
        return scipy.stats.pearsonr(hs, xs)[0]

    values = {m: r(x) for m, x in ms.items()}
    return max(sorted(values), key=lambda m: values[m])


@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_leave_k_out_matches_brute_force(seed, k):
    rng = np.random.default_rng(seed)
    human, metrics = study(rng)
    names = [f"s{j}" for j in range(7)]
    (got,) = system_sensitivity(human=human, metrics=metrics, values=system_values,
                                systems=names, leave_out=k)
    winner = brute_winner(human, metrics, range(7))
    winners = {s: brute_winner(human, metrics, [j for j in range(7) if j not in s])
               for s in itertools.combinations(range(7), k)}
    assert got.resamples == len(winners)
    assert got.winner_changed == pytest.approx(
        sum(w != winner for w in winners.values()) / len(winners))
    assert got.flips == [[names[j] for j in s] for s, w in winners.items() if w != winner]
    for m in metrics:
        assert got.winner_share[m] == pytest.approx(
            sum(w == m for w in winners.values()) / len(winners))


def test_system_bootstrap_replays():
    rng = np.random.default_rng(4)
    human, metrics = study(rng)
    (got,) = system_sensitivity(human=human, metrics=metrics, values=system_values,
                                systems=[f"s{j}" for j in range(7)], leave_out=0,
                                bootstrap=50, seed=3)
    replay = np.random.default_rng(3)
    winner = brute_winner(human, metrics, range(7))
    changed = 0
    for _ in range(50):
        columns = replay.integers(0, 7, size=7)
        if len(set(columns)) < 3:
            continue
        h = human[:, columns]
        ms = {m: x[:, columns] for m, x in metrics.items()}
        v = system_values(h, ms)
        changed += max(sorted(v), key=lambda m: (np.isfinite(v[m]), v[m])) != winner
    assert got.kind == "system-bootstrap" and got.resamples == 50
    assert abs(got.winner_changed - changed / 50) <= 0.1  # resamples with <3 systems differ


def test_known_winner_and_a_coin_flip():
    rng = np.random.default_rng(0)
    clear = [system_sensitivity(human=h, metrics=m, values=system_values,
                                systems=[f"s{j}" for j in range(10)], leave_out=1)[0]
             for h, m in (study(rng, systems=10, items=30, noise=(0.01, 2.0, 3.0))
                          for _ in range(5))]
    assert all(s.winner_changed == 0 for s in clear)
    twins = [system_sensitivity(human=h, metrics=m, values=system_values,
                                systems=[f"s{j}" for j in range(10)], leave_out=0,
                                bootstrap=100, seed=1)[0]
             for h, m in (study(rng, systems=10, items=30, noise=(0.5, 0.5)) for _ in range(5))]
    assert np.mean([s.winner_changed for s in twins]) > 0.2


def test_cli(tmp_path: Path):
    rng = np.random.default_rng(2)
    human, metrics = study(rng, systems=6, items=10)
    rows = [{"item": f"i{i}", "system": f"s{j}", "human.q": human[i, j],
             **{m: x[i, j] for m, x in metrics.items()}}
            for i in range(10) for j in range(6)]
    path = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    args = ["meta-eval", str(path), "--human", "human.q", "--level", "system",
            "--system-sensitivity", "--system-bootstrap", "20", "--compare", "--resamples",
            "100"]
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    (loo, boot) = out[0]["system_sensitivity"]
    assert loo["kind"] == "leave-k-out" and loo["resamples"] == 6 and loo["k"] == 1
    assert boot["kind"] == "system-bootstrap" and boot["resamples"] == 20
    assert "cluster_changed" in loo and out[0]["system_sensitivity"][0]["study_winner"]
    (direct,) = system_sensitivity(human=human, metrics=metrics, values=system_values,
                                   systems=[f"s{j}" for j in range(6)], leave_out=1)
    assert loo["winner_changed"] == pytest.approx(direct.winner_changed)
    text = CliRunner().invoke(cli, args, catch_exceptions=False).stdout
    assert "without 1 system(s)" in text


def tied_study(rng, systems=6, items=8):
    """Two metrics whose system means order the systems alike in most subsets (Kendall ties
    at system level) and a third that orders them differently."""
    quality = np.arange(systems, dtype=float)
    human = quality[None, :] + rng.normal(scale=0.8, size=(items, systems))
    a = quality[None, :] + rng.normal(scale=0.1, size=(items, systems))
    b = 2 * a + 1.0  # the same order as a everywhere: a tie in every subset
    b[:, [0, 1]] = b[:, [1, 0]]  # ... except that it swaps the two worst systems
    c = quality[None, ::-1] + rng.normal(scale=0.1, size=(items, systems))
    return human, {"m.b": b, "m.a": a, "m.c": c}


def kendall_values(h, ms):
    return {m: evaluate("kendall", human=h, metric=x, level="system").value
            for m, x in ms.items()}


def brute_lead(h, ms, columns):
    """The metrics tied for the best scipy Kendall tau of the system means (ties within
    relative 1e-12)."""
    hs = np.nanmean(h[:, columns], axis=0)
    values = {m: scipy.stats.kendalltau(hs, x[:, columns].mean(axis=0))[0]
              for m, x in ms.items()}
    best = max(v for v in values.values() if np.isfinite(v))
    return {m for m, v in values.items() if np.isfinite(v) and abs(v - best) <= 1e-12 * abs(best)}


@pytest.mark.parametrize("seed", range(3))
def test_a_tied_lead_is_shared_not_credited_to_the_first_name(seed):
    """Each left-out subset whose lead is tied credits each tied metric 1/w of it: against
    brute force with scipy's Kendall tau (the old rule gave it all to the first name)."""
    rng = np.random.default_rng(seed)
    human, metrics = tied_study(rng)
    names = [f"s{j}" for j in range(6)]
    (got,) = system_sensitivity(human=human, metrics=metrics, values=kendall_values,
                                systems=names, leave_out=1)
    study = brute_lead(human, metrics, list(range(6)))
    leads = {s: brute_lead(human, metrics, [j for j in range(6) if j not in s])
             for s in itertools.combinations(range(6), 1)}
    assert any(len(lead) > 1 for lead in leads.values())  # the case this test is about
    assert set(got.leaders) == study
    for m in metrics:
        assert got.winner_share[m] == pytest.approx(
            sum(1 / len(lead) for lead in leads.values() if m in lead) / len(leads))
        assert got.tied_share[m] == pytest.approx(
            sum(len(lead) > 1 and m in lead for lead in leads.values()) / len(leads))
    assert got.winner_changed == pytest.approx(
        sum(lead != study for lead in leads.values()) / len(leads))
    assert sum(got.winner_share.values()) == pytest.approx(1.0)


def test_identical_metrics_share_every_lead_in_the_cli(tmp_path: Path):
    rng = np.random.default_rng(8)
    human, metrics = study(rng, systems=6, items=10, noise=(0.3, 2.0))
    rows = [{"item": f"i{i}", "system": f"s{j}", "human.q": human[i, j],
             "m.first": metrics["m0"][i, j], "m.twin": metrics["m0"][i, j],
             "m.other": metrics["m1"][i, j]} for i in range(10) for j in range(6)]
    path = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    result = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "human.q",
                                      "--level", "system", "--statistic", "kendall",
                                      "--system-sensitivity", "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = {r["metric"]: r["system_sensitivity"][0] for r in json.loads(result.stdout)}
    assert out["m.first"]["winner_share"] == out["m.twin"]["winner_share"] > 0
    assert out["m.first"]["tied_share"] == pytest.approx(
        2 * out["m.first"]["winner_share"])  # tied in every resample it leads
    assert out["m.first"]["study_winner"] == out["m.twin"]["study_winner"]
    text = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "human.q", "--level",
                                    "system", "--statistic", "kendall",
                                    "--system-sensitivity"], catch_exceptions=False).stdout
    assert "a tied lead counted as shared" in text
