"""Meta-evaluation suites: human-judgment data plus the protocol its source publishes.

A suite is a folder `<name>/` holding `suite.json` (described by `SuiteInfo`),
`samples.jsonl.gz` (the rows to score, in `score`'s input format, plus `subset` where the
suite has subsets), `human.jsonl.gz` (the human judgments keyed by `item`, `system` or
`item`, `system_a`, `system_b`), `SOURCE.md` and `build.py`. Checksums in `suite.json`'s
`files` are the sha256 of each file's bytes as stored (the compressed file, not its
content): `load_suite` verifies every one before reading anything, and a mismatch is an
InputError naming the file.

Suites come from the `register_suites` hook (the `judgebench[suites]` distribution and any
third-party package) or from a folder given with `--suite-path` (a suite folder, or a folder
of suite folders).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from judgebench.errors import InputError
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost

NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
SAMPLES, HUMAN, INFO = "samples.jsonl.gz", "human.jsonl.gz", "suite.json"
PAIR_KEY = ("item", "system_a", "system_b")
POINT_KEY = ("item", "system")
#: How a suite's level names map onto meta-eval's (`item` is a segment-level statistic
#: computed per item; `pair` is the pairwise path).
LEVELS = {"system": ("system", "none"), "item": ("segment", "item"),
          "global": ("segment", "none")}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Protocol(_Strict):
    """One meta-evaluation setting the source publishes."""

    name: str = Field(min_length=1)
    criterion: str = Field(min_length=1)
    level: Literal["system", "item", "global", "pair"]
    grouping: Literal["item", "system"] | None = None
    statistics: list[str] = Field(min_length=1)
    human: str = Field(pattern=r"^human\.")
    ties: str | None = None
    failed_as: str | None = None
    by: Literal["subset"] | None = None


class Published(_Strict):
    """A headline number of the source, and how to reproduce it."""

    metric: str = Field(min_length=1)
    spec: str | None = None
    protocol: str
    statistic: str
    subset: str | None = None
    value: float
    precision: int = Field(ge=0, le=6)
    table: str = Field(min_length=1)
    verdicts_column: str | None = None


class Source(_Strict):
    repository: str
    commit: str
    files: list[str]


class SuiteInfo(_Strict):
    """What `suite.json` holds (the layout in docs/guides/suites.md)."""

    name: str
    title: str
    description: str
    kind: Literal["pointwise", "pairwise"]
    criteria: list[str] = Field(min_length=1)
    annotators: dict[str, list[str]] = Field(default_factory=dict)
    subsets: dict[str, str] = Field(default_factory=dict)
    protocols: list[Protocol] = Field(min_length=1)
    published: list[Published] = Field(default_factory=list)
    licence: str
    licence_url: str | None = None
    citation: str
    source: Source
    files: dict[str, str]

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.match(value):
            raise ValueError("a suite name is lowercase letters, digits and '-'")
        return value

    @field_validator("files")
    @classmethod
    def _files(cls, value: dict[str, str]) -> dict[str, str]:
        for required in (SAMPLES, HUMAN):
            if required not in value:
                raise ValueError(f"lists no checksum for {required}")
        for name, digest in value.items():
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                raise ValueError(f"{name}: a checksum is 'sha256:' and 64 hex digits")
        return value

    def protocol(self, name: str) -> Protocol:
        for p in self.protocols:
            if p.name == name:
                return p
        raise KeyError(name)

    def check(self, where: str) -> None:
        """Cross-field rules: protocols name known criteria, published rows known protocols,
        the pairwise kind uses the pair level."""
        names = [p.name for p in self.protocols]
        if len(set(names)) != len(names):
            raise InputError("two protocols share a name", path=where, field="protocols")
        for p in self.protocols:
            if p.criterion not in self.criteria:
                raise InputError(f"protocol '{p.name}' names criterion '{p.criterion}', not "
                                 f"one of {self.criteria}", path=where, field="protocols")
            if (p.level == "pair") != (self.kind == "pairwise"):
                raise InputError(f"protocol '{p.name}': level '{p.level}' does not fit a "
                                 f"{self.kind} suite", path=where, field="protocols")
            if p.by == "subset" and not self.subsets:
                raise InputError(f"protocol '{p.name}' is by subset, but the suite has no "
                                 "subsets", path=where, field="protocols")
        for k, row in enumerate(self.published):
            if row.protocol not in names:
                raise InputError(f"names protocol '{row.protocol}'"
                                 f"{did_you_mean(row.protocol, names)}", path=where,
                                 field=f"published[{k}].protocol")
            if row.subset is not None and row.subset not in self.subsets:
                raise InputError(f"names subset '{row.subset}', not one of "
                                 f"{list(self.subsets)}", path=where,
                                 field=f"published[{k}].subset")


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its info and folder (checksums verified)."""

    info: SuiteInfo
    folder: Path
    origin: str  # the plugin that registered it, or "--suite-path"

    @property
    def name(self) -> str:
        return self.info.name

    def rows(self, file: str) -> Iterator[dict[str, Any]]:
        """The JSON rows of `file` (`samples.jsonl.gz` or `human.jsonl.gz`); InputError naming
        the file and line for a line that is not a JSON object."""
        path = self.folder / file
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputError(f"not JSON: {exc.msg}", path=str(path),
                                     line=line_no) from None
                if not isinstance(row, dict):
                    raise InputError("a row is a JSON object", path=str(path), line=line_no)
                yield row

    def samples(self) -> list[dict[str, Any]]:
        return list(self.rows(SAMPLES))

    def human(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(list(self.rows(HUMAN)))

    def fields(self) -> set[str]:
        """The sample fields some row of `samples.jsonl.gz` fills (what a metric may require)."""
        return {k for row in self.rows(SAMPLES) for k, v in row.items() if v not in (None, "")}

    def size(self) -> int:
        return sum(1 for _ in self.rows(SAMPLES))

    @property
    def key(self) -> tuple[str, ...]:
        return PAIR_KEY if self.info.kind == "pairwise" else POINT_KEY


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return f"sha256:{hashlib.file_digest(handle, 'sha256').hexdigest()}"


def load_suite(folder: str | Path, origin: str = "--suite-path") -> Suite:
    """The suite in `folder`: `suite.json` validated, every listed file's sha256 (of its bytes
    as stored) verified. InputError naming the file (and field) otherwise."""
    folder = Path(folder)
    info_path = folder / INFO
    try:
        raw = json.loads(info_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no {INFO}: a suite folder holds {INFO}, {SAMPLES} and {HUMAN}",
                         path=str(folder)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=str(info_path), line=exc.lineno) from None
    try:
        info = SuiteInfo.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        raise InputError(first["msg"], path=str(info_path), field=field) from None
    info.check(str(info_path))
    if info.name != folder.name:
        raise InputError(f"names the suite '{info.name}', but its folder is '{folder.name}'",
                         path=str(info_path), field="name")
    for file, digest in info.files.items():
        path = folder / file
        if not path.is_file():
            raise InputError(f"listed in {INFO} but missing", path=str(path))
        actual = sha256_file(path)
        if actual != digest:
            raise InputError(f"checksum mismatch: {INFO} says {digest}, the file is {actual}",
                             path=str(path))
    return Suite(info, folder, origin)


def suite_folders(path: str | Path) -> list[Path]:
    """`path` itself when it is a suite folder, else its sub-folders that hold a suite.json."""
    path = Path(path)
    if (path / INFO).is_file():
        return [path]
    if not path.is_dir():
        raise InputError("no such folder", path=str(path), field="--suite-path")
    found = sorted(p for p in path.iterdir() if (p / INFO).is_file())
    if not found:
        raise InputError(f"holds no suite (a folder with {INFO})", path=str(path),
                         field="--suite-path")
    return found


def available(suite_paths: Sequence[str | Path] = (), *, host: PluginHost
              ) -> dict[str, tuple[Path, str]]:
    """Every suite by name -> (folder, origin): the registered ones (`register_suites`), then
    those under `suite_paths`, which may not reuse a registered name."""
    found = {name: (entry.obj, entry.plugin) for name, entry in host.suites().items()}
    for path in suite_paths:
        for folder in suite_folders(path):
            name = folder.name
            if name in found:
                raise InputError(f"suite '{name}' is already registered by "
                                 f"'{found[name][1]}'", path=str(folder), field="--suite-path")
            found[name] = (folder, "--suite-path")
    return found


def resolve(names: str, suite_paths: Sequence[str | Path] = (), *, host: PluginHost
            ) -> list[Suite]:
    """The suites `names` asks for (comma-separated, or `all`), loaded and verified."""
    known = available(suite_paths, host=host)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    if not wanted:
        raise InputError("name a suite (see `judgebench suites`)", field="--suite")
    if wanted == ["all"]:
        wanted = sorted(known)
    for name in wanted:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none; pip install 'judgebench[suites]'"
            raise InputError(f"unknown suite '{name}'{did_you_mean(name, known)} (suites: "
                             f"{listed})", field="--suite")
    return [load_suite(*known[name]) for name in wanted]


# -- export: the samples as `score` input, the human table beside them ----------------------
def score_rows(suite: Suite) -> list[dict[str, Any]]:
    """The samples as `score` input rows, each with its human judgments (`human` field) so a
    scored table carries them: a subset goes to `metadata.subset` (pointwise) or
    `metadata.category` (pairwise, where the pairwise table reads it). Pairwise human labels
    a/b/tie become 1/0/0.5, as `score`'s input takes them."""
    human = {tuple(str(r[k]) for k in suite.key): r for r in suite.rows(HUMAN)}
    out = []
    for row in suite.rows(SAMPLES):
        row = dict(row)
        subset = row.pop("subset", None)
        if subset is not None:
            field = "category" if suite.info.kind == "pairwise" else "subset"
            row["metadata"] = {**row.get("metadata", {}), field: subset}
        key = tuple(str(row.get(k)) for k in suite.key)
        judged = human.get(key, {})
        labels = {c[len("human."):]: _number(v) for c, v in judged.items()
                  if c.startswith("human.")}
        if labels:
            row["human"] = {**row.get("human", {}), **labels}
        out.append(row)
    return out


_PREFERENCE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, str):
        return _PREFERENCE[value.strip().lower()]
    return float(value)


def export(suite: Suite, directory: str | Path) -> dict[str, Path]:
    """Write `samples.jsonl` (`score` input with the human judgments) and `human.jsonl` (the
    human table as stored, every annotator) into `directory`; the paths written."""
    from judgebench.tables.io import atomic_path

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, rows in (("samples.jsonl", score_rows(suite)),
                       ("human.jsonl", list(suite.rows(HUMAN)))):
        path = directory / name
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        written[name] = path
    return written
