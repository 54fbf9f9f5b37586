"""Sentinel metrics and metamorphic probes for `judgebench audit`.

Sentinels are blind baselines that must never look good (Perrella et al. 2024, "Guardians of
the Machine Translation Meta-Evaluation: Sentinel Metrics Fall In!", ACL): a metric that sees
only the candidate, only the source or only the reference, trained on the human scores, shows
what a meta-evaluation setting rewards besides quality. Probes change an output in a known way
and check the score moves as it must. Both are registered through the hooks
(`register_sentinels`, `register_probes`), subclassing the host's Sentinel and Probe, as a
third-party plugin would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.plugin_api import hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import ProbeRegister, SentinelRegister

__version__ = "0.1.0"


@hookimpl
def register_sentinels(register: SentinelRegister) -> None:
    from judgebench_audit.regressors import CandSentinel, RefSentinel, SrcSentinel
    from judgebench_audit.sentinels import ConstantSentinel, LengthSentinel, RandomSentinel

    for sentinel in (RandomSentinel, ConstantSentinel, LengthSentinel, CandSentinel,
                     SrcSentinel, RefSentinel):
        register(sentinel)


@hookimpl
def register_probes(register: ProbeRegister) -> None:
    from judgebench_audit.bias_probes import BIAS_PROBES
    from judgebench_audit.probes import PROBES

    for probe in PROBES:
        register(probe)
    for bias_probe in BIAS_PROBES:
        register(bias_probe)
