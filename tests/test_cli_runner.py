"""`run_cli` (in this interpreter) answers as `run_cli_process` (a fresh one) does, and one
call leaves nothing behind for the next: environment, working directory, sys.path, modules a
`-p` file or a `PYTHONPATH` entry brought, registered secret variables, logging handlers and
the run settings; the module's command group keeps its commands (each call has a group of its
own: tests/test_host_per_call.py)."""

from __future__ import annotations

import logging
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import LOCAL_PLUGIN_PREFIX, run_cli, run_cli_process

from judgebench import redact
from judgebench.cli import cli
from judgebench.engine import runtime

LEAKY_PLUGIN = '''
import logging
import os

import click

from judgebench import redact
from judgebench.engine import runtime
from judgebench.hookspecs import hookimpl


@hookimpl
def register_commands(cli):
    @cli.command("leaky")
    def leaky():
        """Change every piece of process state a command could change."""
        os.environ["JB_LEAKED"] = "1"
        os.chdir(os.environ["JB_ELSEWHERE"])
        redact.register_secret_env("JB_LEAKED_SECRET_NAME")
        logging.getLogger("judgebench").addHandler(logging.StreamHandler())
        logging.getLogger("judgebench.leaky.new").addHandler(logging.StreamHandler())
        runtime._current.set(runtime.RunSettings(dry_run=True))
        click.echo(f"leaked in {os.getcwd()}")
        click.echo("and on stderr", err=True)
'''


def _state() -> dict[str, Any]:
    with redact._registered_lock:
        secrets = frozenset(redact._registered)
    judgebench_logger = logging.getLogger("judgebench")
    return {
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "path": list(sys.path),
        "local modules": sorted(m for m in sys.modules if m.startswith(LOCAL_PLUGIN_PREFIX)),
        "commands": sorted(cli.commands),
        "secrets": secrets,
        "handlers": list(judgebench_logger.handlers),
        "dry run": runtime.current().dry_run,
    }


@pytest.mark.parametrize("args", [
    ("metrics", "--json"),
    ("-p", "no_such_plugin_file.py", "metrics"),  # InputError: 2
    ("score", "no_such_input.jsonl", "-m", "lexical.bleu"),
    ("no-such-command",),  # click's usage error: 2
    ("metrics", "--no-such-option"),
], ids=["ok", "missing-plugin", "missing-input", "unknown-command", "unknown-option"])
def test_in_process_answers_as_a_fresh_interpreter(tmp_path: Path, args: tuple[str, ...]) -> None:
    here, there = run_cli(*args, cwd=tmp_path), run_cli_process(*args, cwd=tmp_path)
    assert (here.returncode, here.stdout, here.stderr) == (
        there.returncode, there.stdout, there.stderr)


def test_exit_codes_are_those_of_main(tmp_path: Path) -> None:
    assert run_cli("metrics").returncode == 0
    missing = run_cli("-p", str(tmp_path / "nope.py"), "metrics")
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.startswith("Error: plugin file not found")


def test_an_escaping_exception_is_a_traceback_and_exit_1(tmp_path: Path) -> None:
    plugin = tmp_path / "crash.py"
    plugin.write_text(textwrap.dedent('''
        from judgebench.hookspecs import hookimpl

        @hookimpl
        def register_commands(cli):
            @cli.command("crash")
            def crash():
                raise KeyError("no such thing")
    '''), encoding="utf-8")
    proc = run_cli("-p", str(plugin), "crash")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Traceback (most recent call last):")
    assert proc.stderr.rstrip().endswith("KeyError: 'no such thing'")


def test_one_call_leaves_no_state_behind(tmp_path: Path) -> None:
    plugin = tmp_path / "leaky_plugin.py"
    plugin.write_text(LEAKY_PLUGIN, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    before = _state()
    proc = run_cli("-p", str(plugin), "leaky", cwd=tmp_path,
                   env={"JB_ELSEWHERE": str(elsewhere)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"leaked in {elsewhere}\n" and proc.stderr == "and on stderr\n"
    assert _state() == before
    assert logging.getLogger("judgebench.leaky.new").handlers == []
    gone = run_cli("leaky")  # the plugin's command left with its call
    assert gone.returncode == 2 and "No such command 'leaky'" in gone.stderr


def test_cwd_and_env_hold_for_the_call(tmp_path: Path) -> None:
    data = tmp_path / "in.jsonl"
    data.write_text('{"item": "1", "system": "a", "output": "x"}\n', encoding="utf-8")
    proc = run_cli("score", "in.jsonl", "-m", "lexical.length", "--store", "s.db",
                   cwd=tmp_path, env={"JUDGEBENCH_LOAD_PLUGINS": "lexical"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "s.db").is_file()  # relative to the call's cwd
    assert "JUDGEBENCH_LOAD_PLUGINS" not in os.environ


def _distribution(site: Path, version: str) -> Path:
    """A distribution `jb-same` (module `jb_same`) whose one metric is named by `version`."""
    site.mkdir()
    (site / "jb_same.py").write_text(textwrap.dedent(f'''
        from judgebench.hookspecs import hookimpl
        from judgebench.metric import Metric
        from judgebench.models import MetricInfo

        class Same(Metric):
            info = MetricInfo(name="same.v{version}", kind="reference", requires=("output",))

            def score(self, samples):
                return [1.0 for _ in samples]

        @hookimpl
        def register_metrics(register):
            register(Same)
    '''), encoding="utf-8")
    info = site / f"jb_same-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: jb-same\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[judgebench]\nsame = jb_same\n", encoding="utf-8")
    return site


def test_pythonpath_is_on_the_path_for_the_call_only(tmp_path: Path) -> None:
    one, two = _distribution(tmp_path / "one", "1"), _distribution(tmp_path / "two", "2")
    first = run_cli("metrics", env={"PYTHONPATH": str(one)})
    second = run_cli("metrics", env={"PYTHONPATH": str(two)})
    neither = run_cli("metrics")
    assert first.returncode == second.returncode == neither.returncode == 0
    assert "same.v1" in first.stdout and "same.v2" not in first.stdout
    assert "same.v2" in second.stdout and "same.v1" not in second.stdout  # not the cached one
    assert "same." not in neither.stdout
    assert "jb_same" not in sys.modules and str(one) not in sys.path
