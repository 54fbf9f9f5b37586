"""Serving a viewer app (`judgebench view`, `judgebench label`): the listening socket bound
before anything is served (a taken port or an unknown host is an InputError), the loud
warning when the address is not loopback, and uvicorn run until Ctrl-C, which stops the
pages being read at once."""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from judgebench.errors import InputError


def check_allow_hosts(names: Sequence[str]) -> None:
    """`--allow-host` values: host names or addresses, no wildcards or URLs."""
    for name in names:
        if not name or any(c in name for c in "/ *?#@"):
            raise InputError(f"a host name or address, not {name!r}", field="--allow-host")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host`:`port` (0: a free port), or an InputError naming the
    option."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise InputError(f"cannot resolve {host!r} ({exc.strerror})", field="--host") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InputError(f"cannot listen on {host}:{port} ({exc.strerror})",
                         field="--port") from None
    return sock


def address(host: str, sock: socket.socket) -> str:
    """The URL of the server on `sock` (an IPv6 address in brackets)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}/"


def serve(app: Any, sock: socket.socket, *, name: str, host: str, allow: Sequence[str],
          exposed: str, ready: str, stop: Callable[[Any], None]) -> None:
    """Run `app` on `sock` under uvicorn until Ctrl-C. `name` starts every line printed;
    `exposed` says (on stderr) what whoever reaches a non-loopback `host` can do; `ready` is
    printed on stdout once it listens (the line a script or a test reads the address
    from); `stop(app)` stops the requests being answered when Ctrl-C comes."""
    import uvicorn

    from judgebench.engine import progress_line
    from judgebench.view.app import LOOPBACK, WILDCARDS, allowed_hosts

    if host not in LOOPBACK:
        click.echo(f"{name}: listening on {host}, not loopback: whoever reaches this machine "
                   f"{exposed} (no login, no TLS)", err=True)
    progress_line.quiet()  # a server is silent while it waits for browsers
    config = uvicorn.Config(app, log_level="warning", lifespan="off", server_header=False,
                            access_log=False, timeout_graceful_shutdown=1)

    class Server(uvicorn.Server):
        """Ctrl-C stops the pages being read at once (no request holds the shutdown up);
        one still running a second later is cancelled."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            stop(app)
            super().handle_exit(sig, frame)

    if host in WILDCARDS:
        click.echo(f"{name}: answering the names " + ", ".join(allowed_hosts(host, allow))
                   + " (--allow-host NAME for another)", err=True)
    # uvicorn raises Ctrl-C again once it has shut down (and a Ctrl-C may come before it
    # listens for one): stopping is the normal way out
    with contextlib.suppress(KeyboardInterrupt):
        click.echo(ready)
        sys.stdout.flush()
        Server(config).run(sockets=[sock])
    click.echo(f"{name}: stopped")
