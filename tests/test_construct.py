"""Construct validity (Campbell and Fiske's multitrait-multimethod matrix): Williams' test
written here from Steiger (1980) for correlations sharing the metric, a simulation with known
truth (metrics that track their own criterion; a judge that tracks overall quality), and
`meta-eval --construct` end to end."""

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
from meta_eval.construct import construct_validity


def williams_t2(x, a, b):
    """Steiger (1980) eq. 7, Williams' T2: H1 r(x, a) > r(x, b), n - 3 df; one-sided p."""
    n = x.size
    r1, r2, r12 = (np.corrcoef(u, v)[0, 1] for u, v in ((x, a), (x, b), (a, b)))
    det = 1 - r1**2 - r2**2 - r12**2 + 2 * r1 * r2 * r12
    mean = (r1 + r2) / 2
    t = (r1 - r2) * math.sqrt((n - 1) * (1 + r12) / (
        2 * (n - 1) / (n - 3) * det + mean**2 * (1 - r12) ** 3))
    return float(scipy.stats.t.sf(t, n - 3))


def simulate(rng, n=300, general=False):
    """Three criteria sharing an overall factor; metric k tracks criterion k (or, general,
    the overall score)."""
    overall = rng.normal(size=n)
    traits = {f"human.c{k}": overall * 0.5 + rng.normal(size=n) for k in range(3)}
    metrics = {}
    for k in range(3):
        target = (np.mean(list(traits.values()), axis=0) if general
                  else traits[f"human.c{k}"])
        metrics[f"m{k}"] = target + rng.normal(scale=0.6, size=n)
    return traits, metrics


def as_matrix(x):
    return np.asarray(x, dtype=float)[:, None]


@pytest.mark.parametrize("seed", range(5))
def test_williams_matches_steiger(seed):
    rng = np.random.default_rng(seed)
    traits, metrics = simulate(rng, n=int(rng.integers(20, 200)), general=bool(seed % 2))
    out = construct_validity(criteria={c: as_matrix(v) for c, v in traits.items()},
                             metrics={m: as_matrix(v) for m, v in metrics.items()},
                             intended={f"m{k}": f"human.c{k}" for k in range(3)},
                             method="williams")
    for row in out:
        own = traits[row.criterion]
        m = metrics[row.metric]
        assert row.values[row.criterion] == pytest.approx(np.corrcoef(m, own)[0, 1])
        for other, p in row.p_values.items():
            assert p == pytest.approx(williams_t2(m, own, traits[other]), rel=1e-9)
        overall = np.mean(list(traits.values()), axis=0)
        assert row.overall == pytest.approx(np.corrcoef(m, overall)[0, 1])


@pytest.mark.parametrize("method", ["williams", "permutation"])
def test_known_truth(method):
    rng = np.random.default_rng(1)
    traits, metrics = simulate(rng)
    criteria = {c: as_matrix(v) for c, v in traits.items()}
    intended = {f"m{k}": f"human.c{k}" for k in range(3)}
    valid = construct_validity(criteria=criteria, intended=intended, method=method,
                               metrics={m: as_matrix(v) for m, v in metrics.items()},
                               resamples=500)
    assert all(r.discriminant and not r.general for r in valid)
    overall = np.mean(list(traits.values()), axis=0)
    judges = {f"m{k}": overall + np.random.default_rng(10 + k).normal(scale=0.6, size=300)
              for k in range(3)}
    general = construct_validity(criteria=criteria, intended=intended, method=method,
                                 metrics={m: as_matrix(v) for m, v in judges.items()},
                                 resamples=500)
    assert all(r.general and not r.discriminant for r in general)


def test_false_discrimination_rate_under_the_null():
    """A metric equally close to two exchangeable criteria is called discriminant at most
    about alpha of the time (Williams, 400 simulated studies)."""
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(400):
        overall = rng.normal(size=60)
        a, b = overall + rng.normal(size=60), overall + rng.normal(size=60)
        m = overall + rng.normal(size=60)
        out = construct_validity(criteria={"a": as_matrix(a), "b": as_matrix(b)},
                                 metrics={"m": as_matrix(m)}, intended={"m": "a"},
                                 method="williams")
        hits += out[0].discriminant
    assert hits / 400 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 400)


def test_cli(tmp_path: Path):
    rng = np.random.default_rng(4)
    traits, metrics = simulate(rng, n=120)
    frame = pd.DataFrame({"item": [f"i{k}" for k in range(120)], "system": "s",
                          **traits, **metrics})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    args = ["meta-eval", "construct", str(path), "--human", "human.c0", "--human", "human.c1",
            "--human", "human.c2", "--test", "williams",
            *[a for k in range(3) for a in ("--intended", f"m{k}=human.c{k}")]]
    result = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert [r["metric"] for r in out] == ["m0", "m1", "m2"]
    assert all(r["discriminant"] for r in out)
    assert out[0]["p_values"]["human.c1"] == pytest.approx(
        williams_t2(metrics["m0"], traits["human.c0"], traits["human.c1"]))
    text = CliRunner().invoke(cli, args, catch_exceptions=False).stdout
    assert "discriminant" in text and "overall" in text
    bad = CliRunner().invoke(cli, ["meta-eval", "construct", str(path), "--human",
                                   "human.c0", "--intended", "m0"])
    assert bad.exit_code == 2 and "METRIC=HUMAN" in bad.output


def test_construct_pairs_split_at_the_last_equals_sign() -> None:
    from judgebench.errors import InputError
    from judgebench.services.construct import parse_pairs

    assert parse_pairs(["lexical.rouge2:multi_ref=mean=human.relevance", "judge.coh=human.c"]) \
        == {"lexical.rouge2:multi_ref=mean": "human.relevance", "judge.coh": "human.c"}
    for bad in ("judge.coh", "=human.c", "judge.coh="):
        with pytest.raises(InputError, match="METRIC=HUMAN"):
            parse_pairs([bad])
