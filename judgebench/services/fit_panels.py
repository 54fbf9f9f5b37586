"""`fit --search panel`: panels of the `--panel-judge` members as candidates.

Every subset of two or more members (up to `--panel-max` of them; or the user's `--panels`),
under each aggregation of `--panel-combine` (judge.panel's mean or majority vote), is a
candidate: an ordinary
`judge.panel:members=...,combine=...` spec with its own signature, scored by the engine like
any other candidate. The members are first scored alone, each once, so every panel that
holds a member reads that member's answers from the judge cache: the estimate counts each
member's calls once, and no panel adds a call of its own.
"""

from __future__ import annotations

import re
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

    @property
    def asked(self) -> list[MetricSpec]:
        """The members some panel holds (each scored alone once)."""
        used = {i for held, _ in self.made.values() for i in held}
        return [m for n, m in enumerate(self.members, start=1) if n in used]

    def described(self, column: str) -> str:
        held, combine = self.made[column]
        return "+".join(f"m{i}" for i in held) + f" {combine}"


def panels(texts: Sequence[str], *, max_size: int, combines: Sequence[str],
           chosen: Sequence[str] = ()) -> Panels:
    """The panel candidates of the member specs `texts` (checked before any call): every
    subset of 2 to `max_size` members, or the user's panels `chosen` ("m1+m3", ...)."""
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
    groups = (_chosen(chosen, len(members)) if chosen else
              [held for size in range(2, min(max_size, len(members)) + 1)
               for held in combinations(range(1, len(members) + 1), size)])
    for held in groups:
        for combine in combines:
            column = "panel-" + "+".join(f"m{i}" for i in held) + f"-{combine}"
            specs[column] = MetricSpec(PANEL, {
                "members": [texts[i - 1].strip() for i in held], "combine": combine},
                column=column)
            made[column] = (held, combine)
    return Panels(tuple(members), specs, made)


def _chosen(chosen: Sequence[str], members: int) -> list[tuple[int, ...]]:
    """The user's panels (`m1+m3`: the first and third --panel-judge), each checked."""
    found: list[tuple[int, ...]] = []
    for text in chosen:
        parts = text.strip().split("+")
        if not all(re.fullmatch(r"m[1-9]\d*", p) for p in parts):
            raise InputError(f"--panels takes panels of members by number, m1+m3,m2+m3+m4 "
                             f"(m1: the first --panel-judge); got {text!r}", field="--panels")
        held = tuple(sorted({int(p[1:]) for p in parts}))
        if len(held) < 2 or held[-1] > members:
            raise InputError(f"--panels: {text!r} is not two or more of the {members} "
                             "--panel-judge members (m1 to m" + f"{members})",
                             field="--panels")
        if held in found:
            raise InputError(f"--panels: {text!r} is given twice", field="--panels")
        found.append(held)
    return found


def run_panels(units: Sequence[Sample], found: Panels, *, store: Store,
               run_settings: RunSettings, host: PluginHost | None) -> TableResult:
    """The panel candidates scored on `units`: each member alone first (its calls made once,
    into the judge cache), then every panel (its members' answers read from the cache)."""
    from judgebench.engine.runner import run

    run(units, found.asked, store=store, resume=True, settings=run_settings,
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


def signature(found: Panels, *, max_size: int, combines: Sequence[str],
              chosen: Sequence[str] = ()) -> str:
    """The panel search's part of the fit's signature: the members (their number and the
    first 12 hex digits of the SHA-256 of their specs, one a line), the largest panel and the
    aggregations tried."""
    import hashlib

    texts = "\n".join(f"{m.name}:{sorted(m.options.items())}" for m in found.members)
    digest = hashlib.sha256(texts.encode()).hexdigest()[:12]
    tried = f"panels-{len(found.made) // len(combines)}" if chosen else f"max-{max_size}"
    return f"|panel:{len(found.members)}:{digest},{tried},{'+'.join(combines)}"
