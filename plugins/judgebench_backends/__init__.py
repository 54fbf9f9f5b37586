"""Built-in model backends (litellm, vllm, transformers), registered like any plugin's.

Registering imports nothing heavy: each factory imports its model library when first built.
"""

from __future__ import annotations

from typing import Any

from judgebench.hookspecs import hookimpl

__version__ = "0.1.0"


def _litellm(**options: Any) -> Any:
    from judgebench.backends.litellm_backend import LiteLLMBackend

    return LiteLLMBackend(**options)


def _vllm(**options: Any) -> Any:
    from judgebench.backends.vllm_backend import VLLMBackend

    return VLLMBackend(**options)


def _transformers(**options: Any) -> Any:
    from judgebench.backends.transformers_backend import TransformersBackend

    return TransformersBackend(**options)


@hookimpl
def register_backends(register: Any) -> None:
    register("litellm", _litellm)
    register("vllm", _vllm)
    register("transformers", _transformers)
