"""The compare-judges service: what `judgebench compare-judges` computes, as a function.

`compare_judges(table, a=COL, b=COL)` reads a pairwise table (item, system_a, system_b,
verdict columns) or a wide scores table (item, system, score columns), codes the two judge
columns (pairwise verdicts a/tie/b -> 1/0/-1, a probability by its side; scores as they
are), and returns a `ComparisonResult`: flip rate and Cohen's kappa between the judges, with
`human` the negative/positive flips and each judge's accuracy and kappa against people, and
with `store` the mean KL and JS divergence between the judges' per-sample score
distributions (G-Eval's `extra.probs`, or the empirical distribution of `extra.samples`).
The statistics are `meta_eval.judge_comparison`'s.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from judgebench.errors import InputError
from judgebench.results import Result
from judgebench.tables.failed import (
    MISSING,
    FailedAs,
    FailedCells,
    apply_numeric,
    parse_failed_as,
)
from judgebench.tables.pairs import judges_failed, read_judged, store_keys
from meta_eval.judge_comparison import (
    DEFAULT_EPSILON,
    Estimate,
    VerdictError,
    compare_distributions,
    compare_labels,
    is_whole,
    verdict_codes,
)
from meta_eval.pairwise import FAILED

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.arrays import FloatArray

Shape = Literal["pairwise", "wide"]
PAIR_KEY = ("item", "system_a", "system_b")
WIDE_KEY = ("item", "system")
NOT_CATEGORICAL = ("the human labels are not whole numbers within the judges' range, so not "
                   "categorical on their scale: negative/positive flips and accuracy against "
                   "people are not computed (correlate with `judgebench meta-eval` instead)")


@dataclass(frozen=True)
class ComparisonResult(Result):
    """Two judge columns compared: one `Estimate` per statistic, and what the numbers rest on."""

    path: str
    shape: Shape
    judge_a: str
    judge_b: str
    human: str | None
    tolerance: float
    estimates: list[Estimate]
    units: int
    distributions: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: pairwise table with a human column: "drop" (human ties left out) or "class"
    human_ties: str | None = None
    failed_as: FailedAs = MISSING
    #: per judge column: its failed rows, how they were counted and told
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> list[dict[str, Any]]:
        """One object per statistic (what `--json` prints)."""
        common = {"table": self.shape, "judge_a": self.judge_a, "judge_b": self.judge_b,
                  "human": self.human, "tolerance": self.tolerance,
                  "human_ties": self.human_ties, "failed_as": self.failed_as.name,
                  "failed": self.failed}
        rows = [{**common, **e.to_dict()} for e in self.estimates]
        rows += [{**common, **dataclasses.replace(e, statistic=old).to_dict(),
                  "deprecated": f"renamed {e.statistic} (see the compare-judges guide)"}
                 for e in self.estimates for old in [_old_name(e.statistic)] if old]
        for row in rows:
            if row["statistic"] in ("mean_kl", "mean_js"):
                row.update({"unit": "nats", "epsilon": self.distributions.get("epsilon")})
        return rows

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.to_dict())


def compare_judges(table: str | Path | pd.DataFrame, *, a: str, b: str, human: str | None = None,
                   store: str | Path | None = None, tolerance: float = 0.0,
                   bootstrap: int = 1000, seed: int = 0, ci: float = 0.95,
                   epsilon: float = DEFAULT_EPSILON,
                   human_ties: str | None = None, failed_as: str | FailedAs | None = None
                   ) -> ComparisonResult:
    """Compare judge columns `a` and `b` of `table` (see the module docstring). `tolerance`:
    scores that differ by at most this much agree (wide tables; verdicts agree only when
    equal). `bootstrap` item resamples (seeded) give each statistic's `ci` interval.
    `human_ties` (pairwise tables): "drop" (the default, as `meta-eval --pairwise`) leaves
    the pairs people called a tie out of the statistics against people; "class" keeps tie
    as a third label. A failed verdict counts as `failed_as` says (judgebench.tables.failed):
    pairwise missing, wrong (a value of its own: never the human label, a flip against any
    verdict, agreeing with another failure, its own class in a kappa) or tie; scores
    missing, min, max or a number."""
    import numpy as np

    from judgebench.tables.scores_table import refuse_pairwise

    _check_request(a, b, tolerance)
    frame, path, sidecar = read_judged(table, humans=[human] if human else [], store=store)
    shape = _shape(frame, path)
    if shape == "wide":
        refuse_pairwise(Path(path), sidecar=None, frame=frame)
    lines = list(frame.attrs.get("lines") or range(2, len(frame) + 2))
    columns = [(a, "--a"), (b, "--b"), *([(human, "--human")] if human else [])]
    _check_columns(frame, columns, path)
    convention = parse_failed_as(failed_as, pairwise=shape == "pairwise")
    failed = judges_failed(frame, (a, b), sidecar,
                     store if isinstance(table, str | Path) else None, shape)
    if shape == "pairwise":
        codes, counts = _pairwise_codes(frame, columns, (a, b), failed, convention,
                                        tolerance=tolerance, path=path, lines=lines)
    else:
        counts = apply_numeric(frame, failed, (a, b), convention)
        codes = {c: _numbers(frame, c, path, lines) for c, _ in columns}
    items = frame["item"].astype(str).tolist()
    notes: list[str] = []
    ties = _human_ties(human_ties, shape, human)
    h = _human_codes(codes[human], ties, notes) if human else None
    categorical = True
    if h is not None and shape == "wide":
        categorical = _categorical(h, codes[a], codes[b])
        if not categorical:
            notes.append(NOT_CATEGORICAL)
    estimates = compare_labels(judge_a=codes[a], judge_b=codes[b], items=items, human=h,
                              tolerance=tolerance, human_categorical=categorical,
                              bootstrap=bootstrap, seed=seed, ci=ci)
    if not any(e.statistic == "kappa" for e in estimates):
        notes.append("kappa between the judges needs whole-numbered scores (categories); "
                     "at least one judge has fractional scores")
    distributions: dict[str, Any] = {}
    if store is not None:
        if not isinstance(table, str | Path):
            raise InputError("--store needs the table's path: its .meta.json names the "
                             "judges' signatures", field="--store")
        distributions = _add_distributions(
            estimates, notes, Path(store), sidecar, path, a, b, store_keys(frame, shape),
            epsilon=epsilon, bootstrap=bootstrap, seed=seed, ci=ci)
    if shape == "pairwise":
        estimates = _named_accuracies(estimates, list(frame.columns), a, b)
    n_units = int(np.sum(np.isfinite(codes[a]) & np.isfinite(codes[b])))
    return ComparisonResult(path=path, shape=shape, judge_a=a, judge_b=b, human=human,
                            tolerance=tolerance, estimates=estimates, units=n_units,
                            distributions=distributions, notes=[*failed.notes, *notes],
                            failed_as=convention, failed=counts, human_ties=ties)


def _old_name(statistic: str) -> str | None:
    """A pairwise table's accuracy row's name before issue 42 (`accuracy_a`, `accuracy_b`):
    its JSON row is repeated under it for one release, marked `deprecated`."""
    for kind in ("ab", "ba", "combined"):
        for side in ("a", "b"):
            if statistic == f"accuracy-{kind}_{side}":
                return f"accuracy_{side}"
    return None


def _named_accuracies(estimates: list[Estimate], columns: Sequence[Any], a: str, b: str
                      ) -> list[Estimate]:
    """A pairwise table's `accuracy_a`/`_b` named as `meta-eval pairwise` names the same
    number: `accuracy-ab`/`accuracy-ba` for a judge's order column (`SPEC.ab`, `SPEC.ba`),
    else `accuracy-combined` (a judge's combined verdict, a tie on a decided pair wrong);
    never plain `accuracy`, which there is the mean of the two orders' accuracies."""
    present = {str(c) for c in columns}
    renamed = {}
    for side, column in (("a", a), ("b", b)):
        kind = "combined"
        for order in ("ab", "ba"):
            other = "ba" if order == "ab" else "ab"
            judge = column[:-3]
            if column.endswith(f".{order}") and (judge in present
                                                 or f"{judge}.{other}" in present):
                kind = order
        renamed[f"accuracy_{side}"] = f"accuracy-{kind}_{side}"
    return [dataclasses.replace(e, statistic=renamed.get(e.statistic, e.statistic))
            for e in estimates]


def _check_request(a: str, b: str, tolerance: float) -> None:
    """Two different judges and a usable tolerance, before anything is read."""
    if a == b:
        raise InputError("--a and --b name the same column: compare two judges", field="--b")
    if not (math.isfinite(tolerance) and tolerance >= 0):
        raise InputError(f"--tolerance must be a finite number >= 0, got {tolerance}",
                         field="--tolerance")


def _check_columns(frame: pd.DataFrame, columns: Sequence[tuple[str, str]], path: str
                   ) -> None:
    """Each (column, option that named it) is a column of the table."""
    for column, option in columns:
        if column not in frame.columns:
            raise InputError(f"no column {column!r}; columns are {list(frame.columns)}",
                             path=path, field=option)


def _pairwise_codes(frame: pd.DataFrame, columns: Sequence[tuple[str, str]],
                    judges: tuple[str, str], failed: FailedCells, convention: FailedAs, *,
                    tolerance: float, path: str, lines: list[int]
                    ) -> tuple[dict[str, FloatArray], dict[str, dict[str, Any]]]:
    """Each column's verdicts as codes, the judges' failed verdicts counted as `convention`
    says, and each judge's `failed` field."""
    import numpy as np

    if tolerance:
        raise InputError("--tolerance is for scores: pairwise verdicts agree when equal",
                         field="--tolerance")
    codes = {c: _verdicts(frame, c, path, lines) for c, _ in columns}
    for c in judges:
        mask = failed.masks.get(c)
        if mask is not None and convention.kind != "missing":
            codes[c] = np.where(mask, FAILED if convention.kind == "wrong" else 0.0, codes[c])
    counts = {c: failed.info(c, convention, COUNTED_AS[convention.kind]) for c in judges}
    return codes, counts


def _human_codes(h: FloatArray, ties: str | None, notes: list[str]) -> FloatArray:
    """The human labels; with `ties` "drop", the pairs people called a tie left out."""
    import numpy as np

    if ties != "drop":
        return h
    tied = h == 0
    notes.append(f"{int(tied.sum())} pair(s) that people called a tie are left out of the "
                 "statistics against people (--human-ties drop; class keeps them)")
    return np.where(tied, np.nan, h)


def _add_distributions(estimates: list[Any], notes: list[str], store: Path,
                       sidecar: dict[str, Any] | None, path: str, a: str, b: str,
                       keys: Any, *, epsilon: float, bootstrap: int, seed: int, ci: float
                       ) -> dict[str, Any]:
    """The judges' stored score distributions compared (added to `estimates`), or the note
    saying why they cannot be."""
    distributions, found = _distributions(store, sidecar, path, a, b, keys, epsilon)
    if found is None:
        notes.append(distributions["note"])
    else:
        p, q, units = found
        estimates += compare_distributions(p=p, q=q, items=units, epsilon=epsilon,
                                           bootstrap=bootstrap, seed=seed, ci=ci)
    return distributions


def _human_ties(human_ties: str | None, shape: Shape, human: str | None) -> str | None:
    """The tie policy in force: pairwise tables with a human column only."""
    from meta_eval.pairwise import DEFAULT_TIES

    if human_ties is not None and human_ties not in ("drop", "class"):
        raise InputError(f"{human_ties!r} is not drop or class", field="--human-ties")
    if shape == "wide" or human is None:
        if human_ties is not None:
            raise InputError("is for a pairwise table with --human (a/b/tie preferences)",
                             field="--human-ties")
        return None
    return human_ties or DEFAULT_TIES


#: How a pairwise comparison counts a failed verdict, per convention.
COUNTED_AS = {"missing": "dropped", "tie": "tie",
              "wrong": "a value of its own: wrong against people, a flip against any "
                       "verdict, agreeing with another failure, a class of its own in kappa"}


def _shape(frame: pd.DataFrame, path: str) -> Shape:
    """pairwise (keyed by item, system_a, system_b) or wide (item, system), with unique,
    non-empty keys."""
    columns = set(frame.columns)
    if set(PAIR_KEY) <= columns:
        shape: Shape = "pairwise"
        key = list(PAIR_KEY)
    elif set(WIDE_KEY) <= columns:
        shape, key = "wide", list(WIDE_KEY)
    else:
        raise InputError("neither a pairwise table (item, system_a, system_b, ...) nor a wide "
                         f"scores table (item, system, ...); columns are {list(frame.columns)}",
                         path=path, field="item")
    lines = list(frame.attrs.get("lines") or range(2, len(frame) + 2))
    for k in key:
        empty = frame[k].isna().to_numpy()
        if empty.any():
            raise InputError("empty key cell", path=path, line=lines[int(empty.argmax())],
                             field=k)
    repeated = frame.duplicated(subset=key).to_numpy()
    if repeated.any():
        row = int(repeated.argmax())
        raise InputError(f"duplicate key {tuple(key)} = "
                         f"{tuple(str(frame.iloc[row][k]) for k in key)}", path=path,
                         line=lines[row], field=key[0])
    return shape


def _verdicts(frame: pd.DataFrame, column: str, path: str, lines: Sequence[int]) -> FloatArray:
    try:
        return verdict_codes(frame[column].tolist())
    except VerdictError as exc:
        raise InputError(exc.detail, path=path, line=lines[exc.row], field=column) from None


def _numbers(frame: pd.DataFrame, column: str, path: str, lines: Sequence[int]) -> FloatArray:
    import numpy as np
    import pandas as pd

    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    text = raw.map(lambda v: isinstance(v, str) and v.strip() != "").to_numpy(dtype=bool)
    bad = (np.isnan(values) & text) | np.isinf(values) | raw.map(
        lambda v: isinstance(v, bool | np.bool_)).to_numpy(dtype=bool)
    if bad.any():
        row = int(bad.argmax())
        raise InputError(f"{raw.iloc[row]!r} is not a finite score", path=path,
                         line=lines[row], field=column)
    return values


def _categorical(human: FloatArray, a: FloatArray, b: FloatArray) -> bool:
    """Human labels are categorical on the judges' scale: whole numbers, all within the
    range the two judges' scores span."""
    import numpy as np

    judged = np.concatenate([a[np.isfinite(a)], b[np.isfinite(b)]])
    labels = human[np.isfinite(human)]
    if not (is_whole(human) and judged.size and labels.size):
        return False
    return bool(labels.min() >= judged.min() and labels.max() <= judged.max())


def _distribution(extra: Mapping[str, Any]) -> dict[str, float] | None:
    """A score's distribution: `probs` (label -> probability), else the empirical
    distribution of `samples` (G-Eval's sampling mode); None without either."""
    probs = extra.get("probs")
    if isinstance(probs, Mapping) and probs:
        return {str(k): float(v) for k, v in probs.items()}
    samples = extra.get("samples")
    if isinstance(samples, list) and samples:
        counts: dict[str, float] = {}
        for s in samples:
            label = str(int(s)) if float(s).is_integer() else repr(float(s))
            counts[label] = counts.get(label, 0.0) + 1.0
        return counts
    return None


def _distributions(store: Path, sidecar: dict[str, Any] | None, path: str, a: str, b: str,
                   keys: Sequence[tuple[str, str]], epsilon: float
                   ) -> tuple[dict[str, Any], tuple[list[dict[str, float]],
                                                    list[dict[str, float]], list[str]] | None]:
    """The two judges' distributions matched by (item, system, sample index, sample content
    hash), for the table's rows, from the store (opened read-only)."""
    from judgebench.engine.store import Store

    signatures = {}
    for column, option in ((a, "--a"), (b, "--b")):
        described = ((sidecar or {}).get("columns") or {}).get(column) or {}
        if not described.get("signature"):
            raise InputError(f"--store needs the signature of {column!r} from the table's "
                             ".meta.json (written by `judgebench score -o`)",
                             path=f"{path}.meta.json", field=option)
        signatures[column] = described["signature"]
    wanted = dict.fromkeys(keys)
    with Store(store, readonly=True) as db:
        try:
            rows = db.conn.execute(
                "SELECT x.item, x.system, x.sample_index, x.sample_hash, x.extra, y.extra"
                " FROM scores x JOIN scores y ON x.item = y.item AND x.system = y.system"
                " AND x.sample_index = y.sample_index AND x.sample_hash = y.sample_hash"
                " WHERE x.signature = ? AND y.signature = ? AND x.status = 'ok'"
                " AND y.status = 'ok' ORDER BY x.rowid",
                (signatures[a], signatures[b])).fetchall()
        except sqlite3.Error as exc:
            raise InputError(f"cannot read the store: {exc}", path=str(store)) from None
    by_unit: dict[tuple[str, str, int], list[tuple[str, str | None, str | None]]] = {}
    for item, system, index, digest, extra_a, extra_b in rows:
        if (item, system) in wanted:
            by_unit.setdefault((item, system, index), []).append((digest, extra_a, extra_b))
    p, q, units = [], [], []
    ambiguous = without = 0
    for (item, _, _), found in by_unit.items():
        if len(found) > 1:  # two sample contents under one id: which is the table's?
            ambiguous += 1
            continue
        _, extra_a, extra_b = found[0]
        da = _distribution(json.loads(extra_a) if extra_a else {})
        db_ = _distribution(json.loads(extra_b) if extra_b else {})
        if da is None or db_ is None:
            without += 1
            continue
        p.append(da)
        q.append(db_)
        units.append(item)
    info = {"matched": len(units), "ambiguous": ambiguous, "without_distribution": without,
            "epsilon": epsilon, "signature_a": signatures[a], "signature_b": signatures[b]}
    if not units:
        info["note"] = (f"the store holds no matched score distributions of the two judges "
                        f"for this table's rows ({without} matched scores without one, "
                        f"{ambiguous} ambiguous): KL and JS are not computed")
        return info, None
    return info, (p, q, units)
