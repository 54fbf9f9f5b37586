"""`score` with a listwise metric (judge.listwise): a listwise file's items judged once each
and the listwise table written (`judgebench.engine.listwise_table`), for `meta-eval listwise`.

The first read checks every row before the store is opened; the runner then scores one
listwise sample per item (store, judge cache, budget and `--resume` as for any sample); last,
the table and its sidecar (`"table": "listwise"`) are written from the store, together (both
or neither). `--limit N` judges the first N items; `--sample`, `--corpus`, `--repeats` and
`--engine ray` are refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.errors import InputError

if TYPE_CHECKING:
    from judgebench.engine.runner import RunResult
    from judgebench.engine.runtime import RunSettings
    from judgebench.plugins import PluginHost
    from judgebench.services.score import Rows
    from judgebench.spec import MetricSpec


def is_listwise_run(specs: Sequence[MetricSpec], host: PluginHost) -> bool:
    """Whether `specs` judge the best of N (`listwise_table.check_specs`: not mixed)."""
    from judgebench.engine.listwise_table import check_specs

    return check_specs([(s.column, host.metric(s.name).info) for s in specs])


def refuse_options(*, rows: Rows | None, settings: RunSettings, corpus: Path | None,
                   ray: bool) -> None:
    """What a listwise run does not do, refused before any work."""
    refused = {"--sample": rows is not None and rows.sample is not None,
               "--corpus": corpus is not None, "--repeats": settings.repeats > 1,
               "--engine ray": ray}
    for option, given in refused.items():
        if given:
            raise InputError(f"a listwise run (judge.listwise) judges whole items once each "
                             f"into the listwise table: leave {option} out", field=option)


def score_listwise_file(input_path: Path, specs: Sequence[MetricSpec], *, output: Path,
                        store: Path, settings: RunSettings, resume: bool = False,
                        sidecar: bool = True, csv_safe: bool = False, progress: bool = False,
                        workers: int = 1, rows: Rows | None = None, command: str | None = None,
                        host: PluginHost) -> RunResult:
    """Judge each item of the listwise file `input_path` into the listwise table `output`,
    as `judgebench score` does with a listwise metric. Before any of it, the paths are
    checked (`judgebench.tables.destinations`), as `score_file` checks them."""
    from judgebench.engine.listwise_table import ListwiseRows, build_listwise_table
    from judgebench.engine.runner import run_stream, survey
    from judgebench.engine.store import RunAbout, Store
    from judgebench.services.score import (
        _judge_cache,
        _no_room_is_one_line,
        _removed_if_scoreless,
        file_hash,
    )
    from judgebench.tables import destinations
    from judgebench.tables.io import write_table

    destinations.check([destinations.read("INPUT", input_path),
                        destinations.table("-o", output, sidecar=sidecar),
                        destinations.database("--store", store)])
    read = ListwiseRows.read(input_path).first_items(rows.limit if rows else None)
    samples = read.samples()
    about = RunAbout(command=command, input_path=str(input_path),
                     input_hash=file_hash(input_path),
                     selection={"limit_items": rows.limit} if rows and rows.limit else None,
                     cache=str(_judge_cache(settings)))
    with _removed_if_scoreless(store), Store(store) as db:
        result = run_stream(lambda: samples, survey(samples), specs, store=db, resume=resume,
                            progress=progress, settings=settings, workers=workers,
                            about=about, host=host)
        table = build_listwise_table(read, samples, result.metrics, db)
    with _no_room_is_one_line(output, sidecar):
        write_table(table, output, csv_safe=csv_safe,
                    sidecar={"table": "listwise", **result.summary()} if sidecar else None)
    return result


def estimate_listwise_file(input_path: Path, specs: Sequence[MetricSpec], *,
                           settings: RunSettings, resume: bool = False, progress: bool = False,
                           rows: Rows | None = None, host: PluginHost) -> RunResult:
    """`judgebench score --dry-run` with a listwise metric: the calls one judgement per item
    would take (`services.score.estimate`)."""
    from judgebench.engine.listwise_table import ListwiseRows
    from judgebench.engine.store import Store
    from judgebench.services.score import estimate

    samples = ListwiseRows.read(input_path).first_items(rows.limit if rows else None).samples()
    with Store(":memory:") as db:
        return estimate(samples, specs, store=db, settings=settings, resume=resume,
                        progress=progress, host=host)
