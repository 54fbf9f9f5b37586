"""`meta-eval nodes` as text: per judge.dag column, each node against its human column (n,
exact agreement, Pearson, Spearman, Cohen's kappa), then the disagreements of its score with
people and the share of them that pass through each node; and a compound judge's path in
`judgebench logs`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgebench.services.dag_nodes import NodesReport, NodesResult


def _num(value: float) -> str:
    return "   n/a" if math.isnan(value) else f"{value:6.3f}"


def _pct(value: float) -> str:
    return " n/a" if math.isnan(value) else f"{value:4.0%}"


def report_lines(report: NodesReport) -> list[str]:
    lines = [f"{report.metric} · nodes against people · final score against {report.human}"
             f" (tolerance {report.tolerance:g})"]
    if report.agreements:
        width = max(len(a.node) for a in report.agreements)
        lines += ["", f"  {'node':<{width}}  {'human column':<20} {'n':>5} {'agree':>6} "
                      f"{'pearson':>7} {'spearman':>8} {'kappa':>6}"]
        lines += [f"  {a.node:<{width}}  {report.node_humans[a.node]:<20} {a.n:>5} "
                  f"{_num(a.agreement)} {_num(a.pearson):>7} {_num(a.spearman):>8} "
                  f"{_num(a.kappa)}" for a in report.agreements]
    else:
        lines += ["", "  no node has a human column (human = ... in the DAG file)"]
    lines += ["", f"  {report.disagreements} of {report.evaluated} scored rows disagree with "
                  f"{report.human} ({report.rows - report.evaluated} of {report.rows} rows "
                  "not evaluated: no score, no label or no stored path)"]
    if report.disagreements:
        for share in report.shares:
            wrong = ("" if share.wrong_here is None else
                     f"; its own answer disagrees with {report.node_humans[share.node]} on "
                     f"{share.wrong_here}")
            lines.append(f"  {_pct(share.share)} of the disagreements pass through node "
                         f"`{share.node}` ({share.disagreements} of the {share.passed} rows "
                         f"through it{wrong})")
    lines += ["", f"  signature: {report.signature}"]
    return lines


def nodes_report(result: NodesResult) -> str:
    return "\n\n".join("\n".join(report_lines(r)) for r in result.reports)


def path_log_lines(extra: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """A compound judge's score in `judgebench logs`: the path it took, then each node's
    answer on it (value or status and reason, its rationale); and `extra` less the two."""
    path, nodes = extra.get("path"), extra.get("nodes")
    if not isinstance(path, list) or not isinstance(nodes, list):
        return [], extra
    lines = [f"  path: {' -> '.join(str(name) for name in path)}"]
    for node in nodes:
        if not isinstance(node, dict):
            continue
        value = node.get("value")
        said = (f"{value:g}" if isinstance(value, int | float) and node.get("status") == "ok"
                else f"{node.get('status')}: {node.get('reason')}")
        human = f"  (people: {node['human']})" if node.get("human") else ""
        lines.append(f"    {node.get('node')}: {said}{human}")
        for member in node.get("members") or []:
            if isinstance(member, dict):
                lines.append(f"      member {member.get('signature')}: {member.get('value')}")
        if node.get("rationale"):
            lines.append(f"      rationale: {node['rationale']}")
    rest = {k: v for k, v in extra.items() if k not in ("path", "nodes")}
    return lines, rest
