"""Metric specs: `NAME` or `NAME:key=value[,key=value...]` on the command line, or a TOML file.

The scores-table column of a metric is its spec exactly as written, so two configurations of
one metric sit side by side. In a TOML file each table under `[metrics]` is one metric; its
key is the column:

    [metrics.geval-coherence]
    metric = "judge.geval"
    criterion = "coherence"
    model = "hosted_vllm/my-judge"
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebench.errors import InputError


@dataclass(frozen=True)
class MetricSpec:
    name: str
    options: dict[str, Any] = field(default_factory=dict)
    column: str = ""

    def __post_init__(self) -> None:
        if not self.column:
            object.__setattr__(self, "column", self.name)


def parse_spec(text: str) -> MetricSpec:
    """Parse `lexical.rouge2:multi_ref=mean,stemmer=false` (values stay strings; the metric's
    Options model converts them)."""
    name, _, rest = text.strip().partition(":")
    if not name:
        raise InputError(f"metric spec '{text}' has no metric name")
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise InputError(
                f"metric spec '{text}': option '{part}' is not key=value "
                "(write NAME:key=value[,key=value...])"
            )
        if key.strip() in options:
            raise InputError(f"metric spec '{text}': option '{key.strip()}' is given twice")
        options[key.strip()] = value.strip()
    return MetricSpec(name=name, options=options, column=text.strip())


def load_config(path: str | Path) -> list[MetricSpec]:
    """Metric specs from a TOML file (see the module docstring for the shape)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("config file not found", path=str(path)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", path=str(path)) from None
    metrics = data.get("metrics")
    if not isinstance(metrics, dict) or not metrics:
        raise InputError("expected one or more [metrics.<column>] tables", path=str(path),
                         field="metrics")
    specs = []
    for column, table in metrics.items():
        if not isinstance(table, dict) or not isinstance(table.get("metric"), str):
            raise InputError("each [metrics.<column>] table needs metric = \"NAME\"",
                             path=str(path), field=f"metrics.{column}.metric")
        options = {k: v for k, v in table.items() if k != "metric"}
        specs.append(MetricSpec(name=table["metric"], options=options, column=column))
    return specs
