"""`labels stats --weights none|linear|quadratic|FILE.csv` and Randolph's free-marginal
kappa, from the command's JSON: each annotator pair's kappa, asymptotic se, interval and p
against statsmodels' cohens_kappa (custom matrices as its `weights=`), Randolph's kappa
against statsmodels' fleiss_kappa(method="randolph") and its se, se0, interval and p against
the formulas written out (Randolph 2005), on random labels with ties, missing labels,
statuses and a scale of magnitude 1e300; a bad matrix file is refused naming file, line and
field."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from scipy.stats import norm
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohen
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss
from test_labels_stats import ANNOTATORS, _matrix, _random_labels

from judgebench.engine import labels as L

CASES = [
    ("binary", {}, [0, 1], 2),
    ("choices", {"choices": ["calm", "rude", "odd", "flat"]}, ["calm", "rude", "odd"], 4),
    ("pairwise", {}, ["a", "b", "tie"], 3),
    ("scale", {"low": 1, "high": 5, "step": 1}, [1, 2, 3, 4, 5], 5),
    ("scale", {"low": -1e300, "high": 1e300, "step": 5e299}, [-1e300, -5e299, 0.0, 1e300],
     5),
]
CONFIDENCE = 0.9
Z = float(norm.ppf(0.95))


def _codes(kind: str, options: dict[str, Any], matrix: np.ndarray) -> np.ndarray:
    if kind == "pairwise":
        return matrix * 2
    if kind == "scale":
        return np.round((matrix - options["low"]) / options["step"])
    return matrix


def _stats(store: Path, *args: str) -> dict[str, Any]:
    proc = run_cli("labels", "stats", "--store", str(store), "--bootstrap", "0",
                   "--confidence", str(CONFIDENCE), "-f", "json", *args)
    assert proc.returncode == 0, proc.stderr
    (criterion,) = json.loads(proc.stdout)["criteria"]
    return criterion


def _check(analytic: dict[str, Any], ref: Any) -> None:
    assert analytic["se"] == pytest.approx(ref["std_kappa"], rel=1e-9, abs=1e-12)
    assert analytic["se0"] == pytest.approx(ref["std_kappa0"], rel=1e-9, abs=1e-12)
    assert analytic["p_value"] == pytest.approx(ref["pvalue_two_sided"], rel=1e-9, abs=1e-12)
    low, high = (ref["kappa"] - Z * ref["std_kappa"], ref["kappa"] + Z * ref["std_kappa"])
    assert (analytic["low"], analytic["high"]) == pytest.approx((low, high), rel=1e-9,
                                                                abs=1e-12)


@pytest.mark.parametrize(("kind", "options", "values", "q"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("seed", [0, 1])
def test_weights_and_randolph_against_statsmodels(tmp_path: Path, kind: str,
                                                  options: dict[str, Any], values: list[Any],
                                                  q: int, seed: int) -> None:
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind=kind, **options)
    answered = _random_labels(store, crit, values, seed + 10)
    codes = _codes(kind, options, _matrix(answered)[1])
    rng = np.random.default_rng(seed)
    custom = rng.uniform(0.1, 3.0, size=(q, q)) * 2.0 ** int(rng.integers(-900, 900))
    np.fill_diagonal(custom, 0.0)
    matrix_file = tmp_path / "w.csv"
    matrix_file.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in custom)
                           + "\n")
    for weights in ("none", "linear", "quadratic", str(matrix_file)):
        stats = _stats(store, "--weights", weights)
        pairs = {(k["a"], k["b"]): k for k in stats["kappas"]}
        assert len(pairs) == 6
        for (i, a), (j, b) in itertools.combinations(enumerate(ANNOTATORS), 2):
            both = np.isfinite(codes[i]) & np.isfinite(codes[j])
            x, y = codes[i][both].astype(int), codes[j][both].astype(int)
            if weights == str(matrix_file):  # over the declared codes 0..q-1
                table = np.zeros((q, q))
                np.add.at(table, (x, y), 1.0)
                ref = sm_cohen(table, weights=custom / custom.max())
                assert pairs[(a, b)]["weights"] == "custom"
            else:  # over the codes either used
                lo, hi = min(x.min(), y.min()), max(x.max(), y.max())
                table = np.zeros((hi - lo + 1, hi - lo + 1))
                np.add.at(table, (x - lo, y - lo), 1.0)
                ref = sm_cohen(table) if weights == "none" else \
                    sm_cohen(table, weights=np.arange(hi - lo + 1), wt=weights)
            assert pairs[(a, b)]["value"] == pytest.approx(ref["kappa"], rel=1e-9, abs=1e-12)
            assert pairs[(a, b)]["n"] == int(both.sum())
            _check(pairs[(a, b)]["analytic"], ref)
    complete = codes[:, np.isfinite(codes).all(axis=0)]
    counts, _ = aggregate_raters(complete.T.astype(int), n_cat=q)
    randolph = stats["randolph"]
    assert randolph["n"] == complete.shape[1] > 1
    assert randolph["value"] == pytest.approx(sm_fleiss(counts, method="randolph"),
                                              rel=1e-9, abs=1e-12)
    n_units, m = counts.shape[0], len(ANNOTATORS)
    per_unit = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    se = per_unit.std(ddof=1) / math.sqrt(n_units) / (1 - 1 / q)
    se0 = math.sqrt(2 / (n_units * m * (m - 1) * (q - 1)))
    t = randolph["analytic"]
    assert t["se"] == pytest.approx(se, rel=1e-9)
    assert t["se0"] == pytest.approx(se0, rel=1e-12)
    assert t["p_value"] == pytest.approx(2 * norm.sf(abs(randolph["value"]) / se0), rel=1e-9,
                                         abs=1e-300)
    assert (t["low"], t["high"]) == pytest.approx(
        (randolph["value"] - Z * se, randolph["value"] + Z * se), rel=1e-9, abs=1e-12)
    assert f"randolph-kappa|q:{q}|" in t["signature"]
    assert f"randolph:q={q}" in stats["signature"]


def test_default_weights_unchanged_and_text(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind="scale", low=1, high=5, step=1)
    _random_labels(store, crit, [1, 2, 3, 4, 5], seed=3)
    default, quadratic = _stats(store), _stats(store, "--weights", "quadratic")
    assert default["kappas"] == quadratic["kappas"]
    proc = run_cli("labels", "stats", "--store", str(store), "--bootstrap", "20",
                   "--weights", "linear")
    assert proc.returncode == 0, proc.stderr
    assert "linear-weighted kappa ann vs bob" in proc.stdout
    assert "Randolph's free-marginal kappa" in proc.stdout and ", p " in proc.stdout
    for line in proc.stdout.splitlines():  # a tiny p keeps its digits, not 0.0000
        if ", p " in line and ("Randolph" in line or " vs " in line):
            p_text = line.rsplit(", p ", 1)[1].rstrip(")")
            assert p_text == "-" or float(p_text) > 0, line


@pytest.mark.parametrize(("text", "where"), [
    ("0,1\n1,0,2\n", "--weights"),
    ("0,1,1\n1,0,x\n1,1,0\n", "line 2, field 'column 3'"),
    ("0,1,1\n1,0,inf\n1,1,0\n", "line 2, field 'column 3'"),
    ("1,1,1\n1,0,1\n1,1,0\n", "0 on the diagonal"),
    ("0,1\n1,0\n", "has 3 codes; the matrix is 2 x 2"),
])
def test_a_bad_matrix_is_refused_naming_where(tmp_path: Path, text: str, where: str) -> None:
    store = tmp_path / "s.db"
    crit = L.define_criterion(store, "c", kind="pairwise")
    _random_labels(store, crit, ["a", "b", "tie"], seed=0)
    path = tmp_path / "bad.csv"
    path.write_text(text)
    proc = run_cli("labels", "stats", "--store", str(store), "--weights", str(path))
    assert proc.returncode == 2, proc.stderr
    assert str(path) in proc.stderr and where in proc.stderr, proc.stderr
    proc = run_cli("labels", "stats", "--store", str(store), "--weights", "cubic")
    assert proc.returncode == 2 and "'--weights'" in proc.stderr
