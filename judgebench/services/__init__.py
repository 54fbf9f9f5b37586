"""The Python API: one plain, typed function per stage, which the commands call.

    score(data, metrics)              -> ScoreResult      (judgebench.services.score)
    meta_eval(scores, humans=[...])   -> MetaEvalResult   (judgebench.services.meta_eval)
    aggregate(table, rules=[...])     -> AggregateResult  (judgebench.services.aggregate)
    audit(scores, humans=[...])       -> Report           (judgebench.services.audit)
    compare_judges(table, a=.., b=..) -> ComparisonResult (judgebench.services.compare_judges)

Each result has `to_dict()` (what the command prints with --json) and, where a table is what
a user wants, `to_frame()`. Modules load on first use, so importing this package is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgebench.services.aggregate import aggregate
    from judgebench.services.audit import audit
    from judgebench.services.compare_judges import compare_judges
    from judgebench.services.meta_eval import meta_eval
    from judgebench.services.score import score

__all__ = ["aggregate", "audit", "compare_judges", "meta_eval", "score"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        import importlib

        return getattr(importlib.import_module(f"judgebench.services.{name}"), name)
    raise AttributeError(f"module 'judgebench.services' has no attribute {name!r}")
