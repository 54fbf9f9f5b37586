"""Checks on the paths a command reads and writes, made before any work or spending.

A command lists every path it touches, each as a group of `Named` entries built by `read`,
`table`, `report`, `written`, `database` or `judge_cache`: the path and the files written
beside it (the `.meta.json` of a scores table, SQLite's `-wal`, `-shm` and `-journal`).
`check` then refuses, with an InputError (exit 2) naming the option and the path:

- two entries that are one file, however spelt: `./x` and `x`, a symlink and its target, two
  hard links, or one inside the other (at least one of the two must be written: reading a
  file twice harms nothing);
- a destination whose extension its kind does not take, that is an existing directory, whose
  parent cannot be created (an ancestor is a file) or that this user may not write.

`refuse_replacing` refuses existing files in a folder a command writes into (`--export`,
`--workdir`) unless the user gives `--force`.

The checks only look at the file system; they create and change nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from judgebench.errors import InputError

Role = Literal["input", "output", "database"]
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")
#: The first 16 bytes of every SQLite database file (a store, the judge cache).
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Named:
    """One path a command touches.

    `option` is how the command line names it (`INPUT`, `-o`, `--store`); `label` how a
    message names this file (`the .meta.json of -o` for a sidecar). `fmt` raises an
    InputError for an extension the destination cannot take. `probe` False skips the
    destination check (a default location only some metrics open)."""

    option: str
    path: Path
    role: Role
    label: str
    fmt: Callable[[Path], object] | None = None
    probe: bool = True
    sidecar: bool = False

    @property
    def writes(self) -> bool:
        return self.role != "input"


def read(option: str, path: str | Path, *, sidecar: bool = False) -> list[Named]:
    """A file the command reads; with `sidecar`, also the `.meta.json` beside it."""
    path = Path(path)
    named = [Named(option, path, "input", option)]
    if sidecar:
        named.append(Named(option, Path(f"{path}.meta.json"), "input",
                           f"the .meta.json of {option}", sidecar=True))
    return named


def table(option: str, path: str | Path, *, sidecar: bool = False) -> list[Named]:
    """A table the command writes (format by extension, `io.file_format`); with `sidecar`,
    also the `.meta.json` written beside it."""
    from judgebench.tables.io import file_format

    path = Path(path)
    named = [Named(option, path, "output", option, fmt=file_format)]
    if sidecar:
        named.append(Named(option, Path(f"{path}.meta.json"), "output",
                           f"the .meta.json of {option}", sidecar=True))
    return named


def report(option: str, path: str | Path, fmt: Callable[[Path], object]) -> list[Named]:
    """A report the command writes; `fmt` checks its extension."""
    return [Named(option, Path(path), "output", option, fmt=fmt)]


def written(option: str, path: str | Path, label: str | None = None) -> list[Named]:
    """A file the command writes under a name it chooses itself (`--export DIR`'s
    samples.jsonl): no extension to check."""
    return [Named(option, Path(path), "output", label or option)]


def database(option: str, path: str | Path, *, probe: bool = True) -> list[Named]:
    """A SQLite file the command reads and writes, with its journal files (none for
    SQLite's `:memory:`)."""
    if str(path) == ":memory:":
        return []
    path = Path(path)
    named = [Named(option, path, "database", option, probe=probe)]
    bases = dict.fromkeys([str(path), os.path.realpath(path)])  # SQLite may name either
    for base in bases:
        for suffix in SQLITE_SIDECARS:
            named.append(Named(option, Path(base + suffix), "database",
                               f"the {suffix} file of {option}", probe=probe, sidecar=True))
    return named


def judge_cache(option: str, path: str | Path | None) -> list[Named]:
    """The judge cache file that `--cache PATH` (a .sqlite/.sqlite3/.db file or a folder)
    or, without it, the default location means, found exactly as the judges find it
    (`cache_path.default_cache_path`). The default is compared with the other paths but
    not probed: only a judge opens it."""
    from judgebench.engine import runtime
    from judgebench.engine.cache_path import default_cache_path

    with runtime.running(runtime.RunSettings(cache_path=None if path is None else Path(path))):
        file = default_cache_path()
    if path is None:
        return database(f"{option} (default)", file, probe=False)
    return database(option, file)


def refuse_replacing(option: str, paths: Iterable[Path], *, force: str = "--force") -> None:
    """An InputError naming `option` and every one of `paths` that exists already: a folder a
    command writes into may hold files the user keeps, replaced only with `force`."""
    there = [str(path) for path in paths if os.path.lexists(path)]
    if there:
        raise InputError(f"would replace {', '.join(there)}, which exist already: give "
                         f"{force} to replace them, or another folder", path=there[0],
                         field=option)


def check(groups: Iterable[Sequence[Named]]) -> None:
    """Refuse collisions, then destinations that cannot be written (see the module). Each
    group is what one constructor returned: a path and its sidecars."""
    listed = [list(group) for group in groups]
    collisions(listed)
    for entry in (entry for group in listed for entry in group):
        if entry.writes and entry.probe:
            check_destination(entry)


def identity(path: Path) -> set[tuple[object, ...]]:
    """Keys that two spellings of one file share: the real path (symlinks, `.` and `..`
    resolved; for a file not there yet, its parent's) and, for an existing file, its inode."""
    keys: set[tuple[object, ...]] = {("path", os.path.realpath(path))}
    try:
        info = os.stat(path)
    except OSError:
        return keys
    keys.add(("inode", info.st_dev, info.st_ino))
    return keys


def collisions(groups: Sequence[Sequence[Named]]) -> None:
    """An InputError at the first two entries of different groups that are one file, or of
    which one would be inside the other (a file cannot also be a folder), where at least one
    of them is written."""
    keyed = [(number, entry, identity(entry.path))
             for number, group in enumerate(groups) for entry in group]
    for position, (group, later, later_keys) in enumerate(keyed):
        for other, earlier, earlier_keys in keyed[:position]:
            if other == group or not (earlier.writes or later.writes):
                continue
            if earlier_keys & later_keys:
                raise InputError(
                    f"{later.label} is the same file as {earlier.label} {earlier.path} (both "
                    f"are {os.path.realpath(later.path)}): writing one would destroy the "
                    "other; give each its own path",
                    path=str(later.path), field=later.option,
                )
            for inner, outer in ((later, earlier), (earlier, later)):
                if os.path.realpath(inner.path).startswith(os.path.realpath(outer.path) + os.sep):
                    raise InputError(
                        f"{inner.label} {inner.path} would be inside {outer.label} "
                        f"{outer.path}, which is a file: give each its own path",
                        path=str(later.path), field=later.option,
                    )


class _Where(TypedDict):
    path: str
    field: str


def check_destination(entry: Named) -> None:
    """An InputError if `entry` cannot be written: an extension its kind does not take, an
    existing directory, an ancestor that is a file, no permission (nearest existing ancestor
    for a new file; the file itself for an existing database)."""
    where: _Where = {"path": str(entry.path), "field": entry.option}
    if entry.fmt is not None:
        try:
            entry.fmt(entry.path)
        except InputError as exc:
            raise InputError(exc.detail, **where) from None
    path = Path(os.path.abspath(entry.path))
    if path.is_dir():
        raise InputError(f"{entry.label} is a directory; give a file path", **where)
    if entry.role == "database" and path.is_file():
        if not os.access(path, os.R_OK | os.W_OK):
            raise InputError(f"{entry.label} exists and this user may not read and write it",
                             **where)
        if not entry.sidecar and not _is_sqlite(path):
            raise InputError(f"{entry.label} exists and is not a SQLite database; give a new "
                             "path or the database an earlier run wrote", **where)
    ancestor = path.parent
    while not os.path.lexists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"cannot create {entry.label}: {ancestor} is not a directory",
                         **where)
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"cannot create {entry.label}: this user may not write in "
                         f"{ancestor}", **where)


def _is_sqlite(path: Path) -> bool:
    """An empty file (SQLite makes one a database) or one with SQLite's header."""
    with path.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    return head in (b"", SQLITE_MAGIC)
