"""meta_eval.corpus: system-level statistics of given (corpus) system scores, against scipy
on data with ties, missing values and extreme magnitudes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from meta_eval.corpus import evaluate_given, human_system_means

SCIPY: dict[str, Callable[..., Any]] = {"pearson": scipy.stats.pearsonr,
                                        "spearman": scipy.stats.spearmanr,
                                        "kendall": scipy.stats.kendalltau}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([1e-300, 1e-80, 1.0, 1e80, 1e300]),
       statistic=st.sampled_from(sorted(SCIPY)))
def test_given_system_scores_match_scipy(seed: int, scale: float, statistic: str) -> None:
    rng = np.random.default_rng(seed)
    items, systems = 7, 9
    human = rng.integers(1, 6, size=(items, systems)).astype(float)  # many ties
    human[rng.random((items, systems)) < 0.2] = np.nan
    metric = rng.integers(0, 4, size=systems) * scale  # ties in the metric too
    metric[rng.integers(systems)] = np.nan  # a failed corpus score
    means = np.array([np.nanmean(c) if np.isfinite(c).any() else np.nan for c in human.T])
    ok = np.isfinite(means) & np.isfinite(metric)
    result = evaluate_given(statistic, human=human, metric=metric)
    h, m = means[ok], metric[ok]
    if np.ptp(h) == 0 or np.ptp(m) == 0:
        assert not np.isfinite(result.value)
        return
    assert result.n == int(ok.sum())
    assert result.value == pytest.approx(SCIPY[statistic](h, m).statistic, abs=1e-9)


def test_human_means_skip_unjudged_systems() -> None:
    human = np.array([[1.0, np.nan], [2.0, np.nan]])
    means = human_system_means(human=human)
    assert means[0] == 1.5 and np.isnan(means[1])


def test_statistics_that_resample_segments_are_refused() -> None:
    with pytest.raises(ValueError, match="segment scores"):
        evaluate_given("spa", human=np.ones((3, 4)), metric=np.arange(4.0))
