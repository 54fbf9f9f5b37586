"""The Python API: `judgebench.score(data, metrics=[...])` does what `judgebench score` does."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.io import read_samples
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
    if isinstance(data, str | Path):
        return read_samples(data)
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        data = data.to_dict(orient="records")
    samples = []
    for index, record in enumerate(data):
        if isinstance(record, Sample):
            samples.append(record)
            continue
        try:
            samples.append(Sample.model_validate(record))
        except Exception as exc:
            raise InputError(str(exc).splitlines()[0], row=index + 1) from None
    return samples
