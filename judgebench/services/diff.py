"""The diff service: what `judgebench diff A B` computes, as a function.

A and B are two runs of the same judges: each a scores table (`score -o`, wide or pairwise)
or a store (`score --store`), e.g. before and after a library upgrade, a new judge snapshot
or a quantised local model. The columns both have (or the pair `column_a`/`column_b`: two
signatures of one metric in one store) are matched on their keys (item, system; or item,
system_a, system_b) and compared, per column:

- flips (`meta_eval.judge_comparison`: flip rate, kappa, and with people Yan et al.'s
  negative and positive flips and each side's accuracy), with item-bootstrap CIs, through
  `judgebench.services.compare_judges` on the matched table;
- `kl` (KL(A || B), smoothed) and `js` between the two sides' score (or verdict)
  distributions over the values either uses;
- with people (wide tables): each `statistic` on A and on B, their difference B - A with a
  paired item-bootstrap CI (the same item draws for both), `significant` when it excludes 0;
- conclusions: the winner (the system with the best mean score, or the most wins of a
  pairwise table) under A and under B; with people and two or more columns, each column's
  significance cluster under A and under B (`meta_eval.significance_clusters` on the first
  statistic);
- from a store, what answered each side (`judgebench.engine.fingerprints`): the scores per
  fingerprint, and the flip rate per pair of fingerprints.

`moved` lists the conclusions that changed; a column whose scores are the same under A and
B but whose cluster changed (because another column's scores moved the clusters) is listed
apart, in `moved_by_others`, saying so; `drift` is whether any conclusion changed (either
list), or a statistic changed significantly (`--fail-on drift`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.results import Result
from meta_eval.judge_comparison import Estimate
from meta_eval.results import _clean

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

WIDE_KEY = ("item", "system")
PAIR_KEY = ("item", "system_a", "system_b")
FINGERPRINT_SUFFIX = "#fingerprint"
DEFAULT_STATISTICS = ("kendall",)


@dataclass(frozen=True)
class StatisticChange:
    """One statistic of a column against people under A and under B, and B - A with a
    paired item-bootstrap interval."""

    statistic: str
    value_a: float
    value_b: float
    delta: float
    ci_low: float | None
    ci_high: float | None
    significant: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: _clean(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ColumnDiff:
    """One column of A against the same column of B."""

    column_a: str
    column_b: str
    units: int
    estimates: list[Estimate]
    kl: float
    js: float
    statistics: list[StatisticChange] = field(default_factory=list)
    winner_a: str | None = None
    winner_b: str | None = None
    cluster_a: int | None = None
    cluster_b: int | None = None
    #: side ("a", "b") -> fingerprint text -> scores (stores only)
    fingerprints: dict[str, dict[str, int]] = field(default_factory=dict)
    #: (fingerprint of A, fingerprint of B) -> flip rate and units, over units with both
    flips_by_fingerprint: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"column_a": self.column_a, "column_b": self.column_b, "units": self.units,
                "estimates": [e.to_dict() for e in self.estimates],
                "kl": _clean(self.kl), "js": _clean(self.js),
                "statistics": [s.to_dict() for s in self.statistics],
                "winner_a": self.winner_a, "winner_b": self.winner_b,
                "cluster_a": self.cluster_a, "cluster_b": self.cluster_b,
                "fingerprints": self.fingerprints,
                "flips_by_fingerprint": self.flips_by_fingerprint}

    def estimate(self, name: str) -> Estimate | None:
        return next((e for e in self.estimates if e.statistic == name), None)


@dataclass(frozen=True)
class DiffResult(Result):
    """Two runs compared, column by column, and the conclusions that moved."""

    a: str
    b: str
    shape: str
    human: str | None
    columns: list[ColumnDiff]
    moved: list[str]
    notes: list[str] = field(default_factory=list)
    #: clusters that changed for a column whose own scores did not (its neighbours' did)
    moved_by_others: list[str] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        """A conclusion moved, or a statistic changed significantly."""
        return bool(self.moved or self.moved_by_others) or any(
            s.significant for c in self.columns for s in c.statistics)

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "table": self.shape, "human": self.human,
                "columns": [c.to_dict() for c in self.columns], "moved": self.moved,
                "moved_by_others": self.moved_by_others, "drift": self.drift,
                "notes": self.notes}


@dataclass
class _Side:
    """One run: its table (keys, score columns, human columns, fingerprint columns)."""

    path: str
    frame: pd.DataFrame
    shape: str
    columns: list[str]
    higher: dict[str, bool]


def diff(a: str | Path, b: str | Path, *, columns: Sequence[str] = (),
         column_a: str | None = None, column_b: str | None = None, human: str | None = None,
         human_table: str | Path | None = None, statistics: Sequence[str] = DEFAULT_STATISTICS,
         level: str = "segment", grouping: str = "none", tolerance: float = 0.0,
         bootstrap: int = 1000, seed: int = 0, ci: float = 0.95,
         untouched: bool = False) -> DiffResult:
    """Compare runs `a` and `b` (module docstring). `columns`: the columns to compare (default
    every column both have); `column_a`/`column_b`: one pair of differently named columns
    (e.g. two signatures in one store). `human`: a human column of A's table or of
    `human_table` (a scores table keyed as A: a store holds no human scores). `untouched`:
    a store is read leaving no -wal/-shm files beside it (`judgebench view`)."""
    side_a, side_b = _load(Path(a), untouched=untouched), _load(Path(b), untouched=untouched)
    if side_a.shape != side_b.shape:
        raise InputError(f"{side_a.path} is a {side_a.shape} table and {side_b.path} a "
                         f"{side_b.shape} one: diff compares like with like", path=side_b.path)
    pairs = _pairs(side_a, side_b, columns, column_a, column_b)
    key = list(PAIR_KEY if side_a.shape == "pairwise" else WIDE_KEY)
    labels = _human(side_a, human, human_table, key) if human else None
    notes: list[str] = []
    out: list[ColumnDiff] = []
    moved: list[str] = []
    by_others: list[str] = []
    matrices: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    human_matrix = None
    for ca, cb in pairs:
        left = side_a.frame[[*key, ca, *_fp(side_a, ca)]].rename(
            columns={ca: "A", ca + FINGERPRINT_SUFFIX: "fp_a"})
        right = side_b.frame[[*key, cb, *_fp(side_b, cb)]].rename(
            columns={cb: "B", cb + FINGERPRINT_SUFFIX: "fp_b"})
        merged = left.merge(right, on=key, how="inner")
        if labels is not None:
            merged = merged.merge(labels, on=key, how="left")
        if merged.empty:
            raise InputError(f"{ca!r} of {side_a.path} and {cb!r} of {side_b.path} share no "
                             f"{'/'.join(key)} keys", path=side_b.path)
        column = _compare(merged, key, ca, cb, side_a, side_b, human is not None,
                          tolerance=tolerance, bootstrap=bootstrap, seed=seed, ci=ci)
        if human is not None and side_a.shape == "wide":
            h, ma, mb = _matrices(merged)
            human_matrix = h
            matrices[ca] = (ma, mb)
            column = _with_statistics(column, h, ma, mb, statistics, level, grouping,
                                      bootstrap, seed, ci)
        if column.winner_a != column.winner_b:
            moved.append(f"{ca}: winner {column.winner_a} -> {column.winner_b}")
        out.append(column)
    if human_matrix is not None and len(matrices) >= 2:
        out, more, by_others = _clusters(out, human_matrix, matrices, statistics[0], level,
                                         grouping, bootstrap, seed)
        moved += more
    elif human is not None and side_a.shape == "wide" and len(matrices) < 2:
        notes.append("one column: no significance clusters to compare (they rank two or "
                     "more columns)")
    return DiffResult(a=str(a), b=str(b), shape=side_a.shape, human=human, columns=out,
                      moved=moved, notes=notes, moved_by_others=by_others)


# -- reading ------------------------------------------------------------------------------
def _load(path: Path, *, untouched: bool = False) -> _Side:
    """A scores table, or a store (by its SQLite header) as a wide table of its ok scores."""
    from judgebench.tables.destinations import SQLITE_MAGIC

    if not path.is_file():
        raise InputError("not found", path=str(path))
    with path.open("rb") as handle:
        header = handle.read(len(SQLITE_MAGIC))
    if header == SQLITE_MAGIC:
        return _from_store(path, untouched=untouched)
    from judgebench.services.compare_judges import _shape
    from judgebench.tables.pairs import read_judged

    frame, name, sidecar = read_judged(path)
    shape = _shape(frame, name)
    key = PAIR_KEY if shape == "pairwise" else WIDE_KEY
    described = (sidecar or {}).get("columns") or {}
    columns = [c for c in frame.columns
               if c not in key and not str(c).startswith("human") and c != "category"
               and not str(c).endswith((".ab", ".ba"))]
    higher = {c: bool((described.get(c) or {}).get("higher_is_better", True)) for c in columns}
    return _Side(str(path), frame, shape, columns, higher)


def _from_store(path: Path, *, untouched: bool = False) -> _Side:
    """A store's latest score (sample index 0) of each signature per (item, system), ok
    scores as values (any other status NaN), with each score's fingerprint; a column is
    named as the latest run that wrote it names it (else by its signature)."""
    import pandas as pd

    from judgebench.engine.store import Store

    with Store(path, readonly=True, untouched=untouched) as store:
        names: dict[str, str] = {}
        for (text,) in store.conn.execute("SELECT metrics FROM runs ORDER BY id"):
            for column, signature in (json.loads(text) if text else {}).items():
                names[signature] = column
        has_fp = "fingerprint" in store._columns(store.conn, "scores")
        rows = store.conn.execute(
            "SELECT signature, item, system, value, status, "
            + ("fingerprint" if has_fp else "NULL")
            + " FROM scores WHERE sample_index = 0 ORDER BY rowid").fetchall()
    signatures = list(dict.fromkeys(signature for signature, *_ in rows))
    per_name: dict[str, int] = {}
    for signature in signatures:
        per_name[names.get(signature, signature)] = per_name.get(
            names.get(signature, signature), 0) + 1
    # a column name two signatures share (a library upgrade between runs) names neither
    named = {s: names.get(s, s) if per_name[names.get(s, s)] == 1 else s for s in signatures}
    records: dict[tuple[str, str], dict[str, Any]] = {}
    for signature, item, system, value, status, fingerprint in rows:
        record = records.setdefault((item, system), {"item": item, "system": system})
        for column in dict.fromkeys((named[signature], signature)):
            record[column] = value if status == "ok" and value is not None else math.nan
            record[column + FINGERPRINT_SUFFIX] = fingerprint
    if not records:
        raise InputError("the store holds no segment scores", path=str(path))
    frame = pd.DataFrame(list(records.values()))
    columns = list(dict.fromkeys(named.values()))
    return _Side(str(path), frame, "wide", columns, dict.fromkeys(columns, True))


def _fp(side: _Side, column: str) -> list[str]:
    name = column + FINGERPRINT_SUFFIX
    return [name] if name in side.frame.columns else []


def _pairs(a: _Side, b: _Side, columns: Sequence[str], column_a: str | None,
           column_b: str | None) -> list[tuple[str, str]]:
    if (column_a is None) != (column_b is None):
        raise InputError("--column-a and --column-b go together: one pair of columns",
                         field="--column-b" if column_b is None else "--column-a")
    if column_a is not None and column_b is not None:
        for side, column, option in ((a, column_a, "--column-a"), (b, column_b, "--column-b")):
            if column not in side.frame.columns:
                raise InputError(f"no column {column!r}; columns are {side.columns}",
                                 path=side.path, field=option)
        return [(column_a, column_b)]
    shared = [c for c in a.columns if c in b.columns]
    if columns:
        for column in columns:
            if column not in shared:
                raise InputError(f"{column!r} is not a column of both (shared: {shared})",
                                 field="--metric")
        shared = list(columns)
    if not shared:
        raise InputError(f"no column in both: {a.columns} against {b.columns}; name a pair "
                         "with --column-a and --column-b", path=b.path)
    return [(c, c) for c in shared]


def _human(side: _Side, human: str, table: str | Path | None, key: list[str]
           ) -> pd.DataFrame:
    source = side.frame
    where = side.path
    if table is not None:
        from judgebench.tables.pairs import read_judged

        source, where, _ = read_judged(Path(table))
    if human not in source.columns:
        raise InputError(f"no human column {human!r}" + ("" if table is not None else
                         " (a store holds no human scores: give --human-table)"),
                         path=where, field="--human")
    missing = [k for k in key if k not in source.columns]
    if missing:
        raise InputError(f"the human table has no {missing[0]!r} column", path=where,
                         field="--human-table")
    labels = source[[*key, human]].rename(columns={human: "H"})
    return labels.drop_duplicates(subset=key)


# -- comparing ----------------------------------------------------------------------------
def _compare(merged: pd.DataFrame, key: list[str], ca: str, cb: str, a: _Side, b: _Side,
             with_human: bool, *, tolerance: float, bootstrap: int, seed: int, ci: float
             ) -> ColumnDiff:
    import numpy as np

    from judgebench.services.compare_judges import compare_judges
    from meta_eval.judge_comparison import aligned, js_divergence, kl_divergence, verdict_codes

    table = merged[[*key, "A", "B", *(["H"] if with_human else [])]]
    result = compare_judges(table, a="A", b="B", human="H" if with_human else None,
                            tolerance=tolerance, bootstrap=bootstrap, seed=seed, ci=ci)
    if a.shape == "pairwise":
        va, vb = (verdict_codes(merged[c].tolist()) for c in ("A", "B"))
    else:
        va, vb = (merged[c].to_numpy(dtype=float) for c in ("A", "B"))
    p, q = _histogram(va), _histogram(vb)
    kl = js = math.nan
    if p and q:
        x, y = aligned(p=p, q=q)
        kl, js = kl_divergence(p=x, q=y), js_divergence(p=x, q=y)
    fingerprints: dict[str, dict[str, int]] = {}
    by_fp: list[dict[str, Any]] = []
    if "fp_a" in merged.columns or "fp_b" in merged.columns:
        fa = merged.get("fp_a", np.full(len(merged), None))
        fb = merged.get("fp_b", np.full(len(merged), None))
        for side, values in (("a", fa), ("b", fb)):
            counts: dict[str, int] = {}
            for v in values:
                if isinstance(v, str):
                    counts[v] = counts.get(v, 0) + 1
            fingerprints[side] = counts
        both = np.isfinite(va) & np.isfinite(vb)
        groups: dict[tuple[Any, Any], list[int]] = {}
        for i, (x1, x2) in enumerate(zip(fa, fb, strict=True)):
            if both[i]:
                groups.setdefault((x1 if isinstance(x1, str) else None,
                                   x2 if isinstance(x2, str) else None), []).append(i)
        for (x1, x2), rows in sorted(groups.items(), key=lambda kv: (-len(kv[1]), str(kv[0]))):
            flips = np.abs(va[rows] - vb[rows]) > tolerance
            by_fp.append({"fingerprint_a": x1, "fingerprint_b": x2, "units": len(rows),
                          "flip_rate": float(flips.mean())})
    return ColumnDiff(column_a=ca, column_b=cb, units=result.units,
                      estimates=result.estimates, kl=kl, js=js,
                      winner_a=_winner(merged, "A", key, a.higher.get(ca, True), va),
                      winner_b=_winner(merged, "B", key, b.higher.get(cb, True), vb),
                      fingerprints=fingerprints, flips_by_fingerprint=by_fp)


def _histogram(values: np.ndarray) -> dict[str, float]:
    import numpy as np

    found: dict[str, float] = {}
    for v in values[np.isfinite(values)]:
        label = repr(float(v))
        found[label] = found.get(label, 0.0) + 1.0
    return found


def _winner(merged: pd.DataFrame, side: str, key: list[str], higher: bool,
            values: np.ndarray) -> str | None:
    """The system with the best mean score (wide), or the most wins (pairwise: a verdict a
    is a win of system_a, b of system_b); ties go to the first name in sorted order."""
    import numpy as np

    totals: dict[str, list[float]] = {}
    if "system" in key:
        for system, v in zip(merged["system"].astype("str"), values, strict=True):
            if np.isfinite(v):
                totals.setdefault(system, []).append(float(v) if higher else -float(v))
        means = {s: math.fsum(v) / len(v) for s, v in totals.items()}
    else:
        means = {}
        for sa, sb, v in zip(merged["system_a"].astype("str"), merged["system_b"].astype("str"),
                             values, strict=True):
            means.setdefault(sa, 0.0)
            means.setdefault(sb, 0.0)
            if np.isfinite(v) and v != 0:
                means[sa if v > 0 else sb] += 1.0
    if not means:
        return None
    best = max(means.values())
    return sorted(s for s, m in means.items() if m == best)[0]


def _matrices(merged: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human, A, B) as (items, systems) matrices, NaN where missing."""
    import numpy as np

    items = sorted(merged["item"].astype(str).unique())
    systems = sorted(merged["system"].astype("str").unique())
    ii = {v: k for k, v in enumerate(items)}
    si = {v: k for k, v in enumerate(systems)}
    out = [np.full((len(items), len(systems)), np.nan) for _ in range(3)]
    rows = [ii[str(i)] for i in merged["item"]]
    cols = [si[str(s)] for s in merged["system"]]
    for m, name in zip(out, ("H", "A", "B"), strict=True):
        m[rows, cols] = merged[name].to_numpy(dtype=float)
    return out[0], out[1], out[2]


def _with_statistics(column: ColumnDiff, h: np.ndarray, ma: np.ndarray, mb: np.ndarray,
                     statistics: Sequence[str], level: str, grouping: str, bootstrap: int,
                     seed: int, ci: float) -> ColumnDiff:
    """Each statistic under A and B, and B - A with a paired item-bootstrap CI."""
    import dataclasses

    import numpy as np

    from meta_eval import bootstrap_values, evaluate

    changes = []
    index = np.random.default_rng(seed).integers(0, h.shape[0], size=(bootstrap, h.shape[0]))
    for name in statistics:
        try:
            va = evaluate(name, human=h, metric=ma, level=level, grouping=grouping).value
            vb = evaluate(name, human=h, metric=mb, level=level, grouping=grouping).value
        except ValueError as exc:
            raise InputError(str(exc), field="--statistic") from None
        low = high = None
        if bootstrap and math.isfinite(va) and math.isfinite(vb):
            common: dict[str, Any] = {"level": level, "grouping": grouping, "index": index}
            deltas = (bootstrap_values(name, human=h, metric=mb, **common)
                      - bootstrap_values(name, human=h, metric=ma, **common))
            deltas = deltas[np.isfinite(deltas)]
            if deltas.size:
                alpha = (1 - ci) / 2
                low, high = (float(x) for x in np.quantile(deltas, [alpha, 1 - alpha]))
        significant = low is not None and high is not None and (low > 0 or high < 0)
        changes.append(StatisticChange(name, va, vb, vb - va, low, high, significant))
    return dataclasses.replace(column, statistics=changes)


def _clusters(columns: list[ColumnDiff], h: np.ndarray,
              matrices: dict[str, tuple[np.ndarray, np.ndarray]], statistic: str, level: str,
              grouping: str, resamples: int, seed: int
              ) -> tuple[list[ColumnDiff], list[str], list[str]]:
    """Each column's significance cluster among the columns under A and under B; the
    changed clusters of columns whose scores changed, and apart those of columns whose
    scores did not (moved by the others)."""
    import dataclasses

    import numpy as np

    from meta_eval import significance_clusters

    options: dict[str, Any] = {"level": level, "grouping": grouping, "seed": seed,
               "resamples": max(resamples, 1)}
    under = {side: significance_clusters(statistic, human=h,
                                         metrics={c: m[i] for c, m in matrices.items()},
                                         **options)
             for i, side in enumerate(("a", "b"))}
    out, moved, by_others = [], [], []
    for column in columns:
        ca, cb = under["a"].cluster_of(column.column_a), under["b"].cluster_of(column.column_a)
        if ca != cb:
            ma, mb = matrices[column.column_a]
            if np.array_equal(ma, mb, equal_nan=True):
                by_others.append(f"{column.column_a}: {statistic} cluster {ca} -> {cb} (its "
                                 "scores did not change: other columns' scores moved the "
                                 "clusters)")
            else:
                moved.append(f"{column.column_a}: {statistic} cluster {ca} -> {cb}")
        out.append(dataclasses.replace(column, cluster_a=ca, cluster_b=cb))
    return out, moved, by_others
