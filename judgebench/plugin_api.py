"""What a plugin may use: the one face of judgebench for metric, backend, sentinel, probe,
aggregation-rule and command plugins. The built-in plugins (plugins/judgebench_*) import from
judgebench through this module only (tests/test_plugin_api.py checks it).

- registering: `hookimpl` and the register objects the hooks receive (`MetricRegister`,
  `BackendRegister`, `AggregatorRegister`, `SentinelRegister`, `ProbeRegister`), and
  `PluginHost`, the type of `Metric.host` (the host that built a metric: a metric gets its
  backend with `self.host.backend(name, **options)`, a panel its members with
  `self.host.metric(name).build(...)`, so both resolve in the host that built them);
- metrics: `Metric`, `WithStatistics`, `MetricInfo`, `EmptyText`, `Sample`, `Outcome`,
  `Status`, and the bounds every numeric option declares (`MAX_*`, `MIN_SEED64`);
- backends: the contract (`Backend`, `Request`, `Response`, `Constraint`, `Capabilities`...),
  the one remote engine (`RemoteBackend`, `RemoteOptions`, `Retryable`, `Final`) and the judge
  cache (`CachedBackend`, `JudgeCache`);
- sentinels and probes: `Sentinel`, `Probe`, `BiasProbe` (a judge-bias probe), `Context`
  and the probes' helpers;
- errors, optional dependencies, secrets, the run's settings, specs and inputs: `InputError`,
  `JudgebenchError`, `require`, `MissingExtra`, `redact`, `runtime`, `parse_spec`,
  `read_samples`; `listwise_candidates` (a listwise sample's candidates, for a judge of
  the best of N);
- what the progress line says (judgebench.engine.progress_line): `busy(what)`, a context
  manager for a long step that moves no count (a backend converting its model once).

Stability: a name here keeps its meaning within a major version; a change to one is said in
the docs (their plugin API page is generated from this module) and in the changelog of the
release that makes it. Anything else under `judgebench` is the host's own and may change in
any release.
"""

from __future__ import annotations

from judgebench.backends import run_sync
from judgebench.backends.base import (
    ENGINE_OPTIONS,
    KINDS,
    Accepts,
    Backend,
    Capabilities,
    Constraint,
    ConstraintKind,
    Enforced,
    EngineOptions,
    Failure,
    LazyBackend,
    Request,
    Response,
    TokenLogprob,
    given_engine_options,
    unset_engine_fields,
)
from judgebench.backends.installed import backend_accepts, get_backend
from judgebench.backends.remote import (
    Final,
    RemoteBackend,
    RemoteOptions,
    Retryable,
    http_failure,
    retry_after_seconds,
    scrub,
)
from judgebench.bias_probe import BiasProbe
from judgebench.conversation import with_output
from judgebench.engine import runtime
from judgebench.engine.judge_cache import CachedBackend, JudgeCache, default_cache_path
from judgebench.engine.progress_line import busy
from judgebench.engine.store import FINGERPRINT, REQUEST_KEYS
from judgebench.errors import InputError, JudgebenchError
from judgebench.extras import MissingExtra, require
from judgebench.hookspecs import hookimpl
from judgebench.listwise_sample import listwise_candidates
from judgebench.metric import (
    MAX_BATCH,
    MAX_COUNT,
    MAX_MAGNITUDE,
    MAX_SCALE,
    MAX_SECONDS,
    MAX_SEED,
    MAX_SEED64,
    MAX_TOKENS,
    MIN_SEED64,
    Metric,
    WithStatistics,
)
from judgebench.models import EmptyText, Message, MetricInfo, Outcome, Sample, Status
from judgebench.plugins import PluginHost
from judgebench.probe import SENTENCE, Context, Probe, against, seeded_rng
from judgebench.redact import redact
from judgebench.registry import (
    AggregatorRegister,
    BackendRegister,
    MetricRegister,
    ProbeRegister,
    SentinelRegister,
    SuiteRegister,
)
from judgebench.sentinel import Sentinel
from judgebench.spec import parse_spec
from judgebench.tables.io import read_samples

__all__ = [
    "ENGINE_OPTIONS",
    "FINGERPRINT",
    "KINDS",
    "MAX_BATCH",
    "MAX_COUNT",
    "MAX_MAGNITUDE",
    "MAX_SCALE",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_SEED64",
    "MAX_TOKENS",
    "MIN_SEED64",
    "REQUEST_KEYS",
    "SENTENCE",
    "Accepts",
    "AggregatorRegister",
    "Backend",
    "BackendRegister",
    "BiasProbe",
    "CachedBackend",
    "Capabilities",
    "Constraint",
    "ConstraintKind",
    "Context",
    "EmptyText",
    "Enforced",
    "EngineOptions",
    "Failure",
    "Final",
    "InputError",
    "JudgeCache",
    "JudgebenchError",
    "LazyBackend",
    "Message",
    "Metric",
    "MetricInfo",
    "MetricRegister",
    "MissingExtra",
    "Outcome",
    "PluginHost",
    "Probe",
    "ProbeRegister",
    "RemoteBackend",
    "RemoteOptions",
    "Request",
    "Response",
    "Retryable",
    "Sample",
    "Sentinel",
    "SentinelRegister",
    "Status",
    "SuiteRegister",
    "TokenLogprob",
    "WithStatistics",
    "against",
    "backend_accepts",
    "busy",
    "default_cache_path",
    "get_backend",
    "given_engine_options",
    "hookimpl",
    "http_failure",
    "listwise_candidates",
    "parse_spec",
    "read_samples",
    "redact",
    "require",
    "retry_after_seconds",
    "run_sync",
    "runtime",
    "scrub",
    "seeded_rng",
    "unset_engine_fields",
    "with_output",
]
