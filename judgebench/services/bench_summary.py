"""The one-screen summary `bench` prints before the cards when it runs several suites, as
alpaca_eval's leaderboard does: rows are the user's metrics, columns the suites, each cell
the metric's value on the suite's headline (its first protocol's first statistic, over
every pair or row), with the n it rests on and the best published baseline beside it.

Like with like: on a part of a suite (`--limit`), the best published baseline is one whose
stored outputs were recomputed on the same rows, else none (a number printed for the full
set is not comparable); on the full suite, the best printed number.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgebench.services.bench import Card, CardRow

ALL = "(all)"


@dataclass(frozen=True)
class SummaryCell:
    """One metric (or the suite's best published baseline: `kind` "published") on one
    suite's headline; `status` "ok", "skipped" (the metric does not fit the suite) or
    "no value" (the statistic is undefined on the rows scored)."""

    metric: str
    kind: str  # "yours", "published"
    suite: str
    protocol: str | None
    statistic: str | None
    status: str
    value: float | None = None
    ci: tuple[float, float] | None = None
    n: int | None = None
    cluster: int | None = None
    #: a published cell: the number as printed, whether it was measured on these rows
    printed: float | None = None
    comparable: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metric": self.metric, "kind": self.kind, "suite": self.suite,
                               "protocol": self.protocol, "statistic": self.statistic,
                               "status": self.status, "value": self.value}
        if self.ci is not None:
            out["ci_low"], out["ci_high"] = self.ci
        for name in ("n", "cluster", "printed", "comparable"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


def summarise(cards: Sequence[Card], specs: Sequence[str]) -> list[SummaryCell]:
    """Per suite (in the cards' order): a cell per spec, then the best published baseline's
    cell where the suite has one comparable with the rows scored (module docstring)."""
    out: list[SummaryCell] = []
    for card in cards:
        info = card.suite
        head = info.protocols[0]
        statistic = head.statistics[0]
        name = info.name
        if card.skipped:
            out += [SummaryCell(spec, "yours", name, head.name, statistic, "skipped")
                    for spec in specs]
            continue
        subset = ALL if any(r.subset == ALL for r in card.rows) else None
        on_head = [r for r in card.rows if r.protocol == head.name
                   and r.statistic == statistic and r.subset == subset]
        for spec in specs:
            row = next((r for r in on_head if r.kind == "yours" and r.label == spec), None)
            if row is None:
                out.append(SummaryCell(spec, "yours", name, head.name, statistic, "skipped"))
                continue
            out.append(_cell(row, name, "ok" if row.value is not None else "no value"))
        best = _best_published([r for r in on_head if r.kind == "published"], card.full)
        if best is not None:
            out.append(_cell(best, name, "ok"))
    return out


def _cell(row: CardRow, suite: str, status: str) -> SummaryCell:
    return SummaryCell(row.label, row.kind, suite, row.protocol, row.statistic, status,
                       value=row.value, ci=row.ci, n=row.n, cluster=row.cluster,
                       printed=row.printed, comparable=row.comparable)


def _best_published(rows: list[CardRow], full: bool) -> CardRow | None:
    """The best printed number on the full suite; on a part, the best baseline recomputed
    on the same rows (None where there is none)."""
    if full:
        printed = [r for r in rows if r.printed is not None]
        if printed:
            return max(printed, key=lambda r: r.printed if r.printed is not None else 0.0)
    same = [r for r in rows if r.value is not None]
    return max(same, key=lambda r: r.value if r.value is not None else 0.0) if same else None


__all__ = ["SummaryCell", "summarise"]
