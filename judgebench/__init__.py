"""judgebench: score generated text with pluggable metrics and audit them against people.

Importing this package is cheap: pandas, the plugins and any model library load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from judgebench.api import score

__all__ = ["__version__", "score"]


def __getattr__(name: str) -> Any:
    if name == "score":
        from judgebench.api import score

        return score
    raise AttributeError(f"module 'judgebench' has no attribute {name!r}")
