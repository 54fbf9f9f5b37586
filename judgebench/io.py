"""Reading generations and scores tables, writing tables atomically.

Formats are chosen by extension: .jsonl (also .json lines), .csv, .parquet. Every error names
the file, the line (JSONL, CSV) or row (Parquet) and the field.
"""

from __future__ import annotations

import contextlib
import csv
import io as _io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from judgebench.errors import InputError
from judgebench.models import SAMPLE_FIELDS, Sample

if TYPE_CHECKING:
    import pandas as pd

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
KEY = ("item", "system")


def file_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            f"unknown file type '{suffix}'; use one of {', '.join(sorted(FORMATS))}",
            path=str(path),
        )
    return FORMATS[suffix]


# -- generations ----------------------------------------------------------------------------
def read_samples(path: str | Path) -> list[Sample]:
    """Read generations into Samples; reject duplicates of (item, system)."""
    path = Path(path)
    fmt = file_format(path)
    where = "line" if fmt in ("jsonl", "csv") else "row"
    samples: list[Sample] = []
    first_seen: dict[tuple[str, str], int] = {}
    for position, record in _records(path, fmt):
        sample = _to_sample(record, path, where, position)
        key = (sample.item, sample.system)
        if key in first_seen:
            raise InputError(
                f"duplicate (item, system) = {key}, first at {where} {first_seen[key]}",
                path=str(path), **{where: position}, field="item",
            )
        first_seen[key] = position
        samples.append(sample)
    if not samples:
        raise InputError("no samples: the file has a header or blank lines only", path=str(path))
    return samples


def _records(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    if fmt == "parquet":
        yield from _parquet_records(path)
        return
    raw = _read_bytes(path)
    text = _decode(raw, path)
    if fmt == "jsonl":
        yield from _jsonl_records(text, path)
    else:
        yield from _csv_records(text, path)


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=str(path)) from None
    if not raw.strip():
        raise InputError("file is empty", path=str(path))
    return raw


def _decode(raw: bytes, path: Path) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8",
            path=str(path), line=line,
        ) from None


def _jsonl_records(text: str, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})",
                             path=str(path), line=number) from None
        if not isinstance(record, dict):
            raise InputError(f"expected a JSON object, got {type(record).__name__}",
                             path=str(path), line=number)
        yield number, record


def _csv_records(text: str, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.reader(_io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("file is empty", path=str(path)) from None
    except csv.Error as exc:
        raise InputError(f"malformed CSV: {exc}", path=str(path), line=1) from None
    header = [h.strip() for h in header]
    dupes = sorted({h for h in header if header.count(h) > 1})
    if dupes:
        raise InputError(f"duplicate column(s) {dupes}", path=str(path), line=1)
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", path=str(path), line=reader.line_num) \
                from None
        if not any(v.strip() for v in values):
            continue
        if len(values) != len(header):
            raise InputError(f"{len(values)} cells for {len(header)} columns",
                             path=str(path), line=reader.line_num)
        yield reader.line_num, _unflatten(dict(zip(header, values, strict=True)))


def _read_parquet(path: Path) -> Any:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path)
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except Exception as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=str(path)) from None


def _parquet_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, record in enumerate(_read_parquet(path).to_pylist(), start=1):
        yield number, _unflatten({k: v for k, v in record.items()})


def _unflatten(record: dict[str, Any]) -> dict[str, Any]:
    """Table cells to a Sample-shaped dict: `human.x` columns into `human`, empty cells to
    None, JSON lists in `reference`/`context`, unknown columns into `metadata`."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if isinstance(value, str) and value == "":
            value = None
        if key.startswith("human."):
            out.setdefault("human", {})[key[len("human."):]] = value
        elif key.startswith("metadata."):
            out.setdefault("metadata", {})[key[len("metadata."):]] = value
        elif key in ("reference", "context") and isinstance(value, str) and value.startswith("["):
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                out[key] = value
        elif key in ("human", "metadata") and isinstance(value, str):
            try:
                out[key] = json.loads(value)
            except json.JSONDecodeError:
                out[key] = value  # pydantic reports the wrong type with the field name
        elif key in SAMPLE_FIELDS:
            out[key] = value
        elif value is not None:
            out.setdefault("metadata", {})[key] = value
    return out


def _to_sample(record: dict[str, Any], path: Path, where: str, position: int) -> Sample:
    record = dict(record)
    extra = {k: record.pop(k) for k in list(record) if k not in SAMPLE_FIELDS}
    if extra:
        record["metadata"] = {**(record.get("metadata") or {}), **extra}
    try:
        return Sample.model_validate(record)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or None
        message = error["msg"]
        if error["type"] == "missing":
            message = "required field is missing"
        elif "input" in error and error["type"] not in ("missing",):
            message = f"{message} (got {_short(error['input'])})"
        more = f"; and {len(exc.errors()) - 1} more problem(s)" if len(exc.errors()) > 1 else ""
        raise InputError(message + more, path=str(path), **{where: position},
                         field=field) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- scores tables --------------------------------------------------------------------------
def read_table(
    path: str | Path, *, key: Iterable[str] | None = KEY, text_columns: Iterable[str] = ()
) -> pd.DataFrame:
    """Read a table (wide scores, leaderboard or pairwise) into a DataFrame.

    With `key` (default item, system) the key columns must exist, be non-empty and unique;
    pass key=None for tables keyed otherwise (e.g. a leaderboard keyed by system only).
    Key and `text_columns` are read as text, so an id like "001" stays "001".
    `frame.attrs["lines"]` holds each row's line (JSONL, CSV) or row number (Parquet), for
    error messages.
    """
    import pandas as pd

    path = Path(path)
    fmt = file_format(path)
    as_text = {*(key or ()), *text_columns}
    where = "row" if fmt == "parquet" else "line"
    if fmt == "parquet":
        frame = _read_parquet(path).to_pandas()
        lines = list(range(1, len(frame) + 1))
    else:
        text = _decode(_read_bytes(path), path)
        if fmt == "csv":
            try:
                frame = pd.read_csv(_io.StringIO(text), dtype=dict.fromkeys(as_text, str),
                                    keep_default_na=True)
            except (pd.errors.ParserError, ValueError) as exc:
                raise InputError(f"malformed CSV: {exc}", path=str(path)) from None
            lines = list(range(2, len(frame) + 2))
        else:
            numbered = list(_jsonl_records(text, path))
            frame = pd.DataFrame.from_records([r for _, r in numbered])
            lines = [n for n, _ in numbered]
            for column in as_text & set(frame.columns):
                frame[column] = frame[column].map(lambda v: v if v is None else str(v))
    if frame.empty:
        raise InputError("table has no rows", path=str(path))
    frame.attrs["lines"] = lines
    if key is not None:
        key = list(key)
        missing = [k for k in key if k not in frame.columns]
        if missing:
            raise InputError(f"required column(s) missing; columns are {list(frame.columns)}",
                             path=str(path), field=",".join(missing))
        for k in key:
            empty = frame[k].isna()
            if empty.any():
                raise InputError("empty key cell", path=str(path),
                                 **{where: lines[int(empty.to_numpy().argmax())]}, field=k)
            frame[k] = frame[k].astype(str)
        dup = frame.duplicated(subset=key, keep="first")
        if dup.any():
            position = int(dup.to_numpy().argmax())
            values = tuple(frame.iloc[position][k] for k in key)
            raise InputError(f"duplicate key {tuple(key)} = {values}", path=str(path),
                             **{where: lines[position]}, field=key[0])
    return frame


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it into place in one step,
    on failure remove it, so a reader never sees a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_table(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write a table in the format its extension names, atomically."""
    fmt = file_format(path)
    with atomic_path(path) as tmp:
        if fmt == "csv":
            frame.to_csv(tmp, index=False)
        elif fmt == "jsonl":
            frame.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            frame.to_parquet(tmp, index=False)
    return Path(path)


def write_text(text: str, path: str | Path) -> Path:
    """Write a text file (a report, JSON) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
