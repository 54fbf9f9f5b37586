"""The items service: item response theory on a scores table, as `judgebench items` runs it.

`items(scores, metric=COL, threshold=T)` turns one metric column into an (items, systems)
matrix of binary outcomes (1 where the metric reaches T, or with `human=COL` where the metric
orders a system as people do; `meta_eval.irt`), fits a Rasch and a 2PL model by MML-EM,
estimates each system's ability with a standard error, flags items whose 2PL discrimination
is negative or near zero, and optionally recommends a subset of items that keeps the ranking
and says how many items would separate the top-k systems. Systems are the respondents, items
the items. The statistics are in `meta_eval.irt`; this module reads, checks and packages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result
from meta_eval.numerics import finite_or_none

if TYPE_CHECKING:

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray, IntArray
    from meta_eval.irt import Abilities, ItemFit, Power, Selection

Log = Callable[[str], None]
ESTIMATION = ("marginal maximum likelihood, EM with Gauss-Hermite quadrature (Bock & Aitkin "
              "1981), abilities N(0, 1) over 41 nodes; Bayes modal item priors "
              "slope ~ N(1, 2^2), intercept ~ N(0, 4^2); abilities by ML given the items, "
              "SE = 1/sqrt(test information)")




@dataclass
class ItemsResult(Result):
    """Everything `judgebench items` reports; `to_dict()` is the `--json` array."""

    scores: str
    metric: str
    outcome: str
    model: str
    higher_is_better: bool
    items: list[str]
    systems: list[str]
    fit: ItemFit
    two_pl: ItemFit
    abilities: Abilities
    raw: FloatArray  # per system: outcomes of 1 on informative items
    answered: IntArray  # per system: informative items answered
    share: FloatArray  # per item: share of ones among the systems that answered
    answers: IntArray  # per item: systems that answered
    ci: float
    subset: Selection | None = None
    power: Power | None = None
    rasch_loglik: float = math.nan
    notes: list[str] = field(default_factory=list)

    def ranking(self) -> list[str]:
        return [self.systems[j] for j in self.abilities.order()]

    def flags(self) -> dict[int, str]:
        """Item index -> why it is flagged (the 2PL slope, or no information)."""
        from meta_eval.irt import FLAG_DISCRIMINATION

        out = {}
        for i, a in enumerate(self.two_pl.discrimination):
            if not self.two_pl.informative[i]:
                out[i] = ("every system alike" if self.answers[i] >= 2
                          else "answered by fewer than 2 systems")
            elif a < 0:
                out[i] = (f"negative discrimination {a:.3g}: the better systems fail it more "
                          "often (mislabelled or broken item?)")
            elif a < FLAG_DISCRIMINATION:
                out[i] = (f"near-zero discrimination {a:.3g}: it does not separate "
                          "the systems")
        return out

    def system_rows(self) -> list[dict[str, Any]]:
        low, high = self.abilities.interval(self.ci)
        rows = []
        for rank, j in enumerate(self.abilities.order(), start=1):
            extreme = int(self.abilities.extreme[j])
            rows.append({
                "type": "system", "system": self.systems[j], "rank": rank,
                "ability": finite_or_none(self.abilities.ability[j]),
                "se": finite_or_none(self.abilities.se[j]),
                "ci_low": finite_or_none(low[j]), "ci_high": finite_or_none(high[j]),
                "ci": self.ci,
                "raw_score": int(self.raw[j]), "answered": int(self.answered[j]),
                "extreme": {1: "all right", -1: "all wrong"}.get(extreme)})
        return rows

    def item_rows(self) -> list[dict[str, Any]]:
        flags = self.flags()
        return [{"type": "item", "item": name,
                 "difficulty": finite_or_none(self.fit.difficulty[i]),
                 "discrimination": finite_or_none(self.fit.discrimination[i]),
                 "discrimination_2pl": finite_or_none(self.two_pl.discrimination[i]),
                 "share": finite_or_none(self.share[i]), "answered": int(self.answers[i]),
                 "informative": bool(self.fit.informative[i]), "flag": flags.get(i)}
                for i, name in enumerate(self.items)]

    def summary(self) -> dict[str, Any]:
        return {"type": "fit", "scores": self.scores, "metric": self.metric,
                "outcome": self.outcome, "model": self.model,
                "higher_is_better": self.higher_is_better, "estimation": ESTIMATION,
                "items": len(self.items), "informative_items": int(self.fit.informative.sum()),
                "systems": len(self.systems), "converged": self.fit.converged,
                "iterations": self.fit.iterations, "loglik": self.fit.loglik,
                "loglik_rasch_2pl": [self.rasch_loglik, self.two_pl.loglik],
                "scale": self.fit.scale if self.model == "rasch" else None,
                "ranking": self.ranking(), "flagged": len(self.flags()),
                "notes": self.notes}

    def subset_row(self) -> dict[str, Any] | None:
        if self.subset is None:
            return None
        return {"type": "subset", "size": int(self.subset.items.size),
                "items": [self.items[i] for i in self.subset.items],
                "method": "greedy D-optimal: Fisher information at the systems' abilities, "
                          "flagged items left out",
                "kendall_tau": finite_or_none(self.subset.tau),
                "random_kendall_tau": finite_or_none(self.subset.random_tau),
                "random_kendall_tau_sd": finite_or_none(self.subset.random_tau_sd),
                "random_draws": self.subset.draws}

    def power_row(self) -> dict[str, Any] | None:
        if self.power is None:
            return None
        out = {"type": "power", "method": "fitted model (Wald test on ML abilities; SE "
               "scaled as 1/sqrt(items) at the mean item information)",
               **self.power.to_dict()}
        out["pairs"] = [{**p, "better": self.systems[p["better"]],
                         "worse": self.systems[p["worse"]]} for p in out["pairs"]]
        return out

    def to_dict(self) -> list[dict[str, Any]]:
        rows = [self.summary(), *self.system_rows(), *self.item_rows()]
        rows += [r for r in (self.subset_row(), self.power_row()) if r is not None]
        return rows


def items(scores: str | Path, *, metric: str, threshold: float | None = None,
          human: str | None = None, model: str = "2pl", subset: int | None = None,
          power: bool = False, top_k: int = 3, alpha: float = 0.05,
          target_power: float = 0.8, ci: float = 0.95, seed: int = 0,
          lower: Sequence[str] = (), higher: Sequence[str] = (),
          log: Log | None = None, host: PluginHost | None = None) -> ItemsResult:
    """Fit item response models to one metric column of the scores table `scores` (see the
    module). Bad input raises InputError naming the file and field before any fitting."""
    import numpy as np

    from judgebench.tables.prepared import PreparedTable
    from meta_eval import irt

    log = log or (lambda _message: None)
    if (threshold is None) == (human is None):
        raise InputError("give exactly one of --threshold T (outcome: the metric reaches T) "
                         "or --human COL (outcome: the metric agrees with people)",
                         field="--threshold")
    if model not in irt.MODELS:
        raise InputError(f"unknown model {model!r}; use one of {irt.MODELS}", field="--model")
    if threshold is not None and not math.isfinite(threshold):
        raise InputError("must be a finite number", field="--threshold")
    if subset is not None and subset < 1:
        raise InputError("must be at least 1", field="--subset")
    if top_k < 1:
        raise InputError("must be at least 1", field="--top-k")
    path = Path(scores)
    where = str(path)
    if human is not None and human == metric:
        raise InputError("the metric and the human column are the same column",
                         path=where, field="--human")
    table = PreparedTable.read(path, [human] if human else [], [metric], lower=lower,
                               higher=higher, host=host, log=log)
    info = table.infos[metric]
    mats = table.matrices([metric, *([human] if human else [])])
    values = mats[metric]
    if human is not None:
        responses = irt.agreement_responses(human=mats[human], metric=values)
        outcome = (f"1 where {metric} orders the system against the item's other systems as "
                   f"{human} does in at least half of its pairs")
    else:
        assert threshold is not None
        cut = threshold if info.higher_is_better else -threshold
        responses = irt.binary_responses(metric=values, threshold=cut)
        outcome = (f"1 where {metric} {'>=' if info.higher_is_better else '<='} {threshold:g}")
    informative = irt.informative_items(responses=responses)
    if not informative.any():
        raise InputError("no item separates the systems: on every item all systems have the "
                         "same outcome (a constant column, or a threshold outside the "
                         "metric's range)", path=where, field=metric)
    if len(mats.systems) < 2:
        raise InputError("item response models need at least 2 systems", path=where,
                         field="system")
    log(f"{len(mats.items)} items x {len(mats.systems)} systems; {int(informative.sum())} "
        f"informative items; outcome: {outcome}")
    fits = {name: irt.fit_items(responses=responses, model=name) for name in irt.MODELS}
    fit = fits[model]
    for name, f in fits.items():
        log(f"{name}: {f.iterations} EM cycles, converged {f.converged}, "
            f"log-likelihood {f.loglik:.2f}")
    abilities = irt.estimate_abilities(responses=responses, discrimination=fit.discrimination,
                                       difficulty=fit.difficulty)
    used = np.isfinite(responses) & informative[:, None]
    seen = np.isfinite(responses)
    result = ItemsResult(
        scores=where, metric=metric, outcome=outcome, model=model,
        higher_is_better=info.higher_is_better, items=list(mats.items),
        systems=list(mats.systems), fit=fit, two_pl=fits["2pl"], abilities=abilities,
        raw=np.where(used, responses, 0).sum(axis=0), answered=used.sum(axis=0),
        share=np.where(seen.any(axis=1), np.nansum(responses, axis=1)
                       / np.maximum(seen.sum(axis=1), 1), np.nan),
        answers=seen.sum(axis=1), ci=ci, rasch_loglik=fits["rasch"].loglik)
    result.notes += _notes(result, fits)
    if subset is not None:
        flagged = np.zeros(len(mats.items), dtype=bool)
        flagged[list(result.flags())] = True
        if flagged.all():
            raise InputError("every item is flagged: no subset to recommend", path=where,
                             field="--subset")
        result.subset = irt.select_items(responses=responses, fit=fit, abilities=abilities,
                                         size=subset, seed=seed, exclude=flagged)
    if power:
        result.power = irt.top_k_power(fit=fit, abilities=abilities, top_k=top_k, alpha=alpha,
                                       power=target_power)
    return result


def _notes(result: ItemsResult, fits: dict[str, ItemFit]) -> list[str]:
    notes = []
    for name, f in fits.items():
        if not f.converged:
            notes.append(f"the {name} fit stopped after {f.iterations} EM cycles without "
                         "converging")
    extreme = [result.systems[j] for j in range(len(result.systems))
               if result.abilities.extreme[j] != 0]
    if extreme:
        notes.append(f"{', '.join(extreme)}: every outcome alike on the informative items, so "
                     "the ability has no finite ML estimate; ranked first (all right) or last "
                     "(all wrong), with no ability or interval")
    dropped = int((~result.fit.informative).sum())
    if dropped:
        notes.append(f"{dropped} item(s) with the same outcome for every system left out of "
                     "the fit (no information about the ranking)")
    return notes
