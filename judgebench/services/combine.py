"""The combine service: a learned combination of metric columns, as `judgebench combine` fits
it (MetaMetrics: Anugraha et al. 2024, "MetaMetrics: Calibrating Metrics For Generation Tasks
Using Human Preferences").

The combination predicts the human column from the metric columns (each oriented so that
higher is better, by the rule of judgebench.tables.scores_table, then standardised on the training
rows). Every row's combined score comes from a model fitted on the other folds of items only
(K-fold cross-fitting over items, meta_eval.combination, the machinery of the audit's trained
sentinels), so it can be meta-evaluated and audited like any metric. Models (scikit-learn):

- ridge: y = b + sum_k w_k z_k, ridge penalty `alpha` on w (z: standardised metrics);
- isotonic: the ridge combination, then an increasing isotonic regression of the human score
  on the ridge output (both fitted on the training folds; out-of-range inputs are clipped):
  a monotone recalibration of the ridge score to the human scale;
- gp: Gaussian process regression on the standardised metrics, kernel
  ConstantKernel * RBF(one length scale per metric, ARD) + WhiteKernel, hyperparameters by
  maximising the marginal likelihood (sklearn's L-BFGS), targets normalised. A GP is O(n^3):
  each fold trains on at most `gp_max_rows` rows (a seeded sample of the training rows).
  (MetaMetrics' own GP is the surrogate of a Bayesian optimisation of linear weights; here gp
  is GP regression of the human score on the metrics.)

Rows missing a metric value get no combined score (NaN) and are not trained on; rows missing
the human score are not trained on but are scored. The weights in the sidecar come from one
more fit on all labelled rows: for reading only; the column holds the out-of-fold scores.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray, IntArray

Log = Callable[[str], None]
MODELS = ("ridge", "isotonic", "gp")
VERSION = "1"
GP_KERNEL = "ConstantKernel(1.0) * RBF(length_scale=[1.0]*k) + WhiteKernel(1.0)"
#: (level, grouping) settings the out-of-fold correlation is reported in.
SETTINGS = (("segment", "none"), ("segment", "item"), ("system", "none"))


def signature(*, model: str, inputs: Sequence[str], human: str, folds: int, seed: int,
              alpha: float, gp_max_rows: int) -> str:
    """The combined column's name: everything that decides its values (sacreBLEU style)."""
    import sklearn

    options = f"alpha:{alpha:g}|" if model in ("ridge", "isotonic") else (
        f"kernel:ard-rbf+white|max_rows:{gp_max_rows}|")
    return (f"combine.{model}@{VERSION}|inputs:{'+'.join(inputs)}|human:{human}|"
            f"folds:{folds}|seed:{seed}|{options}sklearn:{sklearn.__version__}")


@dataclass
class Setting:
    level: str
    grouping: str
    statistic: str
    combined: float | None
    components: dict[str, float | None]

    @property
    def best(self) -> tuple[str, float] | None:
        defined = [(k, v) for k, v in self.components.items() if v is not None]
        return max(defined, key=lambda kv: kv[1]) if defined else None

    def to_dict(self) -> dict[str, Any]:
        best = self.best
        return {"level": self.level, "grouping": self.grouping, "statistic": self.statistic,
                "combined": self.combined, "components": self.components,
                "best_component": best[0] if best else None,
                "best_component_value": best[1] if best else None,
                "gain": (self.combined - best[1] if best and self.combined is not None
                         else None)}


@dataclass
class CombineResult(Result):
    column: str
    model: str
    inputs: list[str]
    human: str
    folds: int
    seed: int
    out: str
    rows: int
    scored: int
    trained_rows: dict[int, int]
    weights: dict[str, Any]
    settings: list[Setting] = field(default_factory=list)
    directions: dict[str, bool] = field(default_factory=dict)

    def to_dict(self) -> list[dict[str, Any]]:
        head = {"type": "combination", "column": self.column, "model": self.model,
                "inputs": self.inputs, "human": self.human, "folds": self.folds,
                "seed": self.seed, "out": self.out, "rows": self.rows, "scored": self.scored,
                "trained_rows_per_fold": {str(k): v for k, v in self.trained_rows.items()},
                "weights": self.weights, "higher_is_better": True,
                "inputs_higher_is_better": self.directions}
        return [head, *({"type": "correlation", "column": self.column, "out_of_fold": True,
                         **s.to_dict()} for s in self.settings)]


def combine(scores: str | Path, *, human: str, metrics: Sequence[str], out: str | Path,
            model: str = "ridge", folds: int = 5, seed: int = 0, alpha: float = 1.0,
            gp_max_rows: int = 600, statistic: str = "kendall", lower: Sequence[str] = (),
            higher: Sequence[str] = (), log: Log | None = None,
            host: PluginHost | None = None) -> CombineResult:
    """Fit the combination of `metrics` to `human` with cross-fitting over items, write the
    table with the combined column to `out` (and `out`.meta.json), and return what it did.
    Bad input raises InputError before any fitting."""
    import numpy as np

    from judgebench.extras import require
    from judgebench.tables import destinations
    from judgebench.tables.prepared import PreparedTable

    require("judgebench combine", "combine", "sklearn")
    log = log or (lambda _message: None)
    if model not in MODELS:
        raise InputError(f"unknown model {model!r}; use one of {MODELS}", field="--model")
    if folds < 2:
        raise InputError("must be at least 2", field="--folds")
    if not (alpha > 0 and math.isfinite(alpha)):
        raise InputError("must be a positive number", field="--alpha")
    metrics = list(dict.fromkeys(metrics))
    if not metrics:
        raise InputError("name the metric columns to combine with --metric", field="--metric")
    if human in metrics:
        raise InputError(f"{human!r} is the human column", field="--metric")
    path = Path(scores)
    destinations.check([destinations.read("SCORES", path, sidecar=True),
                        destinations.table("-o", out, sidecar=True)])
    prepared = PreparedTable.read(path, [human], metrics, lower=lower, higher=higher,
                                  host=host, log=log)
    table, where = prepared.table, str(path)
    column = signature(model=model, inputs=metrics, human=human, folds=folds, seed=seed,
                       alpha=alpha, gp_max_rows=gp_max_rows)
    if column in table.frame.columns:
        raise InputError("the table already has this combination's column", path=where,
                         field=column)
    frame = prepared.frame
    oriented = prepared.oriented_frame()
    x = oriented[metrics].to_numpy(dtype=float)
    y = frame[human].to_numpy(dtype=float)
    complete = np.isfinite(x).all(axis=1)
    target = np.where(complete, y, np.nan)
    if np.isfinite(target).sum() < 3:
        raise InputError("fewer than 3 rows have the human score and every metric",
                         path=where, field=human)
    from meta_eval.combination import cross_fit, item_folds

    fold_of = item_folds(frame["item"].astype("str").tolist(), folds, seed)
    rows = np.flatnonzero(complete)
    # cross_fit's indices are positions among the complete rows: the model sees only them
    fit_predict = _model(model, x[rows], alpha=alpha, seed=seed, gp_max_rows=gp_max_rows)
    log(f"{len(frame)} rows, {int(complete.sum())} with every metric; {model} on "
        f"{len(metrics)} metric(s), {len(np.unique(fold_of))} folds over items")
    prediction = np.full(len(frame), np.nan)
    prediction[rows], trained = cross_fit(fit_predict, target[rows], fold_of[rows])
    weights = _full_fit(model, x[rows], target[rows], metrics, alpha=alpha, seed=seed,
                        gp_max_rows=gp_max_rows)
    result_frame = frame.copy()
    result_frame[column] = prediction
    directions = {m: table.info(m).higher_is_better for m in metrics}
    flagged = {m: directions[m] for m in metrics if table.info(m).direction_from == "flag"}
    result = CombineResult(column=column, model=model, inputs=metrics, human=human,
                           folds=folds, seed=seed, out=str(out), rows=len(frame),
                           scored=int(np.isfinite(prediction).sum()), trained_rows=trained,
                           weights=weights, directions=directions)
    result.settings = _correlations(oriented.assign(**{column: prediction}), human, column,
                                    metrics, statistic)
    _write(result_frame, table.sidecar, result, Path(out), flagged)
    return result


def _model(model: str, x: FloatArray, *, alpha: float, seed: int, gp_max_rows: int
           ) -> Callable[[IntArray, FloatArray, IntArray], FloatArray]:
    """fit_predict(train, y, test) over rows of `x`, for meta_eval.combination.cross_fit."""
    import numpy as np

    def fit_predict(train: IntArray, y: FloatArray, test: IntArray) -> FloatArray:
        if model == "gp" and train.size > gp_max_rows:
            keep = np.sort(np.random.default_rng(seed).choice(train.size, gp_max_rows,
                                                              replace=False))
            train, y = train[keep], y[keep]
        estimator = _estimator(model, alpha=alpha, seed=seed, columns=x.shape[1])
        with _quiet_bounds():
            estimator.fit(x[train], y)
        return np.asarray(estimator.predict(x[test]), dtype=float)

    return fit_predict


@contextlib.contextmanager
def _quiet_bounds() -> Iterator[None]:
    """Silence sklearn's warning that a GP length scale reached its upper bound: that is
    the fit saying a metric is irrelevant, which its relevance (1 / length scale, ~0)
    reports."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


def _estimator(model: str, *, alpha: float, seed: int, columns: int) -> Any:
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if model == "ridge":
        return make_pipeline(StandardScaler(), Ridge(alpha=alpha))
    if model == "isotonic":
        return RidgeThenIsotonic(alpha)
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    kernel = ConstantKernel(1.0) * RBF(length_scale=[1.0] * columns) + WhiteKernel(1.0)
    return make_pipeline(StandardScaler(), GaussianProcessRegressor(
        kernel=kernel, normalize_y=True, random_state=seed))


class RidgeThenIsotonic:
    """Ridge on standardised metrics, then an increasing isotonic map of its output."""

    def __init__(self, alpha: float) -> None:
        from sklearn.isotonic import IsotonicRegression
        from sklearn.linear_model import Ridge
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.ridge = make_pipeline(StandardScaler(), Ridge(alpha=alpha))
        self.isotonic = IsotonicRegression(increasing=True, out_of_bounds="clip")

    def fit(self, x: FloatArray, y: FloatArray) -> RidgeThenIsotonic:
        self.ridge.fit(x, y)
        self.isotonic.fit(self.ridge.predict(x), y)
        return self

    def predict(self, x: FloatArray) -> FloatArray:
        return self.isotonic.predict(self.ridge.predict(x))


def _full_fit(model: str, x: FloatArray, y: FloatArray, metrics: Sequence[str], *,
              alpha: float, seed: int, gp_max_rows: int) -> dict[str, Any]:
    """What a fit on every labelled row says (for reading; the column is out of fold)."""
    import numpy as np

    labelled = np.isfinite(y)
    x, y = x[labelled], y[labelled]
    if model == "gp" and len(y) > gp_max_rows:
        keep = np.sort(np.random.default_rng(seed).choice(len(y), gp_max_rows, replace=False))
        x, y = x[keep], y[keep]
    estimator = _estimator(model, alpha=alpha, seed=seed, columns=x.shape[1])
    with _quiet_bounds():
        estimator.fit(x, y)
    if model == "gp":
        gp = estimator[-1]
        params = gp.kernel_.get_params()
        scales = np.atleast_1d(params["k1__k2__length_scale"])
        return {"kernel": GP_KERNEL, "fitted_kernel": str(gp.kernel_),
                "length_scale": dict(zip(metrics, map(float, scales), strict=True)),
                "relevance": dict(zip(metrics, map(float, 1 / scales), strict=True)),
                "noise": float(params["k2__noise_level"]),
                "note": "a GP has no weights: relevance = 1 / length scale (standardised "
                        "metrics), larger = the prediction moves more with that metric"}
    ridge = estimator.ridge if model == "isotonic" else estimator
    scaler, linear = ridge[0], ridge[-1]
    out: dict[str, Any] = {
        "standardised": dict(zip(metrics, map(float, linear.coef_), strict=True)),
        "per_unit": dict(zip(metrics, map(float, linear.coef_ / scaler.scale_), strict=True)),
        "intercept": float(linear.intercept_ - (linear.coef_ / scaler.scale_) @ scaler.mean_),
        "alpha": alpha,
        "note": "y = intercept + sum per_unit[m] * m (each metric oriented higher-is-better)"}
    if model == "isotonic":
        out["note"] += ", then the increasing isotonic map of that score"
        out["isotonic_points"] = len(estimator.isotonic.X_thresholds_)
    return out


def _correlations(frame: pd.DataFrame, human: str, column: str, metrics: Sequence[str],
                  statistic: str) -> list[Setting]:
    """The out-of-fold combination and each component, by `statistic`, in SETTINGS (system
    level: means of segment scores, for the combination and the components alike)."""
    import meta_eval

    mats = meta_eval.score_matrices(frame, [human, column, *metrics])
    out = []
    for level, grouping in SETTINGS:
        def value(name: str, level: str = level, grouping: str = grouping) -> float | None:
            v = meta_eval.evaluate(statistic, human=mats[human], metric=mats[name],
                                   level=level, grouping=grouping).value
            return float(v) if math.isfinite(v) else None

        out.append(Setting(level, grouping, statistic, value(column),
                           {m: value(m) for m in metrics}))
    return out


def _write(frame: pd.DataFrame, sidecar: dict[str, Any] | None, result: CombineResult,
           out: Path, flagged: dict[str, bool]) -> None:
    """The table and its sidecar: the input's sidecar, the directions given by flags (so a
    reader of OUT needs no flag again), and the combined column."""
    import json

    from judgebench.tables.io import write_table, write_text

    meta: dict[str, Any] = dict(sidecar or {})
    columns = dict(meta.get("columns") or {})
    for name, higher in flagged.items():
        columns[name] = {**(columns.get(name) or {}), "higher_is_better": higher}
    columns[result.column] = {
        "metric": f"combine.{result.model}", "signature": result.column,
        "higher_is_better": True, "level": "segment", "has_corpus": False,
        "combination": {"model": result.model, "inputs": result.inputs,
                        "human": result.human, "folds": result.folds, "seed": result.seed,
                        "out_of_fold": True, "weights": result.weights,
                        "inputs_higher_is_better": result.directions}}
    meta["columns"] = columns
    write_table(frame, out)
    write_text(json.dumps(meta, indent=2, allow_nan=False), Path(f"{out}.meta.json"))

