"""meta_eval.icc against pingouin.intraclass_corr, Shrout and Fleiss 1979's Table 2, and
the coverage of its intervals in a seeded simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from meta_eval.icc import FORMS, icc_forms

pingouin = pytest.importorskip("pingouin")

PINGOUIN = dict(zip(FORMS, ("ICC(1,1)", "ICC(A,1)", "ICC(C,1)", "ICC(1,k)", "ICC(A,k)",
                            "ICC(C,k)"), strict=True))
# Shrout and Fleiss 1979, Table 2 (6 targets x 4 judges) and the ICCs they print (Table 4)
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9],
                 [6, 2, 4, 7]]
PUBLISHED = {"ICC1": 0.17, "ICC2": 0.29, "ICC3": 0.71, "ICC1k": 0.44, "ICC2k": 0.62,
             "ICC3k": 0.91}


def _pingouin(x: np.ndarray) -> pd.DataFrame:
    n, k = x.shape
    long = pd.DataFrame({"t": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n),
                         "y": x.reshape(-1)})
    from pingouin.config import _no_rounding

    with _no_rounding():  # pingouin rounds its CI95 column to 2 digits by default
        return pingouin.intraclass_corr(data=long, targets="t", raters="r", ratings="y",
                                        nan_policy="omit").set_index("Type")


def test_shrout_fleiss_table_2() -> None:
    out = icc_forms(ratings=SHROUT_FLEISS)
    for form, value in PUBLISHED.items():
        assert round(out[form].value, 2) == value, form
    assert out["ICC3"].df2 == 15 and out["ICC1"].df2 == 18


def _random(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(3, 30)), int(rng.integers(2, 6))
    x = rng.normal(size=(n, 1)) * rng.uniform(0, 2) + rng.normal(size=(1, k)) + \
        rng.normal(size=(n, k))
    if seed % 2:
        x = np.round(x)  # ties
    if seed % 3 == 0:
        x[rng.integers(0, n), rng.integers(0, k)] = np.nan  # a target dropped
    return x


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("scale", [0, 900, -900])
def test_against_pingouin(seed: int, scale: int) -> None:
    x = _random(seed)
    expected = _pingouin(x)
    out = icc_forms(ratings=np.ldexp(x, scale))  # exact scaling: ICC is scale-free
    for form in FORMS:
        row = expected.loc[PINGOUIN[form]]
        got = out[form]
        for mine, theirs in [(got.value, row["ICC"]), (got.f, row["F"]),
                             (got.p_value, row["pval"]), (got.ci_low, row["CI95"][0]),
                             (got.ci_high, row["CI95"][1])]:
            assert mine == pytest.approx(theirs, rel=1e-9, abs=1e-12), form
        assert (got.df1, got.df2) == (row["df1"], row["df2"])


def test_degenerate() -> None:
    out = icc_forms(ratings=[[1.0, np.nan], [2.0, 3.0]])
    assert all(np.isnan(v.value) for v in out.values())
    constant = icc_forms(ratings=np.ones((4, 3)))
    assert np.isnan(constant["ICC1"].value)
    with pytest.raises(ValueError, match="targets, raters"):
        icc_forms(ratings=[1.0, 2.0])
    with pytest.raises(ValueError, match="confidence"):
        icc_forms(ratings=SHROUT_FLEISS, confidence=1.0)


@pytest.mark.parametrize(("form", "rater_sd", "truth"),
                         [("ICC1", 0.0, 0.5), ("ICC3", 1.0, 0.5), ("ICC2", 0.75, 0.4),
                          ("ICC1k", 0.0, 0.75), ("ICC3k", 1.0, 0.75),
                          ("ICC2k", 0.75, 3 * 0.4 / (1 + 2 * 0.4))])
def test_interval_coverage(form: str, rater_sd: float, truth: float) -> None:
    rng = np.random.default_rng(43)
    reps, n, k = 1500, 15, 3
    covered = 0
    fixed = rng.normal(size=k)  # ICC3: these raters only
    for _ in range(reps):
        raters = fixed if form.startswith("ICC3") else rng.normal(size=k) * rater_sd
        x = rng.normal(size=(n, 1)) + raters[None, :] + rng.normal(size=(n, k))
        r = icc_forms(ratings=x)[form]
        covered += r.ci_low <= truth <= r.ci_high
    # 0.95 within 4 binomial standard errors (Satterthwaite's ICC2 is approximate)
    assert abs(covered / reps - 0.95) < 4 * np.sqrt(0.95 * 0.05 / reps) + 0.01


def test_too_few_targets_give_forms_whose_json_is_valid() -> None:
    import json

    for ratings in ([[1.0, 2.0]], [[1.0, float("nan")], [2.0, 3.0]], [[1.0], [2.0]]):
        for icc in icc_forms(ratings=ratings).values():
            record = icc.to_dict()
            json.dumps(record, allow_nan=False)
            assert record["value"] is None and record["df1"] is None and record["df2"] is None
