"""The judge the docs' examples call: a real OpenAI-compatible HTTP server on 127.0.0.1 that
answers every built-in judge in form, for tests/test_docs_run.py ($JUDGEBENCH_DOCS_SERVER).

With a JSON schema (`response_format` `json_schema`, what judges send by default) the answer
is an instance of it: each `enum` property one of its values and each bounded integer a value
in its range, both drawn from a hash of the model's name and the messages (a request always
gets the same answer, and two models' answers differ), each string "docs judge". Without one
it answers as tests/scripted_judge.py's `any_judges_form` does (the text protocols); `fit
--rewrite-with`'s request gets a rewritten criterion between <criterion> tags. It judges
nothing: it stands where `vllm serve` or a gateway would, so the examples run without a key
or a GPU.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackHTTPServer
from scripted_judge import any_judges_form


def instance(schema: dict[str, Any], seed: int) -> Any:
    """A value `schema` accepts (the subset of JSON Schema the judges send)."""
    if "enum" in schema:
        return schema["enum"][seed % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "object":
        return {name: instance(sub, seed // (i + 2))
                for i, (name, sub) in enumerate(schema.get("properties", {}).items())}
    if kind == "integer":
        low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 10))
        return low + seed % (high - low + 1)
    if kind == "number":
        return round((seed % 1000) / 1000, 3)
    if kind == "boolean":
        return bool(seed % 2)
    if kind == "array":
        return []
    return "docs judge"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send(200, {"object": "list", "data": [{"id": "docs-judge", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        messages = body.get("messages") or [{"role": "user", "content": body.get("prompt", "")}]
        asked = json.dumps([body.get("model"), messages]).encode()
        seed = int.from_bytes(hashlib.sha256(asked).digest()[:8], "big")
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        user = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
        if "between <criterion> and </criterion>" in user:  # fit --rewrite-with's request
            reply = (f"<criterion>Docs rewrite {seed % 1000}: the response reads as one "
                     "connected whole.</criterion>")
        elif schema is not None:
            reply = json.dumps(instance(schema, seed))
        else:
            system = "\n".join(str(m["content"]) for m in messages if m["role"] == "system")
            user = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
            reply = any_judges_form(system, user)
        tokens = sum(len(str(m["content"])) for m in messages) // 4 + 1
        self._send(200, {
            "id": "chatcmpl-docs", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": tokens, "completion_tokens": 8,
                      "total_tokens": tokens + 8},
        })


class DocsJudgeServer:
    """`with DocsJudgeServer() as server:` serves on 127.0.0.1; `server.url` is the api_base."""

    def __enter__(self) -> DocsJudgeServer:
        self.server = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
