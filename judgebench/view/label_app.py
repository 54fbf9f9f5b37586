"""The labelling page's web app (`judgebench label`): Starlette routes over
`judgebench.view.label_pages`, the viewer's templates, headers and Host check (app.py).

The only write is a label: one POST route, `/save` (answer, can't tell, skip, or undo the
last), and it is refused (403) unless it carries this server's token (a random value drawn
when it starts, in every form it serves) and, when the browser says where it comes from
(`Origin`, `Sec-Fetch-Site`), comes from this page's own origin: a page elsewhere cannot
post a label. Bodies are urlencoded forms of at most MAX_BODY bytes. The item page runs one
script, this app's own `/label.js` (the keys), under a policy that allows no other; the
other pages run none. Every text from the input or the store is escaped (Jinja2's
autoescape): an output holding `<script>` is shown as text.

Annotators: the page labels as `?annotator=NAME`, else the command's `--annotator`, so
several people may label one session at once, each in their own browser (or tab) with
their own name; each save is its own transaction.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from judgebench.engine.labels import check_name
from judgebench.engine.store import StoreBusy
from judgebench.errors import InputError, JudgebenchError
from judgebench.services.label_session import LabelSession
from judgebench.view import label_pages
from judgebench.view.app import (
    CSS,
    MAX_DIGITS,
    Requests,
    SecurityHeaders,
    allowed_hosts,
    hiding_store,
    stoppable,
    templates,
    url,
)

#: The item page's policy: the viewer's, and this app's own script.
LABEL_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
             "form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
MAX_BODY = 256 * 1024
#: Seconds between two loads of the agreement page.
REFRESH_S = 5

LABEL_CSS = """
.criterion{background:#f6f8fa;border:1px solid #d0d7de;padding:6px 10px;margin:6px 0}
.progress{color:#57606a;margin:4px 0}
.texts section{margin:10px 0}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:16px}
form.answer fieldset{border:1px solid #d0d7de;margin:10px 0;padding:8px}
form.answer label.option{display:inline-block;margin:4px 12px 4px 0;font-size:15px}
kbd{font-family:ui-monospace,monospace;border:1px solid #d0d7de;border-radius:3px;
padding:0 4px;background:#f6f8fa;font-size:12px}
textarea{width:100%;box-sizing:border-box;min-height:60px;font:inherit}
.buttons button{margin-right:8px}
.keys{color:#57606a;font-size:12px}
.revealed{border:2px solid #bf8700;padding:6px 10px;margin:10px 0}
.saved-mark{color:#1a7f37}
"""

#: The keys of the item page; nothing happens while typing in a text field but Ctrl-Enter
#: (save) and Escape (leave the field).
LABEL_JS = r"""
"use strict";
(function () {
  const form = document.getElementById("answer");
  if (!form) { return; }
  let sent = false;
  function send(action) {
    if (sent) { return; }
    const button = form.querySelector('button[value="' + action + '"]');
    if (action === "answer" && !form.querySelector("input[name=value]:checked")
        && !form.querySelector("input[type=number][name=value]")) {
      document.getElementById("hint").textContent = "Choose an answer first.";
      return;
    }
    sent = true;
    form.requestSubmit(button);
  }
  function follow(id) {
    const link = document.getElementById(id);
    if (link && !sent) { sent = true; link.click(); }
  }
  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.metaKey || event.isComposing) { return; }
    const target = event.target;
    const typing = target && (target.tagName === "TEXTAREA"
      || (target.tagName === "INPUT" && target.type !== "radio"));
    if (typing) {
      if (event.key === "Escape") { target.blur(); }
      else if (event.key === "Enter" && (event.ctrlKey || target.tagName === "INPUT")) {
        event.preventDefault(); send("answer");
      }
      return;
    }
    if (event.ctrlKey) { return; }
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    const option = /^[0-9a-z]$/.test(key)
      ? form.querySelector('input[data-key="' + key + '"]') : null;
    if (option) { option.checked = true; event.preventDefault(); return; }
    const actions = {"Enter": function () { send("answer"); },
                     "c": function () { send("cant_tell"); },
                     "s": function () { send("skip"); },
                     "u": function () {
                       if (!sent) { sent = true; document.getElementById("undo").requestSubmit(); }
                     },
                     "j": function () { follow("next"); },
                     "k": function () { follow("previous"); },
                     "r": function () { follow("reveal"); },
                     "e": function () { document.getElementById("critique").focus(); }};
    if (Object.prototype.hasOwnProperty.call(actions, key)) {
      event.preventDefault();
      actions[key]();
    }
  });
  document.body.dataset.keys = "ready";
})();
"""


def make_label_app(session: LabelSession, *, host: str = "127.0.0.1",
                   allow: tuple[str, ...] | list[str] = (), default_annotator: str,
                   reveal: bool = False, bootstrap: int = 200,
                   token: str | None = None) -> Any:
    """The labelling page of `session`; `host` is the address it is bound to, `allow` more
    names it may be reached by (`app.allowed_hosts`); `reveal`: show what is hidden from
    the start (a calibration session); `bootstrap`: resamples of the agreement page's
    intervals; `token`: the value every POST must carry (default: a new random one)."""
    from pathlib import Path

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, RedirectResponse, Response
    from starlette.routing import Route

    env = templates()
    env.globals["zip"] = zip
    store = Path(session.store)
    hide = hiding_store(store)
    requests = Requests()
    secret = token or secrets.token_urlsafe(32)
    agreement = label_pages.Agreement(session, bootstrap=bootstrap)

    def page(name: str, status: int = 200, script: bool = False, **context: Any
             ) -> HTMLResponse:
        html = hide(env.get_template(name).render(store=store.name, session=session,
                                                  crit=session.criterion, **context))
        headers = {"referrer-policy": "same-origin"}  # a same-origin post names its Origin
        if script:
            headers["content-security-policy"] = LABEL_CSP
        return HTMLResponse(html, status_code=status, headers=headers)

    def failed(exc: JudgebenchError, status: int = 400, annotator: str | None = None
               ) -> HTMLResponse:
        return page("label_error.jinja", status=status, message=str(exc),
                    annotator=annotator or default_annotator)

    def annotator_of(params: Any) -> str:
        name = params.get("annotator") or default_annotator
        return check_name(name[:200], "annotator")

    def position_of(text: str) -> int:
        if not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS:
            raise InputError(f"no item {text[:40]!r}", field="position")
        return int(text)

    def go(annotator: str, after: int = 0) -> str:
        found = label_pages.first_open(session, annotator, after)
        if found is None:
            return url("/done", annotator=annotator)
        return url(f"/item/{found}", annotator=annotator)

    def start(request: Request) -> Response:
        try:
            annotator = annotator_of(request.query_params)
            return RedirectResponse(go(annotator), status_code=303)
        except JudgebenchError as exc:
            return failed(exc)

    def item_view(request: Request) -> Response:
        try:
            annotator = annotator_of(request.query_params)
        except JudgebenchError as exc:
            return failed(exc)
        try:
            position = position_of(request.path_params["position"])
            data = label_pages.item_page(session, annotator=annotator, position=position,
                                         reveal=request.query_params.get("reveal") == "1",
                                         reveal_all=reveal)
        except InputError as exc:
            return failed(exc, 404, annotator)
        return page("label.jinja", script=True, data=data, token=secret, annotator=annotator,
                    said=request.query_params.get("said"), error=None)

    def done_view(request: Request) -> Response:
        try:
            annotator = annotator_of(request.query_params)
        except JudgebenchError as exc:
            return failed(exc)
        left = label_pages.first_open(session, annotator)
        return page("label_done.jinja", annotator=annotator, left=left,
                    total=len(session.tasks), token=secret)

    def agreement_view(request: Request) -> Response:
        try:
            result = agreement.result()
        except JudgebenchError as exc:
            return failed(exc)
        return page("agreement.jinja", result=result, refresh=REFRESH_S,
                    annotator=default_annotator)

    async def save_view(request: Request) -> Response:
        import anyio.to_thread

        refused = _refused(request, secret)
        if refused is not None:
            return Response(refused[1], status_code=refused[0], media_type="text/plain")
        body = await _body(request)
        if isinstance(body, Response):
            return body
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(form.get("token", "").encode(), secret.encode()):
            return Response("refused: this form is not from this labelling page (a stale "
                            "page from before a restart? load it again)", status_code=403,
                            media_type="text/plain")
        return await anyio.to_thread.run_sync(lambda: _save(form))

    def _save(form: dict[str, str]) -> Response:
        try:
            annotator = annotator_of(form)
        except JudgebenchError as exc:
            return failed(exc)
        action = form.get("action", "answer")
        try:
            if action == "undo":
                task = label_pages.undo(session, annotator=annotator)
                if task is None:
                    back = form.get("position", "")
                    target = f"/item/{position_of(back)}" if back else "/"
                    return RedirectResponse(url(target, annotator=annotator, said="nothing"),
                                            status_code=303)
                return RedirectResponse(url(f"/item/{task.position}", annotator=annotator,
                                            said="undone"), status_code=303)
            position = position_of(form.get("position", ""))
            label_pages.save(session, annotator=annotator, position=position, action=action,
                             value=form.get("value"), critique=form.get("critique"),
                             order=form.get("order"))
        except StoreBusy as exc:
            return failed(exc, 503, annotator)
        except InputError as exc:
            return _again(form, annotator, exc)
        return RedirectResponse(go(annotator, position), status_code=303)

    def _again(form: dict[str, str], annotator: str, exc: InputError) -> Response:
        """The item's page again with what was wrong (nothing was saved)."""
        try:
            position = position_of(form.get("position", ""))
            data = label_pages.item_page(session, annotator=annotator, position=position,
                                         reveal_all=reveal)
        except InputError:
            return failed(exc, 400, annotator)
        said = f"{exc.field}: {exc.detail}" if exc.field else exc.detail
        return page("label.jinja", status=400, script=True, data=data, token=secret,
                    annotator=annotator, said=None, error=said)

    def style(request: Request) -> Response:
        return Response(CSS + LABEL_CSS, media_type="text/css")

    def script(request: Request) -> Response:
        return Response(LABEL_JS, media_type="text/javascript")

    def get(view: Callable[[Any], Any]) -> Callable[[Any], Any]:
        return stoppable(view, requests)

    routes = [
        Route("/", get(start), methods=["GET"]),
        Route("/item/{position}", get(item_view), methods=["GET"]),
        Route("/done", get(done_view), methods=["GET"]),
        Route("/agreement", get(agreement_view), methods=["GET"]),
        Route("/save", save_view, methods=["POST"]),
        Route("/style.css", style, methods=["GET"]),
        Route("/label.js", script, methods=["GET"]),
    ]
    app = Starlette(routes=routes, middleware=[
        Middleware(SecurityHeaders),
        Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host, allow))])
    app.state.requests = requests
    app.state.token = secret
    return app


def _refused(request: Any, token: str) -> tuple[int, str] | None:
    """Why a POST is refused before its body is read (status, text), or None: from another
    origin, or not a form."""
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    if origin is not None and origin != f"http://{host}":
        return 403, "refused: a post from another origin"
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return 403, "refused: a cross-site post"
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return 415, "refused: a label is posted as a form (application/x-www-form-urlencoded)"
    return None


async def _body(request: Any) -> bytes | Any:
    """The request's body, or a 413 response past MAX_BODY bytes."""
    from starlette.responses import Response

    size = request.headers.get("content-length")
    if size is not None and (not size.isdigit() or int(size) > MAX_BODY):
        return Response("refused: too large a form", status_code=413, media_type="text/plain")
    chunks, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY:
            return Response("refused: too large a form", status_code=413,
                            media_type="text/plain")
        chunks.append(chunk)
    return b"".join(chunks)


def stop_label_requests(app: Any) -> None:
    """Stop every page `app` (`make_label_app`) is reading (a save in flight finishes or
    rolls back: it is one transaction)."""
    app.state.requests.stop_all()
