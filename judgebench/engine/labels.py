"""People's labels in a store: criteria, answers, samples (the Python API of `judgebench
labels` and of the labelling page).

A criterion is what people judge: a `scale` (values from `low` to `high`, on `step`s or any
value between when `step` is None), `binary` (0 or 1), `choices` (one of named choices) or
`pairwise` (which of two outputs is better: `a`, `b` or `tie`). A label is one answer of one
annotator on one item's output (`system`, a name) or on a pair of outputs (`system`, a tuple
(system_a, system_b) in the pair's own order, whatever order it was shown in: `shown_left`
records which one was on the left). Its status is `answered` (with a value), `cant_tell` or
`skipped` (never values).

Labels are append-only: each save is a new row in one transaction; the latest row of an
(criterion, annotator, item, system) key is its current label, the rows before it are its
history, and `withdraw_label` (an undo) appends a row that leaves the key without a current
label. Stored values are numbers: a scale's value, 0/1, a choice's position among the
criterion's choices, or P(A better) for a pair (1 `a`, 0 `b`, 0.5 `tie`), as the human
columns of a scores table and of a pairwise table hold them.

Every function takes a `Store` or a store's path (a path is opened for the call: to read, a
store that does not exist is an error; to write, it is created or upgraded in place). Bad
input raises `InputError` naming the field.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from judgebench.engine.store import LABEL_COLUMNS, Store, iso_utc
from judgebench.errors import InputError

Kind = Literal["scale", "binary", "choices", "pairwise"]
KINDS: tuple[Kind, ...] = ("scale", "binary", "choices", "pairwise")
LabelStatus = Literal["answered", "cant_tell", "skipped"]
#: A label's statuses; only `answered` carries a value.
STATUSES: tuple[LabelStatus, ...] = ("answered", "cant_tell", "skipped")
#: The status of a row that withdraws the label before it (an undo): no current label.
WITHDRAWN = "withdrawn"
#: An output's system, or a pair of outputs' (system_a, system_b).
System: TypeAlias = "str | tuple[str, str]"
#: What a label is about: (item, system).
LabelKey: TypeAlias = "tuple[str, str | tuple[str, str]]"
StoreLike: TypeAlias = "Store | str | Path"
#: A pairwise answer's text and its value, P(A better).
PAIR_ANSWERS: dict[str, float] = {"a": 1.0, "b": 0.0, "tie": 0.5}
_TRUE = ("1", "true", "yes", "pass")
_FALSE = ("0", "false", "no", "fail")


@dataclass(frozen=True)
class Criterion:
    """What people judge; see the module. `show_reference`: the labelling page shows the
    item's reference. `created`: when it was first defined (UTC ISO 8601)."""

    name: str
    kind: Kind
    description: str = ""
    low: float | None = None
    high: float | None = None
    step: float | None = None
    choices: tuple[str, ...] = ()
    show_reference: bool = False
    created: str = ""

    @property
    def pairwise(self) -> bool:
        return self.kind == "pairwise"

    @property
    def level(self) -> str:
        """Krippendorff's level of measurement of its values: interval for a scale, nominal
        for the others (two values, named choices, a pair's three answers)."""
        return "interval" if self.kind == "scale" else "nominal"

    def scale(self) -> dict[str, Any]:
        """Its scale as the store keeps it (the `scale` column's JSON)."""
        if self.kind == "scale":
            return {"low": self.low, "high": self.high, "step": self.step}
        if self.kind == "choices":
            return {"choices": list(self.choices)}
        return {}

    def values(self) -> list[float] | None:
        """Every value an answer can have, in order (None: a scale without steps)."""
        if self.kind == "binary":
            return [0.0, 1.0]
        if self.kind == "choices":
            return [float(i) for i in range(len(self.choices))]
        if self.kind == "pairwise":
            return [0.0, 0.5, 1.0]
        low, high, step = cast(float, self.low), cast(float, self.high), self.step
        if step is None:
            return None
        return [low + i * step for i in range(round((high - low) / step) + 1)]

    def value_of(self, answer: object, *, field: str = "value") -> float:
        """`answer` as the stored number, or an InputError naming `field`: a scale's number
        (in range, on a step), 0/1 (or true/false, yes/no, pass/fail), a choice's name, a
        pair's `a`/`b`/`tie` (or 1, 0, 0.5)."""
        if answer is None or (isinstance(answer, float) and math.isnan(answer)) \
                or (isinstance(answer, str) and not answer.strip()):
            raise InputError("no value: an answered label needs one (a label without a value "
                             "is `cant_tell` or `skipped`)", field=field)
        if self.kind == "choices":
            text = str(answer).strip()
            if text not in self.choices:
                raise InputError(f"{answer!r} is not one of the choices of criterion "
                                 f"{self.name!r}: {', '.join(self.choices)}", field=field)
            return float(self.choices.index(text))
        if self.kind == "binary" and isinstance(answer, str):
            text = answer.strip().lower()
            if text in _TRUE or text in _FALSE:
                return 1.0 if text in _TRUE else 0.0
        if self.kind == "pairwise" and isinstance(answer, str) \
                and answer.strip().lower() in PAIR_ANSWERS:
            return PAIR_ANSWERS[answer.strip().lower()]
        number = _number(answer, field)
        if self.kind == "binary":
            if number not in (0.0, 1.0):
                raise InputError(f"{answer!r} is not a binary answer: give 0 or 1 (or "
                                 "true/false, yes/no, pass/fail)", field=field)
            return number
        if self.kind == "pairwise":
            if number not in PAIR_ANSWERS.values():
                raise InputError(f"{answer!r} is not a pairwise answer: give a, b or tie (or "
                                 "1, 0, 0.5: P(A better))", field=field)
            return number
        low, high, step = cast(float, self.low), cast(float, self.high), self.step
        if not low <= number <= high:
            raise InputError(f"{answer!r} is outside the scale of criterion {self.name!r} "
                             f"({_num(low)} to {_num(high)})", field=field)
        if step is not None:
            steps = (number - low) / step
            if abs(steps - round(steps)) > 1e-9:
                raise InputError(f"{answer!r} is not on the scale of criterion {self.name!r} "
                                 f"({_num(low)} to {_num(high)} in steps of {_num(step)})",
                                 field=field)
            number = low + round(steps) * step
        return number

    def answer_of(self, value: float) -> float | str:
        """A stored value as people gave it: a choice's name, a pair's `a`/`b`/`tie`, else
        the number."""
        if self.kind == "choices":
            return self.choices[int(value)]
        if self.kind == "pairwise":
            return {v: k for k, v in PAIR_ANSWERS.items()}[value]
        return value

    def describe(self) -> str:
        """One line: its kind and scale."""
        if self.kind == "scale":
            steps = "any value" if self.step is None else f"steps of {_num(self.step)}"
            return f"scale {_num(cast(float, self.low))}-{_num(cast(float, self.high))} " \
                   f"({steps})"
        if self.kind == "choices":
            return f"choices {','.join(self.choices)}"
        return self.kind


@dataclass(frozen=True)
class Label:
    """One stored row of `labels` (see the module); `value` is None unless answered."""

    id: int
    criterion: str
    annotator: str
    item: str
    system: System
    value: float | None
    status: str
    critique: str | None = None
    shown_left: str | None = None
    sample_id: int | None = None
    inclusion_probability: float | None = None
    source: str | None = None
    created: str = ""

    @property
    def key(self) -> LabelKey:
        return (self.item, self.system)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k) for k in LABEL_COLUMNS if k not in
                               ("system", "system_a", "system_b")}
        out.update(_system_columns(self.system))
        return out


@dataclass(frozen=True)
class NewLabel:
    """A label to save (`save_labels`): `value` is the answer as `Criterion.value_of` takes
    it; `status` `answered` needs one, the others none."""

    criterion: str
    annotator: str
    item: str
    system: System
    value: object = None
    status: str = "answered"
    critique: str | None = None
    shown_left: str | None = None
    sample_id: int | None = None
    inclusion_probability: float | None = None
    source: str | None = None


@dataclass(frozen=True)
class SampledItem:
    """One item a sampling strategy drew, with its probability of being drawn."""

    item: str
    system: System
    inclusion_probability: float


@dataclass(frozen=True)
class Sample:
    """The items a strategy drew for labelling one criterion, in the order drawn."""

    id: int
    criterion: str
    strategy: str
    seed: int | None
    parameters: dict[str, Any]
    items: tuple[SampledItem, ...]
    annotator: str | None = None
    source: str | None = None
    created: str = ""

    def probabilities(self) -> dict[LabelKey, float]:
        return {(s.item, s.system): s.inclusion_probability for s in self.items}


# -- opening ------------------------------------------------------------------------------
@contextmanager
def _opened(store: StoreLike, *, write: bool) -> Iterator[Store]:
    if isinstance(store, Store):
        yield store
        return
    opened = Store(store) if write else Store(store, readonly=True)
    try:
        yield opened
    finally:
        opened.close()


def _has_labels(store: Store) -> bool:
    """False for a store of a schema before labels, opened read-only (no label tables); a
    writable one was upgraded when opened."""
    return not store.readonly or store.kind in ("current", "empty")


def _now() -> str:
    return iso_utc(time.time())


# -- criteria -----------------------------------------------------------------------------
def define_criterion(store: StoreLike, name: str, *, kind: str | None = None,
                     description: str | None = None, low: float | None = None,
                     high: float | None = None, step: float | None = 1.0,
                     choices: Sequence[str] = (), show_reference: bool | None = None
                     ) -> Criterion:
    """The criterion `name`, defined in the store if new. `kind` None: it must exist
    already. An existing criterion given another definition (kind, scale, description or
    show_reference, those given) is an InputError naming the field: a store's labels of one
    criterion all mean one thing. `step` (a scale): None for any value from low to high."""
    with _opened(store, write=True) as opened, opened.writing() as conn:
        wanted = _planned(conn, opened.path, name, kind, description, low, high, step,
                          choices, show_reference)
        return _define(conn, wanted)


def plan_criterion(store: StoreLike, name: str, *, kind: str | None = None,
                   description: str | None = None, low: float | None = None,
                   high: float | None = None, step: float | None = 1.0,
                   choices: Sequence[str] = (), show_reference: bool | None = None
                   ) -> Criterion:
    """What `define_criterion` would give, with the same checks, writing nothing (its
    `created` is empty when it is new): `save_labels(..., define=)` writes it with the
    labels. A store that does not exist yet holds no criterion."""
    if isinstance(store, str | Path) and not Path(store).exists():
        return _planned(None, str(store), name, kind, description, low, high, step, choices,
                        show_reference)
    with _opened(store, write=False) as opened, opened.reading() as conn:
        return _planned(conn if _has_labels(opened) else None, opened.path, name, kind,
                        description, low, high, step, choices, show_reference)


def _planned(conn: Any, path: str, name: str, kind: str | None, description: str | None,
             low: float | None, high: float | None, step: float | None,
             choices: Sequence[str], show_reference: bool | None) -> Criterion:
    check_name(name, "criterion")
    existing = None if conn is None else _criterion_row(conn, name)
    if kind is None:
        if existing is None:
            raise InputError(f"no criterion {name!r} in this store yet: give its kind "
                             "(--scale LOW-HIGH, --binary, --choices A,B or --pairwise)",
                             path=path, field="criterion")
        return existing
    wanted = _new_criterion(name, kind, description or "", low, high, step, choices,
                            bool(show_reference))
    if existing is None:
        return wanted
    wanted = replace(wanted, created=existing.created,
                     description=existing.description if description is None
                     else wanted.description,
                     show_reference=existing.show_reference if show_reference is None
                     else wanted.show_reference)
    for what in ("kind", "scale", "description", "show_reference"):
        mine, theirs = _aspect(wanted, what), _aspect(existing, what)
        if mine != theirs:
            raise InputError(
                f"criterion {name!r} is defined in this store with {what} {theirs!r}, not "
                f"{mine!r}: a criterion's labels must all mean one thing; give its "
                "definition or another criterion name", path=path, field=what)
    return existing


def _define(conn: Any, wanted: Criterion) -> Criterion:
    """`wanted` written in the open transaction unless the store has it (then the stored
    one, which must be the same)."""
    existing = _criterion_row(conn, wanted.name)
    if existing is not None:
        if any(_aspect(existing, w) != _aspect(wanted, w)
               for w in ("kind", "scale", "description", "show_reference")):
            raise InputError(f"criterion {wanted.name!r} was defined otherwise meanwhile",
                             field="criterion")
        return existing
    wanted = replace(wanted, created=_now())
    conn.execute("INSERT INTO criteria (name, description, kind, scale, show_reference,"
                 " created) VALUES (?,?,?,?,?,?)",
                 (wanted.name, wanted.description, wanted.kind, json.dumps(wanted.scale()),
                  int(wanted.show_reference), wanted.created))
    return wanted


def _aspect(criterion: Criterion, what: str) -> object:
    if what == "scale":
        return criterion.describe()
    return getattr(criterion, what)


def _new_criterion(name: str, kind: str, description: str, low: float | None,
                   high: float | None, step: float | None, choices: Sequence[str],
                   show_reference: bool) -> Criterion:
    if kind not in KINDS:
        raise InputError(f"{kind!r} is not a kind of criterion: {', '.join(KINDS)}",
                         field="kind")
    if kind == "scale":
        if low is None or high is None:
            raise InputError("a scale needs its low and high ends (--scale 1-5)", field="scale")
        low, high = _number(low, "low"), _number(high, "high")
        if not low < high:
            raise InputError(f"the scale's low end {_num(low)} must be below its high end "
                             f"{_num(high)}", field="scale")
        if step is not None:
            step = _number(step, "step")
            spans = (high - low) / step if step > 0 else -1.0
            if step <= 0 or abs(spans - round(spans)) > 1e-9:
                raise InputError(f"step {_num(step)} must be positive and divide the scale "
                                 f"{_num(low)}-{_num(high)} into whole steps", field="step")
        return Criterion(name, "scale", description, low, high, step, (), show_reference)
    if low is not None or high is not None:
        raise InputError(f"a {kind} criterion has no scale ends", field="scale")
    if kind == "choices":
        names = tuple(str(c).strip() for c in choices)
        if len(names) < 2 or any(not c for c in names) or len(set(names)) != len(names):
            raise InputError("choices need two or more distinct, non-empty names "
                             "(--choices good,bad)", field="choices")
        return Criterion(name, "choices", description, choices=names,
                         show_reference=show_reference)
    if choices:
        raise InputError(f"a {kind} criterion has no choices", field="choices")
    return Criterion(name, cast(Kind, kind), description, show_reference=show_reference)


def get_criterion(store: StoreLike, name: str) -> Criterion:
    """The criterion `name`, or an InputError naming the criteria the store has."""
    with _opened(store, write=False) as opened, opened.reading() as conn:
        found = _criterion_row(conn, name) if _has_labels(opened) else None
        if found is None:
            known = [c.name for c in _criteria(opened)]
            raise InputError(f"no criterion {name!r} in this store (it has: "
                             f"{', '.join(known) or 'none'})", path=opened.path,
                             field="criterion")
        return found


def criteria(store: StoreLike) -> list[Criterion]:
    """Every criterion of the store, by name."""
    with _opened(store, write=False) as opened:
        return _criteria(opened)


def _criteria(store: Store) -> list[Criterion]:
    if not _has_labels(store):
        return []
    with store.reading() as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM criteria ORDER BY name")]
        return [cast(Criterion, _criterion_row(conn, n)) for n in names]


def _criterion_row(conn: Any, name: str) -> Criterion | None:
    row = conn.execute("SELECT name, description, kind, scale, show_reference, created FROM"
                       " criteria WHERE name = ?", (name,)).fetchone()
    if row is None:
        return None
    scale = json.loads(row[3])
    return Criterion(row[0], row[2], row[1], scale.get("low"), scale.get("high"),
                     scale.get("step"), tuple(scale.get("choices", ())), bool(row[4]), row[5])


# -- labels -------------------------------------------------------------------------------
def save_label(store: StoreLike, *, criterion: str, annotator: str, item: str,
               system: System, value: object = None, status: str = "answered",
               critique: str | None = None, shown_left: str | None = None,
               sample_id: int | None = None, inclusion_probability: float | None = None,
               source: str | None = None) -> Label:
    """Append one label (one transaction) and return it as stored. `value` is checked
    against the criterion (`Criterion.value_of`); with `sample_id`, the item must be in that
    sample and its inclusion probability is the sample's unless given (and then equal)."""
    return save_labels(store, [NewLabel(criterion, annotator, item, system, value, status,
                                        critique, shown_left, sample_id,
                                        inclusion_probability, source)])[0]


def save_labels(store: StoreLike, labels: Sequence[NewLabel], *,
                define: Criterion | None = None) -> list[Label]:
    """Append `labels` in one transaction: every one is checked first, and one bad label
    (an InputError naming its position, 1-based, as `row`, and the field) writes none.
    `define`: a criterion (`plan_criterion`) written in the same transaction if new."""
    with _opened(store, write=True) as opened, opened.writing() as conn:
        if define is not None:
            _define(conn, define)
        checked = [_checked(conn, new, row=number)
                   for number, new in enumerate(labels, start=1)]
        now = _now()
        out = []
        for row in checked:
            cursor = conn.execute(
                "INSERT INTO labels (criterion, annotator, item, system, system_a, system_b,"
                " value, status, critique, shown_left, sample_id, inclusion_probability,"
                " source, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (row.criterion, row.annotator, row.item, *_system_values(row.system),
                 row.value, row.status, row.critique, row.shown_left, row.sample_id,
                 row.inclusion_probability, row.source, now))
            out.append(replace(row, id=int(cursor.lastrowid or 0), created=now))
        return out


def _checked(conn: Any, new: NewLabel, *, row: int) -> Label:
    """`new` as the row to store, or an InputError naming `row` and the field."""
    try:
        return _check(conn, new)
    except InputError as exc:
        raise InputError(exc.detail, path=exc.path, row=row, field=exc.field) from None


def _check(conn: Any, new: NewLabel) -> Label:
    check_name(new.annotator, "annotator")
    crit = _criterion_row(conn, new.criterion)
    if crit is None:
        raise InputError(f"no criterion {new.criterion!r} in this store: define it first "
                         "(define_criterion)", field="criterion")
    if not isinstance(new.item, str) or not new.item:
        raise InputError("an item id is a non-empty text", field="item")
    system = check_system(crit, new.system)
    if new.status not in STATUSES:
        raise InputError(f"{new.status!r} is not a label status: {', '.join(STATUSES)}",
                         field="status")
    value: float | None = None
    if new.status == "answered":
        value = crit.value_of(new.value)
    elif new.value is not None and not (isinstance(new.value, float) and math.isnan(new.value)) \
            and not (isinstance(new.value, str) and not new.value.strip()):
        raise InputError(f"a {new.status} label has no value (got {new.value!r}): "
                         "`can't tell` and `skip` are statuses, never values", field="value")
    if new.shown_left is not None and (not isinstance(system, tuple)
                                       or new.shown_left not in system):
        raise InputError(f"shown_left {new.shown_left!r} must name one of the pair's "
                             "systems (pairwise criteria only)", field="shown_left")
    probability = new.inclusion_probability
    if probability is not None:
        probability = _number(probability, "inclusion_probability")
        if not 0 < probability <= 1:
            raise InputError(f"{probability!r} is not a probability in (0, 1]",
                             field="inclusion_probability")
    if new.sample_id is not None:
        drawn = _sample_probability(conn, new.sample_id, crit.name, new.item, system)
        if probability is not None and abs(probability - drawn) > 1e-12:
            raise InputError(f"{probability!r} differs from the inclusion probability "
                             f"{drawn!r} sample {new.sample_id} drew the item with",
                             field="inclusion_probability")
        probability = drawn
    critique = new.critique if new.critique else None
    if critique is not None and not isinstance(critique, str):
        raise InputError("a critique is text", field="critique")
    return Label(0, crit.name, new.annotator, new.item, system, value, new.status, critique,
                 new.shown_left, new.sample_id, probability, new.source)


def _sample_probability(conn: Any, sample_id: int, criterion: str, item: str,
                        system: System) -> float:
    row = conn.execute("SELECT criterion FROM samples WHERE id = ?", (sample_id,)).fetchone()
    if row is None:
        raise InputError(f"no sample {sample_id} in this store", field="sample_id")
    if row[0] != criterion:
        raise InputError(f"sample {sample_id} was drawn for criterion {row[0]!r}, not "
                         f"{criterion!r}", field="sample_id")
    found = conn.execute(
        "SELECT inclusion_probability FROM sample_items WHERE sample_id = ? AND item = ? AND"
        " system IS ? AND system_a IS ? AND system_b IS ?",
        (sample_id, item, *_system_values(system))).fetchone()
    if found is None:
        raise InputError(f"item {item!r} of {_system_text(system)} is not in sample "
                         f"{sample_id}", field="sample_id")
    return float(found[0])


def withdraw_label(store: StoreLike, *, criterion: str, annotator: str, item: str,
                   system: System, source: str | None = None) -> Label:
    """Undo: append a row that leaves (criterion, annotator, item, system) without a current
    label (its history keeps every answer). An InputError when it has none."""
    with _opened(store, write=True) as opened, opened.writing() as conn:
        crit = _criterion_row(conn, criterion)
        if crit is None:
            raise InputError(f"no criterion {criterion!r} in this store", field="criterion")
        system = check_system(crit, system)
        latest = conn.execute(
            "SELECT status FROM labels WHERE criterion = ? AND annotator = ? AND item = ? AND"
            " system IS ? AND system_a IS ? AND system_b IS ? ORDER BY id DESC LIMIT 1",
            (criterion, annotator, item, *_system_values(system))).fetchone()
        if latest is None or latest[0] == WITHDRAWN:
            raise InputError(f"{annotator!r} has no current label of item {item!r} of "
                             f"{_system_text(system)} to withdraw", field="item")
        now = _now()
        cursor = conn.execute(
            "INSERT INTO labels (criterion, annotator, item, system, system_a, system_b,"
            " status, source, created) VALUES (?,?,?,?,?,?,?,?,?)",
            (criterion, annotator, item, *_system_values(system), WITHDRAWN, source, now))
        return Label(int(cursor.lastrowid or 0), criterion, annotator, item, system, None,
                     WITHDRAWN, source=source, created=now)


_SELECT = ("SELECT id, criterion, annotator, item, system, system_a, system_b, value, status,"
           " critique, shown_left, sample_id, inclusion_probability, source, created")


def _where(criterion: str | None, annotator: str | None) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for name, wanted in (("criterion", criterion), ("annotator", annotator)):
        if wanted is not None:
            clauses.append(f"{name} = ?")
            params.append(wanted)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def current_labels(store: StoreLike, *, criterion: str | None = None,
                   annotator: str | None = None, statuses: Iterable[str] = STATUSES
                   ) -> list[Label]:
    """The current label of each (criterion, annotator, item, system): its latest row,
    when that row's status is one of `statuses` (a withdrawn key has none), in the order
    they were saved."""
    wanted = set(statuses)
    with _opened(store, write=False) as opened, opened.reading() as conn:
        if not _has_labels(opened):
            return []
        where, params = _where(criterion, annotator)
        cursor = conn.execute(
            f"{_SELECT} FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY criterion, annotator,"
            f" item, system, system_a, system_b ORDER BY id DESC) AS latest FROM labels{where})"
            " WHERE latest = 1 ORDER BY id", params)
        return [label for label in map(_label, cursor) if label.status in wanted]


def label_history(store: StoreLike, *, criterion: str | None = None,
                  annotator: str | None = None, item: str | None = None,
                  system: System | None = None) -> list[Label]:
    """Every stored row (answers, superseded answers, withdrawals), oldest first."""
    with _opened(store, write=False) as opened, opened.reading() as conn:
        if not _has_labels(opened):
            return []
        where, params = _where(criterion, annotator)
        rows = [_label(r) for r in conn.execute(f"{_SELECT} FROM labels{where} ORDER BY id",
                                                params)]
    return [r for r in rows if (item is None or r.item == item)
            and (system is None or r.system == _as_system(system))]


def labelled_items(store: StoreLike, *, criterion: str, annotator: str,
                   statuses: Iterable[str] = STATUSES) -> set[LabelKey]:
    """The (item, system) keys `annotator` has a current label of `criterion` for, with one
    of `statuses`: what a new sample for this annotator leaves out."""
    return {label.key for label in current_labels(store, criterion=criterion,
                                                  annotator=annotator, statuses=statuses)}


def _label(row: Sequence[Any]) -> Label:
    (id_, criterion, annotator, item, system, system_a, system_b, value, status, critique,
     shown_left, sample_id, probability, source, created) = row
    return Label(id_, criterion, annotator, item,
                 system if system is not None else (system_a, system_b), value, status,
                 critique, shown_left, sample_id, probability, source, created)


# -- people's values -----------------------------------------------------------------------
def consensus(criterion: Criterion, values: Sequence[float]) -> float:
    """People's value of one key from its annotators' answered values: their mean (a scale's
    mean, the share of 1s, a pair's mean P(A better)); for choices, the choice most of them
    gave (its position), NaN on a tie; NaN without values."""
    if not values:
        return math.nan
    if criterion.kind != "choices":
        return math.fsum(values) / len(values)
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    top = max(counts.values())
    winners = [v for v, n in counts.items() if n == top]
    return winners[0] if len(winners) == 1 else math.nan


def people_values(store: StoreLike, criterion: str, *, annotator: str | None = None
                  ) -> tuple[Criterion, dict[LabelKey, float]]:
    """The criterion, and each labelled key's value: `annotator`'s answer, or every
    annotator's `consensus`; keys whose current labels are all `cant_tell` or `skipped` are
    NaN (looked at, no value)."""
    with _opened(store, write=False) as opened:
        crit = get_criterion(opened, criterion)
        given: dict[LabelKey, list[float]] = {}
        for label in current_labels(opened, criterion=criterion, annotator=annotator):
            answers = given.setdefault(label.key, [])
            if label.value is not None:
                answers.append(label.value)
    return crit, {key: consensus(crit, answers) for key, answers in given.items()}


# -- samples ------------------------------------------------------------------------------
def record_sample(store: StoreLike, *, criterion: str, strategy: str, seed: int | None,
                  items: Sequence[SampledItem | tuple[str, System, float]],
                  parameters: Mapping[str, Any] | None = None, annotator: str | None = None,
                  source: str | None = None) -> Sample:
    """Store a drawn sample (one transaction): the strategy, its seed and parameters (JSON),
    and each item in the order drawn with its inclusion probability in (0, 1]. An item drawn
    twice, or of the wrong shape for the criterion, is an InputError naming its position."""
    parameters = dict(parameters or {})
    try:
        parameters_text = json.dumps(parameters, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"not plain JSON ({exc})", field="parameters") from None
    if not strategy or not isinstance(strategy, str):
        raise InputError("a sample names the strategy that drew it", field="strategy")
    if annotator is not None:
        check_name(annotator, "annotator")
    with _opened(store, write=True) as opened, opened.writing() as conn:
        crit = _criterion_row(conn, criterion)
        if crit is None:
            raise InputError(f"no criterion {criterion!r} in this store: define it first",
                             path=opened.path, field="criterion")
        drawn: list[SampledItem] = []
        seen: set[LabelKey] = set()
        for position, entry in enumerate(items, start=1):
            sampled = entry if isinstance(entry, SampledItem) else SampledItem(*entry)
            try:
                system = check_system(crit, sampled.system)
                probability = _number(sampled.inclusion_probability, "inclusion_probability")
                if not 0 < probability <= 1:
                    raise InputError(f"{probability!r} is not a probability in (0, 1]",
                                     field="inclusion_probability")
                if (sampled.item, system) in seen:
                    raise InputError(f"item {sampled.item!r} of {_system_text(system)} is "
                                     "drawn twice", field="item")
            except InputError as exc:
                raise InputError(exc.detail, row=position, field=exc.field) from None
            seen.add((sampled.item, system))
            drawn.append(SampledItem(sampled.item, system, probability))
        now = _now()
        cursor = conn.execute(
            "INSERT INTO samples (criterion, strategy, seed, parameters, annotator, source,"
            " created) VALUES (?,?,?,?,?,?,?)",
            (criterion, strategy, seed, parameters_text, annotator, source, now))
        sample_id = int(cursor.lastrowid or 0)
        conn.executemany(
            "INSERT INTO sample_items (sample_id, position, item, system, system_a, system_b,"
            " inclusion_probability) VALUES (?,?,?,?,?,?,?)",
            [(sample_id, position, s.item, *_system_values(s.system), s.inclusion_probability)
             for position, s in enumerate(drawn, start=1)])
    return Sample(sample_id, criterion, strategy, seed, parameters, tuple(drawn), annotator,
                  source, now)


def get_sample(store: StoreLike, sample_id: int) -> Sample:
    """The stored sample `sample_id`, its items in the order drawn."""
    found = samples(store, ids=[sample_id])
    if not found:
        raise InputError(f"no sample {sample_id} in this store", field="sample_id")
    return found[0]


def samples(store: StoreLike, *, criterion: str | None = None,
            ids: Sequence[int] | None = None) -> list[Sample]:
    """The stored samples (of `criterion`, or with these `ids`), oldest first."""
    with _opened(store, write=False) as opened, opened.reading() as conn:
        if not _has_labels(opened):
            return []
        where, params = _where(criterion, None)
        rows = conn.execute(f"SELECT id, criterion, strategy, seed, parameters, annotator,"
                            f" source, created FROM samples{where} ORDER BY id",
                            params).fetchall()
        out = []
        for row in rows:
            if ids is not None and row[0] not in ids:
                continue
            drawn = tuple(
                SampledItem(item, system if system is not None else (a, b), p)
                for item, system, a, b, p in conn.execute(
                    "SELECT item, system, system_a, system_b, inclusion_probability FROM"
                    " sample_items WHERE sample_id = ? ORDER BY position", (row[0],)))
            out.append(Sample(row[0], row[1], row[2], row[3], json.loads(row[4]), drawn,
                              row[5], row[6], row[7]))
        return out


# -- checks -------------------------------------------------------------------------------
def check_name(name: object, what: str) -> str:
    """A criterion's or annotator's name: non-empty printable text without surrounding
    spaces; a criterion's also without dots or colons."""
    if not isinstance(name, str) or not name or name != name.strip() \
            or not name.isprintable():
        raise InputError(f"{name!r} is not a {what} name: give non-empty printable text "
                         "without surrounding spaces", field=what)
    if what == "criterion" and ("." in name or ":" in name):
        raise InputError(f"{name!r}: a criterion name has no dots or colons (the exported "
                         "column is human.<criterion>.<annotator>, a store's human column "
                         "store:<criterion>)", field=what)
    return name


def check_system(criterion: Criterion, system: object) -> System:
    """`system` as a label of `criterion` is keyed: a name, or a pairwise criterion's
    (system_a, system_b) of two different names."""
    if criterion.pairwise:
        if not isinstance(system, tuple | list) or len(system) != 2 \
                or not all(isinstance(s, str) and s for s in system) or system[0] == system[1]:
            raise InputError(f"criterion {criterion.name!r} is pairwise: a label names a pair "
                             f"of two different systems (system_a, system_b), not {system!r}",
                             field="system")
        return (system[0], system[1])
    if not isinstance(system, str) or not system:
        raise InputError(f"criterion {criterion.name!r} labels one output: the system is a "
                         f"non-empty name, not {system!r}", field="system")
    return system


def _as_system(system: System | Sequence[str]) -> System:
    return system if isinstance(system, str) else (system[0], system[1])


def _system_values(system: System) -> tuple[str | None, str | None, str | None]:
    if isinstance(system, str):
        return system, None, None
    return None, system[0], system[1]


def _system_columns(system: System) -> dict[str, str | None]:
    return dict(zip(("system", "system_a", "system_b"), _system_values(system), strict=True))


def _system_text(system: System) -> str:
    return f"system {system!r}" if isinstance(system, str) else f"pair {system[0]!r} vs " \
        f"{system[1]!r}"


def _number(value: object, what: str) -> float:
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(cast(Any, value))
    except (TypeError, ValueError):
        raise InputError(f"{value!r} is not a number", field=what) from None
    if not math.isfinite(number):
        raise InputError(f"{value!r} is not a finite number", field=what)
    return number


def _num(x: float) -> str:
    return f"{x:g}"
