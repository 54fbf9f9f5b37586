"""The Python API: `judgebench.score(data, metrics=[...])` does what `judgebench score` does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.io import read_samples, samples_from_frame, samples_from_records
from judgebench.models import Sample
from judgebench.spec import MetricSpec, parse_spec
from judgebench.store import Store

if TYPE_CHECKING:
    import pandas as pd


def score(
    data: str | Path | Iterable[Sample | dict[str, Any]] | pd.DataFrame,
    metrics: Sequence[str | MetricSpec],
    *,
    store: str | Path | None = None,
    resume: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """Score `data` (a file path, Samples, dicts or a DataFrame) with metric specs such as
    ``"lexical.rouge2:multi_ref=mean"``.

    A DataFrame is read as the CLI reads a CSV or Parquet file (extra columns into `metadata`,
    `human.x` columns into `human`, NaN/None/pd.NA as missing, list cells as lists) and dicts
    as JSONL lines; an error names `row N` (1-based) and the field.

    Returns the wide table (item, system, one column per spec, `human.*`). Corpus-level scores
    are in ``table.attrs["corpus"]`` and each column's signature in
    ``table.attrs["signatures"]``. Without `store`, scores are kept in memory only.
    """
    from judgebench.runner import run

    samples = _samples(data)
    specs = [m if isinstance(m, MetricSpec) else parse_spec(m) for m in metrics]
    if not specs:
        raise InputError("no metrics given")
    with Store(store if store is not None else ":memory:") as db:
        result = run(samples, specs, store=db, resume=resume, progress=progress)
    table = result.table
    table.attrs["corpus"] = [c.model_dump(mode="json") for c in result.corpus]
    table.attrs["signatures"] = {p.column: p.signature for p in result.metrics}
    return table


def _samples(data: Any) -> list[Sample]:
    """Samples from what `score` accepts, read exactly as the CLI reads a file: a DataFrame like
    a CSV or Parquet table, dicts like JSONL lines (see `judgebench.io.normalize_record`)."""
    import pandas as pd

    if isinstance(data, str | Path):
        return read_samples(data)
    if isinstance(data, pd.DataFrame):
        return samples_from_frame(data)
    return samples_from_records(data)
