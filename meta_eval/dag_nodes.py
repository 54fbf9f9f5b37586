"""A compound judge's nodes against people: each node's answers against the human labels of
its own question, and the disagreements of its final score attributed to the nodes they pass
through.

For node k and the items whose path passes through k with a node answer m_i and a human label
h_i (both finite): n, exact agreement (1/n) sum [h_i = m_i], Pearson r and Spearman rho
(`meta_eval.correlation`, NaN where undefined) and Cohen's kappa over the observed values
(`meta_eval.agreement.cohen_kappa`; Cohen 1960).

An item disagrees when its final score s_i and the human label H_i differ by more than the
tolerance t: |H_i - s_i| > t. Node k's share of the disagreements is
D_k / D, D_k = #{disagreeing items whose path passes through k}, D = #{disagreeing items};
the shares of the nodes on one path need not sum to 1 (every disagreement passes through the
start node: its share is 1). Its rate is D_k / N_k (N_k: the evaluated items through k), and
``wrong_here`` counts the disagreeing items through k whose answer at k itself differs from
k's human label (where k has one). The attribution follows the path-based error analysis of
decision-tree judges (Kalra and Tang 2025, "Verdict"); the kernel is a direct count.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from meta_eval.agreement import cohen_kappa
from meta_eval.arrays import BoolArray, FloatArray
from meta_eval.correlation import pearson_groups, spearman_groups


@dataclass(frozen=True)
class NodeAgreement:
    node: str
    n: int
    agreement: float
    pearson: float
    spearman: float
    kappa: float


@dataclass(frozen=True)
class NodeShare:
    node: str
    passed: int
    disagreements: int
    share: float
    rate: float
    #: disagreeing items through the node whose answer there disagrees with its human label;
    #: None where the node has no human label
    wrong_here: int | None


def within(*, human: FloatArray, metric: FloatArray, tolerance: float = 0.0) -> BoolArray:
    """[|h - m| <= t] for each pair; False where either is NaN."""
    h, m = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    with np.errstate(invalid="ignore"):
        close: BoolArray = np.abs(h - m) <= tolerance
    return close & np.isfinite(h) & np.isfinite(m)


def node_agreement(*, node: str, human: FloatArray, metric: FloatArray) -> NodeAgreement:
    """One node's answers `metric` against people's `human` over the items both answered
    (module docstring)."""
    h, m = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    ok = np.isfinite(h) & np.isfinite(m)
    h, m = h[ok], m[ok]
    n = int(ok.sum())
    if n == 0:
        nan = math.nan
        return NodeAgreement(node, 0, nan, nan, nan, nan)
    agreement = float((h == m).mean())
    pearson = float(pearson_groups(human=h, metric=m))
    spearman = float(spearman_groups(human=h, metric=m))
    kappa = float(cohen_kappa(human=h.tolist(), metric=m.tolist()).value)
    return NodeAgreement(node, n, agreement, pearson, spearman, kappa)


def disagreement_shares(*, paths: Sequence[Sequence[str]], disagree: Sequence[bool],
                        wrong_at: Sequence[Mapping[str, bool]] | None = None,
                        nodes: Sequence[str] = (), labelled: Collection[str] = ()
                        ) -> list[NodeShare]:
    """Per node (in `nodes` order, then in order of first appearance on a path), the items
    through it, the disagreements through it, their share of all disagreements and their
    rate among the items through it (module docstring). `labelled`: the nodes with a human
    label; `wrong_at[i]`: for item i, node -> whether the node's answer differs from its
    human label (where item i has both)."""
    if len(paths) != len(disagree) or (wrong_at is not None and len(wrong_at) != len(paths)):
        raise ValueError("paths, disagree and wrong_at must have one entry per item")
    order = list(dict.fromkeys([*nodes, *(name for path in paths for name in path)]))
    total = int(sum(bool(d) for d in disagree))
    rows = []
    for name in order:
        through = [i for i, path in enumerate(paths) if name in path]
        against = [i for i in through if disagree[i]]
        wrong: int | None = None
        if wrong_at is not None and name in labelled:
            wrong = sum(bool(wrong_at[i].get(name, False)) for i in against)
        rows.append(NodeShare(
            node=name, passed=len(through), disagreements=len(against),
            share=len(against) / total if total else math.nan,
            rate=len(against) / len(through) if through else math.nan, wrong_here=wrong))
    return rows
