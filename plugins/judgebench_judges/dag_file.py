"""The file of a compound judge (`judge.dag`): its nodes, their routes, and the checks made
before any call.

A TOML (or JSON) file::

    start = "on-topic"              # the first node (default: the first one listed)

    [defaults]                      # options every judge node takes unless it sets its own
    protocol = "text"

    [nodes.on-topic]
    judge = "judge.rubric"          # a judge metric, or a spec: "judge.rubric:min=0,max=1"
    criterion = "on topic"          # any other key is the judge's option
    min = 0
    max = 1
    human = "human.on_topic"        # optional: the human column that answers this question
    routes = [
      { when = ">= 1", goto = "cites-source" },
      { when = "else", score = 1 },
    ]

A node is a judge call (``judge = ...``), an ensemble (``kind = "ensemble"``, ``members``: a
list of judge specs, ``combine``: vote, mean or max) or a judge that reads earlier verdicts
(``sees = ["a", "b"]``: a verifier of one node, the third judge of a debate between two).
Routes are tried in order; ``when`` is ``OP NUMBER`` (OP one of < <= > >= == !=) or
``else``; each route goes to a node (``goto``) or ends in a score (``score``: a number, or
the name of a node on every path to here, whose value it takes). A node without routes ends
the path; its value is the score. Checked before any call: every name refers to a node, no
cycle, every node reached, every route list ends with ``else``, every ``score``/``sees`` name
on every path to the node that uses it.
"""

from __future__ import annotations

import json
import math
import operator
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebench.plugin_api import InputError

COMBINES = ("vote", "mean", "max")
#: Node keys that describe the graph; every other key of a judge node is the judge's option.
NODE_KEYS = {"judge", "kind", "routes", "human", "sees", "members", "combine"}
MAX_NODES = 256

_OPS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt}
_WHEN = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Route:
    when: str  # as written: "OP NUMBER" or "else"
    goto: str | None = None
    score: float | str | None = None  # a number, or a node whose value is the score

    def matches(self, value: float) -> bool:
        if self.when == "else":
            return True
        found = _WHEN.match(self.when)
        assert found is not None  # checked when read
        return _OPS[found.group(1)](value, float(found.group(2)))


@dataclass(frozen=True)
class Node:
    name: str
    kind: str  # "judge" or "ensemble"
    #: judge: [spec]; ensemble: its members' specs
    specs: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)
    routes: tuple[Route, ...] = ()
    human: str | None = None
    sees: tuple[str, ...] = ()
    combine: str = "mean"

    def structure(self) -> dict[str, Any]:
        """What of this node decides the DAG's numbers besides its judges' signatures."""
        return {"kind": self.kind, "combine": self.combine if self.kind == "ensemble" else None,
                "sees": list(self.sees),
                "routes": [[r.when, r.goto, r.score] for r in self.routes]}


@dataclass(frozen=True)
class Dag:
    where: str
    start: str
    nodes: dict[str, Node]
    defaults: dict[str, Any]
    #: node -> the nodes on every path from start to it (itself included)
    always_before: dict[str, frozenset[str]]

    def structure(self) -> dict[str, Any]:
        return {"start": self.start,
                "nodes": {name: node.structure() for name, node in sorted(self.nodes.items())}}

    def humans(self) -> dict[str, str]:
        """node -> the human column that answers its question (nodes that have one)."""
        return {n.name: n.human for n in self.nodes.values() if n.human}


def read_dag(path: str | Path) -> Dag:
    """The DAG in the TOML or JSON file `path`, checked (module docstring); an InputError
    names the file and the node."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("DAG file not found", path=where) from None
    except IsADirectoryError:
        raise InputError("is a directory, not a DAG file", path=where) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the DAG file ({exc})", path=where) from None
    try:
        data = json.loads(text) if where.lower().endswith(".json") else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError) as exc:
        kind = "JSON" if where.lower().endswith(".json") else "TOML"
        raise InputError(f"not valid {kind}: {exc}", path=where) from None
    return dag_from_data(data, where)


def dag_from_data(data: Any, where: str) -> Dag:
    """The DAG described by `data` (the parsed file; `where` names it in errors), checked."""
    raw_nodes, defaults = _top_level(data, where)
    nodes = {name: _node(str(name), body, where) for name, body in raw_nodes.items()}
    start = data.get("start", next(iter(nodes)))
    if not isinstance(start, str) or start not in nodes:
        raise InputError(f"start names no node: {start!r} (nodes: {', '.join(nodes)})",
                         path=where, field="start")
    for node in nodes.values():
        for i, route in enumerate(node.routes):
            if route.goto is not None and route.goto not in nodes:
                raise InputError(f"node '{node.name}' goes to '{route.goto}', which is no node",
                                 path=where, field=f"nodes.{node.name}.routes[{i}].goto")
    order = _topological(start, nodes, where)
    missed = [name for name in nodes if name not in order]
    if missed:
        raise InputError(f"node '{missed[0]}' is never reached from start '{start}'",
                         path=where, field=f"nodes.{missed[0]}")
    always = _always_before(order, nodes)
    for node in nodes.values():
        _check_named(node, nodes, always[node.name], where)
    return Dag(where=where, start=start, nodes=nodes, defaults=defaults,
               always_before=always)


def _top_level(data: Any, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The file's node tables and defaults, checked for shape."""
    if not isinstance(data, dict):
        raise InputError("a DAG file is a table with [nodes.NAME] tables", path=where)
    unknown = set(data) - {"start", "defaults", "nodes"}
    if unknown:
        raise InputError(f"unknown top-level key(s) {', '.join(sorted(unknown))} (keys: "
                         "start, defaults, nodes)", path=where, field=sorted(unknown)[0])
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        raise InputError("no nodes: give at least one [nodes.NAME] table", path=where,
                         field="nodes")
    if len(raw_nodes) > MAX_NODES:
        raise InputError(f"{len(raw_nodes)} nodes, more than {MAX_NODES}", path=where,
                         field="nodes")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InputError("must be a table of judge options", path=where, field="defaults")
    return raw_nodes, dict(defaults)


def _check_named(node: Node, nodes: dict[str, Node], before: frozenset[str],
                 where: str) -> None:
    """Every node `node` sees or scores by name exists and is on every path to it
    (`before`)."""
    for name in node.sees:
        if name not in nodes:
            raise InputError(f"node '{node.name}' sees '{name}', which is no node",
                             path=where, field=f"nodes.{node.name}.sees")
        if name == node.name or name not in before:
            raise InputError(f"node '{node.name}' sees '{name}', which is not on every "
                             f"path to '{node.name}'", path=where,
                             field=f"nodes.{node.name}.sees")
    for i, route in enumerate(node.routes):
        if isinstance(route.score, str) and route.score not in before:
            raise InputError(f"node '{node.name}' scores the value of '{route.score}', "
                             f"which is not on every path to '{node.name}'", path=where,
                             field=f"nodes.{node.name}.routes[{i}].score")


def _node(name: str, body: Any, where: str) -> Node:
    at = f"nodes.{name}"
    if not isinstance(body, dict):
        raise InputError(f"node '{name}' must be a table", path=where, field=at)
    kind = body.get("kind", "ensemble" if "members" in body else "judge")
    if kind not in ("judge", "ensemble"):
        raise InputError(f"node '{name}': kind must be judge or ensemble, got {kind!r}",
                         path=where, field=f"{at}.kind")
    human = body.get("human")
    if human is not None and (not isinstance(human, str) or not human):
        raise InputError(f"node '{name}': human must be a column name", path=where,
                         field=f"{at}.human")
    sees = body.get("sees", [])
    sees = [sees] if isinstance(sees, str) else sees
    if not isinstance(sees, list) or not all(isinstance(s, str) for s in sees):
        raise InputError(f"node '{name}': sees must be a node name or a list of them",
                         path=where, field=f"{at}.sees")
    return Node(name=name, kind=kind, specs=_specs(name, kind, body, where),
                options={k: v for k, v in body.items() if k not in NODE_KEYS},
                routes=_routes(name, body.get("routes", []), where), human=human,
                sees=tuple(sees), combine=body.get("combine", "mean"))


def _specs(name: str, kind: str, body: dict[str, Any], where: str) -> tuple[str, ...]:
    """The judge spec of a judge node, or the members of an ensemble, checked."""
    at = f"nodes.{name}"
    if kind == "judge":
        judge = body.get("judge")
        if not isinstance(judge, str) or not judge.strip():
            raise InputError(f"node '{name}' has no judge: give judge = \"judge.rubric\" (or "
                             "kind = \"ensemble\" with members)", path=where, field=f"{at}.judge")
        for key in ("members", "combine"):
            if key in body:
                raise InputError(f"node '{name}': {key} is an ensemble's key (kind = "
                                 "\"ensemble\")", path=where, field=f"{at}.{key}")
        return (judge,)
    members = body.get("members")
    if (not isinstance(members, list) or len(members) < 2
            or not all(isinstance(m, str) and m.strip() for m in members)):
        raise InputError(f"node '{name}': an ensemble's members are a list of two or more "
                         "judge specs", path=where, field=f"{at}.members")
    combine = body.get("combine", "mean")
    if combine not in COMBINES:
        raise InputError(f"node '{name}': combine must be one of {', '.join(COMBINES)}, "
                         f"got {combine!r}", path=where, field=f"{at}.combine")
    if "judge" in body:
        raise InputError(f"node '{name}': an ensemble has members, not judge", path=where,
                         field=f"{at}.judge")
    return tuple(members)


def _routes(name: str, raw: Any, where: str) -> tuple[Route, ...]:
    at = f"nodes.{name}.routes"
    if not isinstance(raw, list):
        raise InputError(f"node '{name}': routes must be a list of tables", path=where, field=at)
    routes = [_route(name, entry, where, f"{at}[{i}]") for i, entry in enumerate(raw)]
    if routes and routes[-1].when != "else":
        raise InputError(f"node '{name}': the last route must be when = \"else\", so every "
                         "value ends in a score or goes on", path=where, field=at)
    for i, route in enumerate(routes[:-1]):
        if route.when == "else":
            raise InputError(f"node '{name}': the routes after an 'else' are never taken",
                             path=where, field=f"{at}[{i + 1}]")
    return tuple(routes)


def _route(name: str, entry: Any, where: str, here: str) -> Route:
    """One route of node `name` (at `here` in the file), checked."""
    if not isinstance(entry, dict):
        raise InputError(f"node '{name}': a route is a table {{ when = ..., goto = ... }}",
                         path=where, field=here)
    unknown = set(entry) - {"when", "goto", "score"}
    if unknown:
        raise InputError(f"node '{name}': unknown route key(s) {', '.join(sorted(unknown))}"
                         " (keys: when, goto, score)", path=where, field=here)
    when = entry.get("when")
    found = _WHEN.match(when) if isinstance(when, str) else None
    if not isinstance(when, str) or (when != "else" and found is None):
        raise InputError(f"node '{name}': when must be 'OP NUMBER' (OP one of < <= > >= == "
                         f"!=) or 'else', got {when!r}", path=where, field=f"{here}.when")
    if found is not None and not math.isfinite(float(found.group(2))):
        raise InputError(f"node '{name}': when compares with a number that is not finite",
                         path=where, field=f"{here}.when")
    goto, score = entry.get("goto"), entry.get("score")
    if (goto is None) == (score is None):
        raise InputError(f"node '{name}': a route has exactly one of goto (a node) and "
                         "score (a number or a node's name)", path=where, field=here)
    if goto is not None and not isinstance(goto, str):
        raise InputError(f"node '{name}': goto must be a node's name", path=where,
                         field=f"{here}.goto")
    if score is not None and (isinstance(score, bool) or not isinstance(
            score, int | float | str) or (isinstance(score, float)
                                          and not math.isfinite(score))):
        raise InputError(f"node '{name}': score must be a finite number or a node's name",
                         path=where, field=f"{here}.score")
    if goto == name:
        raise InputError(f"node '{name}' goes to itself (a cycle)", path=where,
                         field=f"{here}.goto")
    return Route(when=when, goto=goto,
                 score=float(score) if isinstance(score, int | float) else score)


def _topological(start: str, nodes: dict[str, Node], where: str) -> list[str]:
    """The nodes reached from `start`, each before every node it goes to; a cycle is an
    InputError naming its nodes."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[tuple[str, list[str]]] = [(start, _next(nodes[start]))]
    chain = [start]
    state[start] = 1
    while stack:
        name, targets = stack[-1]
        if not targets:
            stack.pop()
            chain.pop()
            state[name] = 2
            order.append(name)
            continue
        target = targets.pop(0)
        if state.get(target) == 1:
            cycle = " -> ".join([*chain[chain.index(target):], target])
            raise InputError(f"the nodes form a cycle: {cycle}", path=where,
                             field=f"nodes.{name}.routes")
        if target not in state:
            state[target] = 1
            chain.append(target)
            stack.append((target, _next(nodes[target])))
    return order[::-1]


def _next(node: Node) -> list[str]:
    return [r.goto for r in node.routes if r.goto is not None]


def _always_before(order: list[str], nodes: dict[str, Node]) -> dict[str, frozenset[str]]:
    """Each node's dominators: the nodes on every path from the start to it, itself included
    (`order` is topological, the start first)."""
    preds: dict[str, list[str]] = {name: [] for name in order}
    for name in order:
        for target in _next(nodes[name]):
            preds[target].append(name)
    always: dict[str, frozenset[str]] = {}
    for name in order:
        before = [always[p] for p in preds[name]]
        common = frozenset.intersection(*before) if before else frozenset()
        always[name] = common | {name}
    return always
