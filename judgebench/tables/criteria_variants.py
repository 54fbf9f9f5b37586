"""`fit --criteria-file FILE`: the user's wordings of a criterion, read and checked before any
call. A TOML file holds one table per wording (`[name]` with `text = "..."`); a JSONL file one
object per line, `{"name": ..., "text": ...}`. A bad wording is an InputError naming the file,
the table or line, and the field."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebench.errors import InputError

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
FIELDS = ("name", "text")


@dataclass(frozen=True)
class Variant:
    """One wording of the criterion: its name and its text (judge.rubric's `definition`)."""

    name: str
    text: str

    @property
    def digest(self) -> str:
        """The first 12 hex digits of the text's SHA-256 (how reports name the wording)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:12]


def read_variants(path: Path) -> list[Variant]:
    """The wordings of `path` (.toml: one table each; otherwise JSONL), in file order."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read it ({exc.strerror or exc})", path=where,
                         field="--criteria-file") from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=where, field="--criteria-file") from None
    found = _toml(text, where) if path.suffix.lower() == ".toml" else _jsonl(text, where)
    if not found:
        raise InputError("holds no wording of the criterion", path=where,
                         field="--criteria-file")
    return found


def _toml(text: str, where: str) -> list[Variant]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not TOML ({exc})", path=where) from None
    found: list[Variant] = []
    for name, table in data.items():
        place = f"table [{name}]"
        if not isinstance(table, dict):
            raise InputError(f"{name!r} is not a table: each wording is a table [name] with "
                             "text = \"...\"", path=where, field=name)
        unknown = sorted(set(table) - {"text"})
        if unknown:
            raise InputError(f"{place}: unknown field (a wording has only text)", path=where,
                             field=unknown[0])
        found.append(_variant(name, table.get("text"), where=where, place=place,
                              line=None, seen=found))
    return found


def _jsonl(text: str, where: str) -> list[Variant]:
    found: list[Variant] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON ({exc.msg})", path=where, line=number) from None
        if not isinstance(record, dict):
            raise InputError("not an object {\"name\": ..., \"text\": ...}", path=where,
                             line=number)
        unknown = sorted(set(record) - set(FIELDS))
        if unknown:
            raise InputError("unknown field (a wording has name and text)", path=where,
                             line=number, field=unknown[0])
        found.append(_variant(record.get("name"), record.get("text"), where=where, place="",
                              line=number, seen=found))
    return found


def _variant(name: Any, text: Any, *, where: str, place: str, line: int | None,
             seen: list[Variant]) -> Variant:
    prefix = f"{place}: " if place else ""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise InputError(f"{prefix}a wording's name is 1-64 letters, digits, '.', '_' or '-'"
                         f", starting with a letter or digit; got {name!r}", path=where,
                         line=line, field="name")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{prefix}the wording is a non-empty string", path=where, line=line,
                         field="text")
    for other in seen:
        if other.name == name:
            raise InputError(f"{prefix}the name {name!r} is given twice", path=where,
                             line=line, field="name")
        if other.text.strip() == text.strip():
            raise InputError(f"{prefix}the same text as {other.name!r} (a candidate tried "
                             "twice)", path=where, line=line, field="text")
    return Variant(name, text.strip())
