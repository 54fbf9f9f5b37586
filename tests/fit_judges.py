"""A scripted OpenAI-compatible judge server on 127.0.0.1 (port 0) for `fit`'s panel and
rewrite tests: each request is answered by the function of its `model`, given the prompt;
every chat request's model and prompt are kept, so a test counts the calls per model and
reads what each was asked."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback_server import LoopbackHTTPServer

#: A model's answer to a prompt: an integer score, or a text (a rewrite).
Answer = Callable[[str], "int | str"]


class ScriptedJudges:
    """`with ScriptedJudges({"model": answer, ...}) as server:`; `server.url` is the
    api_base; `server.calls` counts the chat requests per model and `server.prompts` holds
    (model, prompt) of each. A /tokenize request is answered 404 (no tokenizer)."""

    def __init__(self, models: dict[str, Answer]) -> None:
        self.models = models
        self.calls: Counter[str] = Counter()
        self.prompts: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __enter__(self) -> ScriptedJudges:
        judges = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/chat/completions"):
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                model = str(body["model"])
                prompt = "\n".join(str(m["content"]) for m in body["messages"])
                answer = judges.models[model](prompt)
                with judges.lock:
                    judges.calls[model] += 1
                    judges.prompts.append((model, prompt))
                if isinstance(answer, str):
                    reply = answer
                elif body.get("response_format"):
                    reply = json.dumps({"feedback": "ok", "score": answer})
                else:
                    reply = f"Feedback: ok [RESULT] {answer}"
                data = json.dumps({
                    "id": "x", "object": "chat.completion", "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 8,
                              "total_tokens": len(prompt) // 4 + 8}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = LoopbackHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def judge(self, model: str) -> str:
        """A judge.rubric of coherence on `model` of this server (priced, so budgeted)."""
        return (f"judge.rubric:backend=openai_compat,model={model},api_base={self.url},"
                "criterion=coherence,price_in=1,price_out=1")

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
