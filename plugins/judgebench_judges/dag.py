"""judge.dag: a compound judge, a small program of judges read from a file
(``judge.dag:path=dag.toml``; the format and its checks: `judgebench_judges.dag_file`), or
declared by a plugin: a subclass with its own `info` and the file's content as `graph`.

Every node's judge is built, and the graph checked, when the metric is built: before any
call. Each sample starts at the start node and follows the first route whose condition its
node's value meets, until a route ends in a score or a node without routes gives its own
value. The samples of a batch at the same node are judged together (one judge batch), so
every judge call goes through that judge's cache like any judge's: a resumed run pays no call
twice. Options other than ``path`` go to every judge node (the file's ``[defaults]`` below
them, a node's own options above).

Each score keeps the path it took (``extra["path"]``) and every node's answer on it
(``extra["nodes"]``: node, value, status, reason, rationale, the node's judge signature,
which names its prompt template and model, and its human column) and the judge-cache keys
of all their requests (so `judgebench logs` shows every call). A node that fails fails the
sample, with the node named. An ensemble's members all answer or the node fails; ``vote`` is
the most frequent value (a tie between values: their mean, as judge.panel's majority),
``mean`` and ``max`` what they say. A node that ``sees`` others judges the output with their
verdicts (value and reasons) appended to it: a verifier, or the third judge of a debate.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from judgebench.plugin_api import (
    REQUEST_KEYS,
    EmptyText,
    InputError,
    Metric,
    MetricInfo,
    Outcome,
    Sample,
    Status,
    parse_spec,
    run_sync,
)
from judgebench_judges.dag_file import Dag, Node, dag_from_data, read_dag

DAG_EMPTY = EmptyText(output="scored", reference="scored", input="scored",
                      note="as its node judges, which judge an empty text like any other")


class DagOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    path: str | None = Field(None, examples=["dag.toml"])


@dataclass
class _Walk:
    """One sample's way through the graph."""

    at: str | None
    path: list[str] = field(default_factory=list)
    answers: dict[str, Outcome] = field(default_factory=dict)
    result: Outcome | None = None


class JudgeDag(Metric[DagOptions]):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.dag", version="1", kind="judge", requires=(), deterministic=False,
        empty_text=DAG_EMPTY,
        description="A compound judge: judge calls joined by conditions, verifiers, "
                    "ensembles and debates, read from a TOML/JSON file (path=); each node's "
                    "answer kept. Other options go to every node's judge.",
        citation="Kalra et al. (2025). VERDICT: A Library for Scaling Judge-Time Compute. "
                 "arXiv:2502.18018.",
    )
    Options = DagOptions
    batch_size: ClassVar[int] = 512
    #: A plugin's compound judge: the file's content as data (a subclass sets it, with an
    #: `info` of its own); None reads the file `path` names.
    graph: ClassVar[dict[str, Any] | None] = None

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        name = self.info.name
        if self.graph is not None:
            if self.options.path is not None:
                raise InputError(f"metric {name} declares its graph: it takes no path=",
                                 field="path")
            self.dag: Dag = dag_from_data(self.graph, f"metric {name}")
        elif self.options.path is None:
            raise InputError(f"metric {name}: give path=FILE, the TOML or JSON file of the "
                             "judge's nodes", field="path")
        else:
            self.dag = read_dag(self.options.path)
        self.judges: dict[str, list[Any]] = {
            name: [self._build(node, spec) for spec in node.specs]
            for name, node in self.dag.nodes.items()}

    def _build(self, node: Node, text: str) -> Any:
        try:
            spec = parse_spec(text)
            if not spec.name.startswith("judge."):
                raise InputError(f"'{spec.name}' is not a judge metric")
            opts = {**self.dag.defaults, **(self.options.model_extra or {}), **spec.options,
                    **node.options}
            entry = self.host.metric(spec.name)
            if isinstance(entry.factory, type) and issubclass(entry.factory, JudgeDag):
                raise InputError(f"'{spec.name}' is a compound judge: a node is one judge "
                                 "(nest its nodes in this file instead)")
            judge = entry.build(**opts)
        except InputError as exc:
            raise InputError(f"node '{node.name}': {exc}", path=self.dag.where,
                             field=f"nodes.{node.name}") from None
        if not hasattr(judge, "ascore"):
            raise InputError(f"node '{node.name}': '{spec.name}' is not a judge metric",
                             path=self.dag.where, field=f"nodes.{node.name}")
        return judge

    _repeat: int = 0

    @property
    def repeat(self) -> int:
        """Which draw of `score --repeats K` this instance makes; every node's judge makes
        the same draw (its requests, and so its cache keys, carry it)."""
        return self._repeat

    @repeat.setter
    def repeat(self, value: int) -> None:
        self._repeat = value
        for judges in getattr(self, "judges", {}).values():
            for judge in judges:
                judge.repeat = value

    # -- signatures ---------------------------------------------------------------------------
    def node_signature(self, name: str) -> str:
        """The node's judge's signature (an ensemble: its members', one per line)."""
        return "\n".join(str(j.signature()) for j in self.judges[name])

    def signature_fields(self) -> dict[str, str]:
        described = {"structure": self.dag.structure(),
                     "judges": {name: self.node_signature(name) for name in sorted(self.judges)}}
        digest = hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:12]
        fields = {"nodes": f"{len(self.dag.nodes)}:{digest}"}
        if self.plugin:
            fields["plugin"] = self.plugin
        return fields

    def unpriced_models(self) -> list[str]:
        """Every node judge's paid model whose price is unknown (`Budget.preflight`)."""
        return sorted({model for judges in self.judges.values() for j in judges
                       for model in getattr(j, "unpriced_models", list)()})

    # -- scoring ------------------------------------------------------------------------------
    def score(self, samples: Sequence[Sample]) -> list[Outcome]:
        return run_sync(self.ascore(samples))

    async def ascore(self, samples: Sequence[Sample]) -> list[Outcome]:
        walks = [_Walk(at=self.dag.start) for _ in samples]
        while True:
            waiting: dict[str, list[int]] = defaultdict(list)
            for i, walk in enumerate(walks):
                if walk.at is not None:
                    waiting[walk.at].append(i)
            if not waiting:
                break
            answered = await asyncio.gather(*(
                self._node(name, [self._shown(samples[i], walks[i], name) for i in indices])
                for name, indices in waiting.items()))
            for (name, indices), outcomes in zip(waiting.items(), answered, strict=True):
                for i, outcome in zip(indices, outcomes, strict=True):
                    self._step(walks[i], name, outcome)
        return [w.result for w in walks]  # type: ignore[misc]  # every walk ends in a result

    def _shown(self, sample: Sample, walk: _Walk, name: str) -> Sample:
        """The sample as node `name` judges it: with the verdicts it sees appended."""
        seen = self.dag.nodes[name].sees
        if not seen:
            return sample
        notes = []
        for other in seen:
            answer = walk.answers[other]
            reasons = f" Its reasons: {answer.rationale}" if answer.rationale else ""
            notes.append(f"[The verdict of judge '{other}': {_number(answer.value)}.{reasons}]")
        return sample.model_copy(update={"output": "\n\n".join([sample.output or "", *notes])})

    async def _node(self, name: str, samples: list[Sample]) -> list[Outcome]:
        judges = self.judges[name]
        per_judge = await asyncio.gather(*(j.ascore(samples) for j in judges))
        if len(judges) == 1:
            return list(per_judge[0])
        return [self._combine(name, [results[i] for results in per_judge])
                for i in range(len(samples))]

    def _combine(self, name: str, outcomes: list[Outcome]) -> Outcome:
        node = self.dag.nodes[name]
        members = [{"signature": str(j.signature()), "value": o.value, "status": str(o.status),
                    "reason": o.reason}
                   for j, o in zip(self.judges[name], outcomes, strict=True)]
        extra: dict[str, Any] = {"members": members}
        keys = [key for o in outcomes for key in o.extra.get(REQUEST_KEYS, [])]
        if keys:
            extra[REQUEST_KEYS] = keys
        accounting = _accounting(outcomes)
        failed = [(m, o) for m, o in zip(members, outcomes, strict=True)
                  if o.status != Status.OK or o.value is None]
        if failed:
            member, outcome = failed[0]
            return Outcome.failed(outcome.status if outcome.status != Status.OK
                                  else Status.ERROR,
                                  f"member {member['signature']}: {outcome.reason}",
                                  extra=extra, **accounting)
        values = [float(o.value) for o in outcomes if o.value is not None]
        if node.combine == "mean":
            value = math.fsum(values) / len(values)
        elif node.combine == "max":
            value = max(values)
        else:
            counts = Counter(values)
            top = max(counts.values())
            tied = [v for v, c in counts.items() if c == top]
            value = math.fsum(tied) / len(tied)
        return Outcome(value=value, extra=extra, **accounting)

    def _step(self, walk: _Walk, name: str, outcome: Outcome) -> None:
        """Records node `name`'s answer on `walk` and moves it on (or ends it)."""
        node = self.dag.nodes[name]
        walk.path.append(name)
        walk.answers[name] = outcome
        walk.at = None
        if outcome.status != Status.OK or outcome.value is None:
            status = outcome.status if outcome.status != Status.OK else Status.ERROR
            walk.result = Outcome.failed(status, f"node '{name}': {outcome.reason}",
                                         **self._kept(walk))
            return
        if not node.routes:
            walk.result = Outcome(value=outcome.value, rationale=outcome.rationale,
                                  **self._kept(walk))
            return
        route = next(r for r in node.routes if r.matches(outcome.value))  # the last is else
        if route.goto is not None:
            walk.at = route.goto
            return
        score = route.score
        value = walk.answers[score].value if isinstance(score, str) else score
        walk.result = Outcome(value=value, **self._kept(walk))

    def _kept(self, walk: _Walk) -> dict[str, Any]:
        """What a finished walk's Outcome keeps: its path, every node's answer, the judge-cache
        keys of their requests, and the summed accounting."""
        nodes = []
        keys: list[str] = []
        for name in walk.path:
            o = walk.answers[name]
            record: dict[str, Any] = {
                "node": name, "value": o.value, "status": str(o.status), "reason": o.reason,
                "rationale": o.rationale, "signature": self.node_signature(name)}
            human = self.dag.nodes[name].human
            if human:
                record["human"] = human
            if "members" in o.extra:
                record["members"] = o.extra["members"]
            nodes.append(record)
            keys.extend(o.extra.get(REQUEST_KEYS, []))
        extra: dict[str, Any] = {"path": list(walk.path), "nodes": nodes}
        if keys:
            extra[REQUEST_KEYS] = keys
        return {"extra": extra, **_accounting([walk.answers[n] for n in walk.path])}

    # -- estimates ----------------------------------------------------------------------------
    def estimate(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """An upper bound: every node's judge on every sample (a sample takes one path)."""
        total: dict[str, Any] = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
        for judges in self.judges.values():
            for judge in judges:
                part = judge.estimate(samples)
                for key in ("calls", "tokens_in", "tokens_out"):
                    total[key] += part[key]
                total["cost_usd"] = (None if total["cost_usd"] is None
                                     or part["cost_usd"] is None
                                     else total["cost_usd"] + part["cost_usd"])
        return total

    def close(self) -> None:
        for judges in self.judges.values():
            for judge in judges:
                judge.close()


def _number(value: float | None) -> str:
    if value is None:
        return "none"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _accounting(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    def total(values: list[Any]) -> Any:
        return None if not values or any(v is None for v in values) else sum(values)

    costs = [o.cost_usd for o in outcomes]
    return {"tokens_in": total([o.tokens_in for o in outcomes]),
            "tokens_out": total([o.tokens_out for o in outcomes]),
            "cost_usd": None if not costs or any(c is None for c in costs)
            else math.fsum(c for c in costs if c is not None),
            "latency_s": total([o.latency_s for o in outcomes])}
