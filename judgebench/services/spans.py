"""Error spans against people's MQM spans: `meta-eval --spans HUMAN` and the audit's `spans`
section.

The predicted spans are a judge's ``extra["spans"]`` (judge.mqm: text, start, end, category,
severity) in the store the scores table's sidecar names, read for the table's rows under the
column's signature (draw 0; a row whose sample the store holds under several contents reads
the content written last). A column counts when some stored score of it has spans, or when
``--metric`` names it. People's spans are either

- a file (JSONL, or .jsonl.gz): one row per error with ``item``, ``system``, ``start``,
  ``end`` (``[start, end)`` in code points of the output), ``severity``, and optional
  ``rater``, ``category``, ``side``; a row with ``start`` and ``end`` null says the segment
  was rated and has no error. Only the segments the file names are evaluated; or
- a suite name (``wmt21-tedtalks-en-de``): its ``spans.jsonl.gz`` for the errors and its
  ``human.jsonl.gz`` for which segments each rater rated (its ``rater``, or, in a suite
  with annotators, each annotator's non-null ``human.<criterion>.<annotator>``), so rated
  segments with no error count too.

The predicted spans can also come from a plain table (``--spans-column COL``: xCOMET's or
GEMBA-MQM's outputs converted, another judge's), one row per (item, system), the COL cell a
JSON list of span objects in the schema judge.mqm writes (`PREDICTED_SCHEMA`); an empty cell
is a row not judged, an empty list a row judged with no error.

Spans marked in the source (``side: source``, as WMT MQM marks omissions) are left out and
counted. Severities: Minor and Major (and the judge's Critical, as Major: WMT MQM and the
WMT23 QE scorer have only these two); a Neutral span is left out and counted. A segment rated
by several people counts once per rater, each rater's spans against the same prediction
(the WMT TED files have one rater per translation, wmt23-generalmt-en-de three). The
evaluated segments are those people rated and the judge scored (status ok); a predicted
span with no offsets (not found in the output) is not counted at either level, and the
number of them is reported; identical predicted spans (same offsets and severity) count
once. Statistics: `meta_eval.spans`, micro over the segments, overall and per system.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost
    from judgebench.tables.spans import PredictedTable
    from meta_eval.spans import Counts, Spans

SEVERITIES = {"minor": 0, "major": 1, "critical": 1}
#: One predicted span, as judge.mqm writes it in ``extra["spans"]`` and a plain table's
#: spans column holds it (the keys read; others, such as ``weight``, are ignored).
PREDICTED_SCHEMA = {
    "start": "the first character, an integer >= 0 in code points of the output; null "
             "(with end) when the span was not found in the output: not counted, reported",
    "end": "one past the last character (end >= start)",
    "severity": "minor, major or critical (any case; critical counts as major)",
    "text": "the span's text (optional)",
    "category": "its MQM category (optional)"}
#: (level, variant) in report order; the variant is the kernel's option.
VIEWS = (("character", "partial"), ("character", "match"), ("character", "ignore"),
         ("span", "overlap"), ("span", "overlap+severity"), ("span", "exact"),
         ("span", "exact+severity"))

Key = tuple[str, str]  # item, system
SpanTuple = tuple[int, int, int]  # start, end, severity code
Log = Callable[[str], None]


@dataclass(frozen=True)
class SpanRow:
    metric: str
    system: str | None  # None: every system
    level: str
    variant: str
    precision: float
    recall: float
    f1: float
    predicted: float
    human: float
    segments: int

    def to_dict(self) -> dict[str, Any]:
        def clean(value: float) -> float | None:
            return None if math.isnan(value) else value
        return {"metric": self.metric, "statistic": f"spans-{self.level}-{self.variant}",
                "system": self.system, "level": self.level, "variant": self.variant,
                "precision": clean(self.precision), "recall": clean(self.recall),
                "f1": clean(self.f1), "predicted": self.predicted, "human": self.human,
                "n": self.segments}


@dataclass
class HumanSpans:
    """People's spans per rated segment (item, system, rater), and what was left out."""

    rated: dict[tuple[str, str, str], list[SpanTuple]] = field(default_factory=dict)
    #: per rated segment: its spans marked in the source, its Neutral spans (left out)
    source_side: dict[tuple[str, str, str], int] = field(default_factory=dict)
    neutral: dict[tuple[str, str, str], int] = field(default_factory=dict)
    where: str = ""
    #: per rated segment, the (file, line) each of its spans was read from
    lines: dict[tuple[str, str, str], list[tuple[str, int]]] = field(default_factory=dict)


@dataclass
class SpansResult(Result):
    human: str
    rows: list[SpanRow]
    #: per metric column: segments evaluated, predicted spans not found in the output,
    #: rated segments the judge did not score ok, people's spans in those segments left out
    #: (marked in the source, Neutral)
    notes: dict[str, dict[str, int]]

    def to_dict(self) -> list[dict[str, Any]]:
        return [{**row.to_dict(), **{f"{k}_spans" if k == "unlocated" else k: v
                                     for k, v in self.notes.get(row.metric, {}).items()
                                     if row.system is None}}
                for row in self.rows]


def _int(value: Any, where: str, line: int, name: str, position: str = "line") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"'{name.rpartition('.')[2]}' must be a non-negative integer, got "
                         f"{value!r}", path=where, **{position: line}, field=name)
    return value


def _severity(value: Any, where: str, line: int) -> int | None:
    """The severity code (None: a Neutral span, left out)."""
    name = str(value).strip().lower() if isinstance(value, str) else None
    if name == "neutral":
        return None
    if name not in SEVERITIES:
        raise InputError(f"'severity' must be Minor, Major or Critical (or Neutral), got "
                         f"{value!r}", path=where, line=line, field="severity")
    return SEVERITIES[name]


def add_span_rows(found: HumanSpans, rows: Iterator[tuple[int, dict[str, Any]]],
                  where: str) -> None:
    """People's span rows (module docstring) into `found`."""
    for line, row in rows:
        for name in ("item", "system"):
            if row.get(name) in (None, ""):
                raise InputError(f"no '{name}'", path=where, line=line, field=name)
        key = (str(row["item"]), str(row["system"]), str(row.get("rater") or ""))
        spans = found.rated.setdefault(key, [])
        if row.get("start") is None and row.get("end") is None:
            continue  # rated, no error
        if str(row.get("side") or "target") != "target":
            found.source_side[key] = found.source_side.get(key, 0) + 1
            continue
        start = _int(row.get("start"), where, line, "start")
        end = _int(row.get("end"), where, line, "end")
        if end < start:
            raise InputError(f"'end' ({end}) is before 'start' ({start})", path=where,
                             line=line, field="end")
        severity = _severity(row.get("severity"), where, line)
        if severity is None:
            found.neutral[key] = found.neutral.get(key, 0) + 1
            continue
        spans.append((start, end, severity))
        found.lines.setdefault(key, []).append((where, line))


def human_spans(spans: str | Path, *, host: PluginHost | None = None) -> HumanSpans:
    """People's spans from a file, or from a suite by name (module docstring)."""
    from judgebench.tables.spans import span_records

    path = Path(spans)
    found = HumanSpans(where=str(spans))
    if path.exists():
        add_span_rows(found, span_records(path), str(path))
        return found
    from judgebench.suite import resolve

    if host is None:
        from judgebench.plugins import build_host

        host = build_host()
    try:
        (suite,) = resolve(str(spans), host=host)
    except InputError:
        raise InputError("neither a file nor a suite's name", path=str(spans),
                         field="--spans") from None
    if not (suite.folder / "spans.jsonl.gz").is_file():
        raise InputError(f"suite '{suite.name}' ships no spans.jsonl.gz", field="--spans")
    columns = [(f"human.{criterion}.{a}", a)
               for criterion, names in suite.info.annotators.items() for a in names]
    for row in suite.rows("human.jsonl.gz"):  # every rated translation, with its rater(s)
        raters = [a for column, a in columns if row.get(column) is not None]
        for rater in raters or [str(row.get("rater") or "")]:
            found.rated.setdefault((str(row["item"]), str(row["system"]), rater), [])
    where = str(suite.folder / "spans.jsonl.gz")
    rated = set(found.rated)
    add_span_rows(found, ((n, r) for n, r in suite.numbered_rows("spans.jsonl.gz")
                          if (str(r.get("item")), str(r.get("system")),
                              str(r.get("rater") or "")) in rated), where)
    return found


def predicted_spans(store: Path, signature: str, keys: set[Key]
                    ) -> tuple[dict[Key, list[SpanTuple]], dict[Key, int], bool, dict[Key, int]]:
    """Per (item, system) among `keys` scored ok: the located predicted spans, the number not
    located, whether any stored score of `signature` has spans at all, and the length of
    the output the judge read (code points; its `extra["output"]`) where the store keeps
    it."""
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "SELECT item, system, status, extra, created_at FROM scores WHERE signature = ?"
                " AND sample_index = 0 ORDER BY created_at", (signature,)).fetchall()
    except sqlite3.DatabaseError as exc:  # not SQLite, or a database without `scores`
        raise InputError(f"not a store `score` wrote ({exc})", path=str(store),
                         field="--store") from None
    latest: dict[Key, tuple[str, str | None]] = {}
    for item, system, status, extra, _created in rows:  # the last written wins
        latest[(item, system)] = (status, extra)
    located: dict[Key, list[SpanTuple]] = {}
    unlocated: dict[Key, int] = {}
    lengths: dict[Key, int] = {}
    any_spans = False
    for key, (status, extra) in latest.items():
        try:
            data = json.loads(extra) if extra else {}
        except json.JSONDecodeError:
            raise InputError(f"the stored extra of item {key[0]!r} system {key[1]!r} is not "
                             "JSON", path=str(store), field="extra") from None
        spans = data.get("spans") if isinstance(data, dict) else None
        any_spans = any_spans or isinstance(spans, list)
        if key not in keys or status != "ok" or not isinstance(spans, list):
            continue
        kept: dict[SpanTuple, None] = {}
        missing = 0
        for span in spans:
            start, end = span.get("start"), span.get("end")
            severity = SEVERITIES.get(str(span.get("severity", "")).lower())
            if not isinstance(start, int) or not isinstance(end, int) or severity is None:
                missing += 1
                continue
            kept[(start, end, severity)] = None
        located[key], unlocated[key] = list(kept), missing
        if isinstance(data.get("output"), str):
            lengths[key] = len(data["output"])
    return located, unlocated, any_spans, lengths


def table_spans(table: PredictedTable, column: str
                ) -> tuple[dict[Key, list[SpanTuple]], dict[Key, int], dict[Key, int]]:
    """`predicted_spans` for a plain table's `column` (`PREDICTED_SCHEMA`): per judged row
    the located spans and the number not located, and the length of the row's `output` where
    the table has one; an InputError naming the file, line and field (``COL[i].start``) of
    a span outside the schema or past the end of its output."""
    located: dict[Key, list[SpanTuple]] = {}
    unlocated: dict[Key, int] = {}
    lengths = {key: len(text) for key, text in table.outputs.items()}
    for key, cell in table.cells[column].items():
        kept: dict[SpanTuple, None] = {}
        missing = 0
        for n, span in enumerate(cell.spans):
            name = f"{column}[{n}]"
            where: dict[str, Any] = {"path": str(table.path), cell.where: cell.position}
            if not isinstance(span, dict):
                raise InputError(f"a predicted span is an object (start, end, severity), got "
                                 f"{type(span).__name__}", **where, field=name)
            start, end = span.get("start"), span.get("end")
            if start is None and end is None:
                missing += 1  # not located in the output: not counted, reported
                continue
            start = _int(start, str(table.path), cell.position, f"{name}.start", cell.where)
            end = _int(end, str(table.path), cell.position, f"{name}.end", cell.where)
            if end < start:
                raise InputError(f"'end' ({end}) is before 'start' ({start})", **where,
                                 field=f"{name}.end")
            if key in lengths and end > lengths[key]:
                raise InputError(f"'end' ({end}) is past the end of the row's output "
                                 f"({lengths[key]} characters)", **where, field=f"{name}.end")
            severity = SEVERITIES.get(str(span.get("severity")).strip().lower()
                                      if isinstance(span.get("severity"), str) else "")
            if severity is None:
                raise InputError(f"'severity' must be Minor, Major or Critical, got "
                                 f"{span.get('severity')!r}", **where, field=f"{name}.severity")
            kept[(start, end, severity)] = None
        located[key], unlocated[key] = list(kept), missing
    return located, unlocated, lengths


def _within_outputs(people: HumanSpans, lengths: dict[Key, int]) -> None:
    """An InputError at the first human span that ends past the output it marks (file, line,
    field `end`)."""
    for key, spans in people.rated.items():
        length = lengths.get(key[:2])
        if length is None:
            continue
        for (_start, end, _severity), (where, line) in zip(spans, people.lines.get(key, []),
                                                            strict=True):
            if end > length:
                raise InputError(f"'end' ({end}) is past the end of the output of item "
                                 f"{key[0]!r} system {key[1]!r} ({length} characters)",
                                 path=where, line=line, field="end")


def _spans(entries: Sequence[tuple[int, SpanTuple]]) -> Spans:
    from meta_eval.spans import Spans

    return Spans.of([s for s, _ in entries], [t[0] for _, t in entries],
                    [t[1] for _, t in entries], [t[2] for _, t in entries])


def _counts(level: str, variant: str, human: Spans, metric: Spans) -> Counts:
    from meta_eval.spans import char_counts, span_counts

    if level == "character":
        return char_counts(human=human, metric=metric, credit=variant)  # type: ignore[arg-type]
    match, _, severity = variant.partition("+")
    return span_counts(human=human, metric=metric, match=match,  # type: ignore[arg-type]
                       severity=bool(severity))


def span_rows(metric: str, human: HumanSpans, located: dict[Key, list[SpanTuple]]
              ) -> list[SpanRow]:
    """The seven views (`VIEWS`) of `metric`, over every system and per system."""
    segments = [(key, spans) for key, spans in sorted(human.rated.items())
                if key[:2] in located]
    by_system: dict[str | None, list[int]] = {None: list(range(len(segments)))}
    for index, (key, _) in enumerate(segments):
        by_system.setdefault(key[1], []).append(index)
    rows = []
    for system, indices in by_system.items():
        h = _spans([(i, t) for i in indices for t in segments[i][1]])
        m = _spans([(i, t) for i in indices for t in located[segments[i][0][:2]]])
        for level, variant in VIEWS:
            c = _counts(level, variant, h, m)
            rows.append(SpanRow(metric, system, level, variant, c.precision, c.recall, c.f1,
                                c.predicted, c.human, len(indices)))
    return rows


def _span_store(sidecar: dict[str, Any], store: str | Path | None) -> str | Path:
    """The store holding the judge's spans: `store`, else the one the sidecar names, else
    `score`'s default; an InputError when it is not there."""
    from judgebench.engine.store import DEFAULT_STORE

    named = sidecar.get("store")
    store = store or (named if isinstance(named, str) and named != ":memory:"
                      else DEFAULT_STORE)
    if not Path(store).is_file():
        raise InputError("--spans reads the judge's spans from the store `score` wrote, and "
                         "it is not there (name it with --store)", path=str(store),
                         field="--store")
    return store


def span_meta_eval(scores: str | Path, spans: str | Path, *, metrics: Sequence[str] = (),
                   store: str | Path | None = None, host: PluginHost | None = None,
                   log: Log | None = None, spans_columns: Sequence[str] = ()) -> SpansResult:
    """Every span-marking column of the scores table against people's spans. The judge's
    spans are read from `store` (default: the store the sidecar names, else `score`'s
    default store, judgebench.db), or with `spans_columns` from those columns of `scores`,
    then a plain table of predicted spans (`PREDICTED_SCHEMA`; no sidecar, no store)."""
    from judgebench.tables.spans import PredictedTable, SignedTable

    Found = tuple[dict[Key, list[SpanTuple]], dict[Key, int], bool, dict[Key, int]]
    predicted: Callable[[str], Found]
    if spans_columns:
        plain = PredictedTable.read(scores, list(dict.fromkeys(spans_columns)))
        keys, columns, where = plain.keys, list(plain.cells), str(plain.path)

        def predicted(column: str) -> Found:
            located, unlocated, lengths = table_spans(plain, column)
            return located, unlocated, True, lengths
    else:
        table = SignedTable.read(scores)
        chosen_store = Path(_span_store(table.sidecar, store))
        keys, present = table.rows()
        columns, where = list(metrics) or present, str(table.path)

        def predicted(column: str) -> Found:
            return predicted_spans(chosen_store, table.signature(column), keys)
    people = human_spans(spans, host=host)
    rows: list[SpanRow] = []
    notes: dict[str, dict[str, int]] = {}
    for column in columns:
        located, unlocated, any_spans, lengths = predicted(column)
        _within_outputs(people, lengths)
        if not any_spans:
            if metrics:
                raise InputError(f"column '{column}' marks no error spans (its stored scores "
                                 "have no extra.spans)", field="--metric")
            continue
        rated = {k[:2] for k in people.rated if k[:2] in keys}
        evaluated = {k for k in people.rated if k[:2] in located}
        notes[column] = {"segments": len(evaluated),
                         "unlocated": sum(unlocated.get(k[:2], 0) for k in evaluated),
                         "not_scored": len(rated - set(located)),
                         "source_side": sum(people.source_side.get(k, 0) for k in evaluated),
                         "neutral": sum(people.neutral.get(k, 0) for k in evaluated)}
        rows += span_rows(column, people, located)
        if log is not None and notes[column]["unlocated"]:
            log(f"{column}: {notes[column]['unlocated']} predicted span(s) not found in the "
                "output are not counted")
    if not rows:
        raise InputError("no column of the table marks error spans (a judge such as "
                         "judge.mqm keeps them in its scores' extra)", path=where)
    return SpansResult(str(spans), rows, notes)
