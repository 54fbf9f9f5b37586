"""`judgebench view`: serve a read-only web viewer of a store on 127.0.0.1 (`judgebench.view`)."""

from __future__ import annotations

from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.engine.store import DEFAULT_STORE

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
    from judgebench.view.app import make_app, stop_requests
    from judgebench.view.pages import audit_reports
    from judgebench.view.serve import address, check_allow_hosts, listen, serve

    check_allow_hosts(allow_hosts)
    runs(store_path, limit=1, readonly=True)  # a bad store is refused before serving
    audit_reports(store_path, report_dirs)
    sock = listen(host, port)
    app = make_app(store_path, report_dirs, host, allow_hosts)
    serve(app, sock, name="judgebench view", host=host, allow=allow_hosts,
          exposed="can read the store",
          ready=f"judgebench view: {store_path} at {address(host, sock)} "
                "(read-only; Ctrl-C stops)", stop=stop_requests)
