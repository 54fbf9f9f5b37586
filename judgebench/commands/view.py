"""`judgebench view`: serve a read-only web viewer of a store on 127.0.0.1 (`judgebench.view`)."""

from __future__ import annotations

import contextlib
import socket
import sys
from pathlib import Path
from typing import Any

import click

from judgebench.commands.examples import examples
from judgebench.engine.store import DEFAULT_STORE
from judgebench.errors import InputError

DEFAULT_PORT = 7731


@click.command("view", epilog=examples(
    ("score 8 rows into runs.db, then browse it on a free port [serves until Ctrl-C]",
     "judgebench score examples/summeval-sample.jsonl -m lexical.bleu --limit 8 -o scores.csv "
     "--store runs.db && judgebench view --store runs.db --port 0"),
    ("an audit's JSON report beside the store, listed on the viewer's Audits page "
     "[serves until Ctrl-C]",
     "judgebench score examples/summeval-sample.jsonl -m lexical.chrf --limit 8 -o scores.csv "
     "--store runs.db && judgebench audit scores.csv --human human.coherence --store runs.db "
     "--bootstrap 100 --resamples 100 --report audit.json && judgebench view --store runs.db "
     "--port 0"),
))
@click.option("--store", "store_path", default=DEFAULT_STORE, show_default=True,
              type=click.Path(path_type=Path), help="The SQLite store `score` wrote.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (anything but loopback shows the store to others).")
@click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME",
              help="Another name or address browsers reach the viewer by (the Host header "
                   "it answers; loopback, the --host address and, with a wildcard --host, "
                   "this machine's names and addresses always); repeatable.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT,
              show_default=True, help="Port to listen on; 0 picks a free one.")
@click.option("--reports", "report_dirs", multiple=True,
              type=click.Path(path_type=Path, file_okay=False),
              help="Another folder of audit reports (JSON) to list; repeatable. The store's "
                   "own folder is always read.")
def command(store_path: Path, host: str, allow_hosts: tuple[str, ...], port: int,
            report_dirs: tuple[Path, ...]) -> None:
    """Browse a store in the browser: runs, scores, judge prompts and answers, comparisons
    and audit reports. Read-only."""
    from judgebench.extras import require

    require("judgebench view", "view", "starlette", "jinja2", "uvicorn", "psutil")
    from judgebench.services.runs import runs
    from judgebench.view.app import (
        LOOPBACK,
        WILDCARDS,
        allowed_hosts,
        make_app,
        stop_requests,
    )
    from judgebench.view.pages import audit_reports

    for name in allow_hosts:
        if not name or any(c in name for c in "/ *?#@"):
            raise InputError(f"a host name or address, not {name!r}", field="--allow-host")
    runs(store_path, limit=1, readonly=True)  # a bad store is refused before serving
    audit_reports(store_path, report_dirs)
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
    bound_port = sock.getsockname()[1]
    if host not in LOOPBACK:
        click.echo(f"judgebench view: listening on {host}, not loopback: whoever reaches this "
                   "machine can read the store (no login, no TLS)", err=True)
    import uvicorn

    from judgebench.engine import progress_line

    progress_line.quiet()  # a server is silent while it waits for browsers
    app = make_app(store_path, report_dirs, host, allow_hosts)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", server_header=False,
                            access_log=False, timeout_graceful_shutdown=1)

    class Server(uvicorn.Server):
        """Ctrl-C stops the pages being read at once (no request holds the shutdown up);
        one still running a second later is cancelled."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            stop_requests(app)
            super().handle_exit(sig, frame)

    if host in WILDCARDS:
        click.echo("judgebench view: answering the names " + ", ".join(allowed_hosts(
            host, allow_hosts)) + " (--allow-host NAME for another)", err=True)
    shown = f"[{host}]" if ":" in host else host
    # uvicorn raises Ctrl-C again once it has shut down (and a Ctrl-C may come before it
    # listens for one): stopping is the normal way out
    with contextlib.suppress(KeyboardInterrupt):
        click.echo(f"judgebench view: {store_path} at http://{shown}:{bound_port}/ "
                   "(read-only; Ctrl-C stops)")
        sys.stdout.flush()
        Server(config).run(sockets=[sock])
    click.echo("judgebench view: stopped")
