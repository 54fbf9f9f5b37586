"""Built-in model backends (litellm, openai_compat, vllm, transformers), registered like any
plugin's.

Registering imports nothing heavy: each factory imports its model library when first built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from judgebench.hookspecs import hookimpl

if TYPE_CHECKING:
    from judgebench.registry import BackendRegister

__version__ = "0.1.0"


def _litellm(**options: Any) -> Any:
    from judgebench.backends.litellm_backend import LiteLLMBackend

    return LiteLLMBackend(**options)


def _openai_compat(**options: Any) -> Any:
    from judgebench.backends.openai_compat_backend import OpenAICompatBackend

    return OpenAICompatBackend(**options)


def _vllm(**options: Any) -> Any:
    from judgebench.backends.vllm_backend import VLLMBackend

    return VLLMBackend(**options)


def _transformers(**options: Any) -> Any:
    from judgebench.backends.transformers_backend import TransformersBackend

    return TransformersBackend(**options)


@hookimpl
def register_backends(register: BackendRegister) -> None:
    register("litellm", _litellm)
    register("openai_compat", _openai_compat)
    register("vllm", _vllm)
    register("transformers", _transformers)
