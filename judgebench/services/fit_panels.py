"""`fit --search panel`: panels of the `--panel-judge` members as candidates.

Every subset of two or more members (up to `--panel-max` of them), under each aggregation of
`--panel-combine` (judge.panel's mean or majority vote), is a candidate: an ordinary
`judge.panel:members=...,combine=...` spec with its own signature, scored by the engine like
any other candidate. The members are first scored alone, each once, so every panel that
holds a member reads that member's answers from the judge cache: the estimate counts each
member's calls once, and no panel adds a call of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.spec import MetricSpec, parse_spec

if TYPE_CHECKING:
    from judgebench.engine.runner import TableResult
    from judgebench.engine.runtime import RunSettings
    from judgebench.engine.store import Store
    from judgebench.models import Sample
    from judgebench.plugins import PluginHost

COMBINES = ("mean", "majority")
PANEL = "judge.panel"


@dataclass(frozen=True)
class Panels:
    """The members (each alone, column `panel-mN`) and the panel candidates by column."""

    members: tuple[MetricSpec, ...]
    #: each panel candidate's spec, by column
    specs: dict[str, MetricSpec]
    #: each panel candidate's members (1-based, as in the column) and aggregation
    made: dict[str, tuple[tuple[int, ...], str]]

    def described(self, column: str) -> str:
        held, combine = self.made[column]
        return "+".join(f"m{i}" for i in held) + f" {combine}"


def panels(texts: Sequence[str], *, max_size: int, combines: Sequence[str]) -> Panels:
    """The panel candidates of the member specs `texts` (checked before any call)."""
    if len(texts) < 2:
        raise InputError("--search panel needs two or more --panel-judge specs (a panel "
                         "is two or more judges)", field="--panel-judge")
    unknown = [c for c in combines if c not in COMBINES]
    if unknown or not combines:
        raise InputError(f"--panel-combine takes {', '.join(COMBINES)} (comma-separated); "
                         f"got {', '.join(unknown) or 'nothing'}", field="--panel-combine")
    if max_size < 2:
        raise InputError("--panel-max is 2 or more (the largest panel tried)",
                         field="--panel-max")
    members: list[MetricSpec] = []
    for n, text in enumerate(texts, start=1):
        spec = parse_spec(text.strip(), what="--panel-judge spec")
        if not spec.name.startswith("judge.") or spec.name == PANEL:
            raise InputError(f"--panel-judge {n} ({spec.name}) is not a judge metric: each "
                             "member is one judge spec (judge.rubric:..., judge.reference:...)",
                             field="--panel-judge")
        if any(m.name == spec.name and m.options == spec.options for m in members):
            raise InputError(f"--panel-judge {n} is given twice", field="--panel-judge")
        members.append(MetricSpec(spec.name, dict(spec.options), column=f"panel-m{n}"))
    specs: dict[str, MetricSpec] = {}
    made: dict[str, tuple[tuple[int, ...], str]] = {}
    for size in range(2, min(max_size, len(members)) + 1):
        for held in combinations(range(1, len(members) + 1), size):
            for combine in combines:
                column = "panel-" + "+".join(f"m{i}" for i in held) + f"-{combine}"
                specs[column] = MetricSpec(PANEL, {
                    "members": [texts[i - 1].strip() for i in held], "combine": combine},
                    column=column)
                made[column] = (held, combine)
    return Panels(tuple(members), specs, made)


def run_panels(units: Sequence[Sample], found: Panels, *, store: Store,
               run_settings: RunSettings, host: PluginHost | None) -> TableResult:
    """The panel candidates scored on `units`: each member alone first (its calls made once,
    into the judge cache), then every panel (its members' answers read from the cache)."""
    from judgebench.engine.runner import run

    run(units, list(found.members), store=store, resume=True, settings=run_settings,
        host=host)
    return run(units, list(found.specs.values()), store=store, resume=True,
               settings=run_settings, host=host)


def held_out_cost(found: Panels, column: str, on_held: dict[str, dict[str, Any]]
                  ) -> tuple[float, int]:
    """A panel's estimated cost (unknown counts 0) and calls on the held-out fold: the sum of
    its members' there (`on_held`: the engine's estimate of each member alone, by column)."""
    held, _ = found.made[column]
    parts = [on_held[found.members[i - 1].column] for i in held]
    return (sum(float(p.get("cost_usd") or 0.0) for p in parts),
            sum(int(p.get("calls") or 0) for p in parts))


def signature(found: Panels, *, max_size: int, combines: Sequence[str]) -> str:
    """The panel search's part of the fit's signature: the members (their number and the
    first 12 hex digits of the SHA-256 of their specs, one a line), the largest panel and the
    aggregations tried."""
    import hashlib

    texts = "\n".join(f"{m.name}:{sorted(m.options.items())}" for m in found.members)
    digest = hashlib.sha256(texts.encode()).hexdigest()[:12]
    return f"|panel:{len(found.members)}:{digest},max-{max_size},{'+'.join(combines)}"
