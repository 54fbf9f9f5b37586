"""What `judgebench --version` and `--help` load before they answer: no plugin host, so no
numpy, pandas or plugin module, while the help still lists every command a plugin adds (the
built-in plugins add none; an installed third-party one brings the host back). Their CPU time
is measured in benchmarks/bench_cli_startup.py, not here."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

from judgebench import cli
from judgebench.plugins import build_host

HEAVY = ("numpy", "pandas", "pydantic", "judgebench.plugins", "judgebench.registry",
         *sorted(module for _, module in cli.BUILTIN_PLUGINS))

PROBE = textwrap.dedent("""
    import json, sys
    from judgebench.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
""")


def _modules_loaded(*args: str) -> tuple[str, set[str]]:
    """The output of `judgebench ARGS` in a fresh interpreter, and the modules it had loaded
    (a bare `judgebench` writes its help to stderr)."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, check=True)
    *err, modules = proc.stderr.strip().splitlines()
    return proc.stdout + "\n".join(err), set(json.loads(modules))


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("-h",), ()],
                         ids=["version", "help", "h", "bare"])
def test_version_and_help_load_no_plugin(args: tuple[str, ...]) -> None:
    stdout, loaded = _modules_loaded(*args)
    assert "judgebench" in stdout
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_a_command_still_builds_the_host() -> None:
    _, loaded = _modules_loaded("metrics")
    assert {"judgebench.plugins", "judgebench_lexical"} <= loaded


def test_the_builtin_plugins_are_those_installed_and_register_no_command() -> None:
    """BUILTIN_PLUGINS names the entry points judgebench's own distributions declare, and
    none of them implements `register_commands` (else the hostless help would miss it)."""
    ours = {(ep.name, ep.value) for ep in importlib.metadata.entry_points(group="judgebench")
            if ep.dist is not None and ep.dist.name in ("judgebench", "judgebench-suites")}
    assert ours == set(cli.BUILTIN_PLUGINS)
    host = build_host()
    registering = {impl.plugin_name for impl in host.pm.hook.register_commands.get_hookimpls()}
    assert not registering & {name for name, _ in cli.BUILTIN_PLUGINS}


def _commanding_plugin(site: Path) -> Path:
    """A distribution on `site` whose plugin registers the command `hello`."""
    site.mkdir()
    (site / "jb_hello.py").write_text(textwrap.dedent('''
        import click
        from judgebench.plugin_api import hookimpl

        @hookimpl
        def register_commands(cli):
            @cli.command("hello", help="Say hello from a plugin.")
            def hello():
                click.echo("hello")
    '''), encoding="utf-8")
    info = site / "jb_hello-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: jb-hello\nVersion: 1.0\n",
                                   encoding="utf-8")
    (info / "entry_points.txt").write_text("[judgebench]\nhello = jb_hello\n", encoding="utf-8")
    return site


def test_help_lists_a_third_party_plugins_command(tmp_path: Path) -> None:
    site = _commanding_plugin(tmp_path / "site")
    with_plugin = run_cli("--help", env={"PYTHONPATH": str(site)})
    assert with_plugin.returncode == 0, with_plugin.stderr
    assert "hello" in with_plugin.stdout and "Say hello from a plugin." in with_plugin.stdout
    without = run_cli("--help")
    assert without.returncode == 0 and "hello" not in without.stdout
    assert "score" in without.stdout and "meta-eval" in without.stdout
