"""Every command checks every path it writes against every other path it is given (issue 36).

The commands are read from the click definitions (`judgebench.cli`'s group, walked): a path
option whose type is `click.Path(writable=True)` is one the command writes. For each such
option W of each command, and each other path parameter P of that command, the command is
run with W and P naming one file (for a folder P, a file in it; for a folder W, a file the
command writes in it): it must exit 2 before any work, naming both options, and leave the
file as it was. A new command, or a new path option, is covered without editing this file;
one whose required arguments this file cannot fill fails until `REQUIRED` says how.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from conftest import run_cli
from suites_support import NAME, suite

from judgebench.cli import cli

#: Parameters that name a file but are not a click.Path (INPUT may be a URI under Ray).
TEXT_PATHS = {("score", "input_path")}
#: A folder a command writes into: the file of it that the command writes.
WRITES_IN_FOLDER = {("bench", "workdir"): f"{NAME}/scores.csv",
                    ("suites", "export_dir"): "samples.jsonl"}
#: A folder a command reads: a file in it.
READS_FOLDER = {("bench", "suite_paths"): f"{NAME}/suite.json",
                ("suites", "suite_paths"): f"{NAME}/suite.json"}
#: How to fill a command's required parameters that are not paths ({SUITES}: a suite folder).
REQUIRED = {
    "score": ["-m", "lexical.length"],
    "bench": ["lexical.length", "--suite", NAME, "--bootstrap", "0"],
    "combine": ["--human", "human.quality", "--metric", "m"],
    "audit": ["--human", "human.quality"],
    "suites": [NAME],
    "labels import": ["--criterion", "c", "--annotator", "a", "--scale", "1-5"],
    "label": ["--criterion", "c", "--annotator", "a", "--scale", "1-5", "--port", "0"],
    "fit": ["--human", "h"],
}
#: Required arguments that come after the paths (a positional one after INPUT).
REQUIRED_AFTER = {"fit": ["judge.rubric"]}


def commands() -> Iterator[tuple[str, click.Command]]:
    ctx = click.Context(cli)
    stack: list[tuple[str, click.Group]] = [("", cli)]
    while stack:
        prefix, group = stack.pop()
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if isinstance(command, click.Group):
                stack.append((f"{prefix}{name} ", command))
            elif command is not None:
                yield f"{prefix}{name}", command


def path_params(name: str, command: click.Command) -> list[click.Parameter]:
    return [p for p in command.params
            if isinstance(p.type, click.Path) or (name, p.name) in TEXT_PATHS]


def writes(param: click.Parameter) -> bool:
    return isinstance(param.type, click.Path) and bool(param.type.writable)


def pairs() -> Iterator[tuple[str, str, str]]:
    for name, command in commands():
        params = path_params(name, command)
        for written, other in itertools.permutations(params, 2):
            if writes(written):
                yield name, str(written.name), str(other.name)


PAIRS = list(pairs())


def test_the_commands_that_write_are_found() -> None:
    """The walk finds the writing options this issue names (a walk that found none would
    make the test below vacuous)."""
    found = {(name, w) for name, w, _ in PAIRS}
    for expected in [("score", "output"), ("score", "store_path"), ("score", "cache_path"),
                     ("score", "corpus_path"), ("bench", "output"), ("bench", "store_path"),
                     ("bench", "cache_path"), ("bench", "workdir"), ("combine", "out"),
                     ("audit", "reports"), ("suites", "export_dir")]:
        assert expected in found, expected


#: Option spellings that always name something a command writes.
OUTPUT_SPELLINGS = {"-o", "--output", "--out", "--report", "--export", "--workdir"}


def test_an_option_spelt_as_an_output_is_marked_as_written() -> None:
    """A new `-o`/`--report`/`--export`/`--workdir` that is not `click.Path(writable=True)`
    would escape the test below: it fails here instead."""
    for name, command in commands():
        for param in command.params:
            if OUTPUT_SPELLINGS & set(param.opts):
                assert writes(param), f"{name} {param.opts}: type=click.Path(writable=True)"


def spelling(param: click.Parameter) -> list[str]:
    """How an error may name the parameter: its option strings, or an argument's metavar."""
    if isinstance(param, click.Argument):
        return [param.human_readable_name.strip("."), str(param.name).upper()]
    return list(param.opts)


def argv(param: click.Parameter, value: str) -> list[str]:
    return [value] if isinstance(param, click.Argument) else [param.opts[0], value]


def values(name: str, written: str, other: str, tmp_path: Path, suites: Path
           ) -> tuple[Path, Path]:
    """The values of `written` and `other` that make them one file (or one file in a folder
    the other names)."""
    into, reads = WRITES_IN_FOLDER.get((name, written)), READS_FOLDER.get((name, other))
    writes_into = WRITES_IN_FOLDER.get((name, other))
    if into is not None and reads is not None:  # written into the suite's own folder
        target = suites / NAME / Path(into).name  # a file the suite lists
        return Path(str(target)[:-len(into)]), suites
    if into is not None:
        return tmp_path / "w", tmp_path / "w" / into
    if writes_into is not None:
        return tmp_path / "w" / writes_into, tmp_path / "w"
    if reads is not None:
        return suites / reads, suites
    same = tmp_path / "same.db"
    same.write_bytes(b"")  # an empty file: a database, a table or a report may all be here
    return same, same


@pytest.mark.parametrize(("name", "written", "other"), PAIRS,
                         ids=[f"{n}:{w}={o}" for n, w, o in PAIRS])
def test_each_written_path_is_checked_against_each_other_path(
        tmp_path: Path, name: str, written: str, other: str) -> None:
    command = dict(commands())[name]
    params = {str(p.name): p for p in path_params(name, command)}
    suites = tmp_path / "suites"
    # the suite lists files with the names a folder option writes, so that writing into its
    # own folder would replace one
    suite(suites, extra={Path(f).name: b"kept\n" for f in WRITES_IN_FOLDER.values()})
    w_value, o_value = values(name, written, other, tmp_path, suites)
    args = [*argv(params[written], str(w_value)), *argv(params[other], str(o_value))]
    for param in params.values():  # the other required paths: files of their own
        if param.required and param.name not in (written, other):
            args += argv(param, str(tmp_path / f"{param.name}.csv"))
    if name in ("bench", "suites") and "suite_paths" not in (written, other):
        args += ["--suite-path", str(suites)]
    files = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    before = [p.read_bytes() for p in files]
    proc = run_cli(*name.split(), *REQUIRED.get(name, []), *args,  # a subcommand: two words
                   *REQUIRED_AFTER.get(name, []))
    assert proc.returncode == 2, (args, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    message = proc.stderr.strip().splitlines()[-1]
    assert "same file" in message or "would be inside" in message, message
    assert any(s in message for s in spelling(params[written])), message
    assert any(s in message for s in spelling(params[other])), message
    assert sorted(p for p in tmp_path.rglob("*") if p.is_file()) == files  # nothing new
    assert [p.read_bytes() for p in files] == before
