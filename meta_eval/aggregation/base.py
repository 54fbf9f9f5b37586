"""The rule interface and the result every rule returns.

A rule turns a profile (voters scoring systems) or a set of pairwise comparisons into a
ranking of the systems. Ties are kept: a ranking is a list of tiers, best first, and systems
in one tier are tied. `Rule` is the base class: a subclass
sets `name` and implements `rank(data) -> RuleResult`, and may override what the host reads
(`inputs`, `description`, `missing`, `options`, `option_names`, `with_options`,
`supports_make_win`). An object with only a `name` and `rank` is still accepted:
`as_rule` adapts it, once, where rules are collected.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from meta_eval.arrays import BoolArray, FloatArray


PROFILE = "profile"
PAIRWISE = "pairwise"


class NotApplicable(TypeError):
    """A rule was given data of a kind it cannot rank (e.g. plurality on pairwise data)."""


@dataclass(frozen=True)
class RuleResult:
    """The outcome of one rule.

    tiers: systems best first; systems in one tier are tied.
    scores: the rule's score per system (higher is better), or None when it has none.
    winners: the rule's winners; empty when it has none (e.g. a Condorcet cycle).
    exact: False when the ranking comes from an approximation (stated in `note`).
    extra: further per-system figures of the rule, each a mapping system -> value (e.g.
    win-rate's standard_error, a rating's bootstrap ci_low/ci_high), or None.
    """

    rule: str
    tiers: tuple[tuple[str, ...], ...]
    scores: Mapping[str, float] | None = None
    winners: tuple[str, ...] = ()
    exact: bool = True
    note: str = ""
    extra: Mapping[str, Mapping[str, Any]] | None = None

    @property
    def ranking(self) -> list[str]:
        return [s for tier in self.tiers for s in tier]

    @property
    def ties(self) -> list[list[str]]:
        return [list(tier) for tier in self.tiers if len(tier) > 1]

    @property
    def ranks(self) -> dict[str, int]:
        """Competition rank: 1 + the number of systems strictly ahead ("1224" ranking)."""
        out: dict[str, int] = {}
        ahead = 0
        for tier in self.tiers:
            for system in tier:
                out[system] = ahead + 1
            ahead += len(tier)
        return out

    def to_dict(self) -> dict[str, Any]:
        scores = None
        if self.scores is not None:
            scores = {s: (None if not np.isfinite(v) else float(v)) for s, v in self.scores.items()}
        out: dict[str, Any] = {
            "rule": self.rule,
            "ranking": self.ranking,
            "scores": scores,
            "winners": list(self.winners),
            "ties": self.ties,
            "exact": self.exact,
            "note": self.note,
        }
        if self.extra is not None:
            out["extra"] = {key: {s: _plain(v) for s, v in by_system.items()}
                            for key, by_system in self.extra.items()}
        return out


def _plain(value: Any) -> Any:
    """A JSON-ready number: NaN and infinities become None, numpy scalars Python ones."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else None
    return value


@runtime_checkable
class AggregationRule(Protocol):
    """What the host needs from a rule registered through `register_aggregators`."""

    name: str

    def rank(self, data: Any) -> RuleResult: ...


class Rule:
    """The rule contract the host relies on, with its defaults.

    inputs: the data kinds the rule ranks (PROFILE, PAIRWISE).
    description, missing: one line each for `--list-rules` (what it computes; how it treats
    a voter that did not score every system).
    options: the options set on this rule; `option_names()` the ones it accepts;
    `with_options(**kw)` a copy with options set (ValueError for a bad name or value).
    supports_make_win: the rule's score is linear in the voter weights, so the weights that
    make a system win are a linear programme (`meta_eval.aggregation.weights`, which knows
    the rule by `name`); it holds with the default options (`ties` aside).
    """

    name: str = ""
    description: str = ""
    missing: str = ""
    inputs: frozenset[str] = frozenset({PROFILE})
    options: Mapping[str, Any] = MappingProxyType({})
    supports_make_win: bool = False

    def rank(self, data: Any) -> RuleResult:
        raise NotImplementedError

    def check_input(self, data: Any) -> None:
        """Raise ValueError when `data` cannot be ranked with these options (a baseline that
        is not in it, a column the rule needs): called before any rule runs, so the host
        can report bad input as such."""
        return None

    def option_names(self) -> list[str]:
        return []

    def with_options(self, **options: Any) -> Rule:
        raise ValueError(f"rule '{self.name}' takes no options")


class _Adapted(Rule):
    """A rule registered as a plain object with `name` and `rank` (see `as_rule`)."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj
        self.name = str(obj.name)
        for attr in ("description", "missing"):
            value = getattr(obj, attr, None)
            if isinstance(value, str):
                setattr(self, attr, value)
        self.inputs = frozenset(getattr(obj, "inputs", None) or {PROFILE})

    def rank(self, data: Any) -> RuleResult:
        result: RuleResult = self._obj.rank(data)
        return result


def as_rule(obj: Any) -> Rule:
    """`obj` as a `Rule`: itself if it is one, else an adapter that reads its `name`, `rank`
    and any `description`, `missing` and `inputs` it declares (the defaults otherwise)."""
    return obj if isinstance(obj, Rule) else _Adapted(obj)


@dataclass(frozen=True)
class FunctionRule(Rule):
    """A rule made from a function `fn(data, **options) -> RuleResult`.

    `missing` states how the rule treats a voter that did not score every system.
    `choices` lists the allowed values of options that take one of a few.
    `with_options(**kw)` returns the rule with options set (names validated against `fn`,
    values against `choices`). `validate(data, **options)`, if given, is `check_input`.
    """

    # field(): required, not the defaults inherited from Rule
    name: str = field()
    fn: Callable[..., RuleResult] = field()
    description: str = field()
    missing: str = field()
    inputs: frozenset[str] = frozenset({PROFILE})
    options: Mapping[str, Any] = field(default_factory=dict)
    choices: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    supports_make_win: bool = False
    validate: Callable[..., None] | None = None

    def check_input(self, data: Any) -> None:
        if self.validate is not None and data_kind(data) in self.inputs:
            self.validate(data, **self.options)

    def rank(self, data: Any) -> RuleResult:
        kind = data_kind(data)
        if kind not in self.inputs:
            raise NotApplicable(
                f"rule '{self.name}' needs {' or '.join(sorted(self.inputs))} data, got {kind}"
            )
        result = self.fn(data, **self.options)
        return replace(result, rule=self.name) if result.rule != self.name else result

    def option_names(self) -> list[str]:
        params = list(inspect.signature(self.fn).parameters.values())[1:]
        return [p.name for p in params]

    def with_options(self, **options: Any) -> FunctionRule:
        known = self.option_names()
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(
                f"rule '{self.name}' has no option(s) {unknown}; options: {known or 'none'}"
            )
        for key, value in options.items():
            allowed = self.choices.get(key)
            if allowed is not None and value not in allowed:
                raise ValueError(
                    f"rule '{self.name}': {key} must be one of "
                    f"{', '.join(map(str, allowed))}; got {value!r}"
                )
        return replace(self, options={**self.options, **options})


def data_kind(data: Any) -> str:
    return getattr(data, "kind", PROFILE)


def tiers_from_scores(
    systems: Sequence[str], scores: FloatArray, *, rtol: float = 1e-9, atol: float = 0.0
) -> tuple[tuple[str, ...], ...]:
    """Tiers from scores, higher first; equal scores (within tolerance) share a tier.

    Systems with a NaN score form the last tier. Within a tier systems are sorted by name.
    """
    scores = np.asarray(scores, dtype=float)
    finite: list[int] = np.flatnonzero(~np.isnan(scores)).tolist()
    order = sorted(finite, key=lambda i: (-scores[i], systems[i]))
    tiers: list[list[str]] = []
    last = None
    for i in order:
        value = scores[i]
        scale = max(1.0, abs(value), abs(last) if last is not None else 0.0)
        if last is not None and abs(last - value) <= atol + rtol * scale:
            tiers[-1].append(systems[i])
        else:
            tiers.append([systems[i]])
            last = value
    unscored = [systems[i] for i in np.flatnonzero(np.isnan(scores)).tolist()]
    if unscored:
        tiers.append(unscored)
    return tuple(tuple(sorted(t)) for t in tiers)


def scored_result(
    rule: str,
    systems: Sequence[str],
    scores: FloatArray,
    *,
    note: str = "",
    exact: bool = True,
    rtol: float = 1e-9,
    atol: float = 0.0,
) -> RuleResult:
    """A result whose ranking follows a score per system; the top tier wins."""
    scores = np.asarray(scores, dtype=float)
    tiers = tiers_from_scores(systems, scores, rtol=rtol, atol=atol)
    unscored = [s for s, v in zip(systems, scores, strict=True) if np.isnan(v)]
    if unscored:
        extra = f"no score for {unscored}: ranked last"
        note = f"{note}; {extra}" if note else extra
    winners = tiers[0] if tiers and not np.isnan(scores).all() else ()
    return RuleResult(
        rule=rule,
        tiers=tiers,
        scores=dict(zip(systems, scores.tolist(), strict=True)),
        winners=tuple(winners),
        exact=exact,
        note=note,
    )


def layered_result(
    rule: str,
    systems: Sequence[str],
    beats: BoolArray,
    *,
    scores: FloatArray | None = None,
    note: str = "",
) -> RuleResult:
    """A result from a transitive 'beats' relation: tier 1 is every system nobody beats,
    then remove it and repeat. Winners are the first tier."""
    remaining = list(range(len(systems)))
    tiers: list[tuple[str, ...]] = []
    while remaining:
        sub = beats[np.ix_(remaining, remaining)]
        top = [remaining[k] for k in np.flatnonzero(~sub.any(axis=0))]
        if not top:  # a cycle: cannot happen for a transitive relation, but never loop
            top = list(remaining)
        tiers.append(tuple(sorted(systems[i] for i in top)))
        remaining = [i for i in remaining if i not in top]
    return RuleResult(
        rule=rule,
        tiers=tuple(tiers),
        scores=None if scores is None else dict(zip(systems, np.asarray(scores).tolist(),
                                                    strict=True)),
        winners=tiers[0] if tiers else (),
        note=note,
    )


def names(items: Iterable[Any]) -> tuple[str, ...]:
    return tuple(str(x) for x in items)
