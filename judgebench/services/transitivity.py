"""`meta-eval --pairwise --transitivity`: cyclic majority preferences and Bradley-Terry
misfit of each pairwise judge and each human column (`meta_eval.transitivity`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.transitivity import Transitivity

Log = Callable[[str], None]


@dataclass(frozen=True)
class TransitivityReport(Result):
    rows: list[tuple[str, str, Transitivity]]  # (name, "judge" or "human", result)
    ci: float

    def to_dict(self) -> list[dict[str, Any]]:
        return [{"judge": name, "kind": kind, **t.to_dict(), "ci": self.ci}
                for name, kind, t in self.rows]


def transitivity(pairs: str | Path | pd.DataFrame, *, humans: Sequence[str] = (),
                 judges: Sequence[str] = (), bootstrap: int = 1000, ci: float = 0.95,
                 seed: int = 0, log: Log | None = None) -> TransitivityReport:
    """Each judge's (and human column's) cyclic triples and BT misfit test."""
    from judgebench.services.pairwise import default_judges, judge_verdicts, labels
    from judgebench.tables.pairs import PreparedPairs
    from meta_eval.transitivity import transitivity as kernel

    log = log or (lambda _message: None)
    prepared = PreparedPairs.read(pairs, list(humans))
    where, frame, failed = prepared.where, prepared.frame, prepared.failed
    names = list(dict.fromkeys(judges)) or default_judges(frame, list(humans), log)
    if not names and not humans:
        raise InputError("no judge columns: name them with --judge", path=where)
    keys = {k: frame[k].to_numpy().astype(str) for k in ("item", "system_a", "system_b")}
    rows = []
    for name in names:
        v = judge_verdicts(frame, name, where, failed)
        if v.combined is not None:
            p = v.combined
        else:
            orders = [x for x in (v.ab, v.ba) if x is not None]
            with np.errstate(invalid="ignore"):
                p = np.nanmean(np.stack(orders), axis=0) if len(orders) > 1 else orders[0]
        rows.append((name, "judge", p))
    rows += [(h, "human", labels(frame, h, where)) for h in dict.fromkeys(humans)]
    log(f"transitivity: {len(frame)} pairs, {len(rows)} verdict column(s)")
    return TransitivityReport([(name, kind, kernel(items=keys["item"],
                                                   system_a=keys["system_a"],
                                                   system_b=keys["system_b"], preference=p,
                                                   bootstrap=bootstrap, ci=ci, seed=seed))
                               for name, kind, p in rows], ci)
