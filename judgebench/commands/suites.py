"""`judgebench suites [NAME] [--export DIR]`: the meta-evaluation suites, one suite's card, or
its samples written as `score` input with its human table."""

from __future__ import annotations

import json
from pathlib import Path

import click

from judgebench.commands.examples import examples
from judgebench.display import safe


@click.command("suites", epilog=examples(
    ("the installed suites [needs the suites extra]",
     "judgebench suites"),
    ("one suite's card: source, criteria, protocols, baselines [needs the suites extra]",
     "judgebench suites summeval"),
    ("a suite's samples and human table, to score yourself [needs the suites extra]",
     "judgebench suites summeval --export summeval"),
))
@click.argument("name", required=False)
@click.option("--suite-path", "suite_paths", multiple=True, metavar="DIR",
              type=click.Path(path_type=Path),
              help="A suite folder (or a folder of them) in the suite layout; repeatable.")
@click.option("--export", "export_dir", type=click.Path(path_type=Path, writable=True),
              metavar="DIR",
              help="With NAME: write DIR/samples.jsonl (score input, with the human "
                   "judgments) and DIR/human.jsonl (every annotator).")
@click.option("--force", is_flag=True,
              help="With --export: replace samples.jsonl and human.jsonl already in DIR.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def command(name: str | None, suite_paths: tuple[Path, ...], export_dir: Path | None,
            force: bool, as_json: bool) -> None:
    """List the suites (size, criteria, protocols, licence), or show suite NAME's card.

    Suites come from installed packages (pip install 'judgebench[suites]') and --suite-path;
    each one's checksums are verified when it is read."""
    from judgebench.cli import context_host
    from judgebench.errors import InputError
    from judgebench.render.bench import (
        listing,
        render_listing,
        render_suite_card,
        suite_card,
    )
    from judgebench.suite import available, export, load_suite, resolve

    host = context_host()

    if name is None:
        if export_dir is not None:
            raise InputError("--export writes one suite: give its NAME", field="--export")
        found = available(suite_paths, host=host)
        suites = [load_suite(*found[n]) for n in sorted(found)]
        rows = listing(suites)
        if as_json:
            click.echo(json.dumps(rows, indent=2))
        elif not rows:
            click.echo("no suites: pip install 'judgebench[suites]', or give --suite-path DIR")
        else:
            click.echo(safe(render_listing(rows)))
        return
    (suite,) = resolve(name, suite_paths, host=host)
    if export_dir is not None:
        written = export(suite, export_dir, force=force)
        for path in written.values():
            click.echo(str(path))
        return
    click.echo(json.dumps(suite_card(suite), indent=2) if as_json
               else safe(render_suite_card(suite)), nl=as_json)
