"""A real OpenAI-chat-compatible HTTP server on 127.0.0.1, with fault injection.

Run it as a process (tests and benchmarks start it through `FaultServer`)::

    python tests/fault_server.py --port 0 --latency 0.05 --log served.jsonl

It speaks ``POST /v1/chat/completions`` (and ``/chat/completions``, ``GET /v1/models``) and
answers deterministically: the reply is ``--reply`` with ``{score}`` (1-5) and ``{choice}``
(A, B or C) filled from a hash of the messages, and ``{key}`` with the request's bearer key (a
server that quotes the key back inside a successful answer). With ``logprobs`` it returns token
logprobs whose top alternatives at a score token spread over 1-5.

Faults, by request content: a message containing ``@@fault=KIND*N@@`` fails the first N
attempts of that exact request with KIND, then answers. KIND is one of ``429`` (with a
Retry-After header of ``--retry-after`` seconds), ``500``, ``503``, ``timeout`` (answers only
after ``--hang`` seconds), ``truncated`` (announces more bytes than it sends, then closes),
``malformed`` (200 with a body that is not JSON), ``nochoices`` (200, JSON without choices),
``hold`` (answers once ``POST /_release`` is called, or after ``--hang`` seconds), ``refuse``
(200, finish_reason content_filter), ``refusal`` (200, ``message.refusal`` set and
no content, as OpenAI's structured outputs decline), ``echo401`` (401 whose message quotes the
Authorization header back, as some providers do). ``POST /_faults`` with ``{"next": [KIND,...]}``
queues faults for the next requests regardless of content.

``--usage-scale F`` reports usage at F times what the client estimates before a call (the
engine's ~4 characters a token plus 4 a message for the prompt, ``max_tokens`` for the
completion): 1 is an exact estimate, below 1 a provider that counts fewer tokens, above 1 one
that counts more. ``--models-fail N`` answers the first N ``GET /models`` with 503, as a server
still starting does.

``--fingerprint FP`` puts ``"system_fingerprint": FP`` in every answer (as OpenAI's API says
which backend configuration answered) and ``--served-model NAME`` answers ``"model": NAME``
whatever model was asked for (a snapshot behind an alias); ``POST /_fingerprint`` with
``{"system_fingerprint": FP, "model": NAME}`` changes either while the server runs (a silent
snapshot change mid-run); ``--fingerprint-after N=FP`` switches to FP after N answers.

``--replies FILE`` scripts answers by content: FILE is a JSON list of ``[needle, reply]``
pairs; a request whose last message contains a needle gets the first such pair's reply,
literally (no placeholders: a JSON answer needs no escaping); others get ``--reply``.

``--score-salt S`` draws ``{score}``/``{choice}`` from a hash of S and the request instead:
deterministic answers of another judge (two stores made with different judge answers).

``--random-scores SEED`` draws ``{score}``/``{choice}`` at random for every request, from one
generator seeded with SEED (a judge at temperature > 0: the same request asked twice may get
two answers); the drawn score is in the log line (``score``).

``GET /_inflight`` says how many chat requests are being answered now (a test waits for 0
after killing a client, instead of sleeping). Every answered request (status 200) is appended
to ``--log`` as one JSON line, flushed at once, so a test can count calls across a kill and
restart. ``--require-key-env VAR`` makes the server
check ``Authorization: Bearer $VAR`` (401 otherwise).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FAULTS = ("429", "500", "503", "timeout", "hold", "truncated", "malformed", "nochoices",
          "refuse", "refusal", "echo401")


class _State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.lock = threading.Lock()
        self.attempts: dict[str, int] = {}
        self.queue: list[str] = []
        self.reply = args.reply
        self.replies: list[tuple[str, str]] = []
        if args.replies:
            with open(args.replies, encoding="utf-8") as handle:
                self.replies = [(str(n), str(r)) for n, r in json.load(handle)]
        self.fingerprint = args.fingerprint or None
        self.served_model = args.served_model or None
        self.answered = 0  # chat requests answered (status 200)
        self.log = open(args.log, "a", encoding="utf-8") if args.log else None  # noqa: SIM115
        self.key = os.environ.get(args.require_key_env) if args.require_key_env else None
        self.models_asked = 0
        self.released = threading.Event()  # POST /_release: held requests answer
        self.inflight = 0  # chat requests being answered now
        import random

        self.random = (random.Random(args.random_scores) if args.random_scores is not None
                       else None)

    def fault_for(self, digest: str, text: str) -> str | None:
        with self.lock:
            attempt = self.attempts.get(digest, 0) + 1
            self.attempts[digest] = attempt
            if self.queue:
                return self.queue.pop(0)
        marker = text.find("@@fault=")
        if marker < 0:
            return None
        spec = text[marker + 8 : text.find("@@", marker + 8)]
        kind, _, times = spec.partition("*")
        return kind if attempt <= int(times or 1) else None

    def record(self, entry: dict[str, Any]) -> None:
        if self.log is not None:
            with self.lock:
                self.log.write(json.dumps(entry) + "\n")
                self.log.flush()


def _reply_for(template: str, digest: str, key: str = "", salt: str = "") -> str:
    if salt:  # another judge: answers that are a function of the request all the same
        digest = hashlib.sha256((salt + digest).encode()).hexdigest()
    value = int(digest[:8], 16)
    return template.format(score=1 + value % 5, choice="ABC"[value % 3], key=key)


def _logprobs(text: str, top_n: int) -> dict[str, Any]:
    pieces, word = [], ""
    for ch in text:  # split into word-ish tokens, digits on their own
        if ch.isdigit() or ch in " []":
            if word:
                pieces.append(word)
            pieces.append(ch)
            word = ""
        else:
            word += ch
    if word:
        pieces.append(word)
    content = []
    for piece in pieces:
        if piece in ("1", "2", "3", "4", "5"):
            chosen = int(piece)
            spread = {str(s): (0.6 if s == chosen else 0.1) for s in range(1, 6)}
        else:
            spread = {piece: 0.9, piece.upper() if piece != piece.upper() else "x": 0.1}
        top = sorted(spread.items(), key=lambda kv: -kv[1])[: max(top_n, 1)]
        content.append({
            "token": piece,
            "logprob": _log(spread[piece]),
            "bytes": list(piece.encode()),
            "top_logprobs": [
                {"token": t, "logprob": _log(p), "bytes": list(t.encode())} for t, p in top
            ],
        })
    return {"content": content}


def _log(p: float) -> float:
    import math

    return math.log(p)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm holds the
        # body until the client's delayed ACK (~40 ms) and every call looks 40 ms slower.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def do_GET(self) -> None:
        state: _State = self.server.state
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            with state.lock:
                state.models_asked += 1
                failing = state.models_asked <= state.args.models_fail
            if failing:
                return self._json(503, {"error": {"message": "the model is loading"}})
            self._json(200, {"object": "list", "data": [{"id": "judge", "object": "model"}]})
        elif self.path.rstrip("/") == "/_inflight":
            with state.lock:
                self._json(200, {"inflight": state.inflight})
        elif self.path.rstrip("/") == "/_models_asked":
            with state.lock:
                self._json(200, {"models_asked": state.models_asked})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        state: _State = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.rstrip("/")
        if path == "/_faults":
            with state.lock:
                state.queue.extend(json.loads(raw or b"{}").get("next", []))
            return self._json(200, {"queued": len(state.queue)})
        if path == "/_fingerprint":
            change = json.loads(raw or b"{}")
            with state.lock:
                if "system_fingerprint" in change:
                    state.fingerprint = change["system_fingerprint"]
                if "model" in change:
                    state.served_model = change["model"]
            return self._json(200, {"system_fingerprint": state.fingerprint,
                                    "model": state.served_model})
        if path == "/_release":
            state.released.set()
            return self._json(200, {"released": True})
        if path == "/_reply":
            state.reply = json.loads(raw)["reply"]
            return self._json(200, {"reply": state.reply})
        if path not in ("/v1/chat/completions", "/chat/completions"):
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        with state.lock:
            state.inflight += 1
        try:
            return self._chat(state, raw)
        finally:
            with state.lock:
                state.inflight -= 1

    def _chat(self, state: _State, raw: bytes) -> None:
        if state.key is not None and self.headers.get("Authorization") != f"Bearer {state.key}":
            return self._json(401, {"error": {"message": "invalid api key", "type": "auth"}})
        try:
            body = json.loads(raw)
            messages = body["messages"]
        except (ValueError, KeyError):
            return self._json(400, {"error": {"message": "body is not a chat request"}})
        text = "\n".join(str(m.get("content", "")) for m in messages)
        canonical = json.dumps({k: v for k, v in body.items() if k != "stream"}, sort_keys=True)
        digest = hashlib.sha256(canonical.encode()).hexdigest()
        time.sleep(state.args.latency)
        fault = state.fault_for(digest, text)
        if fault == "echo401":
            quoted = self.headers.get("Authorization", "")
            return self._json(401, {"error": {"message": f"Incorrect API key provided: {quoted}",
                                              "type": "invalid_request_error"}})
        if fault == "429":
            return self._json(429, {"error": {"message": "rate limited", "type": "rate_limit"}},
                              {"Retry-After": str(state.args.retry_after)})
        if fault in ("500", "503"):
            return self._json(int(fault), {"error": {"message": "server error"}})
        if fault == "timeout":
            time.sleep(state.args.hang)
        if fault == "hold":
            state.released.wait(state.args.hang)
        if fault == "truncated":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "x", "choices": [{"message": {"content": "[RES')
            self.wfile.flush()
            self.close_connection = True
            return None
        if fault == "malformed":
            return self._send(200, b"<html>bad gateway</html> not json {")
        if fault == "nochoices":
            return self._json(200, {"id": "x", "object": "chat.completion", "model": "judge"})
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        drawn = None
        if state.random is not None:
            with state.lock:
                drawn = state.random.randrange(2**32)
        reply = _reply_for(state.reply, digest if drawn is None else f"{drawn:08x}", key,
                           state.args.score_salt)
        last = str(messages[-1].get("content", "")) if messages else ""
        reply = next((r for needle, r in state.replies if needle in last), reply)
        finish = "stop"
        if fault == "refuse":
            reply, finish = "", "content_filter"
        message: dict[str, Any] = {"role": "assistant", "content": reply}
        if fault == "refusal":
            reply = ""
            message = {"role": "assistant", "content": None,
                       "refusal": "I'm sorry, I can't help with that."}
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if body.get("logprobs"):
            choice["logprobs"] = _logprobs(reply, int(body.get("top_logprobs") or 0))
        usage = {"prompt_tokens": len(text) // 4 + 1, "completion_tokens": len(reply) // 4 + 1}
        if state.args.usage_scale is not None:
            content = "".join(str(m.get("content", "")) for m in messages)
            estimate = max(1, -(-len(content) // 4)) + 4 * len(messages)
            usage = {"prompt_tokens": round(state.args.usage_scale * estimate),
                     "completion_tokens": round(state.args.usage_scale * body["max_tokens"])}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        answer = {
            "id": "chatcmpl-" + digest[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": state.served_model or body.get("model", "judge"),
            "choices": [choice],
            "usage": usage,
        }
        with state.lock:
            state.answered += 1
            after, _, switched = state.args.fingerprint_after.partition("=")
            if after and state.answered > int(after):
                state.fingerprint = switched
            fingerprint = state.fingerprint
        if fingerprint is not None:
            answer["system_fingerprint"] = fingerprint
        state.record({"digest": digest, "time": time.time(), "fault": fault,
                      "model": body.get("model"), "schema": bool(body.get("response_format")),
                      "logprobs": bool(body.get("logprobs")), "usage": usage,
                      "reply": reply})
        return self._json(200, answer)


def serve(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--retry-after", type=float, default=1)
    parser.add_argument("--hang", type=float, default=30.0)
    parser.add_argument("--log", default="")
    parser.add_argument("--reply", default="Feedback: The answer is adequate. [RESULT] {score}")
    parser.add_argument("--require-key-env", default="")
    parser.add_argument("--usage-scale", type=float, default=None)
    parser.add_argument("--models-fail", type=int, default=0)
    parser.add_argument("--fingerprint", default="")
    parser.add_argument("--served-model", default="")
    parser.add_argument("--fingerprint-after", default="")
    parser.add_argument("--score-salt", default="")
    parser.add_argument("--random-scores", type=int, default=None)
    parser.add_argument("--replies", default="")
    args = parser.parse_args(argv)
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 256
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.state = _State(args)  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever(poll_interval=0.05)  # a stop (SIGTERM) waits at most this long


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FaultServer:
    """Starts `serve` in a child process; `kill()` is SIGKILL, `start()` restarts on one port."""

    def __init__(self, *args: str, port: int | None = None, log: Path | None = None,
                 reply: str | None = None, env: dict[str, str] | None = None) -> None:
        self.args = list(args) + (["--reply", reply] if reply is not None else [])
        self.port = port or free_port()
        self.log = log
        self.env = {**os.environ, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultServer:
        cmd = [sys.executable, __file__, "--port", str(self.port), *self.args]
        if self.log is not None:
            cmd += ["--log", str(self.log)]
        deadline = time.monotonic() + 20
        while True:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True, env=self.env)
            assert self.proc.stdout is not None
            line = self.proc.stdout.readline()
            if line.startswith("READY"):
                return self
            self.proc.wait()
            if time.monotonic() > deadline:  # the port may linger briefly after a kill
                stderr = self.proc.stderr.read() if self.proc.stderr else ""
                raise RuntimeError(f"fault server did not start: {stderr}")
            time.sleep(0.2)

    def post(self, path: str, obj: Any) -> Any:
        import urllib.request

        req = urllib.request.Request(self.url.removesuffix("/v1") + path,
                                     data=json.dumps(obj).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr) if self.proc else ():
            if stream is not None:
                stream.close()

    def idle(self) -> bool:
        """Whether the server is answering no chat request now (`GET /_inflight`)."""
        import urllib.request

        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/_inflight",
                                    timeout=10) as resp:
            return json.loads(resp.read())["inflight"] == 0

    def served(self) -> list[dict[str, Any]]:
        if self.log is None or not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


if __name__ == "__main__":
    serve()
