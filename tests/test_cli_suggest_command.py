"""A misspelt command gets a "did you mean" (judgebench.suggest's rule), exit 2, like a
misspelt metric or option; the commands a `-p` plugin registers are candidates too."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli, run_cli_process

PLUGIN = '''
import click

from judgebench.hookspecs import hookimpl


@click.command("frobnicate")
def frobnicate():
    """Frobnicate."""
    click.echo("frobnicated")


@hookimpl
def register_commands(cli):
    cli.add_command(frobnicate)
'''


@pytest.mark.parametrize(("typed", "meant"), [
    ("scroe", "score"),
    ("metric", "metrics"),
    ("meta_eval", "meta-eval"),
    ("Audit", "audit"),
    ("comparejudges", "compare-judges"),
    ("run", "runs"),
])
def test_a_misspelt_command_gets_the_one_it_meant(typed: str, meant: str) -> None:
    proc = run_cli(typed)
    assert proc.returncode == 2
    assert f"Error: No such command '{typed}'. Did you mean '{meant}'?" in proc.stderr


def test_nothing_close_gets_no_suggestion() -> None:
    proc = run_cli("zzzzqq", "--x")
    assert proc.returncode == 2
    assert "Error: No such command 'zzzzqq'.\n" in proc.stderr
    assert "Did you mean" not in proc.stderr


def test_a_plugin_command_is_a_candidate(tmp_path: Path) -> None:
    plugin = tmp_path / "frob_plugin.py"
    plugin.write_text(PLUGIN, encoding="utf-8")
    proc = run_cli("-p", str(plugin), "frobnicat")
    assert proc.returncode == 2
    assert "No such command 'frobnicat'. Did you mean 'frobnicate'?" in proc.stderr
    assert run_cli("-p", str(plugin), "frobnicate").stdout == "frobnicated\n"
    without = run_cli("frobnicat")
    assert without.returncode == 2 and "frobnicate" not in without.stderr.replace(
        "'frobnicat'", "")


def test_a_user_sees_it_from_a_fresh_interpreter() -> None:
    proc = run_cli_process("scroe")
    assert proc.returncode == 2
    assert "Did you mean 'score'?" in proc.stderr and "Usage: judgebench" in proc.stderr
