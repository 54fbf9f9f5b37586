"""`meta-eval nodes`: a compound judge's (judge.dag) nodes meta-evaluated one by one, and the
disagreements of its score with people attributed to the nodes they pass through.

Each judge.dag column of the scores table (or those `--metric` names) is read with its
sidecar's signature from the store `score` wrote (`--store`, else the one the sidecar
names, else judgebench.db):
every row's path and node answers (``extra["path"]``, ``extra["nodes"]``; draw 0, the last
written where the store holds several). A node whose question has a human column (``human =
...`` in the DAG file, kept with each answer) is compared with it on the rows whose path
passes through it (exact agreement, correlations, kappa); the column's score is compared with
`human` (the final question's column) and its disagreements (beyond `tolerance`) attributed
to the nodes (`meta_eval.dag_nodes`).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    from judgebench.plugins import PluginHost
    from meta_eval.dag_nodes import NodeAgreement, NodeShare

Log = Callable[[str], None]
Key = tuple[str, str]
VERSION = "1"


@dataclass(frozen=True)
class NodesReport:
    """One judge.dag column: its nodes against their human columns, and the attribution of
    its disagreements with `human`."""

    metric: str
    metric_signature: str
    human: str
    tolerance: float
    rows: int
    evaluated: int
    disagreements: int
    #: node -> its human column (nodes that have one)
    node_humans: dict[str, str]
    agreements: list[NodeAgreement]
    shares: list[NodeShare]

    @property
    def signature(self) -> str:
        return (f"dag-nodes@{VERSION}|metric:{self.metric_signature}|human:{self.human}|"
                f"tolerance:{self.tolerance:g}|node-stats:exact-agreement,pearson,spearman,"
                "cohen-kappa|attribution:path")

    def to_dict(self) -> dict[str, Any]:
        def clean(value: float) -> float | None:
            return None if math.isnan(value) else value

        return {
            "metric": self.metric, "human": self.human, "tolerance": self.tolerance,
            "rows": self.rows, "evaluated": self.evaluated,
            "disagreements": self.disagreements, "signature": self.signature,
            "nodes": [{"node": a.node, "human": self.node_humans[a.node], "n": a.n,
                       "agreement": clean(a.agreement), "pearson": clean(a.pearson),
                       "spearman": clean(a.spearman), "kappa": clean(a.kappa)}
                      for a in self.agreements],
            "attribution": [{"node": s.node, "passed": s.passed,
                             "disagreements": s.disagreements, "share": clean(s.share),
                             "rate": clean(s.rate), "wrong_here": s.wrong_here}
                            for s in self.shares]}


@dataclass
class NodesResult(Result):
    reports: list[NodesReport]

    def to_dict(self) -> list[dict[str, Any]]:
        return [report.to_dict() for report in self.reports]


def stored_walks(store: Path, signature: str) -> dict[Key, dict[str, Any]]:
    """(item, system) -> the stored extra (path, nodes) of `signature`'s draw-0 scores, the
    last written where several are held."""
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
            rows = conn.execute(
                "SELECT item, system, extra FROM scores WHERE signature = ? AND sample_index = 0"
                " ORDER BY created_at, rowid", (signature,)).fetchall()
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a store `score` wrote ({exc})", path=str(store),
                         field="--store") from None
    walks: dict[Key, dict[str, Any]] = {}
    for item, system, extra in rows:
        try:
            data = json.loads(extra) if extra else {}
        except json.JSONDecodeError:
            raise InputError(f"the stored extra of item {item!r} system {system!r} is not "
                             "JSON", path=str(store), field="extra") from None
        if isinstance(data, dict) and isinstance(data.get("path"), list):
            walks[(str(item), str(system))] = data
    return walks


def _store(sidecar: dict[str, Any], store: str | Path | None) -> Path:
    """`store`, else the one the sidecar names, else `score`'s default; an InputError when it
    is not there."""
    from judgebench.engine.store import DEFAULT_STORE

    named = sidecar.get("store")
    chosen = store or (named if isinstance(named, str) and named != ":memory:"
                       else DEFAULT_STORE)
    if not Path(chosen).is_file():
        raise InputError("meta-eval nodes reads each node's answers from the store `score` "
                         "wrote, and it is not there (name it with --store)",
                         path=str(chosen), field="--store")
    return Path(chosen)


def _dag_columns(table: Any, metrics: Sequence[str]) -> list[str]:
    if metrics:
        for column in metrics:
            if not table.signature(column).startswith("judge.dag@"):
                raise InputError(f"column '{column}' is not a judge.dag column (its signature "
                                 "is not judge.dag's)", path=f"{table.path}.meta.json",
                                 field="--metric")
        return list(metrics)
    columns = [c for c, info in table.described.items()
               if isinstance(info, dict) and str(info.get("signature", "")).startswith(
                   "judge.dag@")]
    if not columns:
        raise InputError("no column of the table is a judge.dag column", path=str(table.path))
    return columns


def node_meta_eval(scores: str | Path, *, human: str, metrics: Sequence[str] = (),
                   store: str | Path | None = None, tolerance: float = 0.0,
                   host: PluginHost | None = None, log: Log | None = None) -> NodesResult:
    """Every judge.dag column of `scores` (or `metrics`), node by node (module docstring)."""
    from judgebench.tables.prepared import PreparedTable
    from judgebench.tables.spans import SignedTable

    if not math.isfinite(tolerance) or tolerance < 0:
        raise InputError(f"--tolerance must be a finite number >= 0, got {tolerance}",
                         field="--tolerance")
    table = SignedTable.read(scores)
    store_path = _store(table.sidecar, store)
    columns = _dag_columns(table, metrics)
    walks = {c: stored_walks(store_path, table.signature(c)) for c in columns}
    node_humans = {c: _node_humans(walks[c]) for c in columns}
    wanted = list(dict.fromkeys([human, *(h for c in columns for h in node_humans[c].values())]))
    prepared = PreparedTable.read(scores, wanted, columns, store_path=store_path, host=host,
                                  log=log)
    frame = prepared.frame
    keys = list(zip([str(v) for v in frame["item"]], [str(v) for v in frame["system"]],
                    strict=True))
    humans = {name: frame[name].to_numpy(dtype=float) for name in wanted}
    reports = [_report(c, table.signature(c), frame[c].to_numpy(dtype=float), keys,
                       walks[c], node_humans[c], humans, human, tolerance) for c in columns]
    return NodesResult(reports)


def _node_humans(walks: dict[Key, dict[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for data in walks.values():
        for node in data.get("nodes", []):
            if isinstance(node, dict) and isinstance(node.get("human"), str):
                found.setdefault(str(node["node"]), node["human"])
    return found


def _report(column: str, signature: str, scores: np.ndarray, keys: list[Key],
            walks: dict[Key, dict[str, Any]], node_humans: dict[str, str],
            humans: dict[str, np.ndarray], human: str, tolerance: float) -> NodesReport:
    from meta_eval.dag_nodes import disagreement_shares, node_agreement, within

    answers: list[dict[str, float]] = []  # per row: node -> its answer (ok answers only)
    paths: list[list[str]] = []
    for key in keys:
        data = walks.get(key, {})
        paths.append([str(n) for n in data.get("path", [])])
        answers.append({str(n["node"]): float(n["value"]) for n in data.get("nodes", [])
                        if isinstance(n, dict) and n.get("status") == "ok"
                        and isinstance(n.get("value"), int | float)})
    order = list(dict.fromkeys(name for path in paths for name in path))
    agreements = []
    for name in order:
        if name not in node_humans:
            continue
        labels = humans[node_humans[name]]
        node_values = np.array([a.get(name, math.nan) for a in answers], dtype=float)
        agreements.append(node_agreement(node=name, human=labels, metric=node_values))
    final = humans[human]
    evaluated = [i for i in range(len(keys))
                 if math.isfinite(scores[i]) and math.isfinite(final[i]) and paths[i]]
    disagree = [not bool(within(human=final[i:i + 1], metric=scores[i:i + 1],
                                tolerance=tolerance)[0]) for i in evaluated]
    wrong_at = [{name: answers[i][name] != humans[h][i] for name, h in node_humans.items()
                 if name in answers[i] and math.isfinite(humans[h][i])}
                for i in evaluated]
    shares = disagreement_shares(paths=[paths[i] for i in evaluated], disagree=disagree,
                                 wrong_at=wrong_at, nodes=order, labelled=list(node_humans))
    return NodesReport(column, signature, human, tolerance, len(keys), len(evaluated),
                       sum(disagree), node_humans, agreements, shares)
