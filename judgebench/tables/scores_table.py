"""A scores table as meta-eval, audit and aggregate read it: the frame, plus what each metric
column is (its direction and its system scores), from one rule.

Direction of a column, first that applies:
1. the user's flag (`--lower-is-better COL` / `--higher-is-better COL`, one spelling on every
   command);
2. `higher_is_better` in the table's sidecar (`OUT.meta.json`, written by `judgebench score`);
3. the registered metric the column names (`lexical.ter:normalized=true` names `lexical.ter`),
   read from a cached registry without importing plugins (`judgebench.tables.directions`);
4. higher is better.

System scores of a column: its corpus scores (one per system, e.g. corpus BLEU or MAUVE) where
the sidecar, or a corpus table given with `--corpus`, holds them; otherwise the mean of its
segment scores. A corpus-only metric (no segment scores) is a column of this table all the
same, known at system level only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from judgebench.errors import InputError
from judgebench.suggest import did_you_mean

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.plugins import PluginHost
    from meta_eval.arrays import FloatArray

DirectionSource = Literal["flag", "sidecar", "metric", "default"]
CORPUS_COLUMNS = ("system", "metric", "value")


@dataclass(frozen=True)
class ColumnInfo:
    """What one metric column is: its metric, direction and corpus scores (if any)."""

    column: str
    metric: str | None
    higher_is_better: bool
    direction_from: DirectionSource
    signature: str | None = None
    in_table: bool = True  # False for a corpus-only metric

    def describe(self) -> dict[str, Any]:
        """The direction fields every result carries."""
        return {"higher_is_better": self.higher_is_better, "flipped": not self.higher_is_better,
                "direction_from": self.direction_from}


@dataclass
class ScoresTable:
    """A wide scores table and what its sidecar (or corpus table) says about its columns."""

    path: Path
    frame: pd.DataFrame
    sidecar: dict[str, Any] | None
    corpus: dict[str, dict[str, float]] = field(default_factory=dict)  # column -> system -> v
    lower: frozenset[str] = frozenset()
    higher: frozenset[str] = frozenset()
    # metric name -> higher_is_better; None: read when a column first needs it
    registered: Mapping[str, bool] | None = None
    #: The plugin host whose metrics give a column's direction; None: the installed
    #: plugins' (judgebench.tables.directions), read when a column first needs it (meta-eval
    #: starts without a host).
    host: PluginHost | None = field(default=None, compare=False, repr=False)
    #: column -> the systems whose corpus score failed (parse_error, refused, error)
    corpus_failed: dict[str, set[str]] = field(default_factory=dict)

    def info(self, column: str) -> ColumnInfo:
        described = self.described(column)
        name = described.get("metric") or column.partition(":")[0].strip()
        decided = "higher_is_better" in described or column in self.lower | self.higher
        registered = None if described and decided else self.registered_metrics().get(name)
        source: DirectionSource = "default"
        higher = True
        if registered is not None:
            higher, source = registered, "metric"
        if "higher_is_better" in described:
            higher, source = bool(described["higher_is_better"]), "sidecar"
        if column in self.lower:
            higher, source = False, "flag"
        if column in self.higher:
            higher, source = True, "flag"
        return ColumnInfo(column=column, metric=name if registered is not None or described
                          else None, higher_is_better=higher, direction_from=source,
                          signature=described.get("signature"),
                          in_table=column in self.frame.columns)

    def registered_metrics(self) -> Mapping[str, bool]:
        """Metric name -> higher_is_better of every registered metric: `host`'s, else the
        installed plugins' (`judgebench.tables.directions`: no plugin is imported when the
        registry is cached)."""
        if self.registered is None:
            from judgebench.tables.directions import metric_directions

            self.registered = metric_directions(self.host)
        return self.registered

    def described(self, column: str) -> dict[str, Any]:
        """What the sidecar says of `column` (empty without a sidecar entry)."""
        columns = (self.sidecar or {}).get("columns")
        info = columns.get(column) if isinstance(columns, dict) else None
        return info if isinstance(info, dict) else {}

    @property
    def corpus_only(self) -> list[str]:
        """Columns with corpus scores and no segment column in the table."""
        return [c for c in self.corpus if c not in self.frame.columns]

    def check_flags(self, columns: Iterable[str]) -> None:
        """The direction flags must name metric columns, and not one column both ways."""
        known = set(columns)
        both = sorted(self.lower & self.higher)
        if both:
            raise InputError("a column cannot be both lower- and higher-is-better",
                             field=both[0])
        for flag, names in (("--lower-is-better", self.lower), ("--higher-is-better",
                                                                self.higher)):
            unknown = sorted(set(names) - known)
            if unknown:
                raise InputError(f"{unknown[0]!r} is not a metric column here"
                                 f"{did_you_mean(unknown[0], known)}; metric columns "
                                 f"are {sorted(known)}", path=str(self.path), field=flag)

    def system_scores(self, column: str, systems: Sequence[str]) -> list[float] | None:
        """The column's corpus score per system (NaN where missing), or None without any."""
        scores = self.corpus.get(column)
        if scores is None:
            return None
        return [float(scores.get(s, math.nan)) for s in systems]

    def oriented(self, frame: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
        """A copy of `frame` (this table, or rows of it) with every lower-is-better column of
        `columns` negated, so that higher is better in each."""
        out = frame.copy()
        for column in columns:
            if column in out.columns and not self.info(column).higher_is_better:
                out[column] = -out[column]
        return out

    def oriented_system_scores(self, columns: Iterable[str], systems: Sequence[str]
                               ) -> dict[str, FloatArray]:
        """Column -> its corpus score per system, negated where lower is better, for the
        columns of `columns` that have corpus scores (their system score at system level)."""
        import numpy as np

        out = {}
        for column in columns:
            scores = self.system_scores(column, systems)
            if scores is not None:
                sign = 1.0 if self.info(column).higher_is_better else -1.0
                out[column] = sign * np.asarray(scores, dtype=float)
        return out


#: The DataFrame attribute that holds a table's sidecar (`ScoreResult.to_frame` sets it).
SIDECAR_ATTR = "sidecar"


def read_sidecar(path: Path) -> dict[str, Any] | None:
    """The `.meta.json` that `judgebench score -o FILE` writes beside FILE, if any."""
    sidecar = Path(f"{path}.meta.json")
    if not sidecar.is_file():
        return None
    try:
        data = json.loads(sidecar.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON: {exc}", path=str(sidecar)) from None
    if not isinstance(data, dict):
        raise InputError("not a judgebench sidecar (expected a JSON object)", path=str(sidecar))
    problem = _sidecar_problem(data)
    if problem is not None:
        where, message, got = problem
        raise InputError(f"not a judgebench sidecar: {message} (got {json.dumps(got)[:60]})",
                         path=str(sidecar), field=where)
    return data


# The types of what a sidecar says (other keys are let through: newer writers may add some): a
# wrong type is refused, not read as something else (a "yes" direction, a count in text).
# Checked by hand rather than by a pydantic model: meta-eval reads a sidecar on every run and
# loads no pydantic (tests/test_meta_eval_startup.py). (kind, required) per key.
_Shape = dict[str, tuple[str, bool]]
_SIDECAR: _Shape = {"columns": ("columns", False), "corpus": ("corpus", False),
                    "computed": ("integer", False), "reused": ("integer", False),
                    "rows": ("integer", False), "selection": ("dictionary", False),
                    "store": ("string", False), "table": ("string", False)}
_COLUMN: _Shape = {"metric": ("string", False), "signature": ("string", False),
                   "higher_is_better": ("boolean", False), "level": ("string", False),
                   "has_corpus": ("boolean", False), "repeats": ("count", False),
                   "repeats_cell": ("string", False), "statuses": ("counts", False)}
_CORPUS: _Shape = {"system": ("string", True), "metric": ("string", True),
                   "value": ("number", False), "status": ("string", False),
                   "reason": ("string", False), "signature": ("string", False),
                   "n": ("integer", False)}
_IS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "dictionary": lambda v: isinstance(v, dict),
    "list": lambda v: isinstance(v, list),
}


def _sidecar_problem(data: dict[str, Any]) -> tuple[str, str, Any] | None:
    """(field, what is wrong, the value) of the first value of the wrong type, or None."""
    return _object_problem(data, _SIDECAR, "")


def _object_problem(data: dict[str, Any], shape: _Shape, prefix: str
                    ) -> tuple[str, str, Any] | None:
    for key, (kind, required) in shape.items():
        if key not in data:
            if required:
                return f"{prefix}{key}", "field required", data
            continue
        found = _value_problem(data[key], kind, f"{prefix}{key}")
        if found is not None:
            return found
    return None


def _value_problem(value: Any, kind: str, where: str) -> tuple[str, str, Any] | None:
    if value is None:
        return None
    if kind in _IS:
        return None if _IS[kind](value) else (where, f"input should be a valid {kind}", value)
    if kind == "count":
        return (_value_problem(value, "integer", where)
                or (None if value >= 1 else (where, "input should be at least 1", value)))
    container = "list" if kind == "corpus" else "dictionary"
    if not _IS[container](value):
        return where, f"input should be a valid {container}", value
    if kind == "corpus":
        for number, row in enumerate(value):
            found = (_object_problem(row, _CORPUS, f"{where}.{number}.") if _IS["dictionary"](row)
                     else (f"{where}.{number}", "input should be a valid dictionary", row))
            if found is not None:
                return found
        return None
    inner: Callable[[str, Any], tuple[str, str, Any] | None] = {
        "columns": lambda key, v: (
            _object_problem(v, _COLUMN, f"{where}.{key}.") if _IS["dictionary"](v)
            else (f"{where}.{key}", "input should be a valid dictionary", v)),
        "counts": lambda key, v: (None if _IS["integer"](v) else
                                  (f"{where}.{key}", "input should be a valid integer", v)),
    }[kind]
    for key, item in value.items():
        found = inner(key, item)
        if found is not None:
            return found
    return None


def corpus_from_records(records: Iterable[Mapping[str, Any]], *, where: str
                        ) -> dict[str, dict[str, float]]:
    """{column: {system: value}} from corpus rows (system, metric, value[, status]); a failed
    corpus score (no value, or a status other than ok) is NaN: missing, never 0."""
    out: dict[str, dict[str, float]] = {}
    for number, row in enumerate(records, start=1):
        try:
            system, column = str(row["system"]), str(row["metric"])
        except KeyError as exc:
            raise InputError(f"corpus row {number} has no {exc.args[0]!r}", path=where) from None
        value = row.get("value")
        status = row.get("status") or "ok"
        try:
            number_value = math.nan if value is None or status != "ok" else float(value)
        except (TypeError, ValueError):
            raise InputError(f"corpus value {value!r} is not a number", path=where,
                             field="value", row=number) from None
        if not (math.isnan(number_value) or math.isfinite(number_value)):
            raise InputError(f"corpus value {value!r} is not finite", path=where,
                             field="value", row=number)
        scores = out.setdefault(column, {})
        if system in scores:
            raise InputError(f"corpus score of ({system!r}, {column!r}) given twice",
                             path=where, field="metric", row=number)
        scores[system] = number_value
    return out


def corpus_failures(records: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """{column: systems} of the corpus rows whose status is a failure (parse_error, refused,
    error; not skipped): failed corpus scores, told from ones never computed."""
    from judgebench.tables.failed import FAILED_STATUSES

    out: dict[str, set[str]] = {}
    for row in records:
        if str(row.get("status") or "ok") in FAILED_STATUSES and "metric" in row:
            out.setdefault(str(row["metric"]), set()).add(str(row.get("system")))
    return out


def is_corpus_table(columns: Iterable[str]) -> bool:
    """A long table of corpus scores, as `judgebench score --corpus` writes it."""
    names = set(columns)
    return set(CORPUS_COLUMNS) <= names and "item" not in names


def read_corpus_table(path: Path) -> dict[str, dict[str, float]]:
    return corpus_from_records(corpus_records(path), where=str(path))


def corpus_records(path: Path) -> list[dict[str, Any]]:
    """The rows of a corpus table (system, metric, value[, status]), checked for columns."""
    from judgebench.tables.io import read_table

    frame = read_table(path, key=("system", "metric"), text_columns=("status",))
    for column in CORPUS_COLUMNS:
        if column not in frame.columns:
            raise InputError("not a corpus table: it needs columns system, metric, value",
                             path=str(path), field=column)
    # read_table names columns by the file's header: strings
    return cast("list[dict[str, Any]]", frame.astype(object).where(frame.notna(), None)
                .to_dict(orient="records"))


def refuse_pairwise(path: Path, *, sidecar: Mapping[str, Any] | None,
                    frame: pd.DataFrame | None = None) -> None:
    """A pairwise table is not a wide one: an InputError when the sidecar says the table is
    pairwise, or when every `system` of `frame` reads "X vs Y" (the store's name of a pair,
    which the wide table of an older pairwise run held)."""
    advice = ("a pairwise table has one row per compared pair (item, system_a, system_b, "
              "and per judge the verdict columns SPEC, SPEC.ab, SPEC.ba); read it with "
              "`judgebench meta-eval pairwise PAIRS` or `judgebench compare-judges`, not "
              "as a wide scores table (one row per item and system)")
    if (sidecar or {}).get("table") == "pairwise":
        raise InputError(f"the sidecar says this is a pairwise table: {advice}",
                         path=str(path))
    if frame is None:
        return
    if "system" not in frame.columns and {"system_a", "system_b"} <= set(frame.columns):
        raise InputError(f"this table has system_a and system_b, not system: {advice}",
                         path=str(path), field="system")
    if "system" not in frame.columns:
        return
    from meta_eval.pairwise import names_pairs

    systems = [str(s) for s in frame["system"].dropna().unique()]
    if names_pairs(systems):
        raise InputError(f"every system looks like a pair ({systems[0]!r}): score the pairs "
                         f"again (`judgebench score` writes the pairwise table); {advice}",
                         path=str(path), field="system")


def load_scores_table(path: Path, *, key: Sequence[str] | None = ("item", "system"),
                      corpus_path: Path | None = None, lower: Iterable[str] = (),
                      higher: Iterable[str] = (), host: PluginHost | None = None,
                      frame: pd.DataFrame | None = None, turns: str | None = "unit"
                      ) -> ScoresTable:
    """Read a scores table with its sidecar and corpus scores (see the module docstring).
    A table of judged turns is laid out as `turns` says (`judgebench.tables.turn_table`; None:
    kept as it is, for a reader that lays it out per view)."""
    from judgebench.tables.io import read_table
    from judgebench.tables.turn_table import has_turns, turn_units

    sidecar = read_sidecar(path)
    if sidecar is None and frame is not None:
        # A DataFrame from `judgebench.score` carries in attrs what a file has beside it.
        sidecar = frame.attrs.get(SIDECAR_ATTR)
    if frame is None:
        refuse_pairwise(path, sidecar=sidecar)
        frame = read_table(path, key=key)
    refuse_pairwise(path, sidecar=sidecar, frame=frame)
    if turns is not None and has_turns(frame):
        frame = turn_units(frame, turns, path=str(path))
    records = (sidecar or {}).get("corpus") or []
    corpus = corpus_from_records(records, where=f"{path}.meta.json")
    failed = corpus_failures(records)
    if corpus_path is not None:
        given = corpus_records(corpus_path)
        replaced = corpus_from_records(given, where=str(corpus_path))
        corpus |= replaced
        failed = {c: s for c, s in failed.items() if c not in replaced}
        failed |= corpus_failures(given)
    return ScoresTable(path=Path(path), frame=frame, sidecar=sidecar, corpus=corpus,
                       lower=frozenset(lower), higher=frozenset(higher), host=host,
                       corpus_failed=failed)
