"""Cross-fitting over items: the fold machinery shared by the audit's trained sentinels
(judgebench_audit.regressors) and learned metric combinations (`judgebench combine`).

Items are shuffled (seeded) and dealt into K folds; the predictions for fold k come from a
model trained on the other K-1 folds only, so a row's prediction never comes from a model that
saw its item (not the item's human scores, nor its rows as training data). With K >= the
number of items this is leave-one-item-out (Chernozhukov et al. 2018 call the scheme
cross-fitting; MetaMetrics, Anugraha et al. 2024, fit their combinations on held-out data).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from meta_eval.arrays import FloatArray, IntArray



def item_folds(items: Sequence[str], folds: int, seed: int) -> IntArray:
    """Fold number per position; every sample of one item lands in the same fold."""
    unique = sorted(set(items))
    k = min(folds, len(unique))
    order = np.random.default_rng(seed).permutation(len(unique))
    fold_of = {unique[j]: position % k for position, j in enumerate(order)}
    return np.array([fold_of[i] for i in items], dtype=int)


def cross_fit(fit_predict: Callable[[IntArray, FloatArray, IntArray], FloatArray],
              target: FloatArray, folds: IntArray) -> tuple[FloatArray, dict[int, int]]:
    """Out-of-fold predictions.

    `fit_predict(train_index, train_target, test_index)` fits on the rows `train_index` and
    predicts `test_index`. Rows with a NaN target are never trained on but are predicted.
    Returns the predictions (NaN for a fold with fewer than 2 training rows) and the number
    of training rows per fold.
    """
    prediction = np.full(target.shape, np.nan)
    trained: dict[int, int] = {}
    labelled = np.isfinite(target)
    for fold in np.unique(folds):
        test = np.flatnonzero(folds == fold)
        train = np.flatnonzero((folds != fold) & labelled)
        trained[int(fold)] = int(train.size)
        if train.size < 2:
            continue
        prediction[test] = fit_predict(train, target[train], test)
    return prediction, trained
