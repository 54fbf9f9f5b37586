"""The score service: run metric specs over samples, as `judgebench score` does.

`score(data, metrics)` scores samples held in memory (a file path, Samples, dicts or a
DataFrame) and returns a `ScoreResult`: the wide table, the corpus scores and each column's
signature; `to_frame()` is the table with those in `attrs` (what `judgebench.score`
returns), `to_dict()` the per-column summary `judgebench score --json` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError
from judgebench.spec import MetricSpec, parse_spec

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.models import CorpusScore, Sample
    from judgebench.runner import RunResult, TableResult
    from judgebench.runtime import RunSettings
    from judgebench.store import Store



@dataclass(frozen=True)
class ScoreResult:
    """A finished in-memory run: `table` (item, system, one column per spec, `human.*`)."""

    run: TableResult

    @property
    def table(self) -> pd.DataFrame:
        return self.run.table

    @property
    def corpus(self) -> list[CorpusScore]:
        return self.run.corpus

    @property
    def signatures(self) -> dict[str, str]:
        return {p.column: p.signature for p in self.run.metrics}

    def to_frame(self) -> pd.DataFrame:
        """The table, with the corpus scores in ``attrs["corpus"]`` and each column's
        signature in ``attrs["signatures"]``."""
        table = self.run.table
        table.attrs["corpus"] = [c.model_dump(mode="json") for c in self.corpus]
        table.attrs["signatures"] = self.signatures
        return table

    def to_dict(self) -> list[dict[str, Any]]:
        return summary_rows(self.run)


def specs_of(metrics: Sequence[str | MetricSpec]) -> list[MetricSpec]:
    specs = [m if isinstance(m, MetricSpec) else parse_spec(m) for m in metrics]
    if not specs:
        raise InputError("no metrics given")
    return specs


def score(data: str | Path | Iterable[Sample | dict[str, Any]] | pd.DataFrame,
          metrics: Sequence[str | MetricSpec], *, store: str | Path | None = None,
          resume: bool = False, progress: bool = False) -> ScoreResult:
    """Score `data` with metric specs such as ``"lexical.rouge2:multi_ref=mean"``.

    A DataFrame is read as the CLI reads a CSV or Parquet file (extra columns into
    `metadata`, `human.x` columns into `human`, NaN/None/pd.NA as missing, list cells as
    lists) and dicts as JSONL lines; an error names `row N` (1-based) and the field. Without
    `store`, scores are kept in memory only."""
    from judgebench.runner import run
    from judgebench.store import Store

    samples = read_data(data)
    specs = specs_of(metrics)
    with Store(store if store is not None else ":memory:") as db:
        return ScoreResult(run(samples, specs, store=db, resume=resume, progress=progress))


def estimate(samples: Sequence[Sample], specs: Sequence[MetricSpec], *, store: Store,
             settings: RunSettings, resume: bool = False, progress: bool = False
             ) -> RunResult:
    """A dry run: each column's estimated calls, tokens and cost in `result.estimates`."""
    from judgebench.runner import run_stream, survey

    return run_stream(lambda: samples, survey(samples), specs, store=store, resume=resume,
                      progress=progress, settings=settings, estimate_from=samples)


def summary_rows(result: RunResult) -> list[dict[str, Any]]:
    """One row per column: its sidecar entry and its corpus scores (or None)."""
    summary = result.summary()
    rows = []
    for column, info in summary["columns"].items():
        corpus = {c.system: c.value for c in result.corpus if c.metric == column}
        rows.append({"column": column, **info, "corpus": corpus or None})
    return rows


def read_data(data: str | Path | Iterable[Sample | dict[str, Any]] | pd.DataFrame
              ) -> list[Sample]:
    """Samples from what `score` accepts, read exactly as the CLI reads a file: a DataFrame
    like a CSV or Parquet table, dicts like JSONL lines (see `judgebench.io.normalize_record`)."""
    import pandas as pd

    from judgebench.io import read_samples, samples_from_frame, samples_from_records

    if isinstance(data, str | Path):
        return read_samples(data)
    if isinstance(data, pd.DataFrame):
        return samples_from_frame(data)
    return samples_from_records(data)
