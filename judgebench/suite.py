"""Meta-evaluation suites: human-judgment data plus the protocol its source publishes.

A suite is a folder `<name>/` holding `suite.json` (described by `SuiteInfo`),
`samples.jsonl.gz` (the rows to score, in `score`'s input format, plus `subset` where the
suite has subsets), `human.jsonl.gz` (the human judgments keyed by `item`, `system` (a
pointwise suite), `item`, `system_a`, `system_b` (pairwise) or `item`, `candidate` (listwise:
one row per prompt and candidate, people's best marked 1, as `meta-eval listwise` reads it)),
`SOURCE.md` and `build.py`. Checksums in `suite.json`'s
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
    from judgebench.tables.destinations import Named

NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
SAMPLES, HUMAN, INFO = "samples.jsonl.gz", "human.jsonl.gz", "suite.json"
PAIR_KEY = ("item", "system_a", "system_b")
POINT_KEY = ("item", "system")
LIST_KEY = ("item", "candidate")
#: The statistics a listwise protocol (level `prompt`) may ask for: best-of-N accuracy
#: (`meta_eval.best_of_n`, RewardBench 2's rule).
LISTWISE_STATISTICS = ("accuracy",)
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
    level: Literal["system", "item", "global", "pair", "prompt"]
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
    kind: Literal["pointwise", "pairwise", "listwise"]
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
        the pairwise kind uses the pair level, the listwise kind the prompt level (best-of-N
        accuracy, no grouping, ties or failed_as option; no stored baseline verdicts)."""
        names = [p.name for p in self.protocols]
        if len(set(names)) != len(names):
            raise InputError("two protocols share a name", path=where, field="protocols")
        for p in self.protocols:
            if p.criterion not in self.criteria:
                raise InputError(f"protocol '{p.name}' names criterion '{p.criterion}', not "
                                 f"one of {self.criteria}", path=where, field="protocols")
            if (p.level == "pair") != (self.kind == "pairwise") or \
                    (p.level == "prompt") != (self.kind == "listwise"):
                raise InputError(f"protocol '{p.name}': level '{p.level}' does not fit a "
                                 f"{self.kind} suite (pairwise: pair, listwise: prompt)",
                                 path=where, field="protocols")
            if p.level == "prompt":
                _check_listwise(p, where)
            if p.by == "subset" and not self.subsets:
                raise InputError(f"protocol '{p.name}' is by subset, but the suite has no "
                                 "subsets", path=where, field="protocols")
        for k, row in enumerate(self.published):
            if row.protocol not in names:
                raise InputError(f"names protocol '{row.protocol}'"
                                 f"{did_you_mean(row.protocol, names)}", path=where,
                                 field=f"published[{k}].protocol")
            if row.verdicts_column is not None and self.kind == "listwise":
                raise InputError("a listwise suite stores no baseline's picks: leave "
                                 "verdicts_column out", path=where,
                                 field=f"published[{k}].verdicts_column")
            if row.subset is not None and row.subset not in self.subsets:
                raise InputError(f"names subset '{row.subset}', not one of "
                                 f"{list(self.subsets)}", path=where,
                                 field=f"published[{k}].subset")


def _check_listwise(protocol: Protocol, where: str) -> None:
    """A listwise protocol asks for best-of-N accuracy per prompt and nothing else."""
    unknown = [s for s in protocol.statistics if s not in LISTWISE_STATISTICS]
    if unknown:
        raise InputError(f"protocol '{protocol.name}': a listwise protocol's statistics are "
                         f"{list(LISTWISE_STATISTICS)} (best-of-N accuracy), not {unknown}",
                         path=where, field="protocols")
    for name in ("grouping", "ties", "failed_as"):
        if getattr(protocol, name) is not None:
            raise InputError(f"protocol '{protocol.name}': a listwise protocol takes no "
                             f"{name} (a failed prompt is left out and counted)", path=where,
                             field="protocols")


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
        the file and line for a line that is not a JSON object (`numbered_rows`)."""
        for _line, row in self.numbered_rows(file):
            yield row

    def numbered_rows(self, file: str) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, row) for each row of `file`, read as the JSONL reader of `score`
        reads (`io._jsonl_records`: malformed, too deep, too long an integer, not an object);
        a file that is not gzip or a line that is not UTF-8 is an InputError naming it."""
        import zlib

        from judgebench.tables.io import _jsonl_records as jsonl_records

        path = self.folder / file
        try:
            yield from jsonl_records(_gzip_lines(path), path)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise InputError(f"not a readable gzip file ({exc}); a suite's {file} is gzip "
                             "compressed JSONL", path=str(path)) from None

    def samples(self) -> list[dict[str, Any]]:
        return list(self.rows(SAMPLES))

    def human(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(list(self.rows(HUMAN)))

    def fields(self) -> set[str]:
        """The sample fields some row of `samples.jsonl.gz` fills (what a metric may require),
        with those a conversation derives from its messages (`output`, `input`:
        judgebench.conversation.derived_fields)."""
        found: set[str] = set()
        for row in self.rows(SAMPLES):
            found |= {k for k, v in row.items() if v not in (None, "")}
            if isinstance(row.get("messages"), list):
                found |= _derived(row)
        return found

    def size(self) -> int:
        return sum(1 for _ in self.rows(SAMPLES))

    @property
    def key(self) -> tuple[str, ...]:
        return {"pairwise": PAIR_KEY, "listwise": LIST_KEY}.get(self.info.kind, POINT_KEY)


def _derived(row: dict[str, Any]) -> set[str]:
    """The fields a conversation row derives from its messages (none where it is not a
    valid sample: `score` says why when it reads it)."""
    from judgebench.conversation import derived_fields
    from judgebench.models import Sample

    try:
        return {k for k, v in derived_fields(Sample.model_validate(row)).items() if v}
    except (ValueError, TypeError):
        return set()


def _gzip_lines(path: Path) -> Iterator[str]:
    """The lines of the gzip file `path`, each decoded as UTF-8 (InputError naming the line
    otherwise)."""
    with gzip.open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"invalid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                 f"{exc.start + 1})", path=str(path), line=line_no) from None


def sha256_file(path: Path) -> str:
    with path.open("rb") as handle:
        return f"sha256:{hashlib.file_digest(handle, 'sha256').hexdigest()}"


def load_suite(folder: str | Path, origin: str = "--suite-path") -> Suite:
    """The suite in `folder`: `suite.json` validated, every listed file's sha256 (of its bytes
    as stored) verified. InputError naming the file (and field) otherwise."""
    folder = Path(folder)
    info_path = folder / INFO
    raw = _read_info(folder, info_path)
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


def _read_info(folder: Path, info_path: Path) -> Any:
    """`suite.json` parsed, or an InputError naming it (and the line or field)."""
    from judgebench.tables.io import _decode as decode_utf8
    from judgebench.tables.io import _deepest as deepest_key

    try:
        data = info_path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"no {INFO}: a suite folder holds {INFO}, {SAMPLES} and {HUMAN}",
                         path=str(folder)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(info_path)
                         ) from None
    text = decode_utf8(data, info_path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", path=str(info_path), line=exc.lineno) from None
    except RecursionError:
        field, depth = deepest_key(text)
        raise InputError(f"JSON nested {depth} levels deep, deeper than this reader reads",
                         path=str(info_path), field=field) from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise InputError(f"not JSON: {exc}", path=str(info_path)) from None


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
    `metadata.category` (pairwise, where the pairwise table reads it) or stays `subset`
    (listwise, where the listwise reader reads it). Pairwise human labels
    a/b/tie become 1/0/0.5, as `score`'s input takes them; any other label must be a number
    or null, as `score` takes it (`io.human_value`). An InputError names the file, line and
    field of a human row without its key, a label of another kind, or a sample whose
    `metadata` or `human` is not an object."""
    human: dict[tuple[str, ...], dict[str, float | None]] = {}
    human_path = str(suite.folder / HUMAN)
    for line, judged in suite.numbered_rows(HUMAN):
        key = _key(judged, suite.key, human_path, line)
        human[key] = {c[len("human."):]: _label(v, human_path, line, c)
                      for c, v in judged.items() if c.startswith("human.")}
    out = []
    samples_path = str(suite.folder / SAMPLES)
    for line, row in suite.numbered_rows(SAMPLES):
        row = dict(row)
        for name in ("metadata", "human"):
            if row.get(name) is not None and not isinstance(row[name], dict):
                raise InputError(f"'{name}' is an object of named values, not a "
                                 f"{type(row[name]).__name__}", path=samples_path, line=line,
                                 field=name)
        # a listwise row keeps its `subset`: the listwise reader takes it as a column
        subset = row.pop("subset", None) if suite.info.kind != "listwise" else None
        if subset is not None:
            field = "category" if suite.info.kind == "pairwise" else "subset"
            row["metadata"] = {**(row.get("metadata") or {}), field: subset}
        key = tuple(str(row.get(k)) for k in suite.key)
        labels = human.get(key, {})
        if labels:
            row["human"] = {**(row.get("human") or {}), **labels}
        out.append(row)
    return out


_PREFERENCE = {"a": 1.0, "b": 0.0, "tie": 0.5}


def _key(row: dict[str, Any], key: Sequence[str], path: str, line: int) -> tuple[str, ...]:
    """The row's key as text; an InputError for a key field missing or not text/integer."""
    for name in key:
        value = row.get(name)
        if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
            got = "missing" if value is None else f"a {type(value).__name__}"
            raise InputError(f"a human row is keyed by {', '.join(key)}: '{name}' is text or "
                             f"an integer, here {got}", path=path, line=line, field=name)
    return tuple(str(row[name]) for name in key)


def _label(value: Any, path: str, line: int, field: str) -> float | None:
    """A human label as `score` takes it: a/b/tie (pairwise) as 1/0/0.5, else a finite
    number or null (`io.human_value`, which refuses booleans, text and objects)."""
    from judgebench.tables.io import human_value

    if isinstance(value, str) and value.strip().lower() in _PREFERENCE:
        return _PREFERENCE[value.strip().lower()]
    return human_value(value, tabular=False, where={"path": path, "line": line}, field=field)


EXPORTED = ("samples.jsonl", "human.jsonl")


def suite_inputs(suite: Suite) -> list[list[Named]]:
    """The destinations groups of the files a suite is read from: `suite.json` and every file
    it lists, named `--suite-path` or the suite's plugin."""
    from judgebench.tables import destinations

    option = "--suite-path" if suite.origin == "--suite-path" else f"suite {suite.name}"
    return [destinations.read(option, suite.folder / file)
            for file in (INFO, *suite.info.files)]


def export_destinations(suite: Suite, directory: str | Path, option: str
                        ) -> list[list[Named]]:
    """The destinations groups (`tables.destinations`) of exporting `suite` into
    `directory`: its files read, the two files written."""
    from judgebench.tables import destinations

    directory = Path(directory)
    return [*suite_inputs(suite),
            *(destinations.written(option, directory / name, f"{option} {name}")
              for name in EXPORTED)]


def export(suite: Suite, directory: str | Path, *, force: bool = False,
           option: str = "--export") -> dict[str, Path]:
    """Write `samples.jsonl` (`score` input with the human judgments) and `human.jsonl` (the
    human table as stored, every annotator) into `directory`; the paths written. Before
    anything is written the destinations are checked (`tables.destinations`: none may be
    an input, each must be writable), an existing file is refused without `force`, and every
    row is read and checked (`score_rows`): a refused export writes nothing."""
    from judgebench.tables import destinations
    from judgebench.tables.io import atomic_path

    directory = Path(directory)
    destinations.check(export_destinations(suite, directory, option))
    if not force:
        destinations.refuse_replacing(option, [directory / name for name in EXPORTED])
    contents = {"samples.jsonl": score_rows(suite), "human.jsonl": list(suite.rows(HUMAN))}
    written = {}
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, rows in contents.items():
            path = directory / name
            with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            written[name] = path
    except (PermissionError, FileExistsError, NotADirectoryError, IsADirectoryError) as exc:
        # what the file system refuses that a mode bit does not say (a read-only mount)
        raise InputError(f"cannot write: {exc.strerror}", path=str(exc.filename or directory),
                         field=option) from None
    return written
