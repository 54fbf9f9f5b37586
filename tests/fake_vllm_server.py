"""A small stand-in for ``vllm serve`` on loopback, for CPU tests: the OpenAI chat and
completions API, vLLM's /health, /v1/models, /tokenize and pooling endpoints, with an API key.

Run it as ``python fake_vllm_server.py [serve] MODEL --host H --port P [vllm flags...]``
(what judgebench's vllm_server backend runs in place of ``vllm serve``), or in a thread with
`FakeVLLMServer` (for the openai_compat tests). Its text is one token per character, and the
log-probability of character c is ``char_logprob(c)``, so a test can compute a likelihood
exactly. It requires ``Authorization: Bearer $VLLM_API_KEY`` when that variable (or
``--api-key``) is set, as vLLM does.

Environment knobs (subprocess use): FAKE_VLLM_MODE = ok | never_healthy | crash |
ignore_term (SIGTERM is ignored);
FAKE_VLLM_STARTUP_S (seconds before /health answers 200); FAKE_VLLM_LATENCY_S (seconds per
chat answer); FAKE_VLLM_LOG (a JSONL file: the argv, pid and key at start, then every request
body); FAKE_VLLM_REPLY (the chat answer); FAKE_VLLM_ROOT (the checkpoint /v1/models names).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackHTTPServer

DEFAULT_REPLY = '{"feedback": "Fine.", "score": 4}'


def char_logprob(char: str) -> float:
    return -((ord(char) % 7) + 1) / 10


def render_chat(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    text = "".join(f"<{m['role']}>{m['content']}" for m in messages)
    return text + ("<assistant>" if add_generation_prompt else "")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: Any) -> None:
        blob = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(blob)))
        self.end_headers()
        self.wfile.write(blob)

    def _authorised(self) -> bool:
        key = self.server.api_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._send(401, {"error": "Unauthorized"})
            return False
        return True

    def do_GET(self) -> None:
        if self.path == "/health":
            healthy = (self.server.mode != "never_healthy"
                       and time.monotonic() >= self.server.ready_at)
            self._send(200 if healthy else 503, {})
        elif self.path == "/version":
            self._send(200, {"version": "0.11.0-fake"})
        elif self.path == "/v1/models":
            if self._authorised():
                self._send(200, {"object": "list", "data": self.server.models})
        else:
            self._send(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        self.server.record({"path": self.path, "body": body})
        if not self._authorised():
            return
        route = {"/v1/chat/completions": self.chat, "/v1/completions": self.completions,
                 "/tokenize": self.tokenize, "/classify": self.classify, "/score": self.score,
                 "/v1/embeddings": self.embeddings, "/pooling": self.pooling,
                 "/v1/load_lora_adapter": self.load_lora_adapter}.get(self.path)
        if self.path == "/v1/load_lora_adapter" and not os.environ.get(
                "VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
            route = None  # vLLM serves it only when runtime LoRA updating is allowed
        if route is None:
            self._send(404, {"error": f"no route {self.path}"})
            return
        self._send(200, route(body))

    # -- generation ---------------------------------------------------------------------------
    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(self.server.latency_s)
        continuing = body.get("continue_final_message", False)
        prompt = render_chat(body["messages"], add_generation_prompt=not continuing)
        reply = self.server.reply[: body.get("max_tokens") or None]
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": reply}}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [
                {"token": c, "logprob": char_logprob(c),
                 "top_logprobs": [{"token": c, "logprob": char_logprob(c)}]} for c in reply]}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "model": body["model"],
                "choices": [choice],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(reply)}}

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["prompt"]
        generated = "ok!"[: body.get("max_tokens", 16)]
        text = (prompt if body.get("echo") else "") + generated
        choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "length"}
        if body.get("logprobs") is not None:
            tokens = list(text)
            logprobs: list[float | None] = [char_logprob(c) for c in tokens]
            if body.get("echo"):
                logprobs[0] = None  # nothing conditions the first prompt token
            choice["logprobs"] = {"tokens": tokens, "token_logprobs": logprobs,
                                  "top_logprobs": [None if lp is None else {t: lp}
                                                   for t, lp in zip(tokens, logprobs, strict=True)]}
        return {"id": "cmpl-fake", "object": "text_completion", "model": body["model"],
                "choices": [choice],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(generated)}}

    def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        if "messages" in body:
            text = render_chat(body["messages"], body.get("add_generation_prompt", True))
        else:
            text = body["prompt"]
        return {"count": len(text), "max_model_len": 4096, "tokens": [ord(c) for c in text]}

    def load_lora_adapter(self, body: dict[str, Any]) -> str:
        base = self.server.models[0]["id"]
        self.server.models.append({"id": body["lora_name"], "object": "model",
                                   "root": body["lora_path"], "parent": base})
        return f"Success: LoRA adapter '{body['lora_name']}' added successfully."

    # -- pooling --------------------------------------------------------------------------------
    def classify(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"data": [{"index": i, "label": "LABEL_1", "probs": [0.25, 0.75],
                          "num_classes": 2} for i, _ in enumerate(body["input"])]}

    def score(self, body: dict[str, Any]) -> dict[str, Any]:
        firsts, seconds = body["text_1"], body["text_2"]
        if isinstance(firsts, str):
            firsts = [firsts] * len(seconds)
        return {"data": [{"index": i, "score": len(a) / (len(a) + len(b))}
                         for i, (a, b) in enumerate(zip(firsts, seconds, strict=False))]}

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"data": [{"index": i, "embedding": [float(len(t)), 1.0]}
                         for i, t in enumerate(body["input"])]}

    def pooling(self, body: dict[str, Any]) -> dict[str, Any]:
        return {"data": [{"index": i, "data": [float(len(t))]}
                         for i, t in enumerate(body["input"])]}


class FakeVLLMServer(LoopbackHTTPServer):

    def __init__(self, model: str, *, port: int = 0, api_key: str | None = None,
                 mode: str = "ok", startup_s: float = 0.0, reply: str = DEFAULT_REPLY,
                 lora_modules: tuple[str, ...] = (), log: str | None = None,
                 root: str | None = None) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.api_key, self.mode, self.reply = api_key, mode, reply
        self.ready_at = time.monotonic() + startup_s
        self.latency_s = float(os.environ.get("FAKE_VLLM_LATENCY_S", "0"))
        self.models = [{"id": model, "object": "model", "root": root or model, "parent": None}]
        for module in lora_modules:
            name, _, path = module.partition("=")
            self.models.append({"id": name, "object": "model", "root": path, "parent": model})
        self.log, self._lock = log, threading.Lock()
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)
            if self.log:
                with open(self.log, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(entry) + "\n")

    def __enter__(self) -> FakeVLLMServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()


def main(argv: list[str]) -> int:
    args = argv[1:] if argv and argv[0] == "serve" else argv
    model, flags = args[0], args[1:]

    def flag(name: str, default: str | None = None) -> str | None:
        return flags[flags.index(name) + 1] if name in flags else default

    log = os.environ.get("FAKE_VLLM_LOG")
    api_key = flag("--api-key") or os.environ.get("VLLM_API_KEY")
    if log:
        with open(log, "a", encoding="utf-8") as handle:
            # a test-only log: the key is written so a test can look for it elsewhere
            handle.write(json.dumps({"argv": argv, "pid": os.getpid(),
                                     "api_key": api_key}) + "\n")
    mode = os.environ.get("FAKE_VLLM_MODE", "ok")
    print(f"INFO fake vllm serving {model}", file=sys.stderr, flush=True)
    if mode == "ignore_term":  # a server stuck in shutdown: only SIGKILL ends it
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "crash":
        print("ERROR CUDA out of memory (fake): cannot load the model", file=sys.stderr)
        return 3
    lora = [flags[i + 1] for i, f in enumerate(flags) if f == "--lora-modules"]
    server = FakeVLLMServer(
        model, port=int(flag("--port", "8000") or 8000), api_key=api_key, mode=mode,
        startup_s=float(os.environ.get("FAKE_VLLM_STARTUP_S", "0")),
        reply=os.environ.get("FAKE_VLLM_REPLY", DEFAULT_REPLY), lora_modules=tuple(lora),
        log=log, root=os.environ.get("FAKE_VLLM_ROOT"))
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
