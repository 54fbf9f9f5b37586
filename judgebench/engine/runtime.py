"""Settings of the run in progress, visible to metrics and backends without threading them
through every call: the spending limit, dry-run mode and where caches live."""

from __future__ import annotations

import contextlib
import contextvars
import math
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from judgebench.errors import InputError, JudgebenchError


class BudgetExceeded(JudgebenchError):
    """Raised before a call that would spend past `--budget-usd`; finished work is kept."""


def check_budget_usd(value: float | None) -> float | None:
    """A spending limit must be a finite amount >= 0 (NaN would disable every check)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise InputError(f"--budget-usd must be a finite amount of US dollars >= 0, got {value}")
    return value


@runtime_checkable
class Priced(Protocol):
    """A metric that can say which of its paid models have no known price (judges)."""

    def unpriced_models(self) -> list[str]: ...


@dataclass
class Budget:
    """Money spent by this run, checked before each call. Thread-safe.

    A limit and a call of unknown price do not mix: the run refuses to start
    (`preflight`) and a backend refuses the call (`check`), unless `allow_unknown_cost`.
    """

    limit_usd: float | None = None
    allow_unknown_cost: bool = False
    spent_usd: float = 0.0
    unknown_cost_calls: int = 0
    #: The estimates of the calls in flight (`reserve`d, not yet `release`d).
    reserved_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _reserve_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        check_budget_usd(self.limit_usd)

    def preflight(self, metrics: Iterable[tuple[str, object]]) -> None:
        """Before any call: refuse a limit over judges whose price is unknown (InputError,
        naming each column), or warn on stderr under `allow_unknown_cost`."""
        if self.limit_usd is None:
            return
        unpriced = [
            (column, models) for column, metric in metrics
            if isinstance(metric, Priced) and (models := metric.unpriced_models())
        ]
        if not unpriced:
            return
        listed = "; ".join(f"column '{column}' calls {', '.join(models)}"
                           for column, models in unpriced)
        if not self.allow_unknown_cost:
            raise InputError(
                f"--budget-usd cannot count calls whose price is unknown ({listed}): give the "
                "judge its price with price_in=...,price_out=... (USD per million tokens), or "
                "pass --allow-unknown-cost to run with those calls left out of the budget"
            )
        print(f"warning: --allow-unknown-cost: {listed} at an unknown price; those calls are "
              f"not counted against --budget-usd {self.limit_usd:g}", file=sys.stderr)

    def check(self, next_cost_usd: float | None = 0.0, *, model: str = "") -> None:
        """Raise BudgetExceeded if a call estimated at `next_cost_usd` (None: unknown price)
        could spend past the limit."""
        with self._lock:
            if self.limit_usd is None:
                return
            if next_cost_usd is None:
                if not self.allow_unknown_cost:
                    raise BudgetExceeded(
                        f"the price of {model or 'this model'} is unknown, so --budget-usd "
                        "cannot count its calls; give price_in/price_out (USD per million "
                        "tokens) or --allow-unknown-cost"
                    )
                next_cost_usd = 0.0
            if self.spent_usd + next_cost_usd > self.limit_usd:
                # What was spent is said when the run ends (`stopped`): calls still in flight
                # settle after this refusal.
                raise BudgetExceeded(f"budget of ${self.limit_usd:.4f} reached")

    def reserve(self, estimate_usd: float | None, *, model: str = "") -> float:
        """`check` a call estimated at `estimate_usd` (None: unknown price) beside every call
        in flight, and hold its estimate until `release`; returns what to release."""
        with self._reserve_lock:
            self.check(None if estimate_usd is None else self.reserved_usd + estimate_usd,
                       model=model)
            held = estimate_usd or 0.0
            self.reserved_usd += held
            return held

    def release(self, held_usd: float) -> None:
        """A call `reserve`d is over (charged or failed)."""
        with self._reserve_lock:
            self.reserved_usd -= held_usd

    def stopped(self, reason: str, not_attempted: int) -> str:
        """The message of a run stopped by this budget (`reason`), once every call in flight
        has settled."""
        advice = (", rerun with --resume and a larger --budget-usd"
                  if reason.startswith("budget of $") else "")
        return (f"{reason}: spent ${self.spent_usd:.4f}, {not_attempted} scores not "
                f"attempted; finished scores are kept{advice}")

    def charge(self, cost_usd: float | None) -> None:
        with self._lock:
            if cost_usd is None:
                self.unknown_cost_calls += 1
            else:
                self.spent_usd += cost_usd


@dataclass
class RunSettings:
    budget: Budget = field(default_factory=Budget)
    dry_run: bool = False
    cache_path: Path | None = None
    #: The failed statuses a rerun asks again (`--retry`): a stored score of another status
    #: is kept by --resume, and a judge answer behind one is replayed from the judge cache.
    retry: frozenset[str] = frozenset({"error"})
    #: `--repeats K`: independent draws per sample of each judge (`scoring.with_repeats`),
    #: and whether a judge at temperature 0 may draw more than once.
    repeats: int = 1
    repeats_allow_greedy: bool = False
    #: `--repeats-cell`: how the table's cell combines the draws (None: the mean, or the
    #: majority verdict of a pairwise judge).
    repeats_cell: str | None = None


#: What `--retry` takes.
RETRY_KINDS = ("parse_error", "refused", "error")


def parse_retry(text: str) -> frozenset[str]:
    """`--retry parse_error,refused,error` as a set of statuses (InputError for another)."""
    kinds = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(kinds - set(RETRY_KINDS))
    if unknown or not kinds:
        raise InputError(f"{', '.join(unknown) or 'nothing'} is not a status to retry; give "
                         f"one or more of {','.join(RETRY_KINDS)}", field="--retry")
    return frozenset(kinds)


_current: contextvars.ContextVar[RunSettings | None] = contextvars.ContextVar(
    "judgebench_run", default=None
)


def current() -> RunSettings:
    """The settings of the run in progress (defaults outside a run)."""
    settings = _current.get()
    return settings if settings is not None else RunSettings()


@contextlib.contextmanager
def running(settings: RunSettings) -> Iterator[RunSettings]:
    token = _current.set(settings)
    try:
        yield settings
    finally:
        _current.reset(token)
