"""A judge against itself, from the draws of `score --repeats K`: meta-eval's and the audit's
`repeats` section.

The table's cell of a repeated judge is the mean of its draws; the draws are in the store the
sidecar names (``"store"``, with ``"repeats": K`` per column), under the column's signature,
draw r at sample index r. Per judge column: test-retest reliability (ICC(1) and its
Spearman-Brown mean, Krippendorff's alpha over draws), per-item spread, the share of items
whose verdict flips between draws, pass@k and pass^k when every draw is 0 or 1, and per human
column the noise ceiling (agreement with people against agreement with itself); the formulas
are `meta_eval.repeats`'. When every unit has all K draws, ICC(1) and ICC(1,k) also carry
their F-test and interval (`meta_eval.icc`, the one-way design: draws are exchangeable).
The units are the table's rows (item, system), in its order; a row whose sample the store
holds under several contents (another run's output for the same ids) reads the draws of
the content whose first draw was written last.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from judgebench.errors import InputError
from meta_eval.numerics import finite_or_none

if TYPE_CHECKING:
    import pandas as pd

    from meta_eval.icc import Icc
    from meta_eval.repeats import NoiseCeiling, Reliability


@dataclass(frozen=True)
class RepeatsRow:
    """One judge column's draws: its reliability, pass@k/pass^k (binary) and, per human
    column, its noise ceiling."""

    metric: str
    repeats: int
    reliability: Reliability
    #: k -> pass@k and pass^k, for k in 1..K (binary draws only; empty otherwise)
    pass_at: dict[int, float] = field(default_factory=dict)
    pass_hat: dict[int, float] = field(default_factory=dict)
    noise: dict[str, NoiseCeiling] = field(default_factory=dict)
    #: ICC1 and ICC1k with their F-tests and intervals (`meta_eval.icc`), when every
    #: counted unit has all its draws (None otherwise: no interval for unbalanced draws)
    icc_tests: dict[str, Icc] | None = None

    @property
    def flip_share(self) -> float:
        return self.reliability.flip_share

    def to_dict(self) -> dict[str, Any]:
        r = self.reliability
        out: dict[str, Any] = {
            "metric": self.metric, "statistic": "repeats", "value": finite_or_none(r.icc),
            "n": r.units, "repeats": self.repeats, "draws": finite_or_none(r.draws),
            "icc": finite_or_none(r.icc), "icc_mean": finite_or_none(r.icc_mean),
            "alpha": finite_or_none(r.alpha), "spread": finite_or_none(r.spread),
            "flip_share": finite_or_none(r.flip_share)}
        if self.icc_tests is not None:
            out["icc_inference"] = {form: t.to_dict() for form, t in self.icc_tests.items()}
            out["icc_design"] = "one-way random (draws of one judge are exchangeable)"
        return {**out, **pass_and_noise_dict(self.pass_at, self.pass_hat, self.noise)}


def pass_and_noise_dict(pass_at: dict[int, float], pass_hat: dict[int, float],
                        noise: dict[str, Any]) -> dict[str, Any]:
    """pass@k, pass^k and the noise ceiling against each human column, as JSON (nothing
    where there is none)."""
    out: dict[str, Any] = {}
    if pass_at:
        out["pass_at_k"] = {str(k): finite_or_none(v) for k, v in pass_at.items()}
        out["pass_hat_k"] = {str(k): finite_or_none(v) for k, v in pass_hat.items()}
    if noise:
        out["noise_ceiling"] = {
            human: {"agreement": finite_or_none(n.agreement),
                    "ceiling": finite_or_none(n.ceiling),
                    "disattenuated": finite_or_none(n.disattenuated),
                    "noise_share": finite_or_none(n.noise_share)}
            for human, n in noise.items()}
    return out




def repeated_columns(sidecar: dict[str, Any] | None, columns: Sequence[str]) -> dict[str, int]:
    """Column -> K of the `columns` the sidecar says were drawn K > 1 times."""
    described = (sidecar or {}).get("columns")
    if not isinstance(described, dict):
        return {}
    found = {}
    for column in columns:
        info = described.get(column)
        k = info.get("repeats") if isinstance(info, dict) else None
        if isinstance(k, int) and k > 1:
            found[column] = k
    return found


def draw_matrix(store: Path, signature: str, frame: pd.DataFrame, repeats: int
                ) -> np.ndarray:
    """The (rows, K) draws of `signature` for the rows of `frame` (NaN: no scored draw)."""
    if not store.is_file():
        raise InputError("the store that holds the draws of --repeats is not there (the "
                         "sidecar names it)", path=str(store))
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT item, system, sample_hash, sample_index, value, status, created_at"
            " FROM scores WHERE signature = ? AND sample_index < ?",
            (signature, repeats)).fetchall()
    latest: dict[tuple[str, str], tuple[float, str]] = {}
    for item, system, digest, index, _value, _status, created in rows:
        if index == 0 and created >= latest.get((item, system), (-math.inf, ""))[0]:
            latest[(item, system)] = (created, digest)
    values: dict[tuple[str, str, int], float] = {}
    for item, system, digest, index, value, status, _created in rows:
        chosen = latest.get((item, system))
        if chosen is not None and chosen[1] == digest and status == "ok" and value is not None:
            values[(item, system, index)] = float(value)
    keys = list(zip(frame["item"].astype("str"), frame["system"].astype("str"), strict=True))
    return np.array([[values.get((item, system, r), math.nan) for r in range(repeats)]
                     for item, system in keys], dtype=float).reshape(len(keys), repeats)


def repeats_row(column: str, draws: np.ndarray, humans: dict[str, np.ndarray]) -> RepeatsRow:
    """`column`'s draws against themselves and against each human column (`humans`)."""
    from meta_eval.repeats import noise_ceiling, pass_at_k, pass_hat_k, reliability

    k = draws.shape[1]
    scored = draws[np.isfinite(draws)]
    binary = scored.size > 0 and bool(np.isin(scored, (0.0, 1.0)).all())
    pass_at = {j: pass_at_k(draws, j) for j in range(1, k + 1)} if binary else {}
    pass_hat = {j: pass_hat_k(draws, j) for j in range(1, k + 1)} if binary else {}
    noise = {}
    for human, values in humans.items():
        keep = np.isfinite(values)
        if keep.sum() >= 2:
            noise[human] = noise_ceiling(draws[keep], values[keep])
    return RepeatsRow(column, k, reliability(draws), pass_at, pass_hat, noise,
                      _icc_tests(draws))


def _icc_tests(draws: np.ndarray) -> dict[str, Icc] | None:
    from meta_eval.icc import DESIGNS, icc_forms

    counted = draws[np.isfinite(draws).sum(axis=1) >= 2]
    if counted.shape[0] < 2 or not np.isfinite(counted).all():
        return None
    forms = icc_forms(ratings=counted)
    return {form: forms[form] for form in DESIGNS["one-way"]}


def store_of(sidecar: dict[str, Any] | None, where: str) -> str:
    """The store the sidecar names as holding the draws; an InputError when it names none."""
    store = (sidecar or {}).get("store")
    if not isinstance(store, str) or store == ":memory:":
        raise InputError("the sidecar says columns were drawn with --repeats but names no "
                         "store holding the draws (they were kept in memory: score with a "
                         "store, store=PATH in Python, to read them)", path=where,
                         field="store")
    return store


def repeats_rows(sidecar: dict[str, Any] | None, frame: pd.DataFrame, columns: Sequence[str],
                 humans: Sequence[str], where: str,
                 human_values: dict[str, np.ndarray] | None = None) -> list[RepeatsRow]:
    """The `repeats` section of the repeated columns among `columns` (none without
    --repeats): their draws read from the store the sidecar names. `frame` has `item` and
    `system` (a pairwise table's "A vs B"); people's values are `human_values`, else the
    `humans` columns of `frame` as numbers. A pairwise judge's draws are its stored values:
    P(A better), 1 a, 0 b, 0.5 a tie."""
    import pandas as pd

    repeated = repeated_columns(sidecar, columns)
    if not repeated:
        return []
    store = store_of(sidecar, where)
    if human_values is None:
        human_values = {h: pd.to_numeric(frame[h], errors="coerce").to_numpy(dtype=float)
                        for h in humans if h in frame.columns}
    rows = []
    for column, k in repeated.items():
        signature = sidecar["columns"][column].get("signature")  # type: ignore[index]
        if not isinstance(signature, str):
            raise InputError("a repeated column without its signature in the sidecar",
                             path=where, field=column)
        draws = draw_matrix(Path(store), signature, frame, k)
        rows.append(repeats_row(column, draws, human_values))
    return rows
