"""The plugin host: one pluggy manager, filled from the `judgebench` entry-point group.

Built-in plugins (plugins/judgebench_*) arrive through the same entry points as third-party
ones. `JUDGEBENCH_LOAD_PLUGINS=a,b` restricts which entry points load; `load_local_plugin`
adds a module or a .py file given on the command line. A plugin that fails to import is
recorded by name with its error and the rest keep working; a hook with a misspelt name
is an error (`check_pending`). Each registration hook gets a typed register object
(judgebench.registry) that checks what the plugin registers; the metrics, sentinels and
probes are collected when the host is built, so a breach is an error at start-up.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from judgebench import hookspecs
from judgebench.bias_probe import BiasProbe
from judgebench.errors import InputError, PluginError
from judgebench.probe import Probe
from judgebench.registry import (
    AggregatorRegister,
    BackendRegister,
    EntryT,
    MetricEntry,
    MetricRegister,
    NamedEntry,
    ProbeEntry,
    ProbeRegister,
    Register,
    SentinelRegister,
    SuiteRegister,
)
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    from judgebench.backends.base import Accepts, Backend

ENTRY_POINT_GROUP = "judgebench"
ALLOWLIST_ENV = "JUDGEBENCH_LOAD_PLUGINS"


@dataclass(frozen=True)
class PluginFailure:
    name: str
    error: str


@dataclass
class PluginHost:
    pm: pluggy.PluginManager
    failures: list[PluginFailure] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    #: The local plugins (`-p`) it loaded, so worker processes can build the same host.
    local_plugins: tuple[str, ...] = ()
    #: The plugins whose metrics are signed by version and content hash, not by name (the
    #: local plugin files: their name is their path).
    by_content: set[str] = field(default_factory=set)
    _cache: dict[str, dict[str, Any]] = field(default_factory=dict)

    # -- registries ---------------------------------------------------------------------
    def metrics(self) -> dict[str, MetricEntry]:
        return self._collect("register_metrics", MetricRegister)

    def sentinels(self) -> dict[str, MetricEntry]:
        return self._collect("register_sentinels", SentinelRegister)

    def probes(self) -> dict[str, ProbeEntry]:
        """Every registered metamorphic probe, in registration order."""
        return {name: entry for name, entry in self._all_probes().items()
                if isinstance(entry.probe, Probe)}

    def bias_probes(self) -> dict[str, ProbeEntry]:
        """Every registered judge-bias probe (a BiasProbe), in registration order."""
        return {name: entry for name, entry in self._all_probes().items()
                if isinstance(entry.probe, BiasProbe)}

    def _all_probes(self) -> dict[str, ProbeEntry]:
        return self._collect("register_probes", ProbeRegister)

    def backends(self) -> dict[str, NamedEntry]:
        return self._collect("register_backends", BackendRegister)

    def aggregators(self) -> dict[str, NamedEntry]:
        return self._collect("register_aggregators", AggregatorRegister)

    def suites(self) -> dict[str, NamedEntry]:
        """Every registered suite folder (`obj` is its Path), by name."""
        return self._collect("register_suites", SuiteRegister)

    def metric(self, name: str) -> MetricEntry:
        found = self.metrics() | self.sentinels()
        if name not in found:
            known = ", ".join(sorted(found)) or "none"
            raise InputError(f"unknown metric '{name}'{did_you_mean(name, found)} "
                             f"(registered metrics: {known})")
        return found[name]

    def backend_accepts(self, name: str) -> Accepts:
        """What the backend registered under `name` takes (InputError if none is)."""
        from judgebench.backends.base import accepts_of, registered_backend

        return accepts_of(registered_backend(self.backends(), name))

    def backend(self, name: str, **options: Any) -> Backend:
        """The backend registered under `name` in this host, built with `options` (see
        `judgebench.backends.get_backend`)."""
        from judgebench.backends.base import make_backend

        return make_backend(self.backends(), name, options)

    def _collect(self, hook_name: str, make: Callable[..., Register[EntryT]]
                 ) -> dict[str, EntryT]:
        """Call every implementation of `hook_name` with its plugin's register object."""
        if hook_name in self._cache:
            return self._cache[hook_name]
        found: dict[str, EntryT] = {}
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            plugin = impl.plugin_name
            try:
                impl.function(register=make(plugin, self.versions.get(plugin, ""), found,
                                            by_content=plugin in self.by_content, host=self))
            except PluginError:
                raise
            except Exception as exc:  # one broken plugin must not take the others down
                self.report_failure(plugin, f"{hook_name}: {_describe(exc)}")
        self._cache[hook_name] = found
        return found

    # -- description --------------------------------------------------------------------
    def describe(self) -> list[dict[str, Any]]:
        """One row per plugin: name, version, hooks, and the error if it failed."""
        errors: dict[str, list[str]] = {}
        for failure in self.failures:
            errors.setdefault(failure.name, []).append(failure.error)
        rows: dict[str, dict[str, Any]] = {}
        for name, plugin in self.pm.list_name_plugin():
            hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
            rows[name] = {"name": name, "version": self.versions.get(name, ""), "hooks": hooks}
        for name in errors:
            rows.setdefault(name, {"name": name, "version": self.versions.get(name, ""),
                                   "hooks": []})
        for name, row in rows.items():
            row["error"] = "; ".join(errors[name]) if name in errors else None
        return [rows[name] for name in sorted(rows)]

    def report_failure(self, plugin: str, error: str) -> None:
        self.failures.append(PluginFailure(plugin, error))
        print(f"judgebench: plugin '{plugin}' failed: {error}", file=sys.stderr)

    def call_register_commands(self, cli: Any) -> None:
        """Let every plugin add its commands to `cli` (a group of this host's own, made by
        `judgebench.cli.make_cli`)."""
        for impl in self.pm.hook.register_commands.get_hookimpls():
            try:
                impl.function(cli=cli)
            except Exception as exc:
                self.report_failure(impl.plugin_name, f"register_commands: {_describe(exc)}")


def _describe(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def _allowlist() -> set[str] | None:
    raw = os.environ.get(ALLOWLIST_ENV)
    if raw is None:
        return None
    return {name.strip() for name in raw.split(",") if name.strip()}


def _entry_points() -> Iterator[importlib.metadata.EntryPoint]:
    seen: set[str] = set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in seen:  # the same distribution seen twice on sys.path
            seen.add(ep.name)
            yield ep


def _is_file(spec: str) -> bool:
    return spec.endswith(".py") or Path(spec).is_file()


def local_name(spec: str) -> str:
    """The name a local plugin is registered under: a file by its resolved path, so
    `-p my.py`, `-p ./my.py` and its absolute path are one plugin; a module by its dotted
    name. A file's metrics are signed by its version and content hash alone (`source_hash`),
    not this name: the same file moved is the same plugin to the store."""
    return str(Path(spec).resolve()) if _is_file(spec) else spec


def source_hash(module: ModuleType) -> str | None:
    """``sha256:<16 hex>`` of a local plugin's source file, so that editing it changes the
    signatures of its metrics (and `--resume` scores them again); None without a file."""
    import hashlib

    file = getattr(module, "__file__", None)
    if not file or not Path(file).is_file():
        return None
    return f"sha256:{hashlib.sha256(Path(file).read_bytes()).hexdigest()[:16]}"


def _import_local(spec: str) -> ModuleType:
    path = Path(spec)
    if _is_file(spec):
        if not path.is_file():
            raise InputError(f"plugin file not found: {spec}")
        module_name = f"judgebench_local_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise InputError(f"cannot load plugin file {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
        return module
    return importlib.import_module(spec)


def build_host(local_plugins: tuple[str, ...] | list[str] = ()) -> PluginHost:
    """A new host: the entry points `JUDGEBENCH_LOAD_PLUGINS` allows, then `local_plugins`.

    There is no process-wide host: each service takes one (`host=`) and builds one with
    no local plugins when given none; the CLI builds one per call (`judgebench.cli.main`)."""
    pm = pluggy.PluginManager("judgebench")
    pm.add_hookspecs(hookspecs)
    host = PluginHost(pm=pm, local_plugins=tuple(local_plugins))
    allow = _allowlist()
    for ep in _entry_points():
        if allow is not None and ep.name not in allow:
            continue
        version = ep.dist.version if ep.dist is not None else ""
        host.versions[ep.name] = version
        try:
            module = ep.load()
        except Exception as exc:
            host.report_failure(ep.name, f"import: {_describe(exc)}")
            continue
        _register(pm, module, ep.name)
    for spec in local_plugins:
        try:
            module = _import_local(spec)
        except InputError:
            raise
        except Exception as exc:
            raise PluginError(f"plugin '{spec}' failed to load: {_describe(exc)}") from exc
        name = local_name(spec)
        _register(pm, module, name)
        if _is_file(spec):
            host.by_content.add(name)
        host.versions[name] = " ".join(
            part for part in (getattr(module, "__version__", "local"), source_hash(module))
            if part)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(_unknown_hook(pm, exc)) from None
    _check_registrations(host)
    return host


def _unknown_hook(pm: pluggy.PluginManager, exc: pluggy.PluginValidationError) -> str:
    """What `check_pending` refused, with the hook the plugin most likely meant."""
    plugin = pm.get_name(exc.plugin) or exc.plugin
    callers = {name: caller for name, caller in vars(pm.hook).items()
               if isinstance(caller, pluggy.HookCaller)}
    specs = sorted(name for name, caller in callers.items() if caller.has_spec())
    misspelt = [name for name, caller in callers.items() if not caller.has_spec()
                and any(impl.plugin is exc.plugin for impl in caller.get_hookimpls())]
    if not misspelt:
        return f"plugin '{plugin}' implements a hook judgebench does not define: {exc}"
    return "; ".join(f"plugin '{plugin}' implements hook '{name}', which judgebench does not "
                     f"define{did_you_mean(name, specs)} (hooks: {', '.join(specs)})"
                     for name in misspelt)


def _register(pm: pluggy.PluginManager, module: ModuleType, name: str) -> None:
    try:
        pm.register(module, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin '{name}' does not match judgebench's hooks: {exc}") from None
    except ValueError as exc:  # already registered under another name
        raise PluginError(f"plugin '{name}': {exc}") from None


def _check_registrations(host: PluginHost) -> None:
    """Collect the metrics, sentinels and probes now, so a registration that breaks the
    contract (a clash of names, a missing corpus_score, ...) is an error at start-up."""
    host.metrics()
    host.sentinels()
    host._all_probes()
