"""Choice-distribution bias of a judge against people: CKLD (KL of the verdict
distributions, against people's or the uniform one) and Wasserstein-1 over ordinal bins
(issue 28, part 4).

References are independent of meta_eval: collections.Counter histograms of exact half-up
rounding (fractions), scipy.stats.entropy and scipy.stats.wasserstein_distance.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
import scipy.stats
from conftest import run_cli
from conftest import write_wide_table as write_table

from meta_eval import evaluate, significance_clusters

NAMES = ("ckld", "ckld-uniform", "wasserstein")


def half_up(x: float) -> float:
    return math.nan if math.isnan(x) else float(math.floor(Fraction(x) + Fraction(1, 2)))


def reference(name: str, h: np.ndarray, m: np.ndarray, cats: list[float]) -> float:
    """The statistic of the units both sides scored, over the categories `cats`."""
    ok = np.isfinite(h) & np.isfinite(m)
    hs = [half_up(v) for v in h[ok]]
    ms = [half_up(v) for v in m[ok]]
    if not hs:
        return math.nan
    if name == "wasserstein":
        pos = {c: i for i, c in enumerate(cats)}
        return float(scipy.stats.wasserstein_distance([pos[v] for v in hs],
                                                      [pos[v] for v in ms]))
    ch, cm = Counter(hs), Counter(ms)
    q = [cm[c] + 0.5 for c in cats]
    p = [ch[c] for c in cats] if name == "ckld" else [1.0] * len(cats)
    return float(scipy.stats.entropy(p, q))


def scale_of(h: np.ndarray, m: np.ndarray) -> list[float]:
    """The categories both sides use anywhere in the call (units both scored)."""
    ok = np.isfinite(h) & np.isfinite(m)
    return sorted({half_up(v) for v in h[ok]} | {half_up(v) for v in m[ok]})


def judge_data(seed: int, items: int = 20, systems: int = 6, holes: float = 0.1):
    """A lenient judge (mostly 4s and 5s) against human means of three raters on 1..5, with
    ties everywhere and NaN holes."""
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 6, (items, systems))
    raters = np.clip(quality[None] + rng.integers(-1, 2, (3, items, systems)), 1, 5)
    human = raters.sum(axis=0) / 3
    judge = np.clip(quality + rng.integers(0, 3, (items, systems)), 1, 5).astype(float)
    judge[rng.random(judge.shape) < holes] = np.nan
    human[rng.random(human.shape) < holes / 2] = np.nan
    return human, judge


def close(a: float, b: float, tol: float = 1e-12) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("seed", range(5))
def test_matches_scipy_at_every_grouping(name, seed):
    human, judge = judge_data(seed)
    cats = scale_of(human, judge)
    got = evaluate(name, human=human, metric=judge)
    assert close(got.value, reference(name, human.ravel(), judge.ravel(), cats)), got
    assert got.n == (np.isfinite(human) & np.isfinite(judge)).sum()
    for grouping, axis in (("item", 0), ("system", 1)):
        per = [reference(name, np.take(human, g, axis), np.take(judge, g, axis), cats)
               for g in range(human.shape[axis])]
        defined = [v for v in per if not math.isnan(v)]
        res = evaluate(name, human=human, metric=judge, grouping=grouping)
        assert close(res.value, float(np.mean(defined))), (grouping, res)
        assert res.n == len(defined) and res.skipped == len(per) - len(defined)


@pytest.mark.parametrize("name", NAMES)
def test_declared_labels_fix_the_scale_and_the_bins(name):
    human, judge = judge_data(3, holes=0.0)
    labels = [0.0, 1, 2, 3, 4, 5, 9, 12]  # unused 0, 9 and 12 widen ckld's scale
    got = evaluate(name, human=human, metric=judge, domain=labels)
    assert close(got.value, reference(name, human.ravel(), judge.ravel(), labels))
    # a 5 moved to 9 is one bin away with these labels, not four scale points
    far = np.where(judge == 5, 9.0, judge)
    w = evaluate("wasserstein", human=judge, metric=far, domain=labels).value
    assert close(w, float(np.mean(judge == 5)))
    with pytest.raises(ValueError, match="not in the declared"):
        evaluate(name, human=human, metric=judge, domain=[1.0, 2, 3])


def test_hand_computed_values():
    # people 1, 2, 2, 3; judge 3, 3, 3, 3: K = 3 categories, q = (.5, .5, 4.5) / 5.5
    h, m = np.array([[1.0, 2, 2, 3]]), np.array([[3.0, 3, 3, 3]])
    q = np.array([0.5, 0.5, 4.5]) / 5.5
    p = np.array([0.25, 0.5, 0.25])
    assert close(evaluate("ckld", human=h, metric=m).value, float((p * np.log(p / q)).sum()))
    assert close(evaluate("ckld-uniform", human=h, metric=m).value,
                 float((np.log((1 / 3) / q) / 3).sum()))
    # earth mover: the 1 moves 2 points, each 2 moves 1 point: (2 + 1 + 1) / 4 = 1
    assert evaluate("wasserstein", human=h, metric=m).value == 1.0
    # the same histogram in another order: distance 0, KL of the smoothed q only
    assert evaluate("wasserstein", human=h, metric=h[:, ::-1]).value == 0.0
    # rounding half up: a mean of raters 2.5 is a 3
    assert evaluate("wasserstein", human=np.array([[2.5]]), metric=np.array([[3.0]])).value == 0


def test_extreme_magnitudes_do_not_overflow():
    h = np.array([[-1e300, 1e300, 1e300, 2.0**1000]])
    m = np.array([[1e300, 1e300, -1e300, -1e300]])
    got = evaluate("wasserstein", human=h, metric=m).value
    ref = float(scipy.stats.wasserstein_distance(h[0] / 1e290, m[0] / 1e290)) * 1e290
    assert math.isfinite(got) and close(got, ref, 1e-12)
    tiny = evaluate("wasserstein", human=h * 0 + np.array([[1.0, 2, 3, 4]]) * 2.0**900,
                    metric=np.array([[1.0, 1, 1, 1]]) * 2.0**900).value
    assert close(tiny, 1.5 * 2.0**900)
    assert math.isfinite(evaluate("ckld", human=h, metric=m).value)


def test_undefined_without_units_and_zero_for_a_perfect_judge():
    nan = np.full((2, 3), np.nan)
    for name in NAMES:
        assert math.isnan(evaluate(name, human=nan, metric=nan).value)
    ones = np.ones((1, 5))
    assert evaluate("wasserstein", human=ones, metric=ones).value == 0.0
    # one category: p = q = 1 after smoothing over K = 1
    assert evaluate("ckld", human=ones, metric=ones).value == 0.0


def test_clusters_put_the_less_biased_judge_first():
    human, judge = judge_data(4, holes=0.0)
    fair = np.vectorize(half_up)(human)
    res = significance_clusters("wasserstein", human=human, metrics={"lenient": judge,
                                                                     "fair": fair},
                                resamples=200, seed=0)
    assert [m.metric for m in res.metrics] == ["fair", "lenient"]
    assert res.cluster_of("fair") == 1 and res.cluster_of("lenient") == 2


def test_cli_json_and_a_continuous_metric_refused(tmp_path):
    human, judge = judge_data(11, holes=0.0)
    path = write_table(tmp_path / "s.csv", human, {"judge": judge})
    proc = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "ckld",
                   "--statistic", "wasserstein", "--grouping", "system", "--bootstrap", "50",
                   "--json")
    assert proc.returncode == 0, proc.stderr
    by = {r["statistic"]: r for r in json.loads(proc.stdout)}
    cats = scale_of(human, judge)
    for name in ("ckld", "wasserstein"):
        per = [reference(name, human[:, s], judge[:, s], cats) for s in range(human.shape[1])]
        assert close(by[name]["value"], float(np.mean(per)))
        assert by[name]["better"] == "lower"
    judge[0, 0] = 3.4
    path = write_table(tmp_path / "t.csv", human, {"judge": judge})
    bad = run_cli("meta-eval", str(path), "--human", "human.x", "--statistic", "ckld")
    assert bad.returncode == 2 and "'judge'" in bad.stderr and "3.4" in bad.stderr
