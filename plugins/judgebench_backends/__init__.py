"""Built-in model backends, registered like any plugin's:

- ``litellm`` (`litellm_backend`): any provider litellm knows, or an OpenAI-compatible server;
- ``openai_compat`` (`openai_compat`): OpenAI-compatible chat servers over aiohttp;
- ``vllm`` (`vllm_backend`): in-process GPU batching;
- ``vllm_server`` (`vllm_server`): a ``vllm serve`` that judgebench starts and stops;
- ``transformers`` (`transformers_backend`): the embedded CPU default.

The first two are providers on the host's remote-call engine
(`judgebench.backends.remote.RemoteBackend`). Registering imports none of these modules; each
imports its model or HTTP library (litellm, aiohttp, vllm, torch, transformers) only inside
the methods that use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.plugin_api import LazyBackend, hookimpl

if TYPE_CHECKING:
    from judgebench.plugin_api import BackendRegister

__version__ = "0.1.0"

BUILT_IN = {
    "litellm": "judgebench_backends.litellm_backend:LiteLLMBackend",
    "openai_compat": "judgebench_backends.openai_compat:OpenAICompatBackend",
    "vllm": "judgebench_backends.vllm_backend:VLLMBackend",
    "vllm_server": "judgebench_backends.vllm_server:VLLMServerBackend",
    "transformers": "judgebench_backends.transformers_backend:TransformersBackend",
}


@hookimpl
def register_backends(register: BackendRegister) -> None:
    for name, target in BUILT_IN.items():
        register(name, LazyBackend(target))
