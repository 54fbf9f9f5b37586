"""Optional dependencies: `require`, the one check that the modules a feature needs import.

A command or metric calls it when it is prepared (a command before it reads its inputs, a
metric or backend when its signature is computed, which is before any sample is scored), so
that a missing extra is one line naming it, exit 2, before any work, and never a traceback
after some. The module is imported, not only looked up: an installed module that fails to
import (a broken build, numpy too old for it) is refused the same way.
"""

from __future__ import annotations

import importlib

from judgebench.errors import InputError

#: The distribution that provides a module, where the names differ (for the message).
DISTRIBUTIONS = {"sklearn": "scikit-learn", "faiss": "faiss-cpu", "comet": "unbabel-comet",
                 "ray": "ray[data]"}


class MissingExtra(InputError):
    """A feature's module does not import: the message names the extra that brings it."""

    def __init__(self, feature: str, module: str, extra: str, error: ImportError) -> None:
        self.feature, self.module, self.extra = feature, module, extra
        distribution = DISTRIBUTIONS.get(module, module)
        super().__init__(f"{feature} needs {distribution}, which does not import here "
                         f"({error}): pip install 'judgebench[{extra}]'")


def require(feature: str, extra: str, *modules: str) -> None:
    """Import each of `modules` (top-level names), or raise `MissingExtra` naming `feature`
    (what the user asked for: a command, a metric, a backend) and the `extra` of
    pyproject.toml that installs it."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise MissingExtra(feature, module, extra, exc) from None
