"""judgebench: score generated text with pluggable metrics and audit them against people.

Importing this package is cheap: pandas, the plugins and any model library load on first use.
The Python API (`judgebench.services`): `score` (returns the wide table as a DataFrame),
`meta_eval`, `aggregate` and `audit_scores` (the audit service; `judgebench.audit` is the
audit subpackage).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from judgebench.api import score
    from judgebench.services.aggregate import aggregate
    from judgebench.services.audit import audit as audit_scores
    from judgebench.services.meta_eval import meta_eval

__all__ = ["__version__", "aggregate", "audit_scores", "meta_eval", "score"]

_LAZY = {"score": ("judgebench.api", "score"),
         "meta_eval": ("judgebench.services.meta_eval", "meta_eval"),
         "aggregate": ("judgebench.services.aggregate", "aggregate"),
         "audit_scores": ("judgebench.services.audit", "audit")}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'judgebench' has no attribute {name!r}")
