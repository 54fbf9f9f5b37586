"""Every pairwise statistic of every judge, per category, with item-bootstrap CIs, at once.

The statistics (`meta_eval.pairwise`) are ratios of sums over pairs, or Cohen's kappa of a
confusion matrix, which is also a sum over pairs. So each is computed from per-pair features
summed per (item, category) group: a bootstrap resample of items with replacement is a
vector of item counts w, and its sums are w @ (group sums), one matrix product for every
statistic of every judge and every resample of a block. Resamples draw items (several pairs
may share an item), seeded; the CI is the percentile interval at level `ci`, as
`meta_eval.levels.evaluate` reports it.

Judges: `Verdicts(ab=, ba=, combined=)`, each P(A better) per pair (NaN missing) or None.
A judge without a combined verdict but with both orders is combined as judge.pairwise does:
the common verdict where the orders agree, a tie where they disagree, the one verdict where
only one order has one. Statistics needing an order it lacks are not reported.

Failed verdicts (`Verdicts.failed_*`, a parse failure, refusal or error, told apart from a
verdict never asked for) are counted by `Verdicts.failed_as` (`FAILED_AS`): `missing` drops
them; `tie` reads them as P = 0.5; `wrong` as a value of their own (`meta_eval.pairwise.
FAILED`): credit 0 against any human label, in every denominator, equal to another failed
verdict (consistency), a class of its own in both kappas, not a tie in the tie rate, and
for calibration the probability on the wrong side. A combined verdict derived from orders
failed where an order failed. Every result says how many pairs failed and how it counted
them (`PairwiseResult.failed`).

By category: each statistic per category and their macro average (the mean over the
categories where it is defined, `n` = categories averaged), as RewardBench and JudgeBench
report per-subset then averaged accuracy.

Human ceiling (two or more human columns): each rater r is scored against the reference of
the others, ref_r = hard label of the mean of their P(A better) (a majority vote; rows
where r or all others are missing drop for r only), with the same credit or kappa; the
ceiling is the mean over raters. Each judge is scored against the same references and
`ceiling_fraction` = mean_r judge(ref_r) / ceiling (accuracy-type statistics against the
accuracy ceiling, kappa against the kappa ceiling), as `meta_eval.ceiling.human_ceiling`
does for correlations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.pairwise import (
    FAILED,
    TIE_POLICIES,
    credit,
    hard_labels,
    kappa_from_counts,
    paired_sign_test,
)
from meta_eval.results import Ranking, Result
from meta_eval.significance import assign_clusters

if TYPE_CHECKING:
    from meta_eval.arrays import AnyArray, BoolArray, FloatArray, IntArray

STATISTICS = ("accuracy-ab", "accuracy-ba", "accuracy", "accuracy-combined", "accuracy-vote",
              "both-correct",
              "consistency", "tie-rate", "kappa-orders", "kappa")
HUMAN_FREE = ("consistency", "tie-rate", "kappa-orders")  # need no human label
MACRO = "(macro)"
CEILING = "(human ceiling)"
_CELLS = 1 << 22  # item-count cells per bootstrap block


@dataclass(frozen=True)
class Verdicts:
    """One judge: P(A better) per pair for A shown first, B shown first, and combined (NaN:
    missing or failed), the failed cells of each (`failed_ab`, ...) and how a failed verdict
    is counted (`failed_as`, see `FAILED_AS`)."""

    ab: FloatArray | None = None
    ba: FloatArray | None = None
    combined: FloatArray | None = None
    failed_ab: BoolArray | None = None
    failed_ba: BoolArray | None = None
    failed_combined: BoolArray | None = None
    failed_as: str = "missing"

    def _counted(self, labels: FloatArray, failed: BoolArray | None) -> FloatArray:
        """Hard labels with the failed cells as the convention counts them: missing (NaN),
        tie (0) or wrong (`FAILED`, a value of its own)."""
        if failed is None or not failed.any():
            return labels
        return np.where(failed, FAILED_LABEL[self.failed_as], labels)

    def orders(self) -> dict[str, FloatArray]:
        failed = {"ab": self.failed_ab, "ba": self.failed_ba}
        return {k: self._counted(hard_labels(v), failed[k])
                for k, v in (("ab", self.ab), ("ba", self.ba)) if v is not None}

    def combined_failed(self) -> BoolArray | None:
        """The pairs whose combined verdict failed: its own cell, or without a combined
        column a failed order (judge.pairwise fails a score whose order failed)."""
        if self.combined is not None:
            return self.failed_combined
        masks = [m for m, v in ((self.failed_ab, self.ab), (self.failed_ba, self.ba))
                 if m is not None and v is not None]
        return np.logical_or.reduce(masks) if masks else None

    def combined_labels(self) -> FloatArray:
        if self.combined is not None:
            return self._counted(hard_labels(self.combined), self.failed_combined)
        orders = [hard_labels(v) for v in (self.ab, self.ba) if v is not None]
        if len(orders) == 1:
            labels = orders[0]
        else:
            ab, ba = orders
            labels = np.where(np.isnan(ab), ba, np.where(np.isnan(ba), ab,
                                                         np.where(ab == ba, ab, 0.0)))
        return self._counted(labels, self.combined_failed())

    def vote_labels(self) -> FloatArray:
        """The orders' vote (JudgeBench, Tan et al. 2024): sign(ab + ba), so a decided order
        and a tie give the decided one and opposite orders a tie; one order alone is its own
        verdict; a judge's own combined column is taken as it is."""
        if self.combined is not None or self.ab is None or self.ba is None:
            return self.combined_labels()
        ab, ba = hard_labels(self.ab), hard_labels(self.ba)
        labels = np.where(np.isnan(ab), ba, np.where(np.isnan(ba), ab, np.sign(ab + ba)))
        return self._counted(labels, self.combined_failed())

    def failed_rows(self, statistic: str) -> BoolArray | None:
        """The pairs where a verdict that `statistic` reads failed (None: none known)."""
        ab = self.failed_ab if self.ab is not None else None
        ba = self.failed_ba if self.ba is not None else None
        if statistic in CALIBRATION:
            return self.failed_combined if self.combined is not None else ab
        if statistic in ("kappa", "accuracy-combined", "accuracy-vote") or (
                self.ab is None and self.ba is None):
            return self.combined_failed()
        if statistic in ("accuracy-ab", "accuracy-ba"):
            return ab if statistic == "accuracy-ab" else ba
        masks = [m for m in (ab, ba) if m is not None]
        return np.logical_or.reduce(masks) if masks else None

    def failed_info(self, statistic: str, rows: BoolArray | None = None) -> dict[str, Any]:
        """How many of the pairs (`rows`: a mask, default all) `statistic` found failed, and
        how it counted them."""
        failed = self.failed_rows(statistic)
        n = 0 if failed is None else int((failed if rows is None else failed & rows).sum())
        return {"rows": n, "counted_as": counted_as(self.failed_as, statistic)}


#: How `--failed-as` counts a failed verdict: as missing (dropped from every statistic that
#: needs the verdict), as a tie (P = 0.5), or wrong (LLMBar, Zeng et al. 2024, evaluate.py:
#: a parse failure stays in the denominator and is never the gold label; two failed orders
#: agree in positional agreement; its own value in a kappa).
FAILED_AS = ("missing", "wrong", "tie")
FAILED_LABEL = {"missing": np.nan, "tie": 0.0, "wrong": FAILED}


def counted_as(failed_as: str, statistic: str) -> str:
    """How `statistic` counted a failed verdict under the convention `failed_as`."""
    if failed_as == "missing":
        return "dropped"
    if failed_as == "tie":
        return "tie (P(A better) = 0.5)"
    return {"consistency": "a value of its own: two failed orders agree",
            "kappa-orders": "a class of its own", "kappa": "a class of its own",
            "tie-rate": "a verdict that is not a tie",
            "brier": "P(A better) on the wrong side (0 when people prefer A, else 1)",
            "ece": "P(A better) on the wrong side (0 when people prefer A, else 1)",
            }.get(statistic, "wrong (credit 0)")


@dataclass(frozen=True)
class PairwiseResult:
    """One statistic of one judge (or of the raters: judge = CEILING) against one human
    column (None for the statistics that need none), in one category (None: all pairs)."""

    judge: str
    human: str | None
    statistic: str
    category: str | None
    result: Result
    ceiling_fraction: float | None = None
    cluster: int | None = None
    #: the judge's failed verdicts among the pairs, and how the statistic counted them
    failed: dict[str, Any] | None = None


@dataclass(frozen=True)
class PairwiseEvaluation:
    results: list[PairwiseResult]
    rankings: dict[str, Ranking] = field(default_factory=dict)  # human -> accuracy ranking


class _Sums:
    """Per-pair features summed per group: columns of a (groups, K) matrix."""

    def __init__(self, group: IntArray, n_groups: int):
        self.group, self.n_groups = group, n_groups
        self.columns: list[AnyArray] = []  # float sums (np.bincount's stub says int)

    def add(self, values: FloatArray | BoolArray) -> int:
        v = np.asarray(values, dtype=float)
        self.columns.append(np.bincount(self.group, weights=np.where(np.isnan(v), 0.0, v),
                                        minlength=self.n_groups))
        return len(self.columns) - 1

    def ratio(self, values: FloatArray | BoolArray) -> tuple[str, list[int]]:
        """Mean of `values` over the pairs where they are defined."""
        defined = np.isfinite(values)
        return "ratio", [self.add(np.where(defined, values, 0.0)), self.add(defined)]

    def kappa(self, x: FloatArray, y: FloatArray) -> tuple[str, list[int]]:
        """Cohen's kappa of hard labels x, y (pairs with both): classes b, tie, a and a
        failed verdict (`FAILED`, counted as its own value); a class nobody used adds
        nothing."""
        both = np.isfinite(x) & np.isfinite(y)
        cell = np.where(both, (np.nan_to_num(x) + 1) * 4 + np.nan_to_num(y) + 1, -1)
        return "kappa", [self.add(cell == k) for k in range(16)]

    def matrix(self) -> FloatArray:
        return np.stack(self.columns, axis=1) if self.columns else np.zeros((self.n_groups, 0))


@dataclass
class _Plan:
    """What to compute: quantities (ratios, kappas) over summed features, and statistics
    as means of quantities (accuracy: of two)."""

    sums: _Sums
    quantities: list[tuple[str, list[int]]] = field(default_factory=list)
    statistics: dict[tuple[Any, ...], list[int]] = field(default_factory=dict)

    def quantity(self, spec: tuple[str, list[int]]) -> int:
        self.quantities.append(spec)
        return len(self.quantities) - 1

    def judge(self, name: str, verdicts: Verdicts, human: FloatArray | None, key: Any,
              ties: str) -> None:
        """The statistics of one judge: against `human` (hard labels) under `key`, or the
        human-free ones (human None)."""
        orders = verdicts.orders()
        s, out = self.sums, self.statistics
        if human is None:
            if "ab" in orders and "ba" in orders:
                ab, ba = orders["ab"], orders["ba"]
                both = np.isfinite(ab) & np.isfinite(ba)
                out[(name, key, "consistency")] = [self.quantity(
                    s.ratio(np.where(both, ab == ba, np.nan)))]
                out[(name, key, "kappa-orders")] = [self.quantity(s.kappa(ab, ba))]
            pooled = list(orders.values()) or [verdicts.combined_labels()]
            ties_of = [np.where(np.isfinite(v), v == 0, np.nan) for v in pooled]
            num = [s.add(np.nan_to_num(t)) for t in ties_of]
            den = [s.add(np.isfinite(t)) for t in ties_of]
            tie_rate = ("pooled", [*num, *den])
            out[(name, key, "tie-rate")] = [self.quantity(tie_rate)]
            return
        credits = {k: credit(human=human, verdict=v, ties=ties) for k, v in orders.items()}
        for order, c in credits.items():
            out[(name, key, f"accuracy-{order}")] = [self.quantity(s.ratio(c))]
        if credits:
            out[(name, key, "accuracy")] = [out[(name, key, f"accuracy-{o}")][0]
                                            for o in credits]
        else:
            out[(name, key, "accuracy")] = [self.quantity(s.ratio(credit(
                human=human, verdict=verdicts.combined_labels(), ties=ties)))]
        out[(name, key, "accuracy-combined")] = [self.quantity(s.ratio(credit(
            human=human, verdict=verdicts.combined_labels(), ties=ties)))]
        out[(name, key, "accuracy-vote")] = [self.quantity(s.ratio(credit(
            human=human, verdict=verdicts.vote_labels(), ties=ties)))]
        if len(credits) == 2:
            both = np.fmin(credits["ab"], credits["ba"])
            both[np.isnan(credits["ab"]) | np.isnan(credits["ba"])] = np.nan
            out[(name, key, "both-correct")] = [self.quantity(s.ratio(both))]
        combined = verdicts.combined_labels()
        gold = np.where(human == 0, np.nan, human) if ties == "drop" else human
        out[(name, key, "kappa")] = [self.quantity(s.kappa(combined, gold))]


def _finish(plan: _Plan, totals: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Quantity values and counts from summed features (..., K) -> (..., Q) twice."""
    values = np.empty((*totals.shape[:-1], len(plan.quantities)))
    counts = np.empty_like(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        for q, (kind, cols) in enumerate(plan.quantities):
            t = totals[..., cols]
            if kind == "ratio":
                values[..., q] = np.where(t[..., 1] > 0, t[..., 0] / t[..., 1], np.nan)
                counts[..., q] = t[..., 1]
            elif kind == "pooled":
                half = len(cols) // 2
                num, den = t[..., :half].sum(axis=-1), t[..., half:].sum(axis=-1)
                values[..., q] = np.where(den > 0, num / den, np.nan)
                counts[..., q] = den
            else:
                cells = t.reshape(*t.shape[:-1], 4, 4)
                values[..., q] = kappa_from_counts(cells)
                counts[..., q] = cells.sum(axis=(-1, -2))
    return values, counts


def _nanmean(values: FloatArray) -> Any:
    """Mean over the first axis of the finite entries (NaN where none)."""
    defined = np.isfinite(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined.any(axis=0), np.where(defined, values, 0.0).sum(axis=0)
                        / defined.sum(axis=0), np.nan)


def _macro(values: FloatArray) -> FloatArray:
    """(..., categories, Q) -> (..., Q): mean over the categories where defined."""
    defined = np.isfinite(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined.any(axis=-2),
                        np.where(defined, values, 0.0).sum(axis=-2) / defined.sum(axis=-2),
                        np.nan)


def evaluate_pairwise(*, judges: Mapping[str, Verdicts], humans: Mapping[str, FloatArray],
                      items: Sequence[Any] | AnyArray,
                      categories: Sequence[Any] | AnyArray | None = None,
                      ties: str = "drop", bootstrap: int = 0, ci: float = 0.95, seed: int = 0,
                      compare: bool = False, resamples: int = 1000, alpha: float = 0.05
                      ) -> PairwiseEvaluation:
    """Every statistic of every judge against every human column (P(A better) arrays), per
    category and macro-averaged when `categories` is given, with item-bootstrap CIs when
    `bootstrap` > 0, the leave-one-rater-out ceiling with two or more human columns, and
    with `compare` significance clusters of the judges' accuracy per human column."""
    import pandas as pd

    if ties not in TIE_POLICIES:
        raise ValueError(f"unknown tie policy {ties!r}; use one of {TIE_POLICIES}")
    item_index, item_names = pd.factorize(pd.Series(np.asarray(items, dtype=object)))
    n_pairs = len(item_index)
    cat_index: IntArray = np.zeros(n_pairs, dtype=np.int64)
    cat_names: AnyArray = np.array([None])
    if categories is not None:
        cat_index, found = pd.factorize(pd.Series(np.asarray(categories, dtype=object)))
        cat_names = np.asarray(found, dtype=object)
        if (cat_index < 0).any():
            raise ValueError("a pair has no category")
    n_items, n_cats = len(item_names), len(cat_names)
    group, keys = pd.factorize(pd.Series(item_index * n_cats + cat_index))
    group_keys = np.asarray(keys, dtype=np.int64)
    group_item, group_cat = group_keys // n_cats, group_keys % n_cats

    plan = _Plan(_Sums(np.asarray(group), len(group_keys)))
    codes = {h: hard_labels(p) for h, p in humans.items()}
    for name, verdicts in judges.items():
        plan.judge(name, verdicts, None, None, ties)
        for h, labels in codes.items():
            plan.judge(name, verdicts, labels, h, ties)
    raters = list(humans)
    if len(raters) >= 2:
        stack = np.stack([np.asarray(humans[r], dtype=float) for r in raters])
        for r, rater in enumerate(raters):
            others = np.delete(stack, r, axis=0)
            present = np.isfinite(others).sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                reference = hard_labels(np.where(present > 0, np.nansum(others, axis=0)
                                                 / present, np.nan))
            key = ("loo", rater)
            plan.statistics[(CEILING, key, "accuracy")] = [plan.quantity(plan.sums.ratio(
                credit(human=reference, verdict=codes[rater], ties=ties)))]
            gold = np.where(reference == 0, np.nan, reference) if ties == "drop" else reference
            plan.statistics[(CEILING, key, "kappa")] = [plan.quantity(
                plan.sums.kappa(codes[rater], gold))]
            for name, verdicts in judges.items():
                plan.judge(name, verdicts, reference, key, ties)

    features = plan.sums.matrix()
    per_cat = np.zeros((n_cats, features.shape[1]))
    np.add.at(per_cat, group_cat, features)
    point, counts = _finish(plan, per_cat)  # (cats, Q)
    samples = None
    if bootstrap > 0:
        samples = _bootstrap(plan, features, group_item, group_cat, n_items, n_cats,
                             bootstrap, seed)  # (B, cats, Q)
    by = categories is not None
    results = _results(plan, point, counts, samples, cat_names, by, ci, raters)
    results = [_with_failed(r, judges, categories) for r in results]
    rankings = {}
    if compare and len(judges) > 1:
        rankings = _rankings(judges, codes, ties, results, resamples, alpha, seed)
        results = [_with_cluster(r, rankings, by) for r in results]
    return PairwiseEvaluation(results, rankings)


def _bootstrap(plan: _Plan, features: FloatArray, group_item: IntArray,
               group_cat: IntArray, n_items: int, n_cats: int, resamples: int,
               seed: int) -> FloatArray:
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, n_cats, len(plan.quantities)))
    masks = [group_cat == c for c in range(n_cats)]
    parts = [(group_item[m], features[m]) for m in masks] if n_cats > 1 else [
        (group_item, features)]
    step = max(1, _CELLS // max(n_items, 1))
    for start in range(0, resamples, step):
        k = min(step, resamples - start)
        drawn = rng.integers(0, n_items, size=(k, n_items))
        drawn += np.arange(k)[:, None] * n_items
        weights = np.bincount(drawn.ravel(), minlength=k * n_items).reshape(k, n_items)
        weights = weights.astype(float)
        totals = np.stack([weights[:, gi] @ f for gi, f in parts], axis=1)  # (k, cats, K)
        out[start:start + k] = _finish(plan, totals)[0]
    return out


def _ci(samples: FloatArray | None, ci: float) -> tuple[float | None, float | None]:
    if samples is None:
        return None, None
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None, None
    tail = (1 - ci) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return float(low), float(high)


def _results(plan: _Plan, point: FloatArray, counts: FloatArray, samples: FloatArray | None,
             cat_names: AnyArray, by: bool, ci: float, raters: list[str]
             ) -> list[PairwiseResult]:
    """Point values, CIs, ceilings and fractions for every statistic and category."""
    slots: list[tuple[str | None, FloatArray, FloatArray, FloatArray | None]] = []
    if by:
        for c, name in enumerate(cat_names):
            slots.append((str(name), point[c], counts[c],
                          None if samples is None else samples[:, c]))
        n_defined = np.isfinite(point).sum(axis=0).astype(float)
        slots.append((MACRO, _macro(point), n_defined,
                      None if samples is None else _macro(samples)))
    else:
        slots.append((None, point[0], counts[0], None if samples is None else samples[:, 0]))
    out: list[PairwiseResult] = []
    stats = plan.statistics
    for category, values, ns, draws in slots:
        def value(qs: list[int], v: FloatArray = values) -> Any:
            return v[..., qs].mean(axis=-1)

        def loo(judge: str, statistic: str, v: FloatArray = values) -> Any:
            per = [value(stats[(judge, ("loo", r), statistic)], v) for r in raters
                   if (judge, ("loo", r), statistic) in stats]
            return _nanmean(np.stack(per)) if per else None

        for (judge, key, statistic), qs in stats.items():
            if isinstance(key, tuple):
                continue
            low, high = _ci(None if draws is None else value(qs, draws), ci)
            n = int(ns[qs].max()) if category != MACRO else int(ns[qs].min())
            fraction = None
            if key is not None and len(raters) >= 2 and statistic not in HUMAN_FREE:
                base = "kappa" if statistic == "kappa" else "accuracy"
                mine, ceiling = loo(judge, statistic), loo(CEILING, base)
                if mine is not None and ceiling is not None and np.isfinite(ceiling) \
                        and ceiling != 0 and np.isfinite(mine):
                    fraction = float(mine / ceiling)
            result = Result(statistic, float(value(qs)), n=n, level="pair", ci_low=low,
                            ci_high=high, extra={"category": category})
            out.append(PairwiseResult(judge, key, statistic, category, result, fraction))
        if len(raters) >= 2:
            for statistic in ("accuracy", "kappa"):
                per = [float(value(stats[(CEILING, ("loo", r), statistic)])) for r in raters]
                draws_ceiling = None if draws is None else loo(CEILING, statistic, draws)
                low, high = _ci(draws_ceiling, ci)
                mean = float(_nanmean(np.array(per)))
                result = Result(statistic, mean, n=len(raters), level="pair", ci_low=low,
                                ci_high=high, extra={"category": category,
                                                     "per_rater": per})
                out.append(PairwiseResult(CEILING, ",".join(raters), statistic, category,
                                          result))
    return out


def pair_credit(verdicts: Verdicts, human: FloatArray, ties: str) -> FloatArray:
    """Per-pair credit of a judge: the mean over its orders (the combined verdict for a
    judge without orders); NaN where no order is scored."""
    orders = verdicts.orders()
    if not orders:
        return credit(human=human, verdict=verdicts.combined_labels(), ties=ties)
    stacked = np.stack([credit(human=human, verdict=v, ties=ties) for v in orders.values()])
    scored = np.isfinite(stacked)
    with np.errstate(invalid="ignore"):
        return np.where(scored.any(axis=0), np.nansum(stacked, axis=0) / scored.sum(axis=0),
                        np.nan)


def _rankings(judges: Mapping[str, Verdicts], codes: Mapping[str, FloatArray], ties: str,
              results: list[PairwiseResult], resamples: int, alpha: float, seed: int
              ) -> dict[str, Ranking]:
    names = list(judges)
    out = {}
    for human, labels in codes.items():
        credits = {n: pair_credit(judges[n], labels, ties) for n in names}
        values = {n: float(np.nanmean(c)) if np.isfinite(c).any() else float("nan")
                  for n, c in credits.items()}

        def test(better: str, worse: str, credits: dict[str, FloatArray] = credits) -> Any:
            test_seed = int(np.random.SeedSequence(
                [seed, names.index(better), names.index(worse)]).generate_state(1)[0])
            return paired_sign_test(credit_a=credits[better], credit_b=credits[worse],
                                    resamples=resamples, seed=test_seed)

        out[human] = assign_clusters(values, test, alpha=alpha, method="mcnemar/sign-flip")
    return out


def _with_cluster(r: PairwiseResult, rankings: Mapping[str, Ranking], by: bool
                  ) -> PairwiseResult:
    if r.statistic != "accuracy" or r.human is None or r.human not in rankings or \
            r.category != (MACRO if by else None) or r.judge == CEILING or \
            not np.isfinite(r.result.value):
        return r  # a statistic over no pairs gets no cluster
    return replace(r, cluster=rankings[r.human].cluster_of(r.judge))


def _with_failed(r: PairwiseResult, judges: Mapping[str, Verdicts],
                 categories: Sequence[Any] | AnyArray | None) -> PairwiseResult:
    """`r` with its judge's failed verdicts in its category (all pairs for the macro row)."""
    if r.judge not in judges:
        return r
    rows = None
    if categories is not None and r.category not in (None, MACRO):
        rows = np.asarray(categories, dtype=object).astype(str) == r.category
    return replace(r, failed=judges[r.judge].failed_info(r.statistic, rows))


#: Calibration of a judge whose verdicts are probabilities (soft: some value is not 0, 0.5
#: or 1), against people's preferences as labels (meta_eval.reliability).
CALIBRATION = ("brier", "ece")


def is_soft(values: FloatArray | None) -> bool:
    """Whether `values` (P(A better), NaN missing) hold a probability that is not a verdict."""
    if values is None:
        return False
    present = values[np.isfinite(values)]
    return bool(np.isin(present, (0.0, 0.5, 1.0), invert=True).any())


def calibration(*, judges: Mapping[str, Verdicts], humans: Mapping[str, FloatArray],
                items: AnyArray, bootstrap: int = 0, ci: float = 0.95, seed: int = 0
                ) -> list[PairwiseResult]:
    """Brier score and ECE (10 equal-width bins) of each soft judge's combined verdict (or
    its A-first verdict) as P(A is better), against each human column's preference as the
    label: a -> 1, b -> 0, a human tie dropped (a binary label has none), a human probability
    kept as a soft label. Item-bootstrap CIs (items drawn with replacement, seeded) with
    `bootstrap` > 0. Judges without a soft verdict get none."""
    from meta_eval.reliability import brier_score, expected_calibration_error

    out: list[PairwiseResult] = []
    item_ids, item_of = np.unique(np.asarray(items).astype(str), return_inverse=True)
    rows_of = [np.flatnonzero(item_of == k) for k in range(len(item_ids))]
    for judge, verdicts in judges.items():
        given = verdicts.combined if verdicts.combined is not None else verdicts.ab
        if not is_soft(given):
            continue
        assert given is not None
        failed = verdicts.failed_rows("brier")
        for human, h in humans.items():
            label = np.where(h == 0.5, np.nan, h)
            p = given
            if failed is not None and verdicts.failed_as != "missing":
                wrong = np.where(h > 0.5, 0.0, 1.0)
                p = np.where(failed, 0.5 if verdicts.failed_as == "tie" else wrong, given)
            kernels = {"brier": lambda lab, q: brier_score(human=lab, metric=q),
                       "ece": lambda lab, q: expected_calibration_error(human=lab, metric=q)}
            for statistic, kernel in kernels.items():
                point = kernel(label, p)
                samples = None
                if bootstrap > 0 and point.n:
                    rng = np.random.default_rng(seed)
                    samples = np.empty(bootstrap)
                    for b in range(bootstrap):
                        drawn = np.concatenate([rows_of[k] for k in
                                                rng.integers(0, len(rows_of), len(rows_of))])
                        samples[b] = kernel(label[drawn], p[drawn]).value
                low, high = _ci(samples, ci)
                result = Result(statistic, point.value, n=point.n, skipped=point.skipped,
                                level="pair", ci_low=low, ci_high=high,
                                extra={"better": "lower", **point.extra})
                out.append(PairwiseResult(judge, human, statistic, None, result,
                                          failed=verdicts.failed_info(statistic)))
    return out
