"""The viewer's web app: Starlette routes over `judgebench.view.pages`, Jinja2 templates
(autoescaped: every value from the store is text), GET only.

Every response carries a Content-Security-Policy that allows no script at all and nothing
from another origin (the stylesheet is served here), and the Host header must name the
address the viewer is bound to, so a web page elsewhere cannot read it through DNS
rebinding: with a wildcard address (`--host 0.0.0.0`) the machine's own names and
addresses and those given with `--allow-host`, never any Host. Pages name the store by its
file name, never its absolute path. An audit report page is the audit's own self-contained HTML card
(`judgebench.render.html`) under that card's policy.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from judgebench.errors import InputError, JudgebenchError
from judgebench.services.runs import MAX_RUN_ID, interrupting
from judgebench.view import pages

# The view extra's modules (jinja2, starlette) are imported only when `view` runs.
Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "base-uri 'none'; frame-ancestors 'none'")
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",
}
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: Addresses that listen on every interface of the machine.
WILDCARDS = ("0.0.0.0", "::", "")
#: An audit report page's links back to the viewer (the report is its own page, not a
#: template of the viewer's).
BACK_FROM_AUDIT = (("/audits", "All audit reports"), ("/", "Runs"))
#: The longest number a query string or path may give (a run id fits SQLite's 64 bits).
MAX_DIGITS = 18

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;
background:#fff;line-height:1.4;font-size:14px}
header{background:#24292f;color:#fff;padding:8px 20px;display:flex;gap:18px;align-items:center}
header a{color:#fff;text-decoration:none;font-weight:600}
header .store{color:#c9d1d9;font-family:ui-monospace,monospace;margin-left:auto}
main{padding:12px 20px 40px}
h1{font-size:20px;margin:8px 0 12px}
h2{font-size:16px;margin:18px 0 8px}
table{border-collapse:collapse;margin:8px 0}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.flip td{background:#fff1e5}
tr.flip td.mark{color:#bc4c00;font-weight:700}
.status-ok{color:#1a7f37}.status-error,.status-refused,.status-parse_error{color:#cf222e}
.status-skipped{color:#6e7781}
form.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:end;background:#f6f8fa;
padding:8px;border:1px solid #d0d7de}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#57606a}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;border:1px solid #d0d7de;
padding:6px;margin:4px 0;max-height:420px;overflow:auto}
.role{font-weight:700;font-size:12px;text-transform:uppercase;color:#57606a}
.orders{display:grid;grid-template-columns:1fr 1fr;gap:16px}
.muted{color:#6e7781}.error{color:#cf222e;font-weight:600}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}
dt{color:#57606a}dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
nav.pages a,nav.pages span{margin-right:8px}
"""


class SecurityHeaders:
    """Adds HEADERS to every response (a route's own header of the same name is kept)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                have = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((name.encode(), value.encode())
                                        for name, value in HEADERS.items()
                                        if name.encode() not in have)]
            await send(message)

        await self.app(scope, receive, sending)


def url(path: str, **params: Any) -> str:
    """`path` with the query string of the parameters that are set (lists repeat)."""
    query = urlencode([(k, v) for k, value in params.items()
                       for v in (value if isinstance(value, list | tuple) else [value])
                       if v is not None and v != "" and v is not False], doseq=False)
    return f"{path}?{query}" if query else path


def number(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}g}" if value == value else "NaN"
    return str(value)


def shown(value: Any) -> str:
    """A value of a score's `extra` as JSON (text as it is)."""
    import json

    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def templates() -> Any:
    """The Jinja2 environment of the viewer's templates (autoescaped, strict undefined)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("judgebench.view", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals["url"] = url
    env.filters["num"] = number
    env.filters["shown"] = shown
    return env


def hiding_store(store: Path) -> Callable[[str], str]:
    """A function that rewrites a page's HTML so that it never names where the store is: the
    store's absolute path becomes its file name, its folder's absolute path is dropped (a
    run's command line or an audit's inputs name them as they were typed)."""
    def escape(text: str) -> str:  # as Jinja2's autoescape (markupsafe) writes it
        return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                .replace("'", "&#39;").replace('"', "&#34;"))

    target = store.absolute()
    folders = {str(target.parent), str(store.resolve().parent)}
    files = {str(target), str(store.resolve())}
    swaps = [(text, store.name) for text in sorted(files, key=len, reverse=True)]
    swaps += [(folder.rstrip("/") + "/", "") for folder in sorted(folders, key=len, reverse=True)
              if folder not in ("/", "")]
    swaps += [(folder, ".") for folder in sorted(folders, key=len, reverse=True)
              if folder not in ("/", "")]
    pairs = [(old, new) for text, new in swaps for old in {text, escape(text)}]

    def hide(html: str) -> str:
        for old, new in pairs:
            html = html.replace(old, new)
        return html

    return hide


def machine_names() -> set[str]:
    """This machine's host names and the addresses of its network interfaces."""
    import socket

    import psutil

    names = {socket.gethostname(), socket.getfqdn()}
    addresses = {address.address.split("%", 1)[0]
                 for found in psutil.net_if_addrs().values() for address in found
                 if address.family in (socket.AF_INET, socket.AF_INET6)}
    return {name for name in names | addresses if name}


def allowed_hosts(host: str, allow: Sequence[str] = ()) -> list[str]:
    """The Host headers the viewer answers: loopback, the address it is bound to (the
    machine's names and addresses when that is a wildcard) and `allow`; an IPv6 address in
    brackets, as a Host header writes it."""
    named = {*LOOPBACK, *allow, *(machine_names() if host in WILDCARDS else {host})}
    return sorted(f"[{name}]" if ":" in name else name for name in named)


class Requests:
    """The requests an app is answering, each with the event that stops its store reads
    (`interrupting`); once `stop_all` has run, a request that comes in starts stopped."""

    def __init__(self) -> None:
        self.running: set[threading.Event] = set()
        self.stopping = False
        self._lock = threading.Lock()

    def start(self) -> threading.Event:
        stop = threading.Event()
        with self._lock:
            if self.stopping:
                stop.set()
            self.running.add(stop)
        return stop

    def end(self, stop: threading.Event) -> None:
        stop.set()
        with self._lock:
            self.running.discard(stop)

    def stop_all(self) -> None:
        with self._lock:
            self.stopping = True
            for stop in self.running:
                stop.set()


def stoppable(view: Callable[[Any], Any], requests: Requests
              ) -> Callable[[Any], Awaitable[Any]]:
    """`view` run in a worker thread whose store reads stop (`interrupting`) as soon as the
    browser goes away, the request is cancelled or the server stops (`stop_requests`): an
    abandoned request neither keeps running nor stacks up, and Ctrl-C is not held up by
    one (a stopped page answers 503)."""
    import asyncio
    import sqlite3

    import anyio
    import anyio.to_thread
    from starlette.responses import Response

    async def endpoint(request: Any) -> Any:
        stop = requests.start()

        def work() -> Any:
            try:
                with interrupting(stop):
                    return view(request)
            except sqlite3.OperationalError:
                if not stop.is_set():
                    raise
                return None  # stopped: nobody is waiting for this page

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            stop.set()

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(watch)
                try:
                    done = await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
                    return done if done is not None else Response(status_code=503)
                finally:
                    group.cancel_scope.cancel()
        except asyncio.CancelledError:
            if not requests.stopping:
                raise
            return Response(status_code=503)  # cancelled as the server stops: a quiet end
        finally:
            requests.end(stop)

    return endpoint


def stop_requests(app: Any) -> None:
    """Stop every request `app` (`make_app`) is answering, and those that come in after:
    their store reads end now."""
    app.state.requests.stop_all()


def make_app(store: Path, reports: Sequence[Path] = (), host: str = "127.0.0.1",
             allow: Sequence[str] = ()) -> Any:
    """The viewer of `store` (read-only) and the audit reports beside it or in `reports`;
    `host` is the address it is bound to, `allow` more names it may be reached by (the Host
    headers it accepts: `allowed_hosts`)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, Response
    from starlette.routing import Route

    env = templates()
    store = Path(store)
    requests = Requests()
    hide = hiding_store(store)

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = hide(env.get_template(name).render(store=store.name, **context))
        return HTMLResponse(html, status_code=status)

    def failed(exc: JudgebenchError, status: int = 400) -> HTMLResponse:
        return page("error.jinja", status=status, message=str(exc))

    def one(request: Request, name: str) -> str | None:
        return request.query_params.get(name) or None

    def integer(request: Request, name: str) -> int | None:
        text = one(request, name)
        if text is None:
            return None
        if not (text.isascii() and text.isdigit()):
            raise InputError(f"a whole number, not {text[:40]!r}", field=name)
        if len(text) > MAX_DIGITS:
            raise InputError(f"a number of at most {MAX_DIGITS} digits, not one of "
                             f"{len(text)}", field=name)
        return int(text)

    def run_id(request: Request) -> int:
        """The run a path names (`/runs/RUN`); an InputError (404) for one there cannot be."""
        text = request.path_params["run"]
        if not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS + 1 \
                or int(text) > MAX_RUN_ID:
            shown = text if len(text) <= 40 else f"{text[:20]}… ({len(text)} characters)"
            raise InputError(f"no run {shown}")
        return int(text)

    def descending(request: Request) -> bool:
        return request.query_params.get("order") == "desc"

    def runs_view(request: Request) -> Response:
        try:
            data = pages.runs_page(store, outcome=one(request, "status"),
                                   metric=one(request, "metric"),
                                   since=one(request, "since"), until=one(request, "until"))
        except JudgebenchError as exc:
            return failed(exc)
        return page("runs.jinja", data=data)

    def run_view(request: Request) -> Response:
        try:
            run = run_id(request)
        except InputError as exc:
            return failed(exc, 404)
        try:
            data = pages.run_page(store, run, metric=one(request, "metric"),
                                  statuses=request.query_params.getlist("status"),
                                  item=one(request, "item"), system=one(request, "system"),
                                  sort=one(request, "sort"), descending=descending(request),
                                  page=integer(request, "page") or 1)
        except JudgebenchError as exc:
            return failed(exc, 404 if "no run" in str(exc) else 400)
        return page("run.jinja", data=data, run=data.result.run)

    def score_view(request: Request) -> Response:
        try:
            run = run_id(request)
            wanted = {name: request.query_params.get(name) for name in
                      ("signature", "item", "system")}
            missing = [name for name, value in wanted.items() if value is None]
            if missing:
                raise InputError("a score is named by its signature, item and system",
                                       field=missing[0])
            data = pages.score_page(store, run, signature=wanted["signature"] or "",
                                    item=wanted["item"] or "", system=wanted["system"] or "")
        except JudgebenchError as exc:
            return failed(exc, 404)
        return page("score.jinja", data=data, run=data.run)

    def compare_view(request: Request) -> Response:
        try:
            data = pages.compare_page(store, a=one(request, "a"), b=one(request, "b"),
                                      run_a=integer(request, "run_a"),
                                      run_b=integer(request, "run_b"),
                                      column=one(request, "column"),
                                      flips_only=request.query_params.get("flips") == "1",
                                      sort=one(request, "sort"),
                                      descending=descending(request))
        except JudgebenchError as exc:
            return failed(exc)
        return page("compare.jinja", data=data)

    def audits_view(request: Request) -> Response:
        try:
            found = pages.audit_reports(store, reports)
        except JudgebenchError as exc:
            return failed(exc)
        return page("audits.jinja", reports=found)

    def audit_view(request: Request) -> Response:
        from judgebench.render.html import CSP as REPORT_CSP
        from judgebench.render.html import render_html

        key = request.path_params["key"]
        found = [r for r in pages.audit_reports(store, reports) if r.key == key]
        if not found:
            return failed(InputError(f"no audit report {key!r} here"), 404)
        try:
            html = hide(render_html(found[0].data, links=BACK_FROM_AUDIT))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            return failed(InputError(f"not an audit report this version renders "
                                           f"({type(exc).__name__}: {exc})",
                                           path=str(found[0].path)))
        return HTMLResponse(html, headers={
            "content-security-policy": f"{REPORT_CSP}; frame-ancestors 'none'"})

    def style(request: Request) -> Response:
        return Response(CSS, media_type="text/css")

    routes = [
        Route("/", stoppable(runs_view, requests), methods=["GET"]),
        Route("/runs/{run}", stoppable(run_view, requests), methods=["GET"]),
        Route("/runs/{run}/score", stoppable(score_view, requests), methods=["GET"]),
        Route("/compare", stoppable(compare_view, requests), methods=["GET"]),
        Route("/audits", stoppable(audits_view, requests), methods=["GET"]),
        Route("/audits/{key}", stoppable(audit_view, requests), methods=["GET"]),
        Route("/style.css", style, methods=["GET"]),
    ]
    app = Starlette(routes=routes, middleware=[
        Middleware(SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host, allow))])
    app.state.requests = requests
    return app
