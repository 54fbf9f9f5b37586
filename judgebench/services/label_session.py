"""A labelling session (`judgebench label`): what one labelling page serves, prepared before
anything is served.

`label_session` reads the texts (a samples file, or a scores table with the samples it was
scored from), checks the criterion (`engine.labels.plan_criterion`), chooses the items (every
item of the input in a seeded order; or `sample` of them drawn by a strategy of
`services.label_sample`, leaving out what the annotator has labelled, recorded in the store
with each item's inclusion probability; or a sample recorded earlier, resumed), and only then
writes the criterion and the sample. Each `LabelTask` holds one item's texts as the page shows
them and, kept apart, what is revealed only after answering (the system, the judges' scores,
the humans of the samples file).

Keys: the store keys a pair as (system_a, system_b), the sampling service as the text
"A vs B" (`tables.pairs.store_keys`); `_Keys` converts between them from the input's own rows,
never by splitting the text. A judged turn of a conversation is the item "ITEM #TURN", as a
scores table of judged turns is read (`tables.turn_table`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.engine.labels import (
    Criterion,
    LabelKey,
    Sample,
    SampledItem,
    System,
    check_name,
    define_criterion,
    get_sample,
    labelled_items,
    people_values,
    plan_criterion,
    record_sample,
)
from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.models import Sample as TextSample
    from judgebench.services.label_sample import LabelSample

Log = Callable[[str], None]
#: The columns of a scores table that are keys or texts, not judges (never revealed as scores).
NOT_JUDGES = frozenset({"item", "system", "system_a", "system_b", "turn", "input", "output",
                        "source", "reference", "context", "output_a", "output_b",
                        "length_a", "length_b", "category"})
#: Strategies that read a judge column, and so a scores table.
NEEDS_SCORES = ("disagreement", "active")


@dataclass(frozen=True)
class Turn:
    """One message of the conversation before the judged turn."""

    role: str
    text: str


@dataclass(frozen=True)
class LabelTask:
    """One item to label, at `position` (1-based) of the session: its key as the store keeps
    it, what the page shows (input, conversation so far, retrieved contexts, references,
    the output or the pair's two outputs in the pair's own order) and what it reveals after
    an answer (`scores`: the scores table's columns; `humans`: the samples file's)."""

    position: int
    item: str
    system: System
    input: str | None
    output: str | None
    outputs: tuple[str, str] | None
    conversation: tuple[Turn, ...]
    contexts: tuple[str, ...]
    references: tuple[str, ...]
    scores: tuple[tuple[str, Any], ...]
    humans: tuple[tuple[str, float | None], ...]
    inclusion_probability: float | None

    @property
    def key(self) -> LabelKey:
        return (self.item, self.system)

    @property
    def system_text(self) -> str:
        return self.system if isinstance(self.system, str) else \
            f"{self.system[0]} vs {self.system[1]}"


@dataclass(frozen=True)
class LabelSession(Result):
    """What a labelling page serves: the criterion, the items in labelling order, the sample
    they were drawn as (None: every item of the input), and where they came from."""

    criterion: Criterion
    store: str
    source: str
    texts: str
    tasks: list[LabelTask]
    sample: Sample | None
    seed: int
    #: the scores table the judges' columns come from (None: a samples file alone)
    scores: str | None
    signature: str
    candidates: int
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion.name, "kind": self.criterion.kind,
                "scale": self.criterion.describe(), "store": self.store,
                "source": self.source, "texts": self.texts, "scores": self.scores,
                "seed": self.seed, "signature": self.signature,
                "candidates": self.candidates, "items": len(self.tasks),
                "sample_id": None if self.sample is None else self.sample.id,
                "notes": self.notes}


class _Keys:
    """The input's rows as the sampling service names them ("A vs B") and as the store keys
    them ((system_a, system_b)): the one place a pair's key is converted."""

    def __init__(self, keys: Sequence[LabelKey]) -> None:
        self.to_store: dict[tuple[str, str], LabelKey] = {}
        for key in keys:
            self.to_store[(key[0], system_text(key[1]))] = key

    def row(self, key: LabelKey) -> tuple[str, str]:
        return (key[0], system_text(key[1]))

    def store(self, item: str, system: str) -> LabelKey:
        return self.to_store[(item, system)]


def system_text(system: System) -> str:
    """A system as the sampling service and a scores table's store keys name it."""
    return system if isinstance(system, str) else f"{system[0]} vs {system[1]}"


def shown_left(seed: int, annotator: str, item: str, pair: tuple[str, str]) -> str:
    """Which of a pair's systems is shown on the left to `annotator`: a fair coin per
    (seed, annotator, item, pair), the same on every visit."""
    text = "\x00".join([str(seed), annotator, item, *pair]).encode("utf-8", "surrogatepass")
    return pair[hashlib.sha256(text).digest()[0] & 1]


def label_session(source: str | Path, *, store: str | Path, criterion: str, annotator: str,
                  kind: str | None = None, description: str | None = None,
                  low: float | None = None, high: float | None = None,
                  step: float | None = 1.0, choices: Sequence[str] = (),
                  show_reference: bool | None = None, samples: str | Path | None = None,
                  sample: int | None = None, strategy: str = "random", seed: int = 0,
                  judge: str | None = None, judges: Sequence[str] = (), bins: int = 4,
                  by_system: bool = True, allocation: str = "proportional", minimum: int = 2,
                  disagreement: str | None = None, uniform_share: float = 0.2,
                  sample_id: int | None = None, log: Log | None = None) -> LabelSession:
    """Prepare the labelling of `criterion` (defined with `kind` and its scale if new) by
    `annotator` over `source`: a samples file, or a scores table whose texts are in
    `samples`. `sample` N: draw N items by `strategy` (the options of
    `services.label_sample.label_sample`), leaving out what `annotator` has labelled;
    `sample_id`: serve a recorded sample again. Everything is checked before the store is
    written (the criterion, then the sample)."""
    log = log or (lambda _message: None)
    check_name(annotator, "annotator")
    if sample is not None and sample_id is not None:
        raise InputError("--sample draws a new sample, --sample-id serves a recorded one: "
                         "give one", field="--sample-id")
    crit = plan_criterion(store, criterion, kind=kind, description=description, low=low,
                          high=high, step=step, choices=choices, show_reference=show_reference)
    texts_path = str(samples if samples is not None else source)
    table, where, rows, texts = _read(source, texts_path, crit, scores=samples is not None)
    keys = _Keys(rows)
    notes: list[str] = []
    drawn: Sample | None = None
    chosen: list[tuple[str, System, float | None]]
    if sample_id is not None:
        drawn = _recorded(store, sample_id, crit, rows)
        chosen = [(s.item, s.system, s.inclusion_probability) for s in drawn.items]
        seed = drawn.seed if drawn.seed is not None else seed  # the pairs' shown orders
        signature = f"sample {drawn.id}: {drawn.parameters.get('signature', drawn.strategy)}"
    elif sample is not None:
        found = _draw(source if samples is not None else _frame(rows), store, crit,
                      annotator, keys, sample=sample, strategy=strategy, seed=seed,
                      judge=judge, judges=judges, bins=bins, by_system=by_system,
                      allocation=allocation, minimum=minimum, disagreement=disagreement,
                      uniform_share=uniform_share, scored=samples is not None, where=where,
                      notes=notes)
        chosen = [(*keys.store(r.item, r.system), r.inclusion_probability)
                  for r in found.rows]
        signature = found.signature
    else:
        import numpy as np

        order = np.random.default_rng(seed).permutation(len(rows))
        chosen = [(rows[k][0], rows[k][1], None) for k in order]
        signature = f"label.every@1|seed:{seed}|items:{len(rows)}"
    for note in notes:
        log(note)
    crit = define_criterion(store, crit.name, kind=crit.kind, description=crit.description,
                            low=crit.low, high=crit.high, step=crit.step,
                            choices=crit.choices, show_reference=crit.show_reference)
    if sample is not None:
        drawn = record_sample(
            store, criterion=crit.name, strategy=found.strategy, seed=seed,
            items=[SampledItem(item, system, float(p or 0)) for item, system, p in chosen],
            parameters={**found.parameters, "n": sample, "signature": found.signature},
            annotator=annotator, source=where)
    judged = _judge_values(table, rows) if samples is not None else {}
    tasks = [_task(position, item, system, p, texts[(item, system)], judged.get(
        (item, system), ())) for position, (item, system, p) in enumerate(chosen, start=1)]
    return LabelSession(crit, str(store), str(source), texts_path, tasks, drawn, int(seed),
                        str(source) if samples is not None else None, signature, len(rows),
                        notes)


# -- reading ------------------------------------------------------------------------------
def _read(source: str | Path, texts_path: str, crit: Criterion, *, scores: bool
          ) -> tuple[pd.DataFrame, str, list[LabelKey], dict[LabelKey, TextSample]]:
    """The table of rows, where it was read, its rows' keys, and every row's texts."""
    from judgebench.tables.label_rows import label_rows

    table, where = label_rows(source, scores=scores)
    texts = _texts(texts_path, crit)
    rows = _rows(table, where, crit)
    missing = [key for key in rows if key not in texts]
    if missing:
        raise InputError(f"no texts for item {missing[0][0]!r} of "
                         f"{system_text(missing[0][1])} in {texts_path} (and "
                         f"{len(missing) - 1} more): give the samples the table was scored "
                         "from", path=where, field="item")
    return table, where, rows, texts


def _texts(path: str, crit: Criterion) -> dict[LabelKey, TextSample]:
    """The samples of `path` by the key their labels have; a pair's shape must match the
    criterion's."""
    from judgebench.tables.label_rows import label_texts

    out: dict[LabelKey, TextSample] = {}
    for number, found in enumerate(label_texts(path), start=1):
        if found.is_pairwise != crit.pairwise:
            what = "a pair of outputs (output_a, output_b)" if found.is_pairwise \
                else "one output"
            raise InputError(f"sample {number} holds {what}, and criterion {crit.name!r} "
                             f"is {crit.kind}: " + ("a pairwise criterion labels pairs"
                                                    if crit.pairwise else
                                                    "label pairs with a --pairwise "
                                                    "criterion"), path=path,
                             field="output_a" if crit.pairwise else "output")
        key: LabelKey = (found.item, (str(found.system_a), str(found.system_b))
                         if found.is_pairwise else found.system)
        out[key] = found
    return out


def _rows(frame: pd.DataFrame, where: str, crit: Criterion) -> list[LabelKey]:
    """The table's rows as the store keys them, each once."""
    pairwise = {"system_a", "system_b"} <= set(frame.columns) and "system" not in frame.columns
    if crit.pairwise and not pairwise:
        raise InputError(f"criterion {crit.name!r} is pairwise: the rows name system_a and "
                         "system_b", path=where, field="system_a")
    items = [str(v) for v in frame["item"]] if "item" in frame.columns else None
    if items is None:
        raise InputError("no item column", path=where, field="item")
    if crit.pairwise:
        rows: list[LabelKey] = [(i, (str(a), str(b))) for i, a, b in zip(
            items, frame["system_a"], frame["system_b"], strict=True)]
    elif pairwise:
        raise InputError(f"criterion {crit.name!r} labels one output: this table holds "
                         "pairs (system_a, system_b); label them with a --pairwise "
                         "criterion", path=where, field="system")
    elif "system" not in frame.columns:
        raise InputError("no system column", path=where, field="system")
    else:
        rows = list(zip(items, [str(v) for v in frame["system"]], strict=True))
    seen: set[LabelKey] = set()
    for number, key in enumerate(rows, start=1):
        if key in seen:
            raise InputError(f"item {key[0]!r} of {system_text(key[1])} appears twice: a "
                             "label is one item of one system (or pair)", path=where,
                             row=number, field="item")
        seen.add(key)
    return rows


def _frame(rows: Sequence[LabelKey]) -> pd.DataFrame:
    """The rows as a table the sampling service reads (a samples file has no judges)."""
    import pandas as pd

    if rows and not isinstance(rows[0][1], str):
        return pd.DataFrame([(i, s[0], s[1]) for i, s in rows],
                            columns=["item", "system_a", "system_b"])
    return pd.DataFrame(list(rows), columns=["item", "system"])


def _judge_values(frame: pd.DataFrame, rows: Sequence[LabelKey]
                  ) -> dict[LabelKey, tuple[tuple[str, Any], ...]]:
    """Each row's judge columns (every column that is not a key or a text), as written."""
    columns = [str(c) for c in frame.columns if str(c) not in NOT_JUDGES]
    out: dict[LabelKey, tuple[tuple[str, Any], ...]] = {}
    values = [frame[c].tolist() for c in columns]
    for k, key in enumerate(rows):
        out[key] = tuple((c, _plain(v[k])) for c, v in zip(columns, values, strict=True))
    return out


def _plain(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        value = value.item()
    return value


# -- choosing -----------------------------------------------------------------------------
def _recorded(store: str | Path, sample_id: int, crit: Criterion, rows: Sequence[LabelKey]
              ) -> Sample:
    drawn = get_sample(store, sample_id)
    if drawn.criterion != crit.name:
        raise InputError(f"sample {sample_id} was drawn for criterion {drawn.criterion!r}, "
                         f"not {crit.name!r}", path=str(store), field="--sample-id")
    known = set(rows)
    for position, s in enumerate(drawn.items, start=1):
        if (s.item, s.system) not in known:
            raise InputError(f"item {s.item!r} of {system_text(s.system)} (position "
                             f"{position} of sample {sample_id}) is not in this input",
                             path=str(store), field="--sample-id")
    return drawn


def _draw(table: str | Path | pd.DataFrame, store: str | Path, crit: Criterion,
          annotator: str, keys: _Keys, *, sample: int, strategy: str, seed: int,
          judge: str | None, judges: Sequence[str], bins: int, by_system: bool,
          allocation: str, minimum: int, disagreement: str | None, uniform_share: float,
          scored: bool, where: str, notes: list[str]) -> LabelSample:
    """The sample drawn (nothing written): `annotator`'s labelled items left out; for
    `active`, people's labels of the criterion so far tell where the judge errs."""
    from judgebench.services.label_sample import label_sample

    if not scored and (strategy in NEEDS_SCORES or judge is not None or judges):
        raise InputError(f"--strategy {strategy} reads judge columns, and a samples file has "
                         "none: give the scores table, with the samples as --samples",
                         path=where, field="--strategy" if judge is None else "--judge")
    exclude = [keys.row(k) for k in _labelled(store, crit, annotator)]
    labels = None
    if strategy == "active" and _has_criterion(store, crit):
        known = people_values(store, crit.name)[1]
        labels = {keys.row(k): v for k, v in known.items()
                  if math.isfinite(v) and keys.row(k) in keys.to_store}
    return label_sample(table, strategy=strategy, n=sample, seed=seed, judge=judge,
                        judges=judges, bins=bins, by_system=by_system, allocation=allocation,
                        minimum=minimum, disagreement=disagreement, labels=labels,
                        uniform_share=uniform_share, exclude=exclude, log=notes.append)


def _has_criterion(store: str | Path, crit: Criterion) -> bool:
    return bool(crit.created) and Path(store).exists()


def _labelled(store: str | Path, crit: Criterion, annotator: str) -> set[LabelKey]:
    if not _has_criterion(store, crit):
        return set()
    return labelled_items(store, criterion=crit.name, annotator=annotator)


# -- the tasks ----------------------------------------------------------------------------
def _task(position: int, item: str, system: System, probability: float | None,
          found: TextSample, scores: tuple[tuple[str, Any], ...]) -> LabelTask:
    from judgebench.conversation import judged_index

    conversation: tuple[Turn, ...] = ()
    if found.messages is not None:
        end = len(found.messages) if found.is_pairwise else \
            judged_index(found.messages, found.turn)
        conversation = tuple(Turn(m.role, m.text) for m in found.messages[:end])
    outputs = (found.output_a or "", found.output_b or "") if found.is_pairwise else None
    contexts = () if found.context is None else (
        (found.context,) if isinstance(found.context, str) else tuple(found.context))
    humans = tuple(sorted(found.human.items()))
    return LabelTask(position, item, system, found.input_text, found.output, outputs,
                     conversation, contexts, tuple(found.references), scores, humans,
                     probability)


__all__ = ["LabelSession", "LabelTask", "Turn", "label_session", "shown_left", "system_text"]
