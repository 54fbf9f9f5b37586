"""A plugin (`judgebench -p tests/dag_plugin.py ...`) that declares a compound judge in
Python: `judge.dag_example`, the five-node DAG of tests/dag_support.py as data."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path
from typing import Any, ClassVar

sys.path.insert(0, str(Path(__file__).parent))
from dag_support import DAG
from judgebench_judges.dag import DAG_EMPTY, JudgeDag

from judgebench.plugin_api import MetricInfo, MetricRegister, hookimpl


class ExampleDag(JudgeDag):
    info: ClassVar[MetricInfo] = MetricInfo(
        name="judge.dag_example", version="1", kind="judge", requires=(),
        deterministic=False, empty_text=DAG_EMPTY,
        description="tests/dag_support.py's five-node compound judge, declared in Python")
    graph: ClassVar[dict[str, Any] | None] = tomllib.loads(DAG)


@hookimpl
def register_metrics(register: MetricRegister) -> None:
    register(ExampleDag)
