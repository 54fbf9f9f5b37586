"""Comparing two judges on the same units: how often they flip, whether the flips move
towards people or away from them, how far apart their score distributions are.

Units are rows (a compared pair, or an (item, system) output) with an `items` label each;
every confidence interval is a percentile bootstrap that resamples items with replacement
(all rows of a drawn item come along), seeded. Values are float arrays with NaN for missing;
each statistic uses the units where the values it needs are present.

flip_rate: with units U where both judges are present and a tolerance t >= 0,

        flip = |{u in U : |a_u - b_u| > t}| / |U|.

    For pairwise verdicts coded 1 (A better), -1 (B better), 0 (tie) and t = 0, a flip is a
    changed verdict.

human_flips (negative and positive flips as in Yan et al. 2021, "Positive-Congruent Training:
    Towards Regression-Free Model Updates", with judge A as the old model and B the new): with
    units V where both judges and the human label are present, judge x is right on u when
    |x_u - h_u| <= t;

        negative = |{right_a and not right_b}| / |V|   (A right -> B wrong),
        positive = |{not right_a and right_b}| / |V|   (A wrong -> B right),
        accuracy_x = |{right_x}| / |V|,

    so accuracy_b - accuracy_a = positive - negative.

kl_divergence: KL(P || Q) = sum_i p_i ln(p_i / q_i) in nats, over the union of both supports
    (a label missing from one has probability 0 there), after smoothing each distribution
    p_i <- (p_i + eps) / (1 + k eps) (k labels; eps = 1e-12 by default), so it is finite.

js_divergence: JS(P, Q) = (KL(P || M) + KL(Q || M)) / 2, M = (P + Q) / 2, in nats (at most
    ln 2), on the unsmoothed distributions (it is finite without smoothing). It is the square
    of scipy.spatial.distance.jensenshannon(p, q) (base e).

Cohen's kappa between the judges, or of a judge with people, is `meta_eval.agreement.
cohen_kappa` on the coded labels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.agreement import cohen_kappa
from meta_eval.results import _clean

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray

VERDICT_CODES = {"a": 1.0, "tie": 0.0, "b": -1.0}
DEFAULT_EPSILON = 1e-12
#: A statistic of the units weighted by `weights` (1 each; a bootstrap draw's counts):
#: (value, units it used).
Statistic = Callable[["FloatArray"], tuple[float, int]]


class VerdictError(ValueError):
    """A value that is not a verdict, at `row` (0-based)."""

    def __init__(self, row: int, detail: str) -> None:
        self.row, self.detail = row, detail
        super().__init__(f"row {row}: {detail}")


def verdict_codes(values: Sequence[Any]) -> FloatArray:
    """Pairwise verdicts or preferences to codes, as `meta_eval.pairwise.normalise_labels`:
    "a" -> 1, "tie" -> 0, "b" -> -1 (any case); a number p in [0, 1], P(A is better), by its
    side: 1 if p > 0.5, -1 if p < 0.5, 0 if p = 0.5 (text spelling a number is that number);
    missing (None, NaN, "") -> NaN. Anything else is a VerdictError naming the row."""
    out = np.full(len(values), np.nan)
    for row, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if isinstance(value, str):
            text = value.strip().lower()
            if not text:
                continue
            if text in VERDICT_CODES:
                out[row] = VERDICT_CODES[text]
                continue
            try:
                value = float(text)
            except ValueError:
                raise VerdictError(row, f"{value!r} is not a verdict (a, b, tie, or a "
                                        "probability in [0, 1])") from None
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer |
                                                     np.floating):
            raise VerdictError(row, f"{value!r} is not a verdict (a, b, tie, or a "
                                    "probability in [0, 1])")
        p = float(value)
        if not 0.0 <= p <= 1.0:
            raise VerdictError(row, f"{value!r} is not a probability in [0, 1]")
        out[row] = 1.0 if p > 0.5 else -1.0 if p < 0.5 else 0.0
    return out


def _weights(weights: FloatArray | None, size: int) -> FloatArray:
    return np.ones(size) if weights is None else np.asarray(weights, dtype=float)


def flip_rate(*, judge_a: FloatArray, judge_b: FloatArray, tolerance: float = 0.0,
              weights: FloatArray | None = None) -> tuple[float, int]:
    """(share of units where the judges differ by more than `tolerance`, units). `weights`
    (default 1) counts each unit that many times (the bootstrap's draw counts)."""
    a, b = np.asarray(judge_a, dtype=float), np.asarray(judge_b, dtype=float)
    w = _weights(weights, a.size)
    both = np.isfinite(a) & np.isfinite(b) & (w > 0)
    total = float(w[both].sum())
    if total == 0:
        return math.nan, 0
    with np.errstate(over="ignore", invalid="ignore"):
        differ = np.abs(a[both] - b[both]) > tolerance
    return float(w[both][differ].sum()) / total, int(both.sum())


def human_flips(*, human: FloatArray, judge_a: FloatArray, judge_b: FloatArray,
                tolerance: float = 0.0, weights: FloatArray | None = None
                ) -> tuple[dict[str, float], int]:
    """({negative, positive, accuracy_a, accuracy_b}, units) against people (see the module
    docstring): all over the units where all three are present; `weights` as in
    `flip_rate`."""
    h = np.asarray(human, dtype=float)
    a, b = np.asarray(judge_a, dtype=float), np.asarray(judge_b, dtype=float)
    w = _weights(weights, h.size)
    present = np.isfinite(h) & np.isfinite(a) & np.isfinite(b) & (w > 0)
    total = float(w[present].sum())
    if total == 0:
        return dict.fromkeys(("negative", "positive", "accuracy_a", "accuracy_b"),
                             math.nan), 0
    wp = w[present]
    with np.errstate(over="ignore", invalid="ignore"):
        right_a = np.abs(a[present] - h[present]) <= tolerance
        right_b = np.abs(b[present] - h[present]) <= tolerance

    def share(mask: BoolArray) -> float:
        return float(wp[mask].sum()) / total

    return {"negative": share(right_a & ~right_b), "positive": share(~right_a & right_b),
            "accuracy_a": share(right_a), "accuracy_b": share(right_b)}, int(present.sum())


def kappa(*, judge_a: FloatArray, judge_b: FloatArray) -> tuple[float, int]:
    """(Cohen's kappa between two label arrays, units with both labels):
    `meta_eval.agreement.cohen_kappa`, unweighted."""
    result = cohen_kappa(human=np.asarray(judge_a, dtype=float).tolist(),
                         metric=np.asarray(judge_b, dtype=float).tolist())
    return float(result.value), int(result.n)


class PairCounts:
    """Cohen's kappa of two label arrays from weighted counts, for the bootstrap: the pair of
    category positions of every unit is found once, and each resample's kappa is
    (p_o - p_e) / (1 - p_e) of the weighted confusion matrix (the formula of
    `meta_eval.agreement.cohen_kappa`, unweighted, with the same categories: the sorted
    union of the labels present in both). Undefined (NaN) when p_e = 1."""

    def __init__(self, judge_a: FloatArray, judge_b: FloatArray) -> None:
        a, b = np.asarray(judge_a, dtype=float), np.asarray(judge_b, dtype=float)
        self.present = np.isfinite(a) & np.isfinite(b)
        categories = np.unique(np.concatenate([a[self.present], b[self.present]]))
        self.k = categories.size
        self.pair = (np.searchsorted(categories, a[self.present]) * self.k
                     + np.searchsorted(categories, b[self.present]))

    def __call__(self, weights: FloatArray) -> tuple[float, int]:
        w = np.asarray(weights, dtype=float)[self.present]
        total = float(w.sum())
        if total == 0 or self.k < 2:
            return math.nan, int((w > 0).sum())
        counts = np.bincount(self.pair, weights=w, minlength=self.k * self.k)
        observed = counts.reshape(self.k, self.k) / total
        expected = float(observed.sum(axis=1) @ observed.sum(axis=0))
        agreed = float(np.trace(observed))
        value = (agreed - expected) / (1 - expected) if expected < 1 else math.nan
        return value, int((w > 0).sum())


def is_whole(values: FloatArray) -> bool:
    """Every present value is a whole number (a category on an integer scale)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return bool(x.size) and bool(np.all(x == np.round(x)))


def normalised(distribution: Mapping[str, float]) -> dict[str, float]:
    """A distribution over labels scaled to sum 1; a ValueError for a negative, non-finite or
    all-zero one."""
    values = [float(v) for v in distribution.values()]
    if not values or any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError(f"not a probability distribution: {dict(distribution)!r}")
    total = math.fsum(values)
    if total <= 0:
        raise ValueError(f"a distribution with no mass: {dict(distribution)!r}")
    return {str(k): float(v) / total for k, v in distribution.items()}


def aligned(*, p: Mapping[str, float], q: Mapping[str, float]
            ) -> tuple[FloatArray, FloatArray]:
    """Two distributions (normalised) as arrays over the sorted union of their labels."""
    p, q = normalised(p), normalised(q)
    support = sorted(set(p) | set(q))
    return (np.array([p.get(k, 0.0) for k in support]),
            np.array([q.get(k, 0.0) for k in support]))


def kl_divergence(*, p: FloatArray, q: FloatArray, epsilon: float = DEFAULT_EPSILON) -> float:
    """KL(p || q) in nats, each side smoothed by `epsilon` and renormalised."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    k = p.size
    ps, qs = (p + epsilon) / (1 + k * epsilon), (q + epsilon) / (1 + k * epsilon)
    positive = ps > 0
    return float(np.sum(ps[positive] * np.log(ps[positive] / qs[positive])))


def js_divergence(*, p: FloatArray, q: FloatArray) -> float:
    """Jensen-Shannon divergence in nats (0 to ln 2), unsmoothed."""
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    m = (p + q) / 2

    def kl_to_m(x: FloatArray) -> float:
        positive = x > 0
        return float(np.sum(x[positive] * np.log(x[positive] / m[positive])))

    return max(0.0, (kl_to_m(p) + kl_to_m(q)) / 2)


def divergences(*, p: Sequence[Mapping[str, float]], q: Sequence[Mapping[str, float]],
                epsilon: float = DEFAULT_EPSILON) -> tuple[FloatArray, FloatArray]:
    """Per unit (KL(p_u || q_u), JS(p_u, q_u)), as two arrays."""
    if len(p) != len(q):
        raise ValueError("p and q must hold one distribution per unit each")
    kl, js = np.empty(len(p)), np.empty(len(p))
    for u, (pu, qu) in enumerate(zip(p, q, strict=True)):
        x, y = aligned(p=pu, q=qu)
        kl[u], js[u] = kl_divergence(p=x, q=y, epsilon=epsilon), js_divergence(p=x, q=y)
    return kl, js


@dataclass(frozen=True)
class Estimate:
    """One statistic: its value on all units, how many units, and a bootstrap CI."""

    statistic: str
    value: float
    n: int
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


def item_bootstrap(statistic: Callable[[FloatArray], float], *, items: Sequence[Any],
                   resamples: int, seed: int = 0, ci: float = 0.95
                   ) -> tuple[float | None, float | None]:
    """Percentile CI of `statistic(weights)` over `resamples` draws of the items with
    replacement: a unit's weight is how many times its item was drawn, so each drawn item
    brings all its rows, as often as it was drawn. Draws where the statistic is undefined
    (NaN) are left out. (None, None) without any."""
    if resamples <= 0 or not len(items):
        return None, None
    codes = np.unique(np.asarray([str(i) for i in items], dtype=object),
                      return_inverse=True)[1].reshape(-1)
    n_items = int(codes.max()) + 1
    rng = np.random.default_rng(seed)
    values = np.empty(resamples)
    for r in range(resamples):
        drawn = np.bincount(rng.integers(0, n_items, size=n_items), minlength=n_items)
        values[r] = statistic(drawn[codes].astype(float))
    values = values[np.isfinite(values)]
    if not values.size:
        return None, None
    alpha = (1 - ci) / 2
    low, high = np.quantile(values, [alpha, 1 - alpha])
    return float(low), float(high)


def estimate(name: str, statistic: Statistic, *, items: Sequence[Any], bootstrap: int,
             seed: int, ci: float = 0.95, value: tuple[float, int] | None = None
             ) -> Estimate:
    """`statistic(weights) -> (value, n)` on every unit (weight 1; or `value` as given),
    with its item-bootstrap CI."""
    point, n = value if value is not None else statistic(np.ones(len(items)))
    low = high = None
    if math.isfinite(point):
        low, high = item_bootstrap(lambda w: statistic(w)[0], items=items,
                                   resamples=bootstrap, seed=seed, ci=ci)
    return Estimate(name, point, n, low, high)


def compare_labels(*, judge_a: FloatArray, judge_b: FloatArray, items: Sequence[Any],
                   human: FloatArray | None = None, tolerance: float = 0.0,
                   human_categorical: bool = True, bootstrap: int = 1000, seed: int = 0,
                   ci: float = 0.95) -> list[Estimate]:
    """Every comparison of two judges' coded values on the same units: `flip_rate`, `kappa`
    (when both judges are whole-numbered, e.g. verdict codes or integer scores), and with
    `human` each judge's `kappa_*_human` (when the labels are whole-numbered) and, where
    `human_categorical`, `negative_flips`, `positive_flips`, `accuracy_a`, `accuracy_b`.
    Each with an item-bootstrap CI (`bootstrap` resamples, seeded)."""
    a, b = np.asarray(judge_a, dtype=float), np.asarray(judge_b, dtype=float)
    if not a.shape == b.shape == (len(items),):
        raise ValueError("judge_a, judge_b and items must have one length")
    options: dict[str, Any] = {"items": items, "bootstrap": bootstrap, "seed": seed, "ci": ci}

    def flips(w: FloatArray) -> tuple[float, int]:
        return flip_rate(judge_a=a, judge_b=b, tolerance=tolerance, weights=w)

    def kappa_estimate(name: str, x: FloatArray, y: FloatArray) -> Estimate:
        return estimate(name, PairCounts(x, y), value=kappa(judge_a=x, judge_b=y), **options)

    out = [estimate("flip_rate", flips, **options)]
    if is_whole(a) and is_whole(b):
        out.append(kappa_estimate("kappa", a, b))
    if human is None:
        return out
    h = np.asarray(human, dtype=float)
    if h.shape != a.shape:
        raise ValueError("human must have one value per unit")
    if is_whole(h):
        out += [kappa_estimate(name, x, h) for name, x in
                (("kappa_a_human", a), ("kappa_b_human", b)) if is_whole(x)]
    if human_categorical:
        for key in ("negative", "positive", "accuracy_a", "accuracy_b"):
            name = f"{key}_flips" if key in ("negative", "positive") else key
            out.append(estimate(name, _flips_on(h, a, b, tolerance, key), **options))
    return out


def _flips_on(h: FloatArray, a: FloatArray, b: FloatArray, tolerance: float, key: str
              ) -> Statistic:
    def statistic(w: FloatArray) -> tuple[float, int]:
        found, n = human_flips(human=h, judge_a=a, judge_b=b, tolerance=tolerance, weights=w)
        return found[key], n

    return statistic


def compare_distributions(*, p: Sequence[Mapping[str, float]],
                          q: Sequence[Mapping[str, float]], items: Sequence[Any],
                          epsilon: float = DEFAULT_EPSILON, bootstrap: int = 1000,
                          seed: int = 0, ci: float = 0.95) -> list[Estimate]:
    """`mean_kl` (mean over units of KL(p_u || q_u), smoothed by `epsilon`) and `mean_js`
    (mean JS divergence), in nats, with item-bootstrap CIs."""
    kl, js = divergences(p=p, q=q, epsilon=epsilon)

    def mean(values: FloatArray) -> Statistic:
        def statistic(w: FloatArray) -> tuple[float, int]:
            total = float(w.sum())
            return (float(w @ values) / total if total else math.nan, int((w > 0).sum()))

        return statistic

    return [estimate("mean_kl", mean(kl), items=items, bootstrap=bootstrap, seed=seed, ci=ci),
            estimate("mean_js", mean(js), items=items, bootstrap=bootstrap, seed=seed, ci=ci)]
