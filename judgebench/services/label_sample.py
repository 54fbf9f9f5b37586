"""Which items to label: `label_sample` draws the rows of a scores table (item, system) or a
pairwise table (item, system_a, system_b; a pair's system is "A vs B", as the store names it)
for an annotator, by one of the seeded designs of `meta_eval.sampling`, and says each drawn
row's inclusion probability, so that the estimates made from the labels stay unbiased.

Strategies:
- random: simple random sampling of the rows;
- stratified: strata are the system (`by_system`) crossed with `bins` quantile bins of the
  `judge` column (ties merge bins; a row without a judge score is a stratum of its own),
  proportional or equal allocation with at least `minimum` rows per stratum;
- disagreement: rows drawn more often where
  * `judges` (two or more columns) disagree: each column turned higher-is-better and scaled
    to [0, 1] by its smallest and largest value in the table;
  * a judge's `score --repeats K` draws disagree: the draws read from the store the sidecar
    names (or `store`), scaled to [0, 1] together;
  * a pairwise judge's two orders disagree: `<judge>.ab` against `<judge>.ba`;
  the row's disagreement is the standard deviation of those values (`meta_eval.sampling.spread`);
- active: with binary verdicts (every judge score 0 or 1), the split between judged-negative
  and judged-positive rows that minimises the variance of the corrected pass rate, from the
  judge's specificity and sensitivity on the `labels` given (a prior of `specificity` and
  `sensitivity`, default 0.9 each, counting as 2 labels each) or the prior alone; otherwise
  Zrnic and Candes' active inference: the priority sqrt(E[(Y - lam f - r_bar)^2 | f]) of the
  centred estimator (`estimation.hajek_ppi_mean`) estimated from `labels` (at least 2 rows,
  lam from PPI++ on them) by `estimation.active_label_priority(centre=True)`, or, with
  `uncertainty`, the root of the judge's own uncertainty per row, no label needed:
  * probability: the judge column is a probability p of a pass, uncertainty p (1 - p);
  * repeats: the variance (divisor K - 1) of the row's `score --repeats K` draws, read from
    the store (a row with fewer than 2 scored draws gets the mean of the others);
  * distribution: the variance of the judge's score distribution the store keeps with each
    score (G-Eval: `extra.probs` in logprobs mode, `extra.samples` in sampling mode).

`exclude`: the (item, system) rows the annotator has labelled, never drawn; every probability
is conditional on them (meta_eval.sampling). Bad input raises InputError naming the file and
the column (or option).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench._version import __version__
from judgebench.errors import InputError
from judgebench.results import Result

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from meta_eval.sampling import Draw

Log = Callable[[str], None]
STRATEGIES = ("random", "stratified", "disagreement", "active")
SOURCES = ("judges", "repeats", "orders")
UNCERTAINTIES = ("probability", "repeats", "distribution")
PRIOR_LABELS = 2  # how many labels the prior specificity and sensitivity count as
DEFAULT_SHARE = 0.2  # the uniform share (active_sample's own default where it has one)


@dataclass(frozen=True)
class SampledRow:
    """One drawn row: its keys, its inclusion probability, its place in the labelling order
    (0 first) and, for a stratified design, its stratum."""

    item: str
    system: str
    inclusion_probability: float
    position: int
    stratum: str | None = None


@dataclass(frozen=True)
class LabelSample(Result):
    """The rows to label, in labelling order, and how they were drawn (`signature`)."""

    rows: list[SampledRow]
    strategy: str
    seed: int
    parameters: dict[str, Any]
    signature: str
    #: the table read, or "<DataFrame>"
    source: str
    #: the table's rows, and those left after `exclude`
    candidates: int
    eligible: int
    draw: Draw
    #: what the design found: each stratum's n_h / N_h, the rows taken with certainty, ...
    details: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "seed": self.seed, "signature": self.signature,
                "source": self.source, "candidates": self.candidates,
                "eligible": self.eligible, "parameters": self.parameters,
                "details": self.details, "notes": self.notes,
                "rows": [{"item": r.item, "system": r.system,
                          "inclusion_probability": r.inclusion_probability,
                          "position": r.position, "stratum": r.stratum} for r in self.rows]}

    def to_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([{"item": r.item, "system": r.system,
                              "inclusion_probability": r.inclusion_probability,
                              "position": r.position, "stratum": r.stratum}
                             for r in self.rows],
                            columns=["item", "system", "inclusion_probability", "position",
                                     "stratum"])


@dataclass
class _Table:
    """The rows as the store keys them and the numbers of the columns asked for."""

    frame: pd.DataFrame
    where: str
    sidecar: dict[str, Any] | None
    pairwise: bool
    keys: list[tuple[str, str]]
    #: column -> values as written (P(A better) for a pairwise verdict), NaN where missing
    raw: dict[str, np.ndarray] = field(default_factory=dict)
    #: column -> values turned higher-is-better (the same for a pairwise verdict)
    oriented: dict[str, np.ndarray] = field(default_factory=dict)

    def error(self, message: str, column: str | None = None, row: int | None = None
              ) -> InputError:
        from judgebench.tables.columns import _where

        at = _where(self.frame, self.where, row) if row is not None else {}
        return InputError(message, path=self.where, field=column, **at)


def label_sample(scores: str | Path | pd.DataFrame, *, strategy: str, n: int, seed: int = 0,
                 judge: str | None = None, judges: Sequence[str] = (), bins: int = 4,
                 by_system: bool = True, allocation: str = "proportional", minimum: int = 2,
                 disagreement: str | None = None,
                 labels: Mapping[tuple[str, str], float] | None = None,
                 specificity: float | None = None, sensitivity: float | None = None,
                 uniform_share: float | None = None,
                 exclude: Iterable[tuple[str, str]] = (),
                 store: str | Path | None = None, uncertainty: str | None = None,
                 log: Log | None = None) -> LabelSample:
    """Draw `n` rows of `scores` to label by `strategy` (the module says how each works).

    `judge`: the judge column (stratified: the column binned; disagreement: the judge whose
    repeats or orders disagree; active: the judge whose errors the labels measure).
    `judges`: the columns whose disagreement draws (disagreement). `disagreement`: judges,
    repeats or orders (default: judges when two or more are named, else orders when the table
    has `<judge>.ab`/`.ba`, else repeats). `labels`: (item, system) -> a human label (active).
    `uncertainty`: probability, repeats or distribution (active: the judge's own uncertainty
    instead of labels). `uniform_share`: the share of a disagreement or active draw's
    probability spread uniformly (default 0.2; 0.5 for an active draw by the judge's
    uncertainty, `meta_eval.sampling.active_sample` says why). `exclude`: (item, system) rows
    never drawn. Returns the rows in labelling order."""
    log = log or (lambda _message: None)
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}: choose one of "
                         f"{', '.join(STRATEGIES)}", field="--strategy")
    if uncertainty is not None and (strategy != "active" or uncertainty not in UNCERTAINTIES):
        raise InputError(f"the judge's uncertainty ({', '.join(UNCERTAINTIES)}) is what an "
                         f"active draw may follow instead of labels; got {uncertainty!r} with "
                         f"strategy {strategy!r}", field="--uncertainty")
    columns = _columns(strategy, judge, judges, disagreement)
    table = _read(scores, columns)
    notes: list[str] = []
    excluded = _positions(table, exclude, notes)
    from meta_eval.sampling import SamplingError

    settings: dict[str, Any] = {}
    try:
        draw, strata = _drawn(table, strategy, n=n, seed=seed, judge=judge, judges=judges,
                              bins=bins, by_system=by_system, allocation=allocation,
                              minimum=minimum, disagreement=disagreement, labels=labels,
                              specificity=specificity, sensitivity=sensitivity,
                              uniform_share=uniform_share, exclude=excluded, store=store,
                              uncertainty=uncertainty, settings=settings, notes=notes)
    except SamplingError as error:
        text = str(error)
        about_n = text.startswith("cannot draw") or "number of items" in text
        raise InputError(text, path=table.where,
                         field="--sample" if about_n or judge is None else judge) from None
    for note in notes:
        log(note)
    rows = [SampledRow(table.keys[k][0], table.keys[k][1], p, order,
                       None if strata is None else strata[k])
            for order, (k, p) in enumerate(zip(draw.positions, draw.probabilities,
                                               strict=True))]
    parameters = {**draw.parameters, **settings}
    signature = "|".join([draw.signature, *(f"{k}:{v}" for k, v in settings.items()),
                          f"judgebench:{__version__}"])
    return LabelSample(rows, draw.strategy, int(seed), parameters, signature, table.where,
                       draw.candidates, draw.eligible, draw, dict(draw.details), notes)


def _columns(strategy: str, judge: str | None, judges: Sequence[str],
             disagreement: str | None) -> list[str]:
    """The columns the strategy reads, checked against what it needs."""
    if disagreement is not None and disagreement not in SOURCES:
        raise InputError(f"unknown disagreement {disagreement!r}: choose one of "
                         f"{', '.join(SOURCES)}", field="--disagreement")
    if strategy == "active" and judge is None:
        raise InputError("active sampling needs the judge column whose errors the labels "
                         "measure", field="--judge")
    if strategy == "disagreement":
        source = disagreement or ("judges" if len(judges) >= 2 else None)
        if source == "judges" and len(set(judges)) < 2:
            raise InputError("disagreement between judges needs two or more judge columns "
                             f"(got {list(judges)})", field="--judges")
        if source in ("repeats", "orders") and judge is None:
            raise InputError(f"disagreement between a judge's {source} needs the judge "
                             "column", field="--judge")
        if source is None and judge is None:
            raise InputError("disagreement needs two or more judge columns, or a judge whose "
                             "repeats (score --repeats) or two orders (a pairwise judge) "
                             "disagree", field="--judges")
        if source == "judges":
            return list(dict.fromkeys(judges))
        return []  # the judge's repeats or orders: read with the table
    return [judge] if judge is not None and strategy in ("stratified", "active") else []


def _read(scores: str | Path | pd.DataFrame, columns: list[str]) -> _Table:
    """The rows (keys as the store names them, duplicates refused) and the `columns`' values:
    a scores table through `PreparedTable.read` (failed cells missing, lower-is-better
    columns negated in `oriented`), a pairwise one as compare-judges reads it (failed
    verdicts missing; verdicts as P(A better))."""
    import numpy as np

    from judgebench.tables.pairs import judges_failed, read_judged, store_keys

    frame, where, sidecar = read_judged(scores)
    pairwise = "system" not in frame.columns and {"system_a", "system_b"} <= set(frame.columns)
    if not pairwise:
        for key in ("item", "system"):
            if key not in frame.columns:
                raise InputError(f"a scores table needs columns item and system; columns are "
                                 f"{list(frame.columns)}", path=where, field=key)
    table = _Table(frame, where, sidecar, pairwise, [])
    if pairwise:
        from judgebench.services.pairwise import labels as verdicts

        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise table.error(f"no column {missing[0]!r}; columns are {list(frame.columns)}",
                              missing[0])
        failed = judges_failed(frame, columns, sidecar, None, "pairwise")
        for column in columns:
            values = verdicts(frame, column, where)
            mask = failed.masks.get(column)
            if mask is not None:
                values = np.where(mask, np.nan, values)
            table.raw[column] = table.oriented[column] = values
        table.keys = store_keys(frame, "pairwise")
    else:
        if columns:
            from judgebench.tables.prepared import PreparedTable

            prepared = PreparedTable.read(scores, [], columns)
            table.frame, table.where = prepared.frame, prepared.where
            oriented = prepared.oriented_frame(columns)
            for column in columns:
                table.raw[column] = prepared.frame[column].to_numpy(dtype=float)
                table.oriented[column] = oriented[column].to_numpy(dtype=float)
        table.keys = store_keys(table.frame, "wide")
    seen: dict[tuple[str, str], int] = {}
    for k, row in enumerate(table.keys):
        if seen.setdefault(row, k) != k:
            raise table.error(f"row {row} appears twice: a row to label must be one item of "
                              "one system (or pair)", "item", k)
    return table


def _positions(table: _Table, exclude: Iterable[tuple[str, str]], notes: list[str]
               ) -> list[int]:
    index = {key: k for k, key in enumerate(table.keys)}
    found, unknown = [], 0
    for item, system in exclude:
        k = index.get((str(item), str(system)))
        if k is None:
            unknown += 1
        else:
            found.append(k)
    if unknown:
        notes.append(f"{unknown} excluded row(s) are not in the table (left aside)")
    return found


def _drawn(table: _Table, strategy: str, *, n: int, seed: int, judge: str | None,
           judges: Sequence[str], bins: int, by_system: bool, allocation: str, minimum: int,
           disagreement: str | None, labels: Mapping[tuple[str, str], float] | None,
           specificity: float | None, sensitivity: float | None,
           uniform_share: float | None,
           exclude: list[int], store: str | Path | None, uncertainty: str | None,
           settings: dict[str, Any], notes: list[str]) -> tuple[Draw, list[str] | None]:
    """The draw and, for a stratified design, each row's stratum name."""
    from meta_eval import sampling

    if strategy == "random":
        return sampling.random_sample(candidates=len(table.keys), n=n, seed=seed,
                                      exclude=exclude), None
    if strategy == "stratified":
        strata = _strata(table, judge, bins, by_system, settings, notes)
        return sampling.stratified_sample(strata=strata, n=n, seed=seed, allocation=allocation,
                                          minimum=minimum, exclude=exclude), strata
    if strategy == "disagreement":
        d = _disagreement(table, judge, judges, disagreement, store, settings)
        return sampling.disagreement_sample(disagreement=d, n=n, seed=seed,
                                            uniform_share=DEFAULT_SHARE if uniform_share
                                            is None else uniform_share,
                                            exclude=exclude), None
    assert judge is not None
    return _active(table, judge, n=n, seed=seed, labels=labels, specificity=specificity,
                   sensitivity=sensitivity, uniform_share=uniform_share, minimum=minimum,
                   exclude=exclude, store=store, uncertainty=uncertainty, settings=settings,
                   notes=notes)


def _strata(table: _Table, judge: str | None, bins: int, by_system: bool,
            settings: dict[str, Any], notes: list[str]) -> list[str]:
    """Each row's stratum: its system (or pair) and its quantile bin of the judge column."""
    import numpy as np

    if not by_system and judge is None:
        raise InputError("stratified sampling needs strata: by system, a judge column to "
                         "bin, or both", field="--judge")
    parts: list[list[str]] = [[] for _ in table.keys]
    if by_system:
        for row, (_item, system) in zip(parts, table.keys, strict=True):
            row.append(f"system={system}")
        settings["by"] = "system"
    if judge is not None:
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
            raise InputError(f"bins must be a positive integer, got {bins!r}", field="--bins")
        values = table.raw[judge]
        finite = values[np.isfinite(values)]
        edges = (np.unique(np.quantile(finite, np.linspace(0, 1, bins + 1)[1:-1]))
                 if finite.size else np.array([]))
        count = edges.size + 1
        if finite.size and count < bins:
            notes.append(f"{judge}: ties leave {count} distinct bin(s) of the {bins} asked")
        where = np.searchsorted(edges, values, side="right")
        for row, value, b in zip(parts, values, where, strict=True):
            row.append(f"{judge} bin {b + 1} of {count}" if math.isfinite(value)
                       else f"{judge} missing")
        settings |= {"judge": judge, "bins": count}
    return [" | ".join(p) for p in parts]


def _scaled(values: np.ndarray) -> np.ndarray:
    """Values mapped to [0, 1] by their smallest and largest finite value (0 if constant)."""
    import numpy as np

    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return values
    low, high = float(finite.min()), float(finite.max())
    if high == low:
        return np.where(np.isfinite(values), 0.0, np.nan)
    return (values - low) / (high - low)


def _disagreement(table: _Table, judge: str | None, judges: Sequence[str],
                  source: str | None, store: str | Path | None, settings: dict[str, Any]
                  ) -> np.ndarray:
    import numpy as np

    from meta_eval.sampling import spread

    if source is None:
        source = "judges" if len(judges) >= 2 else (
            "orders" if judge is not None and table.pairwise
            and {f"{judge}.ab", f"{judge}.ba"} <= set(table.frame.columns) else "repeats")
    settings["disagreement"] = source
    if source == "judges":
        columns = list(dict.fromkeys(judges))
        settings["judges"] = ",".join(columns)
        return spread(values=np.column_stack([_scaled(table.oriented[c]) for c in columns]))
    assert judge is not None
    settings["judge"] = judge
    if source == "orders":
        return spread(values=np.column_stack(_orders(table, judge)))
    return spread(values=_scaled(_draws(table, judge, store)))


def _orders(table: _Table, judge: str) -> list[np.ndarray]:
    """A pairwise judge's verdicts with A shown first and with B shown first, as P(A better);
    a failed order is missing."""
    import numpy as np

    from judgebench.services.pairwise import labels as verdicts
    from judgebench.tables.pairs import judges_failed

    if not table.pairwise:
        raise table.error("the two orders of a judge are columns of a pairwise table "
                          "(<judge>.ab, <judge>.ba); this is a scores table", judge)
    orders = [f"{judge}.ab", f"{judge}.ba"]
    for column in orders:
        if column not in table.frame.columns:
            raise table.error(f"no column {column!r}: the judge's two orders are "
                              f"{orders[0]!r} and {orders[1]!r}", column)
    failed = judges_failed(table.frame, orders, table.sidecar, None, "pairwise")
    out = []
    for column in orders:
        values = verdicts(table.frame, column, table.where)
        mask = failed.masks.get(column)
        out.append(values if mask is None else np.where(mask, np.nan, values))
    return out


def _draws(table: _Table, judge: str, store: str | Path | None) -> np.ndarray:
    """The (rows, K) draws of a judge scored with `score --repeats K`, from the store."""
    import pandas as pd

    from judgebench.services.repeats import draw_matrix, repeated_columns

    repeats = repeated_columns(table.sidecar, [judge]).get(judge)
    if repeats is None:
        raise table.error(
            f"{judge!r} was not scored with --repeats (its sidecar says no repeats), and "
            "the table has no two orders of it: disagreement needs two or more judges, "
            "repeats or orders", judge)
    path, signature = _stored(table, judge, store, "the draws of --repeats")
    keyed = pd.DataFrame(table.keys, columns=["item", "system"])
    return draw_matrix(path, signature, keyed, repeats)


def _stored(table: _Table, judge: str, store: str | Path | None, what: str
            ) -> tuple[Path, str]:
    """The store that holds `judge`'s scores (`store`, or the one the sidecar names) and the
    judge's signature there."""
    named = (table.sidecar or {}).get("store")
    path = store if store is not None else named
    if path is None or path == ":memory:":
        raise table.error(f"{what} are in a store, and the sidecar names none: pass the store",
                          "store")
    column = ((table.sidecar or {}).get("columns") or {}).get(judge) or {}
    signature = column.get("signature")
    if not isinstance(signature, str):
        raise table.error(f"{what} are read from the store by the judge's signature, and the "
                          "sidecar has none for this column", judge)
    return Path(path), signature


def _active(table: _Table, judge: str, *, n: int, seed: int,
            labels: Mapping[tuple[str, str], float] | None, specificity: float | None,
            sensitivity: float | None, uniform_share: float | None, minimum: int,
            exclude: list[int], store: str | Path | None, uncertainty: str | None,
            settings: dict[str, Any], notes: list[str]) -> tuple[Draw, list[str] | None]:
    import numpy as np

    from meta_eval import sampling

    f = table.oriented[judge]
    excluded = np.zeros(f.size, dtype=bool)
    excluded[exclude] = True
    missing = np.flatnonzero(~np.isfinite(f) & ~excluded)
    if missing.size:
        raise table.error("the judge has no score on this row: active sampling needs the "
                          "judge's score on every row it may draw (score it, or exclude it)",
                          judge, int(missing[0]))
    y = _labels(table, labels, notes)
    settings["judge"] = judge
    scored = np.flatnonzero(np.isfinite(f))  # the rows without a score are all excluded
    inside = np.full(f.size, -1)
    inside[scored] = np.arange(scored.size)
    keep_out = [int(inside[k]) for k in exclude if inside[k] >= 0]
    fs, ys = f[scored], y[scored]
    labelled = np.isfinite(ys)
    if uncertainty is not None:
        u = _uncertainty(table, judge, uncertainty, store, notes)[scored]
        settings["uncertainty"] = uncertainty
        if labelled.any():
            notes.append(f"the {int(labelled.sum())} labels given are not used: the draw "
                         "follows the judge's uncertainty")
        draw = sampling.active_sample(uncertainty=u, n=n, seed=seed,
                                      uniform_share=uniform_share, exclude=keep_out)
        strata = None
    elif np.isin(fs, (0.0, 1.0)).all() and np.isin(ys[labelled], (0.0, 1.0)).all():
        q0, q1 = _rates(fs, ys, labelled, specificity, sensitivity, settings)
        draw = sampling.active_binary_sample(verdicts=fs, n=n, seed=seed, specificity=q0,
                                             sensitivity=q1,
                                             uniform_share=DEFAULT_SHARE if uniform_share
                                             is None else uniform_share,
                                             minimum=minimum, exclude=keep_out)
        strata = [f"{judge} judged {v:g}" for v in f]
    else:
        priority = _priority(fs, ys, labelled, judge, table, settings)
        draw = sampling.active_sample(priority=priority, n=n, seed=seed,
                                      uniform_share=uniform_share, exclude=keep_out)
        strata = None
    return replace(draw, positions=tuple(int(scored[k]) for k in draw.positions),
                   candidates=f.size, eligible=f.size - len(set(exclude))), strata


def _uncertainty(table: _Table, judge: str, source: str, store: str | Path | None,
                 notes: list[str]) -> np.ndarray:
    """The judge's own uncertainty per row (the module says each source); NaN on a row the
    judge did not score (never drawn: `_active` refuses those unless excluded)."""
    import numpy as np

    raw = table.raw[judge]
    if source == "probability":
        outside = np.flatnonzero(np.isfinite(raw) & ((raw < 0) | (raw > 1)))
        if outside.size:
            k = int(outside[0])
            raise table.error(f"{float(raw[k])} is not a probability: the uncertainty "
                              "p (1 - p) needs the judge's probability of a pass in [0, 1]",
                              judge, k)
        return raw * (1.0 - raw)
    if source == "repeats":
        from judgebench.services.repeats import repeated_columns

        if repeated_columns(table.sidecar, [judge]).get(judge) is None:
            raise table.error(f"{judge!r} was not scored with --repeats (its sidecar says no "
                              "repeats): the variance of its draws is unknown; use another "
                              "uncertainty, or labels", judge)
        draws = _draws(table, judge, store)
        counts = np.isfinite(draws).sum(axis=1)
        enough = counts >= 2
        if not enough.any():
            raise table.error("no row has 2 scored draws of --repeats: their variance is "
                              "unknown", judge)
        variance = np.full(draws.shape[0], np.nan)
        variance[enough] = np.nanvar(draws[enough], axis=1, ddof=1)
        short = np.isfinite(raw) & ~enough
        if short.any():
            variance[short] = float(variance[enough].mean())
            notes.append(f"{int(short.sum())} row(s) with fewer than 2 scored draws take the "
                         "mean variance of the others")
        return variance
    return _distribution_variance(table, judge, store)


def _distribution_variance(table: _Table, judge: str, store: str | Path | None
                           ) -> np.ndarray:
    """Per row, the variance of the score distribution the store keeps in the judge's
    `extra`: `probs` (score -> probability, normalised) or `samples` (the sampled scores;
    the variance of their empirical distribution, divisor n). The row's latest stored score
    of the signature, first draw."""
    import json
    import sqlite3

    import numpy as np

    path, signature = _stored(table, judge, store, "the judge's score distributions")
    if not path.is_file():
        raise InputError("the store that holds the judge's score distributions is not there "
                         "(the sidecar names it)", path=str(path))
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT item, system, extra, created_at FROM scores WHERE signature = ? AND "
            "sample_index = 0 AND status = 'ok' ORDER BY created_at", (signature,)).fetchall()
    latest = {(str(item), str(system)): extra for item, system, extra, _created in rows}
    out = np.full(len(table.keys), np.nan)
    raw = table.raw[judge]
    for k, key in enumerate(table.keys):
        if not math.isfinite(raw[k]):
            continue
        try:
            extra = json.loads(latest.get(key) or "{}")
        except ValueError:
            raise InputError("the stored score's extra is not JSON: the store is damaged",
                             path=str(path), field="scores.extra") from None
        probs, samples = extra.get("probs"), extra.get("samples")
        if isinstance(probs, dict) and probs:
            values = np.array([float(s) for s in probs], dtype=float)
            weights = np.array([float(p) for p in probs.values()], dtype=float)
            weights = weights / weights.sum()
            mean = float(weights @ values)
            out[k] = float(weights @ (values - mean) ** 2)
        elif isinstance(samples, list) and samples:
            out[k] = float(np.var(np.asarray(samples, dtype=float)))
        else:
            raise table.error(
                "the judge's stored score has no score distribution (extra.probs or "
                "extra.samples, as judge.geval keeps): use another uncertainty, or labels",
                judge, k)
    return out


def _labels(table: _Table, labels: Mapping[tuple[str, str], float] | None,
            notes: list[str]) -> np.ndarray:
    """The human label of each row (NaN where none), from (item, system) -> value."""
    import numpy as np

    y = np.full(len(table.keys), np.nan)
    if not labels:
        return y
    index = {key: k for k, key in enumerate(table.keys)}
    unknown = 0
    for (item, system), value in labels.items():
        k = index.get((str(item), str(system)))
        if k is None:
            unknown += 1
            continue
        number = float(value)
        if math.isinf(number):
            raise InputError(f"the human label of row ({item!r}, {system!r}) is infinite",
                             field="labels")
        y[k] = number
    if unknown:
        notes.append(f"{unknown} labelled row(s) are not in the table (left aside)")
    return y


def _rates(f: np.ndarray, y: np.ndarray, labelled: np.ndarray, specificity: float | None,
           sensitivity: float | None, settings: dict[str, Any]) -> tuple[float, float]:
    """The judge's specificity and sensitivity: the labels' counts with the prior counted as
    PRIOR_LABELS labels of each class ((agreeing + 2 prior) / (labels + 2)); the prior alone
    without labels."""
    prior0 = 0.9 if specificity is None else specificity
    prior1 = 0.9 if sensitivity is None else sensitivity
    failed, passed = labelled & (y == 0), labelled & (y == 1)
    m0, m1 = int(failed.sum()), int(passed.sum())
    q0 = (float((f[failed] == 0).sum()) + PRIOR_LABELS * prior0) / (m0 + PRIOR_LABELS)
    q1 = (float((f[passed] == 1).sum()) + PRIOR_LABELS * prior1) / (m1 + PRIOR_LABELS)
    settings["rates"] = (f"labels {m0} failed, {m1} passed, prior {prior0:g}/{prior1:g}"
                         if m0 + m1 else f"prior {prior0:g}/{prior1:g}")
    return q0, q1


def _priority(f: np.ndarray, y: np.ndarray, labelled: np.ndarray, judge: str, table: _Table,
              settings: dict[str, Any]) -> np.ndarray:
    """sqrt(E[(Y - lam f - r_bar)^2 | f]) per row (`active_label_priority`, centred; lam:
    PPI++'s), for the labelled rows too (they may be labelled by someone else than this
    annotator)."""
    import numpy as np

    from meta_eval.estimation import EstimationError, active_label_priority, ppi_mean

    count = int(labelled.sum())
    if count < 2:
        raise table.error(
            f"active sampling needs human labels on at least 2 rows to tell where the judge "
            f"errs ({count} given): label a first sample drawn at random or stratified",
            "labels")
    try:
        lam = ppi_mean(judge=f, human=y).lam
        assert lam is not None
        # each labelled row again as an unlabelled copy, so it gets its bin's priority too
        found = active_label_priority(
            judge=np.concatenate([f, f[labelled]]),
            human=np.concatenate([y, np.full(count, np.nan)]), lam=lam, centre=True)
    except EstimationError as error:
        raise table.error(str(error), judge) from None
    priority = found[:f.size]
    priority[labelled] = found[f.size:]
    settings |= {"lam": round(lam, 6), "labels": count}
    return priority


__all__ = ["SOURCES", "STRATEGIES", "UNCERTAINTIES", "LabelSample", "SampledRow",
           "label_sample"]
