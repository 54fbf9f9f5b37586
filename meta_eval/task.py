"""One meta-evaluation setting and everything computed in it: evaluate, then cluster.

Modelled on mt-metrics-eval's `tasks.Task` / `TaskResults`: a `Task` fixes the setting
(human column, level, grouping, statistic, tie threshold, bootstrap CI, significance test,
resamples, alpha, seed, optional rater columns for the human ceiling) and `Task.run(matrices,
metrics)` returns a `TaskResult` with, per metric, the statistic (value, n, CI, p-value), its
significance cluster and its fraction of the human ceiling.

For each metric column, `run` computes `meta_eval.evaluate` (with an item bootstrap CI when
`bootstrap` > 0). A metric whose system scores are given (a corpus score: corpus BLEU, MAUVE)
is evaluated by `meta_eval.corpus.evaluate_given` at system level, with no CI and no cluster:
both resample segment scores. With `compare`, the other metrics are ranked into WMT-style
significance clusters (`meta_eval.significance_clusters`: a permutation test, Deutsch et al.
2021 PERM-BOTH, or Williams' test for Pearson). With `raters`, the leave-one-rater-out
ceiling (`meta_eval.human_ceiling`) is computed once and each metric is put on its footing.

Imports nothing from judgebench.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from meta_eval.ceiling import Ceiling, human_ceiling
from meta_eval.corpus import evaluate_given
from meta_eval.levels import evaluate
from meta_eval.results import Ranking, Result
from meta_eval.significance import significance_clusters
from meta_eval.statistics import get
from meta_eval.table import ScoreMatrices, score_matrices

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import FloatArray

Progress = Callable[[str, str], None]


class ComparisonError(ValueError):
    """The significance test could not be run on these metrics (e.g. unequal shapes)."""


@dataclass(frozen=True)
class Task:
    """One setting: `statistic` of each metric against the `human` column at `level` /
    `grouping`; `compare` adds significance clusters (test `method`, `resamples`
    permutations, level `alpha`; `every_pair` runs every pairwise test, not only those the
    cluster walk needs); `raters` (two or more columns) adds the human ceiling.
    `average`, `replace_nans_with_zeros` and `domain` are `meta_eval.evaluate`'s."""

    human: str
    statistic: str = "pearson"
    level: str = "segment"
    grouping: str = "none"
    epsilon: float = 0.0
    bootstrap: int = 0
    ci: float = 0.95
    seed: int = 0
    permutations: int = 1000
    compare: bool = False
    method: str = "permutation"
    resamples: int = 1000
    alpha: float = 0.05
    raters: tuple[str, ...] = ()
    #: with `compare`: test every pair of metrics, not only the pairs the cluster walk needs
    every_pair: bool = False
    average: str = "macro"
    replace_nans_with_zeros: bool = False
    domain: tuple[float, ...] | None = None
    #: which intervals: "bootstrap" (the item bootstrap, when `bootstrap` > 0), "analytic"
    #: (`meta_eval.analytic.correlation_interval`, in the result's `analytic_ci_*` fields) or
    #: "both"
    interval: str = "bootstrap"
    #: the williams and steiger tests' conventions (`meta_eval.analytic`): "greater"
    #: (one-sided, the default) or "two-sided", and whether they compare |r|
    alternative: str = "greater"
    absolute: bool = False

    def __post_init__(self) -> None:
        if self.interval not in INTERVALS:
            raise ValueError(f"unknown interval {self.interval!r}; use {', '.join(INTERVALS)}")

    @property
    def _averaging(self) -> dict[str, Any]:
        return {"average": self.average, "replace_nans_with_zeros": self.replace_nans_with_zeros,
                "domain": self.domain}

    def run(self, data: ScoreMatrices | pd.DataFrame | Mapping[str, FloatArray],
            metrics: Sequence[str], *, given: Mapping[str, FloatArray] | None = None,
            progress: Progress | None = None) -> TaskResult:
        """Evaluate `metrics` (columns of `data`: score matrices, a mapping of (items,
        systems) matrices, or a wide table with item and system columns) against the human
        column. `given` maps metrics to given system scores (used at system level only; the
        metric then needs no matrix). `progress(a, b)` is called before each test."""
        matrices = self._matrices(data, metrics, given)
        given = dict(given or {}) if self.level == "system" else {}
        human = matrices[self.human]
        outcomes = {name: (self._given(name, human, given[name]) if name in given
                           else self._evaluated(name, human, matrices[name]))
                    for name in metrics}
        ranking = self._cluster(human, matrices, outcomes, progress) if self.compare else None
        ceiling = self._ceiling(matrices, outcomes) if self.raters else None
        return TaskResult(self, outcomes, ranking, ceiling)

    # -- steps ------------------------------------------------------------------------------
    def _matrices(self, data: ScoreMatrices | pd.DataFrame | Mapping[str, FloatArray],
                  metrics: Sequence[str], given: Mapping[str, FloatArray] | None
                  ) -> Mapping[str, FloatArray]:
        if isinstance(data, ScoreMatrices):
            return data.columns
        if isinstance(data, Mapping):
            return data
        needed = [c for c in metrics if c not in (given or {}) or c in data.columns]
        return score_matrices(data, [*dict.fromkeys([self.human, *self.raters, *needed])]
                              ).columns

    @property
    def _system_score(self) -> str | None:
        return "mean" if self.level == "system" else None

    def _evaluated(self, name: str, human: FloatArray, matrix: FloatArray) -> MetricOutcome:
        result = evaluate(self.statistic, human=human, metric=matrix, level=self.level,
                          grouping=self.grouping, epsilon=self.epsilon,
                          bootstrap=self.bootstrap, ci=self.ci, seed=self.seed,
                          permutations=self.permutations, **self._averaging)
        if self.interval != "bootstrap":
            result = (kappa_interval(result, human=human, metric=matrix,
                                     confidence=self.ci, domain=self.domain)
                      if self.statistic in KAPPA_WEIGHTS else
                      analytic_interval(result, confidence=self.ci))
        return MetricOutcome(name, result, system_score=self._system_score)

    def _given(self, name: str, human: FloatArray, scores: FloatArray) -> MetricOutcome:
        try:
            result = evaluate_given(self.statistic, human=human, metric=scores,
                                    epsilon=self.epsilon,
                                    replace_nans_with_zeros=self.replace_nans_with_zeros)
        except ValueError as exc:
            failed = Result(self.statistic, float("nan"), n=0, level="system", grouping="none")
            return MetricOutcome(name, failed, system_score="corpus", error=str(exc))
        if self.interval != "bootstrap":
            result = analytic_interval(result, confidence=self.ci)
        return MetricOutcome(name, result, system_score="corpus")

    def _cluster(self, human: FloatArray, matrices: Mapping[str, FloatArray],
                 outcomes: dict[str, MetricOutcome], progress: Progress | None) -> Ranking:
        tested = {n: matrices[n] for n, o in outcomes.items() if not o.given}
        options: dict[str, Any] = {"alternative": self.alternative, "absolute": self.absolute}
        if self.method == "permutation":
            options = {"resamples": self.resamples, "epsilon": self.epsilon,
                       "permutations": self.permutations, **self._averaging}
        try:
            ranking = significance_clusters(
                self.statistic, human=human, metrics=tested, level=self.level,
                grouping=self.grouping, method=self.method, alpha=self.alpha, seed=self.seed,
                values={n: outcomes[n].result.value for n in tested}, progress=progress,
                every_pair=self.every_pair, **options)
        except ValueError as exc:
            raise ComparisonError(str(exc)) from None
        for ranked in ranking.metrics:
            if math.isfinite(ranked.value):  # an undefined statistic gets no cluster
                outcomes[ranked.metric].cluster = ranked.cluster
        return ranking

    def _ceiling(self, matrices: Mapping[str, FloatArray],
                 outcomes: dict[str, MetricOutcome]) -> Ceiling:
        raters = [matrices[r] for r in self.raters]
        common: dict[str, Any] = {"level": self.level, "grouping": self.grouping,
                                  "epsilon": self.epsilon, "seed": self.seed,
                                  "permutations": self.permutations, **self._averaging}
        for name, outcome in outcomes.items():
            if not outcome.given:
                outcome.ceiling_fraction = human_ceiling(
                    self.statistic, raters=raters, metric=matrices[name], **common).fraction
        return human_ceiling(self.statistic, raters=raters, **common)


def test_signature(task: Task) -> str:
    """How `task`'s significance tests were made: the test, the statistic, the sides, signed
    or |r|, the null law (and the permutation test's resamples)."""
    if task.method == "permutation":
        return (f"permutation|{task.statistic}|{task.level}|{task.grouping}|one-sided|"
                f"H1:a>b|resamples={task.resamples}|alpha={task.alpha:g}")
    sides = "one-sided|H1:a>b" if task.alternative == "greater" else "two-sided|H1:a!=b"
    law = "t(n-3)|Williams 1959" if task.method == "williams" else \
        "z=atanh(r)|N(0,1)|Steiger 1980"
    return (f"{task.method}|{task.statistic}|{task.level}|{sides}|"
            f"{'abs(r)' if task.absolute else 'signed r'}|{law}|alpha={task.alpha:g}")


def analytic_interval(result: Result, *, confidence: float) -> Result:
    """`result` with the analytic interval of its correlation (`meta_eval.analytic`) in
    `extra`: `analytic_ci_low`, `analytic_ci_high` and `analytic_ci_method` (the form, its
    standard error and the confidence), or `analytic_ci_note` saying why there is none."""
    import dataclasses

    from meta_eval.analytic import STANDARD_ERRORS, correlation_interval, interval_method

    grouped = result.level == "segment" and result.grouping != "none"
    note = None
    if result.statistic not in ANALYTIC_STATISTICS:
        note = (f"no analytic interval for {result.statistic} (one exists for "
                f"{', '.join((*ANALYTIC_STATISTICS, *KAPPA_WEIGHTS))})")
    elif grouped:
        note = "no analytic interval for an average of per-group correlations"
    if note is not None:
        return dataclasses.replace(result, extra={**result.extra, "analytic_ci_note": note})
    interval = correlation_interval(statistic=result.statistic, r=float(result.value),
                                    n=result.n, confidence=confidence)
    if interval is None:
        note = f"no analytic interval: {result.n} units are too few or the value is undefined"
        return dataclasses.replace(result, extra={**result.extra, "analytic_ci_note": note})
    method = interval_method(result.statistic)
    se = STANDARD_ERRORS[(result.statistic, method)]
    extra = {"analytic_ci_low": interval[0], "analytic_ci_high": interval[1],
             "analytic_ci_method": f"{method}|z=atanh(r)|se={se}|n={result.n}|"
                                   f"confidence={confidence:g}"}
    return dataclasses.replace(result, extra={**result.extra, **extra})


ANALYTIC_STATISTICS = ("pearson", "spearman", "kendall")
#: the kappa statistics with an asymptotic interval, and their disagreement weights
KAPPA_WEIGHTS = {"kappa": None, "kappa-linear": 1, "qwk": 2}


def kappa_interval(result: Result, *, human: FloatArray, metric: FloatArray,
                   confidence: float, domain: Sequence[float] | None = None) -> Result:
    """`result` (an ungrouped kappa, kappa-linear or qwk of (items, systems) matrices on
    the human scale) with Cohen's kappa's asymptotic interval in `extra`
    (`meta_eval.kappa_inference.cohen_kappa_inference`, Fleiss, Cohen and Everitt 1969):
    `analytic_ci_low`, `analytic_ci_high`, `analytic_se`, `analytic_p_value` (H0: kappa =
    0, two-sided) and `analytic_ci_method`; or `analytic_ci_note`. The categories are those
    of the kernel (`meta_eval.agreement.kappa_groups`: both sides rounded half up, the
    categories either side uses, or positions among the declared `domain`), weighted by
    their differences to the power 0 (unweighted), 1 or 2, so the value is the kernel's."""
    import dataclasses

    import numpy as np

    from meta_eval.agreement import _positions, categories
    from meta_eval.kappa_inference import cohen_kappa_inference
    from meta_eval.numerics import paired

    def noted(note: str) -> Result:
        return dataclasses.replace(result, extra={**result.extra, "analytic_ci_note": note})

    if result.grouping != "none":
        return noted("no analytic interval for an average of per-group kappas")
    h, m = paired(human=categories(human).ravel(), metric=categories(metric).ravel())
    if domain is not None:
        h, m = _positions(h, domain), _positions(m, domain)
    ok = np.isfinite(h)
    h, m = h[ok], m[ok]
    cats = np.unique(np.concatenate([h, m]))
    if not math.isfinite(result.value) or cats.size < 2:
        return noted("no analytic interval: the kappa is undefined")
    power = KAPPA_WEIGHTS[result.statistic]
    weights = None
    if power is not None:
        scaled = np.ldexp(cats, -int(np.frexp(np.max(np.abs(cats)))[1]))
        weights = np.abs(scaled[:, None] - scaled[None, :]) ** power
    found = cohen_kappa_inference(human=h.tolist(), metric=m.tolist(), weights=weights,
                                  labels=cats.tolist(), confidence=confidence)
    if found.ci_low is None or found.ci_high is None:
        return noted("no analytic interval: its standard error is undefined")
    kind = {None: "unweighted", 1: "linear", 2: "quadratic"}[power]
    extra = {"analytic_ci_low": found.ci_low, "analytic_ci_high": found.ci_high,
             "analytic_se": found.extra["se"], "analytic_p_value": found.p_value,
             "analytic_ci_method": f"cohen-kappa-{kind}|se=fleiss-cohen-everitt-1969|wald|"
                                   f"p:kappa=0,se0|n={found.n}|confidence={confidence:g}"}
    return dataclasses.replace(result, extra={**result.extra, **extra})
INTERVALS = ("bootstrap", "analytic", "both")


@dataclass
class MetricOutcome:
    """One metric in one task: its `result`; `system_score` is "mean" or "corpus" at system
    level (None at segment level); `error` says why a given (corpus) score has no value;
    `cluster` is its significance cluster (1 = best) when the task compares;
    `ceiling_fraction` its mean agreement over the human ceiling when the task has raters."""

    metric: str
    result: Result
    system_score: str | None = None
    error: str | None = None
    cluster: int | None = None
    ceiling_fraction: float | None = None

    @property
    def given(self) -> bool:
        """True for a metric scored by its given (corpus) system scores."""
        return self.system_score == "corpus"

    @property
    def value(self) -> float | None:
        """The statistic, or None where it is undefined (NaN or infinite)."""
        value = float(self.result.value)
        return value if math.isfinite(value) else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metric": self.metric, **self.result.to_dict()}
        optional = {"system_score": self.system_score, "note": self.error,
                    "cluster": self.cluster, "ceiling_fraction": self.ceiling_fraction}
        out.update({k: v for k, v in optional.items() if v is not None})
        return out


@dataclass(frozen=True)
class TaskResult:
    """What `Task.run` computed: `metrics` in the order asked, the significance `ranking`
    (with every test's p-value) when the task compares, the human `ceiling` when it has
    raters."""

    task: Task
    metrics: dict[str, MetricOutcome]
    ranking: Ranking | None = None
    ceiling: Ceiling | None = None

    def __getitem__(self, metric: str) -> MetricOutcome:
        return self.metrics[metric]

    def best_first(self) -> list[MetricOutcome]:
        """The metrics best first (by the statistic's direction: the lowest MAE first),
        undefined ones last (stable for ties)."""
        goodness = get(self.task.statistic).goodness
        return sorted(self.metrics.values(),
                      key=lambda o: (o.value is None, -goodness(o.value or 0.0)))

    def to_frame(self) -> pd.DataFrame:
        """One row per metric (best first) with the task's setting and what was computed."""
        import pandas as pd

        setting = {"human": self.task.human, "statistic": self.task.statistic,
                   "level": self.task.level, "grouping": self.task.grouping}
        return pd.DataFrame([{**o.to_dict(), **setting} for o in self.best_first()])


@dataclass(frozen=True)
class TaskSet:
    """Several tasks run over one set of score matrices (mt-metrics-eval's `TaskSet`):
    built from the attributes that vary (`TaskSet.product`), joined with `+`, iterated in
    order. Meta-eval and the audit each take one."""

    tasks: tuple[Task, ...] = ()

    @classmethod
    def product(cls, base: Task | None = None, **values: Sequence[Any]) -> TaskSet:
        """One task per combination of `values` (Task attribute -> the values it takes), the
        last attribute varying fastest; every other attribute is `base`'s. `level` and
        `grouping` may vary together as `view=[(level, grouping), ...]`."""
        import dataclasses
        import itertools

        if base is None:
            if "human" not in values:
                raise ValueError("TaskSet.product needs a base task or human=[...]")
            base = Task(human=str(next(iter(values["human"]), "")))
        names = list(values)
        known = {f.name for f in dataclasses.fields(Task)} | {"view"}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ValueError(f"not Task attributes: {unknown}")
        tasks = []
        for combination in itertools.product(*(values[n] for n in names)):
            changes = dict(zip(names, combination, strict=True))
            if "view" in changes:
                changes["level"], changes["grouping"] = changes.pop("view")
            tasks.append(dataclasses.replace(base, **changes))
        return cls(tuple(tasks))

    def __add__(self, other: TaskSet) -> TaskSet:
        return TaskSet(self.tasks + other.tasks)

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def distinct(self, attribute: str) -> list[Any]:
        """The values `attribute` takes over the tasks, in order of first appearance."""
        return list(dict.fromkeys(getattr(t, attribute) for t in self.tasks))

    @property
    def views(self) -> list[tuple[str, str]]:
        """The (level, grouping) pairs of the tasks, in order of first appearance."""
        return list(dict.fromkeys((t.level, t.grouping) for t in self.tasks))

    def replace(self, **changes: Any) -> TaskSet:
        """Every task with `changes` (Task attribute -> value)."""
        import dataclasses

        return TaskSet(tuple(dataclasses.replace(t, **changes) for t in self.tasks))

    def run(self, data: ScoreMatrices | pd.DataFrame | Mapping[str, FloatArray],
            metrics: Sequence[str], *, given: Mapping[str, FloatArray] | None = None,
            progress: Progress | None = None) -> list[TaskResult]:
        """`Task.run` of every task over the same `data`, in order."""
        return [task.run(data, metrics, given=given, progress=progress) for task in self.tasks]
