"""A real `judgebench label` process on a loopback port, for the labelling page's tests: start
it, read the address it prints once it listens, post its form, stop it."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

TOKEN = re.compile(r'name="token" value="([^"]+)"')


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def start(*args: str, cwd: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """`judgebench label ARGS` in a process of its own, and the page's URL (with its
    `?annotator=`) from the line it prints once it listens."""
    proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", "label", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    line = proc.stdout.readline() if ready else ""
    found = re.search(r"http://\S+", line)
    if found is None:
        proc.kill()
        raise AssertionError(f"no URL from judgebench label: {line!r} {proc.communicate()[1]}")
    return proc, found.group(0)


def base(url: str) -> str:
    """The server's root (the page's URL without its path and query)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def stop(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C, then what it printed on stderr; it must stop with exit 0."""
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    assert proc.returncode == 0, err
    return err


def request(url: str, *, method: str = "GET", data: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One request, redirects not followed: (status, headers, body)."""
    req = urllib.request.Request(url, method=method, data=data, headers=headers or {})
    try:
        with OPENER.open(req, timeout=60) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, \
                resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read().decode()


def token(page: str) -> str:
    found = TOKEN.search(page)
    assert found is not None, page[:500]
    return found.group(1)


def post(root: str, fields: dict[str, str], *, headers: dict[str, str] | None = None
         ) -> tuple[int, dict[str, str], str]:
    """The page's form posted to `/save` as a browser on the page sends it."""
    sent = {"Content-Type": "application/x-www-form-urlencoded", "Origin": root,
            **(headers or {})}
    return request(root + "/save", method="POST",
                   data=urllib.parse.urlencode(fields).encode(), headers=sent)
