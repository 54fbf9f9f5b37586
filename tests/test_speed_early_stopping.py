"""Early stopping of the permutation test at WMT-sized matrices (issue 18).

At 2,000 items x 20 systems a block of swap patterns holds `_CELLS // 40,000` = 104
resamples, which does not divide the check interval (200): a rule `done % block == 0` never
looked before the last resample. These tests pin that the check fires at that size, that
the early p-value is the plain count over the resamples it used (recounted here with numpy's
own Pearson), and that a test which is never decided gives the full test's p-value.
"""

from __future__ import annotations

import numpy as np

from meta_eval import evaluate, permutation_test
from meta_eval.significance import _CELLS, random_swaps

ITEMS, SYSTEMS, BLOCK, RESAMPLES = 2000, 20, 200, 1000


def wmt_sized(seed: int, noise_b: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    quality = rng.normal(size=(ITEMS, SYSTEMS))
    ratings = np.clip(np.round(quality[None] + 3 + rng.normal(size=(3, ITEMS, SYSTEMS))), 1, 5)
    human = ratings.mean(axis=0)  # 13 values: many ties
    a = np.round(quality + rng.normal(size=quality.shape), 2)  # ties of its own
    b = quality + rng.normal(size=quality.shape) * noise_b
    a[rng.random(a.shape) < 0.01] = np.nan
    return human, a, b


def item_pearson(human: np.ndarray, metric: np.ndarray) -> float:
    """Mean over items of the textbook Pearson r per item (units missing a score dropped;
    items with a constant side left out), one row per item in plain numpy."""
    ok = np.isfinite(human) & np.isfinite(metric)
    n = ok.sum(axis=1)
    h = np.where(ok, human, 0.0)
    m = np.where(ok, metric, 0.0)
    hc = np.where(ok, h - h.sum(axis=1, keepdims=True) / n[:, None], 0.0)
    mc = np.where(ok, m - m.sum(axis=1, keepdims=True) / n[:, None], 0.0)
    sh, sm = (hc * hc).sum(axis=1), (mc * mc).sum(axis=1)
    live = (n >= 2) & (sh > 0) & (sm > 0)
    return float(np.mean((hc * mc).sum(axis=1)[live] / np.sqrt(sh[live] * sm[live])))


def test_the_reference_pearson_is_numpys():
    human, a, _ = wmt_sized(3, noise_b=1.0)
    want = []
    for h, m in zip(human, a, strict=True):
        ok = np.isfinite(m)
        want.append(np.corrcoef(h[ok], m[ok])[0, 1])
    assert abs(item_pearson(human, a) - np.mean(want)) < 1e-12


def zscore(x: np.ndarray) -> np.ndarray:
    return (x - np.nanmean(x)) / np.nanstd(x)


def test_the_block_size_at_wmt_size_never_met_the_old_check():
    step = min(BLOCK, _CELLS // (ITEMS * SYSTEMS))
    assert BLOCK % step != 0
    looks = range(step, RESAMPLES, step)
    assert not any(done % BLOCK == 0 for done in looks)  # the old rule: no look at all


def test_early_stopping_fires_at_wmt_size_with_the_plain_count():
    human, a, b = wmt_sized(0, noise_b=1.6)
    got = permutation_test("pearson", human=human, metric_a=a, metric_b=b, grouping="item",
                           resamples=RESAMPLES, block=BLOCK, seed=7)
    step = min(BLOCK, _CELLS // human.size)
    assert got.p_value_early and got.resamples < RESAMPLES
    assert got.resamples == -(-BLOCK // step) * step  # first look: 208 resamples

    # Recount: the same swap patterns (drawn in blocks of `step`), Pearson by numpy.
    ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
    h, a, b = (np.where(ok, x, np.nan) for x in (human, a, b))
    observed = item_pearson(h, a) - item_pearson(h, b)
    assert abs(got.delta - observed) < 1e-12
    za, zb = zscore(a), zscore(b)
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(got.resamples // step):
        for swap in random_swaps(rng, (step, *human.shape)):
            diff = (item_pearson(h, np.where(swap, zb, za))
                    - item_pearson(h, np.where(swap, za, zb)))
            hits += diff >= observed - 1e-9 * max(1.0, abs(observed))
    assert got.p_value == hits / got.resamples


def test_a_test_never_decided_runs_every_resample_and_keeps_its_p_value():
    human, a, b = wmt_sized(1, noise_b=1.0)
    common = {"grouping": "item", "resamples": RESAMPLES, "block": BLOCK, "seed": 3}
    full = permutation_test("pearson", human=human, metric_a=a, metric_b=b,
                            early_stop=False, **common)
    assert 0.02 < full.p_value < 0.98 and full.resamples == RESAMPLES
    # alpha at the p-value itself: the interval never excludes it, so no look stops.
    kept = permutation_test("pearson", human=human, metric_a=a, metric_b=b,
                            alpha=full.p_value, **common)
    assert not kept.p_value_early and kept.resamples == RESAMPLES
    assert kept.p_value == full.p_value and kept.delta == full.delta


def test_the_observed_statistics_are_those_of_evaluate():
    human, a, b = wmt_sized(2, noise_b=1.6)
    got = permutation_test("pearson", human=human, metric_a=a, metric_b=b, grouping="item",
                           resamples=RESAMPLES, seed=0)
    ok = np.isfinite(human) & np.isfinite(a) & np.isfinite(b)
    want_a = evaluate("pearson", human=human, metric=np.where(ok, a, np.nan), grouping="item")
    assert got.value_a == want_a.value and got.p_value_early
