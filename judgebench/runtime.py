"""Settings of the run in progress, visible to metrics and backends without threading them
through every call: the spending limit, dry-run mode and where caches live."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from judgebench.errors import JudgebenchError


class BudgetExceeded(JudgebenchError):
    """Raised before a call that would spend past `--budget-usd`; finished work is kept."""


@dataclass
class Budget:
    """Money spent by this run, checked before each call. Thread-safe."""

    limit_usd: float | None = None
    spent_usd: float = 0.0
    unknown_cost_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def check(self, next_cost_usd: float = 0.0) -> None:
        with self._lock:
            if self.limit_usd is not None and self.spent_usd + next_cost_usd > self.limit_usd:
                raise BudgetExceeded(
                    f"budget of ${self.limit_usd:.4f} reached (spent ${self.spent_usd:.4f}); "
                    "finished scores are kept, rerun with --resume and a larger --budget-usd"
                )

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
