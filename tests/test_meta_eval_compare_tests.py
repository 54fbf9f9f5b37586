"""`meta-eval --compare`: every pairwise test's p-value (in --json, and in text with -v), and
system level with corpus-scored columns (compared without them, marked "not compared").

The p-values are checked against Williams' test written out here from the formula (Williams
1959, Steiger 1980 eq. 3) on scipy's Pearson correlations, on data with ties, NaN cells and
scores of magnitude 1e150.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from conftest import run_cli


def williams_p(h: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """One-sided p of H1: corr(h, a) > corr(h, b), on the units all three have."""
    ok = np.isfinite(h) & np.isfinite(a) & np.isfinite(b)
    h, a, b = h[ok], a[ok], b[ok]
    n = len(h)
    r_ha = scipy.stats.pearsonr(h, a)[0]
    r_hb = scipy.stats.pearsonr(h, b)[0]
    r_ab = scipy.stats.pearsonr(a, b)[0]
    k = 1 - r_ha**2 - r_hb**2 - r_ab**2 + 2 * r_ha * r_hb * r_ab
    t = (r_ha - r_hb) * np.sqrt((n - 1) * (1 + r_ab)) / np.sqrt(
        2 * k * (n - 1) / (n - 3) + ((r_ha + r_hb) / 2) ** 2 * (1 - r_ab) ** 3)
    return float(scipy.stats.t.sf(t, n - 3))


def scores_table(tmp_path: Path, seed: int = 0) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    rows = []
    for item in range(15):
        for system in range(8):
            q = rng.normal() + system * 0.2
            rows.append({"item": f"i{item}", "system": f"s{system}",
                         "human.q": round(q + rng.normal() * 0.4),  # integers: many ties
                         "close": round(q + rng.normal() * 0.6, 1),
                         "far": (q + rng.normal() * 1.5) * 1e150,
                         "noise": rng.normal(),
                         "ties": float(round(q))})
    frame = pd.DataFrame(rows)
    frame.loc[[3, 17, 40], "close"] = np.nan
    frame.loc[[5, 17], "human.q"] = np.nan
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path, frame


METRICS = ("close", "far", "noise", "ties")


def _json(*args: str) -> list[dict]:
    proc = run_cli("meta-eval", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_has_every_pairwise_p_value(tmp_path):
    path, frame = scores_table(tmp_path)
    out = _json(str(path), "--human", "human.q", "--compare", "--test", "williams")
    order = [r["metric"] for r in out]
    assert sorted(order) == sorted(METRICS)
    h = frame["human.q"].to_numpy(float)
    for i, row in enumerate(out):
        below = order[i + 1:]
        assert [c["against"] for c in row["comparisons"]] == below
        for c in row["comparisons"]:
            expected = williams_p(h, frame[row["metric"]].to_numpy(float),
                                  frame[c["against"]].to_numpy(float))
            assert c["p_value"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
            assert c["resamples"] == 0 and c["p_value_early"] is False
    # every unordered pair once
    pairs = {(r["metric"], c["against"]) for r in out for c in r["comparisons"]}
    assert len(pairs) == len(list(itertools.combinations(METRICS, 2)))


def test_permutation_p_values_cover_every_pair_and_text_shows_them_with_v(tmp_path):
    path, _ = scores_table(tmp_path)
    args = (str(path), "--human", "human.q", "--compare", "--grouping", "item",
            "--resamples", "200")
    out = _json(*args)
    pairs = [(r["metric"], c["against"], c["p_value"]) for r in out for c in r["comparisons"]]
    assert len(pairs) == 6 and all(0 <= p <= 1 for *_, p in pairs)
    quiet = run_cli("meta-eval", *args)
    assert quiet.returncode == 0, quiet.stderr
    assert "p=" not in quiet.stdout
    for verbose in (("meta-eval", *args, "-v"), ("-v", "meta-eval", *args)):
        proc = run_cli(*verbose)
        assert proc.returncode == 0, proc.stderr
        for a, b, p in pairs:
            line = next(x for x in proc.stdout.splitlines() if f" {a} > {b} " in x)
            assert f"p={p:.4g}" in line


def test_system_level_compares_the_columns_without_corpus_scores(tmp_path):
    path, frame = scores_table(tmp_path)
    systems = sorted(frame["system"].unique())
    rng = np.random.default_rng(5)
    corpus_values = {s: float(v) for s, v in zip(systems, rng.normal(size=len(systems)),
                                                  strict=True)}
    corpus = tmp_path / "corpus.csv"
    pd.DataFrame([{"system": s, "metric": "close", "value": v}
                  for s, v in corpus_values.items()]).to_csv(corpus, index=False)
    out = _json(str(path), "--human", "human.q", "--level", "system", "--corpus",
                str(corpus), "--compare", "--test", "williams")
    by = {r["metric"]: r for r in out}
    assert by["close"]["system_score"] == "corpus"
    assert "cluster" not in by["close"] and "comparisons" not in by["close"]
    assert by["close"]["compare_note"].startswith("not compared")
    # the corpus row's value: Pearson of the corpus scores with the systems' human means
    means = frame.groupby("system")["human.q"].mean()
    assert by["close"]["value"] == pytest.approx(scipy.stats.pearsonr(
        [corpus_values[s] for s in systems], means[systems])[0], rel=1e-9)
    compared = [r["metric"] for r in out if r["metric"] != "close"]
    assert sorted(compared) == ["far", "noise", "ties"]
    for i, name in enumerate(compared):
        assert by[name]["cluster"] >= 1
        assert [c["against"] for c in by[name]["comparisons"]] == compared[i + 1:]
        for c in by[name]["comparisons"]:
            # system means over the units where the human and both metrics have a score
            ok = frame[[name, c["against"], "human.q"]].notna().all(axis=1)
            pair_means = frame[ok].groupby("system")[[name, c["against"], "human.q"]].mean()
            a, b, h = (pair_means.loc[systems, col].to_numpy()
                       for col in (name, c["against"], "human.q"))
            assert c["p_value"] == pytest.approx(williams_p(h, a, b), rel=1e-6, abs=1e-12)
    text = run_cli("meta-eval", str(path), "--human", "human.q", "--level", "system",
                   "--corpus", str(corpus), "--compare", "--test", "williams")
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if x.split()[:1] == ["close"])
    assert "not compared" in line
