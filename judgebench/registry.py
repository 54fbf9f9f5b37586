"""The typed `register` objects the plugin host hands to each hook, and the registry entries.

Each hook gets its own register object, with only the call a plugin may make:

    register_metrics(register: MetricRegister)      register(MetricClass)
                                                    register(factory, info=MetricInfo(...))
    register_sentinels(register: SentinelRegister)  register(SentinelClass)
    register_probes(register: ProbeRegister)        register(ProbeClass) or register(probe)
    register_backends(register: BackendRegister)    register(name, factory)
    register_aggregators(register: AggregatorRegister)  register(name, rule)
    register_suites(register: SuiteRegister)        register(folder)

Every call is checked when it is made; a breach is a PluginError naming the plugin: names are
unique within a hook; a metric class whose info declares a corpus level (`level="corpus"` or
`has_corpus=True`) overrides `corpus_score`; a metric's `Options` model does not silently drop
unknown options (`extra="forbid"`, or `extra="allow"` for a metric that reads the extras
itself, like judge.panel, which hands them to its members); a sentinel subclasses
judgebench.sentinel.Sentinel; a probe is a judgebench.probe.Probe with a name, a description
and a known expectation.

An entry remembers the plugin (and its version) that registered it, and the host that found
it; `MetricEntry.build` is how the host builds a metric, and gives the instance that plugin's
"name version" for its signature and that host (`Metric.host`: where the metric looks up its
backend, or a panel its members).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from judgebench.bias_probe import BIAS_EXPECTS, MODES, BiasProbe
from judgebench.errors import PluginError
from judgebench.metric import Metric
from judgebench.models import MetricInfo
from judgebench.probe import EXPECTS, Probe
from judgebench.sentinel import Sentinel

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost
    from meta_eval.aggregation.base import RuleResult


class AggregationRule(Protocol):
    """What `register_aggregators` takes (meta_eval.aggregation.base.AggregationRule, with a
    read-only name): a `name` and `rank(data) -> RuleResult`."""

    @property
    def name(self) -> str: ...

    def rank(self, data: Any) -> RuleResult: ...


@dataclass(frozen=True)
class MetricEntry:
    """A registered metric (or sentinel): its info, how to build it, and who registered it."""

    info: MetricInfo
    factory: Callable[..., Metric]
    plugin: str
    version: str = ""
    #: Signed by `version` alone, not the plugin's name: a local plugin file, whose name is
    #: its path and whose version ends with its content hash (moved, it re-scores nothing).
    by_content: bool = False
    #: The host whose registry holds this entry (set by the host when it collects it).
    host: PluginHost | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def label(self) -> str:
        """`plugin version` (`version` alone when `by_content`), as it enters the signature."""
        return self.version if self.by_content else f"{self.plugin} {self.version}".strip()

    @property
    def options_model(self) -> type[BaseModel] | None:
        """The Options model of a registered Metric class; None for a factory function."""
        if isinstance(self.factory, type) and issubclass(self.factory, Metric):
            return self.factory.Options
        return None

    def build(self, **options: Any) -> Metric:
        """The metric with these options, knowing which plugin registered it. A registered
        class that sets `plugin` itself keeps its own; a factory function's metric is left as
        the factory made it (signatures stay what they were). Either way the metric knows the
        host that built it (`Metric.host`), a registered class from its `__init__` on (a
        panel builds its members there, in the same host)."""
        factory = self.factory
        if isinstance(factory, type) and issubclass(factory, Metric) and self.host is not None:
            metric: Metric = factory.__new__(factory)
            metric.host = self.host
            factory.__init__(metric, **options)
        else:
            metric = factory(**options)
            if self.host is not None and isinstance(metric, Metric):
                metric.host = self.host
        if isinstance(factory, type) and not factory.__dict__.get("plugin"):
            metric.plugin = self.label
        return metric


@dataclass(frozen=True)
class NamedEntry:
    """A registered backend factory or aggregation rule."""

    name: str
    obj: Any
    plugin: str


@dataclass(frozen=True)
class ProbeEntry:
    """A registered metamorphic probe or judge-bias probe."""

    probe: Probe | BiasProbe
    plugin: str

    @property
    def name(self) -> str:
        return self.probe.name


EntryT = TypeVar("EntryT", MetricEntry, NamedEntry, ProbeEntry)


class Register(Generic[EntryT]):
    """Collects one plugin's entries for one hook into the host's registry."""

    def __init__(self, plugin: str, version: str, found: dict[str, EntryT], *,
                 by_content: bool = False, host: PluginHost | None = None) -> None:
        self._plugin = plugin
        self._version = version
        self._by_content = by_content
        self._host = host
        self._found: dict[str, EntryT] = found

    def _error(self, message: str) -> PluginError:
        return PluginError(f"plugin '{self._plugin}' {message}")

    def _add(self, entry: EntryT) -> None:
        if entry.name in self._found:
            raise self._error(f"registers '{entry.name}', already registered by plugin "
                              f"'{self._found[entry.name].plugin}'")
        self._found[entry.name] = entry

    def _named(self, name: str, obj: Any) -> NamedEntry:
        if not isinstance(name, str) or not name:
            raise self._error(f"registered {obj!r} without a name")
        return NamedEntry(name=name, obj=obj, plugin=self._plugin)

    def _metric(self, metric: Callable[..., Metric], info: MetricInfo | None) -> MetricEntry:
        info = info or getattr(metric, "info", None)
        if not isinstance(info, MetricInfo):
            raise self._error(
                f"registered {metric!r} without a MetricInfo: give the class an `info` "
                "attribute or call register(factory, info=MetricInfo(...))")
        if isinstance(metric, type) and issubclass(metric, Metric):
            self._check_metric_class(metric, info)
        return MetricEntry(info=info, factory=metric, plugin=self._plugin, version=self._version,
                           by_content=self._by_content, host=self._host)

    def _check_metric_class(self, cls: type[Metric], info: MetricInfo) -> None:
        if (info.level == "corpus" or info.has_corpus) and cls.corpus_score is Metric.corpus_score:
            declared = "level='corpus'" if info.level == "corpus" else "has_corpus=True"
            raise self._error(f"registers '{info.name}' with {declared}, but "
                              f"{cls.__name__} does not implement corpus_score")
        options = cls.Options
        if not (isinstance(options, type) and issubclass(options, BaseModel)):
            raise self._error(f"registers '{info.name}': {cls.__name__}.Options is not a "
                              "pydantic model")
        extra = options.model_config.get("extra") or "ignore"
        if extra == "ignore":
            raise self._error(
                f"registers '{info.name}': its Options model {options.__name__} ignores "
                "unknown options, so a misspelt option would be dropped silently; set "
                "model_config = ConfigDict(extra=\"forbid\")")
        if (info.level != "corpus" and cls.score is Metric.score
                and cls.score_stream is Metric.score_stream):
            raise self._error(f"registers '{info.name}' with level '{info.level}', but "
                              f"{cls.__name__} implements neither score nor score_stream")


class MetricRegister(Register[MetricEntry]):
    """What `register_metrics` receives."""

    def __call__(self, metric: Callable[..., Metric], info: MetricInfo | None = None) -> None:
        """Register a Metric subclass (its `info` is read from it), or any factory returning a
        Metric together with its `info`."""
        self._add(self._metric(metric, info))


class SentinelRegister(Register[MetricEntry]):
    """What `register_sentinels` receives."""

    def __call__(self, sentinel: type[Sentinel], info: MetricInfo | None = None) -> None:
        """Register a subclass of judgebench.sentinel.Sentinel."""
        if not (isinstance(sentinel, type) and issubclass(sentinel, Sentinel)):
            raise self._error(f"registered {sentinel!r} as a sentinel: a sentinel is a subclass "
                              "of judgebench.sentinel.Sentinel")
        self._add(self._metric(sentinel, info))


class ProbeRegister(Register[ProbeEntry]):
    """What `register_probes` receives."""

    def __call__(self, probe: type[Probe] | Probe | type[BiasProbe] | BiasProbe) -> None:
        """Register a subclass of judgebench.probe.Probe or judgebench.bias_probe.BiasProbe
        (built with no arguments), or an instance of one."""
        if isinstance(probe, type) and issubclass(probe, Probe | BiasProbe):
            probe = probe()
        if not isinstance(probe, Probe | BiasProbe):
            raise self._error(f"registered {probe!r} as a probe: a probe is a subclass of "
                              "judgebench.probe.Probe or judgebench.bias_probe.BiasProbe "
                              "(or an instance of one)")
        kind = type(probe).__name__
        for attribute in ("name", "description"):
            value = getattr(probe, attribute, None)
            if not isinstance(value, str) or not value:
                raise self._error(f"registered probe {kind} without a {attribute}")
        if isinstance(probe, BiasProbe):
            self._bias(probe)
            return
        if getattr(probe, "expect", None) not in EXPECTS:
            raise self._error(f"registers probe '{probe.name}' with expect="
                              f"{getattr(probe, 'expect', None)!r}; one of {', '.join(EXPECTS)}")
        if probe.scope == "run" and probe.expect != "same":
            raise self._error(f"registers probe '{probe.name}' that rescores in a separate run "
                              f"with expect={probe.expect!r}: a separate run can only expect "
                              "'same'")
        self._add(ProbeEntry(probe=probe, plugin=self._plugin))

    def _bias(self, probe: BiasProbe) -> None:
        modes = getattr(probe, "modes", ())
        if not modes or any(m not in MODES for m in modes):
            raise self._error(f"registers bias probe '{probe.name}' with modes={modes!r}; "
                              f"one or more of {', '.join(MODES)}")
        if getattr(probe, "expect", None) not in BIAS_EXPECTS:
            raise self._error(f"registers bias probe '{probe.name}' with expect="
                              f"{getattr(probe, 'expect', None)!r}; one of "
                              f"{', '.join(BIAS_EXPECTS)}")
        threshold = getattr(probe, "threshold", None)
        if not isinstance(threshold, int | float) or not 0 <= threshold < 1:
            raise self._error(f"registers bias probe '{probe.name}' with threshold="
                              f"{threshold!r}; a shift in [0, 1)")
        self._add(ProbeEntry(probe=probe, plugin=self._plugin))


class BackendRegister(Register[NamedEntry]):
    """What `register_backends` receives."""

    def __call__(self, name: str, factory: Callable[..., Any]) -> None:
        """Register `factory(**options)` as backend `name`."""
        self._add(self._named(name, factory))


class AggregatorRegister(Register[NamedEntry]):
    """What `register_aggregators` receives."""

    def __call__(self, name: str, rule: AggregationRule) -> None:
        """Register an aggregation rule under `name`."""
        self._add(self._named(name, rule))


class SuiteRegister(Register[NamedEntry]):
    """What `register_suites` receives."""

    def __call__(self, folder: str | Path) -> None:
        """Register the suite in `folder` (judgebench.suite's layout) under the folder's name.
        Its files are verified when the suite is loaded, not here."""
        from judgebench.suite import INFO, NAME

        path = Path(folder)
        if not (path / INFO).is_file():
            raise self._error(f"registers suite folder {path}, which holds no {INFO}")
        if not NAME.match(path.name):
            raise self._error(f"registers suite '{path.name}': a suite name is lowercase "
                              "letters, digits and '-'")
        self._add(self._named(path.name, path))
