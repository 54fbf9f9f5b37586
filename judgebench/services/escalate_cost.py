"""What a cascade of judges costs per item, against running the strongest judge on every item
(`judgebench escalate --store DB` / `--cost JUDGE=USD`).

The strongest judge is the last of the cascade: the one the others escalate to. Each judge
runs on the items that reach it (no earlier judge kept them), so with N items, n_j of them
reaching judge j and p_j its price per item,

    cascade per item   = sum_j n_j p_j / N,
    strongest per item = p_last (it runs on all N),
    saving             = 1 - cascade / strongest   (None when the strongest costs nothing).

A judge's price per item is, in order: `--cost JUDGE=USD` where given; else the store's
recorded cost of the judge's column (the signature its sidecar names), the sum of
`cost_usd` over the stored scores of the table's rows divided by the number of rows that have
any (every draw of a repeated judge counts); a column whose stored scores lack a cost (a
local judge, an unpriced model) has none. Without a price for every judge there is no total,
and the result says which judges lack one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebench.errors import InputError


@dataclass(frozen=True)
class JudgeCost:
    """One judge of the cascade: the items that reach it, its price per item (None: unknown)
    and where the price came from ("--cost", "store")."""

    judge: str
    runs_on: int
    per_item: float | None
    source: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "runs_on": self.runs_on, "per_item_usd": self.per_item,
                "source": self.source}


@dataclass(frozen=True)
class CascadeCost:
    """The cascade's cost per item against the strongest judge's on every item (module
    docstring); the totals are None where a judge's price is unknown (`missing`)."""

    judges: list[JudgeCost]
    items: int
    strongest: str

    @property
    def missing(self) -> list[str]:
        return [j.judge for j in self.judges if j.per_item is None]

    @property
    def per_item(self) -> float | None:
        if self.missing:
            return None
        return math.fsum(j.runs_on * (j.per_item or 0.0) for j in self.judges) / self.items

    @property
    def strongest_per_item(self) -> float | None:
        return self.judges[-1].per_item

    @property
    def saving(self) -> float | None:
        cascade, strongest = self.per_item, self.strongest_per_item
        if cascade is None or strongest is None or strongest == 0:
            return None
        return 1.0 - cascade / strongest

    def to_dict(self) -> dict[str, Any]:
        return {"judges": [j.to_dict() for j in self.judges], "items": self.items,
                "cascade_per_item_usd": self.per_item, "strongest": self.strongest,
                "strongest_per_item_usd": self.strongest_per_item, "saving": self.saving,
                "missing": self.missing}


def parse_costs(values: Sequence[str], judges: Sequence[str]) -> dict[str, float]:
    """`--cost JUDGE=USD[,JUDGE=USD...]` (repeatable): each judge's price per item in USD, a
    finite number >= 0, for a judge of the cascade. The price follows the last `=`, and a
    value whose part before it is a judge is one pair even if it holds commas (a judge's
    column named by its spec: `judge.rubric:model=m,temperature=0=0.002`)."""
    prices: dict[str, float] = {}
    for value in values:
        whole = value.rpartition("=")[0].strip() in judges
        for part in [value] if whole else value.split(","):
            judge, sep, text = (s.strip() for s in part.rpartition("="))
            try:
                price = float(text) if sep and judge else math.nan
            except ValueError:
                price = math.nan
            if not (math.isfinite(price) and price >= 0):
                raise InputError(f"{part!r} is not JUDGE=USD (a judge's price per item, a "
                                 "number >= 0)", field="--cost")
            if judge not in judges:
                raise InputError(f"{judge!r} is not a judge of the cascade ({', '.join(judges)})",
                                 field="--cost")
            if judge in prices:
                raise InputError(f"{judge!r} is priced twice", field="--cost")
            prices[judge] = price
    return prices


def stored_prices(store: str | Path, sidecar: Mapping[str, Any] | None,
                  columns: Sequence[str], keys: Sequence[tuple[str, str]]
                  ) -> dict[str, float]:
    """Per column whose sidecar names a signature with stored scores of the table's rows
    (`keys`: (item, system as the store names it)), all of them priced: its cost per row."""
    from judgebench.engine.store import Store

    wanted = set(keys)
    out = {}
    with Store(store, readonly=True) as db:
        for column in dict.fromkeys(columns):
            entry = ((sidecar or {}).get("columns") or {}).get(column)
            if not (isinstance(entry, dict) and entry.get("signature")):
                continue
            mine = [s for s in db.scores(str(entry["signature"]))
                    if (s.item, s.system) in wanted]
            if mine and all(s.cost_usd is not None for s in mine):
                rows = {(s.item, s.system) for s in mine}
                out[column] = math.fsum(float(s.cost_usd or 0.0) for s in mine) / len(rows)
    return out


def cascade_cost(judges: Sequence[str], runs_on: Sequence[int], items: int, *,
                 given: Mapping[str, float], stored: Mapping[str, float]) -> CascadeCost:
    """The cascade's cost from each judge's price (`given` first, then `stored`)."""
    found = []
    for judge, count in zip(judges, runs_on, strict=True):
        if judge in given:
            found.append(JudgeCost(judge, count, given[judge], "--cost"))
        elif judge in stored:
            found.append(JudgeCost(judge, count, stored[judge], "store"))
        else:
            found.append(JudgeCost(judge, count, None, None))
    return CascadeCost(found, items, judges[-1])
