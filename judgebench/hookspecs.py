"""The hooks a judgebench plugin can implement. Their names are public API."""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("judgebench")
hookimpl = pluggy.HookimplMarker("judgebench")


@hookspec
def register_metrics(register: Any) -> None:
    """Register metrics: ``register(MetricClass)`` or ``register(factory, info=MetricInfo)``."""


@hookspec
def register_backends(register: Any) -> None:
    """Register model backends: ``register(name, factory)``."""


@hookspec
def register_aggregators(register: Any) -> None:
    """Register social-choice or rating rules: ``register(name, rule)``."""


@hookspec
def register_sentinels(register: Any) -> None:
    """Register sentinel metrics for ``audit``: ``register(MetricClass)``."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands to the ``judgebench`` command group."""
