"""Every command's `--help` ends with 2 or 3 examples (judgebench.commands.examples), and each
example shown runs: in a fresh folder holding a copy of examples/, on the bundled data only,
exit 0. An example that needs the suites extra runs with the built-in suites' plugin loaded
(`-p judgebench_suites`) where the extra is not installed; no example may need a key or a GPU.
"""

from __future__ import annotations

import shlex
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import click
import pytest
from conftest import REPO, run_cli
from suites_support import installed, plugin_args, plugin_env

from judgebench.cli import make_cli
from judgebench.commands.examples import examples, examples_in, needs, serves

#: What an example may need, and how this test provides it.
PROVIDED = {"the suites extra"}


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of every command and subcommand under `group` (the group itself first)."""
    ctx = click.Context(group)
    found = [path]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            found += _commands(command, (*path, name))
        elif command is not None and not command.hidden:
            found.append((*path, name))
    return found


COMMANDS = _commands(make_cli(None))


def _help(path: tuple[str, ...]) -> str:
    proc = run_cli(*path, "--help")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _ids(path: tuple[str, ...]) -> str:
    return " ".join(path) or "judgebench"


def test_every_builtin_command_is_walked() -> None:
    assert {p[0] for p in COMMANDS if p} >= {"score", "meta-eval", "audit", "bench", "logs"}


@pytest.mark.parametrize("path", COMMANDS, ids=_ids)
def test_each_command_ends_with_two_or_three_examples(path: tuple[str, ...]) -> None:
    text = _help(path)
    shown = examples_in(text)
    assert 2 <= len(shown) <= 3, f"`{_ids(path)} --help` shows {len(shown)} examples"
    assert text.rstrip().splitlines()[-1].strip() == shown[-1][1], "examples come last"
    for what, line in shown:
        assert what, line
        parts = _parts(line)
        if path:  # the example's last command is this one
            assert _name(parts[-1])[: len(path)] == list(path), line
        kind = needs(what)
        assert kind is None or kind in PROVIDED, (
            f"{line!r} needs {kind}: an example runs on the bundled data, without keys or GPU")


@pytest.mark.parametrize("path", COMMANDS, ids=_ids)
def test_every_example_shown_runs(path: tuple[str, ...], tmp_path: Path) -> None:
    for number, (what, line) in enumerate(examples_in(_help(path))):
        folder = tmp_path / str(number)
        folder.mkdir()
        shutil.copytree(REPO / "examples", folder / "examples")
        extra, env = [], {}
        if needs(what) == "the suites extra" and not installed():
            extra, env = plugin_args(), plugin_env()
        parts = _parts(line)
        for index, args in enumerate(parts):
            if serves(what) and index == len(parts) - 1:
                _serve_fetch_interrupt(line, args, folder)
                continue
            proc = run_cli(*extra, *args[1:], cwd=folder, env=env)
            assert proc.returncode == 0, f"{line}\n-> exit {proc.returncode}\n{proc.stderr}"


def _serve_fetch_interrupt(line: str, args: list[str], cwd: Path) -> None:
    """Start a server's example in its own process, fetch the URL it prints (200), then
    interrupt it as Ctrl-C does: it must stop with exit 0."""
    proc = subprocess.Popen([sys.executable, "-m", "judgebench.cli", *args[1:]], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        printed = proc.stdout.readline()
        url = next((w for w in printed.split() if w.startswith("http://")), None)
        if url is None:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"{line}\n-> printed no URL: {printed!r}\n{err}")
        with urllib.request.urlopen(url, timeout=60) as page:
            assert page.status == 200, line
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, f"{line}\n-> exit {proc.returncode} after Ctrl-C\n{err}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _parts(line: str) -> list[list[str]]:
    """The commands of an example line: `judgebench ...` joined by `&&`."""
    parts: list[list[str]] = [[]]
    for word in shlex.split(line):
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    for args in parts:
        assert args and args[0] == "judgebench", f"{line!r}: every command is `judgebench ...`"
    return parts


def _name(args: list[str]) -> list[str]:
    """The command path of `judgebench ARGS` (past the group's -p/-v options)."""
    words, rest = [], iter(args[1:])
    for word in rest:
        if word in ("-p", "--plugin"):
            next(rest, None)
        elif not word.startswith("-"):
            words.append(word)
        elif words:
            break
    return words


def test_examples_format_and_parse_back() -> None:
    epilog = examples(("first one", "judgebench metrics"),
                      ("second one [needs the suites extra]", "judgebench suites"))
    command = click.Command("x", epilog=epilog)
    text = command.get_help(click.Context(command, info_name="x"))
    assert examples_in(text) == [("first one", "judgebench metrics"),
                                 ("second one [needs the suites extra]", "judgebench suites")]
    assert needs("second one [needs the suites extra]") == "the suites extra"
    assert needs("first one") is None
    assert examples_in("Usage: x\n\nOptions:\n  -h\n") == []
    with pytest.raises(ValueError, match="2 or 3"):
        examples(("only one", "judgebench metrics"))
    with pytest.raises(ValueError, match="one `judgebench"):
        examples(("a", "judgebench metrics"), ("b", "python -m judgebench metrics"))
