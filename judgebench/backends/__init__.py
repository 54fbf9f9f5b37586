"""Model backends: the one interface (judgebench.backends.base) and the one remote-call
engine (judgebench.backends.remote). The implementations are plugins
(plugins/judgebench_backends and any third party's).

Importing this package loads no model or HTTP library.
"""

from judgebench.backends.base import (
    Accepts,
    Backend,
    Capabilities,
    Constraint,
    Failure,
    LazyBackend,
    Request,
    Response,
    TokenLogprob,
    classify_answer,
    run_sync,
)
from judgebench.backends.installed import backend_accepts, get_backend

__all__ = [
    "Accepts",
    "Backend",
    "Capabilities",
    "Constraint",
    "Failure",
    "LazyBackend",
    "Request",
    "Response",
    "TokenLogprob",
    "backend_accepts",
    "classify_answer",
    "get_backend",
    "run_sync",
]
