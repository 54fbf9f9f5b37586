"""`meta-eval --construct METRIC=HUMAN`: the multitrait-multimethod analysis
(`meta_eval.construct`): does each metric agree with its own criterion significantly more than
with the others, and which judges measure overall quality whatever they were asked?"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.construct import ConstructResult

Log = Callable[[str], None]


@dataclass(frozen=True)
class ConstructReport(Result):
    statistic: str
    level: str
    grouping: str
    method: str
    alpha: float
    rows: list[ConstructResult]

    def to_dict(self) -> list[dict[str, Any]]:
        return [{**r.to_dict(), "statistic": self.statistic, "level": self.level,
                 "grouping": self.grouping, "test": self.method, "alpha": self.alpha}
                for r in self.rows]


def parse_pairs(pairs: Sequence[str]) -> dict[str, str]:
    """["judge.coh=human.coherence", ...] -> {metric: criterion}; InputError otherwise. The
    last `=` splits: a metric column may hold options (`lexical.rouge2:multi_ref=mean`)."""
    out = {}
    for text in pairs:
        metric, sep, human = text.rpartition("=")
        if not sep or not metric or not human:
            raise InputError(f"{text!r}: use METRIC=HUMAN", field="--construct")
        out[metric] = human
    return out


def construct(scores: str | Path | pd.DataFrame, *, intended: dict[str, str],
              humans: Sequence[str] = (), statistic: str = "pearson", level: str = "segment",
              grouping: str = "none", method: str = "permutation", alpha: float = 0.05,
              resamples: int = 1000, seed: int = 0, lower: Sequence[str] = (),
              higher: Sequence[str] = (), exclude_systems: Sequence[str] = (),
              log: Log | None = None) -> ConstructReport:
    """The MTMM analysis of the metrics in `intended` ({metric: its criterion}) against the
    criteria (`humans`, default the criteria named in `intended`)."""
    from judgebench.tables.prepared import PreparedTable
    from meta_eval.construct import SYMMETRIC, construct_validity

    log = log or (lambda _message: None)
    if statistic not in SYMMETRIC:
        raise InputError(f"--construct takes one of {', '.join(SYMMETRIC)}",
                         field="--statistic")
    criteria = list(dict.fromkeys([*humans, *intended.values()]))
    if len(criteria) < 2:
        raise InputError("construct validity needs two or more criteria (--human)",
                         field="--construct")
    if method == "williams" and (statistic != "pearson" or grouping != "none"):
        raise InputError("Williams' test takes pearson without grouping", field="--test")
    cols = PreparedTable.read(scores, criteria, list(intended), lower=lower, higher=higher,
                              exclude_systems=exclude_systems, log=log)
    matrices = cols.matrices([*criteria, *cols.metrics])
    log(f"construct validity: {len(intended)} metric(s) x {len(criteria)} criteria, "
        f"{statistic}, {method}")
    rows = construct_validity(criteria={c: matrices[c] for c in criteria},
                              metrics={m: matrices[m] for m in intended}, intended=intended,
                              statistic=statistic, level=level, grouping=grouping,
                              method=method, alpha=alpha, resamples=resamples, seed=seed)
    return ConstructReport(statistic, level, grouping, method, alpha, rows)
