"""meta_eval.p_values against scipy.stats: the p-values of pearsonr, spearmanr and
kendalltau to 1e-12 relative on random data with ties, missing values, n = 3 upwards,
constant sides and extreme magnitudes; and a meta-eval that reports them does not import
scipy.stats (spearman's value still ranks with scipy.stats.rankdata)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.stats
from scipy.stats._mstats_basic import _kendall_p_exact

from meta_eval.correlation import kendall_p_value, pearson_p_value, spearman_p_value
from meta_eval.p_values import average_ranks, kendall_exact_p
from meta_eval.pairs import snap

RTOL = 1e-12
SCIPY = {"pearson": lambda h, m: scipy.stats.pearsonr(h, m).pvalue,
         "spearman": lambda h, m: scipy.stats.spearmanr(snap(h), snap(m)).pvalue,
         "kendall": lambda h, m: scipy.stats.kendalltau(snap(h), snap(m)).pvalue}
OURS = {"pearson": pearson_p_value, "spearman": spearman_p_value, "kendall": kendall_p_value}


def data(rng: np.random.Generator, n: int, kind: int) -> tuple[np.ndarray, np.ndarray]:
    latent = rng.normal(size=n)
    h = latent + rng.normal(size=n) * rng.uniform(0.1, 3)
    m = latent + rng.normal(size=n) * rng.uniform(0.1, 3)
    if kind == 1:  # ratings and a rounded metric: many ties
        h, m = np.round(h * 2) / 2, np.round(m, 1)
    elif kind == 2:  # tiny and huge magnitudes
        h, m = h * 1e-300, m * 1e300
    elif kind == 3:  # a few levels on one side, NaN on both
        h = np.floor(h)
        h[rng.random(n) < 0.1] = np.nan
        m[rng.random(n) < 0.1] = np.nan
    elif kind == 4:  # near-independent: p near 1
        m = rng.normal(size=n)
    return h, m


def close(got: float | None, want: float) -> bool:
    assert got is not None
    return got == want or abs(got - want) <= RTOL * abs(want)


@pytest.mark.parametrize("statistic", list(OURS))
@pytest.mark.parametrize("seed", range(40))
def test_p_values_are_scipys(statistic: str, seed: int) -> None:
    rng = np.random.default_rng(2900 + seed)
    n = [3, 4, 5, 7, 12, 33, 34, 60, 200, 1500, 5000][seed % 11]
    h, m = data(rng, n, seed % 5)
    ok = np.isfinite(h) & np.isfinite(m)
    if ok.sum() < 3 or np.ptp(h[ok]) == 0 or np.ptp(m[ok]) == 0:
        assert OURS[statistic](human=h, metric=m) is None
        return
    want = float(SCIPY[statistic](h[ok], m[ok]))
    assert close(OURS[statistic](human=h, metric=m), want), (n, want)


@pytest.mark.parametrize("statistic", list(OURS))
def test_long_rows_and_tiny_p_values(statistic: str) -> None:
    rng = np.random.default_rng(29)
    for n, noise in ((30_000, 8.0), (30_000, 30.0), (4_000, 1.0), (300_000, 200.0)):
        latent = rng.normal(size=n)
        h = np.round(latent + rng.normal(size=n) * noise, 1)
        m = latent + rng.normal(size=n) * noise
        want = float(SCIPY[statistic](h, m))
        assert close(OURS[statistic](human=h, metric=m), want), (n, noise, want)


@pytest.mark.parametrize("statistic", list(OURS))
def test_undefined_p_values(statistic: str) -> None:
    for h, m in (([1.0, 2.0], [1.0, 3.0]), ([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0]),
                 ([1.0, 2.0, 3.0, np.nan], [2.0, 2.0, 2.0, 5.0]), ([], [])):
        assert OURS[statistic](human=np.array(h), metric=np.array(m)) is None


def test_kendall_exact_distribution_is_scipys() -> None:
    for n in [*range(1, 40), 170, 171, 172, 200]:
        top = n * (n - 1) // 2
        for c in sorted({0, 1, 2, top // 4, top // 3, top // 2, top - 1, top, max(top - 2, 0)}):
            if 0 <= c <= top:
                want = float(_kendall_p_exact(n, c, "two-sided"))
                assert close(kendall_exact_p(n, c), want), (n, c)


def test_kendall_exact_branches_without_ties() -> None:
    rng = np.random.default_rng(7)
    for n in (3, 10, 33, 34, 200):
        h = rng.permutation(n).astype(float)
        for m in (h.copy(), h[::-1].copy(), np.r_[h[1], h[0], h[2:]], rng.permutation(n) * 1.5):
            want = float(scipy.stats.kendalltau(h, m).pvalue)
            assert close(kendall_p_value(human=h, metric=m), want), n


def test_average_ranks_are_scipys() -> None:
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 100, 1000):
        x = rng.integers(0, max(n // 3, 1), size=n) * 0.5
        assert np.array_equal(average_ranks(x), scipy.stats.rankdata(x))


def test_meta_eval_p_values_do_not_import_scipy_stats(tmp_path) -> None:
    rng = np.random.default_rng(1)
    n = 600
    lines = ["item,system,human,m1,m2"]
    for i in range(n):
        h = rng.normal()
        lines.append(f"i{i // 6},s{i % 6},{round(h, 1)},{h + rng.normal():.4f},"
                     f"{h + rng.normal():.3f}")
    table = tmp_path / "t.csv"
    table.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = ("import sys\nfrom judgebench.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('scipy.stats' in sys.modules, file=sys.stderr)\n")
    for level in ("segment", "system"):
        proc = subprocess.run(
            [sys.executable, "-c", code, "meta-eval", str(table), "--human", "human",
             "--higher-is-better", "m1", "--higher-is-better", "m2", "--level", level,
             "--statistic", "pearson", "--statistic", "kendall",
             "--json"], capture_output=True, text=True, check=True)
        assert proc.stderr.strip().splitlines()[-1] == "False", proc.stderr
        assert '"p_value"' in proc.stdout


def test_p_values_load_scipy_special_ufuncs_without_its_package_init() -> None:
    # In a fresh process: the three p-values from scipy.special's compiled ufuncs without
    # the package's __init__ (no numpy.f2py), then scipy.special and scipy.stats imported
    # as usual: the same function objects, the same p-values as before they were imported.
    code = """
import sys
import numpy as np
from meta_eval.p_values import kendall_p, pearson_p, spearman_p
rng = np.random.default_rng(2)
x = rng.normal(size=400)
y = np.round(x + rng.normal(size=400), 1)
before = (pearson_p(x, y), spearman_p(x, y), kendall_p(x, y))
print("scipy.special" in sys.modules, "numpy.f2py" in sys.modules)
import scipy.special
import scipy.stats
from meta_eval.p_values import _ufuncs
print(_ufuncs().betaincc is scipy.special.betaincc,
      scipy.special._ufuncs.ndtr is scipy.special.ndtr)
print(before == (pearson_p(x, y), spearman_p(x, y), kendall_p(x, y)))
print(abs(before[0] / scipy.stats.pearsonr(x, y).pvalue - 1) <= 1e-12)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.split() == ["False", "False", "True", "True", "True", "True"], proc
