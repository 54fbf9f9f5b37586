"""A managed ``vllm serve``: judgebench starts the server, judges through it, and stops it.

``judge.rubric:backend=vllm_server,model=/models/qwen,tensor_parallel_size=2`` starts
``vllm serve /models/qwen --host 127.0.0.1 --port <free port> --tensor-parallel-size 2`` with
a random API key in the child's environment (``VLLM_API_KEY``: never on its command line, in
the store, a log, the signature or an error), waits until it is healthy (``/health``, then
``/v1/models``), and talks to it as `OpenAICompatBackend` does (chat, completions with
prompt logprobs, /tokenize). The metrics of a run that name the same model and engine options
share one server (LoRA adapters of that model too: each is loaded into it at run time); it
is stopped when the last of them closes (the end of a run, an error, Ctrl-C or SIGTERM:
terminate, wait `STOP_GRACE_S`, kill), and at interpreter exit whatever is left. A server
that exits or never becomes healthy is an error quoting the end of its output.

The start command is ``command=...``, else ``$JUDGEBENCH_VLLM_SERVE``, else ``vllm serve``
(so tests run the lifecycle on CPU with a small fake server). The identity (and so the
signature) says ``vllm_server``, and records the checkpoint the server reports for the model
(``served``) and its vLLM version (``GET /version``). The server starts when the signature
is first asked for, so ``--dry-run`` starts it too (it makes no model call): its identity is
known and its token counts are the server's own (``/tokenize``).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from judgebench.plugin_api import Accepts, InputError, JudgebenchError, Request, redact
from judgebench_backends.openai_compat import OpenAICompatBackend, OpenAICompatOptions

DEFAULT_COMMAND = "vllm serve"
#: vllm serve flags of the engine options (booleans are flags; None is left out).
SERVE_FLAGS = {
    "tensor_parallel_size": "--tensor-parallel-size",
    "pipeline_parallel_size": "--pipeline-parallel-size",
    "data_parallel_size": "--data-parallel-size",
    "max_model_len": "--max-model-len",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "quantization": "--quantization",
    "dtype": "--dtype",
    "enforce_eager": "--enforce-eager",
    "max_num_seqs": "--max-num-seqs",
    "enable_prefix_caching": "--enable-prefix-caching",
    "seed": "--seed",
    "runner": "--runner",
    "revision": "--revision",
}
#: The smallest ``--max-lora-rank`` a server starts with, so adapters of ranks up to it share
#: one server (vLLM reserves memory for the largest rank).
MIN_LORA_RANK = 64
#: Seconds a server has to exit after SIGTERM before it is killed.
STOP_GRACE_S = 10.0


def serve_arguments(model: str, engine: dict[str, Any], lora: str | None) -> list[str]:
    """The ``vllm serve`` arguments after the command: the model, then one flag per option."""
    args = [model]
    for name, flag in SERVE_FLAGS.items():
        value = engine.get(name)
        if value is None:
            continue
        if isinstance(value, bool):
            if name == "enable_prefix_caching":
                args.append(flag if value else "--no-enable-prefix-caching")
            elif value:
                args.append(flag)
        else:
            args += [flag, str(value)]
    if lora:  # adapters are loaded at run time (`ManagedServer.load_adapter`)
        from judgebench_backends.vllm_backend import adapter_rank

        args += ["--enable-lora", "--max-lora-rank",
                 str(max(MIN_LORA_RANK, adapter_rank(lora)))]
    return args


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ManagedServer:
    """One ``vllm serve`` child process: started, health-checked, stopped (see the module)."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.api_key = "sk-jb-" + secrets.token_hex(24)  # the shape redact() scrubs anywhere
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.models: list[dict[str, Any]] = []
        self.version: str | None = None
        self._adapters: set[str] = set()
        self._adapters_lock = threading.Lock()
        self._log_dir: Path | None = None

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def _log(self) -> Path:
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="judgebench-vllm-"))
        return self._log_dir / "server.log"

    def start(self, timeout_s: float) -> None:
        """Start the server and wait until it is healthy; on any failure (or Ctrl-C) stop it
        and leave nothing behind."""
        try:
            self._spawn()
            self._wait_healthy(timeout_s)
        except BaseException:
            self.stop()
            raise

    def _spawn(self) -> None:
        self.port = free_port()
        argv = [*self.argv, "--host", "127.0.0.1", "--port", str(self.port)]
        env = {**os.environ, "VLLM_API_KEY": self.api_key}
        if "--enable-lora" in self.argv:  # serves /v1/load_lora_adapter
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        with self._log.open("wb") as log:
            try:
                # its own session: a terminal's Ctrl-C reaches judgebench, which stops it
                self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, env=env,
                                                start_new_session=True)
            except OSError as exc:
                raise JudgebenchError(f"cannot start `{shlex.join(self.argv[:2])}` ({exc}); "
                                      "install vllm, or set command=... or "
                                      "$JUDGEBENCH_VLLM_SERVE") from None

    def _wait_healthy(self, timeout_s: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                raise JudgebenchError(f"`{self.describe()}` exited with status {code} before "
                                      f"it was healthy; its last output:\n{self.tail()}")
            if self._get("/health") is not None:
                listing = self._get("/v1/models")
                if isinstance(listing, dict) and listing.get("data"):
                    self.models = [m for m in listing["data"] if isinstance(m, dict)]
                    version = self._get("/version")
                    if isinstance(version, dict) and version.get("version"):
                        self.version = str(version["version"])
                    return
            time.sleep(0.2)
        raise JudgebenchError(f"`{self.describe()}` was not healthy after {timeout_s:g}s "
                              f"(GET /health, then /v1/models); its last output:\n{self.tail()}")

    def load_adapter(self, name: str, path: str) -> None:
        """Serve the LoRA adapter at `path` as model `name` (once per server), so the
        metrics naming adapters of one base model share its server."""
        with self._adapters_lock:
            if name in self._adapters:
                return
            body = json.dumps({"lora_name": name, "lora_path": path}).encode()
            request = urllib.request.Request(
                self.root + "/v1/load_lora_adapter", data=body,
                headers={"Authorization": f"Bearer {self.api_key}",
                         "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=120.0) as reply:
                    reply.read()
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode("utf-8", "replace")
                raise JudgebenchError(f"the server could not load the LoRA adapter {path}: "
                                      f"HTTP {exc.code}: {redact(detail)}") from None
            except OSError as exc:
                raise JudgebenchError(f"the server could not load the LoRA adapter {path}: "
                                      f"{exc}") from None
            self._adapters.add(name)
            listing = self._get("/v1/models")
            if isinstance(listing, dict) and listing.get("data"):
                self.models = [m for m in listing["data"] if isinstance(m, dict)]

    def _get(self, path: str) -> Any:
        request = urllib.request.Request(self.root + path,
                                         headers={"Authorization": f"Bearer {self.api_key}"})
        try:
            with urllib.request.urlopen(request, timeout=5.0) as reply:
                body = reply.read()
        except (OSError, urllib.error.URLError):
            return None
        try:
            return json.loads(body) if body.strip() else {}
        except ValueError:
            return {}

    def describe(self) -> str:
        return shlex.join(self.argv)

    def tail(self, chars: int = 2000) -> str:
        if self._log_dir is None:
            return "(no output)"
        try:
            text = self._log.read_bytes()[-chars:].decode("utf-8", "replace")
        except OSError:
            return "(no output)"
        return (redact(text.replace(self.api_key, "[REDACTED]")) or "").strip() or "(no output)"

    def stop(self) -> None:
        """Terminate, wait up to `STOP_GRACE_S`, then kill; idempotent."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None


class _Servers:
    """The servers of this process, one per distinct command line, counted by the backends
    holding each; the last to release one stops it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[tuple[str, ...], ManagedServer] = {}
        self._holders: dict[tuple[str, ...], int] = {}
        atexit.register(self.stop_all)

    def acquire(self, argv: list[str], timeout_s: float) -> ManagedServer:
        key = tuple(argv)
        with self._lock:
            server = self._servers.get(key)
            if server is None:
                server = ManagedServer(argv)
                server.start(timeout_s)  # under the lock: a second metric waits, then shares
                self._servers[key], self._holders[key] = server, 0
            self._holders[key] += 1
            return server

    def release(self, argv: list[str]) -> None:
        key = tuple(argv)
        with self._lock:
            if key not in self._holders:
                return
            self._holders[key] -= 1
            if self._holders[key] > 0:
                return
            del self._holders[key]
            server = self._servers.pop(key)
        server.stop()

    def stop_all(self) -> None:
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
            self._holders.clear()
        for server in servers:
            server.stop()

    def __len__(self) -> int:
        return len(self._servers)


servers = _Servers()


@dataclasses.dataclass(kw_only=True)
class VLLMServerOptions(OpenAICompatOptions):
    """OpenAICompatOptions (a prefill is continued by default), and the engine options."""

    prefill: bool = True
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    data_parallel_size: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    quantization: str | None = None
    dtype: str | None = None
    enforce_eager: bool | None = None
    max_num_seqs: int | None = None
    enable_prefix_caching: bool | None = None
    seed: int | None = None
    #: ``pooling`` for a reward model, classifier, cross-encoder or embedding model
    runner: str | None = None
    lora: str | None = None
    command: str | None = None
    startup_timeout_s: float = 900.0


ENGINE_FIELDS = tuple(name for name in SERVE_FLAGS if name != "revision")
#: OpenAICompatOptions does not take these: api_base (this backend makes its own) and more.
_NOT_TAKEN = frozenset({"api_base", "api_key_env"})


class VLLMServerBackend(OpenAICompatBackend):
    name = "vllm_server"
    Options = VLLMServerOptions
    options: VLLMServerOptions

    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        given = sorted(set(options) & _NOT_TAKEN)
        if given:
            raise ValueError(f"the vllm_server backend starts its own server and key; it "
                             f"does not take {', '.join(given)} (use backend=openai_compat "
                             "for a server you started)")
        super().__init__(model, revision, api_base="http://127.0.0.1:0/v1", **options)
        o = self.options
        if o.lora and not (Path(o.lora).expanduser() / "adapter_config.json").is_file():
            raise InputError(f"lora={o.lora}: not a LoRA adapter directory (no "
                             "adapter_config.json)", field="lora")
        command = o.command or os.environ.get("JUDGEBENCH_VLLM_SERVE") or DEFAULT_COMMAND
        engine = {name: getattr(o, name) for name in ENGINE_FIELDS}
        engine["revision"] = revision
        self.argv = [*shlex.split(command), *serve_arguments(self.model, engine, o.lora)]
        self.server: ManagedServer | None = None
        self._start_lock = threading.Lock()

    @classmethod
    def accepts(cls) -> Accepts:
        taken = super().accepts()
        return Accepts(names=frozenset((taken.names or frozenset()) - _NOT_TAKEN),
                       required=taken.required)

    # -- the server -----------------------------------------------------------------------
    def ensure_started(self) -> ManagedServer:
        with self._start_lock:
            if self.server is None or not self.server.running:
                if self.server is not None:  # it died: give it back, start another
                    servers.release(self.argv)
                self.server = servers.acquire(self.argv, self.options.startup_timeout_s)
                if self.options.lora:
                    self.server.load_adapter(self.request_model(),
                                             str(Path(self.options.lora).expanduser().resolve()))
                self.base = self.server.root + "/v1"
                self.api_base = self.base
                self.url = self.base + "/chat/completions"
                self._served_known = False
            return self.server

    def api_key(self) -> str | None:
        return self.server.api_key if self.server is not None else None

    async def open_client(self) -> Any:
        import asyncio

        await asyncio.to_thread(self.ensure_started)
        return await super().open_client()

    def request_model(self) -> str:
        if self.options.lora:  # the name its adapter is loaded under
            from judgebench_backends.vllm_backend import adapter_hash

            return f"adapter-{adapter_hash(self.options.lora)}"
        return self.model

    def pool(self, task: str, inputs: Any) -> list[list[float]]:
        self.ensure_started()
        return super().pool(task, inputs)

    def served_model(self) -> str | None:
        server = self.ensure_started()
        wanted = self.request_model()
        for entry in server.models:
            if entry.get("id") == wanted:
                return str(entry.get("root") or entry["id"])
        return None

    not_in_cache_key = OpenAICompatBackend.not_in_cache_key | {"startup_timeout_s"}

    def cache_endpoint(self) -> str | None:
        """None: the endpoint is its own server (on a free port each start), which the
        engine options in the cache key describe."""
        return None

    def identity(self) -> dict[str, str]:
        from judgebench_backends.vllm_backend import batch_invariant

        identity = super().identity()
        if self.server is not None and self.server.version:
            identity["vllm"] = self.server.version
        # the server inherits this process's environment, VLLM_BATCH_INVARIANT included
        identity["batch_invariant"] = "on" if batch_invariant() else "off"
        if self.options.lora:
            from judgebench_backends.vllm_backend import adapter_hash

            identity["lora"] = adapter_hash(self.options.lora)
        return identity

    def count_tokens(self, request: Request) -> int:
        self.ensure_started()
        return super().count_tokens(request)

    def close(self) -> None:
        with self._start_lock:
            if self.server is not None:
                self.server = None
                servers.release(self.argv)
