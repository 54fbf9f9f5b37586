"""The score service: run metric specs over samples, as `judgebench score` does.

`score(data, metrics)` scores samples held in memory (a file path, Samples, dicts or a
DataFrame) and returns a `ScoreResult`: the wide table, the corpus scores and each column's
signature; `to_frame()` is the table with those in `attrs` (what `judgebench.score`
returns), `to_dict()` the per-column summary `judgebench score --json` prints.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from judgebench.errors import InputError, JudgebenchError
from judgebench.results import Result
from judgebench.spec import MetricSpec, parse_spec

if TYPE_CHECKING:
    import pandas as pd

    from judgebench.engine.pool import SchedulerFactory, TimeEstimate
    from judgebench.engine.ray_engine import RayConfig
    from judgebench.engine.runner import RunResult, TableResult
    from judgebench.engine.runtime import RunSettings
    from judgebench.engine.store import Store
    from judgebench.models import CorpusScore, Sample
    from judgebench.plugins import PluginHost


@dataclass(frozen=True)
class ScoreResult(Result):
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
        """The table, with the corpus scores in ``attrs["corpus"]``, each column's
        signature in ``attrs["signatures"]`` and the whole sidecar (what `score -o` writes to
        `OUT.meta.json`) in ``attrs["sidecar"]``, which `meta_eval` and the other API
        functions read as they read the file beside a table."""
        from judgebench.tables.scores_table import SIDECAR_ATTR

        table = self.run.table
        table.attrs[SIDECAR_ATTR] = self.run.summary()
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
          resume: bool = False, progress: bool = False,
          host: PluginHost | None = None, repeats: int = 1,
          repeats_allow_greedy: bool = False, repeats_cell: str | None = None
          ) -> ScoreResult:
    """Score `data` with metric specs such as ``"lexical.rouge2:multi_ref=mean"``.

    A DataFrame is read as the CLI reads a CSV or Parquet file (extra columns into
    `metadata`, `human.x` columns into `human`, NaN/None/pd.NA as missing, list cells as
    lists) and dicts as JSONL lines; an error names `row N` (1-based) and the field. Without
    `store`, scores are kept in memory only. The metrics are `host`'s (default: a host of the
    installed plugins, built for the call). `repeats` (with `repeats_allow_greedy` and
    `repeats_cell`) is `score --repeats K`: K draws of each judge, every one in the store,
    the table's cell their mean (or majority); `meta_eval` reads the draws from `store`."""
    from judgebench.engine.runner import run
    from judgebench.engine.runtime import RunSettings
    from judgebench.engine.store import Store

    samples = read_data(data)
    specs = specs_of(metrics)
    settings = RunSettings(repeats=repeats, repeats_allow_greedy=repeats_allow_greedy,
                           repeats_cell=repeats_cell)
    with Store(store if store is not None else ":memory:") as db:
        return ScoreResult(run(samples, specs, store=db, resume=resume, progress=progress,
                               settings=settings, host=host))


def estimate(samples: Sequence[Sample], specs: Sequence[MetricSpec], *, store: Store,
             settings: RunSettings, resume: bool = False, progress: bool = False,
             workers: int = 1, on_estimate: Callable[[TimeEstimate], None] | None = None,
             host: PluginHost | None = None) -> RunResult:
    """A dry run: each column's estimated calls, tokens and cost in `result.estimates`, and
    `estimated_s`, its time at `workers` workers (local metrics, from a few timed samples)."""
    from judgebench.engine.runner import run_stream, survey

    return run_stream(lambda: samples, survey(samples), specs, store=store, resume=resume,
                      progress=progress, settings=settings, estimate_from=samples,
                      workers=workers, on_estimate=on_estimate, host=host)


@dataclass(frozen=True)
class Rows:
    """Which rows of the input to score: the first `limit`, or `sample` rows drawn at random
    with `seed` (the same seed on the same file draws the same rows), or all of them."""

    limit: int | None = None
    sample: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.limit is not None and self.sample is not None:
            raise InputError("--limit and --sample choose rows two ways: give one of them")
        for name in ("limit", "sample"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InputError(f"--{name} must be at least 1, got {value}")

    def of(self, source: Iterable[Sample]) -> tuple[Iterable[Sample], dict[str, Any] | None]:
        """The chosen rows of `source` (read anew at each iteration, in input order) and
        what to record of the choice (None: every row). `sample` reads `source` once more
        first, to count its rows, and keeps only the chosen row numbers."""
        if self.limit is not None:
            return ChosenRows(source, limit=self.limit), {"limit": self.limit}
        if self.sample is not None:
            import random

            total = sum(1 for _ in source)
            numbers = frozenset(random.Random(self.seed).sample(range(total),
                                                                min(self.sample, total)))
            return ChosenRows(source, numbers=numbers), {
                "sample": self.sample, "seed": self.seed, "of_rows": total}
        return source, None


@dataclass(frozen=True)
class ChosenRows:
    """The rows of `source` numbered (from 0) in `numbers`, or its first `limit` rows; each
    iteration reads `source` anew."""

    source: Iterable[Sample]
    numbers: frozenset[int] | None = None
    limit: int | None = None

    def __iter__(self) -> Iterator[Sample]:
        for number, sample in enumerate(self.source):
            if self.limit is not None and number >= self.limit:
                return
            if self.numbers is None or number in self.numbers:
                yield sample


def file_hash(path: Path) -> str:
    """The input's content hash for the `runs` table: ``sha256:<hex>`` of its bytes."""
    import hashlib

    try:
        with path.open("rb") as handle:
            return f"sha256:{hashlib.file_digest(handle, 'sha256').hexdigest()}"
    except FileNotFoundError:
        raise InputError("file not found", path=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot be read: {exc.strerror or exc}", path=str(path)) from None


def score_file(input_path: Path | str, specs: Sequence[MetricSpec], *, output: Path, store: Path,
               settings: RunSettings, resume: bool = False, corpus: Path | None = None,
               sidecar: bool = True, csv_safe: bool = False, progress: bool = False,
               workers: int = 1, on_estimate: Callable[[TimeEstimate], None] | None = None,
               rows: Rows | None = None, command: str | None = None,
               ray: RayConfig | None = None, host: PluginHost | None = None) -> RunResult:
    """Score the generations in `input_path` into the table `output`, as `judgebench score`.

    Every row is read and checked first (`runner.survey`), before the store is opened or any
    work is done; then the file is read again and scored, and the table written in chunks to
    a temporary file renamed onto `output` when complete (`io.atomic_path`). With `sidecar`,
    `OUTPUT.meta.json` gets each column's direction, level and corpus scores; with `corpus`,
    that file gets one row per system and corpus metric. A store this run created is removed
    again if the run fails before its first score. Before any of it, the paths are checked
    (`judgebench.tables.destinations`): none may be another, and each must be writable as what it
    is. `workers` > 1 scores local metrics in that many processes, with the same results
    (`judgebench.engine.pool`); `on_estimate` hears of each long column (`runner.run_stream`).
    `rows` chooses the rows to score (`Rows`: the table holds exactly those, the sidecar
    says which); `command` is the command line the store's `runs` row records (scrubbed).
    `ray` scores the batches on Ray actors instead (`judgebench.engine.ray_engine`), with the same
    results; this process stays the only writer of the store; with it, `input_path` may be
    a URI (s3://..., file://...), read through Ray Data (`ray_engine.UriSamples`)."""
    from judgebench.engine import ray_engine
    from judgebench.extras import require
    from judgebench.tables import destinations
    from judgebench.tables.io import SampleFile

    if ray is not None:
        ray_engine.quiet_environment()  # before Ray is imported
        require("--engine ray", "ray", "ray")
    uri = ray_engine.is_uri(input_path)
    if uri and ray is None:
        raise InputError(f"{input_path}: a URI is read through Ray Data: add --engine ray")
    destinations.check([
        *([] if uri else [destinations.read("INPUT", Path(input_path))]),
        destinations.table("-o", output, sidecar=sidecar),
        destinations.database("--store", store),
        *([destinations.table("--corpus", corpus)] if corpus is not None else []),
    ])

    scheduler_factory = None
    with contextlib.ExitStack() as connected:
        if ray is not None:
            scheduler_factory = ray_engine.scheduler_factory(ray, settings)
            if uri:  # connected for the reads too (the scheduler then reuses it)
                connected.enter_context(ray_engine.session(ray))
        return _score_source(
            ray_engine.UriSamples(str(input_path)) if uri else SampleFile(input_path),
            str(input_path), None if uri else file_hash(Path(input_path)), specs,
            output=output, store=store, settings=settings, resume=resume, corpus=corpus,
            sidecar=sidecar, csv_safe=csv_safe, progress=progress, workers=workers,
            on_estimate=on_estimate, rows=rows, command=command,
            scheduler_factory=scheduler_factory, host=host)
    raise AssertionError("unreachable")


def _score_source(samples: Iterable[Sample], input_path: str, input_hash: str | None,
                  specs: Sequence[MetricSpec], *, output: Path, store: Path,
                  settings: RunSettings, resume: bool, corpus: Path | None, sidecar: bool,
                  csv_safe: bool, progress: bool, workers: int,
                  on_estimate: Callable[[TimeEstimate], None] | None, rows: Rows | None,
                  command: str | None, scheduler_factory: SchedulerFactory | None,
                  host: PluginHost | None = None) -> RunResult:
    """`score_file` once its paths are checked and its source is open."""
    from judgebench.engine.runner import run_stream, survey
    from judgebench.engine.store import RunAbout, Store
    from judgebench.tables.io import TableWriter, atomic_paths, file_format

    source, selection = (rows or Rows()).of(samples)
    surveyed = survey(source)
    about = RunAbout(command=command, input_path=input_path, input_hash=input_hash,
                     selection=selection, cache=str(_judge_cache(settings)))
    meta = [Path(f"{output}.meta.json")] if sidecar else []
    with (_removed_if_scoreless(store), Store(store) as db,
          _no_room_is_one_line(output, sidecar),
          atomic_paths(output, *meta) as (table_path, *meta_path)):
        with TableWriter(table_path, fmt=file_format(output), csv_safe=csv_safe,
                         has_cr=surveyed.has_cr) as writer:
            result = run_stream(lambda: source, surveyed, specs, store=db, resume=resume,
                                progress=progress, settings=settings, sink=writer,
                                workers=workers, on_estimate=on_estimate, about=about,
                                scheduler_factory=scheduler_factory, host=host)
        for path in meta_path:  # the table and its sidecar are renamed into place together
            path.write_text(json.dumps(result.summary(), indent=2), encoding="utf-8")
    if corpus is not None:
        write_corpus(result, corpus, csv_safe=csv_safe)
    return result


#: What a write that finds no room fails with: the disk or the quota is full, or the file
#: passed this process's size limit (RLIMIT_FSIZE).
NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


@contextlib.contextmanager
def _no_room_is_one_line(output: Path, sidecar: bool) -> Iterator[None]:
    """A write of the table (or its sidecar) that finds no room is one JudgebenchError that
    says so; the scores are in the store by then."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in NO_ROOM:
            raise
        what = "the table and its .meta.json" if sidecar else "the table"
        raise JudgebenchError(
            f"{output}: no room to write {what} ({exc.strerror}): neither was written and any "
            "earlier one is unchanged; what was scored is in the store, so once there is room "
            "the same command with --resume writes them without scoring again") from None


def estimate_file(input_path: Path, specs: Sequence[MetricSpec], *, settings: RunSettings,
                  resume: bool = False, progress: bool = False, workers: int = 1,
                  on_estimate: Callable[[TimeEstimate], None] | None = None,
                  rows: Rows | None = None, host: PluginHost | None = None) -> RunResult:
    """`judgebench score --dry-run`: `estimate` over the (chosen) samples of `input_path`.
    A dry run stores nothing, so it opens no store: no store file is created."""
    from judgebench.engine.store import Store
    from judgebench.tables.io import SampleFile

    source, _ = (rows or Rows()).of(SampleFile(input_path))
    samples = list(source)
    with Store(":memory:") as db:
        return estimate(samples, specs, store=db, settings=settings, resume=resume,
                        progress=progress, workers=workers, on_estimate=on_estimate,
                        host=host)


def _judge_cache(settings: RunSettings) -> Path:
    """The judge cache this run's judges use (recorded in its `runs` row for `logs`)."""
    from judgebench.engine.judge_cache import default_cache_path
    from judgebench.engine.runtime import running

    with running(settings):
        return default_cache_path().absolute()


def write_corpus(result: RunResult, path: Path, *, csv_safe: bool = False) -> None:
    """The corpus scores of `result`, one row per system and metric, to a table file."""
    import pandas as pd

    from judgebench.tables.io import write_table

    frame = pd.DataFrame(
        [c.model_dump(mode="json") for c in result.corpus],
        columns=["system", "metric", "value", "status", "reason", "n", "signature"],
    )
    write_table(frame, path, csv_safe=csv_safe)


@contextlib.contextmanager
def _removed_if_scoreless(path: Path) -> Iterator[None]:
    """If the body fails and the store at `path` did not exist before it, remove the store
    when it holds no score (with its journal files); a store that cannot be read is left."""
    new = not os.path.lexists(path)
    try:
        yield
    except BaseException:
        if new:
            _remove_if_scoreless(path)
        raise


def _remove_if_scoreless(path: Path) -> None:
    from judgebench.tables.destinations import SQLITE_SIDECARS

    if not path.is_file():
        return
    try:
        with contextlib.closing(sqlite3.connect(path)) as conn:
            tables = {name for (name,) in
                      conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if any(conn.execute(f"SELECT 1 FROM {name} LIMIT 1").fetchone()
                   for name in ("scores", "corpus_scores") if name in tables):
                return
    except sqlite3.Error:
        return
    for suffix in ("", *SQLITE_SIDECARS):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def summary_rows(result: RunResult) -> list[dict[str, Any]]:
    """One row per column: its sidecar entry and its corpus scores (or None)."""
    summary = result.summary()
    rows = []
    for column, info in summary["columns"].items():
        corpus = {c.system: c.value for c in result.corpus if c.metric == column}
        reasons = result.reasons(column)
        rows.append({"column": column, **info, "corpus": corpus or None,
                     "failed": sum(r["count"] for r in reasons), "failures": reasons,
                     "run_id": result.run_id})
    return rows


def read_data(data: str | Path | Iterable[Sample | dict[str, Any]] | pd.DataFrame
              ) -> list[Sample]:
    """Samples from what `score` accepts, read exactly as the CLI reads a file: a DataFrame
    like a CSV or Parquet table, dicts like JSONL lines (see
    `judgebench.tables.io.normalize_record`)."""
    import pandas as pd

    from judgebench.tables.io import read_samples, samples_from_frame, samples_from_records

    if isinstance(data, str | Path):
        return read_samples(data)
    if isinstance(data, pd.DataFrame):
        return samples_from_frame(data)
    return samples_from_records(data)
