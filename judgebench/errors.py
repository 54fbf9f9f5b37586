"""Errors that reach the user. InputError exits 2 (bad usage or input); the rest exit 1."""

from __future__ import annotations

#: The exit status of a run (`score`, `bench`) in which some scores failed.
EXIT_FAILED_SCORES = 3


class JudgebenchError(Exception):
    exit_code = 1


class InputError(JudgebenchError):
    """Bad input or usage: the message names the file, the line or row, and the field."""

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        row: int | None = None,
        field: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        self.path, self.line, self.row, self.field = path, line, row, field
        self.detail = message
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class PluginError(JudgebenchError):
    """A plugin could not be loaded or misbehaved; the message names the plugin."""
