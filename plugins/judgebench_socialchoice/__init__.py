"""Social-choice and rating rules for `judgebench aggregate`, as a plugin.

Registers every rule of meta_eval.aggregation (mean, borda, copeland, kemeny, bradley-terry,
elo, ...) through the `register_aggregators` hook, exactly as a third-party plugin would. A
rule is any object with a `name` and `rank(data) -> RuleResult` (see
meta_eval.aggregation.base.AggregationRule).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.plugin_api import hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import AggregatorRegister

__version__ = "0.1.0"


@hookimpl
def register_aggregators(register: AggregatorRegister) -> None:
    from meta_eval.aggregation import BUILTIN_RULES

    for rule in BUILTIN_RULES:
        register(rule.name, rule)
