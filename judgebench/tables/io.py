"""Reading generations and scores tables, writing tables atomically.

Formats are chosen by extension: .jsonl (also .json lines), .csv, .parquet. Every error names
the file, the line (JSONL, CSV) or row (Parquet, DataFrame) and the field.

Every source of samples (a file, a DataFrame, dicts) goes through one normalisation,
`normalize_record`, from raw cells to a Sample-shaped dict, so the CLI and the Python API
accept the same data and read it the same way.
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import csv
import hashlib
import io as _io
import json
import math
import os
import re
import stat
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple, Union, get_args, get_origin

from judgebench.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    from pydantic import BaseModel, ValidationError

    from judgebench.models import Sample

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
KEY = ("item", "system")
Where = Literal["line", "row"]


def file_format(path: str | Path) -> str:
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            f"unknown file type '{suffix}'; use one of {', '.join(sorted(FORMATS))}",
            path=str(path),
        )
    return FORMATS[suffix]


# -- which fields hold lists and mappings ----------------------------------------------------
def _members(annotation: Any) -> tuple[Any, ...]:
    """The alternatives of a type: `str | list[str] | None` -> (str, list[str], NoneType)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _members(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return tuple(member for arg in get_args(annotation) for member in _members(arg))
    return (annotation,)


def list_fields(model: type[BaseModel]) -> dict[str, Any]:
    """The fields of `model` whose type admits a list, each with the type of its elements
    (`Any` for a bare `list`)."""
    found: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        for member in _members(info.annotation):
            if member is list or get_origin(member) is list:
                found[name] = (get_args(member) or (Any,))[0]
                break
    return found


def mapping_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `model` whose type admits a dict."""
    return tuple(
        name for name, info in model.model_fields.items()
        if any(m is dict or get_origin(m) is dict for m in _members(info.annotation))
    )


class SampleShape(NamedTuple):
    """The Sample fields, those whose type admits a list (with the element type) and those
    whose type admits a dict."""

    names: frozenset[str]
    lists: dict[str, Any]
    mappings: tuple[str, ...]


@cache
def sample_shape() -> SampleShape:
    """Found from the Sample model when first needed: reading a scores table needs no
    pydantic model (`meta-eval` starts faster without one)."""
    from judgebench.models import SAMPLE_FIELDS, Sample

    return SampleShape(frozenset(SAMPLE_FIELDS), list_fields(Sample), mapping_fields(Sample))


# -- generations ----------------------------------------------------------------------------
def read_samples(path: str | Path) -> list[Sample]:
    """Read generations into Samples; reject duplicates of (item, system).

    CSV and Parquet rows are table rows (`normalize_record(tabular=True)`); JSONL lines are
    JSON values taken as written (`tabular=False`).
    """
    path = Path(path)
    samples = unique_samples(iter_samples(path), path=str(path), where=position_name(path))
    if not samples:
        raise InputError("no samples: the file has a header or blank lines only", path=str(path))
    return samples


def position_name(path: str | Path) -> Where:
    """What an error calls a sample's position in this file: a line (JSONL, CSV) or a row."""
    return "line" if file_format(path) in ("jsonl", "csv") else "row"


def iter_samples(path: str | Path) -> Iterator[tuple[int, Sample]]:
    """The samples of a generations file with their line (JSONL, CSV) or row (Parquet), read
    in bounded memory: one line, CSV record or Parquet batch at a time. Each is normalised and
    validated exactly as `read_samples` does; duplicates are not checked (`unique_stream`)."""
    path = Path(path)
    fmt = file_format(path)
    where = position_name(path)
    tabular = fmt != "jsonl"
    for position, record in _records(path, fmt):
        yield position, to_sample(record, tabular=tabular, path=str(path), **{where: position})


class SampleFile:
    """A generations file as a source that can be read more than once, each time from the
    start and in bounded memory: every read validates every row and stops at the first repeat
    of an (item, system), keeping only a fixed-size digest per row (`unique_stream`).

    Iterating yields the Samples; an empty file (or a header alone) is an InputError at the
    end of the read, as in `read_samples`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        file_format(self.path)

    def __iter__(self) -> Iterator[Sample]:
        where = position_name(self.path)
        empty = True
        for _, sample in unique_stream(iter_samples(self.path), path=str(self.path),
                                       where=where, again=lambda: iter_samples(self.path)):
            empty = False
            yield sample
        if empty:
            raise InputError("no samples: the file has a header or blank lines only",
                             path=str(self.path))


def key_digest(item: str, system: str, turn: int | None = None) -> bytes:
    """A fixed-size digest of (item, system) (and the judged turn of a conversation), for
    duplicate checks that keep no ids."""
    text = json.dumps([item, system] if turn is None else [item, system, turn],
                      ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def sample_key(sample: Sample) -> tuple[str, str] | tuple[str, str, int]:
    """What identifies a sample in a file: (item, system), and the turn of a judged turn."""
    if sample.turn is None:
        return (sample.item, sample.system)
    return (sample.item, sample.system, sample.turn)


def unique_stream(
    numbered: Iterable[tuple[int, Sample]], *, path: str | None, where: Where,
    again: Callable[[], Iterable[tuple[int, Sample]]],
) -> Iterator[tuple[int, Sample]]:
    """The samples as they come, or the InputError of `unique_samples` at the first repeat of
    an (item, system). Only a digest per row is kept; on a repeated digest, `again` (the same
    samples, read anew) finds where that key was first, so the message is the same."""
    seen: set[bytes] = set()
    for position, sample in numbered:
        digest = key_digest(sample.item, sample.system, sample.turn)
        if digest in seen:
            key = sample_key(sample)
            first = next((p for p, s in again() if p >= position or sample_key(s) == key),
                         position)
            if first < position:
                names = "(item, system)" if sample.turn is None else "(item, system, turn)"
                raise InputError(f"duplicate {names} = {key}, first at {where} {first}",
                                 path=path, **{where: position}, field="item")
        seen.add(digest)
        yield position, sample


def samples_from_frame(frame: pd.DataFrame) -> list[Sample]:
    """The rows of a DataFrame as Samples, each normalised exactly as a CSV or Parquet row
    (`tabular=True`); errors name `row N` (1-based position, not the index label)."""
    labels = [str(column).strip() for column in frame.columns]
    dupes = sorted({label for label in labels if labels.count(label) > 1})
    if dupes:
        raise InputError(f"duplicate column(s) {dupes}")
    rows = ((number, dict(zip(labels, values, strict=True)))
            for number, values in enumerate(frame.itertuples(index=False, name=None), start=1))
    return unique_samples(
        ((number, to_sample(row, tabular=True, row=number)) for number, row in rows),
        path=None, where="row",
    )


def samples_from_records(records: Iterable[Sample | Mapping[str, Any]]) -> list[Sample]:
    """Samples as given and dicts normalised exactly as JSONL lines (`tabular=False`); errors
    name `row N` (1-based)."""
    from judgebench.models import Sample

    numbered: list[tuple[int, Sample]] = []
    for number, record in enumerate(records, start=1):
        if isinstance(record, Sample):
            numbered.append((number, record))
        elif isinstance(record, Mapping):
            numbered.append((number, to_sample(record, tabular=False, row=number)))
        else:
            raise InputError(f"expected a Sample or a dict, got {type(record).__name__}",
                             row=number)
    return unique_samples(numbered, path=None, where="row")


def unique_samples(
    numbered: Iterable[tuple[int, Sample]], *, path: str | None, where: Where
) -> list[Sample]:
    """The samples in order, or an InputError at the first repeat of an (item, system): the
    check of `unique_stream`, looking back in the samples already read."""
    read: list[tuple[int, Sample]] = []

    def keep() -> Iterator[tuple[int, Sample]]:
        for entry in numbered:
            read.append(entry)
            yield entry

    return [sample for _, sample in
            unique_stream(keep(), path=path, where=where, again=lambda: read)]


def to_sample(
    record: Mapping[Any, Any],
    *,
    tabular: bool,
    path: str | None = None,
    line: int | None = None,
    row: int | None = None,
) -> Sample:
    """`normalize_record`, then validation; every problem is an InputError naming the file (if
    any), the line or row, and the field."""
    from pydantic import ValidationError

    from judgebench.models import Sample

    fields = normalize_record(record, tabular=tabular, path=path, line=line, row=row)
    try:
        sample = Sample.model_validate(fields)
    except ValidationError as exc:
        raise _validation_error(exc, path=path, line=line, row=row) from None
    if sample.system_a is not None and sample.system_a == sample.system_b:
        raise InputError(f"system_a and system_b are both {_short(sample.system_a)}: a pair "
                         "compares two systems, so a judge has nothing to compare",
                         path=path, line=line, row=row, field="system_b")
    return sample


def normalize_record(
    record: Mapping[Any, Any],
    *,
    tabular: bool,
    path: str | None = None,
    line: int | None = None,
    row: int | None = None,
) -> dict[str, Any]:
    """Raw cells (one CSV/Parquet/DataFrame row, JSONL line or dict) to a Sample-shaped dict.

    For every source:
    - a missing value (None, NaN, pandas NA/NaT) is an absent field, so the field's default
      applies and a required field is reported as missing; numpy values become Python values;
    - `human.x` / `metadata.x` columns go into the `human` / `metadata` dict, and columns that
      are not Sample fields go into `metadata`; a key given twice with different values is an
      error;
    - a human judgment is a finite number or missing (`human_value`): NaN, infinities,
      booleans and text that is not a number are errors naming the field `human.x`.
    An empty string is a value (an empty output is a text): only the CSV reader turns an
    unquoted empty cell into None (`_csv_records`), while a quoted `""` stays "". In a dict
    field (`human`, `metadata`) an empty string is missing.
    With `tabular` (CSV, Parquet, DataFrame: cells are text, or typed by a table), also:
    - in a field whose type admits a list (`sample_shape().lists`, from the Sample model), a
      string starting with '[' is a list: JSON first, then a Python literal
      (`ast.literal_eval`, never `eval`), and it must be a list of the field's element type,
      else an InputError;
    - in a dict field (`sample_shape().mappings`), a string is JSON or a Python dict literal.
    Without `tabular` (JSONL, dicts), strings are kept as written: JSON has lists and objects.
    """
    where = {"path": path, "line": line, "row": row}
    shape = sample_shape()
    fields: dict[str, Any] = {}
    nested: dict[str, dict[str, tuple[str, Any]]] = {}
    for column, raw in record.items():
        name = str(column).strip() if tabular else str(column)
        value = _plain(raw)
        head, dot, key = name.partition(".")
        if dot and head == "human":
            _put(nested, head, key, name,
                 human_value(raw, tabular=tabular, where=where, field=name), where)
        elif dot and head in shape.mappings:
            _put(nested, head, key, name, value, where)
        elif name in shape.mappings:
            _mapping_cell(name, value, tabular=tabular, where=where, fields=fields,
                          nested=nested)
        elif name == "turn" and (isinstance(value, bool)
                                 or (not tabular and isinstance(value, str))):
            # JSON says what a value is: true and "1" are not message indexes
            raise InputError(f"a turn is a message index (an integer >= 0, or null), not "
                             f"{json.dumps(value)}", path=path, line=line, row=row,
                             field="turn")
        elif name in shape.names:
            value = _field_cell(name, value, tabular=tabular, where=where)
            if value is not None:
                fields[name] = value
        elif value is not None:
            _put(nested, "metadata", name, name, value, where)
    for head, entries in nested.items():
        if head not in fields:
            fields[head] = {key: value for key, (_, value) in entries.items()}
    return fields


def _mapping_cell(name: str, value: Any, *, tabular: bool, where: dict[str, Any],
                  fields: dict[str, Any], nested: dict[str, dict[str, tuple[str, Any]]]
                  ) -> None:
    """A dict field's cell (`human`, `metadata`): its entries into `nested`, or a value of
    the wrong type into `fields` (validation names it)."""
    if value == "":
        return  # no text is a dict: a quoted empty cell is missing here
    # A dict written as text in a cell is JSON (or a literal): its values are typed.
    typed_cell = tabular and not isinstance(value, str)
    if tabular and isinstance(value, str):
        value = _parse_mapping_cell(value, name, where)
    if isinstance(value, Mapping):
        for inner_key, inner in value.items():
            inner = (human_value(inner, tabular=typed_cell, where=where,
                                 field=f"human.{inner_key}")
                     if name == "human" else _plain(inner))
            _put(nested, name, str(inner_key), name, inner, where)
    elif value is not None:
        fields[name] = value  # the wrong type: validation names it


def _field_cell(name: str, value: Any, *, tabular: bool, where: dict[str, Any]) -> Any:
    """A Sample field's cell: a list written as text in a table parsed, lists plain."""
    shape = sample_shape()
    if tabular and name in shape.lists and _starts_a_list(value):
        return _parse_list_cell(value, name, shape.lists[name], where)
    if isinstance(value, list):
        return _deep_plain(value)
    return value


def _unwrap(value: Any) -> Any:
    """numpy arrays and scalars as Python values."""
    # A numpy or pandas value can only exist once its module is loaded: no import needed here.
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.ndarray):
            return value.tolist()
        if isinstance(value, numpy.generic):
            return value.item()
    return value


def _deep_plain(value: Any) -> Any:
    """A list or dict read from a typed table (a Parquet list of structs) as plain Python
    values all the way down; a struct's missing member is an absent key."""
    value = _plain(value)
    if isinstance(value, list):
        return [_deep_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _deep_plain(v) for k, v in value.items() if _plain(v) is not None}
    return value


def _plain(value: Any) -> Any:
    """A cell as a plain Python value; every missing marker becomes None."""
    value = _unwrap(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    pandas = sys.modules.get("pandas")
    if pandas is not None and (value is pandas.NA or value is pandas.NaT):
        return None
    return value


def human_value(raw: Any, *, tabular: bool, where: dict[str, Any], field: str) -> float | None:
    """A human judgment as a finite float, or None when it is missing.

    Missing: None, pandas NA, an empty or blank text cell; with `tabular` (a CSV, Parquet or
    DataFrame cell) also a float NaN, the missing marker of a typed table. With `tabular` a
    text cell is the number it spells; without it (JSONL, dicts) the value must be a JSON
    number. Anything else is an InputError at `where` naming `field`: NaN (the text "NaN",
    or a JSON NaN), infinities, booleans, text that is not a number, numbers too large for a
    float."""
    value = _unwrap(raw)
    pandas = sys.modules.get("pandas")
    if value is None or (pandas is not None and (value is pandas.NA or value is pandas.NaT)):
        return None

    def bad(what: str) -> InputError:
        return InputError(f"a human judgment must be a finite number (empty or null when "
                          f"missing), got {what}", **where, field=field)

    if isinstance(value, bool):
        raise bad(f"the boolean {_short(value)}")
    if isinstance(value, str):
        text = value.strip()
        if not tabular:
            raise bad(f"the text {_short(value)}: write a JSON number, or null for missing")
        if not text:
            return None
        if not _NUMBER.fullmatch(text):
            raise bad(f"{_short(value)}")
        number = float(text)
    elif isinstance(value, int | float | Decimal):
        try:
            number = float(value)
        except (OverflowError, ValueError):  # a huge int; a signalling Decimal NaN
            raise bad(f"{_short(value)}, not a float") from None
        if math.isnan(number) and tabular:
            return None
    else:
        raise bad(f"a {type(value).__name__} {_short(value)}")
    if not math.isfinite(number):
        raise bad(f"{_short(value)}")
    return number


# A decimal number as text, with an optional exponent: not "nan", "inf", "1_000" or "0x1".
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _put(nested: dict[str, dict[str, tuple[str, Any]]], head: str, key: str, column: str,
         value: Any, where: dict[str, Any]) -> None:
    entries = nested.setdefault(head, {})
    if key in entries and entries[key][1] != value:
        raise InputError(
            f"given twice with different values, in column '{entries[key][0]}' and column "
            f"'{column}'", **where, field=f"{head}.{key}",
        )
    entries[key] = (column, value)


def _starts_a_list(value: Any) -> bool:
    return isinstance(value, str) and value.lstrip().startswith("[")


_UNREADABLE = object()


def _literal(text: str) -> Any:
    """JSON, else a Python literal; a sentinel `_UNREADABLE` when it is neither."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _UNREADABLE


def _parse_list_cell(text: str, field: str, element: Any, where: dict[str, Any]) -> list[Any]:
    value = _literal(text)
    kind = _type_name(element)
    how = (f'write a JSON list (["a", "b"]) or a Python list literal ([\'a\', \'b\']) of {kind}; '
           "one text that starts with '[' is a one-element list")
    if not isinstance(value, list):
        raise InputError(f"a cell starting with '[' is read as a list, but {_short(text)} is "
                         f"neither a JSON list nor a Python list literal; {how}",
                         **where, field=field)
    wrong = next((i for i, v in enumerate(value) if not _accepts(element, v)), None)
    if wrong is not None:
        raise InputError(f"element {wrong} of the list is {type(value[wrong]).__name__} "
                         f"{_short(value[wrong])}, not {kind}; {how}", **where, field=field)
    return value


def _parse_mapping_cell(text: str, field: str, where: dict[str, Any]) -> dict[str, Any]:
    value = _literal(text)
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object or a Python dict literal, got {_short(text)}",
                         **where, field=field)
    return value


def _accepts(element: Any, value: Any) -> bool:
    from pydantic import BaseModel

    members = _members(element)
    if any(isinstance(m, type) and issubclass(m, BaseModel) for m in members):
        return isinstance(value, Mapping)  # a message: validation checks its fields
    classes = tuple(m for m in members if isinstance(m, type) and m is not Any)
    if len(classes) < len(members):  # Any or a parametrised type: validation decides
        return True
    return isinstance(value, classes)


def _type_name(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def _validation_error(exc: ValidationError, *, path: str | None, line: int | None,
                      row: int | None) -> InputError:
    errors = exc.errors()
    error = errors[0]
    field = _field_of(error["loc"])
    message = error["msg"]
    head = str(error["loc"][0]) if error["loc"] else ""
    if head in _NESTED and len(error["loc"]) > 1:
        # messages.3.role -> messages[3].role, with pydantic's own message
        field = head + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                               for p in error["loc"][1:])
        message = ("required field is missing" if error["type"] == "missing"
                   else str(error["msg"]).removeprefix("Value error, "))
    elif error["type"] == "missing":
        message = "required field is missing"
    elif not error["loc"] and (named := _NAMED.match(str(error["msg"]))):
        field, message = named.group(1), str(error["msg"]).removeprefix("Value error, ")
    elif head == "turn" or not error["loc"]:
        message = str(error["msg"]).removeprefix("Value error, ")
    else:
        from judgebench.models import Sample

        if len(error["loc"]) > 1 and head in Sample.model_fields \
                and head not in sample_shape().mappings:
            # A union (`str | list[str] | None`) fails once per member; name the whole type.
            message = f"expected {_type_name(Sample.model_fields[head].annotation)}"
        if "input" in error:
            message = f"{message} (got {_short(error['input'])})"
    others = len({_field_of(e["loc"]) for e in errors} - {_field_of(error["loc"])})
    more = f"; and {others} more problem(s)" if others else ""
    return InputError(message + more, path=path, line=line, row=row, field=field)


#: Fields holding lists of models (a conversation's messages): errors name the element.
_NESTED = ("messages", "messages_a", "messages_b")
#: A sample-level error about one field starts by quoting it ("'output' is derived...").
_NAMED = re.compile(r"(?:Value error, )?'([a-z_]+)' ")


def _field_of(loc: tuple[int | str, ...]) -> str | None:
    """The Sample field an error is about, with the key inside `human`/`metadata`."""
    if not loc:
        return None
    head = str(loc[0])
    return f"{head}.{loc[1]}" if head in sample_shape().mappings and len(loc) > 1 else head


def _records(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The raw records of a generations file, one line, CSV record or Parquet batch read at a
    time."""
    if fmt == "parquet":
        yield from _parquet_records(path)
        return
    _check_not_empty(path)
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            if fmt == "jsonl":
                # str.splitlines within each physical line: the lines `text.splitlines()` of
                # the whole file would give, so line numbers are the same.
                yield from _jsonl_records(
                    (line for physical in handle for line in physical.splitlines()), path)
            else:
                yield from _csv_records(handle, path)
    except UnicodeDecodeError:
        raise _utf8_error(path) from None


def _check_not_empty(path: Path) -> None:
    """An InputError if the file is missing, a folder, or holds only whitespace."""
    try:
        with path.open("rb") as handle:
            while block := handle.read(1 << 16):
                if block.strip():
                    return
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=str(path)) from None
    raise InputError("file is empty", path=str(path))


def _utf8_error(path: Path) -> InputError:
    """The first invalid UTF-8 byte of the file, with its offset and line, found by decoding
    one line at a time (a UTF-8 sequence never holds a newline byte)."""
    offset = 0
    with path.open("rb") as handle:
        for number, piece in enumerate(handle, start=1):
            skip = 3 if number == 1 and piece.startswith(codecs.BOM_UTF8) else 0
            try:
                piece[skip:].decode("utf-8")
            except UnicodeDecodeError as exc:
                return InputError(
                    f"invalid UTF-8 (byte 0x{piece[skip + exc.start]:02x} at offset "
                    f"{offset + exc.start}); save the file as UTF-8",
                    path=str(path), line=number,
                )
            offset += len(piece) - skip
    return InputError("invalid UTF-8; save the file as UTF-8", path=str(path))


def _read_bytes(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path=str(path)) from None
    if not raw or raw.isspace():  # what `not raw.strip()` tests, without copying the file
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


def _jsonl_records(lines: Iterable[str], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON: {exc.msg} (column {exc.colno})",
                             path=str(path), line=number) from None
        except RecursionError:
            field, depth = _deepest(line)
            raise InputError(f"JSON nested {depth} levels deep, deeper than this reader "
                             "reads", path=str(path), line=number, field=field) from None
        except ValueError:  # json reads integers with int(), which has a digit limit
            field, digits = _long_integer(line)
            raise InputError(f"an integer of {digits} digits, more than Python reads "
                             f"({sys.get_int_max_str_digits()}); write a number in "
                             "exponent form (9.9e4999) or text", path=str(path), line=number,
                             field=field) from None
        if not isinstance(record, dict):
            raise InputError(f"expected a JSON object, got {type(record).__name__}",
                             path=str(path), line=number)
        yield number, record


def _text_or_missing(value: Any) -> str | None:
    """A JSONL cell read as text; a missing key (NaN once framed) stays missing, not "nan"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _flattened(record: dict[str, Any], path: Path, line: int,
               kept: frozenset[str]) -> dict[str, Any]:
    """`record` with each nested object's fields as columns of their own, named by their
    path (`{"human": {"relevance": 4}}` -> `human.relevance`, the name `score` writes), so a
    samples file read as a table has the columns its scores table would have; the fields
    in `kept` stay as they are."""
    if not any(isinstance(v, dict) and k not in kept for k, v in record.items()):
        return record
    out: dict[str, Any] = {}

    def put(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for name, inner in value.items():
                put(f"{prefix}.{name}", inner)
            return
        if prefix in out:
            raise InputError(f"'{prefix}' is both a field and a nested object's path; rename "
                             "one", path=str(path), line=line, field=prefix)
        out[prefix] = value

    for name, value in record.items():
        if name in kept:
            out[name] = value
        else:
            put(str(name), value)
    return out


# One CSV field as Python's csv reader (default dialect, not strict) reads it, up to the
# delimiter or the record's end: quoted ('"' first: "" inside is a quote, text after the
# closing quote is kept), or unquoted (a quote inside is text).
_CSV_FIELD = re.compile(r'"(?:[^"]|"")*(?:"[^,\r\n]*)?|[^,\r\n"][^,\r\n]*|')


def csv_quoted_fields(raw: str) -> list[bool]:
    """For each field of one CSV record (its raw text, line endings included or not), whether
    it is quoted: `a,"",` gives [False, True, False]. Python's csv module reads `""` and an
    empty cell as the same "", so the reader looks here to tell them apart."""
    quoted: list[bool] = []
    position = 0
    while True:
        match = _CSV_FIELD.match(raw, position)
        assert match is not None  # the last alternative matches the empty string
        quoted.append(raw.startswith('"', position))
        position = match.end()
        if not raw.startswith(",", position):
            return quoted
        position += 1


def _long_integer(line: str) -> tuple[str | None, int]:
    """The dotted field (`human.q`, `meta.a.0`) of the first integer in a JSON line that is
    too long for `int()`, and its number of digits; the line is otherwise valid JSON."""
    limit = sys.get_int_max_str_digits()
    longest = [0]

    def parse_int(text: str) -> Any:
        if limit and len(text.lstrip("-")) > limit:
            longest[0] = max(longest[0], len(text.lstrip("-")))
            return _TOO_LONG
        return 0

    stack: list[tuple[Any, list[str]]] = [(json.loads(line, parse_int=parse_int), [])]
    while stack:  # depth first, in document order
        value, trail = stack.pop()
        if value is _TOO_LONG:
            return ".".join(trail) or None, longest[0]
        children = (list(value.items()) if isinstance(value, dict)
                    else list(enumerate(value)) if isinstance(value, list) else [])
        stack.extend((child, [*trail, str(key)]) for key, child in reversed(children))
    return None, longest[0]


def _deepest(line: str) -> tuple[str | None, int]:
    """The top-level key of a JSON object line whose value nests deepest, and how deep (the
    line's own braces not counted); read without parsing, for a line too deep to parse."""
    depth = deepest = 0
    key: str | None = None
    deepest_key: str | None = None
    in_string = escaped = False
    start = 0
    for position, char in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1:
                    with contextlib.suppress(json.JSONDecodeError):
                        key = json.loads(line[start:position + 1])
        elif char == '"':
            in_string, start = True, position
        elif char in "[{":
            depth += 1
            if depth - 1 > deepest:
                deepest, deepest_key = depth - 1, key
        elif char in "]}":
            depth -= 1
    return deepest_key, deepest


_TOO_LONG = object()


#: A NUL character in a CSV cell: a binary file, or text cut by a tool; never part of a name.
NUL_CELL = "a NUL character (U+0000) in a cell: a CSV cell is text without NUL characters"


def _nul_in_csv(body: bytes, path: Path) -> InputError:
    """The InputError naming the line and column of the first NUL byte of CSV `body`."""
    at = body.index(b"\x00")
    start = body.rfind(b"\n", 0, at) + 1
    end = body.find(b"\n", at)
    header = next(csv.reader([body[:body.find(b"\n")].decode("utf-8", "replace")]), [])
    cells = next(csv.reader([body[start:end if end >= 0 else None].decode(
        "utf-8", "replace").replace("\x00", "\ufffd")]), [])
    column = next((header[i].strip() for i, cell in enumerate(cells)
                   if "\ufffd" in cell and i < len(header)), None)
    return InputError(NUL_CELL, path=str(path), line=body.count(b"\n", 0, at) + 1,
                      field=column)


def _csv_records(lines: Iterable[str], path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Records of CSV text whose lines are split as a file opened with newline="" splits.

    An unquoted empty cell is a missing value (None); a quoted one, `""`, is the empty string
    (`csv_quoted_fields`)."""
    raw: list[str] = []

    def kept(source: Iterable[str]) -> Iterator[str]:
        # csv.reader takes a line only when its record needs it: `raw` holds each record's.
        for line in source:
            raw.append(line)
            yield line

    reader = csv.reader(kept(lines))
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
        raw.clear()
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
        for column, value in zip(header, values, strict=True):
            if "\x00" in value:
                raise InputError(NUL_CELL, path=str(path), line=reader.line_num, field=column)
        cells: list[str | None] = list(values)
        if "" in values:
            text = "".join(raw)
            quoted = csv_quoted_fields(text) if '"' in text else [False] * len(values)
            if len(quoted) != len(values):  # not seen on any record the csv module reads
                raise InputError("malformed CSV: cannot tell quoted from unquoted cells",
                                 path=str(path), line=reader.line_num)
            cells = [None if v == "" and not q else v
                     for v, q in zip(values, quoted, strict=True)]
        yield reader.line_num, dict(zip(header, cells, strict=True))


def _read_parquet(path: Path) -> Any:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path)
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except Exception as exc:
        raise InputError(f"not a readable Parquet file: {exc}", path=str(path)) from None


#: Rows per Parquet batch read by `_parquet_records`.
PARQUET_BATCH_ROWS = 4096


def _parquet_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    import pyarrow.parquet as pq

    def unreadable(exc: Exception) -> InputError:
        return InputError(f"not a readable Parquet file: {exc}", path=str(path))

    try:
        parquet = pq.ParquetFile(path)
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except Exception as exc:
        raise unreadable(exc) from None
    number = 0
    with parquet:
        batches = parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except Exception as exc:
                raise unreadable(exc) from None
            for record in batch.to_pylist():
                number += 1
                yield number, record


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- scores tables --------------------------------------------------------------------------
class LineNumbers(tuple[int, ...]):
    """Each row's line (JSONL, CSV) or row number (Parquet), as `read_table` keeps them in
    `frame.attrs["lines"]`: immutable, so a deep copy is the object itself. pandas deep-copies
    `attrs` into every frame and column it derives (`__finalize__`); a plain list of 40,000
    numbers cost seconds of copying per command."""

    def __deepcopy__(self, memo: dict[int, Any]) -> LineNumbers:
        return self

    def __copy__(self) -> LineNumbers:
        return self


def read_table(
    path: str | Path, *, key: Iterable[str] | None = KEY, text_columns: Iterable[str] = (),
    json_columns: Iterable[str] = ()
) -> pd.DataFrame:
    """Read a table (wide scores, leaderboard or pairwise) into a DataFrame.

    With `key` (default item, system) the key columns must exist, be non-empty and unique;
    pass key=None for tables keyed otherwise (e.g. a leaderboard keyed by system only).
    Key and `text_columns` are read as text, so an id like "001" stays "001". A JSONL
    object is read as columns named by its path (`human.relevance`) but in `json_columns`,
    whose cells stay as JSON gave them.
    `frame.attrs["lines"]` holds each row's line (JSONL, CSV) or row number (Parquet), for
    error messages (a `LineNumbers`).
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
        raw = _read_bytes(path)
        text = _decode(raw, path)
        if fmt == "csv":
            frame = _read_csv(raw, path, as_text)
            lines = list(range(2, len(frame) + 2))
        else:
            kept = frozenset(json_columns)
            numbered = [(n, _flattened(r, path, n, kept))
                        for n, r in _jsonl_records(text.splitlines(), path)]
            frame = pd.DataFrame.from_records([r for _, r in numbered])
            frame.attrs["format"] = "jsonl"
            lines = [n for n, _ in numbered]
            for column in as_text & set(frame.columns):
                frame[column] = frame[column].map(_text_or_missing)
    if frame.empty:
        raise InputError("table has no rows", path=str(path))
    frame.attrs["lines"] = LineNumbers(lines)
    if key is not None:
        _check_key(frame, list(key), path, where, lines)
    return frame


def _read_csv(raw: bytes, path: Path, as_text: set[str]) -> pd.DataFrame:
    """A CSV file's checked UTF-8 bytes as a DataFrame, `as_text` columns as text."""
    import pandas as pd

    # the checked UTF-8 bytes, not the text: pandas encodes a text buffer back to
    # UTF-8 before parsing (half the read's time)
    body = raw[len(codecs.BOM_UTF8):] if raw.startswith(codecs.BOM_UTF8) else raw
    if b"\x00" in body:
        raise _nul_in_csv(body, path)
    try:
        return pd.read_csv(_io.BytesIO(body), dtype=dict.fromkeys(as_text, str),
                           keep_default_na=True, encoding="utf-8")
    except (pd.errors.ParserError, ValueError) as exc:
        raise InputError(f"malformed CSV: {exc}", path=str(path)) from None


def _check_key(frame: pd.DataFrame, key: list[str], path: Path, where: str,
               lines: list[int]) -> None:
    """The key columns exist, are non-empty (read as text) and unique, with a conversation's
    judged turn part of the key."""
    missing = [k for k in key if k not in frame.columns]
    if missing:
        pairs = "system" in missing and {"system_a", "system_b"} <= set(frame.columns)
        hint = ("; with system_a and system_b this is a pairwise table: read it with "
                "--pairwise (meta-eval, audit) or compare-judges") if pairs else ""
        raise InputError(f"required column(s) missing; columns are {list(frame.columns)}"
                         f"{hint}", path=str(path), field=",".join(missing))
    for k in key:
        empty = frame[k].isna()
        if empty.any():
            raise InputError("empty key cell", path=str(path),
                             **{where: lines[int(empty.to_numpy().argmax())]}, field=k)
        frame[k] = frame[k].astype(str)
    if "turn" in frame.columns and "turn" not in key:
        # a conversation's judged turn is part of the key (empty: the whole conversation)
        _turn_column(frame, path, where, lines)
        key.append("turn")
    dup = frame.duplicated(subset=key, keep="first")
    if dup.any():
        position = int(dup.to_numpy().argmax())
        values = tuple(frame.iloc[position][k] for k in key)
        raise InputError(f"duplicate key {tuple(key)} = {values}", path=str(path),
                         **{where: lines[position]}, field=key[0])


def _turn_column(frame: pd.DataFrame, path: Path, where: str, lines: list[int]) -> None:
    """The `turn` key column as nullable integers, or an InputError at its first bad cell."""
    import numpy as np
    import pandas as pd

    # true (and "1" in JSON, where text is quoted) is not a message index
    json_text = frame.attrs.get("format") == "jsonl"
    typed = frame["turn"].map(lambda v: isinstance(v, bool | np.bool_)
                              or (json_text and isinstance(v, str))).astype(bool)
    values = pd.to_numeric(frame["turn"].mask(typed, "bad"), errors="coerce")
    bad = (frame["turn"].notna() & values.isna()) | (values.notna() & (values % 1 != 0)) \
        | (values < 0)
    if bad.any():
        position = int(bad.to_numpy().argmax())
        given = frame["turn"].iloc[position]
        shown = json.dumps(bool(given)) if isinstance(given, bool | np.bool_) else repr(given)
        raise InputError(f"a turn is a message index (an integer >= 0, or empty), got "
                         f"{shown}", path=str(path),
                         **{where: lines[position]}, field="turn")
    frame["turn"] = values.astype("Int64")


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it into place in one step,
    on failure remove it, so a reader never sees a half-written file (`atomic_paths`)."""
    with atomic_paths(path) as (tmp,):
        yield tmp


@contextlib.contextmanager
def atomic_paths(*paths: str | Path) -> Iterator[tuple[Path, ...]]:
    """Yield one temporary path beside each of `paths`; when the block succeeds each is
    renamed into place, and when it fails every one is removed: the files are written as one
    unit, both or neither (a full disk fails a write, before any rename; the renames need no
    room).

    A file gets the permissions a plain `open(path, "w")` would give: an existing file's
    own, else 0o666 less the umask (the temporary file itself is created 0o600).

    The temporary file is `.{name}.{pid}.XXXXXXXX.tmp`, and this process holds an exclusive
    `flock` on it until it is renamed or removed. Before writing, each path's stale
    temporaries are removed and named on stderr (`remove_stale_temps`).
    """
    import fcntl

    targets = [Path(p) for p in paths]
    temps: list[Path] = []
    locks: list[int] = []
    try:
        for path in targets:
            path.parent.mkdir(parents=True, exist_ok=True)
            _say_removed(path, remove_stale_temps(path))
            handle, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.",
                                                suffix=".tmp", dir=path.parent)
            locks.append(handle)
            temps.append(Path(tmp_name))
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield tuple(temps)
        for path, tmp in zip(targets, temps, strict=True):
            os.chmod(tmp, _mode_for(path))
        for path, tmp in zip(targets, temps, strict=True):
            os.replace(tmp, path)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
        for handle in locks:
            os.close(handle)


STALE_TEMP_S = 15 * 60
_TEMP_RANDOM = r"[a-z0-9_]{8}"  # what tempfile.mkstemp puts between prefix and suffix


def remove_stale_temps(path: Path, *, older_than_s: float = STALE_TEMP_S) -> list[Path]:
    """Remove the stale temporary files of `atomic_paths(path)` and return them.

    A temporary is `path`'s when its name is `.{name}.{pid}.XXXXXXXX.tmp` (or, as older
    versions wrote it, `.{name}.XXXXXXXX.tmp`) and it is a regular file. It is stale when no
    process holds its `flock` (a writer holds it until it renames the file; the kernel drops
    it when the writer dies, however it dies) and either the process named in it is gone or
    it was not modified for `older_than_s` seconds (the pid may have been reused; a name
    without a pid has only the age). Files that only look alike (another destination's, a
    symlink, a directory) are left alone, and a file that cannot be removed is skipped."""
    import fcntl

    pattern = re.compile(rf"\.{re.escape(path.name)}\.(?:([0-9]+)\.)?{_TEMP_RANDOM}\.tmp")
    cutoff = time.time() - older_than_s
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue
            pid = match.group(1)
            if not (info.st_mtime < cutoff or (pid is not None and not process_alive(int(pid)))):
                continue
            handle = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a writer is alive
                os.unlink(entry.path)
            finally:
                os.close(handle)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def process_alive(pid: int) -> bool:
    """Whether a process `pid` exists on this machine (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def _say_removed(path: Path, removed: list[Path]) -> None:
    if removed:
        from judgebench.display import SafeWriter

        print(f"removed {len(removed)} stale temporary file(s) of {path} (their writer is "
              f"gone): {', '.join(p.name for p in removed)}", file=SafeWriter(sys.stderr))


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


_PROC_STATUS = Path("/proc/self/status")


def current_umask() -> int:
    """The process umask, read at each call.

    From /proc/self/status ("Umask:", Linux 4.7+) where the kernel reports it; elsewhere by
    `os.umask`, whose only way to read is to set and restore it: a process-wide change that
    another thread creating a file at that instant would see.
    """
    try:
        with _PROC_STATUS.open(encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_table(frame: pd.DataFrame, path: str | Path, *, csv_safe: bool = False,
                sidecar: Mapping[str, Any] | None = None) -> Path:
    """Write a table in the format its extension names, atomically; with `sidecar`, also
    `PATH.meta.json`, the two renamed into place together (both or neither).

    Every float reads back (`read_table`) bit for bit in every format: CSV and JSONL write
    the shortest text that round-trips (Python's `repr`), Parquet stores the doubles. A
    missing value is an empty CSV cell or JSON null; inf is written as `inf` / `Infinity`,
    never dropped (a reader rejects it with its line). `csv_safe`: see `table_csv`."""
    fmt = file_format(path)
    meta = [f"{path}.meta.json"] if sidecar is not None else []
    with atomic_paths(path, *meta) as (tmp, *meta_tmp):
        for m in meta_tmp:
            m.write_text(json.dumps(sidecar, indent=2), encoding="utf-8")
        if fmt == "csv":
            tmp.write_text(table_csv(frame, csv_safe=csv_safe), encoding="utf-8", newline="")
        elif fmt == "jsonl":
            tmp.write_text(table_jsonl(frame), encoding="utf-8", newline="")
        else:
            frame.to_parquet(tmp, index=False)
    return Path(path)


class TableWriter:
    """A wide table written to `path` chunk by chunk, in the format `fmt`, with the bytes (CSV,
    JSONL) or values and column types (Parquet) that `write_table` gives the whole table.

    Every chunk has the same columns. `has_cr`: whether any text cell of the whole table holds
    a CR, which makes CSV quote all text (`table_csv`); the header is checked here. Writes go
    to `path` as given: wrap it in `atomic_path` so that no reader sees a partial table."""

    def __init__(self, path: str | Path, *, fmt: str, csv_safe: bool = False,
                 has_cr: bool = False) -> None:
        self.path = Path(path)
        self.fmt = fmt
        self.csv_safe = csv_safe
        self.has_cr = has_cr
        self.rows = 0
        self._text = None if fmt == "parquet" else self.path.open(
            "w", encoding="utf-8", newline="")
        self._parquet: Any = None

    def write(self, frame: pd.DataFrame) -> None:
        if self.fmt == "csv":
            quote_all = self.has_cr or any("\r" in str(c) for c in frame.columns)
            assert self._text is not None
            self._text.write(table_csv(frame, csv_safe=self.csv_safe, header=self.rows == 0,
                                       quote_all=quote_all))
        elif self.fmt == "jsonl":
            assert self._text is not None
            self._text.write(table_jsonl(frame))
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._parquet is None:
                self._parquet = pq.ParquetWriter(self.path, table.schema)
            self._parquet.write_table(table)
        self.rows += len(frame)

    def close(self) -> None:
        if self._text is not None:
            self._text.close()
        if self._parquet is not None:
            self._parquet.close()

    def __enter__(self) -> TableWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: What a spreadsheet reads as the start of a formula (or, for tab and CR, a cell break).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_safe_text(text: str) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula gets a leading
    single quote (OWASP's CSV-injection rule); any other is unchanged."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def table_csv(
    frame: pd.DataFrame, *, csv_safe: bool = False, header: bool = True,
    quote_all: bool | None = None,
) -> str:
    """The table as CSV text (header, no index), floats written so that they read back exact.

    With `csv_safe`, every text cell and header that starts with = + - @, a tab or a CR is
    prefixed with a single quote so that a spreadsheet does not run it as a formula. Only
    text is touched: numbers (-1.5 in a numeric column) are written as they are. The prefix
    is part of the cell for any other reader: `read_table` reads it back as written.

    `header=False` and `quote_all` (the choice below, made for a whole table) write one chunk
    of a table that is written chunk by chunk (`TableWriter`)."""
    if csv_safe:
        import pandas as pd

        frame = frame.copy()
        frame.columns = [csv_safe_text(c) if isinstance(c, str) else c for c in frame.columns]
        for position, dtype in enumerate(frame.dtypes):
            if not pd.api.types.is_numeric_dtype(dtype):
                # pandas-stubs omit Series from isetitem's value, which pandas accepts
                frame.isetitem(position, frame.iloc[:, position].map(  # type: ignore[arg-type]
                    lambda v: csv_safe_text(v) if isinstance(v, str) else v))
    # The csv module quotes a cell only for the characters of its line terminator ("\n"):
    # a lone CR would end the row for a reader, so text with one is quoted, all text then.
    if quote_all is None:
        quote_all = any("\r" in text for text in _texts(frame))
    if quote_all:
        return frame.to_csv(index=False, header=header, quoting=csv.QUOTE_NONNUMERIC)
    return frame.to_csv(index=False, header=header)


def _texts(frame: pd.DataFrame) -> Iterator[str]:
    """The header and text cells of a table."""
    import pandas as pd

    yield from (str(c) for c in frame.columns)
    for position, dtype in enumerate(frame.dtypes):
        if not pd.api.types.is_numeric_dtype(dtype):
            yield from (v for v in frame.iloc[:, position] if isinstance(v, str))


# str.splitlines, which reads JSONL back, also breaks lines at these; json.dumps leaves them
# raw in strings with ensure_ascii=False, so they are written as JSON escapes.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def table_jsonl(frame: pd.DataFrame) -> str:
    """The table as JSON lines, one object per row: floats as Python's `repr` (17 significant
    digits where needed, so they read back exact), missing values as null."""
    columns = [str(c) for c in frame.columns]
    if len(set(columns)) < len(columns):
        raise ValueError(f"a JSONL table needs unique column names, got {columns}")
    cells = [[_json_value(v) for v in frame.iloc[:, position].tolist()]
             for position in range(frame.shape[1])]
    return "".join(
        json.dumps(dict(zip(columns, row, strict=True)), ensure_ascii=False)
        .translate(_LINE_BREAKS) + "\n"
        for row in zip(*cells, strict=True)
    ) if columns else "{}\n" * len(frame)


def _json_value(value: Any) -> Any:
    """A cell as a value json.dumps writes: numpy values as Python ones, missing as None."""
    if type(value) is float:  # the common case, first
        return None if value != value else value
    value = _plain(value)
    if isinstance(value, Mapping):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(value, pandas.Timestamp):
        return value.isoformat()
    return value


def write_text(text: str, path: str | Path) -> Path:
    """Write a text file (a report, JSON) atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)
