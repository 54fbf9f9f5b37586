"""The hooks a judgebench plugin can implement. Their names are public API.

Each registration hook receives a typed register object (judgebench.registry) with the one
call a plugin may make; the host checks every call and raises a PluginError naming the plugin
when a registration breaks the contract.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from judgebench.registry import (
        AggregatorRegister,
        BackendRegister,
        MetricRegister,
        ProbeRegister,
        SentinelRegister,
        SuiteRegister,
    )

hookspec = pluggy.HookspecMarker("judgebench")
hookimpl = pluggy.HookimplMarker("judgebench")


@hookspec
def register_metrics(register: MetricRegister) -> None:
    """Register metrics: ``register(MetricClass)`` or ``register(factory, info=MetricInfo)``."""


@hookspec
def register_backends(register: BackendRegister) -> None:
    """Register model backends: ``register(name, factory)``."""


@hookspec
def register_aggregators(register: AggregatorRegister) -> None:
    """Register social-choice or rating rules: ``register(name, rule)``."""


@hookspec
def register_sentinels(register: SentinelRegister) -> None:
    """Register sentinel metrics for ``audit``: ``register(SentinelClass)``, a subclass of
    judgebench.sentinel.Sentinel."""


@hookspec
def register_probes(register: ProbeRegister) -> None:
    """Register metamorphic probes for ``audit --probe``: ``register(ProbeClass)`` (or an
    instance), a subclass of judgebench.probe.Probe."""


@hookspec
def register_suites(register: SuiteRegister) -> None:
    """Register meta-evaluation suites: ``register(folder)``, a folder in the suite layout
    (judgebench.suite); its name is the folder's name."""


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands to the ``judgebench`` command group."""
