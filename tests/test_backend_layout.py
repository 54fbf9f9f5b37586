"""The backend layout: the host holds only contracts and the one remote-call engine, the
implementations are plugins that share it, and no plugin reaches into another's privates."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from judgebench.backends import Backend, backend_accepts
from judgebench.backends.remote import RemoteBackend, RemoteOptions
from judgebench.errors import InputError

ROOT = Path(__file__).resolve().parent.parent
HEAVY = {"litellm", "aiohttp", "vllm", "transformers", "torch"}
#: What the engine does, defined once in RemoteBackend and nowhere else.
ENGINE = ("agenerate", "aiter_generate", "_call", "_attempts", "price")


def imports(path: Path) -> list[tuple[str, list[str], int]]:
    """Every import in `path`, function-local ones included: (module, names, level)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", [a.name for a in node.names], node.level))
    return found


def test_the_host_imports_no_model_or_http_library() -> None:
    files = sorted((ROOT / "judgebench").rglob("*.py"))
    assert len(files) > 10
    offenders = [f"{path.relative_to(ROOT)}: {module}"
                 for path in files for module, _, level in imports(path)
                 if level == 0 and module.split(".")[0] in HEAVY]
    assert offenders == []


def test_the_host_keeps_only_the_backend_contracts() -> None:
    kept = sorted(p.name for p in (ROOT / "judgebench" / "backends").glob("*.py"))
    # the contracts, the remote-call engine, and the look-up of an installed backend
    assert kept == ["__init__.py", "base.py", "installed.py", "remote.py"]
    modules = {p.stem for p in (ROOT / "plugins" / "judgebench_backends").glob("*.py")}
    assert {"litellm_backend", "openai_compat", "vllm_backend", "transformers_backend"} <= modules
    assert not modules & HEAVY  # no module shadows the library it wraps


def test_no_plugin_imports_another_plugins_private_names() -> None:
    plugins = ROOT / "plugins"
    packages = {p.name for p in plugins.iterdir() if (p / "__init__.py").is_file()}
    assert "judgebench_backends" in packages
    offenders = []
    for package in sorted(packages):
        for path in sorted((plugins / package).rglob("*.py")):
            for module, names, level in imports(path):
                if level:
                    continue
                parts = module.split(".")
                if parts[0] not in packages or parts[0] == package:
                    continue
                private = [n for n in names if n.startswith("_")]
                private += [p for p in parts[1:] if p.startswith("_")]
                if private:
                    offenders.append(f"{path.relative_to(ROOT)}: {module} {private}")
    assert offenders == []


def remote_providers() -> list[type[RemoteBackend]]:
    from judgebench_backends.litellm_backend import LiteLLMBackend
    from judgebench_backends.openai_compat import OpenAICompatBackend

    return [LiteLLMBackend, OpenAICompatBackend]


@pytest.mark.parametrize("cls", remote_providers(), ids=lambda c: c.name)
def test_remote_providers_get_the_attempt_loop_from_the_engine(cls) -> None:
    assert issubclass(cls, RemoteBackend)
    assert cls.__mro__[1] is RemoteBackend  # not a subclass of another provider
    for name in ENGINE:
        assert name not in vars(cls), f"{cls.__name__} defines its own {name}"
        assert getattr(cls, name) is getattr(RemoteBackend, name)
    for name in ("send", "parse", "open_client"):
        assert name in vars(cls), f"{cls.__name__} does not implement {name}"


def code_names(source: str) -> set[str]:
    """Every name, attribute and imported module the code of `source` uses (not its text)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update(a.name for a in node.names)
            names.update((getattr(node, "module", None) or "").split("."))
    return names


ENGINE_NAMES = {"sleep", "uniform", "random", "Semaphore", "budget", "reserve", "charge",
                "RateLimiter", "limiter_for", "_limiter", "pause", "dry_run", "max_attempts",
                "backoff_base_s", "backoff_max_s", "max_retry_after_s", "release"}


def test_retry_rate_limit_and_budget_code_exists_once() -> None:
    """Only the engine sleeps between attempts, draws jitter, holds a semaphore or a rate
    limiter, or touches the budget; no provider module uses any of that."""
    engine = code_names(inspect.getsource(RemoteBackend))
    assert ENGINE_NAMES - {"random", "RateLimiter", "limiter_for"} <= engine
    providers = ROOT / "plugins" / "judgebench_backends"
    for name in ("litellm_backend.py", "openai_compat.py", "openai_format.py"):
        used = code_names((providers / name).read_text(encoding="utf-8"))
        assert used & ENGINE_NAMES == set(), name


def test_built_in_backends_declare_the_options_they_accept() -> None:
    remote = {"model", "revision"} | set(RemoteOptions.__dataclass_fields__)
    litellm = backend_accepts("litellm")
    assert litellm.names == frozenset(remote | {"drop_params"})
    assert litellm.required == {"model"}
    assert backend_accepts("openai_compat").names == frozenset(
        remote | {"prompt_logprobs", "tokenize", "server", "structured"})
    transformers = backend_accepts("transformers")
    assert "batch_size" in transformers and "concurrency" not in transformers
    assert transformers.required == frozenset()
    vllm = backend_accepts("vllm")
    assert vllm.required == {"model"} and "gpu_memory_utilization" in vllm
    assert "timeout_s" not in vllm


def test_a_plain_backend_accepts_its_constructor_parameters() -> None:
    class Plain(Backend):
        def __init__(self, model: str, *, depth: int = 2) -> None:
            super().__init__(model)

    assert Plain.accepts().names == {"model", "depth"}
    assert Plain.accepts().required == {"model"}


def judge(**options):
    from judgebench.plugins import build_host

    return build_host().metric("judge.rubric").build(**options)


def test_judges_forward_the_options_a_backend_accepts_whatever_its_name() -> None:
    remote = judge(backend="openai_compat", model="m", api_base="http://127.0.0.1:9/v1",
                   concurrency=3, timeout_s=2.5, price_in=1.0, price_out=2.0)
    opts = remote.backend_options()
    assert opts == {"model": "m", "api_base": "http://127.0.0.1:9/v1", "concurrency": 3,
                    "timeout_s": 2.5, "max_attempts": 6, "price_in": 1.0, "price_out": 2.0}
    # the transformers backend takes batch_size and model, not the remote defaults
    assert judge(backend="transformers", batch=4).backend_options() == {"batch_size": 4}
    assert judge(backend="vllm", model="/m", revision="r").backend_options() == {
        "model": "/m", "revision": "r"}


def test_an_option_the_backend_cannot_take_is_an_input_error_naming_it() -> None:
    with pytest.raises(InputError, match=r"metric judge.rubric: backend 'transformers' does "
                                         r"not take the option concurrency="):
        judge(backend="transformers", concurrency=4).backend_options()
    with pytest.raises(InputError, match=r"backend 'litellm' does not take the option batch="):
        judge(backend="litellm", model="openai/x", batch=2).backend_options()
    with pytest.raises(InputError, match=r"metric judge.rubric: backend=vllm needs model="):
        judge(backend="vllm").backend_options()
