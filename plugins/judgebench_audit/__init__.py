"""Sentinel metrics for `judgebench audit`: blind baselines that must never look good.

Perrella et al. 2024, "Guardians of the Machine Translation Meta-Evaluation: Sentinel
Metrics Fall In!" (ACL): a metric that sees only the candidate, only the source or only the
reference, trained on the human scores, shows what a meta-evaluation setting rewards besides
quality. Registered through `register_sentinels`, as a third-party plugin would.
"""

from __future__ import annotations

from typing import Any

from judgebench.hookspecs import hookimpl

__version__ = "0.1.0"


@hookimpl
def register_sentinels(register: Any) -> None:
    from judgebench_audit.regressors import CandSentinel, RefSentinel, SrcSentinel
    from judgebench_audit.sentinels import ConstantSentinel, LengthSentinel, RandomSentinel

    for sentinel in (RandomSentinel, ConstantSentinel, LengthSentinel, CandSentinel,
                     SrcSentinel, RefSentinel):
        register(sentinel)
