"""A backend of the installed plugins, for code outside a run (a script, a notebook, a
test): each call builds a host of the installed plugins. Inside a run a metric asks its own
host (`self.host.backend(name, **options)`), which knows the run's local plugins too."""

from __future__ import annotations

from typing import Any

from judgebench.backends.base import Accepts, Backend


def backend_accepts(name: str) -> Accepts:
    """What the backend registered under `name` by an installed plugin takes (InputError if
    none is); `PluginHost.backend_accepts` asks a given host."""
    from judgebench.plugins import build_host

    return build_host().backend_accepts(name)


def get_backend(name: str, **options: Any) -> Backend:
    """A backend registered under `name` by an installed plugin, built with `options` (a
    host of the installed plugins is built for the call; `PluginHost.backend` builds one
    from a given host, its local plugins included).

    ``get_backend("transformers")`` gives the embedded CPU default (SmolLM2-135M-Instruct);
    ``get_backend("litellm", model="hosted_vllm/my-judge", api_base="http://host:8000/v1")``
    an OpenAI-compatible server.
    """
    from judgebench.plugins import build_host

    return build_host().backend(name, **options)
