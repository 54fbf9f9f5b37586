"""Model backends: one interface (judgebench.backends.base) and the built-in implementations.

Importing this package loads no model library; each backend imports its own on first use.
"""

from judgebench.backends.base import (
    Backend,
    Capabilities,
    Failure,
    Request,
    Response,
    TokenLogprob,
    get_backend,
    run_sync,
)

__all__ = [
    "Backend",
    "Capabilities",
    "Failure",
    "Request",
    "Response",
    "TokenLogprob",
    "get_backend",
    "run_sync",
]
