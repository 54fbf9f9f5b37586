"""A scripted pairwise judge on a real loopback OpenAI-compatible HTTP server.

The server reads the two responses between the pairwise template's `<response_a>` and
`<response_b>` tags and answers by a script written into the responses themselves:
- `q=N` is a response's quality; the higher quality wins (`[[A]]` or `[[B]]` for its place);
- equal quality: a *biased* judge picks the response shown first (so the verdict flips with
  the order and the combined verdict is a tie); a judge whose system prompt says `STRICT`
  answers `[[C]]` (a tie) instead;
- `GARBLE` in the response shown first: an answer with no verdict (a parse error).
Every answered request is counted, and its messages kept (`prompts`), so a test can see what
was sent. `ScriptedJudge(reply=f)` answers with `f(system, user)` instead (another script),
or with `f(system, user, key)` where `f.by_key` is true (`key`: the request's bearer key, so
two clients of one server can be told apart).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackHTTPServer

_RESPONSE = re.compile(r"<response_([ab])>\n(.*?)\n</response_\1>", re.DOTALL)
_QUALITY = re.compile(r"q=(\d+)")


def verdict_for(system: str, user: str) -> str:
    shown = dict(_RESPONSE.findall(user))
    first, second = shown.get("a", ""), shown.get("b", "")
    if "GARBLE" in first:
        return "Both have merits and I cannot decide between them."
    qa, qb = _quality(first), _quality(second)
    tie = "C" if "STRICT" in system else "A"
    letter = tie if qa == qb else "A" if qa > qb else "B"
    return f"Compared them carefully. [[{letter}]]"


def any_judges_form(system: str, user: str) -> str:
    """A well-formed answer for whichever built-in judge's prompt `user` is (pairwise,
    listwise, Prometheus relative, reference, G-Eval, else a rubric score of 2)."""
    if "<response_a>" in user:
        return "Both were read. [[A]]"
    if "Response A:\n<response>" in user:  # judge.listwise
        return "All were read. [[A]]"
    if "###Response A:" in user:
        return "Feedback: both read. [RESULT] A"
    if "Response to grade:" in user:
        return "It was compared. [[CORRECT]]"
    if "Evaluation form" in user:
        return "2"
    return "Feedback: it was read. [RESULT] 2"


def _quality(text: str) -> int:
    found = _QUALITY.search(text)
    return int(found.group(1)) if found else 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        messages = body["messages"]
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        user = "\n".join(m["content"] for m in messages if m["role"] == "user")
        if getattr(self.server.reply, "by_key", False):  # which client: its bearer key
            key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            reply = self.server.reply(system, user, key)
        else:
            reply = self.server.reply(system, user)
        time.sleep(self.server.latency)
        with self.server.lock:
            self.server.calls += 1
            self.server.prompts.append(messages)
        answer = {
            "id": "chatcmpl-scripted", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": len(user) // 4 + 1, "completion_tokens": 8,
                      "total_tokens": len(user) // 4 + 9},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ScriptedJudge:
    """`with ScriptedJudge() as judge:` serves on 127.0.0.1; `judge.url` is the api_base."""

    def __init__(self, latency: float = 0.0,
                 reply: Callable[..., str] = verdict_for) -> None:
        self.latency = latency
        self.reply = reply

    def __enter__(self) -> ScriptedJudge:
        self.server = LoopbackHTTPServer(("127.0.0.1", 0), _Handler)
        self.server.latency = self.latency  # type: ignore[attr-defined]
        self.server.lock = threading.Lock()  # type: ignore[attr-defined]
        self.server.calls = 0  # type: ignore[attr-defined]
        self.server.prompts = []  # type: ignore[attr-defined]
        self.server.reply = self.reply  # type: ignore[attr-defined]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        return int(self.server.calls)  # type: ignore[attr-defined]

    @property
    def prompts(self) -> list[list[dict[str, str]]]:
        """The messages of every answered request, in the order they were answered."""
        return list(self.server.prompts)  # type: ignore[attr-defined]

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
