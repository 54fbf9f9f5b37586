"""The Python API: `judgebench.score(data, metrics=[...])` does what `judgebench score` does.

The services behind every command are in `judgebench.services` (score, meta_eval, aggregate,
audit); this module keeps the DataFrame-returning `score` of earlier versions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.models import Sample
    from judgebench.spec import MetricSpec


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
    (`judgebench.services.score` returns the typed `ScoreResult`.)
    """
    from judgebench.services.score import score as run_score

    return run_score(data, metrics, store=store, resume=resume, progress=progress).to_frame()
