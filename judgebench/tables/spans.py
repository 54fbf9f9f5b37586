"""The files `meta-eval spans` (and the audit's `spans` section) reads: a scores table, for
its sidecar (required: it names each column's signature, under which the store keeps the
judge's spans, and the store itself) and then the (item, system) of its rows; and people's
spans, a JSONL (or .jsonl.gz) file of one error per line (`judgebench.services.spans` says
what a row holds).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebench.errors import InputError

Key = tuple[str, str]  # item, system


@dataclass(frozen=True)
class SignedTable:
    """A scores table with its sidecar, read in two steps: `read` (the sidecar) and `rows`
    (the table), so that what the sidecar names (the store) is checked before the table is
    read."""

    path: Path
    sidecar: dict[str, Any]

    @classmethod
    def read(cls, path: str | Path) -> SignedTable:
        """The table's sidecar; an InputError naming the `.meta.json` without one."""
        from judgebench.tables.scores_table import read_sidecar

        path = Path(path)
        sidecar = read_sidecar(path)
        if sidecar is None:
            raise InputError("--spans needs the table's .meta.json (the columns' signatures)",
                             path=f"{path}.meta.json")
        return cls(path, sidecar)

    @property
    def described(self) -> dict[str, Any]:
        """What the sidecar says of each column."""
        return self.sidecar.get("columns") or {}

    def rows(self) -> tuple[set[Key], list[str]]:
        """The (item, system) of every row of the table (unique: an InputError naming the
        line of a repeated one), and the columns the sidecar describes that the table has."""
        from judgebench.tables.io import read_table

        frame = read_table(self.path, key=("item", "system"))
        keys = set(zip(frame["item"].astype("str"), frame["system"].astype("str"),
                       strict=True))
        return keys, [c for c in self.described if c in frame.columns]

    def signature(self, column: str) -> str:
        """The signature the sidecar gives `column`; an InputError without one."""
        info = self.described.get(column)
        signature = info.get("signature") if isinstance(info, dict) else None
        if not isinstance(signature, str):
            raise InputError(f"no signature for column '{column}' in the sidecar",
                             path=f"{self.path}.meta.json", field=column)
        return signature


@dataclass(frozen=True)
class PredictedCell:
    """One row's predicted spans as the file holds them (a list, unchecked), with where it
    was read: `position` is the line (JSONL, CSV) or row (Parquet), named by `where`."""

    spans: list[Any]
    position: int
    where: str


@dataclass(frozen=True)
class PredictedTable:
    """A plain table of predicted spans: one row per (item, system), each `columns` cell a
    JSON list of span objects (a list in JSONL or Parquet, its JSON text in CSV), empty
    where the row was not judged; the `output` column, when the table has one, is the text
    the offsets index."""

    path: Path
    keys: set[Key]
    cells: dict[str, dict[Key, PredictedCell]]
    outputs: dict[Key, str]

    @classmethod
    def read(cls, path: str | Path, columns: list[str]) -> PredictedTable:
        """The table (`io.read_table`: the key unique and non-empty); an InputError naming
        the file, line and column of a cell that is neither empty nor a JSON list."""
        import json
        import math

        from judgebench.tables.io import file_format, read_table

        path = Path(path)
        frame = read_table(path, key=("item", "system"), json_columns=columns)
        where = "row" if file_format(path) == "parquet" else "line"
        lines = frame.attrs["lines"]
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"no such column (columns: {', '.join(map(str, frame.columns))})",
                             path=str(path), field=missing[0])
        keys = list(zip(frame["item"].astype("str"), frame["system"].astype("str"),
                        strict=True))
        raw: dict[str, list[Any]] = {c: frame[c].tolist() for c in columns}
        if where == "row":  # Parquet: pandas makes a nullable int64 in a struct a float
            from judgebench.tables.io import _read_parquet

            arrow = _read_parquet(path)
            raw = {c: arrow.column(c).to_pylist() for c in columns}
        cells: dict[str, dict[Key, PredictedCell]] = {}
        for column in columns:
            found = cells.setdefault(column, {})
            for position, (key, value) in enumerate(zip(keys, raw[column], strict=True)):
                if value is None or (isinstance(value, float) and math.isnan(value)) \
                        or value == "":
                    continue
                if isinstance(value, str):
                    try:
                        value = json.loads(value)
                    except json.JSONDecodeError as exc:
                        raise InputError(f"not JSON ({exc.msg}): a cell of predicted spans "
                                         "is a JSON list of span objects", path=str(path),
                                         **{where: lines[position]}, field=column) from None
                if not isinstance(value, list):
                    raise InputError(f"a cell of predicted spans is a JSON list of span "
                                     f"objects, got {type(value).__name__}", path=str(path),
                                     **{where: lines[position]}, field=column)
                found[key] = PredictedCell(value, lines[position], where)
        outputs = {}
        if "output" in frame.columns:
            outputs = {k: v for k, v in zip(keys, frame["output"], strict=True)
                       if isinstance(v, str)}
        return cls(path, set(keys), cells, outputs)


def span_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The numbered rows of a JSONL (or .jsonl.gz) file of people's spans, read as `score`
    reads JSONL (`io._jsonl_records`: malformed, nested too deep, an integer too long for
    Python, not an object); an InputError naming the file (and line) otherwise."""
    import zlib

    from judgebench.tables.io import _jsonl_records

    try:
        yield from _jsonl_records(_lines(path), path)
    except (OSError, EOFError, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise InputError(f"cannot read the human spans: {reason}", path=str(path),
                         field="--spans") from None


def _lines(path: Path) -> Iterator[str]:
    """The lines of `path` (gzip for .gz), each decoded as UTF-8 (InputError naming the line
    otherwise)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                 f"{exc.start + 1})", path=str(path), line=line_no) from None


__all__ = ["Key", "PredictedCell", "PredictedTable", "SignedTable", "span_records"]
