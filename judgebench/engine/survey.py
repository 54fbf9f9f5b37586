"""What a first read of the samples learns before any work (`Survey`: rows, human criteria,
fields lacking, the pairwise shape as `PairSurvey`), and the sample facts the runner and the
pairwise table share: a sample's hash in the store, its category, the majority of draws.
Shared by `judgebench.engine.runner` and `judgebench.engine.pairwise_table`; it imports
neither."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judgebench.engine.scoring import lacks
from judgebench.errors import InputError
from judgebench.listwise_sample import LISTWISE_SYSTEM
from judgebench.models import CONVERSATION_FIELDS, Sample

if TYPE_CHECKING:
    from judgebench.engine.scoring import PreparedMetric


def category_of(sample: Sample) -> str | None:
    value = sample.metadata.get("category")
    if value is None or (isinstance(value, float) and math.isnan(value)) or value == "":
        return None
    return value if isinstance(value, str) else str(value)


@dataclass
class PairSurvey:
    """What the first read learns for the pairwise shape: how many rows are pairwise and
    pointwise (with the first of each), whether any has a category (and a CR in one), the
    first pairwise row without `system_a`/`system_b`, the first repeated (item, system_a,
    system_b)."""

    pairwise: int = 0
    pointwise: int = 0
    first_pairwise: tuple[str, str] | None = None
    first_pointwise: tuple[str, str] | None = None
    has_category: bool = False
    has_cr: bool = False
    unnamed: tuple[str, str] | None = None
    repeated: tuple[str, str, str] | None = None
    _seen: set[bytes] = field(default_factory=set, repr=False)

    def add(self, sample: Sample) -> None:
        where = (sample.item, sample.system)
        if not sample.is_pairwise:
            self.pointwise += 1
            self.first_pointwise = self.first_pointwise or where
            return
        self.pairwise += 1
        self.first_pairwise = self.first_pairwise or where
        category = category_of(sample)
        if category is not None:
            self.has_category = True
            self.has_cr = self.has_cr or "\r" in category
        if not sample.system_a or not sample.system_b:
            self.unnamed = self.unnamed or where
            return
        self.has_cr = self.has_cr or "\r" in sample.system_a or "\r" in sample.system_b
        key = json.dumps([sample.item, sample.system_a, sample.system_b],
                         ensure_ascii=False).encode("utf-8", "surrogatepass")
        digest = hashlib.blake2b(key, digest_size=16).digest()
        if digest in self._seen:
            self.repeated = self.repeated or (sample.item, sample.system_a, sample.system_b)
        self._seen.add(digest)


@dataclass
class Survey:
    """What a first read of the samples learns, before any work: the number of rows, the human
    criteria in order of first appearance, per Sample field the rows lacking it
    (`scoring.lacks`: count and the first one), whether any id or column name holds a CR (CSV
    output then quotes all text), and a digest of the (item, system) sequence, to notice an
    input that changes between reads."""

    rows: int = 0
    human_names: dict[str, None] = field(default_factory=dict)
    lacking: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    has_cr: bool = False
    keys_digest: Any = field(default_factory=lambda: hashlib.blake2b(digest_size=16))
    pairs: PairSurvey = field(default_factory=PairSurvey)
    #: whether any sample is a judged turn (the table then has a turn key column)
    turns: bool = False
    #: samples that are not a listwise item's candidates (count, first item, first system)
    singles: tuple[int, str, str] | None = None

    def add(self, sample: Sample) -> None:
        self.rows += 1
        self.turns = self.turns or sample.turn is not None
        if sample.system != LISTWISE_SYSTEM:
            count, item, system = self.singles or (0, sample.item, sample.system)
            self.singles = (count + 1, item, system)
        self.pairs.add(sample)
        self.human_names.update(dict.fromkeys(sample.human))
        for name in Sample.model_fields:
            if lacks(sample, name):
                count, item, system = self.lacking.get(name, (0, sample.item, sample.system))
                self.lacking[name] = (count + 1, item, system)
        self.has_cr = (self.has_cr or "\r" in sample.item or "\r" in sample.system
                       or self.pairs.has_cr)
        self.keys_digest.update(key_bytes(sample))

    def check_requirements(self, prepared: Sequence[PreparedMetric]) -> None:
        """Stop before any work if a metric needs a field some samples lack."""
        problems = []
        for p in prepared:
            for name in p.metric.info.requires:
                if name in self.lacking:
                    count, item, system = self.lacking[name]
                    problems.append(
                        f"metric {p.metric.info.name} needs field '{name}', missing in "
                        f"{count} of {self.rows} rows (first: item={item!r}, system={system!r})"
                    )
        listwise = [p.metric.info.name for p in prepared if p.metric.info.listwise]
        if listwise and self.singles is not None:
            count, item, system = self.singles
            problems.append(
                f"metric {listwise[0]} judges the best of a prompt's candidates, and {count} "
                f"of {self.rows} rows are single outputs (first: item={item!r}, "
                f"system={system!r}): score a listwise file (item, candidate, output) with "
                "`judgebench score FILE -m judge.listwise`")
        if problems:
            raise InputError("; ".join(problems), field=None)


def key_bytes(sample: Sample) -> bytes:
    key = [sample.item, sample.system] + ([] if sample.turn is None else [sample.turn])
    return json.dumps(key, ensure_ascii=False).encode(
        "utf-8", "surrogatepass")


def survey(samples: Iterable[Sample]) -> Survey:
    """Read every sample once (validating it, if `samples` is a file being read) into a
    Survey."""
    found = Survey()
    for sample in samples:
        found.add(sample)
    return found


def sample_hash(sample: Sample) -> str:
    payload = sample.model_dump(mode="json", exclude={"human", "metadata"})
    for name in CONVERSATION_FIELDS:  # absent, they leave the hashes of before unchanged
        if payload[name] is None:
            del payload[name]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def majority(values: Sequence[Any]) -> Any:
    """The most frequent of `values`; among equally frequent ones, the one drawn first."""
    counts = Counter(values)
    top = max(counts.values())
    return next(v for v in values if counts[v] == top)
