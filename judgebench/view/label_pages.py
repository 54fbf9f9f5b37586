"""What the labelling page shows and saves, as plain data over a `LabelSession` and its store
(`judgebench.engine.labels`): one item with its answer options and keys, the annotator's
progress, what is revealed after answering, a save, an undo, and the agreement so far
(`services.label_stats`). Nothing here knows HTTP or HTML (label_app.py serves it).

Blind by default: an item's page holds no system name, judge score or other annotator's
label unless `reveal` is asked for and allowed (the annotator has a current label of the
item, or the session reveals from the start). A pair's outputs are shown left and right in
the order `services.label_session.shown_left` draws (or the one the annotator's label
recorded); the page names that order `ab` (system_a on the left) or `ba`, never a system.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.engine.labels import (
    Criterion,
    Label,
    LabelKey,
    current_labels,
    save_label,
    withdraw_label,
)
from judgebench.engine.store import Store
from judgebench.errors import InputError
from judgebench.services.label_session import LabelSession, LabelTask, shown_left

if TYPE_CHECKING:
    from judgebench.services.label_stats import StatsResult

#: What the page writes into a label's `source`.
SOURCE = "browser"
#: The actions of the page's one form (a save is the only write).
ACTIONS = ("answer", "cant_tell", "skip", "undo")
#: The longest critique kept, in characters.
MAX_CRITIQUE = 20_000
PAIR_SIDES = ("left", "right", "tie")


@dataclass(frozen=True)
class Option:
    """One answer the form offers: the value it posts, what it shows, its key."""

    value: str
    label: str
    key: str | None
    checked: bool


@dataclass(frozen=True)
class Progress:
    """The annotator's labels of this session's items by status; items by how many
    annotators answered them; this item's answers."""

    total: int
    labelled: int
    statuses: dict[str, int]
    coverage: dict[str, int]
    this_item: int


@dataclass(frozen=True)
class Revealed:
    """What an answer reveals: the system (a pair's left and right), the judges' scores, the
    samples file's human values and the other annotators' current labels."""

    system: str
    left: str | None
    right: str | None
    scores: tuple[tuple[str, Any], ...]
    humans: tuple[tuple[str, float | None], ...]
    others: list[dict[str, Any]]


@dataclass(frozen=True)
class ItemPage:
    task: LabelTask
    criterion: Criterion
    annotator: str
    total: int
    options: list[Option]
    #: a scale without steps: a number field instead of options
    free: bool
    current: Label | None
    #: the current label as people read it (`answer_text`)
    current_text: str | None
    #: a scale without steps: the current value, for the number field
    current_answer: str
    critique: str
    #: a pair's outputs as shown, and the order ("ab": system_a on the left)
    left: str | None
    right: str | None
    order: str | None
    can_reveal: bool
    revealed: Revealed | None
    progress: Progress
    previous: int | None
    next: int | None


def _store(session: LabelSession, *, write: bool) -> Store:
    """The session's store, not checked again (`label` checked it before serving)."""
    return Store(session.store, readonly=not write, checked=True)


def task_at(session: LabelSession, position: int) -> LabelTask:
    if not 1 <= position <= len(session.tasks):
        raise InputError(f"no item {position}: this session has items 1 to "
                         f"{len(session.tasks)}", field="position")
    return session.tasks[position - 1]


def _labels(session: LabelSession) -> list[Label]:
    with _store(session, write=False) as store:
        return current_labels(store, criterion=session.criterion.name)


def first_open(session: LabelSession, annotator: str, after: int = 0) -> int | None:
    """The first item after position `after` (then from the start) that `annotator` has no
    current label of; None when every item has one."""
    mine = {lab.key for lab in _labels(session) if lab.annotator == annotator}
    order = [*session.tasks[after:], *session.tasks[:after]]
    return next((t.position for t in order if t.key not in mine), None)


def options(crit: Criterion, current: Label | None) -> tuple[list[Option], bool]:
    """The answers of the criterion with their keys (digits for a scale's values or the
    choices, y/n, a/b/t for left, right, tie), the current one checked; True for a scale
    without steps (a number field)."""
    value = None if current is None else current.value
    if crit.kind == "binary":
        return [Option("1", "yes", "y", value == 1.0), Option("0", "no", "n", value == 0.0)], \
            False
    if crit.kind == "pairwise":
        return [Option(side, text, key, False) for side, text, key in
                (("left", "left is better", "a"), ("right", "right is better", "b"),
                 ("tie", "tie", "t"))], False
    values = crit.values()
    if values is None:
        return [], True
    names = list(crit.choices) if crit.kind == "choices" else [f"{v:g}" for v in values]
    digits = crit.kind == "scale" and all(float(v).is_integer() and 0 <= v <= 9
                                          for v in values)
    out = []
    for i, (v, name) in enumerate(zip(values, names, strict=True)):
        key = str(int(v)) if digits else (str((i + 1) % 10) if len(values) <= 10 else None)
        out.append(Option(name if crit.kind == "choices" else repr(float(v)), name, key,
                          value is not None and float(value) == float(v)))
    return out, False


def _order(session: LabelSession, task: LabelTask, annotator: str, current: Label | None
           ) -> str | None:
    if not isinstance(task.system, tuple):
        return None
    left = current.shown_left if current is not None and current.shown_left else \
        shown_left(session.seed, annotator, task.item, task.system)
    return "ab" if left == task.system[0] else "ba"


def _progress(session: LabelSession, labels: list[Label], annotator: str, task: LabelTask
              ) -> Progress:
    keys = {t.key for t in session.tasks}
    mine = [lab for lab in labels if lab.annotator == annotator and lab.key in keys]
    statuses = {s: sum(1 for lab in mine if lab.status == s)
                for s in ("answered", "cant_tell", "skipped")}
    answers: dict[LabelKey, int] = dict.fromkeys(keys, 0)
    for lab in labels:
        if lab.key in answers and lab.value is not None:
            answers[lab.key] += 1
    counts = list(answers.values())
    coverage = {"0": counts.count(0), "1": counts.count(1), "2": counts.count(2),
                "3+": sum(1 for n in counts if n >= 3)}
    return Progress(len(session.tasks), len(mine), statuses, coverage, answers[task.key])


def answer_text(crit: Criterion, label: Label) -> str:
    """A label as people read it: the answer (a choice's name, a pair's a/b/tie) or its
    status."""
    if label.value is None:
        return {"cant_tell": "can't tell", "skipped": "skipped"}.get(label.status,
                                                                      label.status)
    answer = crit.answer_of(label.value)
    return f"{answer:g}" if isinstance(answer, float) else str(answer)


def item_page(session: LabelSession, *, annotator: str, position: int,
              reveal: bool = False, reveal_all: bool = False) -> ItemPage:
    """Item `position` for `annotator`; `reveal`: the annotator asks to see what is hidden
    (granted once they have a current label of it, or always with `reveal_all`)."""
    task = task_at(session, position)
    crit = session.criterion
    labels = _labels(session)
    current = next((lab for lab in reversed(labels)
                    if lab.annotator == annotator and lab.key == task.key), None)
    found, free = options(crit, current)
    order = _order(session, task, annotator, current)
    left = right = None
    if task.outputs is not None:
        left, right = task.outputs if order == "ab" else task.outputs[::-1]
    can_reveal = reveal_all or current is not None
    revealed = _revealed(crit, task, labels, annotator, order) \
        if can_reveal and (reveal or reveal_all) else None
    current_answer = "" if current is None or current.value is None or not free \
        else f"{current.value:g}"
    n = len(session.tasks)
    return ItemPage(task, crit, annotator, n, found, free, current,
                    None if current is None else answer_text(crit, current), current_answer,
                    current.critique or "" if current is not None else "", left, right,
                    order, can_reveal, revealed, _progress(session, labels, annotator, task),
                    position - 1 if position > 1 else None,
                    position + 1 if position < n else None)


def _revealed(crit: Criterion, task: LabelTask, labels: list[Label], annotator: str,
              order: str | None) -> Revealed:
    others = [{"annotator": lab.annotator, "answer": answer_text(crit, lab),
               "status": lab.status, "critique": lab.critique}
              for lab in labels if lab.key == task.key and lab.annotator != annotator]
    names = (task.system if order == "ab" else task.system[::-1]) \
        if isinstance(task.system, tuple) else (None, None)
    return Revealed(task.system_text, names[0], names[1], task.scores, task.humans, others)


def save(session: LabelSession, *, annotator: str, position: int, action: str,
         value: str | None, critique: str | None, order: str | None) -> Label:
    """Save `annotator`'s answer (`action` answer, with `value`), or the status cant_tell or
    skip, of item `position`, with the critique and, for a pair, the order it was shown in:
    one transaction (`engine.labels.save_label`)."""
    task = task_at(session, position)
    crit = session.criterion
    if action not in ("answer", "cant_tell", "skip"):
        raise InputError(f"unknown action {action!r}", field="action")
    critique = (critique or "").strip() or None
    if critique is not None and len(critique) > MAX_CRITIQUE:
        raise InputError(f"a critique of at most {MAX_CRITIQUE} characters, not "
                         f"{len(critique)}", field="critique")
    left = None
    if isinstance(task.system, tuple):
        if order not in ("ab", "ba"):
            raise InputError("a pair's shown order is ab or ba", field="order")
        left = task.system[0] if order == "ab" else task.system[1]
    answer: object = None
    if action == "answer":
        if value is None or not value.strip():
            raise InputError("choose an answer first (its key, or click it), or say "
                             "can't tell or skip", field="value")
        answer = _pair_answer(task, value, left) if left is not None else value
    status = {"answer": "answered", "cant_tell": "cant_tell", "skip": "skipped"}[action]
    sample_id = session.sample.id if session.sample is not None else None
    with _store(session, write=True) as store:
        return save_label(store, criterion=crit.name, annotator=annotator, item=task.item,
                          system=task.system, value=answer, status=status,
                          critique=critique, shown_left=left, sample_id=sample_id,
                          source=SOURCE)


def _pair_answer(task: LabelTask, side: str, left: str) -> str:
    """A shown side (left, right, tie) as the pair's answer (a, b, tie)."""
    if side not in PAIR_SIDES:
        raise InputError(f"a pair's answer is left, right or tie, not {side[:40]!r}",
                         field="value")
    if side == "tie":
        return "tie"
    assert isinstance(task.system, tuple)
    better = left if side == "left" else next(s for s in task.system if s != left)
    return "a" if better == task.system[0] else "b"


def undo(session: LabelSession, *, annotator: str) -> LabelTask | None:
    """Withdraw `annotator`'s most recent current label of this session's items (the store
    keeps it in the history); the item it was of, or None when there is none."""
    by_key = {t.key: t for t in session.tasks}
    with _store(session, write=True) as store:
        mine = [lab for lab in current_labels(store, criterion=session.criterion.name,
                                              annotator=annotator) if lab.key in by_key]
        if not mine:
            return None
        last = max(mine, key=lambda lab: lab.id)
        withdraw_label(store, criterion=last.criterion, annotator=annotator, item=last.item,
                       system=last.system, source=SOURCE)
    return by_key[last.key]


class Agreement:
    """`labels stats` of the session's criterion (and the scores table's judges), computed
    again only when a label was saved since (the store's last label id and count)."""

    def __init__(self, session: LabelSession, *, bootstrap: int) -> None:
        self.session = session
        self.bootstrap = bootstrap
        self._lock = threading.Lock()
        self._found: tuple[tuple[int, int], StatsResult] | None = None

    def _version(self) -> tuple[int, int]:
        with _store(self.session, write=False) as store, store.reading() as conn:
            count, last = conn.execute("SELECT COUNT(*), COALESCE(MAX(id), 0) FROM labels"
                                       " WHERE criterion = ?",
                                       (self.session.criterion.name,)).fetchone()
        return int(count), int(last)

    def result(self) -> StatsResult:
        from judgebench.services.label_stats import label_stats

        with self._lock:
            version = self._version()
            if self._found is None or self._found[0] != version:
                found = label_stats(Path(self.session.store),
                                    names=[self.session.criterion.name],
                                    scores=self.session.scores, bootstrap=self.bootstrap)
                self._found = (version, found)
            return self._found[1]


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
